/*
 * bk_keys_fast.h -- the key hashes of bk_keys.h, inlined for the hot paths.
 *
 * `x in f` for a small key costs ~25 ns of interpreter work and a few ns of
 * ours; a call into bk_hash.c and its length dispatch were a visible part
 * of the latter (callgrind: ~52 instructions per 8-byte key, a third of
 * bloomkit's own cost per `in`).  These functions compute EXACTLY the same
 * values as bk_key_int64 / bk_key_uint64 / bk_key_bytes (XXH3-64 of the
 * same bytes with the same seed; tests/test_paths.py checks them against
 * the xxhash package for every length 0..300 and for int edge values), but
 * inline, with the 8-byte integer case reduced to a dozen instructions.
 * Keyed (SipHash) filters and keys longer than 16 bytes call the shared
 * implementation.  Changing anything here changes no format: if these ever
 * disagree with bk_hash.c, that is a bug here.
 */
#ifndef BK_KEYS_FAST_H
#define BK_KEYS_FAST_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_hash.h"
#include "bk_keys.h"

/* Words of the XXH3 default secret (bytes 0..71 read little-endian), the
 * only ones the 0..64-byte paths use.  See bk_hash.c for the table. */
#define BK_XS_0_32 0x396cfeb8u
#define BK_XS_4_32 0xbe4ba423u
#define BK_XS_8 0x1cad21f72c81017cULL
#define BK_XS_16 0xdb979083e96dd4deULL
#define BK_XS_24 0x1f67b3b7a4a44072ULL
#define BK_XS_32 0x78e5c0cc4ee679cbULL
#define BK_XS_40 0x2172ffcc7dd05a82ULL
#define BK_XS_48 0x8e2443f7744608b8ULL
#define BK_XS_56 0x4c263a81e69035e0ULL
#define BK_XS_64 0xcb00c391bb52283cULL
#define BK_XPMX_1 0x165667919E3779F9ULL
#define BK_XPMX_2 0x9FB21C651E98DF25ULL
#define BK_XP64_1 0x9E3779B185EBCA87ULL
#define BK_XP64_2 0xC2B2AE3D27D4EB4FULL
#define BK_XP64_3 0x165667B19E3779F9ULL

BK_INLINE uint64_t bk_kf_rotl64(uint64_t x, unsigned r)
{
    return (x << r) | (x >> (64 - r));
}

BK_INLINE uint64_t bk_kf_xxh64_avalanche(uint64_t x)
{
    x ^= x >> 33;
    x *= BK_XP64_2;
    x ^= x >> 29;
    x *= BK_XP64_3;
    x ^= x >> 32;
    return x;
}

/* XXH3 4..8-byte path, given first = LE32(p), last = LE32(p + len - 4)
 * and bitflip = bk_kf_bitflip_4to8(seed). */
BK_INLINE uint64_t bk_kf_bitflip_4to8(uint64_t seed)
{
    uint64_t mseed = seed ^ ((uint64_t)bk_bswap32((uint32_t)seed) << 32);
    return (BK_XS_8 ^ BK_XS_16) - mseed;
}

BK_INLINE uint64_t bk_kf_xxh3_4to8(uint64_t first, uint64_t last, size_t len, uint64_t bitflip)
{
    uint64_t v = (last | (first << 32)) ^ bitflip;
    v ^= bk_kf_rotl64(v, 49) ^ bk_kf_rotl64(v, 24);
    v *= BK_XPMX_2;
    v ^= (v >> 35) + (uint64_t)len;
    v *= BK_XPMX_2;
    v ^= v >> 28;
    return v;
}

/* XXH3-64 of the 8 little-endian bytes of v, given
 * bitflip = bk_kf_bitflip_4to8(seed) (bk_hasher.int_flip for int keys). */
BK_INLINE uint64_t bk_hash_xxh3_64_u64le(uint64_t v, uint64_t bitflip)
{
    return bk_kf_xxh3_4to8((uint32_t)v, v >> 32, 8, bitflip);
}

/* XXH3-64 of p[0..n), n <= 16 (== bk_hash_xxh3_64). */
BK_INLINE uint64_t bk_hash_xxh3_64_short(const uint8_t *p, size_t n, uint64_t seed)
{
    if (n > 8) {
        uint64_t lo = bk_load_u64le(p) ^ ((BK_XS_24 ^ BK_XS_32) + seed);
        uint64_t hi = bk_load_u64le(p + n - 8) ^ ((BK_XS_40 ^ BK_XS_48) - seed);
        uint64_t acc = (uint64_t)n + bk_bswap64(lo) + hi + bk_mulfold64(lo, hi);
        acc ^= acc >> 37;
        acc *= BK_XPMX_1;
        acc ^= acc >> 32;
        return acc;
    }
    if (n >= 4)
        return bk_kf_xxh3_4to8(bk_load_u32le(p), bk_load_u32le(p + n - 4), n,
                               bk_kf_bitflip_4to8(seed));
    if (n > 0) {
        uint32_t c1 = p[0], c2 = p[n >> 1], c3 = p[n - 1];
        uint32_t combined = (c1 << 16) | (c2 << 24) | c3 | ((uint32_t)n << 8);
        uint64_t bitflip = (uint64_t)(BK_XS_0_32 ^ BK_XS_4_32) + seed;
        return bk_kf_xxh64_avalanche((uint64_t)combined ^ bitflip);
    }
    return bk_kf_xxh64_avalanche(seed ^ BK_XS_56 ^ BK_XS_64);
}

/* XXH3-64 of p[0..n), 17 <= n <= 64 (== bk_hash_xxh3_64): the 17..128-byte
 * rule (acc = n * PRIME64_1 plus one mix16 pair per 32 bytes, from both
 * ends, then the XXH3 avalanche) with the secret words as immediates.  It
 * covers the usual string keys (20-byte ids, 36-byte UUIDs, short URLs);
 * inline it saves the call, the length dispatch and the secret loads. */
BK_INLINE uint64_t bk_kf_mix16(const uint8_t *p, uint64_t s0, uint64_t s1, uint64_t seed)
{
    uint64_t a = bk_load_u64le(p) ^ (s0 + seed);
    uint64_t b = bk_load_u64le(p + 8) ^ (s1 - seed);
    return bk_mulfold64(a, b);
}

BK_INLINE uint64_t bk_hash_xxh3_64_17to64(const uint8_t *p, size_t n, uint64_t seed)
{
    const uint64_t xs0 = ((uint64_t)BK_XS_4_32 << 32) | BK_XS_0_32;
    uint64_t acc = (uint64_t)n * BK_XP64_1;
    if (n > 32) {
        acc += bk_kf_mix16(p + 16, BK_XS_32, BK_XS_40, seed);
        acc += bk_kf_mix16(p + n - 32, BK_XS_48, BK_XS_56, seed);
    }
    acc += bk_kf_mix16(p, xs0, BK_XS_8, seed);
    acc += bk_kf_mix16(p + n - 16, BK_XS_16, BK_XS_24, seed);
    acc ^= acc >> 37;
    acc *= BK_XPMX_1;
    acc ^= acc >> 32;
    return acc;
}

/* == bk_key_bytes */
BK_INLINE uint64_t bk_fastkey_bytes(const bk_hasher *hs, const void *p, size_t n)
{
    if (BK_UNLIKELY(hs->keyed))
        return bk_key_bytes(hs, p, n);
    if (BK_LIKELY(n <= 16))
        return bk_hash_xxh3_64_short((const uint8_t *)p, n, hs->seed);
    if (BK_LIKELY(n <= 64))
        return bk_hash_xxh3_64_17to64((const uint8_t *)p, n, hs->seed);
    return bk_hash_xxh3_64(p, n, hs->seed);
}

/* == bk_key_int64 */
BK_INLINE uint64_t bk_fastkey_int64(const bk_hasher *hs, int64_t v)
{
    if (BK_UNLIKELY(hs->keyed))
        return bk_key_int64(hs, v);
    return bk_hash_xxh3_64_u64le((uint64_t)v, hs->int_flip);
}

/* == bk_key_uint64 */
BK_INLINE uint64_t bk_fastkey_uint64(const bk_hasher *hs, uint64_t v)
{
    if (BK_UNLIKELY(hs->keyed) || (v >> 63))
        return bk_key_uint64(hs, v);
    return bk_hash_xxh3_64_u64le(v, hs->int_flip);
}

#endif /* BK_KEYS_FAST_H */
