/* grow_core.c: the growable filter's C core (bk_grow.c) against the
 * blocked Bloom filter's (bk_bloom.c, layout version 1, the AVX2 paths when
 * the CPU has them, as the extension runs them), one run, same keys.
 *
 * Built and run by benchmarks/growable.py, which passes the blocked
 * filter's shape as BlockedBloomFilter(n, error_rate) sizes it.
 *
 * Usage: grow_core START FINAL BLOCKED_BITS K [QUERIES]
 *   START         the growable filter's initial capacity (10^4 in issue 32)
 *   FINAL         keys added (the growable filter grows to it; the blocked
 *                 filter is sized for it in hindsight)
 *   BLOCKED_BITS  the blocked filter's bits (a multiple of 512), K its k
 *   QUERIES       absent keys queried (default min(FINAL, 2^21))
 * Prints one line of key=value fields: ns per key of add_many (into a
 * fresh filter, growth included), contains_many of absent keys and a
 * per-key contains loop of absent keys, for both, the best of 3 passes in
 * thread CPU time (the machine is shared); bits per key of both; the
 * growable filter's measured and estimated false-positive rate.
 *
 * Keys are 64-bit hashes (a bijective mix of a counter): key hashing, the
 * same for both, is not timed, so the ratios are the cores' alone, which is
 * harsher than the Python calls' (they add the same hashing and call cost
 * to both sides). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bk_bloom.h"
#include "bk_grow.h"
#include "bk_hash.h"
#include "bk_simd.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    uint8_t params[BK_GROW_PARAMS_LEN];
    void *raw;
    uint64_t len;
} holder;

static bk_rc resize(bk_grow *g, uint64_t len, void *ctx)
{
    holder *h = ctx;
    void *raw = calloc(1, (size_t)len + 63);
    uint8_t *al;
    if (raw == NULL)
        return BK_ERR_NOMEM;
    al = (uint8_t *)raw + ((64 - ((uintptr_t)raw & 63)) & 63);
    if (h->raw != NULL)
        memcpy(al, g->buckets, (size_t)(h->len < len ? h->len : len));
    free(h->raw);
    h->raw = raw;
    h->len = len;
    g->buckets = al;
    return BK_OK;
}

static void grow_make(bk_grow *g, holder *h, uint64_t capacity)
{
    uint32_t q0, q1;
    uint64_t len;
    const char *reason = NULL;
    double ml = bk_grow_max_load(0.01, 10.0); /* 1% up to 2^10 times the start */
    if (bk_grow_shape(capacity, ml, &q0, &q1, &len, &reason) != BK_OK) {
        fprintf(stderr, "shape: %s\n", reason);
        exit(2);
    }
    bk_grow_init_params(h->params, q0, q1, ml);
    h->raw = NULL;
    h->len = 0;
    memset(g, 0, sizeof *g);
    if (resize(g, len, h) != BK_OK)
        exit(3);
    bk_grow_attach(g, h->params, g->buckets);
    g->resize = resize;
    g->ctx = h;
}

static uint8_t *blocked_make(bk_bloom *b, uint64_t bits, uint32_t k, uint64_t n)
{
    uint64_t plen;
    const char *reason = NULL;
    uint8_t *raw, *buf;
    if (bk_bloom_shape(1, bits, k, &plen, &reason) != BK_OK) {
        fprintf(stderr, "blocked shape: %s\n", reason);
        exit(2);
    }
    raw = calloc(1, (size_t)(BK_BLOOM_HEADER_LEN + plen) + 63);
    if (raw == NULL)
        exit(3);
    buf = raw + ((64 - ((uintptr_t)raw & 63)) & 63);
    bk_bloom_init_state(buf, BK_BLOOM_LAYOUT_BLOCKED_V1, bits, k, n, 0.01, 0, 0, 0);
    bk_bloom_attach(b, buf);
    return raw;
}

int main(int argc, char **argv)
{
    uint64_t start, final, bits, nq, i, hits = 0, added = 0;
    uint32_t k;
    uint64_t *keys, *absent;
    uint8_t *out;
    double t, best[2][3], fpr, bpk_g, bpk_b;
    int rep, s;
    volatile uint64_t sink = 0;
    if (argc < 5) {
        fprintf(stderr, "usage: grow_core START FINAL BLOCKED_BITS K [QUERIES]\n");
        return 2;
    }
    start = strtoull(argv[1], NULL, 10);
    final = strtoull(argv[2], NULL, 10);
    bits = strtoull(argv[3], NULL, 10);
    k = (uint32_t)strtoul(argv[4], NULL, 10);
    nq = argc > 5 ? strtoull(argv[5], NULL, 10) : (final < (1u << 21) ? final : (1u << 21));
    bk_simd_init();
    keys = malloc((size_t)final * 8);
    absent = malloc((size_t)nq * 8);
    out = malloc((size_t)(final > nq ? final : nq));
    if (keys == NULL || absent == NULL || out == NULL)
        return 3;
    for (i = 0; i < final; i++)
        keys[i] = bk_mix64(i + 1);
    for (i = 0; i < nq; i++)
        absent[i] = bk_mix64((UINT64_C(1) << 62) + i);
    for (s = 0; s < 2; s++)
        best[s][0] = best[s][1] = best[s][2] = 1e30;
    fpr = bpk_g = bpk_b = 0;
    for (rep = 0; rep < 3; rep++) {
        /* Alternate the two structures within every pass. */
        for (s = 0; s < 2; s++) {
            bk_grow g;
            holder h;
            bk_bloom b;
            uint8_t *braw = NULL;
            if (s == 0)
                grow_make(&g, &h, start);
            else
                braw = blocked_make(&b, bits, k, final);
            t = now();
            if (s == 0) {
                added = 0;
                if (bk_grow_add_many(&g, keys, (size_t)final, &added) != BK_OK)
                    return 4;
            } else {
                bk_bloom_add_many(&b, keys, (size_t)final, 0);
            }
            t = now() - t;
            if (t < best[s][0])
                best[s][0] = t;
            t = now();
            if (s == 0)
                bk_grow_contains_many(&g, absent, (size_t)nq, out);
            else
                bk_bloom_contains_many(&b, absent, (size_t)nq, out);
            t = now() - t;
            if (t < best[s][1])
                best[s][1] = t;
            hits = 0;
            for (i = 0; i < nq; i++)
                hits += out[i];
            t = now();
            for (i = 0; i < nq; i++)
                sink += (uint64_t)(s == 0 ? bk_grow_contains(&g, absent[i])
                                          : bk_bloom_contains(&b, absent[i]));
            t = now() - t;
            if (t < best[s][2])
                best[s][2] = t;
            if (s == 0 && rep == 2) {
                fpr = (double)hits / (double)nq;
                bpk_g = 8.0 * (double)(h.len + BK_GROW_PARAMS_LEN) / (double)final;
                printf("grow_fpr_estimate=%.5f grow_buckets=%llu grow_added=%llu ",
                       bk_grow_estimate_fpr(&g), (unsigned long long)bk_grow_nbuckets(&g),
                       (unsigned long long)added);
            }
            if (s == 0)
                free(h.raw);
            else
                free(braw);
            bpk_b = (double)bits / (double)final;
        }
    }
    printf("start=%llu final=%llu queries=%llu avx2=%d grow_fpr=%.5f grow_bits_per_key=%.2f "
           "blocked_bits_per_key=%.2f",
           (unsigned long long)start, (unsigned long long)final, (unsigned long long)nq,
           bk_simd_avx2, fpr, bpk_g, bpk_b);
    printf(" grow_add_many_ns=%.2f blocked_add_many_ns=%.2f", 1e9 * best[0][0] / (double)final,
           1e9 * best[1][0] / (double)final);
    printf(" grow_contains_many_ns=%.2f blocked_contains_many_ns=%.2f",
           1e9 * best[0][1] / (double)nq, 1e9 * best[1][1] / (double)nq);
    printf(" grow_contains_ns=%.2f blocked_contains_ns=%.2f sink=%llu\n",
           1e9 * best[0][2] / (double)nq, 1e9 * best[1][2] / (double)nq,
           (unsigned long long)(sink & 1));
    free(keys);
    free(absent);
    free(out);
    return 0;
}
