/*
 * bk_quotient.c -- the quotient filter (Bender, Farach-Colton, Johnson,
 * Kraner, Kuszmaul, Medjedovic, Montes, Shetty, Spillane and Zadok, "Don't
 * Thrash: How to Cache Your Hash on Flash", VLDB 2012), on Cleary's compact
 * hash table (1984).
 *
 * A key's 64-bit hash h gives an f = q + r bit fingerprint, the top f bits
 * of h.  Its top q bits are the quotient fq, the low r bits the remainder
 * fr.  The table has 2^q slots of r + 3 bits; fr is stored in slot fq (its
 * canonical slot) if it can be, otherwise as close after it as linear
 * probing allows, and three metadata bits per slot let a reader recover
 * every stored fingerprint exactly:
 *
 *   is_occupied     on slot i: some stored fingerprint has quotient i
 *                   (a property of the canonical slot, not of its content)
 *   is_continuation the slot holds the 2nd, 3rd, ... remainder of a run
 *   is_shifted      the slot's remainder is not in its canonical slot
 *
 * A run is the sorted, contiguous sequence of remainders sharing one
 * quotient; a cluster is a maximal sequence of non-empty slots.  Runs are
 * kept in quotient order, each as far left as possible: the run of
 * quotient Q starts at max(Q, end of the previous run).  That layout is a
 * function of the multiset of fingerprints alone (ordered linear probing is
 * history independent), so any sequence of adds and removes, a merge and
 * a resize all give byte-identical tables for the same fingerprints; the
 * tests rely on it.  The table is circular: a cluster may wrap from the
 * last slot to slot 0.
 *
 * Invariants (all checked by bk_quotient_check, which the loader runs with
 * BK_CHECK_DEEP):
 *   - at least one slot is empty (count <= 2^q - 1): every scan stops;
 *     the 2^q-th add raises CapacityError and writes nothing;
 *   - an empty slot has all three bits and its remainder zero;
 *   - a cluster's first slot is occupied, not shifted, not a continuation;
 *   - the k-th run of a cluster belongs to the k-th occupied slot of the
 *     cluster, which is at or before the run's start; the run start is
 *     shifted exactly when it is not its quotient's slot; every occupied
 *     slot of a cluster has a run;
 *   - continuations are shifted, and remainders within a run are
 *     non-decreasing (a multiset: equal fingerprints are adjacent);
 *   - count equals the number of non-empty slots; payload bits past the
 *     last slot are zero.
 *
 * Numbers.  A query for an absent key matches one of n stored fingerprints
 * with probability 1 - (1 - 2^-f)^n <= n 2^-f = alpha 2^-r, alpha = n/2^q
 * the load factor.  Sizing (quotient.py) takes q as the smallest with
 * n <= max_load 2^q (default 0.9) and r as the smallest with alpha 2^-r <=
 * p: at n = 10^6 and p = 1% that is q = 21 (alpha 0.48), r = 6, 9 bits per
 * slot, 18.9 bits per key, 2^21 x 9 bits = 2.25 MiB; the bound is
 * reached at 0.9 load.  Space per key at load alpha is (r + 3) / alpha:
 * at 0.9 load 1.67 times the lower bound log2(1/p) at p = 1% (11.1 bits)
 * and 1.42 times at 0.01% (18.9 bits), the three metadata bits weighing
 * less as r grows; up to twice that when the power-of-two table is
 * underfull.  Runs and clusters are short at
 * moderate load (expected cluster length is O(1/(1-alpha)^2), like linear
 * probing), so most operations touch one or two cache lines; above ~0.9
 * load clusters grow quickly and adds and queries slow down (measured in
 * benchmarks/quotient.py and docs/quotient.md).
 *
 * Merge and resize never rehash keys: a cursor walks a table and yields its
 * fingerprints in increasing order in O(1) memory, and the rebuild appends
 * them, in order, to an empty table of another shape with the same f.
 * Appending in sorted order needs no shifting (each element goes to
 * max(Q, last + 1)); only the few fingerprints whose run would wrap past
 * the last slot take the general insert.  Doubling the table moves one bit
 * from the remainder to the quotient (q + 1, r - 1), so the false-positive
 * rate at the same load doubles.
 *
 * State (bk_format.c container, kind 6):
 *   params @64  +0 u32 q  +4 u32 r  +8 u64 capacity  +16 f64 error_rate
 *               +24 f64 max_load (in [0.01, 1])  +32 u64 count  +40 u64 0
 *   payload @128  ceil(2^q (r + 3) / 64) u64 LE words; slot i is the
 *                 (r + 3)-bit field at payload bit i (r + 3): bit 0
 *                 is_occupied, bit 1 is_continuation, bit 2 is_shifted,
 *                 bits 3.. the remainder; payload bit j is bit (j % 64)
 *                 of word j / 64.
 *
 * Concurrency: an insert shifts a whole cluster, so writes are not atomic
 * and writers must be serialized (the CPython glue keeps the GIL during
 * every operation).  Readers of a corrupt table (a mapping opened with
 * verify=False) cannot hang or read out of bounds: every scan is bounded by
 * 2^q steps and every index is reduced modulo 2^q.
 */
#include "bk_quotient.h"
#include "bk_kind.h"

#include <math.h>

/* How far ahead contains_many prefetches: home slots are random, so this is
 * the same ~100 ns / 5-10 ns per key trade-off as the blocked Bloom path. */
#define BK_QF_AHEAD 16

bk_rc bk_quotient_shape(uint32_t q, uint32_t r, uint64_t *payload_len, const char **reason)
{
    uint64_t bits;
    if (q < BK_QF_MIN_Q || q > BK_QF_MAX_Q) {
        *reason = "q (log2 of the slot count) must be in [1, 44]";
        return BK_ERR_ARG;
    }
    if (r < BK_QF_MIN_R || r > BK_QF_MAX_R) {
        *reason = "r (remainder bits) must be in [1, 61]";
        return BK_ERR_ARG;
    }
    if (q + r > BK_QF_MAX_FP_BITS) {
        *reason = "q + r (fingerprint bits) must be at most 64";
        return BK_ERR_ARG;
    }
    if (bk_mul_overflow(1ULL << q, (uint64_t)r + 3, &bits) || bits > BK_QF_MAX_BITS) {
        *reason = "table too large: 2**q * (r + 3) must be at most 2**46 bits";
        return BK_ERR_ARG;
    }
    *payload_len = ((bits + 63) / 64) * 8;
    return BK_OK;
}

void bk_quotient_init_state(uint8_t *buf, uint32_t q, uint32_t r, uint64_t capacity,
                      double error_rate, double max_load, uint64_t seed, int keyed,
                      uint64_t key_check)
{
    uint64_t payload_len = 0;
    const char *reason = NULL;
    uint8_t *p = buf + BK_OFF_PARAMS;

    (void)bk_quotient_shape(q, r, &payload_len, &reason);
    bk_format_init_header(buf, BK_KIND_QUOTIENT, BK_QF_HEADER_LEN,
                          BK_QF_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u32le(p + BK_QF_P_Q, q);
    bk_store_u32le(p + BK_QF_P_R, r);
    bk_store_u64le(p + BK_QF_P_CAPACITY, capacity);
    bk_store_f64le(p + BK_QF_P_ERROR_RATE, error_rate);
    bk_store_f64le(p + BK_QF_P_MAX_LOAD, max_load);
    bk_store_u64le(p + BK_QF_P_COUNT, 0);
}

static void bk_quotient_view(bk_qf *f, const uint8_t *params, const uint8_t *payload)
{
    f->q = bk_load_u32le(params + BK_QF_P_Q);
    f->r = bk_load_u32le(params + BK_QF_P_R);
    f->w = f->r + 3;
    f->nslots = 1ULL << f->q;
    f->smask = f->nslots - 1;
    f->slot_mask = f->w >= 64 ? ~0ULL : (1ULL << f->w) - 1;
    f->rmask = (1ULL << f->r) - 1;
    f->num_words = (f->nslots * f->w + 63) / 64;
    f->words = (uint64_t *)(uintptr_t)payload;
    f->count_p = (uint8_t *)(uintptr_t)(params + BK_QF_P_COUNT);
}

void bk_quotient_attach(bk_qf *f, uint8_t *buf)
{
    uint32_t header_len = bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    bk_quotient_view(f, buf + BK_OFF_PARAMS, buf + header_len);
}

static void bk_quotient_set_count(bk_qf *f, uint64_t n)
{
    bk_store_u64le(f->count_p, n);
}

/* ---- Begin logic for the validator ------------------------------------ */

bk_rc bk_quotient_check(const bk_qf *f, const char **reason)
{
    uint64_t n = f->nslots, mask = f->smask, e = 0, used = 0;
    uint64_t occ_t = 0, prev_rem = 0, t;
    uint64_t tail_bits = (n * f->w) & 63;
    int found = 0, in_cluster = 0;

    if (tail_bits != 0 && (BK_LE64(f->words[f->num_words - 1]) >> tail_bits) != 0) {
        *reason = "quotient filter: bits set past the last slot";
        return BK_ERR_FORMAT;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = bk_quotient_get(f, i);
        if ((v & BK_QF_META) == 0) {
            if (v != 0) {
                *reason = "quotient filter: empty slot with a remainder";
                return BK_ERR_FORMAT;
            }
            if (!found) {
                e = i;
                found = 1;
            }
        } else {
            used++;
        }
    }
    if (!found) {
        *reason = "quotient filter: no empty slot (at most 2**q - 1 fingerprints)";
        return BK_ERR_FORMAT;
    }
    if (used != bk_quotient_count(f)) {
        *reason = "quotient filter: count does not match the stored fingerprints";
        return BK_ERR_FORMAT;
    }
    /* Walk once around from just after the empty slot e; walk index t is
     * slot (e + t) mod 2^q, and t = n is e itself (empty), which closes
     * the last cluster. */
    for (t = 1; t <= n; t++) {
        uint64_t v = bk_quotient_get(f, (e + t) & mask);
        if ((v & BK_QF_META) == 0) {
            if (in_cluster) {
                for (uint64_t u = occ_t + 1; u < t; u++)
                    if (bk_quotient_get(f, (e + u) & mask) & BK_QF_OCCUPIED) {
                        *reason = "quotient filter: occupied slot without a run";
                        return BK_ERR_FORMAT;
                    }
            }
            in_cluster = 0;
            occ_t = t;
            continue;
        }
        if (!in_cluster) {
            if (v & (BK_QF_CONTINUATION | BK_QF_SHIFTED)) {
                *reason = "quotient filter: cluster starts with a shifted slot";
                return BK_ERR_FORMAT;
            }
            in_cluster = 1;
        }
        if (!(v & BK_QF_CONTINUATION)) {
            /* A run start: its quotient is the next occupied slot. */
            do {
                occ_t++;
            } while (occ_t < t && !(bk_quotient_get(f, (e + occ_t) & mask) & BK_QF_OCCUPIED));
            if (!(bk_quotient_get(f, (e + occ_t) & mask) & BK_QF_OCCUPIED)) {
                *reason = "quotient filter: run without an occupied quotient";
                return BK_ERR_FORMAT;
            }
            if ((occ_t != t) != ((v & BK_QF_SHIFTED) != 0)) {
                *reason = "quotient filter: is_shifted disagrees with the run's position";
                return BK_ERR_FORMAT;
            }
        } else {
            if (!(v & BK_QF_SHIFTED)) {
                *reason = "quotient filter: continuation slot not shifted";
                return BK_ERR_FORMAT;
            }
            if ((v >> 3) < prev_rem) {
                *reason = "quotient filter: run not sorted";
                return BK_ERR_FORMAT;
            }
        }
        prev_rem = v >> 3;
    }
    return BK_OK;
}

bk_rc bk_quotient_validate(const bk_header *h, const uint8_t *params,
                           const uint8_t *payload, int checks, const char **reason)
{
    uint32_t q, r;
    uint64_t count, payload_len = 0;
    double max_load;
    bk_qf f;

    q = bk_load_u32le(params + BK_QF_P_Q);
    r = bk_load_u32le(params + BK_QF_P_R);
    if (bk_quotient_shape(q, r, &payload_len, reason) != BK_OK)
        return BK_ERR_FORMAT;
    if (payload_len != h->payload_len) {
        *reason = "payload_len does not match q and r";
        return BK_ERR_FORMAT;
    }
    max_load = bk_load_f64le(params + BK_QF_P_MAX_LOAD);
    count = bk_load_u64le(params + BK_QF_P_COUNT);
    if (!(max_load >= BK_QF_MIN_MAX_LOAD && max_load <= 1.0)) { /* NaN too */
        *reason = "max_load must be in [0.01, 1]";
        return BK_ERR_FORMAT;
    }
    if (count > (1ULL << q) - 1) {
        *reason = "count exceeds 2**q - 1";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u64le(params + BK_QF_P_RESERVED) != 0) {
        *reason = "reserved quotient filter parameter is not zero";
        return BK_ERR_FORMAT;
    }
    if (checks & BK_CHECK_DEEP) {
        bk_quotient_view(&f, params, payload);
        return bk_quotient_check(&f, reason);
    }
    return BK_OK;
}

static const bk_kind_param bk_quotient_params[] = {
    {"q", BK_QF_P_Q, 4, BK_PARAM_U32},
    {"r", BK_QF_P_R, 4, BK_PARAM_U32},
    {"capacity", BK_QF_P_CAPACITY, 8, BK_PARAM_U64},
    {"error_rate", BK_QF_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"max_load", BK_QF_P_MAX_LOAD, 8, BK_PARAM_F64},
    {"count", BK_QF_P_COUNT, 8, BK_PARAM_U64},
};

double bk_quotient_estimate_error_rate(const bk_qf *f)
{
    double n = (double)bk_quotient_count(f);
    return -expm1(n * log1p(-ldexp(1.0, -(int)(f->q + f->r))));
}

/* The state operations (bk_kind.h): keys by their fingerprints, as the
 * glue's add and remove; the core keeps the count, so the view is the
 * filter. */
static void bk_quotient_ops_attach(void *view, uint8_t *state)
{
    bk_quotient_attach((bk_qf *)view, state);
}

static int bk_quotient_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_quotient_contains((const bk_qf *)view, h);
}

static uint64_t bk_quotient_ops_count(const void *view, uint64_t h)
{
    const bk_qf *f = (const bk_qf *)view;
    return bk_quotient_count_fp(f, bk_quotient_fingerprint(f, h));
}

static bk_rc bk_quotient_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    bk_qf *f = (bk_qf *)view;
    int was_new = 0;
    (void)now;
    if (count != 1)
        return BK_ERR_ARG;
    return bk_quotient_insert_fp(f, bk_quotient_fingerprint(f, h), &was_new);
}

static bk_rc bk_quotient_ops_remove(void *view, uint64_t h)
{
    bk_qf *f = (bk_qf *)view;
    return bk_quotient_remove_fp(f, bk_quotient_fingerprint(f, h));
}

static void bk_quotient_ops_clear(void *view, int64_t now)
{
    bk_qf *f = (bk_qf *)view;
    (void)now;
    memset(f->words, 0, (size_t)f->num_words * 8);
    bk_quotient_set_count(f, 0);
}

static double bk_quotient_ops_error_rate(const void *view, int64_t now)
{
    (void)now;
    return bk_quotient_estimate_error_rate((const bk_qf *)view);
}

static void bk_quotient_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                          int64_t now, uint8_t *out)
{
    (void)now;
    bk_quotient_contains_many((const bk_qf *)view, hs, n, out);
}

static const bk_kind_ops bk_quotient_ops = {
    .view_size = sizeof(bk_qf),
    .attach = bk_quotient_ops_attach,
    .contains = bk_quotient_ops_contains,
    .contains_many = bk_quotient_ops_contains_many,
    .count = bk_quotient_ops_count,
    .add = bk_quotient_ops_add,
    .remove = bk_quotient_ops_remove,
    .clear = bk_quotient_ops_clear,
    .estimate_error_rate = bk_quotient_ops_error_rate,
};

const bk_kind_desc bk_quotient_kind = {
    BK_KIND_QUOTIENT, "QuotientFilter", "quotient filter", BK_QF_PARAMS_LEN, BK_QF_HEADER_LEN,
    BK_KIND_PARAMS(bk_quotient_params),
    2, BK_KIND_CAPACITY_DEFAULT,
    3, BK_KIND_ERROR_RATE_DEFAULT,
    -1, 0,
    BK_TRAIT_MERGEABLE | BK_TRAIT_REMOVABLE | BK_TRAIT_COUNTS | BK_TRAIT_KEYED,
    bk_quotient_validate,
    &bk_quotient_ops,
};

/* ---- End logic for the validator -------------------------------------- */

/* ---- Begin logic for lookups and updates ------------------------------ */

uint64_t bk_quotient_run_start(const bk_qf *f, uint64_t fq)
{
    uint64_t b = fq, mask = f->smask, guard = f->nslots, runs = 0;
    uint64_t v = bk_quotient_get(f, b);

    /* Back to the start of the cluster (the nearest unshifted slot),
     * counting the occupied quotients in [start, fq): the runs before fq's.
     * One slot read per step. */
    while ((v & BK_QF_SHIFTED) && --guard) {
        b = (b - 1) & mask;
        v = bk_quotient_get(f, b);
        runs += v & BK_QF_OCCUPIED;
    }
    /* Forward over that many runs: each non-continuation slot starts one. */
    guard = f->nslots;
    while (runs > 0 && --guard) {
        b = (b + 1) & mask;
        runs -= !(bk_quotient_get(f, b) & BK_QF_CONTINUATION);
    }
    return b;
}

uint64_t bk_quotient_count_fp(const bk_qf *f, uint64_t fp)
{
    uint64_t fq = fp >> f->r, fr = fp & f->rmask, s, c = 0, guard = f->nslots;
    if (!(bk_quotient_get(f, fq) & BK_QF_OCCUPIED))
        return 0;
    s = bk_quotient_run_start(f, fq);
    do {
        uint64_t rem = bk_quotient_get(f, s) >> 3;
        if (rem > fr)
            break;
        c += rem == fr;
        s = (s + 1) & f->smask;
    } while ((bk_quotient_get(f, s) & BK_QF_CONTINUATION) && --guard);
    return c;
}

bk_rc bk_quotient_insert_fp(bk_qf *f, uint64_t fp, int *was_new)
{
    uint64_t fq = fp >> f->r, fr = fp & f->rmask, mask = f->smask;
    uint64_t home, s, pos, end, guard, cnt = bk_quotient_count(f);
    int new_run;

    *was_new = 1;
    if (cnt >= f->nslots - 1)
        return BK_ERR_CAPACITY;
    home = bk_quotient_get(f, fq);
    if ((home & BK_QF_META) == 0) {
        bk_quotient_set(f, fq, BK_QF_OCCUPIED | (fr << 3));
        bk_quotient_set_count(f, cnt + 1);
        return BK_OK;
    }
    new_run = !(home & BK_QF_OCCUPIED);
    s = bk_quotient_run_start(f, fq);
    pos = s;
    if (!new_run) {
        /* After every remainder <= fr: equal fingerprints stay adjacent. */
        guard = f->nslots;
        for (;;) {
            uint64_t rem = bk_quotient_get(f, pos) >> 3;
            if (rem > fr)
                break;
            if (rem == fr)
                *was_new = 0;
            pos = (pos + 1) & mask;
            if (!(bk_quotient_get(f, pos) & BK_QF_CONTINUATION) || !--guard)
                break;
        }
    }
    /* The first empty slot at or after pos; found before anything is
     * written, so a corrupt (full) table is refused unchanged. */
    end = pos;
    guard = f->nslots;
    while (bk_quotient_get(f, end) & BK_QF_META) {
        end = (end + 1) & mask;
        if (!--guard)
            return BK_ERR_FORMAT;
    }
    /* Shift [pos, end) one slot right; is_occupied stays with its slot and
     * every moved element is now shifted. */
    for (uint64_t i = end; i != pos; i = (i - 1) & mask) {
        uint64_t prev = bk_quotient_get(f, (i - 1) & mask);
        uint64_t cur = bk_quotient_get(f, i);
        bk_quotient_set(f, i, (cur & BK_QF_OCCUPIED) | (prev & ~(uint64_t)BK_QF_META) |
                            (prev & BK_QF_CONTINUATION) | BK_QF_SHIFTED);
    }
    bk_quotient_set(f, pos, (bk_quotient_get(f, pos) & BK_QF_OCCUPIED) | (fr << 3) |
                          ((!new_run && pos != s) ? BK_QF_CONTINUATION : 0) |
                          (pos != fq ? BK_QF_SHIFTED : 0));
    if (!new_run && pos == s) {
        /* A new smallest remainder: the old run start follows it. */
        uint64_t nx = (pos + 1) & mask;
        bk_quotient_set(f, nx, bk_quotient_get(f, nx) | BK_QF_CONTINUATION);
    }
    if (new_run)
        bk_quotient_set(f, fq, bk_quotient_get(f, fq) | BK_QF_OCCUPIED);
    bk_quotient_set_count(f, cnt + 1);
    return BK_OK;
}

bk_rc bk_quotient_remove_fp(bk_qf *f, uint64_t fp)
{
    uint64_t fq = fp >> f->r, fr = fp & f->rmask, mask = f->smask;
    uint64_t s, p, i, cur_q = fq, guard = f->nslots, cnt = bk_quotient_count(f);
    int run_single, first = 1;

    if (cnt == 0 || !(bk_quotient_get(f, fq) & BK_QF_OCCUPIED))
        return BK_ERR_NOTFOUND;
    s = bk_quotient_run_start(f, fq);
    p = s;
    for (;;) {
        uint64_t rem = bk_quotient_get(f, p) >> 3;
        if (rem == fr)
            break;
        if (rem > fr)
            return BK_ERR_NOTFOUND;
        p = (p + 1) & mask;
        if (!(bk_quotient_get(f, p) & BK_QF_CONTINUATION) || !--guard)
            return BK_ERR_NOTFOUND;
    }
    run_single = p == s && !(bk_quotient_get(f, (p + 1) & mask) & BK_QF_CONTINUATION);
    /* Shift the rest of the cluster left by one, up to the first empty or
     * unshifted slot (an element already in its canonical slot stays). */
    i = p;
    guard = f->nslots;
    for (;;) {
        uint64_t j = (i + 1) & mask, nv = bk_quotient_get(f, j), meta;
        if (!(nv & BK_QF_SHIFTED) || !--guard) {
            bk_quotient_set(f, i, bk_quotient_get(f, i) & BK_QF_OCCUPIED);
            break;
        }
        if (nv & BK_QF_CONTINUATION) {
            if (first && p == s) /* fq's second remainder becomes its run start */
                meta = i != fq ? BK_QF_SHIFTED : 0;
            else
                meta = BK_QF_CONTINUATION | BK_QF_SHIFTED;
        } else {
            /* The next run: its quotient is the next occupied slot. */
            uint64_t g = f->nslots;
            do {
                cur_q = (cur_q + 1) & mask;
            } while (!(bk_quotient_get(f, cur_q) & BK_QF_OCCUPIED) && --g);
            meta = i != cur_q ? BK_QF_SHIFTED : 0;
        }
        bk_quotient_set(f, i, (bk_quotient_get(f, i) & BK_QF_OCCUPIED) | (nv & ~(uint64_t)BK_QF_META) | meta);
        i = j;
        first = 0;
    }
    if (run_single)
        bk_quotient_set(f, fq, bk_quotient_get(f, fq) & ~(uint64_t)BK_QF_OCCUPIED);
    bk_quotient_set_count(f, cnt - 1);
    return BK_OK;
}

void bk_quotient_contains_many(const bk_qf *f, const uint64_t *hs, size_t n, uint8_t *out)
{
    size_t i;
    for (i = 0; i < n && i < BK_QF_AHEAD; i++)
        bk_prefetch_r(&f->words[((bk_quotient_fingerprint(f, hs[i]) >> f->r) * f->w) >> 6]);
    for (i = 0; i < n; i++) {
        if (i + BK_QF_AHEAD < n)
            bk_prefetch_r(
                &f->words[((bk_quotient_fingerprint(f, hs[i + BK_QF_AHEAD]) >> f->r) * f->w) >> 6]);
        out[i] = (uint8_t)bk_quotient_contains(f, hs[i]);
    }
}

/* ---- End logic for lookups and updates -------------------------------- */

/* ---- Begin logic for sorted traversal, merge and resize --------------- */

/* The walk starts after an empty slot (the last one), so it meets the
 * quotients in cyclic order from anchor + 1: first those above the anchor
 * (a cluster that wraps past the last slot), then, after the wrap, those
 * below it.  Sorted order is the second group then the first: pass 0 walks
 * everything and yields the quotients below the anchor, pass 1 yields the
 * ones above and stops at the wrap.  With no wrapping cluster (the last
 * slot empty) pass 1 yields nothing at once. */
void bk_quotient_cursor_init(bk_quotient_cursor *c, const bk_qf *f)
{
    uint64_t i = f->nslots;
    c->f = f;
    c->t = 0;
    c->occ_t = 0;
    c->cur_q = 0;
    c->phase = 2;
    while (i-- > 0) {
        if ((bk_quotient_get(f, i) & BK_QF_META) == 0) {
            c->anchor = i;
            c->phase = 0;
            return;
        }
    }
    c->anchor = 0; /* corrupt: no empty slot; yield nothing */
}

int bk_quotient_cursor_next(bk_quotient_cursor *c, uint64_t *fp)
{
    const bk_qf *f = c->f;
    uint64_t n = f->nslots, mask = f->smask;
    while (c->phase < 2) {
        while (c->t + 1 < n) {
            uint64_t v, fq;
            c->t++;
            v = bk_quotient_get(f, (c->anchor + c->t) & mask);
            if ((v & BK_QF_META) == 0)
                continue;
            if (!(v & BK_QF_CONTINUATION)) {
                do {
                    c->occ_t++;
                } while (c->occ_t < c->t &&
                         !(bk_quotient_get(f, (c->anchor + c->occ_t) & mask) & BK_QF_OCCUPIED));
                c->cur_q = (c->anchor + c->occ_t) & mask;
            }
            fq = c->cur_q;
            if (c->phase == 0 ? fq < c->anchor : fq > c->anchor) {
                *fp = (fq << f->r) | (v >> 3);
                return 1;
            }
            if (c->phase == 1 && fq < c->anchor)
                break; /* past the wrap: pass 1 is over */
        }
        c->phase++;
        c->t = 0;
        c->occ_t = 0;
    }
    return 0;
}

typedef struct {
    uint64_t last;   /* slot of the last appended element (linear) */
    uint64_t last_q;
    int has_last;
    int wrapped;
} bk_quotient_appender;

static bk_rc bk_quotient_append(bk_qf *f, bk_quotient_appender *a, uint64_t fp)
{
    uint64_t fq = fp >> f->r, fr = fp & f->rmask, cnt = bk_quotient_count(f), pos;
    int was_new;
    if (cnt >= f->nslots - 1)
        return BK_ERR_CAPACITY;
    if (!a->wrapped) {
        pos = a->has_last && a->last + 1 > fq ? a->last + 1 : fq;
        if (pos < f->nslots) {
            uint64_t meta = (a->has_last && a->last_q == fq) ? BK_QF_CONTINUATION : 0;
            if (pos != fq)
                meta |= BK_QF_SHIFTED;
            bk_quotient_set(f, pos, (bk_quotient_get(f, pos) & BK_QF_OCCUPIED) | (fr << 3) | meta);
            bk_quotient_set(f, fq, bk_quotient_get(f, fq) | BK_QF_OCCUPIED);
            a->last = pos;
            a->last_q = fq;
            a->has_last = 1;
            bk_quotient_set_count(f, cnt + 1);
            return BK_OK;
        }
        a->wrapped = 1; /* the rest wraps into slot 0..: general inserts */
    }
    return bk_quotient_insert_fp(f, fp, &was_new);
}

bk_rc bk_quotient_rebuild(bk_qf *dst, const bk_qf *a, const bk_qf *b)
{
    bk_quotient_cursor ca, cb;
    bk_quotient_appender app = {0, 0, 0, 0};
    uint64_t x = 0, y = 0;
    int hx, hy;
    bk_rc rc;

    if (a->q + a->r != dst->q + dst->r || (b != NULL && b->q + b->r != dst->q + dst->r))
        return BK_ERR_INCOMPATIBLE;
    bk_quotient_cursor_init(&ca, a);
    hx = bk_quotient_cursor_next(&ca, &x);
    hy = 0;
    if (b != NULL) {
        bk_quotient_cursor_init(&cb, b);
        hy = bk_quotient_cursor_next(&cb, &y);
    }
    while (hx || hy) {
        if (hx && (!hy || x <= y)) {
            rc = bk_quotient_append(dst, &app, x);
            hx = bk_quotient_cursor_next(&ca, &x);
        } else {
            rc = bk_quotient_append(dst, &app, y);
            hy = bk_quotient_cursor_next(&cb, &y);
        }
        if (rc != BK_OK)
            return rc;
    }
    return BK_OK;
}

/* ---- End logic for sorted traversal, merge and resize ----------------- */
