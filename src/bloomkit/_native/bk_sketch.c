/*
 * bk_sketch.c -- the count-min sketch (Cormode and Muthukrishnan, "An
 * improved data stream summary: the count-min sketch and its applications",
 * J. Algorithms 55, 2005): its state, its updates and estimates, the
 * add-then-estimate batches TopK (bk_topk.c) runs on it, and its kind
 * descriptor.  The TinyLFU frequency sketch, the other kind of
 * bk_sketch.h, is its part bk_sketch_tlfu.c.
 *
 * ---- Count-min sketch (kind 7) -------------------------------------------
 *
 * d rows of w counters.  A key increments one counter per row; its estimate
 * is the minimum of those d counters.  Counters only grow, and every
 * occurrence of a key lands in each of its counters, so the estimate is
 * never below the true count (while no counter saturated).  With
 * w = ceil(e / eps) and d = ceil(ln(1 / delta)) the paper's bound is
 * P[estimate > truth + eps N] <= delta, N the total count: each row's
 * excess has expectation <= N / w = eps N / e, Markov gives 1/e per row,
 * and the d rows are (pairwise) independent.  eps = 0.001, delta = 0.01
 * gives w = 2719, d = 5: 54 KiB of 32-bit counters; measured on a
 * Zipf(1.1) stream of 10^6 events over 10^5 keys, the share of keys off by
 * more than eps N is 0 (tests/test_sketch.py, R5) -- Markov is loose.
 *
 * Conservative update (Estan and Varghese, 2002): raise each of the key's
 * counters only up to (current estimate + count).  The estimate stays an
 * upper bound and over-counting drops, but the sketch is no longer linear:
 * the sum of two conservative sketches is still an upper bound, but not the
 * sketch of the concatenated stream.
 *
 * Positions: ONE 64-bit key hash h (bk_keys.h) per key; the flat counter
 * index of row i is i * w + c_i.  How c_i derives from h is recorded in the
 * state (params +20, "row hashing"), because it changed (issue #16.5):
 *
 *   1 (MIXED, every new sketch)  c_i = mulhi(mix64(h + (i + 1) G), w),
 *       G = 0x9E3779B97F4A7C15: row i is the i-th output of a splitmix64
 *       stream seeded with h, each a bijective full-avalanche mix of h.
 *   0 (DOUBLE, files written before)  c_i = mulhi(x_i, w), enhanced double
 *       hashing x0 = h, y0 = mix64(h), x_{i+1} = x_i + y_i, y_{i+1} = y_i + i.
 *
 * Why the change.  Double hashing keeps a Bloom filter's false-positive
 * rate (Kirsch and Mitzenmacher), which averages over keys, but a
 * count-min tail needs the d rows of one PAIR of keys to collide
 * independently.  With double hashing x_i(a) - x_i(b) = dh + i dy (mod
 * 2^64, the i-only terms cancel): a pair with small dh and small dy
 * collides in EVERY row, probability ~ 1/(d w^2) instead of w^-d.  An
 * absent key that meets a heavy hitter so is overestimated by its whole
 * count.  Measured (Zipf(1.1) over 10^5 keys, 10^6 events, eps = 0.01:
 * w = 272, 10^7 absent keys, seeds 1-3, tests/test_sketch.py): estimates
 * above 5 eps N at depth 5: 7, 47, 27 with DOUBLE (max 13.6 eps N, the top
 * key's whole count), 0 with MIXED (max 1.3 eps N); at depth 14: 0, 14, 0
 * with DOUBLE (max 6.4 eps N), 0 with MIXED (max 0.3 eps N).  Independent
 * rows bound it by (1/(5e))^d per key (Markov per row), 1e-16 at d = 14.
 * With MIXED, the rows of two keys with distinct h are distinct outputs of
 * the mixer, so a pair collides in all d rows with probability about w^-d
 * (plus 2^-64 for equal h, as for every structure here); a 128-bit hash
 * fed to the same double hashing would not help (the progression in i
 * stays linear).  The cost
 * is d mix64 calls per key instead of d additions, small next to the d
 * cache misses of the counters.
 *
 * Saturation (RELIABILITY R6): a counter that would pass its maximum
 * (2^32-1 or 2^64-1) stays at the maximum; nothing wraps, nothing ever
 * decreases.  `total` is a saturating u64.  A merge either refuses
 * (default: it scans first and changes nothing if a sum would pass the
 * maximum; Python raises OverflowError) or, on request, clamps each sum at
 * the maximum.
 *
 * State (bk_format.c container, kind 7):
 *   params @64  +0 u64 width  +8 u32 depth  +12 u32 counter_bits (32|64)
 *               +16 u32 options (bit0 conservative; other bits 0)
 *               +20 u32 row hashing (0 DOUBLE, 1 MIXED; was "reserved, 0"
 *               in format 1.0)  +24 u64 total
 *   payload @128  depth * width counters, row-major, u32 LE or u64 LE:
 *                 counter (i, c) at byte (i * width + c) * counter_bits/8.
 *                 Exactly that many bytes (no padding).
 *
 * Concurrency: with `atomic` set, increments are relaxed compare-and-swap
 * loops, so concurrent writers (a shared mmap, a batch without the GIL)
 * lose no count.  Conservative update is a read-then-raise and can lose an
 * increment under concurrency; the glue therefore runs conservative
 * updates with plain atomic adds when shared (documented in docs/sketch.md).
 * On big-endian hosts the atomic path degrades to plain stores.
 */
#include "bk_sketch.h"
#include "bk_kind.h"

#include "bk_atomic.h"

/* ---- Begin logic for the count-min sketch ----------------------------- */

bk_rc bk_sketch_cms_shape(uint64_t width, uint32_t depth, uint32_t counter_bits, uint64_t *payload_len,
                   const char **reason)
{
    uint64_t cells, bytes;
    if (width < 1 || width > BK_CMS_MAX_WIDTH) {
        *reason = "width must be in [1, 2**32]";
        return BK_ERR_ARG;
    }
    if (depth < 1 || depth > BK_CMS_MAX_DEPTH) {
        *reason = "depth must be in [1, 64]";
        return BK_ERR_ARG;
    }
    if (counter_bits != 32 && counter_bits != 64) {
        *reason = "counter_bits must be 32 or 64";
        return BK_ERR_ARG;
    }
    if (bk_mul_overflow(width, depth, &cells) || bk_mul_overflow(cells, counter_bits / 8, &bytes) ||
        bytes > BK_CMS_MAX_PAYLOAD) {
        *reason = "width * depth * counter bytes exceeds 2**40 bytes";
        return BK_ERR_ARG;
    }
    *payload_len = bytes;
    return BK_OK;
}

void bk_sketch_cms_init_state(uint8_t *buf, uint64_t width, uint32_t depth, uint32_t counter_bits,
                       int conservative, uint32_t rows, uint64_t seed, int keyed,
                       uint64_t key_check)
{
    uint64_t payload_len = 0;
    const char *reason;
    uint8_t *p = buf + BK_OFF_PARAMS;
    (void)bk_sketch_cms_shape(width, depth, counter_bits, &payload_len, &reason);
    bk_format_init_header(buf, BK_KIND_COUNT_MIN, BK_CMS_HEADER_LEN,
                          BK_CMS_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u64le(p + BK_CMS_P_WIDTH, width);
    bk_store_u32le(p + BK_CMS_P_DEPTH, depth);
    bk_store_u32le(p + BK_CMS_P_COUNTER_BITS, counter_bits);
    bk_store_u32le(p + BK_CMS_P_OPTIONS, conservative ? BK_CMS_OPT_CONSERVATIVE : 0);
    bk_store_u32le(p + BK_CMS_P_ROW_HASH, rows);
    bk_store_u64le(p + BK_CMS_P_TOTAL, 0);
}

void bk_sketch_cms_attach(bk_cms *c, uint8_t *buf)
{
    const uint8_t *p = buf + BK_OFF_PARAMS;
    c->counters = buf + bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    c->width = bk_load_u64le(p + BK_CMS_P_WIDTH);
    c->depth = bk_load_u32le(p + BK_CMS_P_DEPTH);
    c->bytes = bk_load_u32le(p + BK_CMS_P_COUNTER_BITS) / 8;
    c->conservative = (bk_load_u32le(p + BK_CMS_P_OPTIONS) & BK_CMS_OPT_CONSERVATIVE) != 0;
    c->rows = bk_load_u32le(p + BK_CMS_P_ROW_HASH);
    c->max = c->bytes == 4 ? UINT32_MAX : UINT64_MAX;
}

bk_rc bk_sketch_cms_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                      int checks, const char **reason)
{
    uint64_t width, payload_len = 0;
    uint32_t depth, bits, opts;
    (void)payload;
    (void)checks;
    width = bk_load_u64le(params + BK_CMS_P_WIDTH);
    depth = bk_load_u32le(params + BK_CMS_P_DEPTH);
    bits = bk_load_u32le(params + BK_CMS_P_COUNTER_BITS);
    opts = bk_load_u32le(params + BK_CMS_P_OPTIONS);
    if (bk_sketch_cms_shape(width, depth, bits, &payload_len, reason) != BK_OK)
        return BK_ERR_FORMAT;
    if (payload_len != h->payload_len) {
        *reason = "payload_len does not match width * depth * counter bytes";
        return BK_ERR_FORMAT;
    }
    if (opts & ~BK_CMS_OPTS_KNOWN) {
        *reason = "unknown count-min option bits";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u32le(params + BK_CMS_P_ROW_HASH) > BK_CMS_ROWS_LATEST) {
        *reason = "unknown count-min row hashing (this bloomkit knows 0 and 1)";
        return BK_ERR_UNSUPPORTED;
    }
    /* Every counter value and every total is a valid state (the total may
     * be below a counter after saturation or a saturating merge), so there
     * is no deep invariant to scan for. */
    return BK_OK;
}

/* splitmix64's increment (2^64 / golden ratio, odd): row i mixes h + (i+1) G. */
#define BK_CMS_ROW_STEP 0x9E3779B97F4A7C15ULL

void bk_sketch_cms_positions(const bk_cms *c, uint64_t h, uint64_t *out)
{
    if (BK_LIKELY(c->rows == BK_CMS_ROWS_MIXED)) {
        uint64_t x = h;
        for (uint32_t i = 0; i < c->depth; i++) {
            x += BK_CMS_ROW_STEP;
            out[i] = (uint64_t)i * c->width + bk_mulhi64(bk_mix64(x), c->width);
        }
        return;
    }
    {
        uint64_t x = h, y = bk_mix64(h); /* BK_CMS_ROWS_DOUBLE: files before #16.5 */
        for (uint32_t i = 0; i < c->depth; i++) {
            out[i] = (uint64_t)i * c->width + bk_mulhi64(x, c->width);
            x += y;
            y += i;
        }
    }
}

BK_INLINE uint64_t bk_sketch_cms_get(const bk_cms *c, uint64_t idx)
{
    const uint8_t *p = c->counters + idx * c->bytes;
    return c->bytes == 4 ? bk_load_u32le(p) : bk_load_u64le(p);
}

BK_INLINE void bk_sketch_cms_set(bk_cms *c, uint64_t idx, uint64_t v)
{
    uint8_t *p = c->counters + idx * c->bytes;
    if (c->bytes == 4)
        bk_store_u32le(p, (uint32_t)v);
    else
        bk_store_u64le(p, v);
}

/* new = min(old + add, max) and raise-to (conservative) as atomic loops. */
#if !BK_BIG_ENDIAN && BK_HAS_ATOMICS
#define BK_CMS_HAVE_ATOMIC 1
static void bk_sketch_cms_atomic_add(bk_cms *c, uint64_t idx, uint64_t add)
{
    if (c->bytes == 4) {
        uint32_t *p = (uint32_t *)(void *)(c->counters + idx * 4);
        uint32_t old = bk_atomic_load32(p), nv;
        do {
            uint64_t s = bk_sat_add64(old, add);
            nv = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
            if (nv == old)
                return;
        } while (!bk_atomic_cas32(p, &old, nv));
    } else {
        uint64_t *p = (uint64_t *)(void *)(c->counters + idx * 8);
        uint64_t old = bk_atomic_load64(p), nv;
        do {
            nv = bk_sat_add64(old, add);
            if (nv == old)
                return;
        } while (!bk_atomic_cas64(p, &old, nv));
    }
}
#else
#define BK_CMS_HAVE_ATOMIC 0
#endif

void bk_sketch_cms_add(bk_cms *c, uint64_t h, uint64_t count, int atomic)
{
    uint64_t pos[BK_CMS_MAX_DEPTH];
    if (count == 0)
        return;
    bk_sketch_cms_positions(c, h, pos);
#if BK_CMS_HAVE_ATOMIC
    if (atomic) {
        /* Conservative update is not atomic as a whole: under concurrency
         * fall back to plain (atomic) increments, still an upper bound. */
        for (uint32_t i = 0; i < c->depth; i++)
            bk_sketch_cms_atomic_add(c, pos[i], count);
        return;
    }
#else
    (void)atomic;
#endif
    if (c->conservative) {
        uint64_t est = UINT64_MAX, target;
        for (uint32_t i = 0; i < c->depth; i++) {
            uint64_t v = bk_sketch_cms_get(c, pos[i]);
            if (v < est)
                est = v;
        }
        target = bk_sat_add64(est, count);
        if (target > c->max)
            target = c->max;
        for (uint32_t i = 0; i < c->depth; i++)
            if (bk_sketch_cms_get(c, pos[i]) < target)
                bk_sketch_cms_set(c, pos[i], target);
        return;
    }
    for (uint32_t i = 0; i < c->depth; i++) {
        uint64_t v = bk_sat_add64(bk_sketch_cms_get(c, pos[i]), count);
        bk_sketch_cms_set(c, pos[i], v > c->max ? c->max : v);
    }
}

uint64_t bk_sketch_cms_estimate(const bk_cms *c, uint64_t h)
{
    uint64_t pos[BK_CMS_MAX_DEPTH], est = UINT64_MAX;
    bk_sketch_cms_positions(c, h, pos);
    for (uint32_t i = 0; i < c->depth; i++) {
        uint64_t v = bk_sketch_cms_get(c, pos[i]);
        if (v < est)
            est = v;
    }
    return est;
}

/* ---- Begin logic for add-then-estimate (TopK, bk_topk.c) -------------- */

/* The plain update of one key whose positions are known: each counter
 * grows by count (saturating) and the estimate is the least new value,
 * which is what bk_cms_estimate reads after bk_cms_add. */
BK_INLINE uint64_t bk_sketch_cms_add_estimate_plain(bk_cms *c, const uint64_t *pos, uint64_t count)
{
    uint64_t est = UINT64_MAX;
    if (c->bytes == 4) {
        for (uint32_t i = 0; i < c->depth; i++) {
            uint8_t *p = c->counters + pos[i] * 4;
            uint64_t v = (uint64_t)bk_load_u32le(p) + count;
            if (v > UINT32_MAX || v < count)
                v = UINT32_MAX;
            bk_store_u32le(p, (uint32_t)v);
            if (v < est)
                est = v;
        }
        return est;
    }
    for (uint32_t i = 0; i < c->depth; i++) {
        uint8_t *p = c->counters + pos[i] * 8;
        uint64_t v = bk_sat_add64(bk_load_u64le(p), count);
        bk_store_u64le(p, v);
        if (v < est)
            est = v;
    }
    return est;
}

uint64_t bk_sketch_cms_add_estimate(bk_cms *c, uint64_t h, uint64_t count, int atomic)
{
    uint64_t pos[BK_CMS_MAX_DEPTH];
    if (atomic || c->conservative || count == 0) {
        bk_sketch_cms_add(c, h, count, atomic);
        return bk_sketch_cms_estimate(c, h);
    }
    bk_sketch_cms_positions(c, h, pos);
    return bk_sketch_cms_add_estimate_plain(c, pos, count);
}

/* Keys ahead whose counters are prefetched: a power of two.  Counters of a
 * default TopK sketch (eps 1e-4, delta 1e-3: 7 rows of 27183 u32, 761 KB)
 * sit in L2 or L3 at random; 8 keys ahead keeps 56 lines in flight,
 * about what the core tracks. */
#define BK_CMS_AHEAD 8u

/* The same loop for the default shape (independent rows, u32 counters),
 * with the row arithmetic inline and the ring holding counter addresses:
 * callgrind counted 362 instructions a key for the general loop (166 of
 * them in the out-of-line bk_sketch_cms_positions) at depth 7, and 266 for this
 * one (84 of them the seven mix64).  The rows are the cost, not the
 * misses: TopK.update of 10^6 Zipf events took 47 ms at depth 7 (761 KB
 * of counters), 42 ms at depth 7 with a 76 KB sketch, 29 ms at depth 2
 * (thread CPU time, loaded 2-vCPU EPYC guest, 512 KiB L2 per CPU). */
BK_INLINE void bk_sketch_cms_add_estimate_mixed32_d(bk_cms *c, const uint64_t *hs,
                                                  const uint32_t *counts, size_t n,
                                                  uint64_t *est, const uint32_t d)
{
    /* Key j gains counts[j], or 1 when counts is NULL (inlined into both
     * callers, so the count-1 loop keeps its constant); d == c->depth,
     * a constant for the usual depths (bk_sketch_cms_add_estimate_mixed32). */
    uint8_t *ring[BK_CMS_AHEAD][BK_CMS_MAX_DEPTH];
    const uint64_t w = c->width;
    size_t j;
    for (j = 0; j < n + BK_CMS_AHEAD; j++) {
        if (j >= BK_CMS_AHEAD) {
            /* Key j - AHEAD: its lines were asked for AHEAD keys ago. */
            uint8_t **pos = ring[(j - BK_CMS_AHEAD) % BK_CMS_AHEAD];
            uint64_t add = counts != NULL ? counts[j - BK_CMS_AHEAD] : 1;
            uint32_t m = UINT32_MAX;
            for (uint32_t i = 0; i < d; i++) {
                /* add < 2^32: v >> 32 is 1 exactly when the sum passed
                 * UINT32_MAX, and then saturates it (no branch). */
                uint64_t v = (uint64_t)bk_load_u32le(pos[i]) + add;
                uint32_t v32 = (uint32_t)v | (uint32_t)(0 - (v >> 32));
                bk_store_u32le(pos[i], v32);
                m = v32 < m ? v32 : m;
            }
            est[j - BK_CMS_AHEAD] = m;
        }
        if (j < n) {
            uint8_t **pos = ring[j % BK_CMS_AHEAD];
            uint64_t x = hs[j];
            uint8_t *row = c->counters;
            for (uint32_t i = 0; i < d; i++, row += w * 4) {
                x += BK_CMS_ROW_STEP;
                pos[i] = row + bk_mulhi64(bk_mix64(x), w) * 4;
                bk_prefetch_w(pos[i]);
            }
        }
    }
}

/* The loop above with the depth a constant for the usual depths
 * (from_error's ceil(ln(1/delta)): 7 for the default 1e-3), so that the
 * compiler unrolls both row loops.  Callgrind, TopK.update of 10^6
 * Zipf(1.0) events (405,367 distinct keys a chunk summed): 287
 * instructions a distinct key with the row loops rolled at depth 7, 228
 * unrolled. */
BK_INLINE void bk_sketch_cms_add_estimate_mixed32(bk_cms *c, const uint64_t *hs,
                                                const uint32_t *counts, size_t n, uint64_t *est)
{
    switch (c->depth) {
    case 4:
        bk_sketch_cms_add_estimate_mixed32_d(c, hs, counts, n, est, 4);
        break;
    case 5:
        bk_sketch_cms_add_estimate_mixed32_d(c, hs, counts, n, est, 5);
        break;
    case 7:
        bk_sketch_cms_add_estimate_mixed32_d(c, hs, counts, n, est, 7);
        break;
    default:
        bk_sketch_cms_add_estimate_mixed32_d(c, hs, counts, n, est, c->depth);
        break;
    }
}

void bk_sketch_cms_add_estimate_many(bk_cms *c, const uint64_t *hs, size_t n, int atomic,
                              uint64_t *est)
{
    uint64_t ring[BK_CMS_AHEAD][BK_CMS_MAX_DEPTH];
    size_t j;
    if (atomic || c->conservative) {
        for (j = 0; j < n; j++)
            est[j] = bk_sketch_cms_add_estimate(c, hs[j], 1, atomic);
        return;
    }
    if (c->rows == BK_CMS_ROWS_MIXED && c->bytes == 4) {
        bk_sketch_cms_add_estimate_mixed32(c, hs, NULL, n, est);
        return;
    }
    /* Positions of key j live in ring[j % AHEAD], computed AHEAD keys
     * early with their lines prefetched; keys are still updated strictly
     * in order, so the estimates equal the one-by-one ones. */
    for (j = 0; j < n && j < BK_CMS_AHEAD; j++) {
        bk_sketch_cms_positions(c, hs[j], ring[j]);
        for (uint32_t i = 0; i < c->depth; i++)
            bk_prefetch_w(c->counters + ring[j][i] * c->bytes);
    }
    for (j = 0; j < n; j++) {
        uint64_t *pos = ring[j % BK_CMS_AHEAD];
        est[j] = bk_sketch_cms_add_estimate_plain(c, pos, 1);
        if (j + BK_CMS_AHEAD < n) {
            bk_sketch_cms_positions(c, hs[j + BK_CMS_AHEAD], pos);
            for (uint32_t i = 0; i < c->depth; i++)
                bk_prefetch_w(c->counters + pos[i] * c->bytes);
        }
    }
}

/* Key j of hs[0..n) gains counts[j] (TopK.update's aggregated chunks,
 * py_topk.c): the counters after the call are those of n calls of
 * bk_sketch_cms_add(c, hs[j], counts[j], atomic), which for a plain sketch
 * are those of sum(counts) single adds in any order (saturating addition
 * commutes).  est[j] is key j's estimate right after its own add.  The
 * default shape prefetches AHEAD keys early as the loop above does. */
void bk_sketch_cms_add_estimate_counts(bk_cms *c, const uint64_t *hs, const uint32_t *counts,
                                       size_t n, int atomic, uint64_t *est)
{
    if (atomic || c->conservative || c->rows != BK_CMS_ROWS_MIXED || c->bytes != 4) {
        for (size_t j = 0; j < n; j++)
            est[j] = bk_sketch_cms_add_estimate(c, hs[j], counts[j], atomic);
        return;
    }
    bk_sketch_cms_add_estimate_mixed32(c, hs, counts, n, est);
}

/* ---- End logic for add-then-estimate ---------------------------------- */

bk_rc bk_sketch_cms_merge(bk_cms *dst, const bk_cms *src, int saturate)
{
    uint64_t n = dst->width * dst->depth;
    if (!saturate) {
        for (uint64_t i = 0; i < n; i++)
            if (bk_sketch_cms_get(src, i) > dst->max - bk_sketch_cms_get(dst, i))
                return BK_ERR_CAPACITY;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = bk_sat_add64(bk_sketch_cms_get(dst, i), bk_sketch_cms_get(src, i));
        bk_sketch_cms_set(dst, i, v > dst->max ? dst->max : v);
    }
    return BK_OK;
}

/* ---- End logic for the count-min sketch ------------------------------- */

/* ---- The kind descriptors (bk_kind.h) ----------------------------------- */

static const bk_kind_param bk_sketch_cms_params[] = {
    {"width", BK_CMS_P_WIDTH, 8, BK_PARAM_U64},
    {"depth", BK_CMS_P_DEPTH, 4, BK_PARAM_U32},
    {"counter_bits", BK_CMS_P_COUNTER_BITS, 4, BK_PARAM_U32},
    {"options", BK_CMS_P_OPTIONS, 4, BK_PARAM_U32},
    {"row_hash", BK_CMS_P_ROW_HASH, 4, BK_PARAM_U32},
    {"total", BK_CMS_P_TOTAL, 8, BK_PARAM_U64},
};

/* Sized by (epsilon, delta): no capacity, no error rate in its header. */
/* The count-min state operations (bk_kind.h).  A view is the sketch and
 * its state, whose total (the sum of counts added, saturating) an add
 * keeps as the glue's add does. */
typedef struct {
    bk_cms c;
    uint8_t *state;
} bk_cms_view;

static void bk_sketch_cms_ops_attach(void *view, uint8_t *state)
{
    bk_cms_view *v = (bk_cms_view *)view;
    bk_sketch_cms_attach(&v->c, state);
    v->state = state;
}

static uint64_t bk_sketch_cms_ops_count(const void *view, uint64_t h)
{
    return bk_sketch_cms_estimate(&((const bk_cms_view *)view)->c, h);
}

static int bk_sketch_cms_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_sketch_cms_ops_count(view, h) > 0;
}

static bk_rc bk_sketch_cms_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    bk_cms_view *v = (bk_cms_view *)view;
    uint8_t *tp = v->state + BK_OFF_PARAMS + BK_CMS_P_TOTAL;
    (void)now;
    bk_sketch_cms_add(&v->c, h, count, 0);
    bk_store_u64le(tp, bk_sat_add64(bk_load_u64le(tp), count));
    return BK_OK;
}

static void bk_sketch_cms_ops_clear(void *view, int64_t now)
{
    bk_cms_view *v = (bk_cms_view *)view;
    (void)now;
    memset(v->c.counters, 0, (size_t)(v->c.width * v->c.depth * v->c.bytes));
    bk_store_u64le(v->state + BK_OFF_PARAMS + BK_CMS_P_TOTAL, 0);
}

/* The batch of the glue's add_many (TopK's too), in chunks of estimates
 * it discards: a count of 1 each. */
static bk_rc bk_sketch_cms_ops_add_many(void *view, const uint64_t *hs, size_t n, int64_t now)
{
    bk_cms_view *v = (bk_cms_view *)view;
    uint8_t *tp = v->state + BK_OFF_PARAMS + BK_CMS_P_TOTAL;
    uint64_t est[64];
    (void)now;
    for (size_t i = 0; i < n; i += 64)
        bk_sketch_cms_add_estimate_many(&v->c, hs + i, n - i < 64 ? n - i : 64, 0, est);
    bk_store_u64le(tp, bk_sat_add64(bk_load_u64le(tp), (uint64_t)n));
    return BK_OK;
}

static const bk_kind_ops bk_sketch_cms_ops = {
    .view_size = sizeof(bk_cms_view),
    .attach = bk_sketch_cms_ops_attach,
    .contains = bk_sketch_cms_ops_contains,
    .count = bk_sketch_cms_ops_count,
    .add = bk_sketch_cms_ops_add,
    .add_many = bk_sketch_cms_ops_add_many,
    .clear = bk_sketch_cms_ops_clear,
};

const bk_kind_desc bk_sketch_cms_kind = {
    BK_KIND_COUNT_MIN, "CountMinSketch", "count-min", BK_CMS_PARAMS_LEN, BK_CMS_HEADER_LEN,
    BK_KIND_PARAMS(bk_sketch_cms_params),
    -1, 0, NULL,
    -1, BK_KIND_NO_ERROR_RATE,
    4, BK_CMS_ROWS_LATEST,
    BK_TRAIT_MERGEABLE | BK_TRAIT_COUNTS | BK_TRAIT_SHARED_WRITERS | BK_TRAIT_KEYED,
    bk_sketch_cms_validate,
    &bk_sketch_cms_ops,
};
