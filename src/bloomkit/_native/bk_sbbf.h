/*
 * bk_sbbf.h -- Parquet's split-block Bloom filter (SBBF), spec-exact.
 *
 * The filter that Parquet files carry per column chunk (parquet-format
 * BloomFilter.md).  Not a bloomkit container structure: its bytes are the
 * ones a Parquet writer stores after the BloomFilterHeader, and its hash is
 * Parquet's (XXH64, seed 0, of the value's PLAIN encoding), not bloomkit's
 * key encoding.  See bk_sbbf.c for the algorithm and docs/parquet.md.
 *
 * The bitset is `nbytes` bytes, nbytes a positive multiple of 32: blocks of
 * eight little-endian 32-bit words.  C11, no Python.h.
 */
#ifndef BK_SBBF_H
#define BK_SBBF_H

#include <stddef.h>
#include <stdint.h>

#include "bk_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_SBBF_BLOCK_BYTES 32u
/* The sizing bounds of the reference writers (parquet-java, Arrow C++):
 * a sized filter is a power of two bytes in [32 B, 128 MiB]. */
#define BK_SBBF_MIN_BYTES 32u
#define BK_SBBF_MAX_BYTES (UINT32_C(128) << 20)
/* The largest bitset this module accepts at all (numBytes is a Thrift i32
 * in the header, so no valid file holds more; the block index arithmetic
 * needs num_blocks < 2^32, which this implies). */
#define BK_SBBF_LIMIT_BYTES UINT64_C(0x7FFFFFE0)

/* XXH64 (seed 0) of bytes: the hash of a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY
 * value (its bytes, without the PLAIN length prefix). */
uint64_t bk_sbbf_hash_bytes(const void *data, size_t len);
/* The hash of an INT32 / INT64 / FLOAT / DOUBLE value: XXH64 of its 4 or 8
 * little-endian PLAIN bytes (floats by their IEEE-754 bit pattern). */
uint64_t bk_sbbf_hash_i32(int32_t v);
uint64_t bk_sbbf_hash_i64(int64_t v);
uint64_t bk_sbbf_hash_f32(float v);
uint64_t bk_sbbf_hash_f64(double v);

/* BK_OK when nbytes is a valid bitset size (a positive multiple of 32, at
 * most BK_SBBF_LIMIT_BYTES); else BK_ERR_FORMAT and *reason says why. */
bk_rc bk_sbbf_check_size(uint64_t nbytes, const char **reason);

/* Bytes a writer allocates for `ndv` distinct values at false-positive
 * rate fpp: the spec's -8 ndv / ln(1 - fpp^(1/8)) bits, clamped to
 * [BK_SBBF_MIN_BYTES, BK_SBBF_MAX_BYTES] and rounded up to a power of two.
 * 0 when fpp is not in (0, 1) or ndv is negative or NaN. */
uint64_t bk_sbbf_optimal_bytes(double ndv, double fpp);

/* The false-positive rate of a split-block filter of nbytes holding ndv
 * distinct values, under the spec's model: each block is a split Bloom
 * filter of eight 32-bit lanes; the load of a block is Poisson with mean
 * ndv / num_blocks, so fpp = sum_j P(j) (1 - (1 - 1/32)^j)^8, summed until
 * the terms vanish. */
double bk_sbbf_fpp(uint64_t nbytes, double ndv);

/* Set / test the eight bits of hash h.  Insert uses a relaxed atomic OR on
 * each word so that concurrent batch inserts lose no bit; check uses
 * relaxed loads.  `bits` holds nbytes (checked) bytes. */
void bk_sbbf_insert(uint8_t *bits, uint64_t nbytes, uint64_t h);
int bk_sbbf_check(const uint8_t *bits, uint64_t nbytes, uint64_t h);

/* Batches over n hashes: out[i] = 0/1. */
void bk_sbbf_insert_many(uint8_t *bits, uint64_t nbytes, const uint64_t *hs, size_t n);
void bk_sbbf_check_many(const uint8_t *bits, uint64_t nbytes, const uint64_t *hs, size_t n,
                        uint8_t *out);

/* out[i] = XXH64 of items[i * width .. (i + 1) * width): the hashes of n
 * fixed-width PLAIN values (INT32/FLOAT width 4, INT64/DOUBLE width 8,
 * FIXED_LEN_BYTE_ARRAY width type_length), already little-endian. */
void bk_sbbf_hash_fixed(const uint8_t *items, size_t n, size_t width, uint64_t *out);

/* Number of set bits (for the fill ratio). */
uint64_t bk_sbbf_popcount(const uint8_t *bits, uint64_t nbytes);

#ifdef __cplusplus
}
#endif

#endif /* BK_SBBF_H */
