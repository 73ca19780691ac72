/*
 * test_bk_sbbf.c - standalone known-answer test for bk_sbbf.c (Parquet's
 * split-block Bloom filter).
 *
 * Build & run (from the repository root):
 *   cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -Isrc/bloomkit/_native \
 *      src/bloomkit/_native/bk_hash.c src/bloomkit/_native/bk_sbbf.c \
 *      tests/native/test_bk_sbbf.c -lm -o /tmp/test_bk_sbbf && /tmp/test_bk_sbbf
 *
 * Expectations were computed once, independently of this C code, with the
 * Python `xxhash` package (reference XXH64) and a plain-Python transcription
 * of the specification's algorithm (tests/test_parquet.py, _model_check):
 * per-type hashes of PLAIN encodings, and the XXH64 digest of the whole
 * bitset after inserting fixed values.  XXH64 itself is pinned by
 * test_bk_hash.c and tests/hash_vectors.json.  The filter-level behaviour is
 * checked against DuckDB's and pyarrow's files in tests/test_parquet.py.
 */
#include "bk_hash.h"
#include "bk_sbbf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check_u64(const char *what, uint64_t got, uint64_t want)
{
    if (got != want) {
        printf("FAIL %s: got 0x%016llx, want 0x%016llx\n", what, (unsigned long long)got,
               (unsigned long long)want);
        failures++;
    }
}

static void check_true(const char *what, int cond)
{
    if (!cond) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

static uint8_t *zeroed(size_t n)
{
    uint8_t *p = calloc(1, n);
    if (p == NULL) {
        printf("out of memory\n");
        exit(2);
    }
    return p;
}

int main(void)
{
    const char *reason = NULL;
    uint8_t *bits;

    /* Hashes of PLAIN encodings. */
    check_u64("hash_i32(5)", bk_sbbf_hash_i32(5), UINT64_C(0xc3d48b2f79d2b939));
    check_u64("hash_i64(-1)", bk_sbbf_hash_i64(-1), UINT64_C(0x85d136adb773c6c9));
    check_u64("hash_f64(1.5)", bk_sbbf_hash_f64(1.5), UINT64_C(0x49f7b96b6b5ccaf9));
    check_u64("hash_f32(-0.0)", bk_sbbf_hash_f32(-0.0f), UINT64_C(0x822e51211bf08373));
    check_u64("hash_bytes(parquet)", bk_sbbf_hash_bytes("parquet", 7),
              UINT64_C(0x3c9d29275c52e429));
    {
        uint8_t plain[12];
        uint64_t hs[3];
        int32_t v[3] = {5, -1, 7};
        for (int i = 0; i < 3; i++)
            for (int b = 0; b < 4; b++)
                plain[4 * i + b] = (uint8_t)((uint32_t)v[i] >> (8 * b));
        bk_sbbf_hash_fixed(plain, 3, 4, hs);
        for (int i = 0; i < 3; i++)
            check_u64("hash_fixed == hash_i32", hs[i], bk_sbbf_hash_i32(v[i]));
    }

    /* INT64 0..999 into 1024 bytes: the whole bitset pinned. */
    bits = zeroed(1024);
    for (int64_t v = 0; v < 1000; v++)
        bk_sbbf_insert(bits, 1024, bk_sbbf_hash_i64(v));
    check_u64("bitset int64 0..999 / 1024 B", bk_hash_xxh64(bits, 1024, 0),
              UINT64_C(0xe5210a2cf223ee53));
    for (int64_t v = 0; v < 1000; v++)
        check_true("no false negative (1024 B)", bk_sbbf_check(bits, 1024, bk_sbbf_hash_i64(v)));
    {
        int fp = 0;
        for (int64_t v = 1000000; v < 1100000; v++)
            fp += bk_sbbf_check(bits, 1024, bk_sbbf_hash_i64(v));
        /* 1000 values in 32 blocks (8.2 bits/value): model rate ~3.7%. */
        double rate = fp / 100000.0, model = bk_sbbf_fpp(1024, 1000.0);
        if (rate < model * 0.85 || rate > model * 1.15) {
            printf("FAIL measured rate %.4f vs model %.4f\n", rate, model);
            failures++;
        }
    }
    free(bits);

    /* A size that is not a power of two (37 blocks): the block index is
     * ((h >> 32) * z) >> 32, not a mask.  Batch insert and check. */
    {
        uint64_t hs[100];
        uint8_t out[100];
        bits = zeroed(32 * 37);
        for (int32_t v = 0; v < 100; v++)
            hs[v] = bk_sbbf_hash_i32(v);
        bk_sbbf_insert_many(bits, 32 * 37, hs, 100);
        check_u64("bitset int32 0..99 / 37 blocks", bk_hash_xxh64(bits, 32 * 37, 0),
                  UINT64_C(0x6f40c0d134b82864));
        bk_sbbf_check_many(bits, 32 * 37, hs, 100, out);
        for (int i = 0; i < 100; i++)
            check_true("batch check finds inserted", out[i] == 1);
        check_true("popcount <= 800", bk_sbbf_popcount(bits, 32 * 37) <= 800);
        free(bits);
    }

    /* Sizing: the spec's bits per value, clamped and rounded to 2^k bytes. */
    check_u64("optimal(1e6, 0.01)", bk_sbbf_optimal_bytes(1e6, 0.01), 2097152);
    check_u64("optimal(0, 0.5)", bk_sbbf_optimal_bytes(0.0, 0.5), 32);
    check_u64("optimal(1e12, 1e-9)", bk_sbbf_optimal_bytes(1e12, 1e-9), BK_SBBF_MAX_BYTES);
    check_u64("optimal(10, 0)", bk_sbbf_optimal_bytes(10.0, 0.0), 0);
    check_u64("optimal(10, 1)", bk_sbbf_optimal_bytes(10.0, 1.0), 0);
    check_u64("optimal(-1, .1)", bk_sbbf_optimal_bytes(-1.0, 0.1), 0);
    check_true("fpp(1024, 0) == 0", bk_sbbf_fpp(1024, 0.0) == 0.0);
    check_true("fpp grows with load", bk_sbbf_fpp(1024, 100.0) < bk_sbbf_fpp(1024, 1000.0));
    check_true("fpp saturates", bk_sbbf_fpp(32, 1e9) == 1.0);

    /* Sizes a header may declare. */
    check_true("size 32 ok", bk_sbbf_check_size(32, &reason) == BK_OK);
    check_true("size 0 refused", bk_sbbf_check_size(0, &reason) == BK_ERR_FORMAT);
    check_true("size 33 refused", bk_sbbf_check_size(33, &reason) == BK_ERR_FORMAT);
    check_true("size 2^40 refused",
               bk_sbbf_check_size(UINT64_C(1) << 40, &reason) == BK_ERR_FORMAT);

    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("test_bk_sbbf: all passed\n");
    return 0;
}
