/*
 * bk_sliding.h -- the age-partitioned Bloom filter (core): membership over
 * a sliding window of the last `capacity` adds, or of the last `window`
 * seconds.  Shtul, Baquero and Almeida, "Age-Partitioned Bloom Filters"
 * (2020); the essay and the validator are in bk_sliding.c, the rate model
 * and the sizing in bk_sliding_model.c, the model and guarantees in
 * docs/sliding.md.  The per-key probes are inline here (the glue calls
 * them once per `x in f`).
 *
 * THE ALGORITHM (stable: RedisSlidingBloomFilter.to_local() relies on it;
 * a change needs a new layout_version and the old derivation kept).
 *
 *   S = k + l slices of m bits each, m a multiple of 512.  The slices form
 *   a ring indexed by PHYSICAL position p in [0, S).  g is the generation
 *   counter (shifts since creation); the youngest slice (logical age 0) is
 *   physical r = g mod S (the ring position), and the slice of logical age
 *   a is physical (g - a) mod S, i.e. (r + S - a) mod S.
 *
 *   A key's 64-bit hash h (the project's one key hash, bk_keys.h) gives
 *   its bit in physical slice p:
 *       pos(h, p) = mulhi(mix64(h + (p + 1) * 0x9E3779B97F4A7C15), m)
 *   (mix64 = bk_mix64, mulhi = bk_mulhi64: (a * b) >> 64).  The bit is
 *   bit (pos % 64) of the little-endian u64 word pos / 64 of slice p.  A
 *   key's bit in a slice depends on the slice's physical index only, so it
 *   stays put as the slice ages.
 *
 *   add(h):  (time mode: first apply the time shifts, below)
 *            if c >= G: shift (time mode: an EARLY shift, counted)
 *            set pos(h, p) in the k youngest slices, p = (g - i) mod S,
 *            i = 0..k-1; if at least one of these k bits was 0, c += 1 and
 *            inserted += 1.
 *            add() reports whether the key was absent (query before the
 *            insert).  A key is always re-inserted: a repeat refreshes it.
 *   shift:   g += 1; the new youngest slice r = g mod S (it was the
 *            oldest, age S - 1) is cleared; its birth record is set
 *            (inserted, and the time below); c = 0.
 *   query(h): present iff some k CONSECUTIVE logical ages a, a+1, ...,
 *            a+k-1 (0 <= a <= l) all have the key's bit set.
 *
 *   Count mode (window_us == 0).  G = ceil(capacity / l).  A key is
 *   reported present while at most l*G adds followed it (l*G >= capacity).
 *   After (l+1)*G its run is broken (its oldest slice cleared) but its
 *   other bits remain, so it is still reported with a chance of about
 *   f^(j+1) after (l+1+j)*G adds (f ~ 1/2, a full slice's fill); once
 *   (l+k)*G adds followed it every one of its bits was cleared and it is
 *   reported at the base rate only: the forget bound is (l+k)*G.
 *
 *   Time mode (window_us >= 1).  Times are integer microseconds since the
 *   epoch (Python: floor(clock() * 10^6); Redis: TIME's seconds * 10^6 +
 *   microseconds).  D = ceil(window_us / l), the generation duration.
 *   Before an add or a query at time now: if now >= start + D, there are
 *   s = (now - start) / D (integer division) pending time shifts.  An add
 *   applies them: min(s, S) slices are cleared as by s shifts (the j-th
 *   new youngest gets birth time start + j*D), g += s, start += s * D,
 *   c = 0.  A query does not write: it scans as if the s shifts had
 *   happened (effective generation g + s, ages 0..s-1 empty; s >= S:
 *   nothing is present).  If now < start (a clock going back) s = 0.  An
 *   early shift (c >= G at an add) sets start = now.  A key added at time t
 *   is present at every time before t + l*D >= t + window (unless early
 *   shifts happened); from t + (l+1)*D it fades as above, and from
 *   t + (l+k)*D it is reported at the base rate only.
 *
 * STATE (bk_format.c container, kind 11 = BK_KIND_SLIDING_BLOOM):
 *
 *   params @64 (104 bytes, header_len 192):
 *   +----+-----+---------------------------------------------------------+
 *   | +0 | u32 | k: slices per key, 1..BK_SLIDING_MAX_K                  |
 *   | +4 | u32 | l: extra slices (window generations), 1..MAX_L          |
 *   | +8 | u64 | m: bits per slice, multiple of 512, >= 512              |
 *   |+16 | u64 | capacity (design), 1..2^48                              |
 *   |+24 | f64 | error_rate (design), in (0, 1)                          |
 *   |+32 | u64 | G: generation length, == ceil(capacity / l)             |
 *   |+40 | u64 | g: generation counter, <= 2^62 (saturates)              |
 *   |+48 | u32 | r: ring position, == g mod (k + l)                      |
 *   |+52 | u32 | mode: 0 count, 1 time (== window_us != 0)               |
 *   |+56 | u64 | c: insertions in generation g that set a bit, <= G      |
 *   |+64 | u64 | inserted: such insertions since creation                |
 *   |+72 | u64 | window_us: 0 (count mode) or >= 1                       |
 *   |+80 | i64 | start_us: time generation g started (0 in count mode)   |
 *   |+88 | u64 | early_shifts: shifts forced by c >= G in time mode      |
 *   |+96 | u32 | layout_version: 0 (sliced, above) or 1 (blocked, below)  |
 *   |+100| u32 | 0                                                       |
 *   +----+-----+---------------------------------------------------------+
 *   payload @192:
 *     births: S records of 16 bytes, record p = u64 inserted-at-birth,
 *             i64 time-at-birth (us; 0 in count mode) of physical slice p
 *             (when it last became the youngest); padded with zeros to a
 *             multiple of 64 bytes (BK_SLIDING_BIRTHS_LEN(S))
 *     slices: S slices of m / 8 bytes, physical order, slice p at
 *             births_len + p * m / 8; u64 little-endian words.
 *   All fields little-endian.  payload_len = births_len + S * m / 8.
 *
 * LAYOUT 1, "blocked" (bk_sliding_blocked.c; issue #32): every slice's bit
 * of a key in one 128-byte block (two adjacent cache lines), so a query or
 * an add touches one block instead of one line per probed slice.  Same
 * params, births, ring, shifts and time arithmetic; only where a key's bit
 * of slice p lives changes:
 *   k + l <= 32; m = 32 * B (B blocks, m a multiple of 32); a block is 32
 *   LANES of 32 bits (u32 little-endian, lane p at byte 4p of the block);
 *   lane p of every block together is physical slice p (its bit i is bit
 *   i % 32 of lane p of block i / 32); lanes S..31 stay zero.
 *       block(h)  = mulhi(h, B)
 *       w         = mix64(h + 0x9E3779B97F4A7C15)
 *       x_p       = w mod 2^32 (p < 16) or w >> 32 (p >= 16)
 *       pos(h, p) = ((x_p * M[p]) mod 2^32) >> 27
 *   with M[p] = (mix64(p + 1) mod 2^32) | 1 (bk_sliding_lane_mul: a
 *   multiply-shift position per lane, eight lanes a vector multiply).  The key's
 *   bit of slice p is bit pos(h, p) of lane p of block(h): bit
 *   block(h) * 32 + pos(h, p) of the slice.  payload_len = births_len + 4 m (B blocks of 128 bytes).
 *   Sizing: bk_sliding_blocked.c (the worst-moment rate with the blocks'
 *   shared load, by a fixed-seed Monte Carlo over Poisson block loads).
 */
#ifndef BK_SLIDING_H
#define BK_SLIDING_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"
#include "bk_hash.h"

#define BK_SLIDING_P_K 0
#define BK_SLIDING_P_L 4
#define BK_SLIDING_P_SLICE_BITS 8
#define BK_SLIDING_P_CAPACITY 16
#define BK_SLIDING_P_ERROR_RATE 24
#define BK_SLIDING_P_GEN_LENGTH 32
#define BK_SLIDING_P_GENERATION 40
#define BK_SLIDING_P_RING 48
#define BK_SLIDING_P_MODE 52
#define BK_SLIDING_P_COUNT 56
#define BK_SLIDING_P_INSERTED 64
#define BK_SLIDING_P_WINDOW_US 72
#define BK_SLIDING_P_START_US 80
#define BK_SLIDING_P_EARLY_SHIFTS 88
#define BK_SLIDING_P_LAYOUT 96
#define BK_SLIDING_P_RESERVED 100
#define BK_SLIDING_PARAMS_LEN 104
#define BK_SLIDING_HEADER_LEN 192 /* 64 fixed + 104 params, rounded to 64 */

#define BK_SLIDING_LAYOUT_SLICED 0u
#define BK_SLIDING_LAYOUT_BLOCKED 1u
#define BK_SLIDING_LANES 32u        /* blocked: lanes (slices) in a block */
#define BK_SLIDING_LANE_BITS 32u    /* blocked: bits of a lane */
#define BK_SLIDING_BLOCK_WORDS 16u  /* blocked: u64 words in a 128-byte block */

#define BK_SLIDING_MODE_COUNT 0u
#define BK_SLIDING_MODE_TIME 1u

#define BK_SLIDING_MAX_K 48u             /* probes per key; sizing uses <= 30 */
#define BK_SLIDING_MAX_L 256u            /* generations in the window */
#define BK_SLIDING_MAX_SLICES (BK_SLIDING_MAX_K + BK_SLIDING_MAX_L)
#define BK_SLIDING_SLICE_ALIGN 512u      /* slice bits are a multiple: 64-byte slices */
#define BK_SLIDING_MAX_BITS (1ULL << 46) /* all slices together, as BK_BLOOM_MAX_BITS */
#define BK_SLIDING_MAX_GENERATION (1ULL << 62) /* g saturates here (shift_by) */
#define BK_SLIDING_GAMMA 0x9E3779B97F4A7C15ULL
#define BK_SLIDING_BIRTH_LEN 16u
#define BK_SLIDING_MAX_WINDOW_US (1LL << 62)
#define BK_SLIDING_MAX_TIME_US (1LL << 62)   /* |start|, |birth| in microseconds */
/* Bytes of the births area for S slices: 16 S rounded up to 64. */
#define BK_SLIDING_BIRTHS_LEN(S) ((((uint64_t)(S) * BK_SLIDING_BIRTH_LEN) + 63u) & ~(uint64_t)63u)

/* View of a state buffer: params and payload in place (memory, mmap). */
typedef struct {
    uint8_t *params;   /* buf + 64 */
    uint8_t *births;   /* payload: S birth records */
    uint64_t *slices;  /* S * words_per_slice u64 LE words */
    uint64_t m;        /* bits per slice */
    uint64_t words;    /* sliced: words per slice, m / 64; blocked: 16 a block */
    uint64_t blocks;   /* blocked: B = m / 32 (sliced: 0) */
    uint32_t k, l, S;
    uint32_t layout;   /* BK_SLIDING_LAYOUT_* */
} bk_sliding;

/* Payload bytes for (k, l, m), overflow-checked; BK_ERR_ARG with *reason
 * when a value is out of range. */
bk_rc bk_sliding_shape(uint32_t k, uint32_t l, uint64_t m, uint64_t *payload_len,
                       const char **reason);
/* The same for a layout (0 sliced, 1 blocked). */
bk_rc bk_sliding_shape_v(uint32_t k, uint32_t l, uint64_t m, uint32_t layout,
                         uint64_t *payload_len, const char **reason);

/* Write a fresh state into buf (BK_SLIDING_HEADER_LEN + payload_len bytes,
 * zeroed).  window_us == 0: count mode; else time mode starting at now_us
 * (every slice's birth time is now_us). */
void bk_sliding_init_state(uint8_t *buf, uint32_t k, uint32_t l, uint64_t m,
                           uint64_t capacity, double error_rate, uint64_t window_us,
                           int64_t now_us, uint64_t seed, int keyed, uint64_t key_check);
/* The same for a layout (bk_sliding_init_state writes layout 0). */
void bk_sliding_init_state_v(uint8_t *buf, uint32_t k, uint32_t l, uint64_t m, uint32_t layout,
                             uint64_t capacity, double error_rate, uint64_t window_us,
                             int64_t now_us, uint64_t seed, int keyed, uint64_t key_check);

void bk_sliding_attach(bk_sliding *s, uint8_t *buf);

bk_rc bk_sliding_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                          int checks, const char **reason);

/* ---- Begin logic for the derivation ------------------------------------ */

/* The bit of key hash h in physical slice p (0 <= p < S). */
BK_INLINE uint64_t bk_sliding_pos(uint64_t h, uint32_t p, uint64_t m)
{
    return bk_mulhi64(bk_mix64(h + (uint64_t)(p + 1u) * BK_SLIDING_GAMMA), m);
}

/* Physical slice of logical age a at generation g (0 <= a < S). */
BK_INLINE uint32_t bk_sliding_phys(uint64_t g, uint32_t a, uint32_t S)
{
    uint32_t r = (uint32_t)(g % S);
    return r >= a ? r - a : r + S - a;
}

/* Blocked layout: the key's block (16 words) and its bit in lane p. */
BK_INLINE uint64_t *bk_sliding_block(const bk_sliding *s, uint64_t h)
{
    return s->slices + bk_mulhi64(h, s->blocks) * BK_SLIDING_BLOCK_WORDS;
}

/* Lane multipliers: M[p] = (low 32 bits of mix64(p + 1)) | 1. */
extern const uint32_t bk_sliding_lane_mul[BK_SLIDING_LANES];

/* The word a key's lane positions come from: mix64(h + GAMMA). */
BK_INLINE uint64_t bk_sliding_lane_word(uint64_t h)
{
    return bk_mix64(h + BK_SLIDING_GAMMA);
}

/* The key's bit in lane p (0..31), from w = bk_sliding_lane_word(h):
 * multiply-shift of the low (p < 16) or high (p >= 16) 32 bits of w,
 * (x * M[p]) mod 2^32 >> 27 (eight lanes a vector multiply, bk_simd.c). */
BK_INLINE uint32_t bk_sliding_lane_pos_w(uint64_t w, uint32_t p)
{
    uint32_t x = (uint32_t)(p < 16u ? w : w >> 32);
    return (uint32_t)(x * bk_sliding_lane_mul[p]) >> 27;
}

BK_INLINE uint32_t bk_sliding_lane_pos(uint64_t h, uint32_t p)
{
    return bk_sliding_lane_pos_w(bk_sliding_lane_word(h), p);
}

/* Bit of word p / 2 of a block holding the key's bit of lane p. */
BK_INLINE uint32_t bk_sliding_lane_bit(uint64_t h, uint32_t p)
{
    return 32u * (p & 1u) + bk_sliding_lane_pos(h, p);
}

BK_INLINE int bk_sliding_bit(const bk_sliding *s, uint32_t p, uint64_t h)
{
    uint64_t pos;
    if (s->layout == BK_SLIDING_LAYOUT_BLOCKED)
        return (int)((BK_LE64(bk_sliding_block(s, h)[p >> 1]) >> bk_sliding_lane_bit(h, p)) & 1u);
    pos = bk_sliding_pos(h, p, s->m);
    const uint64_t *w = s->slices + (uint64_t)p * s->words + (pos >> 6);
    return (int)((BK_LE64(*w) >> (pos & 63)) & 1u);
}

/* ---- End logic for the derivation -------------------------------------- */

/* The query scan shared by both layouts (bk_sliding.c explains it). */
/* Physical slice of age a for ring position r (0 <= a < S): no division. */
BK_INLINE uint32_t bk_sliding_phys_r(uint32_t r, uint32_t a, uint32_t S)
{
    return r >= a ? r - a : r + S - a;
}

/* The query over ages [skip, S) (skip + k <= S) at ring position r: is
 * there a run of k consecutive ages all holding the key's bit?  HAS(a) is
 * the bit of age a.  Checkpoints: every run of k ages in [skip, S) holds
 * one of the ages skip + k - 1, skip + 2k - 1, ...: probe those, and only
 * around a set checkpoint its neighbours; after an unset age b the next
 * checkpoint is b + k.  Each age is probed at most once. */
#define BK_SLIDING_SCAN(HAS)                                    \
    uint32_t S = s->S, k = s->k, a = skip + k - 1, b;           \
    while (a < S) {                                             \
        uint32_t left = 0, need;                                \
        if (!HAS(a)) {                                          \
            a += k;                                             \
            continue;                                           \
        }                                                       \
        for (b = a; b > skip && left < k - 1; b--) {            \
            if (!HAS(b - 1))                                    \
                break;                                          \
            left++;                                             \
        }                                                       \
        need = k - 1 - left;                                    \
        for (b = a + 1; need > 0; b++, need--) {                \
            if (b >= S)                                         \
                return 0;                                       \
            if (!HAS(b))                                        \
                break;                                          \
        }                                                       \
        if (need == 0)                                          \
            return 1;                                           \
        a = b + k; /* b is unset: a run lies after it */        \
    }                                                           \
    return 0



/* Parameter accessors. */
BK_INLINE uint64_t bk_sliding_generation(const bk_sliding *s)
{
    return bk_load_u64le(s->params + BK_SLIDING_P_GENERATION);
}

/* Pending time shifts at now_us (0 in count mode or when now < start).
 * Saturates at UINT64_MAX / 2 (only "more than S" matters). */
uint64_t bk_sliding_pending(const bk_sliding *s, int64_t now_us);

/* Query at effective generation g + skip with the `skip` youngest ages
 * empty (skip = pending time shifts; 0 in count mode). */
int bk_sliding_contains_at(const bk_sliding *s, uint64_t h, uint64_t g, uint64_t skip);

/* Per-key operations.  now_us is ignored in count mode.  add returns 1 if
 * the key was absent before (query first), 0 if present. */
int bk_sliding_contains(const bk_sliding *s, uint64_t h, int64_t now_us);
int bk_sliding_add(bk_sliding *s, uint64_t h, int64_t now_us);

/* Apply the pending time shifts (an add does it itself). */
void bk_sliding_advance(bk_sliding *s, int64_t now_us);

/* Batches over hash values (no Python; run without the GIL). */
uint64_t bk_sliding_add_many(bk_sliding *s, const uint64_t *hs, size_t n, int64_t now_us);
void bk_sliding_contains_many(const bk_sliding *s, const uint64_t *hs, size_t n,
                              int64_t now_us, uint8_t *out);

/* Clear every slice and birth record; g, c, inserted, early_shifts = 0;
 * time mode restarts at now_us. */
void bk_sliding_clear(bk_sliding *s, int64_t now_us);

/* The physical slice positions of h: out[p] = pos(h, p), p in [0, S). */
void bk_sliding_positions(const bk_sliding *s, uint64_t h, uint64_t *out);

/* Insertions in the guaranteed window at now_us: inserted minus the
 * inserted-at-birth of the slice of (effective) age l; the whole count
 * while fewer than l shifts happened. */
uint64_t bk_sliding_window_count(const bk_sliding *s, int64_t now_us);

/* Time mode: microseconds covered by the guarantee at now_us: now minus
 * the birth time of the slice of (effective) age l (the adds since then
 * are all present).  >= window_us unless early shifts happened. */
int64_t bk_sliding_lookback_us(const bk_sliding *s, int64_t now_us);

/* Bits set in physical slice p. */
uint64_t bk_sliding_popcount(const bk_sliding *s, uint32_t p);

/* The exact false-positive rate of a random absent key given the fill of
 * each slice now: P(some k consecutive ages all hold its bit), the slices
 * taken as independent (dynamic programming over the run length). */
double bk_sliding_estimate_error_rate(const bk_sliding *s, int64_t now_us);

/* Shifts due before an add at now_us (the pending time shifts, then the
 * lazy shift of a full generation). */
void bk_sliding_prepare_add(bk_sliding *s, int64_t now_us);

/* ---- The blocked layout (bk_sliding_blocked.c) ------------------------- */

/* Per-key operations at ring position r (shifts applied by the caller). */
int bk_sliding_blocked_scan(const bk_sliding *s, uint64_t h, uint32_t r, uint32_t skip);
int bk_sliding_blocked_add(bk_sliding *s, uint64_t h, uint32_t r);
uint64_t bk_sliding_blocked_add_many(bk_sliding *s, const uint64_t *hs, size_t n, int64_t now_us);
void bk_sliding_blocked_contains_many(const bk_sliding *s, const uint64_t *hs, size_t n, uint32_t r,
                               uint32_t skip, uint8_t *out);
void bk_sliding_blocked_clear_lane(bk_sliding *s, uint32_t p);
uint64_t bk_sliding_blocked_popcount(const bk_sliding *s, uint32_t p);
/* The exact rate of a random absent key given every block's lanes now:
 * the mean over blocks of the run probability of the lanes' fills. */
double bk_sliding_blocked_estimate(const bk_sliding *s, uint64_t g, uint64_t skip);
/* Deep check: lanes S..31 of every block are zero. */
int bk_sliding_blocked_unused_lanes_zero(const uint64_t *slices, uint64_t blocks, uint32_t S);

/* The blocked model: the worst-moment rate with lam = G / B keys a block
 * a generation (Poisson), by a fixed-seed Monte Carlo over the blocks'
 * loads; *se its standard error. */
double bk_sliding_blocked_model_rate(uint32_t k, uint32_t l, double lam, double *se);
/* The (k, l, lam) of the blocked layout with the fewest bits per window
 * key (1024 / (l lam)) whose model rate plus two standard errors meets
 * the target; BK_ERR_ARG when none does. */
bk_rc bk_sliding_blocked_size(double error_rate, uint32_t *k, uint32_t *l, double *lam,
                       const char **reason);

/* ---- The rate model and sizing (bk_sliding_model.c) -------------------- */

/* P(some k consecutive of the S trials succeed), trial a with
 * probability f[a]; in [0, 1]. */
double bk_sliding_model_run_prob(const double *f, uint32_t S, uint32_t k);

/* The model rate for slices of m bits, generation length G, at the worst
 * moment (c = G): age a holds min(a + 1, k) G keys. */
double bk_sliding_model_rate(uint32_t k, uint32_t l, double m_over_g);

/* The error-rate range the sizing below serves (the kind's descriptor
 * carries it): k <= 30 slices reach about 2^-30 ~ 1e-9; above 0.5 one
 * slice alone meets the target and there is no window left to size. */
#define BK_SLIDING_MIN_ERROR_RATE 1e-9
#define BK_SLIDING_MAX_ERROR_RATE 0.5

/* The (k, l, m/G) that minimise bits per window key for a target rate,
 * searching k in [1, 30], l in [1, max_l]; BK_ERR_ARG when the rate is out
 * of [BK_SLIDING_MIN_ERROR_RATE, BK_SLIDING_MAX_ERROR_RATE]. */
bk_rc bk_sliding_model_size(double error_rate, uint32_t max_l, uint32_t *k, uint32_t *l,
                      double *m_over_g, const char **reason);


#endif /* BK_SLIDING_H */
