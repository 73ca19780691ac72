/*
 * bk_bloom.c -- the classic Bloom filter (Bloom, 1970) and the cache-
 * blocked Bloom filter (Putze, Sanders and Singler, "Cache-, hash- and
 * space-efficient Bloom filters", 2007).
 *
 * Classic: m bits, k probes per key spread over the whole array.  With n
 * keys the false-positive rate is about (1 - e^(-kn/m))^k; the optimum
 * k = (m/n) ln 2 gives 9.59 bits per key at 1% and 14.38 at 0.1%.  Each
 * probe of a large filter is a cache miss, so a query out of cache costs
 * k misses (about 7 at 1%).
 *
 * Blocked: the array is cut into 512-bit blocks (one 64-byte cache line);
 * a key picks one block and sets its k bits inside it.  One miss per
 * query, at the price of a higher false-positive rate for the same space,
 * because block loads are uneven (binomial, nearly Poisson) and so is the
 * fill of blocks with the same load.  design.py sizes it with the exact
 * occupancy model E[(S/512)^k] (S the bits set in the query's block):
 * 9.92 bits per key at 1% (k = 6), 15.55 at 0.1% (k = 9), 22.03 at 0.01%
 * (k = 12) for n = 10^6.  Filters of layout version 0 were sized with the
 * Poisson fill model sum_j Pois(j; n/B) (1 - (1 - 1/512)^(jk))^k, which
 * leaves out the spread of the fill: 9.90, 15.49 and 21.91 bits per key,
 * measured at 1.0068, 1.0256 and 1.0244 times the target (5 seeds of 10^6
 * keys; version 1: 1.0018, 0.9995 and 1.0057, standard errors 0.2-0.7%;
 * docs/math.md section 2.3).  The block count is not rounded to a power of
 * two.
 *
 * Probes (both derived from ONE 64-bit key hash h, see bk_keys.h):
 *   classic  x0 = h, y0 = mix64(h); probe i = mulhi(x_i, m);
 *            x_{i+1} = x_i + y_i, y_{i+1} = y_i + i        (enhanced double
 *            hashing; 64-bit, so correct for m far beyond 2^32)
 *   blocked  block = mulhi(h, num_blocks), then by layout version:
 *     v1     w_j = mix64(h + (j+1) G) (a splitmix64 stream seeded with h,
 *            G = 0x9E3779B97F4A7C15); bit i is the top 9 bits of 16-bit lane
 *            i % 4 of w_{i/4}: (w_{i/4} >> (16 (i % 4) + 7)) & 511.  Every
 *            position has its own hash bits, independent of the others
 *            and of the block (mix64 avalanches all 64 bits of h), which is
 *            what the exact model assumes; one mix64 per 4 probes; the
 *            AVX2 path widens two words' 8 lanes to dwords (vpmovzxwd).
 *     v0     bit i = ((u32)h * salt[i]) >> 23 (multiply-shift with k odd
 *            constants; every file written before v1 existed).  All k
 *            positions are functions of the same 32 bits, so a query
 *            repeats a stored key's whole pattern with probability about
 *            2^-32 per key in its block, which is why design.py refuses
 *            blocked targets below 1e-7; measured at n = 10^6 the rates
 *            match the exact model within one standard error (0.1-0.7%,
 *            1e-2..1e-4): the excess of v0 filters over their target came
 *            from the sizing model.
 *   The version is the u32 at params +12 (reserved, and so 0, before v1).
 *
 * Invariants: bits only go from 0 to 1 (clear() aside), so there are no
 * false negatives; in the classic layout the bits past m in the last word
 * stay zero (checked by the deep validator), so popcounts and equality
 * are exact.
 *
 * State (bk_format.c container, kind 1 classic or 2 blocked):
 *   params @64  +0 u64 num_bits  +8 u32 k  +12 u32 layout_version (blocked
 *               0 or 1; classic 0)  +16 u64 capacity
 *               +24 f64 error_rate  +32 u64 count  +40 u64 0
 *   payload @128  classic: ceil(m/64) u64 LE words; blocked: m/512 blocks
 *                 of 8 u64 LE words; bit i is bit (i%64) of word (i/64).
 *
 * Concurrency: add paths take `atomic`; when set, a word that needs new
 * bits is updated with a relaxed atomic OR, so writers sharing a buffer
 * (mmap "r+" across processes) never lose each other's bits, and a word
 * whose bits are already set is never written, which keeps shared cache
 * lines clean on re-adds.  Within one process the glue serialises writers
 * instead (a batch that runs without the GIL holds the state's batch lock
 * and every other writer waits for it: py_common.h), so everything but a
 * shared mapping ORs bits in with plain stores: a locked OR per word
 * serialises the memory pipeline and cost a numpy batch about half its
 * time.  A shared mapping's large batch also takes plain stores while it
 * holds the file alone (the glue's bkpy_state_hold_file, py_common.h).
 *
 * Speed (see docs/performance.md for the measurements): a per-item query
 * is ~25 ns of interpreter work plus our hash (XXH3, inlined for short
 * keys in bk_keys_fast.h) and one probe; the blocked probe is branch-free
 * and, on AVX2 CPUs, eight bit tests in one vector (bk_simd.c, selected at
 * run time; the scalar code here stays the reference and the fallback).
 * Batches hash a chunk of 1024 keys first (py_common.c), then probe it with
 * a rolling prefetch BK_BLOOM_AHEAD_* keys ahead.  Blocked filters of 16
 * MiB and more take buffer batches in stages of 2^18 keys partitioned by
 * block range first (bk_bloom_add_many_part below; docs/scale.md).
 */
#include "bk_bloom.h"
#include "bk_kind.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const uint32_t bk_bloom_salt[BK_BLOOM_MAX_K_BLOCKED] = {
    0xf49375d5u, 0xe35d0925u, 0x54469c25u, 0x027c79c1u,
    0xa70ecf87u, 0x43275f07u, 0x5b43c0d9u, 0x6b8eb1b9u,
    0xdc3d9d55u, 0x7319f4cdu, 0x80601811u, 0x9cad1c6du,
    0x44ff7c1fu, 0xe77b7de9u, 0x3cbed02fu, 0x5b71c39du,
    0x75a0de43u, 0xc85d8003u, 0xe3f50c51u, 0x3fba642bu,
    0x1ca9b433u, 0xb183a11bu, 0x213ca991u, 0x71fdb227u,
};

/* How far ahead the batch paths prefetch.  Eight to sixteen keys cover the
 * ~100 ns DRAM latency at 5-10 ns of work per key without overflowing the
 * ~10-12 line-fill buffers of current x86 cores (classic prefetches k lines
 * per key, so it looks less far ahead). */
#define BK_BLOOM_AHEAD_BLOCKED 16
#define BK_BLOOM_AHEAD_CLASSIC 4

bk_rc bk_bloom_shape(int blocked, uint64_t num_bits, uint32_t k, uint64_t *payload_len,
                     const char **reason)
{
    if (num_bits == 0 || num_bits > BK_BLOOM_MAX_BITS) {
        *reason = "num_bits must be in [1, 2**46]";
        return BK_ERR_ARG;
    }
    if (blocked) {
        if (num_bits % BK_BLOCK_BITS != 0) {
            *reason = "blocked num_bits must be a multiple of 512";
            return BK_ERR_ARG;
        }
        if (k == 0 || k > BK_BLOOM_MAX_K_BLOCKED) {
            *reason = "blocked num_hashes must be in [1, 24]";
            return BK_ERR_ARG;
        }
        *payload_len = num_bits / 8;
    } else {
        if (k == 0 || k > BK_BLOOM_MAX_K_CLASSIC) {
            *reason = "num_hashes must be in [1, 64]";
            return BK_ERR_ARG;
        }
        *payload_len = ((num_bits + 63) / 64) * 8;
    }
    return BK_OK;
}

void bk_bloom_init_state(uint8_t *buf, int layout, uint64_t num_bits, uint32_t k,
                         uint64_t capacity, double error_rate, uint64_t seed,
                         int keyed, uint64_t key_check)
{
    uint64_t payload_len = 0;
    const char *reason = NULL;
    uint8_t *p = buf + BK_OFF_PARAMS;
    int blocked = layout != BK_BLOOM_LAYOUT_CLASSIC;

    (void)bk_bloom_shape(blocked, num_bits, k, &payload_len, &reason);
    bk_format_init_header(buf, blocked ? BK_KIND_BLOCKED_BLOOM : BK_KIND_BLOOM,
                          BK_BLOOM_HEADER_LEN, BK_BLOOM_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u64le(p + BK_BLOOM_P_NUM_BITS, num_bits);
    bk_store_u32le(p + BK_BLOOM_P_NUM_HASHES, k);
    bk_store_u32le(p + BK_BLOOM_P_LAYOUT_VERSION,
                   layout == BK_BLOOM_LAYOUT_BLOCKED_V1 ? BK_BLOOM_VERSION_STREAM
                                                        : BK_BLOOM_VERSION_SALT);
    bk_store_u64le(p + BK_BLOOM_P_CAPACITY, capacity);
    bk_store_f64le(p + BK_BLOOM_P_ERROR_RATE, error_rate);
    bk_store_u64le(p + BK_BLOOM_P_COUNT, 0);
}

void bk_bloom_positions(const bk_bloom *b, uint64_t h, uint64_t *out)
{
    if (b->blocked) {
        uint64_t base = bk_mulhi64(h, b->num_blocks) * BK_BLOCK_BITS;
        uint32_t pos[BK_BLOOM_MAX_K_BLOCKED];
        bk_bloom_block_positions(b, h, pos);
        for (uint32_t i = 0; i < b->k; i++)
            out[i] = base + pos[i];
    } else {
        uint64_t x = h, y = bk_mix64(h);
        for (uint32_t i = 0; i < b->k; i++) {
            out[i] = bk_mulhi64(x, b->num_bits);
            x += y;
            y += i;
        }
    }
}

void bk_bloom_attach(bk_bloom *b, uint8_t *buf)
{
    const uint8_t *p = buf + BK_OFF_PARAMS;
    uint32_t header_len = bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    b->blocked = bk_load_u16le(buf + BK_OFF_KIND) == BK_KIND_BLOCKED_BLOOM;
    b->num_bits = bk_load_u64le(p + BK_BLOOM_P_NUM_BITS);
    b->k = bk_load_u32le(p + BK_BLOOM_P_NUM_HASHES);
    b->version = b->blocked ? bk_load_u32le(p + BK_BLOOM_P_LAYOUT_VERSION) : 0;
    b->num_blocks = b->blocked ? b->num_bits / BK_BLOCK_BITS : 0;
    b->num_words = b->blocked ? b->num_blocks * BK_BLOCK_WORDS : (b->num_bits + 63) / 64;
    b->words = (uint64_t *)(void *)(buf + header_len);
}

bk_rc bk_bloom_validate(const bk_header *h, const uint8_t *params,
                        const uint8_t *payload, int checks, const char **reason)
{
    int blocked = h->kind == BK_KIND_BLOCKED_BLOOM;
    uint64_t num_bits, count, payload_len = 0;
    uint32_t k;
    bk_rc rc;

    num_bits = bk_load_u64le(params + BK_BLOOM_P_NUM_BITS);
    k = bk_load_u32le(params + BK_BLOOM_P_NUM_HASHES);
    count = bk_load_u64le(params + BK_BLOOM_P_COUNT);
    rc = bk_bloom_shape(blocked, num_bits, k, &payload_len, reason);
    if (rc != BK_OK)
        return BK_ERR_FORMAT;
    if (payload_len != h->payload_len) {
        *reason = "payload_len does not match num_bits";
        return BK_ERR_FORMAT;
    }
    if (count > num_bits) {
        *reason = "count exceeds num_bits";
        return BK_ERR_FORMAT;
    }
    if ((!blocked && bk_load_u32le(params + BK_BLOOM_P_LAYOUT_VERSION) != 0) ||
        bk_load_u64le(params + BK_BLOOM_P_RESERVED1) != 0) {
        *reason = "reserved Bloom parameter is not zero";
        return BK_ERR_FORMAT;
    }
    if (blocked && bk_load_u32le(params + BK_BLOOM_P_LAYOUT_VERSION) > BK_BLOOM_VERSION_MAX) {
        /* written by a later bloomkit with a derivation this one lacks */
        *reason = "unsupported blocked Bloom layout version";
        return BK_ERR_UNSUPPORTED;
    }
    if ((checks & BK_CHECK_DEEP) && !blocked && (num_bits & 63) != 0) {
        uint64_t last = bk_load_u64le(payload + payload_len - 8);
        if (last >> (num_bits & 63)) {
            *reason = "bits set past num_bits";
            return BK_ERR_FORMAT;
        }
    }
    return BK_OK;
}

/* ---- The kind descriptors (bk_kind.h) ----------------------------------- */

static const bk_kind_param bk_bloom_params[] = {
    {"num_bits", BK_BLOOM_P_NUM_BITS, 8, BK_PARAM_U64},
    {"num_hashes", BK_BLOOM_P_NUM_HASHES, 4, BK_PARAM_U32},
    {"layout_version", BK_BLOOM_P_LAYOUT_VERSION, 4, BK_PARAM_U32},
    {"capacity", BK_BLOOM_P_CAPACITY, 8, BK_PARAM_U64},
    {"error_rate", BK_BLOOM_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"count", BK_BLOOM_P_COUNT, 8, BK_PARAM_U64},
};

/* The state operations (bk_kind.h), both layouts: a view is the filter
 * and its state, whose count (adds that found the key absent) an add
 * keeps as the glue's add does. */
typedef struct {
    bk_bloom b;
    uint8_t *state;
} bk_bloom_view;

static void bk_bloom_ops_attach(void *view, uint8_t *state)
{
    bk_bloom_view *v = (bk_bloom_view *)view;
    bk_bloom_attach(&v->b, state);
    v->state = state;
}

static int bk_bloom_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_bloom_contains(&((const bk_bloom_view *)view)->b, h);
}

static bk_rc bk_bloom_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    bk_bloom_view *v = (bk_bloom_view *)view;
    uint8_t *cp = v->state + BK_OFF_PARAMS + BK_BLOOM_P_COUNT;
    (void)now;
    if (count != 1)
        return BK_ERR_ARG;
    if (bk_bloom_add(&v->b, h, 0))
        bk_store_u64le(cp, bk_load_u64le(cp) + 1);
    return BK_OK;
}

static void bk_bloom_ops_clear(void *view, int64_t now)
{
    bk_bloom_view *v = (bk_bloom_view *)view;
    (void)now;
    memset(v->b.words, 0, (size_t)v->b.num_words * 8);
    bk_store_u64le(v->state + BK_OFF_PARAMS + BK_BLOOM_P_COUNT, 0);
}

static double bk_bloom_ops_error_rate(const void *view, int64_t now)
{
    (void)now;
    return bk_bloom_estimate_error_rate(&((const bk_bloom_view *)view)->b);
}

static void bk_bloom_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                       int64_t now, uint8_t *out)
{
    (void)now;
    bk_bloom_contains_many(&((const bk_bloom_view *)view)->b, hs, n, out);
}

static bk_rc bk_bloom_ops_add_many(void *view, const uint64_t *hs, size_t n, int64_t now)
{
    bk_bloom_view *v = (bk_bloom_view *)view;
    uint8_t *cp = v->state + BK_OFF_PARAMS + BK_BLOOM_P_COUNT;
    (void)now;
    bk_store_u64le(cp, bk_load_u64le(cp) + bk_bloom_add_many(&v->b, hs, n, 0));
    return BK_OK;
}

static const bk_kind_ops bk_bloom_ops = {
    .view_size = sizeof(bk_bloom_view),
    .attach = bk_bloom_ops_attach,
    .contains = bk_bloom_ops_contains,
    .contains_many = bk_bloom_ops_contains_many,
    .add = bk_bloom_ops_add,
    .add_many = bk_bloom_ops_add_many,
    .clear = bk_bloom_ops_clear,
    .estimate_error_rate = bk_bloom_ops_error_rate,
};

/* The classic filter keeps 0 at layout_version (its own check above). */
const bk_kind_desc bk_bloom_kind = {
    BK_KIND_BLOOM, "BloomFilter", "Bloom", BK_BLOOM_PARAMS_LEN, BK_BLOOM_HEADER_LEN,
    BK_KIND_PARAMS(bk_bloom_params),
    3, BK_KIND_CAPACITY_DEFAULT,
    4, BK_KIND_ERROR_RATE_DEFAULT,
    -1, 0,
    BK_TRAIT_MERGEABLE | BK_TRAIT_INTERSECTABLE | BK_TRAIT_SHARED_WRITERS | BK_TRAIT_KEYED |
        BK_TRAIT_BITWISE,
    bk_bloom_validate,
    &bk_bloom_ops,
};

/* Blocked: the minimum rate it sizes for is its own (design.py,
 * MIN_BLOCKED_ERROR_RATE: a 512-bit block caps k at 24), but a rate below
 * it still builds (the sizing saturates), so the range is the common one. */
const bk_kind_desc bk_bloom_blocked_kind = {
    BK_KIND_BLOCKED_BLOOM, "BlockedBloomFilter", "blocked Bloom", BK_BLOOM_PARAMS_LEN,
    BK_BLOOM_HEADER_LEN,
    BK_KIND_PARAMS(bk_bloom_params),
    3, BK_KIND_CAPACITY_DEFAULT,
    4, BK_KIND_ERROR_RATE_DEFAULT,
    2, BK_BLOOM_VERSION_MAX,
    BK_TRAIT_MERGEABLE | BK_TRAIT_INTERSECTABLE | BK_TRAIT_SHARED_WRITERS | BK_TRAIT_KEYED |
        BK_TRAIT_BITWISE,
    bk_bloom_validate,
    &bk_bloom_ops,
};

/* ---- Begin logic for the batch paths ---------------------------------- */

/* Classic batches compute a key's k positions once, prefetch their lines,
 * and use them BK_BLOOM_AHEAD_CLASSIC keys later from this ring (slots a
 * power of two above the distance; k <= 64 positions a slot: 4 KiB of
 * stack).  Recomputing the positions for the prefetch, as a first version
 * did, cost ~5 instructions a probe twice. */
#define BK_BLOOM_RING 8

BK_INLINE void bk_bloom_classic_positions(const bk_bloom *b, uint64_t h, uint64_t *pos,
                                              int write)
{
    uint64_t x = h, y = bk_mix64(h), m = b->num_bits;
    for (uint32_t i = 0; i < b->k; i++) {
        uint64_t p = bk_mulhi64(x, m);
        pos[i] = p;
        if (write)
            bk_prefetch_w(&b->words[p >> 6]);
        else
            bk_prefetch_r(&b->words[p >> 6]);
        x += y;
        y += i;
    }
}

/* Private writer: branch-free OR of every probe (a branch on "bit already
 * set" mispredicts for about every other new key). */
BK_INLINE int bk_bloom_classic_add_at(bk_bloom *b, const uint64_t *pos, int atomic)
{
    uint64_t *w = b->words;
    uint32_t k = b->k;
    uint64_t missing = 0;
    if (!atomic) {
        for (uint32_t i = 0; i < k; i++) {
            uint64_t *wp = &w[pos[i] >> 6];
            uint64_t bit = BK_LE64(1ULL << (pos[i] & 63));
            uint64_t old = *wp;
            missing |= ~old & bit;
            *wp = old | bit;
        }
        return missing != 0;
    }
    for (uint32_t i = 0; i < k; i++) {
        uint64_t *wp = &w[pos[i] >> 6];
        uint64_t bit = BK_LE64(1ULL << (pos[i] & 63));
        if (!(*wp & bit)) {
            missing = 1;
            bk_atomic_or64(wp, bit);
        }
    }
    return missing != 0;
}

BK_INLINE int bk_bloom_classic_contains_at(const bk_bloom *b, const uint64_t *pos)
{
    const uint64_t *w = b->words;
    for (uint32_t i = 0; i < b->k; i++)
        if (!(w[pos[i] >> 6] & BK_LE64(1ULL << (pos[i] & 63))))
            return 0;
    return 1;
}

/* The classic batch loops, compiled twice: plain x86-64 (or any CPU) and,
 * where the compiler can, with BMI1/BMI2 (shlx, shrx, andn save ~3 of the
 * ~24 instructions a probe costs), chosen with the AVX2 paths (bk_simd.c
 * checks the CPU for both). */
BK_INLINE uint64_t bk_bloom_classic_add_many_body(bk_bloom *b, const uint64_t *hs, size_t n,
                                                  int atomic)
{
    const size_t ahead = BK_BLOOM_AHEAD_CLASSIC;
    uint64_t ring[BK_BLOOM_RING][BK_BLOOM_MAX_K_CLASSIC];
    uint64_t added = 0;
    for (size_t i = 0; i < n + ahead; i++) {
        if (i < n)
            bk_bloom_classic_positions(b, hs[i], ring[i % BK_BLOOM_RING], 1);
        if (i >= ahead)
            added += (uint64_t)bk_bloom_classic_add_at(b, ring[(i - ahead) % BK_BLOOM_RING],
                                                       atomic);
    }
    return added;
}

BK_INLINE void bk_bloom_classic_contains_many_body(const bk_bloom *b, const uint64_t *hs,
                                                   size_t n, uint8_t *out)
{
    const size_t ahead = BK_BLOOM_AHEAD_CLASSIC;
    uint64_t ring[BK_BLOOM_RING][BK_BLOOM_MAX_K_CLASSIC];
    for (size_t i = 0; i < n + ahead; i++) {
        if (i < n)
            bk_bloom_classic_positions(b, hs[i], ring[i % BK_BLOOM_RING], 0);
        if (i >= ahead)
            out[i - ahead] =
                (uint8_t)bk_bloom_classic_contains_at(b, ring[(i - ahead) % BK_BLOOM_RING]);
    }
}

static uint64_t bk_bloom_classic_add_many_plain(bk_bloom *b, const uint64_t *hs, size_t n,
                                                int atomic)
{
    return bk_bloom_classic_add_many_body(b, hs, n, atomic);
}

static void bk_bloom_classic_contains_many_plain(const bk_bloom *b, const uint64_t *hs, size_t n,
                                                 uint8_t *out)
{
    bk_bloom_classic_contains_many_body(b, hs, n, out);
}

/* The same loops compiled for BMI2 (mulx, shlx), taken with the AVX2 paths
 * (bk_simd_avx2 implies BMI2).  Only where a target attribute can
 * recompile plain C (GCC, clang, clang-cl on x86-64); cl.exe has no such
 * attribute and runs the plain loops (bk_intrin.h, BK_TARGET_ATTRIBUTES). */
#if BK_TARGET_ATTRIBUTES && defined(__x86_64__)
#define BK_BLOOM_CLASSIC_BMI2_OK bk_simd_avx2
BK_TARGET_BMI2 static uint64_t
bk_bloom_classic_add_many_bmi2(bk_bloom *b, const uint64_t *hs, size_t n, int atomic)
{
    return bk_bloom_classic_add_many_body(b, hs, n, atomic);
}

BK_TARGET_BMI2 static void
bk_bloom_classic_contains_many_bmi2(const bk_bloom *b, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_bloom_classic_contains_many_body(b, hs, n, out);
}
#else
#define BK_BLOOM_CLASSIC_BMI2_OK 0
#define bk_bloom_classic_add_many_bmi2 bk_bloom_classic_add_many_plain
#define bk_bloom_classic_contains_many_bmi2 bk_bloom_classic_contains_many_plain
#endif

uint64_t bk_bloom_add_many(bk_bloom *b, const uint64_t *hs, size_t n, int atomic)
{
    uint64_t added = 0;
    size_t i;

    if (b->blocked) {
        const size_t ahead = BK_BLOOM_AHEAD_BLOCKED;
        if (!atomic && bk_simd_avx2)
            return bk_simd_blocked_add_many_avx2(b->words, b->num_blocks, b->k, b->version, hs,
                                                 n);
        for (i = 0; i < n && i < ahead; i++)
            bk_prefetch_w(bk_bloom_block(b, hs[i]));
        for (i = 0; i < n; i++) {
            if (i + ahead < n)
                bk_prefetch_w(bk_bloom_block(b, hs[i + ahead]));
            added += (uint64_t)bk_bloom_blocked_add(b, hs[i], atomic);
        }
    } else {
        added = BK_BLOOM_CLASSIC_BMI2_OK ? bk_bloom_classic_add_many_bmi2(b, hs, n, atomic)
                                         : bk_bloom_classic_add_many_plain(b, hs, n, atomic);
    }
    return added;
}

void bk_bloom_contains_many(const bk_bloom *b, const uint64_t *hs, size_t n, uint8_t *out)
{
    size_t i;

    if (b->blocked) {
        const size_t ahead = BK_BLOOM_AHEAD_BLOCKED;
        if (bk_simd_avx2) {
            bk_simd_blocked_contains_many_avx2(b->words, b->num_blocks, b->k, b->version, hs, n,
                                               out);
            return;
        }
        for (i = 0; i < n && i < ahead; i++)
            bk_prefetch_r(bk_bloom_block(b, hs[i]));
        for (i = 0; i < n; i++) {
            if (i + ahead < n)
                bk_prefetch_r(bk_bloom_block(b, hs[i + ahead]));
            out[i] = (uint8_t)bk_bloom_blocked_contains(b, hs[i]);
        }
    } else if (BK_BLOOM_CLASSIC_BMI2_OK) {
        bk_bloom_classic_contains_many_bmi2(b, hs, n, out);
    } else {
        bk_bloom_classic_contains_many_plain(b, hs, n, out);
    }
}

/* ---- End logic for the batch paths ------------------------------------ */

/* ---- Begin logic for the partitioned batch paths ---------------------- */

int bk_bloom_part_on = 1;

void bk_bloom_part_init(void)
{
    const char *env = getenv("BLOOMKIT_NO_PARTITION");
    bk_bloom_part_on = !(env != NULL && env[0] != '\0' && !(env[0] == '0' && env[1] == '\0'));
}

int bk_bloom_part_wanted(const bk_bloom *b)
{
    return bk_bloom_part_on && b->blocked &&
           b->num_blocks * (uint64_t)(BK_BLOCK_BITS / 8) >= BK_BLOOM_PART_MIN_BYTES;
}

size_t bk_bloom_part_scratch_len(size_t n, int query)
{
    /* u64 hashes, then (queries) u32 source indices and n answer bytes */
    return n * 8 + (query ? n * 4 + n : 0);
}

/* Bucket of a hash: its block index >> shift, where shift makes the
 * buckets span at least 2^BK_BLOOM_PART_SPAN_SHIFT blocks and number at
 * most BK_BLOOM_PART_MAX_BUCKETS (a 1 GiB filter: 4096 buckets of 4096
 * blocks; 16 GiB: 4096 of 65536). */
static uint32_t bk_bloom_part_shift(uint64_t num_blocks)
{
    uint32_t shift = BK_BLOOM_PART_SPAN_SHIFT;
    while (((num_blocks - 1) >> shift) >= BK_BLOOM_PART_MAX_BUCKETS)
        shift++;
    return shift;
}

/* Stable counting sort of hs[0..n) by bucket into dst (and, when idx is
 * not NULL, each hash's source index into idx).  Two passes over hs (8
 * bytes a key, sequential) and one scatter into at most 4096 write streams
 * of a destination of n u64 (2 MiB at the glue's 2^18-key stage: within L3
 * and the second-level TLB). */
static void bk_bloom_partition(const bk_bloom *b, const uint64_t *hs, size_t n, uint64_t *dst,
                               uint32_t *idx)
{
    uint32_t start[BK_BLOOM_PART_MAX_BUCKETS]; /* 16 KiB of stack */
    uint32_t shift = bk_bloom_part_shift(b->num_blocks);
    uint64_t nb = b->num_blocks;
    uint32_t buckets = (uint32_t)((nb - 1) >> shift) + 1, sum = 0;
    size_t i;

    memset(start, 0, buckets * sizeof start[0]);
    for (i = 0; i < n; i++)
        start[bk_mulhi64(hs[i], nb) >> shift]++;
    for (uint32_t j = 0; j < buckets; j++) {
        uint32_t c = start[j];
        start[j] = sum;
        sum += c;
    }
    if (idx == NULL) {
        for (i = 0; i < n; i++)
            dst[start[bk_mulhi64(hs[i], nb) >> shift]++] = hs[i];
    } else {
        for (i = 0; i < n; i++) {
            uint32_t at = start[bk_mulhi64(hs[i], nb) >> shift]++;
            dst[at] = hs[i];
            idx[at] = (uint32_t)i;
        }
    }
}

uint64_t bk_bloom_add_many_part(bk_bloom *b, const uint64_t *hs, size_t n, int atomic,
                                void *scratch)
{
    uint64_t *sorted = (uint64_t *)scratch;
    bk_bloom_partition(b, hs, n, sorted, NULL);
    return bk_bloom_add_many(b, sorted, n, atomic);
}

void bk_bloom_contains_many_part(const bk_bloom *b, const uint64_t *hs, size_t n, uint8_t *out,
                                 void *scratch)
{
    uint64_t *sorted = (uint64_t *)scratch;
    uint32_t *idx = (uint32_t *)(void *)(sorted + n);
    uint8_t *ans = (uint8_t *)(idx + n);
    bk_bloom_partition(b, hs, n, sorted, idx);
    bk_bloom_contains_many(b, sorted, n, ans);
    for (size_t i = 0; i < n; i++)
        out[idx[i]] = ans[i];
}

/* ---- End logic for the partitioned batch paths ------------------------ */



void bk_bloom_union(bk_bloom *dst, const bk_bloom *src, int atomic)
{
    uint64_t n = dst->num_words;
    if (atomic) {
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = src->words[i];
            if ((dst->words[i] & v) != v)
                bk_atomic_or64(&dst->words[i], v);
        }
    } else {
        for (uint64_t i = 0; i < n; i++)
            dst->words[i] |= src->words[i];
    }
}

void bk_bloom_intersection(bk_bloom *dst, const bk_bloom *src)
{
    for (uint64_t i = 0; i < dst->num_words; i++)
        dst->words[i] &= src->words[i];
}

uint64_t bk_bloom_popcount(const bk_bloom *b)
{
    uint64_t c = 0;
    for (uint64_t i = 0; i < b->num_words; i++)
        c += (uint64_t)bk_popcount64(b->words[i]);
    return c;
}

/* ---- Begin logic for the estimates ------------------------------------ */

double bk_bloom_estimate_count(const bk_bloom *b)
{
    double m = (double)b->num_bits, x = (double)bk_bloom_popcount(b);
    double c;
    if (x >= m)
        return INFINITY;
    if (!b->blocked)
        return -m / (double)b->k * log1p(-x / m);
    /* A bit of a block stays clear after one key with probability
     * (1 - 1/512)^k (its k probes are drawn with replacement), so after n
     * keys with probability (1 - c/b)^n; this inverts the expected fill.
     * The Swamidass-Baldi form above reads (k - 1)/1024 low here (1.1% at
     * k = 12).  Same operations as design.blocked_estimate_count. */
    c = -expm1((double)b->k * log1p(-1.0 / (double)BK_BLOCK_BITS));
    return log1p(-x / m) / log1p(-c / (double)b->num_blocks);
}

double bk_bloom_estimate_error_rate(const bk_bloom *b)
{
    uint64_t hist[BK_BLOCK_BITS + 1];
    double sum = 0.0;
    if (!b->blocked)
        return pow((double)bk_bloom_popcount(b) / (double)b->num_bits, (double)b->k);
    /* A query picks a block and k independent positions in it, so given
     * the bits its false-positive probability is the mean of
     * (popcount/512)^k over blocks: exact for version 1, and within the
     * measurement noise for version 0.  The global fill^k reads 1.2x low
     * at 1e-2 and 3.7x low at 1e-4, because the fullest blocks answer most
     * false positives.  One pass over the payload, then 513 powers. */
    memset(hist, 0, sizeof hist);
    for (uint64_t i = 0; i < b->num_blocks; i++) {
        const uint64_t *w = b->words + i * BK_BLOCK_WORDS;
        uint32_t c = 0;
        for (uint32_t j = 0; j < BK_BLOCK_WORDS; j++)
            c += (uint32_t)bk_popcount64(w[j]);
        hist[c]++;
    }
    for (uint32_t c = 1; c <= BK_BLOCK_BITS; c++)
        if (hist[c])
            sum += (double)hist[c] * pow((double)c / (double)BK_BLOCK_BITS, (double)b->k);
    return sum / (double)b->num_blocks;
}

/* ---- End logic for the estimates -------------------------------------- */
