/*
 * bk_counting.c -- the counting Bloom filter (Fan, Cao, Almeida and
 * Broder, "Summary cache: a scalable wide-area web cache sharing
 * protocol", 2000).
 *
 * A classic Bloom filter whose m bits are replaced by m small counters.
 * add() increments the k counters of a key, remove() decrements them, and
 * a key is reported present when all of its k counters are nonzero.  The
 * probe sequence is exactly the classic Bloom filter's (bk_bloom.h:
 * enhanced double hashing from the one 64-bit key hash), so a counting
 * filter answers `in` exactly as a BloomFilter with the same m, k and seed
 * built from the same adds -- bit i of that filter is "counter i is
 * nonzero" -- and so has the same false-positive rate: (1 - e^(-kn/m))^k,
 * 9.59 counters per key at 1%.  That costs counter_bits times the memory
 * of the Bloom filter (4 bits: 4.8 bytes per key at 1%).
 *
 * Counter width and overflow.  Fan et al. show that with the optimal k the
 * probability that any 4-bit counter ever exceeds 15 is below
 * 1.37e-15 * m, which is why 4 bits is the default; 8 and 16 bits serve
 * workloads that add the same key many times (a multiset).  A counter that
 * reaches its maximum SATURATES: it is never incremented past it (no wrap)
 * and never decremented again (its true value is unknown, and decrementing
 * it could make it reach zero while keys that hit it are still present,
 * i.e. create a false negative).  The price is a counter that stays set
 * forever: a little space, never correctness.
 *
 * The blocked layout (layout 1, params +14).  Each probe of the classic
 * layout is its own cache miss once the counters outgrow the caches: k
 * misses per add or query (7 at 1%).  The blocked layout does for counters
 * what BlockedBloomFilter does for bits (Putze, Sanders and Singler,
 * 2007): the counters are cut into 64-byte blocks (one cache line) of
 * cells = 512 / counter_bits counters -- 128 of 4 bits, 64 of 8, 32 of 16
 * -- a key picks one block, mulhi(h, num_blocks), and its k counters in it
 * from the splitmix64 stream of BlockedBloomFilter's layout version 1 (the
 * top log2(cells) bits of each 16-bit lane).  One miss per operation.
 *
 * Its rate is the blocked one with smaller blocks: a block of `cells`
 * counters plays the part of a block of `cells` bits (a counter is
 * nonzero iff some key of the block probed it), so with n keys over B
 * blocks the exact occupancy model of design.py applies with 128 (64, 32)
 * cells instead of 512 bits: FPR = E[(S / cells)^k], S the nonzero
 * counters of the query's block, its load Binomial(n, 1/B).  Smaller
 * blocks mean relatively more uneven loads, so the price in space is
 * larger than the bit-blocked filter's: design.counting_design sizes B and
 * k with that model (fewest blocks, ties to the smaller k).  For n = 10^6,
 * 4-bit counters: 10.85 counters per key at 1% (k = 6; classic 9.59, bit-
 * blocked 9.92), 19.01 at 0.1% (k = 8; classic 14.38), 30.94 at 0.01%
 * (k = 10; classic 19.17): 13%, 32% and 61% more memory than the classic
 * layout, for one miss instead of k.  8-bit counters: 12.14 / 24.00 /
 * 45.48 counters per key; 16-bit: 14.74 / 36.21 / 90.43 (docs/counting.md
 * has the measured rates).  Overflow: the mean count of a counter is
 * k / (counters per key) = 0.55 at 1%, and a block with three times the
 * mean load still gives P(Poisson(1.7) >= 16) ~ 1e-11 per counter;
 * saturation keeps even that from causing a false negative.
 *
 * Invariants.
 *   - With removes restricted to keys that were added, every counter is >=
 *     the number of probes of present keys that hit it, or saturated: no
 *     false negatives.  Removing a key that was never added (a false
 *     positive) breaks this and CAN create false negatives; the Python
 *     docs say so.  remove() of a key with a zero counter (surely absent)
 *     raises KeyError and changes nothing.
 *   - Counter values are in [0, max]; padding counters past m are zero
 *     (checked by the deep validator), so equality and union are exact.
 *   - count(key) = min of its counters >= the number of times the key was
 *     added minus removed (an upper bound, like count-min).
 *   - Union is the counter-wise sum, saturating at max.
 *
 * State (bk_format.c container, kind 3):
 *   params @64  +0 u64 num_counters m   +8 u32 k   +12 u16 counter_bits
 *               +14 u16 layout (0 classic, 1 blocked; +12 was one u32
 *               counter_bits before the blocked layout, so older files
 *               read 0, and older readers refuse a blocked file's
 *               counter_bits 0x10004)   +16 u64 capacity   +24 f64 error_rate   +32 u64 count
 *               (keys held: adds minus successful removes)   +40 u64
 *               distinct (adds that found the key absent, minus removes
 *               that zeroed a counter; = BloomFilter's count for adds only)
 *   payload @128  ceil(m * bits / 8) bytes rounded up to a multiple of 8:
 *               4 bits: counter i is the low nibble of byte i/2 for even
 *               i, the high nibble for odd i; 8 bits: byte i; 16 bits:
 *               little-endian u16 at bytes 2i, 2i+1.  Blocked: the same
 *               counter numbering, counter i in block i / cells; m is a
 *               multiple of cells and the payload exactly m * bits / 8.
 *   (Redis BITFIELD numbers bits MSB first: its u4 #j is OUR counter j^1,
 *   its u8 #j is our counter j, and its u16 #j is our counter j with the
 *   two bytes swapped.)
 *
 * Concurrency: when `atomic` is set (a shared mmap), each counter update is
 * a CAS loop on the byte or 16-bit word that holds it, so no increment is
 * lost.  remove() checks then decrements: two processes removing the same
 * key at once may both pass the check (each counter still never goes
 * below zero or leaves saturation).
 */
#include "bk_counting.h"
#include "bk_kind.h"

#include <math.h>
#include <string.h>

/* How many keys ahead the batch paths prefetch: classic, k lines per key
 * (like the classic Bloom filter, so not far); blocked, one line per key
 * (BK_BLOOM_AHEAD_BLOCKED's distance). */
#define BK_COUNTING_AHEAD 4
#define BK_COUNTING_AHEAD_BLOCKED 16
#define BK_COUNTING_AHEAD_OF(c) \
    ((c)->layout == BK_COUNTING_LAYOUT_BLOCKED ? BK_COUNTING_AHEAD_BLOCKED : BK_COUNTING_AHEAD)

bk_rc bk_counting_shape(uint32_t layout, uint64_t m, uint32_t k, uint32_t bits,
                        uint64_t *payload_len, const char **reason)
{
    uint64_t nbits;
    if (layout > BK_COUNTING_LAYOUT_MAX) {
        *reason = "unsupported counting Bloom layout";
        return BK_ERR_ARG;
    }
    if (m == 0 || m > BK_COUNTING_MAX_COUNTERS) {
        *reason = "num_counters must be in [1, 2**46]";
        return BK_ERR_ARG;
    }
    if (k == 0 || k > BK_COUNTING_MAX_K) {
        *reason = "num_hashes must be in [1, 64]";
        return BK_ERR_ARG;
    }
    if (bits != 4 && bits != 8 && bits != 16) {
        *reason = "counter_bits must be 4, 8 or 16";
        return BK_ERR_ARG;
    }
    if (layout == BK_COUNTING_LAYOUT_BLOCKED) {
        if (k > BK_COUNTING_MAX_K_BLOCKED) {
            *reason = "blocked num_hashes must be in [1, 24]";
            return BK_ERR_ARG;
        }
        if (m % (BK_COUNTING_BLOCK_BYTES * 8u / bits) != 0) {
            *reason = "blocked num_counters must be a multiple of 512 / counter_bits";
            return BK_ERR_ARG;
        }
    }
    /* m <= 2^46 and bits <= 16: no overflow. */
    nbits = m * bits;
    *payload_len = ((nbits + 63) / 64) * 8;
    return BK_OK;
}

void bk_counting_init_state(uint8_t *buf, uint32_t layout, uint64_t m, uint32_t k,
                            uint32_t bits, uint64_t capacity, double error_rate, uint64_t seed,
                            int keyed, uint64_t key_check)
{
    uint64_t payload_len = 0;
    const char *reason = NULL;
    uint8_t *p = buf + BK_OFF_PARAMS;

    (void)bk_counting_shape(layout, m, k, bits, &payload_len, &reason);
    bk_format_init_header(buf, BK_KIND_COUNTING_BLOOM, BK_COUNTING_HEADER_LEN,
                          BK_COUNTING_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u64le(p + BK_COUNTING_P_NUM_COUNTERS, m);
    bk_store_u32le(p + BK_COUNTING_P_NUM_HASHES, k);
    bk_store_u16le(p + BK_COUNTING_P_COUNTER_BITS, (uint16_t)bits);
    bk_store_u16le(p + BK_COUNTING_P_LAYOUT, (uint16_t)layout);
    bk_store_u64le(p + BK_COUNTING_P_CAPACITY, capacity);
    bk_store_f64le(p + BK_COUNTING_P_ERROR_RATE, error_rate);
}

void bk_counting_attach(bk_counting *c, uint8_t *buf)
{
    const uint8_t *p = buf + BK_OFF_PARAMS;
    uint64_t payload_len = 0;
    const char *reason = NULL;
    c->m = bk_load_u64le(p + BK_COUNTING_P_NUM_COUNTERS);
    c->k = bk_load_u32le(p + BK_COUNTING_P_NUM_HASHES);
    c->bits = bk_load_u16le(p + BK_COUNTING_P_COUNTER_BITS);
    c->layout = bk_load_u16le(p + BK_COUNTING_P_LAYOUT);
    c->max = (uint32_t)((1u << c->bits) - 1u);
    c->cells_log2 = 0;
    c->num_blocks = 0;
    if (c->layout == BK_COUNTING_LAYOUT_BLOCKED) {
        c->cells_log2 = c->bits == 4 ? 7u : c->bits == 8 ? 6u : 5u;
        c->num_blocks = c->m >> c->cells_log2;
    }
    (void)bk_counting_shape(c->layout, c->m, c->k, c->bits, &payload_len, &reason);
    c->nbytes = payload_len;
    c->bytes = buf + bk_load_u32le(buf + BK_OFF_HEADER_LEN);
}

bk_rc bk_counting_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                           int checks, const char **reason)
{
    uint64_t m, distinct, payload_len = 0;
    uint32_t k, bits, layout;

    m = bk_load_u64le(params + BK_COUNTING_P_NUM_COUNTERS);
    k = bk_load_u32le(params + BK_COUNTING_P_NUM_HASHES);
    bits = bk_load_u16le(params + BK_COUNTING_P_COUNTER_BITS);
    layout = bk_load_u16le(params + BK_COUNTING_P_LAYOUT);
    distinct = bk_load_u64le(params + BK_COUNTING_P_DISTINCT);
    if (layout > BK_COUNTING_LAYOUT_MAX) {
        /* written by a later bloomkit with a derivation this one lacks */
        *reason = "unsupported counting Bloom layout";
        return BK_ERR_UNSUPPORTED;
    }
    if (bk_counting_shape(layout, m, k, bits, &payload_len, reason) != BK_OK)
        return BK_ERR_FORMAT;
    if (payload_len != h->payload_len) {
        *reason = "payload_len does not match num_counters and counter_bits";
        return BK_ERR_FORMAT;
    }
    if (distinct > m) {
        *reason = "distinct count exceeds num_counters";
        return BK_ERR_FORMAT;
    }
    if (checks & BK_CHECK_DEEP) {
        /* Counters past m (the padding of the last word) must be zero. */
        uint64_t used_bits = m * bits;
        for (uint64_t byte = used_bits / 8; byte < payload_len; byte++) {
            uint8_t v = payload[byte];
            if (byte == used_bits / 8 && (used_bits & 7) != 0)
                v = (uint8_t)(v >> (used_bits & 7));
            if (v != 0) {
                *reason = "counters set past num_counters";
                return BK_ERR_FORMAT;
            }
        }
    }
    return BK_OK;
}

static const bk_kind_param bk_counting_params[] = {
    {"num_counters", BK_COUNTING_P_NUM_COUNTERS, 8, BK_PARAM_U64},
    {"num_hashes", BK_COUNTING_P_NUM_HASHES, 4, BK_PARAM_U32},
    {"counter_bits", BK_COUNTING_P_COUNTER_BITS, 2, BK_PARAM_U16},
    {"layout", BK_COUNTING_P_LAYOUT, 2, BK_PARAM_U16},
    {"capacity", BK_COUNTING_P_CAPACITY, 8, BK_PARAM_U64},
    {"error_rate", BK_COUNTING_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"count", BK_COUNTING_P_COUNT, 8, BK_PARAM_U64},
    {"distinct", BK_COUNTING_P_DISTINCT, 8, BK_PARAM_U64},
};

/* The state operations (bk_kind.h).  A view is the filter and its state:
 * add and remove keep count (adds - removes) and distinct (adds that found
 * the key absent, less removes that zeroed a counter) as the glue does,
 * never below zero. */
typedef struct {
    bk_counting c;
    uint8_t *state;
} bk_counting_view;

static void bk_counting_ops_bump(bk_counting_view *v, size_t off, uint64_t up, uint64_t down)
{
    uint8_t *p = v->state + BK_OFF_PARAMS + off;
    uint64_t n = bk_load_u64le(p) + up;
    bk_store_u64le(p, n > down ? n - down : 0);
}

static void bk_counting_ops_attach(void *view, uint8_t *state)
{
    bk_counting_view *v = (bk_counting_view *)view;
    bk_counting_attach(&v->c, state);
    v->state = state;
}

static int bk_counting_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_counting_contains(&((const bk_counting_view *)view)->c, h);
}

static uint64_t bk_counting_ops_count(const void *view, uint64_t h)
{
    return bk_counting_count(&((const bk_counting_view *)view)->c, h);
}

static bk_rc bk_counting_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    bk_counting_view *v = (bk_counting_view *)view;
    (void)now;
    if (count != 1)
        return BK_ERR_ARG;
    if (bk_counting_add(&v->c, h, 0))
        bk_counting_ops_bump(v, BK_COUNTING_P_DISTINCT, 1, 0);
    bk_counting_ops_bump(v, BK_COUNTING_P_COUNT, 1, 0);
    return BK_OK;
}

static bk_rc bk_counting_ops_remove(void *view, uint64_t h)
{
    bk_counting_view *v = (bk_counting_view *)view;
    int zeroed = 0;
    bk_rc rc = bk_counting_remove(&v->c, h, 0, &zeroed);
    if (rc != BK_OK)
        return rc;
    if (zeroed)
        bk_counting_ops_bump(v, BK_COUNTING_P_DISTINCT, 0, 1);
    bk_counting_ops_bump(v, BK_COUNTING_P_COUNT, 0, 1);
    return BK_OK;
}

static void bk_counting_ops_clear(void *view, int64_t now)
{
    bk_counting_view *v = (bk_counting_view *)view;
    (void)now;
    memset(v->c.bytes, 0, (size_t)v->c.nbytes);
    bk_store_u64le(v->state + BK_OFF_PARAMS + BK_COUNTING_P_COUNT, 0);
    bk_store_u64le(v->state + BK_OFF_PARAMS + BK_COUNTING_P_DISTINCT, 0);
}

static double bk_counting_ops_error_rate(const void *view, int64_t now)
{
    (void)now;
    return bk_counting_estimate_error_rate(&((const bk_counting_view *)view)->c);
}

static void bk_counting_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                          int64_t now, uint8_t *out)
{
    (void)now;
    bk_counting_contains_many(&((const bk_counting_view *)view)->c, hs, n, out);
}

static bk_rc bk_counting_ops_add_many(void *view, const uint64_t *hs, size_t n, int64_t now)
{
    bk_counting_view *v = (bk_counting_view *)view;
    (void)now;
    bk_counting_ops_bump(v, BK_COUNTING_P_DISTINCT, bk_counting_add_many(&v->c, hs, n, 0), 0);
    bk_counting_ops_bump(v, BK_COUNTING_P_COUNT, (uint64_t)n, 0);
    return BK_OK;
}

static const bk_kind_ops bk_counting_ops = {
    .view_size = sizeof(bk_counting_view),
    .attach = bk_counting_ops_attach,
    .contains = bk_counting_ops_contains,
    .contains_many = bk_counting_ops_contains_many,
    .count = bk_counting_ops_count,
    .add = bk_counting_ops_add,
    .add_many = bk_counting_ops_add_many,
    .remove = bk_counting_ops_remove,
    .clear = bk_counting_ops_clear,
    .estimate_error_rate = bk_counting_ops_error_rate,
};

const bk_kind_desc bk_counting_kind = {
    BK_KIND_COUNTING_BLOOM, "CountingBloomFilter", "counting Bloom", BK_COUNTING_PARAMS_LEN,
    BK_COUNTING_HEADER_LEN,
    BK_KIND_PARAMS(bk_counting_params),
    4, BK_KIND_CAPACITY_DEFAULT,
    5, BK_KIND_ERROR_RATE_DEFAULT,
    3, BK_COUNTING_LAYOUT_MAX,
    BK_TRAIT_MERGEABLE | BK_TRAIT_REMOVABLE | BK_TRAIT_COUNTS | BK_TRAIT_SHARED_WRITERS |
        BK_TRAIT_KEYED,
    bk_counting_validate,
    &bk_counting_ops,
};

/* ---- Begin logic for the batch paths ---------------------------------- */

static inline void bk_counting_prefetch(const bk_counting *c, uint64_t h)
{
    if (c->layout == BK_COUNTING_LAYOUT_BLOCKED) {
        bk_prefetch_w(c->bytes + bk_counting_block(c, h) * BK_COUNTING_BLOCK_BYTES);
        return;
    }
    BK_COUNTING_PROBES(c, h, pos, {
        uint64_t byte = c->bits == 4 ? pos >> 1 : pos * (c->bits / 8);
        bk_prefetch_w(c->bytes + byte);
    });
}

uint64_t bk_counting_add_many(bk_counting *c, const uint64_t *hs, size_t n, int atomic)
{
    uint64_t added = 0;
    size_t i, ahead = BK_COUNTING_AHEAD_OF(c);
    for (i = 0; i < n && i < ahead; i++)
        bk_counting_prefetch(c, hs[i]);
    for (i = 0; i < n; i++) {
        if (i + ahead < n)
            bk_counting_prefetch(c, hs[i + ahead]);
        added += (uint64_t)bk_counting_add(c, hs[i], atomic);
    }
    return added;
}

void bk_counting_contains_many(const bk_counting *c, const uint64_t *hs, size_t n, uint8_t *out)
{
    size_t i, ahead = BK_COUNTING_AHEAD_OF(c);
    if (c->layout == BK_COUNTING_LAYOUT_BLOCKED && c->bits == 4 && bk_simd_avx2) {
        /* the default shape: the vector probe, inlined in its own loop */
        bk_simd_counting4_contains_many_avx2(c->bytes, c->num_blocks, c->k, hs, n, out);
        return;
    }
    for (i = 0; i < n && i < ahead; i++)
        bk_counting_prefetch(c, hs[i]);
    for (i = 0; i < n; i++) {
        if (i + ahead < n)
            bk_counting_prefetch(c, hs[i + ahead]);
        out[i] = (uint8_t)bk_counting_contains(c, hs[i]);
    }
}

size_t bk_counting_remove_many(bk_counting *c, const uint64_t *hs, size_t n, int atomic,
                               uint64_t *zeroed)
{
    size_t i, ahead = BK_COUNTING_AHEAD_OF(c);
    for (i = 0; i < n && i < ahead; i++)
        bk_counting_prefetch(c, hs[i]);
    for (i = 0; i < n; i++) {
        int z = 0;
        if (i + ahead < n)
            bk_counting_prefetch(c, hs[i + ahead]);
        if (bk_counting_remove(c, hs[i], atomic, &z) != BK_OK)
            return i;
        *zeroed += (uint64_t)z;
    }
    return n;
}

/* ---- End logic for the batch paths ------------------------------------ */

void bk_counting_union(bk_counting *dst, const bk_counting *src)
{
    uint64_t n = dst->nbytes;
    if (dst->bits == 8) {
        for (uint64_t i = 0; i < n; i++) {
            uint32_t v = (uint32_t)dst->bytes[i] + src->bytes[i];
            dst->bytes[i] = (uint8_t)(v > 255u ? 255u : v);
        }
    } else if (dst->bits == 4) {
        for (uint64_t i = 0; i < n; i++) {
            uint32_t a = dst->bytes[i], b = src->bytes[i];
            uint32_t lo = (a & 15u) + (b & 15u), hi = (a >> 4) + (b >> 4);
            if (lo > 15u)
                lo = 15u;
            if (hi > 15u)
                hi = 15u;
            dst->bytes[i] = (uint8_t)(lo | (hi << 4));
        }
    } else {
        for (uint64_t i = 0; i + 1 < n; i += 2) {
            uint32_t v = (uint32_t)bk_load_u16le(dst->bytes + i) + bk_load_u16le(src->bytes + i);
            bk_store_u16le(dst->bytes + i, (uint16_t)(v > 65535u ? 65535u : v));
        }
    }
}

uint64_t bk_counting_nonzero(const bk_counting *c)
{
    uint64_t z = 0;
    if (c->bits == 8) {
        for (uint64_t i = 0; i < c->nbytes; i++)
            z += c->bytes[i] != 0;
    } else if (c->bits == 4) {
        for (uint64_t i = 0; i < c->nbytes; i++)
            z += (uint64_t)((c->bytes[i] & 15u) != 0) + (uint64_t)((c->bytes[i] >> 4) != 0);
    } else {
        for (uint64_t i = 0; i + 1 < c->nbytes; i += 2)
            z += bk_load_u16le(c->bytes + i) != 0;
    }
    return z; /* padding counters are zero, so this counts only real ones */
}

void bk_counting_to_bits(const bk_counting *c, uint8_t *bloom_payload)
{
    for (uint64_t i = 0; i < c->m; i++)
        if (bk_counting_get(c, i) != 0)
            bloom_payload[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* ---- Begin logic for the estimates ------------------------------------ */

double bk_counting_estimate_count(const bk_counting *c)
{
    double m = (double)c->m, x = (double)bk_counting_nonzero(c), q;
    if (x >= m)
        return INFINITY;
    if (c->layout != BK_COUNTING_LAYOUT_BLOCKED)
        return -m / (double)c->k * log1p(-x / m);
    /* A counter of a block stays zero after one key of that block with
     * probability (1 - 1/cells)^k, so after n keys over B blocks with
     * probability (1 - q/B)^n. */
    q = -expm1((double)c->k * log1p(-1.0 / (double)(1u << c->cells_log2)));
    return log1p(-x / m) / log1p(-q / (double)c->num_blocks);
}

double bk_counting_estimate_error_rate(const bk_counting *c)
{
    uint64_t hist[129];
    uint32_t cells;
    double sum = 0.0;
    if (c->layout != BK_COUNTING_LAYOUT_BLOCKED)
        return pow((double)bk_counting_nonzero(c) / (double)c->m, (double)c->k);
    /* Given the counters, a query picks a block and k independent cells in
     * it: its false-positive probability is the mean over blocks of
     * (nonzero / cells)^k.  One pass, then at most 129 powers. */
    cells = 1u << c->cells_log2;
    memset(hist, 0, sizeof hist);
    for (uint64_t b = 0; b < c->num_blocks; b++) {
        uint32_t nz = 0;
        for (uint32_t i = 0; i < cells; i++)
            nz += bk_counting_get(c, (b << c->cells_log2) + i) != 0;
        hist[nz]++;
    }
    for (uint32_t nz = 1; nz <= cells; nz++)
        if (hist[nz])
            sum += (double)hist[nz] * pow((double)nz / (double)cells, (double)c->k);
    return sum / (double)c->num_blocks;
}

/* ---- End logic for the estimates -------------------------------------- */
