/*
 * bk_hash_murmur3.c - MurmurHash3 as Spark and Guava apply it, for their
 * foreign formats (bk_jvm.c: Spark's and Guava's Bloom filters; py_jvm.c:
 * bloomkit.spark / bloomkit.guava's hash functions).  A part of the hash
 * module bk_hash.c: our own key hashes (XXH3-64, SipHash-2-4) and XXH64
 * stay there; these hash nobody's keys but the JVM engines'.  The
 * little-endian loads and the 64-bit rotation both files use are in
 * bk_hash.h.
 *
 * Written from Austin Appleby's published MurmurHash3 (smhasher,
 * MurmurHash3.cpp: MurmurHash3_x86_32 and MurmurHash3_x64_128) and from the
 * way Spark's org.apache.spark.unsafe.hash.Murmur3_x86_32 and Guava's
 * Hashing.murmur3_128() feed it; pinned by tests/hash_vectors.json
 * ("spark_murmur3_*", "guava_murmur3_128"), which were printed by the real
 * Spark and Guava classes (tests/jvm/HashVectors.java) and are re-checked
 * against them by tests/test_spark.py and tests/test_guava.py.
 *
 * Spark's x86_32 (all arithmetic mod 2^32, Java ints):
 *   mixK1(k)    k *= 0xcc9e2d51; k = rotl32(k, 15); k *= 0x1b873593
 *   mixH1(h,k)  h ^= k; h = rotl32(h, 13); h = h*5 + 0xe6546b64
 *   fmix(h,n)   h ^= n; h ^= h>>16; h *= 0x85ebca6b; h ^= h>>13;
 *               h *= 0xc2b2ae35; h ^= h>>16
 *   hashInt(v)  fmix(mixH1(seed, mixK1(v)), 4)
 *   hashLong(v) low 32 bits, then high 32 bits, each one mixK1+mixH1; fmix(., 8)
 *   hashUnsafeBytes  whole 4-byte little-endian words, then EACH tail byte
 *               on its own, sign-extended to an int, through mixK1+mixH1 (not the
 *               reference's packed tail: this is the historic Spark variant its
 *               BloomFilter and CountMinSketch still use); fmix(., len)
 *   hashUnsafeBytes2  the reference tail: tail bytes packed little-endian,
 *               unsigned, one mixK1, h ^= k (no rotl/multiply); fmix(., len)
 *
 * Guava's murmur3_128 is the reference x64_128 with the seed (a Java int)
 * sign-extended into both 64-bit halves; out[0] = h1, out[1] = h2 -- the
 * first and last 8 little-endian bytes of Guava's HashCode.
 */

#include "bk_hash.h"

#define BK_M3_C1 UINT32_C(0xcc9e2d51)
#define BK_M3_C2 UINT32_C(0x1b873593)

static inline uint32_t bk_hash_murmur3_rotl32(uint32_t x, unsigned r)
{
    return (x << r) | (x >> (32u - r));
}

static inline uint32_t bk_hash_murmur3_mixk1(uint32_t k)
{
    k *= BK_M3_C1;
    k = bk_hash_murmur3_rotl32(k, 15);
    return k * BK_M3_C2;
}

static inline uint32_t bk_hash_murmur3_mixh1(uint32_t h, uint32_t k)
{
    h ^= k;
    h = bk_hash_murmur3_rotl32(h, 13);
    return h * 5u + UINT32_C(0xe6546b64);
}

static inline uint32_t bk_hash_murmur3_fmix(uint32_t h, uint32_t len)
{
    h ^= len;
    h ^= h >> 16;
    h *= UINT32_C(0x85ebca6b);
    h ^= h >> 13;
    h *= UINT32_C(0xc2b2ae35);
    h ^= h >> 16;
    return h;
}

uint32_t bk_hash_murmur3_spark_int(uint32_t v, uint32_t seed)
{
    return bk_hash_murmur3_fmix(bk_hash_murmur3_mixh1(seed, bk_hash_murmur3_mixk1(v)), 4);
}

uint32_t bk_hash_murmur3_spark_long(uint64_t v, uint32_t seed)
{
    uint32_t h = bk_hash_murmur3_mixh1(seed, bk_hash_murmur3_mixk1((uint32_t)v));
    h = bk_hash_murmur3_mixh1(h, bk_hash_murmur3_mixk1((uint32_t)(v >> 32)));
    return bk_hash_murmur3_fmix(h, 8);
}

/* The whole words of both byte variants: Spark reads them with
 * Platform.getInt and byte-swaps on big-endian hosts, i.e. little-endian. */
static inline uint32_t bk_hash_murmur3_words(const uint8_t *p, size_t aligned, uint32_t h)
{
    size_t i;
    for (i = 0; i < aligned; i += 4)
        h = bk_hash_murmur3_mixh1(h, bk_hash_murmur3_mixk1(bk_hash_read32(p + i)));
    return h;
}

uint32_t bk_hash_murmur3_spark_bytes(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t aligned = len & ~(size_t)3, i;
    uint32_t h = bk_hash_murmur3_words(p, aligned, seed);
    for (i = aligned; i < len; i++) /* Java's byte is signed: 0x80 -> 0xffffff80 */
        h = bk_hash_murmur3_mixh1(h, bk_hash_murmur3_mixk1((uint32_t)(int32_t)(int8_t)p[i]));
    /* Spark passes the length as a Java int; a 2^31-byte key cannot reach here
     * from a JVM, and the low 32 bits are what its int arithmetic would keep. */
    return bk_hash_murmur3_fmix(h, (uint32_t)len);
}

uint32_t bk_hash_murmur3_spark_bytes2(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t aligned = len & ~(size_t)3, i;
    uint32_t h = bk_hash_murmur3_words(p, aligned, seed), k = 0;
    for (i = aligned; i < len; i++)
        k |= (uint32_t)p[i] << (8u * (unsigned)(i - aligned));
    if (len > aligned)
        h ^= bk_hash_murmur3_mixk1(k);
    return bk_hash_murmur3_fmix(h, (uint32_t)len);
}

#define BK_M3_K1 UINT64_C(0x87c37b91114253d5)
#define BK_M3_K2 UINT64_C(0x4cf5ad432745937f)

static inline uint64_t bk_hash_murmur3_fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

static inline uint64_t bk_hash_murmur3_mix128_k1(uint64_t k)
{
    k *= BK_M3_K1;
    k = bk_hash_rotl64(k, 31);
    return k * BK_M3_K2;
}

static inline uint64_t bk_hash_murmur3_mix128_k2(uint64_t k)
{
    k *= BK_M3_K2;
    k = bk_hash_rotl64(k, 33);
    return k * BK_M3_K1;
}

void bk_hash_murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2])
{
    const uint8_t *p = (const uint8_t *)data;
    uint64_t h1 = (uint64_t)(int64_t)(int32_t)seed, h2 = h1, k1 = 0, k2 = 0;
    size_t nblocks = len / 16, i, tail = nblocks * 16, rem = len - tail;

    for (i = 0; i < nblocks; i++) {
        h1 ^= bk_hash_murmur3_mix128_k1(bk_hash_read64(p + 16 * i));
        h1 = bk_hash_rotl64(h1, 27);
        h1 += h2;
        h1 = h1 * 5u + UINT64_C(0x52dce729);
        h2 ^= bk_hash_murmur3_mix128_k2(bk_hash_read64(p + 16 * i + 8));
        h2 = bk_hash_rotl64(h2, 31);
        h2 += h1;
        h2 = h2 * 5u + UINT64_C(0x38495ab5);
    }
    /* 1..15 tail bytes, little-endian and unsigned: 0..7 into k1, 8..14 into k2 */
    for (i = 0; i < rem; i++) {
        if (i < 8)
            k1 |= (uint64_t)p[tail + i] << (8u * (unsigned)i);
        else
            k2 |= (uint64_t)p[tail + i] << (8u * (unsigned)(i - 8));
    }
    if (rem > 8)
        h2 ^= bk_hash_murmur3_mix128_k2(k2);
    if (rem > 0)
        h1 ^= bk_hash_murmur3_mix128_k1(k1);

    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = bk_hash_murmur3_fmix64(h1);
    h2 = bk_hash_murmur3_fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = h1;
    out[1] = h2;
}
