/*
 * test_bk_topk.c -- TopK's candidate set without Python (tests/test_topk.py
 * compiles and runs it; by hand:
 *
 *   n=src/bloomkit/_native
 *   cc -std=c11 -O2 -Wall -Wextra -I$n $n/bk_topk.c tests/native/test_bk_topk.c -o /tmp/tt
 *   /tmp/tt
 *
 * Random offers against a brute-force model (an array of (h, est, tick)):
 * after every offer the outcome, the evicted object, the minimum (by
 * estimate, then tick), membership of every model key and of absent keys
 * agree, and the heap and index invariants hold.  Keys collide in the
 * index on purpose (few distinct top-32-bit values), so runs form and
 * deletions shift them back; k from 1 to 300, growth through doubling.
 */
#include "bk_topk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tt_failures;

#define TT_CHECK(cond, ...)                                             \
    do {                                                                \
        if (!(cond)) {                                                  \
            if (tt_failures++ < 20) {                                   \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);    \
                fprintf(stderr, __VA_ARGS__);                           \
                fputc('\n', stderr);                                    \
            }                                                           \
        }                                                               \
    } while (0)

typedef struct {
    uint64_t h, est, tick;
    void *obj;
} tt_entry;

static uint64_t tt_state = 0x9E3779B97F4A7C15ULL;

static uint64_t tt_rand(void)
{
    tt_state ^= tt_state << 13;
    tt_state ^= tt_state >> 7;
    tt_state ^= tt_state << 17;
    return tt_state;
}

/* Keys whose top 32 bits (the index home) take few values: long runs. */
static uint64_t tt_key(uint64_t i)
{
    return ((i % 37) << 32) ^ (i * 0x100000001B3ULL & 0xffffffffULL) ^ (i << 48);
}

static int tt_less(const tt_entry *a, const tt_entry *b)
{
    return a->est < b->est || (a->est == b->est && a->tick < b->tick);
}

static void tt_invariants(const bk_topk *t)
{
    for (uint32_t p = 1; p < t->len; p++)
        TT_CHECK(!(t->slots[t->heap[p]].est < t->slots[t->heap[(p - 1) / 2]].est),
                 "heap order at %u", p);
    for (uint32_t s = 0; s < t->len; s++) {
        TT_CHECK(t->heap[t->slots[s].pos] == s, "slot %u pos", s);
        TT_CHECK(bk_topk_find(t, t->slots[s].h) == (int64_t)s, "slot %u not found", s);
    }
}

static void tt_run(uint64_t k, int ops, uint64_t universe)
{
    bk_topk t;
    tt_entry *model = (tt_entry *)calloc(k, sizeof *model);
    uint64_t *counts = (uint64_t *)calloc(universe, sizeof *counts), tick = 0;
    size_t len = 0;
    TT_CHECK(bk_topk_init(&t, k) == BK_OK, "init k=%llu", (unsigned long long)k);
    for (int op = 0; op < ops; op++) {
        uint64_t i = tt_rand() % universe, h = tt_key(i), est;
        void *obj = (void *)(uintptr_t)(i + 1), *evicted = NULL, *want_evicted = NULL;
        size_t m, found = len;
        int want, got;
        counts[i] += tt_rand() % 3; /* count 0 sometimes: same estimate again */
        est = counts[i];
        for (m = 0; m < len; m++)
            if (model[m].h == h)
                found = m;
        if (found < len) {
            want = BK_TOPK_UPDATED;
            if (model[found].est != est)
                model[found].tick = tick;
            model[found].est = est;
            tick++;
        } else if (len < k) {
            want = BK_TOPK_INSERTED;
            model[len++] = (tt_entry){h, est, tick++, obj};
        } else {
            size_t lo = 0;
            for (m = 1; m < len; m++)
                if (tt_less(&model[m], &model[lo]))
                    lo = m;
            if (est > model[lo].est) {
                want = BK_TOPK_REPLACED;
                want_evicted = model[lo].obj;
                model[lo] = (tt_entry){h, est, tick++, obj};
            } else {
                want = BK_TOPK_REJECTED;
            }
        }
        TT_CHECK(bk_topk_admits(&t, h, est) == (want != BK_TOPK_REJECTED), "admits op %d", op);
        got = bk_topk_offer(&t, h, est, obj, &evicted);
        TT_CHECK(got == want, "op %d: outcome %d, want %d", op, got, want);
        TT_CHECK(evicted == want_evicted, "op %d: evicted", op);
        TT_CHECK(t.len == len, "op %d: len %u, want %zu", op, t.len, len);
        if (len > 0) {
            size_t lo = 0;
            for (m = 1; m < len; m++)
                if (tt_less(&model[m], &model[lo]))
                    lo = m;
            TT_CHECK(t.slots[bk_topk_min(&t)].h == model[lo].h, "op %d: minimum", op);
        }
        if (op % 97 == 0 || k < 8) {
            tt_invariants(&t);
            for (m = 0; m < len; m++) {
                int64_t s = bk_topk_find(&t, model[m].h);
                TT_CHECK(s >= 0 && t.slots[s].est == model[m].est && t.slots[s].obj == model[m].obj,
                         "op %d: model key %zu", op, m);
            }
            TT_CHECK(bk_topk_find(&t, tt_key(universe + op)) < 0, "op %d: absent key", op);
        }
        if (tt_failures)
            break;
    }
    TT_CHECK(bk_topk_nbytes(&t) <= (uint64_t)k * 64 + 1024 || t.cap <= k, "memory");
    TT_CHECK(t.cap <= k, "cap %u > k", t.cap);
    bk_topk_free(&t);
    free(model);
    free(counts);
}

int main(void)
{
    bk_topk t;
    void *ev;
    /* Arguments: k outside [1, 2^30] is refused. */
    TT_CHECK(bk_topk_init(&t, 0) == BK_ERR_ARG, "k = 0");
    TT_CHECK(bk_topk_init(&t, BK_TOPK_MAX_K + 1) == BK_ERR_ARG, "k too large");
    /* Restore: duplicates and overflow refused, ticks kept. */
    TT_CHECK(bk_topk_init(&t, 2) == BK_OK, "init 2");
    TT_CHECK(bk_topk_restore(&t, 5, 3, 40, NULL) == BK_OK, "restore");
    TT_CHECK(bk_topk_restore(&t, 5, 3, 41, NULL) == BK_ERR_ARG, "duplicate");
    TT_CHECK(bk_topk_restore(&t, 6, 3, 7, NULL) == BK_OK, "restore 2");
    TT_CHECK(bk_topk_restore(&t, 8, 3, 7, NULL) == BK_ERR_ARG, "full");
    TT_CHECK(t.tick == 41 && t.slots[bk_topk_min(&t)].h == 6, "ticks");
    TT_CHECK(bk_topk_offer(&t, 9, 4, NULL, &ev) == BK_TOPK_REPLACED, "evict the older");
    TT_CHECK(bk_topk_find(&t, 6) < 0 && bk_topk_find(&t, 5) >= 0, "evicted 6");
    bk_topk_free(&t);
    for (uint64_t k = 1; k <= 300; k += (k < 20 ? 1 : 37))
        tt_run(k, 20000, 3 * k + 50);
    tt_run(1000, 40000, 5000);
    if (tt_failures) {
        printf("test_bk_topk: %d failures\n", tt_failures);
        return 1;
    }
    printf("test_bk_topk: ok\n");
    return 0;
}
