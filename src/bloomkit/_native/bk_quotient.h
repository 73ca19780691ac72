/*
 * bk_quotient.h -- the quotient filter (core).  See bk_quotient.c for the
 * essay, the invariants and the byte layout.
 *
 * The slot accessors and the per-key probe are inline here: the CPython
 * glue calls contains() once per `x in f`, and a call across translation
 * units would cost as much as the probe when the table is in cache.
 */
#ifndef BK_QUOTIENT_H
#define BK_QUOTIENT_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_QF_P_Q 0            /* u32 q: 2^q slots */
#define BK_QF_P_R 4            /* u32 r: remainder bits */
#define BK_QF_P_CAPACITY 8     /* u64 design capacity n */
#define BK_QF_P_ERROR_RATE 16  /* f64 design error rate p */
#define BK_QF_P_MAX_LOAD 24    /* f64 design maximum load factor, (0, 1] */
#define BK_QF_P_COUNT 32       /* u64 fingerprints stored (multiset size) */
#define BK_QF_P_RESERVED 40    /* u64 0 */
#define BK_QF_PARAMS_LEN 48
#define BK_QF_HEADER_LEN 128

#define BK_QF_MIN_Q 1u
#define BK_QF_MAX_Q 44u          /* 2^44 slots x 4 bits = 2^46 bits, the cap below */
#define BK_QF_MIN_R 1u
#define BK_QF_MAX_R 61u          /* slot width r + 3 <= 64: two-word access */
#define BK_QF_MAX_FP_BITS 64u    /* q + r <= 64: a prefix of the 64-bit key hash */
#define BK_QF_MAX_BITS (1ULL << 46) /* payload bits, as for Bloom filters (8 TiB) */
/* max_load in [BK_QF_MIN_MAX_LOAD, 1]: a table sized for under 1% load wastes
 * over 100x its space, and the bound keeps log2(capacity / max_load) <= 55,
 * so sizing, resized() and merge() never overflow (issue #23.8: 5e-324 made
 * them raise OverflowError). */
#define BK_QF_MIN_MAX_LOAD 0.01

/* Metadata bits: the low three bits of every slot; the remainder is above. */
#define BK_QF_OCCUPIED 1u      /* slot index i is the quotient of some stored fp */
#define BK_QF_CONTINUATION 2u  /* this slot holds a run's 2nd, 3rd, ... element */
#define BK_QF_SHIFTED 4u       /* this slot's element is not in its canonical slot */
#define BK_QF_META 7u

typedef struct {
    uint64_t *words;     /* payload: 64-bit little-endian words */
    uint64_t nslots;     /* 2^q */
    uint64_t smask;      /* nslots - 1 */
    uint64_t slot_mask;  /* (1 << w) - 1 */
    uint64_t rmask;      /* (1 << r) - 1 */
    uint64_t num_words;
    uint32_t q, r, w;    /* w = r + 3, the slot width in bits */
    uint8_t *count_p;    /* the count field in the params block */
} bk_qf;

/* Payload bytes for (q, r): ceil(2^q (r + 3) / 64) words.  BK_ERR_ARG with
 * a reason for shapes outside the limits above. */
bk_rc bk_quotient_shape(uint32_t q, uint32_t r, uint64_t *payload_len, const char **reason);

/* Write a fresh header and parameter block into buf (BK_QF_HEADER_LEN +
 * payload_len bytes, payload zeroed). */
void bk_quotient_init_state(uint8_t *buf, uint32_t q, uint32_t r, uint64_t capacity,
                      double error_rate, double max_load, uint64_t seed, int keyed,
                      uint64_t key_check);

/* View of a state buffer whose shape was validated. */
void bk_quotient_attach(bk_qf *f, uint8_t *buf);

bk_rc bk_quotient_validate(const bk_header *h, const uint8_t *params,
                           const uint8_t *payload, int checks, const char **reason);

/* Deep check of every metadata invariant of an attached table (the
 * BK_CHECK_DEEP part of bk_quotient_validate). */
bk_rc bk_quotient_check(const bk_qf *f, const char **reason);

static inline uint64_t bk_quotient_count(const bk_qf *f)
{
    return bk_load_u64le(f->count_p);
}

/* ---- Begin logic for slot access -------------------------------------- */

/* Slot i occupies payload bits [i w, (i + 1) w); bit j of the payload is
 * bit (j % 64) of little-endian word j / 64. */
BK_INLINE uint64_t bk_quotient_get(const bk_qf *f, uint64_t i)
{
    uint64_t b = i * f->w;
    uint64_t wi = b >> 6;
    unsigned sh = (unsigned)(b & 63);
    uint64_t v = BK_LE64(f->words[wi]) >> sh;
    if (sh + f->w > 64)
        v |= BK_LE64(f->words[wi + 1]) << (64 - sh);
    return v & f->slot_mask;
}

BK_INLINE void bk_quotient_set(bk_qf *f, uint64_t i, uint64_t v)
{
    uint64_t b = i * f->w;
    uint64_t wi = b >> 6;
    unsigned sh = (unsigned)(b & 63);
    uint64_t lo = BK_LE64(f->words[wi]);
    lo = (lo & ~(f->slot_mask << sh)) | (v << sh);
    f->words[wi] = BK_LE64(lo);
    if (sh + f->w > 64) {
        uint64_t hi = BK_LE64(f->words[wi + 1]);
        uint64_t m = f->slot_mask >> (64 - sh);
        hi = (hi & ~m) | (v >> (64 - sh));
        f->words[wi + 1] = BK_LE64(hi);
    }
}

/* The fingerprint of a key: the top q + r bits of its 64-bit hash.  The
 * quotient is its top q bits, the remainder the low r bits. */
BK_INLINE uint64_t bk_quotient_fingerprint(const bk_qf *f, uint64_t h)
{
    uint32_t fb = f->q + f->r;
    return fb >= 64 ? h : h >> (64 - fb);
}

/* ---- End logic for slot access ---------------------------------------- */

/* Start of quotient fq's run (fq occupied), or the slot where a new run for
 * fq would go.  Bounded by nslots steps even on a corrupt table. */
uint64_t bk_quotient_run_start(const bk_qf *f, uint64_t fq);

/* Number of stored copies of fingerprint fp (0 when absent). */
uint64_t bk_quotient_count_fp(const bk_qf *f, uint64_t fp);

BK_INLINE int bk_quotient_contains_fp(const bk_qf *f, uint64_t fp)
{
    uint64_t fq = fp >> f->r, fr = fp & f->rmask;
    uint64_t s, v, n = f->nslots;
    if (!(bk_quotient_get(f, fq) & BK_QF_OCCUPIED))
        return 0;
    s = bk_quotient_run_start(f, fq);
    /* Runs are sorted: stop at the first larger remainder.  One read per
     * slot: the next slot's continuation bit comes with its remainder. */
    v = bk_quotient_get(f, s);
    for (;;) {
        uint64_t rem = v >> 3;
        if (rem >= fr)
            return rem == fr;
        s = (s + 1) & f->smask;
        v = bk_quotient_get(f, s);
        if (!(v & BK_QF_CONTINUATION) || !--n)
            return 0;
    }
}

BK_INLINE int bk_quotient_contains(const bk_qf *f, uint64_t h)
{
    return bk_quotient_contains_fp(f, bk_quotient_fingerprint(f, h));
}

/* Insert one fingerprint (a multiset: duplicates are kept).  BK_ERR_CAPACITY
 * when 2^q - 1 fingerprints are stored (one slot always stays empty), and
 * then nothing is written.  *was_new: no equal fingerprint was stored. */
bk_rc bk_quotient_insert_fp(bk_qf *f, uint64_t fp, int *was_new);

/* Remove one copy of a fingerprint; BK_ERR_NOTFOUND (nothing written) when
 * it is absent.  The layout afterwards is exactly that of a table that
 * never held the removed copy. */
bk_rc bk_quotient_remove_fp(bk_qf *f, uint64_t fp);

/* Batch membership with prefetching of each key's home slot. */
/* 1 - (1 - 2^-(q + r))^count: an absent key's fingerprint matches a
 * stored one. */
double bk_quotient_estimate_error_rate(const bk_qf *f);

void bk_quotient_contains_many(const bk_qf *f, const uint64_t *hs, size_t n, uint8_t *out);

/* Sorted traversal: the fingerprints in increasing order, O(1) memory.
 * bk_quotient_cursor_next returns 1 and sets *fp, or 0 at the end. */
typedef struct {
    const bk_qf *f;
    uint64_t anchor;  /* an empty slot: the walk starts just after it */
    uint64_t t;       /* slots walked in this pass, 0..nslots */
    uint64_t occ_t;   /* walk index of the current run's quotient */
    uint64_t cur_q;
    int phase;        /* 0: quotients below anchor, 1: above, 2: done */
} bk_quotient_cursor;

void bk_quotient_cursor_init(bk_quotient_cursor *c, const bk_qf *f);
int bk_quotient_cursor_next(bk_quotient_cursor *c, uint64_t *fp);

/* Rebuild: stream the sorted fingerprints of a (and b, may be NULL) into
 * the empty table dst, whose fingerprint width q + r must equal theirs.
 * Used by merge (two inputs) and resize (one).  BK_ERR_CAPACITY if they
 * do not fit; dst is then partly filled and must be discarded. */
bk_rc bk_quotient_rebuild(bk_qf *dst, const bk_qf *a, const bk_qf *b);

#endif /* BK_QUOTIENT_H */
