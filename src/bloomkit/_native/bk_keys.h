/*
 * bk_keys.h -- the one key encoding, as hash functions over encoded keys.
 *
 * Every structure hashes a key to one 64-bit value and derives all of its
 * probes from it.  The encoding (docs/keys.md) is:
 *
 *   str          its UTF-8 bytes                      -> byte domain
 *   bytes-like   its raw bytes ("abc" == b"abc")      -> byte domain
 *   int          two's complement, little-endian,     -> integer domain
 *                8 bytes for -2^63..2^63-1, else the
 *                minimal length (>= 9 bytes) that holds
 *                the value with its sign bit
 *
 * The integer domain hashes with a different seed (XXH3) or key (SipHash)
 * than the byte domain, so 1, "1" and b"\x01\0\0\0\0\0\0\0" are three
 * different keys, while 1, True, numpy.int64(1), numpy.uint64(1) and
 * numpy.True_ are one (a numpy scalar is the key of the array element it
 * came from: py_common.c, "buffer elements").  The encoding depends on nothing process-local (no PyObject_Hash),
 * so a filter answers the same in every process and on every platform.
 *
 * Unkeyed mode: XXH3-64 seeded with the filter seed (byte domain) or the
 * seed XOR BK_INT_DOMAIN (integer domain).
 * Keyed mode (hostile input): SipHash-2-4 with k0 = secret[0..8) XOR seed,
 * k1 = secret[8..16) (byte domain) or k1 XOR BK_INT_DOMAIN (integer
 * domain); secret halves are read little-endian.
 */
#ifndef BK_KEYS_H
#define BK_KEYS_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_hash.h"

#define BK_INT_DOMAIN 0x696e74656765722eULL   /* "integer." */
#define BK_KEY_CHECK_MSG "bloomkit-key-check"  /* keyed filters store its MAC */

typedef struct {
    uint64_t seed;
    uint64_t k0, k1;   /* SipHash key halves (keyed mode only) */
    uint64_t int_flip; /* bk_hash_xxh3_4to8_bitflip(seed ^ BK_INT_DOMAIN): ints */
    int keyed;
} bk_hasher;

static inline void bk_hasher_init(bk_hasher *hs, uint64_t seed, const uint8_t *secret16)
{
    hs->seed = seed;
    hs->int_flip = bk_hash_xxh3_4to8_bitflip(seed ^ BK_INT_DOMAIN);
    if (secret16 != NULL) {
        hs->keyed = 1;
        hs->k0 = bk_load_u64le(secret16) ^ seed;
        hs->k1 = bk_load_u64le(secret16 + 8);
    } else {
        hs->keyed = 0;
        hs->k0 = hs->k1 = 0;
    }
}

/* The value stored in the header's key_check field of a keyed filter. */
static inline uint64_t bk_hasher_key_check(const bk_hasher *hs)
{
    if (!hs->keyed)
        return 0;
    return bk_hash_siphash24(BK_KEY_CHECK_MSG, sizeof(BK_KEY_CHECK_MSG) - 1, hs->k0,
                        hs->k1 ^ 0x6b65792d636865ULL);
}

BK_INLINE uint64_t bk_key_bytes(const bk_hasher *hs, const void *p, size_t n)
{
    if (BK_UNLIKELY(hs->keyed))
        return bk_hash_siphash24(p, n, hs->k0, hs->k1);
    return bk_hash_xxh3_64(p, n, hs->seed);
}

/* Integers, already encoded (8 bytes for int64 range, longer otherwise). */
BK_INLINE uint64_t bk_key_intbytes(const bk_hasher *hs, const void *p, size_t n)
{
    if (BK_UNLIKELY(hs->keyed))
        return bk_hash_siphash24(p, n, hs->k0, hs->k1 ^ BK_INT_DOMAIN);
    return bk_hash_xxh3_64(p, n, hs->seed ^ BK_INT_DOMAIN);
}

BK_INLINE uint64_t bk_key_int64(const bk_hasher *hs, int64_t v)
{
    uint8_t b[8];
    bk_store_u64le(b, (uint64_t)v);
    return bk_key_intbytes(hs, b, 8);
}

/* An unsigned 64-bit value: values >= 2^63 need a ninth (zero) byte. */
BK_INLINE uint64_t bk_key_uint64(const bk_hasher *hs, uint64_t v)
{
    uint8_t b[9];
    bk_store_u64le(b, v);
    if (v >> 63) {
        b[8] = 0;
        return bk_key_intbytes(hs, b, 9);
    }
    return bk_key_intbytes(hs, b, 8);
}

#endif /* BK_KEYS_H */
