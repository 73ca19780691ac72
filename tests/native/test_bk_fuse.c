/*
 * test_bk_fuse.c -- the binary fuse core without Python (tests/test_fuse.py
 * compiles and runs it; by hand:
 *
 *   n=src/bloomkit/_native
 *   cc -std=c11 -O2 -Wall -Wextra -DBK_HAVE_FUSE=1 -I$n $n/bk_fuse.c $n/bk_format.c $n/bk_kinds.c \
 *      $n/bk_bloom.c $n/bk_hash.c $n/bk_simd.c tests/native/test_bk_fuse.c -lm -o /tmp/tf
 *   /tmp/tf
 *
 * Checks, for every n in 0..300, a spread of sizes to 2 * 10^5 and every
 * fingerprint width: the build succeeds, every key is found (no false
 * negative), the state passes the one validator, the count is the number
 * of distinct hashes, a build from the same set with duplicates and in
 * another order gives the same bytes, and the false-positive rate of
 * absent probes is near 2^-f (8 bits: within 5 standard errors).  Then a
 * few hostile headers (each must be refused with a reason).
 */
#include "bk_format.h"
#include "bk_fuse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tf_failures;

#define TF_CHECK(cond, ...)                                             \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            if (++tf_failures > 20)                                     \
                exit(1);                                                \
        }                                                               \
    } while (0)

static uint64_t tf_rng = 0x1234567ULL;
static uint64_t tf_next(void)
{
    tf_rng += 0x9E3779B97F4A7C15ULL;
    return bk_mix64(tf_rng);
}

/* Build a state from hs[0..n) (modified in place); NULL on failure. */
static uint8_t *tf_build(uint64_t *hs, size_t n, uint32_t f, uint64_t *len)
{
    bk_fuse_work w;
    const char *reason = NULL;
    uint8_t *buf;
    bk_rc rc = bk_fuse_peel(&w, hs, n, f, &reason);
    if (rc != BK_OK) {
        TF_CHECK(0, "peel n=%zu f=%u: %s", n, f, reason);
        bk_fuse_work_free(&w);
        return NULL;
    }
    *len = BK_FUSE_HEADER_LEN + bk_fuse_payload_len(&w);
    buf = (uint8_t *)calloc(1, (size_t)*len);
    bk_fuse_init_state(buf, &w, 7, 0, 0);
    bk_fuse_assign(&w, buf + BK_FUSE_HEADER_LEN);
    bk_fuse_work_free(&w);
    bk_format_seal(buf, *len);
    return buf;
}

static void tf_one(size_t n, uint32_t f, int probe_fpr)
{
    uint64_t *keys = (uint64_t *)malloc((n ? n : 1) * sizeof *keys);
    uint64_t *hs = (uint64_t *)malloc((2 * n + 1) * sizeof *hs);
    uint64_t len = 0, len2 = 0;
    uint8_t *buf, *buf2;
    bk_header h;
    const char *reason = NULL;
    bk_fuse fu;
    size_t i, distinct = n;

    for (i = 0; i < n; i++)
        keys[i] = tf_next();
    if (n > 3)
        keys[n - 1] = keys[0]; /* one duplicate in the key list itself */
    if (n > 3)
        distinct = n - 1;
    memcpy(hs, keys, n * sizeof *hs);
    buf = tf_build(hs, n, f, &len);
    if (buf == NULL)
        goto out;
    TF_CHECK(bk_format_validate(buf, len, BK_CHECK_CHECKSUM | BK_CHECK_DEEP, &h, &reason) == BK_OK,
             "validate n=%zu: %s", n, reason);
    bk_fuse_attach(&fu, buf);
    TF_CHECK(fu.count == distinct, "count %llu != %zu", (unsigned long long)fu.count, distinct);
    for (i = 0; i < n; i++)
        TF_CHECK(bk_fuse_contains(&fu, keys[i]), "false negative n=%zu f=%u i=%zu", n, f, i);
    {
        uint8_t *out = (uint8_t *)malloc(n ? n : 1);
        bk_fuse_contains_many(&fu, keys, n, out);
        for (i = 0; i < n; i++)
            TF_CHECK(out[i] == 1, "batch false negative n=%zu i=%zu", n, i);
        free(out);
    }
    /* Same set, reversed and every key twice: same bytes. */
    for (i = 0; i < n; i++) {
        hs[2 * i] = keys[n - 1 - i];
        hs[2 * i + 1] = keys[i];
    }
    buf2 = tf_build(hs, 2 * n, f, &len2);
    if (buf2 != NULL) {
        TF_CHECK(len == len2 && memcmp(buf, buf2, (size_t)len) == 0,
                 "duplicates/order changed the bytes at n=%zu f=%u", n, f);
        free(buf2);
    }
    if (probe_fpr) {
        size_t probes = 2000000, fp = 0;
        double p = ldexp(1.0, -(int)f), se = sqrt(p * (1 - p) / (double)probes);
        for (i = 0; i < probes; i++)
            fp += (size_t)bk_fuse_contains(&fu, tf_next());
        TF_CHECK(fabs((double)fp / (double)probes - p) <= 5 * se + 1e-9,
                 "fpr n=%zu f=%u: %zu / %zu, expected %g", n, f, fp, probes, p);
        printf("n=%zu f=%u arity=%u: %.3f bits/key, fpr %.5f (2^-f = %.5f)\n", n, f, fu.arity,
               (double)fu.array_length * f / (double)distinct, (double)fp / (double)probes, p);
    }
    if (n == 0) {
        TF_CHECK(!bk_fuse_contains(&fu, 0) && !bk_fuse_contains(&fu, 12345), "empty set answers");
    }
    free(buf);
out:
    free(keys);
    free(hs);
}

static void tf_hostile(void)
{
    uint64_t hs[100], len = 0;
    uint8_t *buf;
    bk_header h;
    const char *reason;
    struct {
        unsigned off;
        unsigned size;
        uint64_t value;
    } cases[] = {
        {64 + BK_FUSE_P_ARITY, 4, 5},
        {64 + BK_FUSE_P_FP_BITS, 4, 12},
        {64 + BK_FUSE_P_SEGMENT_LENGTH, 4, 3},
        {64 + BK_FUSE_P_SEGMENT_LENGTH, 4, 1u << 19},
        {64 + BK_FUSE_P_SEGMENT_COUNT, 4, 0xFFFFFFFFu},
        {64 + BK_FUSE_P_ARRAY_LENGTH, 8, ~0ULL},
        {64 + BK_FUSE_P_COUNT, 8, 1ULL << 40},
        {64 + BK_FUSE_P_COUNT, 8, 0},
        {64 + BK_FUSE_P_ATTEMPTS, 4, 65},
        {64 + BK_FUSE_P_RESERVED, 4, 1},
    };
    for (unsigned i = 0; i < 100; i++)
        hs[i] = tf_next();
    buf = tf_build(hs, 100, 8, &len);
    if (buf == NULL)
        return;
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t *b = (uint8_t *)malloc((size_t)len);
        memcpy(b, buf, (size_t)len);
        if (cases[c].size == 4)
            bk_store_u32le(b + cases[c].off, (uint32_t)cases[c].value);
        else
            bk_store_u64le(b + cases[c].off, cases[c].value);
        reason = NULL;
        TF_CHECK(bk_format_validate(b, len, 0, &h, &reason) != BK_OK && reason != NULL,
                 "hostile case %u accepted", c);
        free(b);
    }
    free(buf);
}

int main(void)
{
    static const uint32_t fs[3] = {8, 16, 32};
    static const size_t sizes[] = {500, 1000, 4096, 10000, 65537, 200000};
    for (size_t n = 0; n <= 300; n++)
        for (unsigned j = 0; j < 3; j++)
            tf_one(n, fs[j], 0);
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (unsigned j = 0; j < 3; j++)
            tf_one(sizes[i], fs[j], sizes[i] == 200000 && fs[j] != 32);
    tf_hostile();
    if (tf_failures) {
        fprintf(stderr, "%d failures\n", tf_failures);
        return 1;
    }
    printf("test_bk_fuse: ok\n");
    return 0;
}
