/*
 * bk_topk.h -- the candidate set of TopK: the k keys with the highest
 * count-min estimates seen so far.  See bk_topk.c for the essay.
 */
#ifndef BK_TOPK_H
#define BK_TOPK_H

#include "bk_common.h"

/* k is at most this: slot numbers are u32 and the index stores them as
 * i32 with -1 for an empty cell. */
#define BK_TOPK_MAX_K ((uint64_t)1 << 30)

typedef struct {
    uint64_t h;     /* the key's 64-bit hash (the sketch's, bk_keys.h) */
    uint64_t est;   /* its count-min estimate at its last offer */
    uint64_t tick;  /* when that offer was: equal estimates go oldest first */
    void *obj;      /* the caller's key object (opaque here) */
    uint32_t pos;   /* this slot's place in the heap */
} bk_topk_slot;

typedef struct {
    bk_topk_slot *slots; /* len in use, cap allocated (cap <= k) */
    uint32_t *heap;      /* slot numbers, a min-heap by (est, tick) */
    int32_t *index;      /* open addressing by h: slot number or -1 */
    uint32_t k, len, cap;
    uint32_t index_mask; /* index has index_mask + 1 cells, >= 2 cap */
    uint64_t tick;       /* offers that pushed so far */
} bk_topk;

/* What bk_topk_offer did. */
typedef enum {
    BK_TOPK_REJECTED = 0, /* not tracked and not above the minimum */
    BK_TOPK_UPDATED = 1,  /* tracked: estimate and tick updated */
    BK_TOPK_INSERTED = 2, /* a free slot took it */
    BK_TOPK_REPLACED = 3  /* the minimum was evicted; *evicted is its obj */
} bk_topk_outcome;

/* An empty set for k keys (1 <= k <= BK_TOPK_MAX_K); memory grows with
 * the keys tracked, never past k slots.  BK_ERR_ARG or BK_ERR_NOMEM. */
bk_rc bk_topk_init(bk_topk *t, uint64_t k);
/* Free the arrays (not the objs: the caller owns them). */
void bk_topk_free(bk_topk *t);
/* Bytes allocated. */
uint64_t bk_topk_nbytes(const bk_topk *t);

/* Inline (called once per distinct key of each chunk by TopK.update,
 * py_topk.c, whose estimates are mostly below the minimum): the index
 * cell where h's probe starts. */
BK_INLINE uint32_t bk_topk_home(const bk_topk *t, uint64_t h)
{
    return (uint32_t)(h >> 32) & t->index_mask;
}

/* The slot of h, or -1. */
BK_INLINE int64_t bk_topk_find(const bk_topk *t, uint64_t h)
{
    uint32_t i = bk_topk_home(t, h);
    for (;;) {
        int32_t s = t->index[i];
        if (s < 0)
            return -1;
        if (t->slots[s].h == h)
            return s;
        i = (i + 1) & t->index_mask;
    }
}

/* Would bk_topk_offer(h, est) keep h (tracked, room, or est above the
 * minimum)?  Lets a caller build the key object only when it is needed.
 * (A tracked key's estimate can fall below the minimum only after the
 * sketch was cleared; the probe answers that case.) */
BK_INLINE int bk_topk_admits(const bk_topk *t, uint64_t h, uint64_t est)
{
    if (t->len < t->k || est > t->slots[t->heap[0]].est)
        return 1;
    return bk_topk_find(t, h) >= 0;
}

/* Offer key h with estimate est (its estimate right after its add).  On
 * INSERTED/REPLACED the slot's obj becomes obj and, for REPLACED, the old
 * obj is returned in *evicted.  Returns the outcome, or BK_ERR_NOMEM (set
 * unchanged) when a slot array could not grow. */
int bk_topk_offer(bk_topk *t, uint64_t h, uint64_t est, void *obj, void **evicted);

/* Put back a saved entry (a pickle): h must not be tracked, len < k.
 * Ticks are the saved ones; t->tick becomes at least tick + 1.
 * BK_ERR_ARG (duplicate or full) or BK_ERR_NOMEM. */
bk_rc bk_topk_restore(bk_topk *t, uint64_t h, uint64_t est, uint64_t tick, void *obj);

/* The minimum slot (heap top), or -1 when empty. */
int64_t bk_topk_min(const bk_topk *t);

#endif /* BK_TOPK_H */
