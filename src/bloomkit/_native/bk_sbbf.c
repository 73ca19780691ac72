/*
 * bk_sbbf.c -- Parquet's split-block Bloom filter, written from the
 * parquet-format specification (BloomFilter.md, parquet.thrift).
 *
 * The structure.  A bitset of z blocks; a block is 256 bits held as eight
 * 32-bit words (little-endian on the wire and here: we work on the file's
 * bytes directly, so the bitset read from a Parquet file is used as is and
 * one we build is byte-identical to a writer's).  A value is hashed to one
 * 64-bit h (below); its block is
 *
 *     b = ((h >> 32) * z) >> 32          (the top 32 bits scaled to [0, z))
 *
 * and within the block word i (i = 0..7) gets one bit,
 *
 *     bit_i = ((uint32_t)h * SALT[i]) >> 27
 *
 * with the spec's eight odd 32-bit salts: a multiply-shift hash of the low
 * 32 bits per word ("split" Bloom filter: each of the k = 8 hash functions
 * owns its own 32-bit lane).  Insert sets the eight bits, check tests that
 * all eight are set.  One cache line (half of one on 64-byte lines) per
 * value, k fixed at 8.
 *
 * The hash.  XXH64 with seed 0 (bk_hash.c, pinned by tests/hash_vectors.json
 * and tests/native/test_bk_hash.c) of the value's PLAIN encoding: INT32 and
 * FLOAT 4 little-endian bytes, INT64 and DOUBLE 8, FIXED_LEN_BYTE_ARRAY its
 * bytes, BYTE_ARRAY its bytes *without* the 4-byte length prefix that PLAIN
 * pages carry (that is what every writer hashes).  Logical types hash their
 * stored physical value (a DATE is an INT32 day count, a TIMESTAMP an INT64
 * count of its unit, a STRING its UTF-8 bytes); that mapping lives in the
 * Python facade (bloomkit/parquet/values.py), which knows the column's schema.
 *
 * Sizing.  The spec: a split-block filter with k = 8 needs
 * c = -8 / ln(1 - p^(1/8)) bits per distinct value for rate p (11.54 bits
 * at p = 0.5%, 9.6 at 1%, 14.5 at 0.1%).  The reference writers then clamp
 * to [32 B, 128 MiB] and round up to a power of two, so the real rate is
 * usually well below p (up to 2x more bits).  bk_sbbf_fpp gives the rate
 * of a given size under the block model (blocks load unevenly: at 10
 * bits/value the rate is about 1.6% against 1.2% for an ideal split filter).
 *
 * Concurrency.  Inserts OR each word with a relaxed atomic, so GIL-free
 * batch inserts from several threads lose no bit (a lost bit would be a
 * false negative); checks use relaxed loads.  No ordering is needed: every
 * operation is a set of independent monotone bit updates.
 */
#include "bk_sbbf.h"

#include <math.h>
#include <string.h>

#include "bk_atomic.h"
#include "bk_endian.h"
#include "bk_hash.h"

/* The spec's salts (BloomFilter.md, "Algorithm"); all odd, so that the
 * multiply is a bijection of the 32-bit key. */
static const uint32_t bk_sbbf_salt[8] = {
    UINT32_C(0x47b6137b), UINT32_C(0x44974d91), UINT32_C(0x8824ad5b), UINT32_C(0xa2b7289d),
    UINT32_C(0x705495c7), UINT32_C(0x2df1424b), UINT32_C(0x9efc4947), UINT32_C(0x5c6bfb31),
};

/* ---- Begin logic for hashing ------------------------------------------ */

uint64_t bk_sbbf_hash_bytes(const void *data, size_t len)
{
    return bk_hash_xxh64(data, len, 0);
}

uint64_t bk_sbbf_hash_i32(int32_t v)
{
    uint8_t b[4];
    bk_store_u32le(b, (uint32_t)v);
    return bk_hash_xxh64(b, sizeof b, 0);
}

uint64_t bk_sbbf_hash_i64(int64_t v)
{
    uint8_t b[8];
    bk_store_u64le(b, (uint64_t)v);
    return bk_hash_xxh64(b, sizeof b, 0);
}

uint64_t bk_sbbf_hash_f32(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return bk_sbbf_hash_i32((int32_t)u);
}

uint64_t bk_sbbf_hash_f64(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return bk_sbbf_hash_i64((int64_t)u);
}

void bk_sbbf_hash_fixed(const uint8_t *items, size_t n, size_t width, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = bk_hash_xxh64(items + i * width, width, 0);
}

/* ---- End logic for hashing -------------------------------------------- */

/* ---- Begin logic for sizing ------------------------------------------- */

bk_rc bk_sbbf_check_size(uint64_t nbytes, const char **reason)
{
    if (nbytes == 0) {
        *reason = "bitset is empty (numBytes 0)";
        return BK_ERR_FORMAT;
    }
    if (nbytes % BK_SBBF_BLOCK_BYTES != 0) {
        *reason = "bitset size is not a multiple of the 32-byte block";
        return BK_ERR_FORMAT;
    }
    if (nbytes > BK_SBBF_LIMIT_BYTES) {
        *reason = "bitset size exceeds the 2^31-byte limit of numBytes";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

uint64_t bk_sbbf_optimal_bytes(double ndv, double fpp)
{
    double bits;
    uint64_t nbytes, p2;
    if (!(fpp > 0.0 && fpp < 1.0) || !(ndv >= 0.0))
        return 0;
    /* -8 ndv / ln(1 - fpp^(1/8)): log1p keeps precision for tiny fpp. */
    bits = -8.0 * ndv / log1p(-pow(fpp, 1.0 / 8.0));
    if (!(bits < (double)BK_SBBF_MAX_BYTES * 8.0))
        return BK_SBBF_MAX_BYTES;
    nbytes = (uint64_t)(bits / 8.0);
    if (nbytes < BK_SBBF_MIN_BYTES)
        nbytes = BK_SBBF_MIN_BYTES;
    p2 = BK_SBBF_MIN_BYTES;
    while (p2 < nbytes)
        p2 <<= 1;
    return p2 > BK_SBBF_MAX_BYTES ? BK_SBBF_MAX_BYTES : p2;
}

double bk_sbbf_fpp(uint64_t nbytes, double ndv)
{
    double lambda, lo, hi, sum = 0.0;
    const double lane = 31.0 / 32.0;
    if (nbytes < BK_SBBF_BLOCK_BYTES || !(ndv >= 0.0))
        return 1.0;
    lambda = ndv / (double)(nbytes / BK_SBBF_BLOCK_BYTES);
    if (lambda == 0.0)
        return 0.0;
    if (lambda > 1e6)  /* every block far past 32 keys per lane: saturated */
        return 1.0;
    /* The Poisson mass outside lambda +- 12 sqrt(lambda) + 40 is < 1e-30. */
    lo = floor(lambda - 12.0 * sqrt(lambda) - 40.0);
    hi = ceil(lambda + 12.0 * sqrt(lambda) + 40.0);
    if (lo < 0.0)
        lo = 0.0;
    for (double j = lo; j <= hi; j += 1.0) {
        double logp = -lambda + j * log(lambda) - lgamma(j + 1.0);
        double lanefull = 1.0 - pow(lane, j);
        sum += exp(logp) * pow(lanefull, 8.0);
    }
    return sum > 1.0 ? 1.0 : sum;
}

/* ---- End logic for sizing --------------------------------------------- */

/* ---- Begin logic for insert and check --------------------------------- */

static inline uint64_t bk_sbbf_block(uint64_t h, uint64_t nbytes)
{
    /* nblocks < 2^32 (BK_SBBF_LIMIT_BYTES), so the product fits 64 bits. */
    return (((h >> 32) * (nbytes / BK_SBBF_BLOCK_BYTES)) >> 32) * BK_SBBF_BLOCK_BYTES;
}

static inline uint32_t bk_sbbf_load32(const uint8_t *p)
{
    return (uint32_t)BK_LE32(bk_atomic_load32((const uint32_t *)(const void *)p));
}

static inline void bk_sbbf_or32(uint8_t *p, uint32_t mask)
{
    bk_atomic_or32((uint32_t *)(void *)p, (uint32_t)BK_LE32(mask));
}

void bk_sbbf_insert(uint8_t *bits, uint64_t nbytes, uint64_t h)
{
    uint8_t *blk = bits + bk_sbbf_block(h, nbytes);
    uint32_t key = (uint32_t)h;
    for (int i = 0; i < 8; i++)
        bk_sbbf_or32(blk + 4 * i, UINT32_C(1) << ((uint32_t)(key * bk_sbbf_salt[i]) >> 27));
}

int bk_sbbf_check(const uint8_t *bits, uint64_t nbytes, uint64_t h)
{
    const uint8_t *blk = bits + bk_sbbf_block(h, nbytes);
    uint32_t key = (uint32_t)h, miss = 0;
    /* Branch-free over the eight words: the answer for a random probe is
     * unpredictable, and eight loads of one line cost less than a
     * mispredicted early exit. */
    for (int i = 0; i < 8; i++) {
        uint32_t bit = UINT32_C(1) << ((uint32_t)(key * bk_sbbf_salt[i]) >> 27);
        miss |= bit & ~bk_sbbf_load32(blk + 4 * i);
    }
    return miss == 0;
}

void bk_sbbf_insert_many(uint8_t *bits, uint64_t nbytes, const uint64_t *hs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n)
            bk_prefetch_w(bits + bk_sbbf_block(hs[i + 8], nbytes));
        bk_sbbf_insert(bits, nbytes, hs[i]);
    }
}

void bk_sbbf_check_many(const uint8_t *bits, uint64_t nbytes, const uint64_t *hs, size_t n,
                        uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n)
            bk_prefetch_r(bits + bk_sbbf_block(hs[i + 8], nbytes));
        out[i] = (uint8_t)bk_sbbf_check(bits, nbytes, hs[i]);
    }
}

uint64_t bk_sbbf_popcount(const uint8_t *bits, uint64_t nbytes)
{
    uint64_t c = 0;
    for (uint64_t i = 0; i + 8 <= nbytes; i += 8)
        c += (uint64_t)bk_popcount64(bk_load_u64le(bits + i));
    return c;
}

/* ---- End logic for insert and check ----------------------------------- */
