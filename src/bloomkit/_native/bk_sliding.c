/*
 * bk_sliding.c -- the age-partitioned Bloom filter (Shtul, Baquero and
 * Almeida, "Age-Partitioned Bloom Filters", 2020), written from the
 * paper's description: membership over a sliding window of an unbounded
 * stream, with no false negatives inside the window.
 *
 * The structure.  S = k + l bit arrays ("slices") of m bits form a ring.
 * An insertion sets one bit in each of the k youngest slices; every G
 * insertions (a "generation") the ring shifts: the oldest slice is
 * cleared and becomes the youngest.  A key inserted at generation g0
 * occupies ages 0..k-1 then; each shift ages its k bits together, and a
 * query asks whether k CONSECUTIVE ages all hold the key's bit.  The key's
 * run survives l shifts (ages l..l+k-1 are the oldest k) and breaks at the
 * (l+1)-th, when its oldest slice is cleared.  So a key is present while at
 * most l G insertions followed it: with G = ceil(capacity / l) the window
 * covers `capacity`.  Forgetting is gradual: after l + 1 + j shifts the key
 * keeps k - 1 - j bits in the oldest slices, and a window ending there
 * needs j + 1 random bits of younger slices, so it is still reported with
 * a chance of about f^(j+1) (f the fill of a full slice, ~1/2); after l + k
 * shifts all its slices were cleared and only the base rate remains (the
 * forget bound is (l + k) G; at 1e-2, k = 9 and l = 32: 1.28 capacity).  The exact algorithm (the derivation of a key's
 * bit in each slice, the shift rule and the time arithmetic) is written out
 * in bk_sliding.h and docs/sliding.md; RedisSlidingBloomFilter follows it.
 *
 * Why consecutive.  A slice of age a >= k - 1 holds the keys of k
 * generations (those inserted while it was among the k youngest), so each
 * slice is filled like a Bloom filter's k-th part with k G keys; a random
 * absent key matches a slice with probability f_a (its fill) and a window
 * of k consecutive ages with about prod f_a, and there are l + 1 windows.
 * Requiring consecutive ages is what lets a key be "forgotten" without
 * deleting it, and what costs space over one Bloom filter: the rate is a
 * union over l + 1 windows (about (l + 1) 2^-k at half-full slices), so k
 * is about log2((l + 1) / p), and the young slices are emptier than the
 * old ones (age a < k - 1 holds (a + 1) G keys at the worst moment).
 * That rate, exactly, and the search for the k, l and m that meet a target
 * with the fewest bits are the part bk_sliding_model.c (Sizing).
 *
 * Query cost.  A run of k among ages [skip, S) must contain one of the
 * "checkpoint" ages skip + k - 1, skip + 2k - 1, ...: the query probes
 * those, and only around a set checkpoint probes its neighbours; after an
 * unset age b the next checkpoint is b + k.  An absent key costs about
 * 9 probes at 1% (measured on a full filter, k = 9, S = 41: the S / k
 * checkpoints and the neighbours of the set ones, old slices being half
 * full; each a cache miss for a large filter), a present key k + a few.
 *
 * Invariants: a slice's bits only go 0 -> 1 between the shifts that clear
 * it; the ring position is g mod S; c <= G (shifts are lazy: the add that
 * finds c == G shifts first, so a full generation is queried as full);
 * G == ceil(capacity / l); count mode has window_us = start_us =
 * early_shifts = 0.  Writers are exclusive (a shift clears a slice and
 * moves g: not one atomic OR), so mapped files get one writer at a time
 * (bloomkit/_locking.py's WRITERS lock); readers may run beside a writer: a reader
 * that sees an old g scans the same ring with its boundary one slice off,
 * which can add a false positive for a moment, never a false negative.
 *
 * State: the box in bk_sliding.h (kind 11, params 104 bytes at 64,
 * payload at 192: S birth records of 16 bytes padded to 64, then S slices
 * of m / 8 bytes).  The validator checks every field, the derived ones
 * (G, the ring position, the mode) against their definitions and the
 * payload length (overflow-checked); with BK_CHECK_DEEP, the births'
 * padding and that no birth record is ahead of the counters.
 */
#include "bk_sliding.h"
#include "bk_kind.h"

/* ---- Begin logic for the state ---------------------------------------- */

bk_rc bk_sliding_shape(uint32_t k, uint32_t l, uint64_t m, uint64_t *payload_len,
                       const char **reason)
{
    return bk_sliding_shape_v(k, l, m, BK_SLIDING_LAYOUT_SLICED, payload_len, reason);
}

bk_rc bk_sliding_shape_v(uint32_t k, uint32_t l, uint64_t m, uint32_t layout,
                         uint64_t *payload_len, const char **reason)
{
    uint64_t S = (uint64_t)k + l, bits, bytes;
    if (layout == BK_SLIDING_LAYOUT_BLOCKED) {
        if (k == 0 || l == 0 || S > BK_SLIDING_LANES) {
            *reason = "sliding blocked layout: k and l >= 1 with k + l <= 32";
            return BK_ERR_ARG;
        }
        if (m == 0 || m % BK_SLIDING_LANE_BITS != 0) {
            *reason = "sliding blocked layout: slice_bits must be a positive multiple of 32";
            return BK_ERR_ARG;
        }
        if (m > BK_SLIDING_MAX_BITS / BK_SLIDING_LANES) {
            *reason = "sliding filter too large: 32 * slice_bits exceeds 2**46";
            return BK_ERR_ARG;
        }
        *payload_len = BK_SLIDING_BIRTHS_LEN(S) + m * 4u; /* B blocks of 128 bytes */
        return BK_OK;
    }
    if (layout != BK_SLIDING_LAYOUT_SLICED) {
        *reason = "sliding layout_version unknown (this release reads 0 and 1)";
        return BK_ERR_ARG;
    }
    if (k == 0 || k > BK_SLIDING_MAX_K) {
        *reason = "sliding k (slices per key) must be in [1, 48]";
        return BK_ERR_ARG;
    }
    if (l == 0 || l > BK_SLIDING_MAX_L) {
        *reason = "sliding l (window generations) must be in [1, 256]";
        return BK_ERR_ARG;
    }
    if (m == 0 || m % BK_SLIDING_SLICE_ALIGN != 0) {
        *reason = "sliding slice_bits must be a positive multiple of 512";
        return BK_ERR_ARG;
    }
    if (bk_mul_overflow(S, m, &bits) || bits > BK_SLIDING_MAX_BITS) {
        *reason = "sliding filter too large: (k + l) * slice_bits exceeds 2**46";
        return BK_ERR_ARG;
    }
    bytes = bits / 8;
    *payload_len = BK_SLIDING_BIRTHS_LEN(S) + bytes; /* < 2^44: no overflow */
    return BK_OK;
}

void bk_sliding_attach(bk_sliding *s, uint8_t *buf)
{
    uint8_t *params = buf + BK_OFF_PARAMS;
    uint32_t header_len = bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    s->params = params;
    s->k = bk_load_u32le(params + BK_SLIDING_P_K);
    s->l = bk_load_u32le(params + BK_SLIDING_P_L);
    s->S = s->k + s->l;
    s->m = bk_load_u64le(params + BK_SLIDING_P_SLICE_BITS);
    s->layout = bk_load_u32le(params + BK_SLIDING_P_LAYOUT);
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED) {
        s->words = BK_SLIDING_BLOCK_WORDS;
        s->blocks = s->m / BK_SLIDING_LANE_BITS;
    } else {
        s->words = s->m / 64;
        s->blocks = 0;
    }
    s->births = buf + header_len;
    s->slices = (uint64_t *)(void *)(s->births + BK_SLIDING_BIRTHS_LEN(s->S));
}

static void bk_sliding_set_birth(bk_sliding *s, uint32_t p, uint64_t inserted, int64_t t)
{
    bk_store_u64le(s->births + (uint64_t)p * BK_SLIDING_BIRTH_LEN, inserted);
    bk_store_u64le(s->births + (uint64_t)p * BK_SLIDING_BIRTH_LEN + 8, (uint64_t)t);
}

static uint64_t bk_sliding_birth_inserted(const bk_sliding *s, uint32_t p)
{
    return bk_load_u64le(s->births + (uint64_t)p * BK_SLIDING_BIRTH_LEN);
}

static int64_t bk_sliding_birth_us(const bk_sliding *s, uint32_t p)
{
    return (int64_t)bk_load_u64le(s->births + (uint64_t)p * BK_SLIDING_BIRTH_LEN + 8);
}

void bk_sliding_init_state(uint8_t *buf, uint32_t k, uint32_t l, uint64_t m,
                           uint64_t capacity, double error_rate, uint64_t window_us,
                           int64_t now_us, uint64_t seed, int keyed, uint64_t key_check)
{
    bk_sliding_init_state_v(buf, k, l, m, BK_SLIDING_LAYOUT_SLICED, capacity, error_rate,
                            window_us, now_us, seed, keyed, key_check);
}

void bk_sliding_init_state_v(uint8_t *buf, uint32_t k, uint32_t l, uint64_t m, uint32_t layout,
                             uint64_t capacity, double error_rate, uint64_t window_us,
                             int64_t now_us, uint64_t seed, int keyed, uint64_t key_check)
{
    uint64_t payload_len = 0;
    const char *reason = NULL;
    uint8_t *p = buf + BK_OFF_PARAMS;
    bk_sliding s;
    (void)bk_sliding_shape_v(k, l, m, layout, &payload_len, &reason);
    bk_format_init_header(buf, BK_KIND_SLIDING_BLOOM, BK_SLIDING_HEADER_LEN,
                          BK_SLIDING_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u32le(p + BK_SLIDING_P_K, k);
    bk_store_u32le(p + BK_SLIDING_P_L, l);
    bk_store_u64le(p + BK_SLIDING_P_SLICE_BITS, m);
    bk_store_u64le(p + BK_SLIDING_P_CAPACITY, capacity);
    bk_store_f64le(p + BK_SLIDING_P_ERROR_RATE, error_rate);
    bk_store_u64le(p + BK_SLIDING_P_GEN_LENGTH, (capacity + l - 1) / l);
    bk_store_u32le(p + BK_SLIDING_P_MODE,
                   window_us ? BK_SLIDING_MODE_TIME : BK_SLIDING_MODE_COUNT);
    bk_store_u64le(p + BK_SLIDING_P_WINDOW_US, window_us);
    bk_store_u64le(p + BK_SLIDING_P_START_US, window_us ? (uint64_t)now_us : 0);
    bk_store_u32le(p + BK_SLIDING_P_LAYOUT, layout);
    bk_sliding_attach(&s, buf);
    if (window_us)
        for (uint32_t i = 0; i < s.S; i++)
            bk_sliding_set_birth(&s, i, 0, now_us);
}

bk_rc bk_sliding_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                          int checks, const char **reason)
{
    uint32_t k, l, S, mode, layout;
    uint64_t m, capacity, G, g, c, inserted, window_us, early, want = 0;
    int64_t start;

    k = bk_load_u32le(params + BK_SLIDING_P_K);
    l = bk_load_u32le(params + BK_SLIDING_P_L);
    m = bk_load_u64le(params + BK_SLIDING_P_SLICE_BITS);
    layout = bk_load_u32le(params + BK_SLIDING_P_LAYOUT);
    if (layout > BK_SLIDING_LAYOUT_BLOCKED) {
        *reason = "sliding layout_version unknown (this release reads 0 and 1)";
        return BK_ERR_UNSUPPORTED;
    }
    if (bk_sliding_shape_v(k, l, m, layout, &want, reason) != BK_OK)
        return BK_ERR_FORMAT;
    if (want != h->payload_len) {
        *reason = "payload_len does not match k, l and slice_bits";
        return BK_ERR_FORMAT;
    }
    S = k + l;
    capacity = bk_load_u64le(params + BK_SLIDING_P_CAPACITY);
    G = bk_load_u64le(params + BK_SLIDING_P_GEN_LENGTH);
    g = bk_load_u64le(params + BK_SLIDING_P_GENERATION);
    mode = bk_load_u32le(params + BK_SLIDING_P_MODE);
    c = bk_load_u64le(params + BK_SLIDING_P_COUNT);
    inserted = bk_load_u64le(params + BK_SLIDING_P_INSERTED);
    window_us = bk_load_u64le(params + BK_SLIDING_P_WINDOW_US);
    start = (int64_t)bk_load_u64le(params + BK_SLIDING_P_START_US);
    early = bk_load_u64le(params + BK_SLIDING_P_EARLY_SHIFTS);
    if (G != (capacity + l - 1) / l) {
        *reason = "sliding generation_length is not ceil(capacity / l)";
        return BK_ERR_FORMAT;
    }
    if (g > BK_SLIDING_MAX_GENERATION) {
        *reason = "sliding generation counter exceeds 2**62";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u32le(params + BK_SLIDING_P_RING) != (uint32_t)(g % S)) {
        *reason = "sliding ring position is not generation mod (k + l)";
        return BK_ERR_FORMAT;
    }
    if (mode > BK_SLIDING_MODE_TIME || (mode == BK_SLIDING_MODE_TIME) != (window_us != 0)) {
        *reason = "sliding mode must be 0 (count, window 0) or 1 (time, window >= 1)";
        return BK_ERR_FORMAT;
    }
    if (window_us > BK_SLIDING_MAX_WINDOW_US) {
        *reason = "sliding window exceeds 2**62 microseconds";
        return BK_ERR_FORMAT;
    }
    if (mode == BK_SLIDING_MODE_COUNT && (start != 0 || early != 0)) {
        *reason = "sliding count mode has a start time or early shifts";
        return BK_ERR_FORMAT;
    }
    if (start > BK_SLIDING_MAX_TIME_US || start < -BK_SLIDING_MAX_TIME_US) {
        *reason = "sliding start time out of range (|t| < 2**62 microseconds)";
        return BK_ERR_FORMAT;
    }
    if (c > G || c > inserted) {
        *reason = "sliding count exceeds generation_length or inserted";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u32le(params + BK_SLIDING_P_RESERVED) != 0) {
        *reason = "reserved sliding parameter is not zero";
        return BK_ERR_FORMAT;
    }
    if (checks & BK_CHECK_DEEP) {
        uint64_t end = BK_SLIDING_BIRTHS_LEN(S);
        for (uint64_t i = (uint64_t)S * BK_SLIDING_BIRTH_LEN; i < end; i++)
            if (payload[i] != 0) {
                *reason = "sliding births padding is not zero";
                return BK_ERR_FORMAT;
            }
        for (uint32_t i = 0; i < S; i++) {
            const uint8_t *b = payload + (uint64_t)i * BK_SLIDING_BIRTH_LEN;
            int64_t t = (int64_t)bk_load_u64le(b + 8);
            if (bk_load_u64le(b) > inserted) {
                *reason = "sliding birth record ahead of the inserted counter";
                return BK_ERR_FORMAT;
            }
            if (mode == BK_SLIDING_MODE_COUNT ? t != 0
                                              : (t > BK_SLIDING_MAX_TIME_US ||
                                                 t < -BK_SLIDING_MAX_TIME_US)) {
                *reason = "sliding birth time out of range";
                return BK_ERR_FORMAT;
            }
        }
        if (layout == BK_SLIDING_LAYOUT_BLOCKED &&
            !bk_sliding_blocked_unused_lanes_zero((const uint64_t *)(const void *)(payload + end),
                                           m / BK_SLIDING_LANE_BITS, S)) {
            *reason = "sliding blocked layout: an unused lane (k + l .. 31) is not zero";
            return BK_ERR_FORMAT;
        }
    }
    return BK_OK;
}

static const bk_kind_param bk_sliding_params[] = {
    {"num_hashes", BK_SLIDING_P_K, 4, BK_PARAM_U32},
    {"generations", BK_SLIDING_P_L, 4, BK_PARAM_U32},
    {"slice_bits", BK_SLIDING_P_SLICE_BITS, 8, BK_PARAM_U64},
    {"capacity", BK_SLIDING_P_CAPACITY, 8, BK_PARAM_U64},
    {"error_rate", BK_SLIDING_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"generation_length", BK_SLIDING_P_GEN_LENGTH, 8, BK_PARAM_U64},
    {"generation", BK_SLIDING_P_GENERATION, 8, BK_PARAM_U64},
    {"ring", BK_SLIDING_P_RING, 4, BK_PARAM_U32},
    {"mode", BK_SLIDING_P_MODE, 4, BK_PARAM_U32},
    {"count", BK_SLIDING_P_COUNT, 8, BK_PARAM_U64},
    {"inserted", BK_SLIDING_P_INSERTED, 8, BK_PARAM_U64},
    {"window_us", BK_SLIDING_P_WINDOW_US, 8, BK_PARAM_U64},
    {"start_us", BK_SLIDING_P_START_US, 8, BK_PARAM_I64},
    {"early_shifts", BK_SLIDING_P_EARLY_SHIFTS, 8, BK_PARAM_U64},
    {"layout_version", BK_SLIDING_P_LAYOUT, 4, BK_PARAM_U32},
};

/* The state operations (bk_kind.h): every one at the caller's clock;
 * the core keeps count, inserted and the ring in the state, so the view
 * is the filter. */
static void bk_sliding_ops_attach(void *view, uint8_t *state)
{
    bk_sliding_attach((bk_sliding *)view, state);
}

static int bk_sliding_ops_contains(const void *view, uint64_t h, int64_t now)
{
    return bk_sliding_contains((const bk_sliding *)view, h, now);
}

static bk_rc bk_sliding_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    if (count != 1)
        return BK_ERR_ARG;
    (void)bk_sliding_add((bk_sliding *)view, h, now);
    return BK_OK;
}

static void bk_sliding_ops_clear(void *view, int64_t now)
{
    bk_sliding_clear((bk_sliding *)view, now);
}

static double bk_sliding_ops_error_rate(const void *view, int64_t now)
{
    return bk_sliding_estimate_error_rate((const bk_sliding *)view, now);
}

static void bk_sliding_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                         int64_t now, uint8_t *out)
{
    bk_sliding_contains_many((const bk_sliding *)view, hs, n, now, out);
}

static bk_rc bk_sliding_ops_add_many(void *view, const uint64_t *hs, size_t n, int64_t now)
{
    (void)bk_sliding_add_many((bk_sliding *)view, hs, n, now);
    return BK_OK;
}

static const bk_kind_ops bk_sliding_ops = {
    .view_size = sizeof(bk_sliding),
    .attach = bk_sliding_ops_attach,
    .contains = bk_sliding_ops_contains,
    .contains_many = bk_sliding_ops_contains_many,
    .add = bk_sliding_ops_add,
    .add_many = bk_sliding_ops_add_many,
    .clear = bk_sliding_ops_clear,
    .estimate_error_rate = bk_sliding_ops_error_rate,
};

/* Its own error-rate range, [1e-9, 0.5] (bk_sliding.h): the one its
 * sizing (bk_sliding_model_size, bk_sliding_model.c) searches.  Writers are
 * exclusive: an add may shift the ring, which no atomic bit update covers. */
const bk_kind_desc bk_sliding_kind = {
    BK_KIND_SLIDING_BLOOM, "SlidingBloomFilter", "sliding", BK_SLIDING_PARAMS_LEN,
    BK_SLIDING_HEADER_LEN,
    BK_KIND_PARAMS(bk_sliding_params),
    3, BK_KIND_CAPACITY_DEFAULT,
    4, BK_SLIDING_MIN_ERROR_RATE, BK_SLIDING_MAX_ERROR_RATE, 1,
    14, BK_SLIDING_LAYOUT_BLOCKED,
    BK_TRAIT_WINDOW | BK_TRAIT_KEYED,
    bk_sliding_validate,
    &bk_sliding_ops,
};

/* ---- End logic for the state ------------------------------------------ */

/* ---- Begin logic for shifts ------------------------------------------- */

/* Both read the live header (a mapped file's may be rewritten under us,
 * R32): a duration of at least 1 whatever window_us holds. */
static uint64_t bk_sliding_duration(const bk_sliding *s)
{
    uint64_t w = bk_load_u64le(s->params + BK_SLIDING_P_WINDOW_US);
    uint64_t d = w / s->l + (w % s->l != 0); /* ceil(w / l) without overflow */
    return d ? d : 1;
}

static int bk_sliding_timed(const bk_sliding *s)
{
    return bk_load_u64le(s->params + BK_SLIDING_P_WINDOW_US) != 0;
}

uint64_t bk_sliding_pending(const bk_sliding *s, int64_t now_us)
{
    int64_t start;
    if (!bk_sliding_timed(s))
        return 0;
    start = (int64_t)bk_load_u64le(s->params + BK_SLIDING_P_START_US);
    if (now_us <= start)
        return 0;
    /* the true difference fits in u64 whatever the two signed values */
    return ((uint64_t)now_us - (uint64_t)start) / bk_sliding_duration(s);
}

static void bk_sliding_clear_slice(bk_sliding *s, uint32_t p)
{
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED) {
        bk_sliding_blocked_clear_lane(s, p);
        return;
    }
    memset(s->slices + (uint64_t)p * s->words, 0, (size_t)(s->words * 8));
}

/* Move to generation g + n (n >= 1): clear the min(n, S) slices that
 * become the youngest, the j-th (j = n - min(n, S) + 1 .. n) born at
 * birth0 + j * step.  c = 0.
 *
 * The wrap (issue #34 item 11).  The physical slices follow r = g mod S,
 * so g must never wrap modulo 2^64 (2^64 is not a multiple of S: a wrapped
 * g would move the ring and lose the window's keys).  Positions are taken
 * from r and n mod S (no sum can overflow), and g saturates at
 * BK_SLIDING_MAX_GENERATION keeping its residue mod S (the ring, hence
 * every answer, as if it had counted on); the validator refuses a counter
 * above it.  2^62 generations is 146,000 years of 1 us generations: only a
 * crafted file or clock gets near it. */
static void bk_sliding_shift_by(bk_sliding *s, uint64_t n, int64_t birth0, uint64_t step)
{
    uint64_t g = bk_sliding_generation(s);
    uint64_t inserted = bk_load_u64le(s->params + BK_SLIDING_P_INSERTED);
    uint64_t first = n > s->S ? n - s->S + 1 : 1;
    uint32_t r0 = (uint32_t)(g % s->S), r;
    int timed = bk_sliding_timed(s);
    for (uint64_t j = first; j <= n; j++) {
        uint32_t p = (uint32_t)((r0 + j % s->S) % s->S);
        bk_sliding_clear_slice(s, p);
        bk_sliding_set_birth(s, p, inserted,
                             timed ? (int64_t)((uint64_t)birth0 + j * step) : 0);
    }
    r = (uint32_t)((r0 + n % s->S) % s->S);
    if (g > BK_SLIDING_MAX_GENERATION || n > BK_SLIDING_MAX_GENERATION - g) {
        /* saturate: the largest g <= the bound with g mod S == r */
        uint64_t top = BK_SLIDING_MAX_GENERATION;
        uint32_t rt = (uint32_t)(top % s->S);
        g = top - (rt >= r ? rt - r : rt + s->S - r);
    } else {
        g += n;
    }
    bk_store_u64le(s->params + BK_SLIDING_P_GENERATION, g);
    bk_store_u32le(s->params + BK_SLIDING_P_RING, r);
    bk_store_u64le(s->params + BK_SLIDING_P_COUNT, 0);
}

void bk_sliding_advance(bk_sliding *s, int64_t now_us)
{
    uint64_t n = bk_sliding_pending(s, now_us), D;
    int64_t start;
    if (n == 0)
        return;
    D = bk_sliding_duration(s);
    start = (int64_t)bk_load_u64le(s->params + BK_SLIDING_P_START_US);
    bk_sliding_shift_by(s, n, start, D);
    /* n * D <= now - start: no overflow, and start stays <= now */
    bk_store_u64le(s->params + BK_SLIDING_P_START_US, (uint64_t)start + n * D);
}

/* The lazy generation shift at an add that finds the generation full. */
static void bk_sliding_shift_full(bk_sliding *s, int64_t now_us)
{
    if (bk_sliding_timed(s)) {
        bk_sliding_shift_by(s, 1, now_us, 0);
        bk_store_u64le(s->params + BK_SLIDING_P_START_US, (uint64_t)now_us);
        uint64_t e = bk_load_u64le(s->params + BK_SLIDING_P_EARLY_SHIFTS);
        bk_store_u64le(s->params + BK_SLIDING_P_EARLY_SHIFTS, e + (e != UINT64_MAX));
    } else {
        bk_sliding_shift_by(s, 1, 0, 0);
    }
}

/* ---- End logic for shifts --------------------------------------------- */

/* ---- Begin logic for the per-key operations --------------------------- *
 *
 * Speed (issue #18's targets; measured numbers in docs/sliding.md).  At
 * 10^6 keys and 1% (k = 9, l = 32, S = 41 slices of 59 KiB: 2.4 MiB, past
 * the L2 of the machines we measure on) every probe is its own cache line
 * and costs a derivation (a mix64 and a mulhi, ~30 instructions with the
 * address).  A fresh key's add touches k + ~6 lines, an absent key's
 * query ~10 (4 checkpoints and the neighbours of the set ones: old slices
 * are about half full).  What this code does about it:
 *   - the ring position r = g mod S is computed once per key (batches:
 *     once per generation), not once per probe (it was a 64-bit division
 *     per probe: ~10% of the instructions and ~40 cycles of latency each);
 *   - an add inserts first and queries with the k young bits it read
 *     (their values before the insert): the "was absent" answer of the old
 *     query-then-insert without probing the young slices twice (the insert
 *     only writes ages < k, so the older ages are unchanged, and the query
 *     is a function of the bits only: the same answer and, byte for byte,
 *     the same state; tests/test_sliding_state.py);
 *   - an add derives its k young words once (its PLAN), and asks for them
 *     and for its older checkpoints' lines before using any, so those
 *     misses overlap; add_many plans key i + BK_SLIDING_AHEAD while
 *     executing key i (a plan made before a shift is remade: prefetches
 *     are hints);
 *   - queries do not prefetch: measured, the extra derivations cost more
 *     than they saved (the out-of-order core already overlaps the
 *     checkpoint loads across the predicted "unset" branches).
 * Neighbours of a set checkpoint stay dependent misses (which one is
 * needed depends on the bit just read).
 */

/* Keys add_many plans ahead: each asks for ~k + S / k lines (12 at 1%),
 * so 4 keys keep ~50 lines in flight.  BK_SLIDING_RING plans, a power of
 * two above it. */
#define BK_SLIDING_AHEAD 4
#define BK_SLIDING_RING 8

typedef struct {
    uint32_t r;  /* ring position the plan was made for */
    uint64_t *w[BK_SLIDING_MAX_K];
    uint64_t bit[BK_SLIDING_MAX_K];
} bk_sliding_plan;

/* The ring position of generation g: g mod S (one division). */
BK_INLINE uint32_t bk_sliding_ring(const bk_sliding *s, uint64_t g)
{
    return (uint32_t)(g % s->S);
}

BK_INLINE uint64_t *bk_sliding_word(const bk_sliding *s, uint32_t p, uint64_t h, uint64_t *bit)
{
    uint64_t pos = bk_sliding_pos(h, p, s->m);
    *bit = BK_LE64(1ULL << (pos & 63));
    return s->slices + (uint64_t)p * s->words + (pos >> 6);
}

BK_INLINE int bk_sliding_probe(const bk_sliding *s, uint32_t r, uint32_t a, uint64_t h)
{
    uint64_t bit;
    const uint64_t *w = bk_sliding_word(s, bk_sliding_phys_r(r, a, s->S), h, &bit);
    return (*w & bit) != 0;
}

/* A query: every bit read from the slices. */
static int bk_sliding_scan(const bk_sliding *s, uint64_t h, uint32_t r, uint32_t skip)
{
#define BK_SLIDING_HAS_READ(age) bk_sliding_probe(s, r, (age), h)
    BK_SLIDING_SCAN(BK_SLIDING_HAS_READ);
#undef BK_SLIDING_HAS_READ
}

/* An add's query (skip 0): ages below k from `known` (bit a = age a, as
 * before the insert), the older ones read. */
static int bk_sliding_scan_known(const bk_sliding *s, uint64_t h, uint32_t r, uint64_t known)
{
    const uint32_t skip = 0;
#define BK_SLIDING_HAS_KNOWN(age)                                                \
    ((age) < k ? (int)((known >> (age)) & 1u) : bk_sliding_probe(s, r, (age), h))
    BK_SLIDING_SCAN(BK_SLIDING_HAS_KNOWN);
#undef BK_SLIDING_HAS_KNOWN
}

int bk_sliding_contains_at(const bk_sliding *s, uint64_t h, uint64_t g, uint64_t skip)
{
    if (skip + s->k > s->S)
        return 0; /* no k consecutive ages left */
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED)
        return bk_sliding_blocked_scan(s, h, bk_sliding_ring(s, g), (uint32_t)skip);
    return bk_sliding_scan(s, h, bk_sliding_ring(s, g), (uint32_t)skip);
}

int bk_sliding_contains(const bk_sliding *s, uint64_t h, int64_t now_us)
{
    uint64_t skip = bk_sliding_pending(s, now_us);
    if (skip >= s->S)
        return 0;
    return bk_sliding_contains_at(s, h, bk_sliding_generation(s) + skip, skip);
}

/* Plan an add of h at ring position r: derive its k young words and ask
 * for them, then for its older checkpoints' lines (ages 2k - 1, 3k - 1,
 * ...; age k - 1, the first, is a young one). */
BK_INLINE void bk_sliding_plan_add(const bk_sliding *s, uint64_t h, uint32_t r,
                                   bk_sliding_plan *pl)
{
    uint32_t k = s->k, S = s->S;
    uint64_t bit;
    pl->r = r;
    for (uint32_t a = 0; a < k; a++) {
        pl->w[a] = bk_sliding_word(s, bk_sliding_phys_r(r, a, S), h, &pl->bit[a]);
        bk_prefetch_w(pl->w[a]);
    }
    for (uint32_t a = 2 * k - 1; a < S; a += k)
        bk_prefetch_r(bk_sliding_word(s, bk_sliding_phys_r(r, a, S), h, &bit));
}

/* Execute an add's plan (made at the current ring position, shifts
 * applied): set the key's bit in the k youngest slices, count the
 * insertion if one of them was 0, and return 1 if the key was absent
 * before (the query over the bits as they were).  k <= 48: the young bits
 * fit one word. */
static int bk_sliding_add_plan(bk_sliding *s, uint64_t h, const bk_sliding_plan *pl)
{
    uint64_t known = 0;
    uint32_t k = s->k;
    for (uint32_t a = 0; a < k; a++) {
        uint64_t old = *pl->w[a];
        known |= (uint64_t)((old & pl->bit[a]) != 0) << a;
        *pl->w[a] = old | pl->bit[a];
    }
    if (known == (~0ULL >> (64 - k)))
        return 0; /* ages 0..k-1 held it: present, and no bit changed */
    {
        /* c < G here (the caller shifted a full generation); inserted
         * saturates, so c <= inserted survives even a hostile counter */
        uint64_t ins = bk_load_u64le(s->params + BK_SLIDING_P_INSERTED);
        bk_store_u64le(s->params + BK_SLIDING_P_COUNT,
                       bk_load_u64le(s->params + BK_SLIDING_P_COUNT) + 1);
        bk_store_u64le(s->params + BK_SLIDING_P_INSERTED, ins + (ins != UINT64_MAX));
    }
    return !bk_sliding_scan_known(s, h, pl->r, known);
}

/* Shifts due before an add at now_us: the pending time shifts, then the
 * lazy shift of a full generation. */
BK_INLINE void bk_sliding_prepare_i(bk_sliding *s, int64_t now_us)
{
    bk_sliding_advance(s, now_us);
    if (bk_load_u64le(s->params + BK_SLIDING_P_COUNT) >=
        bk_load_u64le(s->params + BK_SLIDING_P_GEN_LENGTH))
        bk_sliding_shift_full(s, now_us);
}

void bk_sliding_prepare_add(bk_sliding *s, int64_t now_us)
{
    bk_sliding_prepare_i(s, now_us);
}

int bk_sliding_add(bk_sliding *s, uint64_t h, int64_t now_us)
{
    bk_sliding_plan pl;
    bk_sliding_prepare_i(s, now_us);
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED)
        return bk_sliding_blocked_add(s, h, bk_sliding_ring(s, bk_sliding_generation(s)));
    bk_sliding_plan_add(s, h, bk_sliding_ring(s, bk_sliding_generation(s)), &pl);
    return bk_sliding_add_plan(s, h, &pl);
}

uint64_t bk_sliding_add_many(bk_sliding *s, const uint64_t *hs, size_t n, int64_t now_us)
{
    bk_sliding_plan ring[BK_SLIDING_RING];
    uint64_t added = 0, g = bk_sliding_generation(s);
    uint32_t r = bk_sliding_ring(s, g);
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED)
        return bk_sliding_blocked_add_many(s, hs, n, now_us);
    for (size_t i = 0; i < n && i < BK_SLIDING_AHEAD; i++)
        bk_sliding_plan_add(s, hs[i], r, &ring[i]);
    for (size_t i = 0; i < n; i++) {
        bk_sliding_plan *pl = &ring[i & (BK_SLIDING_RING - 1)];
        uint64_t g2;
        bk_sliding_prepare_i(s, now_us);
        g2 = bk_sliding_generation(s);
        if (BK_UNLIKELY(g2 != g)) {
            g = g2;
            r = bk_sliding_ring(s, g);
        }
        if (i + BK_SLIDING_AHEAD < n)
            bk_sliding_plan_add(s, hs[i + BK_SLIDING_AHEAD], r,
                                &ring[(i + BK_SLIDING_AHEAD) & (BK_SLIDING_RING - 1)]);
        if (BK_UNLIKELY(pl->r != r)) /* planned before a shift */
            bk_sliding_plan_add(s, hs[i], r, pl);
        added += (uint64_t)bk_sliding_add_plan(s, hs[i], pl);
    }
    return added;
}

void bk_sliding_contains_many(const bk_sliding *s, const uint64_t *hs, size_t n,
                              int64_t now_us, uint8_t *out)
{
    uint64_t skip = bk_sliding_pending(s, now_us), g = bk_sliding_generation(s) + skip;
    uint32_t r;
    if (skip + s->k > s->S) {
        memset(out, 0, n); /* no k consecutive ages left */
        return;
    }
    r = bk_sliding_ring(s, g);
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED) {
        bk_sliding_blocked_contains_many(s, hs, n, r, (uint32_t)skip, out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)bk_sliding_scan(s, hs[i], r, (uint32_t)skip);
}

void bk_sliding_clear(bk_sliding *s, int64_t now_us)
{
    int timed = bk_sliding_timed(s);
    memset(s->slices, 0,
           (size_t)(s->layout == BK_SLIDING_LAYOUT_BLOCKED ? s->m * 4u : s->words * 8 * s->S));
    for (uint32_t p = 0; p < s->S; p++)
        bk_sliding_set_birth(s, p, 0, timed ? now_us : 0);
    bk_store_u64le(s->params + BK_SLIDING_P_GENERATION, 0);
    bk_store_u32le(s->params + BK_SLIDING_P_RING, 0);
    bk_store_u64le(s->params + BK_SLIDING_P_COUNT, 0);
    bk_store_u64le(s->params + BK_SLIDING_P_INSERTED, 0);
    bk_store_u64le(s->params + BK_SLIDING_P_EARLY_SHIFTS, 0);
    bk_store_u64le(s->params + BK_SLIDING_P_START_US, timed ? (uint64_t)now_us : 0);
}

void bk_sliding_positions(const bk_sliding *s, uint64_t h, uint64_t *out)
{
    uint64_t b = s->layout == BK_SLIDING_LAYOUT_BLOCKED ? bk_mulhi64(h, s->blocks) : 0;
    for (uint32_t p = 0; p < s->S; p++)
        out[p] = s->layout == BK_SLIDING_LAYOUT_BLOCKED
                     ? b * BK_SLIDING_LANE_BITS + bk_sliding_lane_pos(h, p)
                     : bk_sliding_pos(h, p, s->m);
}

/* ---- End logic for the per-key operations ----------------------------- */

/* ---- Begin logic for statistics --------------------------------------- */

uint64_t bk_sliding_window_count(const bk_sliding *s, int64_t now_us)
{
    uint64_t skip = bk_sliding_pending(s, now_us), g = bk_sliding_generation(s);
    uint64_t inserted = bk_load_u64le(s->params + BK_SLIDING_P_INSERTED), born;
    if (skip > s->l)
        return 0;
    born = bk_sliding_birth_inserted(s, bk_sliding_phys(g, (uint32_t)(s->l - skip), s->S));
    return inserted >= born ? inserted - born : 0;
}

int64_t bk_sliding_lookback_us(const bk_sliding *s, int64_t now_us)
{
    uint64_t skip = bk_sliding_pending(s, now_us), g = bk_sliding_generation(s);
    int64_t born;
    if (skip > s->l)
        return 0;
    born = bk_sliding_birth_us(s, bk_sliding_phys(g, (uint32_t)(s->l - skip), s->S));
    return now_us > born ? (int64_t)((uint64_t)now_us - (uint64_t)born) : 0;
}

uint64_t bk_sliding_popcount(const bk_sliding *s, uint32_t p)
{
    const uint64_t *w = s->slices + (uint64_t)p * s->words;
    uint64_t n = 0;
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED)
        return bk_sliding_blocked_popcount(s, p);
    for (uint64_t i = 0; i < s->words; i++)
        n += (uint64_t)bk_popcount64(w[i]);
    return n;
}

double bk_sliding_estimate_error_rate(const bk_sliding *s, int64_t now_us)
{
    double f[BK_SLIDING_MAX_SLICES];
    uint64_t skip = bk_sliding_pending(s, now_us), g = bk_sliding_generation(s) + skip;
    if (skip >= s->S)
        return 0.0;
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED)
        return bk_sliding_blocked_estimate(s, g, skip);
    for (uint32_t a = 0; a < s->S; a++)
        f[a] = a < skip ? 0.0
                        : (double)bk_sliding_popcount(s, bk_sliding_phys(g, a, s->S)) /
                              (double)s->m;
    return bk_sliding_model_run_prob(f, s->S, s->k);
}

/* ---- End logic for statistics ----------------------------------------- */
