/*
 * test_bk_sliding.c -- the age-partitioned Bloom filter core without Python
 * (tests/test_sliding.py compiles and runs it; by hand:
 *
 *   n=src/bloomkit/_native
 *   cc -std=c11 -O2 -Wall -Wextra -DBK_HAVE_SLIDING=1 -I$n $n/bk_sliding.c $n/bk_sliding_blocked.c \
 *      $n/bk_format.c $n/bk_kinds.c $n/bk_bloom.c $n/bk_hash.c $n/bk_simd.c $n/bk_grow.c \
 *      tests/native/test_bk_sliding.c -lm -o /tmp/ts && /tmp/ts
 *
 * Checks: the count-mode window (every key of the last l G adds present
 * over a stream of 30 generations past the ring's wrap), the generation
 * arithmetic (inserted == g G + c), that a query with pending time shifts
 * answers exactly as after applying them (the read-only expiry), the
 * checkpoint query against a plain scan of all windows, the sizing model
 * meeting its targets, and the validator on fresh and modified states.
 */
#include "bk_format.h"
#include "bk_sliding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ts_failures;

#define TS_CHECK(cond, ...)                                             \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            if (++ts_failures > 20)                                     \
                exit(1);                                                \
        }                                                               \
    } while (0)

static uint8_t *ts_new_v(uint32_t k, uint32_t l, uint64_t m, uint32_t layout, uint64_t cap,
                         uint64_t window_us, int64_t now, uint64_t *len)
{
    uint64_t payload = 0;
    const char *reason = NULL;
    uint8_t *buf;
    if (bk_sliding_shape_v(k, l, m, layout, &payload, &reason) != BK_OK)
        abort();
    *len = BK_SLIDING_HEADER_LEN + payload;
    buf = (uint8_t *)calloc(1, (size_t)*len);
    if (buf == NULL)
        abort();
    bk_sliding_init_state_v(buf, k, l, m, layout, cap, 0.01, window_us, now, 0, 0, 0);
    return buf;
}

static uint8_t *ts_new(uint32_t k, uint32_t l, uint64_t m, uint64_t cap, uint64_t window_us,
                       int64_t now, uint64_t *len)
{
    return ts_new_v(k, l, m, BK_SLIDING_LAYOUT_SLICED, cap, window_us, now, len);
}

/* The definition: some a in [0, l] with ages a..a+k-1 all set. */
static int ts_plain(const bk_sliding *s, uint64_t h, uint64_t g, uint64_t skip)
{
    for (uint32_t a = 0; a + s->k <= s->S; a++) {
        int all = 1;
        for (uint32_t i = a; i < a + s->k && all; i++)
            all = i >= skip && bk_sliding_bit(s, bk_sliding_phys(g, i, s->S), h);
        if (all)
            return 1;
    }
    return 0;
}

static void ts_count_mode(uint32_t layout)
{
    uint64_t len, G, n = 0;
    const char *reason = NULL;
    bk_header h;
    bk_sliding s;
    uint8_t *buf = ts_new_v(6, 8, 1024, layout, 800, 0, 0, &len);
    bk_sliding_attach(&s, buf);
    G = bk_load_u64le(s.params + BK_SLIDING_P_GEN_LENGTH);
    TS_CHECK(G == 100, "G %llu", (unsigned long long)G);
    for (uint64_t i = 0; i < 30 * G; i++) {
        uint64_t key = bk_mix64(i + 1), lo, g, c, ins;
        bk_sliding_add(&s, key, 0);
        n++;
        lo = n > 8 * G ? n - 8 * G : 0;
        if (i % 37 == 0)
            for (uint64_t j = lo; j < n; j += 7)
                TS_CHECK(bk_sliding_contains(&s, bk_mix64(j + 1), 0), "lost %llu at %llu",
                         (unsigned long long)j, (unsigned long long)n);
        g = bk_sliding_generation(&s);
        c = bk_load_u64le(s.params + BK_SLIDING_P_COUNT);
        ins = bk_load_u64le(s.params + BK_SLIDING_P_INSERTED);
        TS_CHECK(ins == g * G + c && c <= G, "counters g %llu c %llu ins %llu",
                 (unsigned long long)g, (unsigned long long)c, (unsigned long long)ins);
    }
    for (uint64_t x = 0; x < 20000; x++) {
        uint64_t key = bk_mix64(x ^ 0xABCDEFULL);
        TS_CHECK(bk_sliding_contains_at(&s, key, bk_sliding_generation(&s), 0) ==
                     ts_plain(&s, key, bk_sliding_generation(&s), 0),
                 "checkpoint scan disagrees with the definition");
    }
    bk_format_seal(buf, len);
    TS_CHECK(bk_format_validate(buf, len, BK_CHECK_CHECKSUM | BK_CHECK_DEEP, &h, &reason) ==
                 BK_OK, "validate: %s", reason);
    free(buf);
}

static void ts_time_mode(void)
{
    uint64_t len, len2;
    int64_t t0 = 1600000000000000LL, D = 10 * 1000000LL / 8 + (10 * 1000000LL % 8 != 0);
    bk_sliding s, s2;
    uint8_t *buf = ts_new(5, 8, 512, 400, 10 * 1000000ULL, t0, &len), *copy;
    bk_sliding_attach(&s, buf);
    for (uint64_t i = 0; i < 300; i++)
        bk_sliding_add(&s, bk_mix64(i), t0 + (int64_t)i * 30000);
    copy = (uint8_t *)malloc((size_t)len);
    len2 = len;
    /* for every later time: the read-only answer equals the answer after
     * applying the shifts (no add in between) */
    for (int64_t dt = 0; dt < 30 * D; dt += D / 3 + 1) {
        int64_t now = t0 + 9000000LL + dt;
        memcpy(copy, buf, (size_t)len2);
        bk_sliding_attach(&s2, copy);
        bk_sliding_advance(&s2, now);
        for (uint64_t i = 0; i < 400; i++)
            TS_CHECK(bk_sliding_contains(&s, bk_mix64(i), now) ==
                         bk_sliding_contains(&s2, bk_mix64(i), now),
                     "virtual and applied shifts disagree at dt %lld", (long long)dt);
        TS_CHECK(bk_sliding_window_count(&s, now) == bk_sliding_window_count(&s2, now),
                 "window counts disagree");
    }
    /* every key added in the last window is present */
    for (uint64_t i = 0; i < 300; i++) {
        int64_t added = t0 + (int64_t)i * 30000;
        TS_CHECK(bk_sliding_contains(&s, bk_mix64(i), added + 10 * 1000000LL - 1),
                 "key %llu lost inside its window", (unsigned long long)i);
    }
    free(copy);
    free(buf);
}

static void ts_sizing(void)
{
    double targets[] = {0.1, 0.01, 1e-3, 1e-4, 1e-6};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        uint32_t k = 0, l = 0;
        double r = 0;
        const char *reason = NULL;
        TS_CHECK(bk_sliding_model_size(targets[i], 32, &k, &l, &r, &reason) == BK_OK, "size");
        TS_CHECK(bk_sliding_model_rate(k, l, r) <= targets[i], "model over target");
        printf("target %g: k %u l %u m/G %.3f bits/key %.2f\n", targets[i], k, l, r,
               (double)(k + l) * r / l);
    }
}

static void ts_hostile(void)
{
    uint64_t len;
    const char *reason = NULL;
    bk_header h;
    uint8_t *buf = ts_new(4, 4, 512, 100, 0, 0, &len);
    bk_store_u32le(buf + BK_OFF_PARAMS + BK_SLIDING_P_RING, 3);
    bk_format_seal(buf, len);
    TS_CHECK(bk_format_validate(buf, len, 0, &h, &reason) == BK_ERR_FORMAT && reason != NULL,
             "bad ring accepted");
    free(buf);
}

/* The blocked model meets its targets and is above the independent one
 * at the same bits (the blocks' shared load costs rate). */
static void ts_blocked_sizing(void)
{
    const double targets[] = {0.1, 1e-2, 1e-3};
    for (int i = 0; i < 3; i++) {
        uint32_t k = 0, l = 0;
        double lam = 0.0, se = 0.0, rate;
        const char *reason = NULL;
        TS_CHECK(bk_sliding_blocked_size(targets[i], &k, &l, &lam, &reason) == BK_OK, "size");
        TS_CHECK(k + l <= 32, "k + l %u", k + l);
        rate = bk_sliding_blocked_model_rate(k, l, lam, &se);
        TS_CHECK(rate + 2 * se <= targets[i], "blocked model over target");
        TS_CHECK(rate > bk_sliding_model_rate(k, l, 32.0 / lam), "blocked below independent");
    }
}

int main(void)
{
    ts_count_mode(BK_SLIDING_LAYOUT_SLICED);
    ts_count_mode(BK_SLIDING_LAYOUT_BLOCKED);
    ts_blocked_sizing();
    ts_time_mode();
    ts_sizing();
    ts_hostile();
    if (ts_failures) {
        fprintf(stderr, "test_bk_sliding: %d failure(s)\n", ts_failures);
        return 1;
    }
    printf("test_bk_sliding: ok\n");
    return 0;
}
