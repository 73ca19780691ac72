/*
 * bk_hash.h - byte hashing primitives for the bloomkit C core.
 *
 * Three digest functions plus one cheap mixer (and, at the end, the
 * MurmurHash3 variants of Spark and Guava for their foreign formats,
 * bk_hash_murmur3.c):
 *
 *   bk_hash_xxh3_64    XXH3-64 (seeded), the default hash for keys.
 *   bk_hash_xxh64      classic XXH64 (seeded), kept for compatibility/interop.
 *   bk_hash_siphash24  SipHash-2-4 with a 128-bit key, for the keyed mode
 *                 (hostile / attacker-chosen input).
 *   bk_mix64      bijective 64-bit finalizer, used to derive a second,
 *                 independent-looking hash from the first one
 *                 (double hashing: h_i = h1 + i * h2).
 *
 * All digests are defined on bytes and are identical on every platform
 * (little- or big-endian, 32- or 64-bit).  They match the reference
 * implementations bit for bit; see docs/hashing.md and
 * tests/hash_vectors.json.
 *
 * C11, no Python.h.  `data` may be NULL when `len` is 0.
 */
#ifndef BK_HASH_H
#define BK_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bk_intrin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XXH3-64 with a 64-bit seed (== XXH3_64bits_withSeed). */
uint64_t bk_hash_xxh3_64(const void *data, size_t len, uint64_t seed);
/* The seed-dependent constant XXH3-64 XORs into a 4..8-byte input
 * ((secret[8..16) ^ secret[16..24)) - mixed seed): precomputed per filter
 * (bk_hasher.int_flip) so that hashing an integer key skips it. */
uint64_t bk_hash_xxh3_4to8_bitflip(uint64_t seed);

/* XXH3-64 over data given in pieces: bk_hash_xxh3_stream_init(&st, seed),
 * bk_hash_xxh3_stream_update(&st, piece, n) any number of times (pieces of any
 * sizes), then bk_hash_xxh3_stream_digest(&st) == bk_hash_xxh3_64(whole, len, seed).
 * Used by save() to checksum a state while it is written out in bounded
 * chunks.  The state is ~520 bytes; digest does not modify it. */
typedef struct {
    uint64_t acc[8];
    uint8_t secret[192];    /* derived from the seed (deriveSecret) */
    uint8_t buf[256];       /* unprocessed input; see bk_hash.c */
    uint64_t total;         /* bytes given so far */
    uint64_t seed;
    uint32_t buffered;      /* bytes in buf */
    uint32_t nstripes;      /* stripes accumulated in the current block, 0..16 */
} bk_hash_xxh3_stream;

void bk_hash_xxh3_stream_init(bk_hash_xxh3_stream *st, uint64_t seed);
void bk_hash_xxh3_stream_update(bk_hash_xxh3_stream *st, const void *data, size_t len);
uint64_t bk_hash_xxh3_stream_digest(const bk_hash_xxh3_stream *st);

/* Classic XXH64 with a 64-bit seed (== XXH64). */
uint64_t bk_hash_xxh64(const void *data, size_t len, uint64_t seed);

/* SipHash-2-4, 64-bit output.  k0/k1 are the two little-endian 64-bit
 * halves of the 16-byte key (k0 = bytes 0..7, k1 = bytes 8..15).  The
 * published test vectors are the little-endian bytes of the result. */
uint64_t bk_hash_siphash24(const void *data, size_t len, uint64_t k0, uint64_t k1);

/* MurmurHash3 as the JVM engines apply it (bk_hash_murmur3.c):
 * Spark's Murmur3_x86_32 hashInt / hashLong / hashUnsafeBytes (per-byte,
 * sign-extended tail) / hashUnsafeBytes2 (the reference tail), seeds and
 * results as Java ints (two's complement in a uint32_t), and Guava's
 * murmur3_128 (x64 variant; out[0], out[1] = the HashCode's first and last
 * 8 little-endian bytes). */
uint32_t bk_hash_murmur3_spark_int(uint32_t v, uint32_t seed);
uint32_t bk_hash_murmur3_spark_long(uint64_t v, uint32_t seed);
uint32_t bk_hash_murmur3_spark_bytes(const void *data, size_t len, uint32_t seed);
uint32_t bk_hash_murmur3_spark_bytes2(const void *data, size_t len, uint32_t seed);
void bk_hash_murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2]);

/* ---- Byte reads shared by bk_hash.c and bk_hash_murmur3.c ------------- */
/* Both parts of the hash module read little-endian words and rotate 64-bit
 * lanes; static inline here, so the short XXH3 paths keep them inlined.
 * Not for other modules (bk_endian.h has the loads the cores use). */

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BK_HASH_BIG_ENDIAN 1
#else
#define BK_HASH_BIG_ENDIAN 0
#endif

/* Little-endian loads from possibly unaligned memory. */
static inline uint32_t bk_hash_read32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
#if BK_HASH_BIG_ENDIAN
    v = bk_bswap32(v);
#endif
    return v;
}

static inline uint64_t bk_hash_read64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if BK_HASH_BIG_ENDIAN
    v = bk_bswap64(v);
#endif
    return v;
}

static inline uint64_t bk_hash_rotl64(uint64_t x, unsigned r)
{
    return (x << r) | (x >> (64u - r));
}

/* Bijective 64-bit finalizer (splitmix64 / Stafford "Mix13" shape:
 * xorshift-multiply-xorshift-multiply-xorshift).  Every step is invertible,
 * so distinct inputs give distinct outputs; full avalanche. */
static inline uint64_t bk_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

#ifdef __cplusplus
}
#endif

#endif /* BK_HASH_H */
