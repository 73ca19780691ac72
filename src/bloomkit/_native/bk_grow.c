/*
 * bk_grow.c -- a growable filter whose query cost does not grow with it.
 *
 * Structure.  Two tables of 64-byte buckets (one cache line each), every
 * bucket 32 little-endian 16-bit slots; table t has 2^q[t] buckets.  A
 * key's 64-bit hash h gives two 64-bit values, x0 = h for table 0 and
 * x1 = h * K1 (K1 odd: a bijection whose top bits depend on every bit of
 * h) for table 1; the top q[t] bits of x_t name the key's bucket in table
 * t and the 16 bits below them its fingerprint there.  The key is stored
 * once, in the less full of its two buckets (two-choice balancing:
 * "balanced allocations", Azar, Broder, Karlin, Upfal 1999; one choice per
 * table as in Vocking's "always go left").  A query reads the two lines
 * and compares all 32 slots of each with the key's fingerprint for that
 * table: two independent cache lines (prefetched together in batches),
 * however often the filter has grown.
 *
 * Growth.  When the load passes max_load, the smaller table doubles (table
 * 0 first), so the filter grows by 3/2, then 4/3, and the load swings
 * between 0.57 and 1 of max_load, not between 1/2 and 1.  Doubling table t
 * splits bucket i into 2i and 2i + 1 by the next bit of each entry's x,
 * which is the first bit of its stored fingerprint; the entry keeps one
 * bit fewer.  This is the fingerprint-to-address expansion of the
 * expandable filters (InfiniFilter, Dayan, Bercea, Reviriego, Pagh, SIGMOD
 * 2023; taffy filters, J. Apple 2021; the Aleph filter, VLDB 2024): the
 * keys are never needed, and old entries keep shorter fingerprints while
 * new ones get all 15 bits.  (One table grown a bucket at a time by linear
 * hashing was tried first: an unsplit bucket takes twice the hash share of
 * a split one, and with two choices the keys whose both buckets are still
 * unsplit overfill the last buckets of each round, to about 1.5x max_load
 * at 0.85: the stash overflowed and forced splits left the load at 0.54.)
 *
 * Fingerprint order.  The bits of x below the d = q[t] address bits are
 * laid from the top of the 16-bit slot down (slot bit 15 = the bit just
 * below the address), so the bit a split consumes is always bit 15 and a
 * split is a left shift; the query bits are fp = (x << d) >> 48.  An entry
 * of L fingerprint bits (1 <= L <= 15) is those L bits at the top, a
 * terminating 1 below them and zeros under it; a new entry has L = 15
 * (slot = (fp & 0xFFFE) | 1).  Slot 0 is empty.  An entry matches fp when
 * their bits above the entry's lowest set bit agree:
 * ((s ^ fp) & ~(s ^ (s - 1))) == 0 (and s != 0): four slots per 64-bit
 * word (SWAR, every platform) or 16 per AVX2 register (x86 with AVX2, at
 * run time through bk_simd_avx2), with no branch per slot.
 *
 * False positives.  An entry of L bits in table t matches a random key's
 * value with probability 2^-(q[t] + L) (bk_grow_estimate_fpr sums that
 * exactly).  A bucket holds 32 * load entries and a query compares two
 * buckets, so new entries answer about 64 * load * 2^-15 (0.15% at load
 * 0.78).  Each split halves an entry's bits and the share of the filter
 * its generation is, so every doubling of the filter adds about the same
 * again over two.  Measured at the top of the load swing (the test, 10^3
 * to 10^6 keys): rate <= max_load * 2^-10 * (1.8 + 1.15 g) after g
 * doublings, 0.90% at g = 9 for max_load 0.78 (the bound says 1.01%).
 * bk_grow_max_load inverts that bound: the load that keeps a target rate
 * up to a planned number of doublings.  Growth is capped at
 * BK_GROW_MAX_DOUBLINGS past the first depth so that every entry keeps
 * L >= 1 (an entry with no bit left could not be split without copying it
 * to both halves); past it adds answer BK_ERR_CAPACITY.
 *
 * Overflow.  When both buckets of a new key are full (two-choice keeps the
 * fullest bucket a few entries above the mean, so this is rare below load
 * 0.9), its whole hash goes to a stash of BK_GROW_STASH entries that every
 * query checks when it is not empty; each doubling moves the stash back
 * into the tables where it fits.  A full stash forces a doubling.
 *
 * Invariants (bk_grow_check; deep for the buckets):
 *   - floor <= q[1] <= q[0] <= q[1] + 1, q[0] <= 40 and
 *     q[0] <= floor + BK_GROW_MAX_DOUBLINGS;
 *   - every bucket is packed: its nonzero slots come first;
 *   - every entry has 1 <= L <= 15 and was inserted no shallower than the
 *     floor: L >= 15 - (d - floor);
 *   - count = entries in the table + nstash, nstash <= BK_GROW_STASH;
 *   - max_load in [0.05, 1].
 *
 * Byte layout (little-endian).  The parameter block, 192 bytes:
 *   +0  u32 q[0]      +4  u32 q[1]        +8  u32 floor     +12 u32 zero
 *   +16 u64 count     +24 f64 max_load    +32 u32 nstash    +36 u32 zero
 *   +40 u64 nbuckets (= 2^q[0] + 2^q[1], checked)
 *   +48 u64 stash[16] (entries past nstash are zero)
 *   +176 u64 capacity (initial)  +184 f64 error_rate (design)
 * In a container (kind 13; docs/growable.md, "File layout") the block is the params area at
 * byte 64 and the header is 256 bytes.  The payload: table 0's 2^q[0]
 * buckets, then table 1's 2^q[1], 64 bytes each; slot j of bucket b of the concatenation at 64b + 2j as a u16.  A
 * doubling resizes the payload (bk_grow_resize_fn), moves table 1 up when
 * table 0 doubles, and splits in place.
 */
#include "bk_grow.h"

#include <string.h>

#include "bk_endian.h"
#include "bk_hash.h"
#include "bk_kind.h"

#include "bk_simd.h"

#define GR_H UINT64_C(0x8000800080008000)
#define GR_L UINT64_C(0x0001000100010001)
#define GR_WORDS (BK_GROW_BUCKET_BYTES / 8u)
#define GR_CHUNK 16u /* batch adds: keys prefetched together */

uint64_t bk_grow_payload_len(uint32_t q0, uint32_t q1)
{
    if (q0 > BK_GROW_MAX_DEPTH || q1 > BK_GROW_MAX_DEPTH)
        return 0;
    return ((UINT64_C(1) << q0) + (UINT64_C(1) << q1)) * BK_GROW_BUCKET_BYTES;
}

uint64_t bk_grow_nbuckets(const bk_grow *g)
{
    return (UINT64_C(1) << g->q[0]) + (UINT64_C(1) << g->q[1]);
}

/* Write the mirrored fields back into the parameter block. */
static void bk_grow_store(const bk_grow *g)
{
    uint32_t i;
    bk_store_u32le(g->params + BK_GROW_P_Q0, g->q[0]);
    bk_store_u32le(g->params + BK_GROW_P_Q1, g->q[1]);
    bk_store_u64le(g->params + BK_GROW_P_COUNT, g->count);
    bk_store_u32le(g->params + BK_GROW_P_NSTASH, g->nstash);
    bk_store_u64le(g->params + BK_GROW_P_NBUCKETS, bk_grow_nbuckets(g));
    for (i = g->nstash; i < BK_GROW_STASH; i++)
        bk_store_u64le(g->params + BK_GROW_P_STASH + 8 * i, 0);
}

BK_INLINE uint64_t bk_grow_stash(const bk_grow *g, uint32_t i)
{
    return bk_load_u64le(g->params + BK_GROW_P_STASH + 8 * i);
}

void bk_grow_attach(bk_grow *g, uint8_t *params, uint8_t *buckets)
{
    g->params = params;
    g->buckets = buckets;
    g->q[0] = bk_load_u32le(params + BK_GROW_P_Q0);
    g->q[1] = bk_load_u32le(params + BK_GROW_P_Q1);
    g->floor = bk_load_u32le(params + BK_GROW_P_FLOOR);
    g->count = bk_load_u64le(params + BK_GROW_P_COUNT);
    g->max_load = bk_load_f64le(params + BK_GROW_P_MAX_LOAD);
    g->nstash = bk_load_u32le(params + BK_GROW_P_NSTASH);
}

double bk_grow_max_load(double error_rate, double doublings)
{
    double ml = error_rate * 1024.0 / (1.8 + 1.15 * doublings);
    if (!(ml >= 0.05))
        return 0.0;
    return ml > 0.9 ? 0.9 : ml;
}

bk_rc bk_grow_shape(uint64_t capacity, double max_load, uint32_t *q0, uint32_t *q1,
                    uint64_t *payload_len, const char **reason)
{
    double nb;
    uint32_t q = 0;
    if (!(max_load >= 0.05 && max_load <= 1.0))
        return *reason = "max_load must be in [0.05, 1]", BK_ERR_ARG;
    nb = (double)capacity / (BK_GROW_SLOTS * max_load);
    /* The smallest of 2 * 2^q or 3 * 2^q buckets holding capacity. */
    while (2.0 * (double)(UINT64_C(1) << q) < nb && 3.0 * (double)(UINT64_C(1) << q) < nb &&
           q < BK_GROW_MAX_DEPTH)
        q++;
    if (3.0 * (double)(UINT64_C(1) << q) < nb || q + BK_GROW_MAX_DOUBLINGS > BK_GROW_MAX_DEPTH)
        return *reason = "capacity too large for a growable filter", BK_ERR_ARG;
    *q1 = q;
    *q0 = 2.0 * (double)(UINT64_C(1) << q) < nb ? q + 1 : q;
    *payload_len = bk_grow_payload_len(*q0, *q1);
    return BK_OK;
}

void bk_grow_init_params(uint8_t *params, uint32_t q0, uint32_t q1, double max_load)
{
    memset(params, 0, BK_GROW_P_CAPACITY); /* the design fields are the caller's */
    bk_store_u32le(params + BK_GROW_P_Q0, q0);
    bk_store_u32le(params + BK_GROW_P_Q1, q1);
    bk_store_u32le(params + BK_GROW_P_FLOOR, q1);
    bk_store_f64le(params + BK_GROW_P_MAX_LOAD, max_load);
    bk_store_u64le(params + BK_GROW_P_NBUCKETS, (UINT64_C(1) << q0) + (UINT64_C(1) << q1));
}

/* Any slot of the bucket matching fp (see the essay), four slots per
 * 64-bit word. */
BK_INLINE int bk_grow_match(const uint8_t *bk, uint16_t fp)
{
    uint64_t q4 = (uint64_t)fp * GR_L, z = 0;
    unsigned i;
    for (i = 0; i < GR_WORDS; i++) {
        uint64_t w = bk_load_u64le(bk + 8 * i);
        uint64_t t = ((w | GR_H) - GR_L) ^ (~w & GR_H); /* lane-wise w - 1 */
        uint64_t m = w ^ t;                              /* bits at/below the terminator */
        uint64_t d = ((w ^ q4) & ~m) | (m & GR_H);       /* 0 in a matching lane */
        z |= (d - GR_L) & ~d & GR_H;
    }
    return z != 0;
}

/* Nonzero slots of a bucket (they come first). */
static unsigned bk_grow_fill(const uint8_t *bk)
{
    unsigned i, c = 0;
    for (i = 0; i < GR_WORDS; i++) {
        uint64_t w = bk_load_u64le(bk + 8 * i);
        c += (unsigned)bk_popcount64((((w & ~GR_H) + ~GR_H) | w) & GR_H);
    }
    return c;
}


/* The key's two buckets in *b0, *b1 and its query bits there. */
BK_INLINE void bk_grow_both(const bk_grow *g, uint64_t h, const uint8_t **b0, uint16_t *f0,
                            const uint8_t **b1, uint16_t *f1)
{
    *b0 = bk_grow_locate(g, 0, h, f0);
    *b1 = bk_grow_locate(g, 1, bk_grow_x(h, 1), f1);
}

int bk_grow_contains(const bk_grow *g, uint64_t h)
{
    uint16_t f0, f1;
    const uint8_t *b0, *b1;
    int hit;
    bk_grow_both(g, h, &b0, &f0, &b1, &f1);
    if (bk_simd_avx2)
        hit = bk_simd_grow_match2_avx2(b0, f0, b1, f1);
    else
        hit = bk_grow_match(b0, f0) | bk_grow_match(b1, f1);
    if (hit)
        return 1;
    return BK_UNLIKELY(g->nstash != 0) && bk_grow_stash_contains(g, h);
}

/* The scalar batch query: keys located and prefetched BK_GROW_AHEAD ahead
 * in a ring (bk_simd_grow_contains_many_avx2 is its AVX2 copy). */
static void bk_grow_contains_many_scalar(const bk_grow *g, const uint64_t *hs, size_t n,
                                         uint8_t *out)
{
    const uint8_t *b0[BK_GROW_AHEAD], *b1[BK_GROW_AHEAD];
    uint16_t f0[BK_GROW_AHEAD], f1[BK_GROW_AHEAD];
    size_t i, lead = n < BK_GROW_AHEAD ? n : BK_GROW_AHEAD;
    for (i = 0; i < lead; i++) {
        bk_grow_both(g, hs[i], &b0[i], &f0[i], &b1[i], &f1[i]);
        bk_prefetch_r(b0[i]);
        bk_prefetch_r(b1[i]);
    }
    for (i = 0; i < n; i++) {
        size_t r = i % BK_GROW_AHEAD;
        int hit = bk_grow_match(b0[r], f0[r]) | bk_grow_match(b1[r], f1[r]);
        if (!hit && BK_UNLIKELY(g->nstash != 0))
            hit = bk_grow_stash_contains(g, hs[i]);
        out[i] = (uint8_t)hit;
        if (i + BK_GROW_AHEAD < n) {
            bk_grow_both(g, hs[i + BK_GROW_AHEAD], &b0[r], &f0[r], &b1[r], &f1[r]);
            bk_prefetch_r(b0[r]);
            bk_prefetch_r(b1[r]);
        }
    }
}

void bk_grow_contains_many(const bk_grow *g, const uint64_t *hs, size_t n, uint8_t *out)
{
    size_t i;
    if (!bk_simd_avx2) {
        bk_grow_contains_many_scalar(g, hs, n, out);
        return;
    }
    /* the AVX2 loop answers from the two buckets only (bk_simd.c links
     * without this file: the plain-C tests of other cores); the stash,
     * almost always empty, is looked at here */
    bk_simd_grow_contains_many_avx2(g, hs, n, out);
    if (BK_UNLIKELY(g->nstash != 0))
        for (i = 0; i < n; i++)
            if (!out[i])
                out[i] = (uint8_t)bk_grow_stash_contains(g, hs[i]);
}

/* Store the entry of fp at slot `fill` of bucket bk. */
BK_INLINE void bk_grow_put(bk_grow *g, const uint8_t *bk, unsigned fill, uint16_t fp)
{
    bk_store_u16le(g->buckets + (bk - g->buckets) + 2 * fill, (uint16_t)((fp & 0xFFFEu) | 1u));
}

/* The key's two buckets: 1 if either matches (with check; nothing stored
 * then); else store h in the less full (table 0 on a tie) and return 0,
 * or return -1 when both are full. */
static int bk_grow_place_any(bk_grow *g, uint64_t h, int check)
{
    uint16_t f0, f1;
    const uint8_t *b0, *b1;
    unsigned c0, c1;
    int hit;
    bk_grow_both(g, h, &b0, &f0, &b1, &f1);
    if (bk_simd_avx2) {
        hit = bk_simd_grow_probe2_avx2(b0, f0, b1, f1, &c0, &c1);
    } else {
        c0 = bk_grow_fill(b0);
        c1 = bk_grow_fill(b1);
        hit = bk_grow_match(b0, f0) | bk_grow_match(b1, f1);
    }
    if (check && hit)
        return 1;
    if (c1 < c0) {
        b0 = b1;
        f0 = f1;
        c0 = c1;
    }
    if (c0 >= BK_GROW_SLOTS)
        return -1;
    bk_grow_put(g, b0, c0, f0);
    return 0;
}

/* Store h (known absent) where it fits; 0 when both buckets are full. */
static int bk_grow_place(bk_grow *g, uint64_t h)
{
    return bk_grow_place_any(g, h, 0) == 0;
}

/* The table that doubles next: the smaller, table 0 on a tie; -1 past
 * the cap. */
static int bk_grow_next(const bk_grow *g)
{
    unsigned t = g->q[0] > g->q[1] ? 1u : 0u;
    if (g->q[t] + 1 > g->floor + BK_GROW_MAX_DOUBLINGS || g->q[t] + 1 > BK_GROW_MAX_DEPTH)
        return -1;
    return (int)t;
}

/* Double table t in place: bucket i splits into 2i and 2i + 1 by each
 * entry's bit 15, from the last bucket down (bucket i's halves are at or
 * past i, where every bucket is already read); table 1 first moves up to
 * make room when t = 0. */
static bk_rc bk_grow_double(bk_grow *g, unsigned t)
{
    uint64_t n = UINT64_C(1) << g->q[t], b;
    uint64_t n0 = UINT64_C(1) << g->q[0], n1 = UINT64_C(1) << g->q[1];
    uint64_t len = (n0 + n1 + n) * BK_GROW_BUCKET_BYTES;
    uint8_t *tab;
    uint32_t j, keep;
    bk_rc rc;
    if (g->resize == NULL)
        return BK_ERR_CAPACITY;
    rc = g->resize(g, len, g->ctx);
    if (rc != BK_OK)
        return rc;
    if (t == 0)
        memmove(g->buckets + 2 * n0 * BK_GROW_BUCKET_BYTES, g->buckets + n0 * BK_GROW_BUCKET_BYTES,
                (size_t)(n1 * BK_GROW_BUCKET_BYTES));
    tab = t ? g->buckets + n0 * BK_GROW_BUCKET_BYTES : g->buckets;
    for (b = n; b-- > 0;) {
        uint8_t *src = tab + b * BK_GROW_BUCKET_BYTES;
        uint8_t *lo = tab + 2 * b * BK_GROW_BUCKET_BYTES, *hi = lo + BK_GROW_BUCKET_BYTES;
        uint16_t s[BK_GROW_SLOTS];
        unsigned i, nl = 0, nh = 0;
        for (i = 0; i < BK_GROW_SLOTS; i++)
            s[i] = bk_load_u16le(src + 2 * i);
        memset(lo, 0, 2 * BK_GROW_BUCKET_BYTES);
        for (i = 0; i < BK_GROW_SLOTS && s[i] != 0; i++) {
            if (s[i] & 0x8000u)
                bk_store_u16le(hi + 2 * nh++, (uint16_t)(s[i] << 1));
            else
                bk_store_u16le(lo + 2 * nl++, (uint16_t)(s[i] << 1));
        }
    }
    g->q[t]++;
    /* The stash goes back to the tables where it now fits. */
    for (j = 0, keep = 0; j < g->nstash; j++) {
        uint64_t v = bk_grow_stash(g, j);
        if (!bk_grow_place(g, v))
            bk_store_u64le(g->params + BK_GROW_P_STASH + 8 * keep++, v);
    }
    g->nstash = keep;
    bk_grow_store(g);
    return BK_OK;
}

static double bk_grow_limit(const bk_grow *g)
{
    return g->max_load * (double)BK_GROW_SLOTS * (double)bk_grow_nbuckets(g);
}

/* Add h after its first probe answered r (bk_grow_place_any with check). */
static bk_rc bk_grow_add_rest(bk_grow *g, uint64_t h, int r, int *added)
{
    bk_rc rc;
    int t;
    *added = 0;
    if (r == 1)
        return BK_OK;
    if (r < 0 && BK_UNLIKELY(g->nstash != 0) && bk_grow_stash_contains(g, h))
        return BK_OK;
    while (r < 0) {
        if (g->nstash < BK_GROW_STASH) {
            bk_store_u64le(g->params + BK_GROW_P_STASH + 8 * g->nstash++, h);
            break;
        }
        /* Both buckets and the stash full: double (membership unchanged). */
        t = bk_grow_next(g);
        if (t < 0)
            return BK_ERR_CAPACITY;
        rc = bk_grow_double(g, (unsigned)t);
        if (rc != BK_OK)
            return rc;
        if (bk_grow_contains(g, h)) /* a stash entry may now answer for h */
            return BK_OK;
        r = bk_grow_place(g, h) ? 0 : -1;
    }
    g->count++;
    *added = 1;
    bk_grow_store(g);
    while ((double)(g->count - g->nstash) > bk_grow_limit(g) && (t = bk_grow_next(g)) >= 0)
        if (bk_grow_double(g, (unsigned)t) != BK_OK)
            break; /* the key is in; a later add doubles */
    return BK_OK;
}

bk_rc bk_grow_add(bk_grow *g, uint64_t h, int *added)
{
    int r;
    if (BK_UNLIKELY(g->nstash != 0) && bk_grow_stash_contains(g, h)) {
        *added = 0;
        return BK_OK;
    }
    r = bk_grow_place_any(g, h, 1);
    return bk_grow_add_rest(g, h, r, added);
}

bk_rc bk_grow_add_many(bk_grow *g, const uint64_t *hs, size_t n, uint64_t *added)
{
    size_t base, i, m;
    uint16_t fp;
    for (base = 0; base < n; base += m) {
        m = n - base < GR_CHUNK ? n - base : GR_CHUNK;
        for (i = 0; i < m; i++) {
            bk_prefetch_w(bk_grow_locate(g, 0, hs[base + i], &fp));
            bk_prefetch_w(bk_grow_locate(g, 1, bk_grow_x(hs[base + i], 1), &fp));
        }
        for (i = 0; i < m; i++) {
            int a;
            bk_rc rc = bk_grow_add(g, hs[base + i], &a);
            if (rc != BK_OK)
                return rc;
            *added += (uint64_t)a;
        }
    }
    return BK_OK;
}

/* Fingerprint bits of a nonzero slot: 15 - (position of its lowest 1). */
BK_INLINE unsigned bk_grow_len(uint16_t s)
{
    return 15u - bk_ctz64(s);
}

double bk_grow_estimate_fpr(const bk_grow *g)
{
    double miss = 1.0; /* probability a random key's buckets match nothing */
    unsigned t, i;
    for (t = 0; t < 2; t++) {
        uint64_t n = UINT64_C(1) << g->q[t], b;
        const uint8_t *tab = bk_grow_table(g, t);
        double p = 0.0;
        for (b = 0; b < n; b++) {
            const uint8_t *bk = tab + b * BK_GROW_BUCKET_BYTES;
            double none = 1.0;
            for (i = 0; i < BK_GROW_SLOTS; i++) {
                uint16_t s = bk_load_u16le(bk + 2 * i);
                if (s == 0)
                    break;
                none *= 1.0 - 1.0 / (double)(UINT32_C(1) << bk_grow_len(s));
            }
            p += 1.0 - none;
        }
        miss *= 1.0 - p / (double)n;
    }
    return 1.0 - miss + (double)g->nstash * 0x1p-64;
}

bk_rc bk_grow_check(const uint8_t *params, uint32_t params_len, const uint8_t *payload,
                    uint64_t payload_len, int deep, const char **reason)
{
    uint32_t q0, q1, fl, ns, i;
    uint64_t count, entries = 0, off = 0;
    double ml;
    unsigned t;
    if (params_len != BK_GROW_PARAMS_LEN)
        return *reason = "parameter block length", BK_ERR_FORMAT;
    q0 = bk_load_u32le(params + BK_GROW_P_Q0);
    q1 = bk_load_u32le(params + BK_GROW_P_Q1);
    fl = bk_load_u32le(params + BK_GROW_P_FLOOR);
    count = bk_load_u64le(params + BK_GROW_P_COUNT);
    ml = bk_load_f64le(params + BK_GROW_P_MAX_LOAD);
    ns = bk_load_u32le(params + BK_GROW_P_NSTASH);
    if (bk_load_u32le(params + BK_GROW_P_RESERVED) != 0 ||
        bk_load_u32le(params + BK_GROW_P_RESERVED2) != 0)
        return *reason = "reserved field not zero", BK_ERR_FORMAT;
    if (!(ml >= 0.05 && ml <= 1.0))
        return *reason = "max_load must be in [0.05, 1]", BK_ERR_FORMAT;
    if (q0 > BK_GROW_MAX_DEPTH || q1 > q0 || q0 > q1 + 1 || fl > q1 ||
        q0 > fl + BK_GROW_MAX_DOUBLINGS)
        return *reason = "table depths out of range", BK_ERR_FORMAT;
    if (bk_load_u64le(params + BK_GROW_P_NBUCKETS) != (UINT64_C(1) << q0) + (UINT64_C(1) << q1))
        return *reason = "bucket count disagrees with the depths", BK_ERR_FORMAT;
    if (payload_len != bk_grow_payload_len(q0, q1))
        return *reason = "payload length disagrees with the bucket count", BK_ERR_FORMAT;
    if (ns > BK_GROW_STASH)
        return *reason = "stash count out of range", BK_ERR_FORMAT;
    if (count < ns ||
        count > (uint64_t)BK_GROW_SLOTS * ((UINT64_C(1) << q0) + (UINT64_C(1) << q1)) + ns)
        return *reason = "count out of range", BK_ERR_FORMAT;
    for (i = ns; i < BK_GROW_STASH; i++)
        if (bk_load_u64le(params + BK_GROW_P_STASH + 8 * i) != 0)
            return *reason = "stash entry past the count not zero", BK_ERR_FORMAT;
    if (!deep)
        return BK_OK;
    for (t = 0; t < 2; t++) {
        uint32_t d = t ? q1 : q0;
        uint64_t n = UINT64_C(1) << d, b;
        for (b = 0; b < n; b++, off += BK_GROW_BUCKET_BYTES) {
            const uint8_t *bk = payload + off;
            int ended = 0;
            for (i = 0; i < BK_GROW_SLOTS; i++) {
                uint16_t s = bk_load_u16le(bk + 2 * i);
                unsigned len;
                if (s == 0) {
                    ended = 1;
                    continue;
                }
                if (ended)
                    return *reason = "bucket not packed (an entry after an empty slot)",
                           BK_ERR_FORMAT;
                len = bk_grow_len(s);
                if (len == 0)
                    return *reason = "entry with no fingerprint bit", BK_ERR_FORMAT;
                if (len + d < 15u + fl)
                    return *reason = "entry shallower than the floor", BK_ERR_FORMAT;
                entries++;
            }
        }
    }
    if (entries + ns != count)
        return *reason = "count disagrees with the entries", BK_ERR_FORMAT;
    return BK_OK;
}

void bk_grow_init_state(uint8_t *buf, uint32_t q0, uint32_t q1, double max_load,
                        uint64_t capacity, double error_rate, uint64_t seed, int keyed,
                        uint64_t key_check)
{
    bk_format_init_header(buf, BK_KIND_GROWABLE, BK_GROW_HEADER_LEN, BK_GROW_PARAMS_LEN,
                          bk_grow_payload_len(q0, q1), seed, keyed, key_check);
    memset(buf + BK_OFF_PARAMS, 0, BK_GROW_PARAMS_LEN);
    bk_grow_init_params(buf + BK_OFF_PARAMS, q0, q1, max_load);
    bk_store_u64le(buf + BK_OFF_PARAMS + BK_GROW_P_CAPACITY, capacity);
    bk_store_f64le(buf + BK_OFF_PARAMS + BK_GROW_P_ERROR_RATE, error_rate);
}

void bk_grow_attach_state(bk_grow *g, uint8_t *buf)
{
    bk_grow_attach(g, buf + BK_OFF_PARAMS, buf + bk_load_u32le(buf + BK_OFF_HEADER_LEN));
}

/* After the prologue (params_len, header_len, capacity, stored error rate:
 * bk_format_check_kind). */
bk_rc bk_grow_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                       int checks, const char **reason)
{
    return bk_grow_check(params, h->params_len, payload, h->payload_len,
                         (checks & BK_CHECK_DEEP) != 0, reason);
}

static const bk_kind_param bk_grow_params[] = {
    {"q0", BK_GROW_P_Q0, 4, BK_PARAM_U32},
    {"q1", BK_GROW_P_Q1, 4, BK_PARAM_U32},
    {"floor", BK_GROW_P_FLOOR, 4, BK_PARAM_U32},
    {"count", BK_GROW_P_COUNT, 8, BK_PARAM_U64},
    {"max_load", BK_GROW_P_MAX_LOAD, 8, BK_PARAM_F64},
    {"stash_count", BK_GROW_P_NSTASH, 4, BK_PARAM_U32},
    {"num_buckets", BK_GROW_P_NBUCKETS, 8, BK_PARAM_U64},
    {"stash", BK_GROW_P_STASH, 8 * BK_GROW_STASH, BK_PARAM_BYTES},
    {"capacity", BK_GROW_P_CAPACITY, 8, BK_PARAM_U64},
    {"error_rate", BK_GROW_P_ERROR_RATE, 8, BK_PARAM_F64},
};

/* The state operations (bk_kind.h).  The view is the filter with no
 * resize: an add that needs a doubling answers BK_ERR_CAPACITY (the state
 * never moves), and clear keeps the grown shape (GrowableFilter.clear()
 * goes back to the first one). */
static void bk_grow_ops_attach(void *view, uint8_t *state)
{
    bk_grow *g = (bk_grow *)view;
    bk_grow_attach_state(g, state);
    g->resize = NULL;
    g->ctx = NULL;
}

static int bk_grow_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_grow_contains((const bk_grow *)view, h);
}

static bk_rc bk_grow_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    int added = 0;
    (void)now;
    return count != 1 ? BK_ERR_ARG : bk_grow_add((bk_grow *)view, h, &added);
}

static void bk_grow_ops_clear(void *view, int64_t now)
{
    bk_grow *g = (bk_grow *)view;
    (void)now;
    memset(g->buckets, 0, (size_t)(bk_grow_nbuckets(g) * BK_GROW_BUCKET_BYTES));
    memset(g->params + BK_GROW_P_STASH, 0, 8 * BK_GROW_STASH);
    bk_store_u32le(g->params + BK_GROW_P_NSTASH, 0);
    bk_store_u64le(g->params + BK_GROW_P_COUNT, 0);
    bk_grow_attach(g, g->params, g->buckets); /* the mirrored fields */
}

static double bk_grow_ops_error_rate(const void *view, int64_t now)
{
    (void)now;
    return bk_grow_estimate_fpr((const bk_grow *)view);
}

static void bk_grow_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                      int64_t now, uint8_t *out)
{
    (void)now;
    bk_grow_contains_many((const bk_grow *)view, hs, n, out);
}

static bk_rc bk_grow_ops_add_many(void *view, const uint64_t *hs, size_t n, int64_t now)
{
    uint64_t added = 0;
    (void)now;
    return bk_grow_add_many((bk_grow *)view, hs, n, &added);
}

static const bk_kind_ops bk_grow_ops = {
    .view_size = sizeof(bk_grow),
    .attach = bk_grow_ops_attach,
    .contains = bk_grow_ops_contains,
    .contains_many = bk_grow_ops_contains_many,
    .add = bk_grow_ops_add,
    .add_many = bk_grow_ops_add_many,
    .clear = bk_grow_ops_clear,
    .estimate_error_rate = bk_grow_ops_error_rate,
};

/* No union (an entry keeps one value's bits), no removal; grows (never
 * mapped for writing). */
const bk_kind_desc bk_grow_kind = {
    BK_KIND_GROWABLE, "GrowableFilter", "growable", BK_GROW_PARAMS_LEN, BK_GROW_HEADER_LEN,
    BK_KIND_PARAMS(bk_grow_params),
    8, BK_KIND_CAPACITY_DEFAULT,
    9, BK_KIND_ERROR_RATE_DEFAULT,
    -1, 0,
    BK_TRAIT_KEYED | BK_TRAIT_GROWS,
    bk_grow_validate,
    &bk_grow_ops,
};
