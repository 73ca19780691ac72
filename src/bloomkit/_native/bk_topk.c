/*
 * bk_topk.c -- the candidate set of TopK (heavy hitters over a count-min
 * sketch).
 *
 * TopK counts every event in a count-min sketch (bk_sketch.c) and keeps as
 * candidates the k keys with the highest estimates seen so far: after each
 * add, the key's new estimate is offered here.  A tracked key takes its
 * new estimate; an untracked one takes a free slot while fewer than k are
 * tracked, else replaces the minimum when its estimate is strictly above
 * it.  This is the rule of the count-min paper's heavy-hitters section
 * (Cormode and Muthukrishnan 2005, section 5.1: "a heap of the top-k
 * items by estimated count") and of bloomkit's first, pure-Python TopK,
 * whose results this reproduces exactly, ties included:
 *
 *   order   a min-heap by (estimate, tick): tick counts the offers that
 *           updated or inserted (not the rejected ones), so among equal
 *           estimates the key updated longest ago is evicted first, as the
 *           Python heap of (estimate, tick, key) tuples did.  An offer
 *           of a tracked key at its current estimate (add(key, 0)) keeps
 *           its tick, as the older heap entry of that estimate came first
 *           there too.  A tracked key's estimate can fall (the sketch was
 *           cleared): both sift directions are handled.  (One difference
 *           remains after a clear: a key whose estimate comes back to a
 *           value it had before the clear had a stale heap entry of that
 *           value revive in the Python heap, with its old tick; here it
 *           takes a new tick.)
 *   index   keys are identified by their 64-bit hash h, the same h the
 *           sketch counts them by (one key encoding: 1, True and numpy 1
 *           are one key; so are "a" and b"a", which the sketch already
 *           counted together).  An open-addressing table of i32 slot
 *           numbers, linear probing from the top 32 bits of h, at most
 *           half full, deletion by backward shift (no tombstones).  Two
 *           distinct keys share h with probability 2^-64 per pair, as in
 *           every structure here.
 *   objects each slot carries an opaque pointer (the glue's key object,
 *           for reporting); this file never dereferences it.
 *
 * Cost per offer: one index probe (2k cells of 4 bytes: 800 bytes for
 * k = 100, in L1) and, for a tracked key, a sift of at most log2(k) levels
 * (7 for k = 100); an untracked key below the minimum costs the probe and
 * one comparison.  Memory: 40 bytes a slot + 4 a heap entry + 8-16 an
 * index cell, about 56-64 bytes per tracked key, grown by doubling up to
 * k slots (a TopK(10**6) that tracks 50 keys holds 64 slots), never more:
 * bounded by k whatever the stream (tests/test_sketch.py measures it).
 */
#include "bk_topk.h"

#include <stdlib.h>
#include <string.h>

/* Slots allocated first; must be >= 1.  16 slots + 32 cells: ~1 KiB. */
#define BK_TOPK_FIRST_CAP 16u

BK_INLINE int bk_topk_less(const bk_topk *t, uint32_t a, uint32_t b)
{
    const bk_topk_slot *x = &t->slots[a], *y = &t->slots[b];
    return x->est < y->est || (x->est == y->est && x->tick < y->tick);
}


/* ---- Begin logic for the heap ----------------------------------------- */

static void bk_topk_place(bk_topk *t, uint32_t pos, uint32_t s)
{
    t->heap[pos] = s;
    t->slots[s].pos = pos;
}

static void bk_topk_sift_up(bk_topk *t, uint32_t pos)
{
    uint32_t s = t->heap[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!bk_topk_less(t, s, t->heap[parent]))
            break;
        bk_topk_place(t, pos, t->heap[parent]);
        pos = parent;
    }
    bk_topk_place(t, pos, s);
}

static void bk_topk_sift_down(bk_topk *t, uint32_t pos)
{
    uint32_t s = t->heap[pos], n = t->len;
    for (;;) {
        uint32_t c = 2 * pos + 1;
        if (c >= n)
            break;
        if (c + 1 < n && bk_topk_less(t, t->heap[c + 1], t->heap[c]))
            c++;
        if (!bk_topk_less(t, t->heap[c], s))
            break;
        bk_topk_place(t, pos, t->heap[c]);
        pos = c;
    }
    bk_topk_place(t, pos, s);
}

/* Slot s changed its key (estimate or tick): restore the heap order. */
static void bk_topk_fix(bk_topk *t, uint32_t s)
{
    uint32_t pos = t->slots[s].pos;
    if (pos > 0 && bk_topk_less(t, s, t->heap[(pos - 1) / 2]))
        bk_topk_sift_up(t, pos);
    else
        bk_topk_sift_down(t, pos);
}

/* ---- End logic for the heap ------------------------------------------- */

/* ---- Begin logic for the index ---------------------------------------- */

static void bk_topk_index_put(bk_topk *t, uint32_t s)
{
    uint32_t i = bk_topk_home(t, t->slots[s].h);
    while (t->index[i] >= 0)
        i = (i + 1) & t->index_mask;
    t->index[i] = (int32_t)s;
}

/* Remove the cell that holds slot s: backward-shift deletion (Knuth 6.4,
 * algorithm R), so that every later key of the run stays reachable. */
static void bk_topk_index_del(bk_topk *t, uint32_t s)
{
    uint32_t i = bk_topk_home(t, t->slots[s].h), j;
    while (t->index[i] != (int32_t)s)
        i = (i + 1) & t->index_mask;
    j = i;
    for (;;) {
        uint32_t home;
        int32_t x;
        t->index[i] = -1;
        for (;;) {
            j = (j + 1) & t->index_mask;
            x = t->index[j];
            if (x < 0)
                return;
            home = bk_topk_home(t, t->slots[x].h);
            /* x may move to i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
                continue;
            break;
        }
        t->index[i] = x;
        i = j;
    }
}

/* ---- End logic for the index ------------------------------------------ */

/* ---- Begin logic for growth ------------------------------------------- */

/* Room for cap slots (cap <= k) and an index of at least 2 cap cells.
 * On failure nothing a lookup relies on changed (cap and the index stay
 * as they were; a larger slot array is harmless). */
static bk_rc bk_topk_grow(bk_topk *t, uint32_t cap)
{
    uint64_t cells = 32;
    bk_topk_slot *slots;
    uint32_t *heap;
    while (cells < 2 * (uint64_t)cap)
        cells *= 2;
    /* 32-bit size_t: 2^30 slots of 32 bytes do not fit an address space. */
    if ((uint64_t)cap * sizeof *slots > (uint64_t)SIZE_MAX ||
        cells * sizeof(int32_t) > (uint64_t)SIZE_MAX)
        return BK_ERR_NOMEM;
    slots = (bk_topk_slot *)realloc(t->slots, (size_t)cap * sizeof *slots);
    if (slots == NULL)
        return BK_ERR_NOMEM;
    t->slots = slots;
    heap = (uint32_t *)realloc(t->heap, (size_t)cap * sizeof *heap);
    if (heap == NULL)
        return BK_ERR_NOMEM;
    t->heap = heap;
    if (t->index == NULL || cells != (uint64_t)t->index_mask + 1) {
        int32_t *index = (int32_t *)malloc((size_t)cells * sizeof *index);
        if (index == NULL)
            return BK_ERR_NOMEM;
        memset(index, 0xff, (size_t)cells * sizeof *index); /* -1 everywhere */
        free(t->index);
        t->index = index;
        t->index_mask = (uint32_t)(cells - 1);
        for (uint32_t s = 0; s < t->len; s++)
            bk_topk_index_put(t, s);
    }
    t->cap = cap;
    return BK_OK;
}

/* Make room for one more slot; len < k. */
static bk_rc bk_topk_reserve(bk_topk *t)
{
    uint64_t cap;
    if (t->len < t->cap)
        return BK_OK;
    cap = (uint64_t)t->cap * 2;
    if (cap > t->k)
        cap = t->k;
    return bk_topk_grow(t, (uint32_t)cap);
}

bk_rc bk_topk_init(bk_topk *t, uint64_t k)
{
    memset(t, 0, sizeof *t);
    if (k < 1 || k > BK_TOPK_MAX_K)
        return BK_ERR_ARG;
    t->k = (uint32_t)k;
    if (bk_topk_grow(t, k < BK_TOPK_FIRST_CAP ? (uint32_t)k : BK_TOPK_FIRST_CAP) != BK_OK) {
        bk_topk_free(t);
        return BK_ERR_NOMEM;
    }
    return BK_OK;
}

void bk_topk_free(bk_topk *t)
{
    free(t->slots);
    free(t->heap);
    free(t->index);
    t->slots = NULL;
    t->heap = NULL;
    t->index = NULL;
    t->len = t->cap = 0;
}

uint64_t bk_topk_nbytes(const bk_topk *t)
{
    return (uint64_t)t->cap * (sizeof(bk_topk_slot) + sizeof(uint32_t)) +
           (t->index != NULL ? ((uint64_t)t->index_mask + 1) * sizeof(int32_t) : 0);
}

/* ---- End logic for growth --------------------------------------------- */

/* ---- Begin logic for offers ------------------------------------------- */

int64_t bk_topk_min(const bk_topk *t)
{
    return t->len > 0 ? (int64_t)t->heap[0] : -1;
}

int bk_topk_offer(bk_topk *t, uint64_t h, uint64_t est, void *obj, void **evicted)
{
    int64_t found = bk_topk_find(t, h);
    uint32_t s;
    *evicted = NULL;
    if (found >= 0) {
        s = (uint32_t)found;
        if (est == t->slots[s].est) {
            /* add(key, 0): the Python heap kept the older entry of the
             * same estimate, and met it first; so does this slot. */
            t->tick++;
            return BK_TOPK_UPDATED;
        }
        t->slots[s].est = est;
        t->slots[s].tick = t->tick++;
        bk_topk_fix(t, s);
        return BK_TOPK_UPDATED;
    }
    if (t->len < t->k) {
        if (bk_topk_reserve(t) != BK_OK)
            return BK_ERR_NOMEM;
        s = t->len++;
        t->slots[s].h = h;
        t->slots[s].est = est;
        t->slots[s].tick = t->tick++;
        t->slots[s].obj = obj;
        t->heap[s] = s;
        t->slots[s].pos = s;
        bk_topk_sift_up(t, s);
        bk_topk_index_put(t, s);
        return BK_TOPK_INSERTED;
    }
    s = t->heap[0];
    if (est <= t->slots[s].est)
        return BK_TOPK_REJECTED;
    /* Evict the minimum: its slot takes the new key in place. */
    bk_topk_index_del(t, s);
    *evicted = t->slots[s].obj;
    t->slots[s].h = h;
    t->slots[s].est = est;
    t->slots[s].tick = t->tick++;
    t->slots[s].obj = obj;
    bk_topk_sift_down(t, 0);
    bk_topk_index_put(t, s);
    return BK_TOPK_REPLACED;
}

bk_rc bk_topk_restore(bk_topk *t, uint64_t h, uint64_t est, uint64_t tick, void *obj)
{
    uint32_t s;
    if (t->len >= t->k || bk_topk_find(t, h) >= 0)
        return BK_ERR_ARG;
    if (bk_topk_reserve(t) != BK_OK)
        return BK_ERR_NOMEM;
    s = t->len++;
    t->slots[s].h = h;
    t->slots[s].est = est;
    t->slots[s].tick = tick;
    t->slots[s].obj = obj;
    t->heap[s] = s;
    t->slots[s].pos = s;
    bk_topk_sift_up(t, s);
    bk_topk_index_put(t, s);
    if (t->tick <= tick)
        t->tick = tick + 1;
    return BK_OK;
}

/* ---- End logic for offers --------------------------------------------- */
