/*
 * bk_counting.h -- the counting Bloom filter (core).
 *
 * Per-key operations are inline (one call per `x in f` from the CPython
 * glue); bk_counting.c holds the essay, batches, union and the validator.
 */
#ifndef BK_COUNTING_H
#define BK_COUNTING_H

#include "bk_atomic.h"
#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"
#include "bk_hash.h"
#include "bk_simd.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_COUNTING_P_NUM_COUNTERS 0   /* u64 m */
#define BK_COUNTING_P_NUM_HASHES 8     /* u32 k */
#define BK_COUNTING_P_COUNTER_BITS 12  /* u16 4, 8 or 16 */
#define BK_COUNTING_P_LAYOUT 14        /* u16 BK_COUNTING_LAYOUT_* (0 in every older file) */
#define BK_COUNTING_P_CAPACITY 16      /* u64 design capacity n */
#define BK_COUNTING_P_ERROR_RATE 24    /* f64 design error rate p */
#define BK_COUNTING_P_COUNT 32         /* u64 keys held: adds - removes */
#define BK_COUNTING_P_DISTINCT 40      /* u64 adds that found the key absent */
#define BK_COUNTING_PARAMS_LEN 48
#define BK_COUNTING_HEADER_LEN 128

#define BK_COUNTING_MAX_COUNTERS (1ULL << 46)  /* same bound as num_bits of a Bloom filter */
#define BK_COUNTING_MAX_K 64u

/* Layouts (params +14; before the blocked layout existed, +12..16 was one
 * u32 counter_bits, so every older file reads layout 0, and an older
 * bloomkit reading a blocked file sees counter_bits 0x10004 and refuses it
 * with "counter_bits must be 4, 8 or 16"). */
#define BK_COUNTING_LAYOUT_CLASSIC 0u  /* k counters anywhere: the classic Bloom probes */
#define BK_COUNTING_LAYOUT_BLOCKED 1u  /* k counters in one 64-byte block (bk_counting.c) */
#define BK_COUNTING_LAYOUT_MAX 1u

/* Blocked layout: a block is one 64-byte line of 512 / counter_bits
 * counters (128, 64 or 32); k <= 24 (six words of the position stream). */
#define BK_COUNTING_BLOCK_BYTES 64u
#define BK_COUNTING_MAX_K_BLOCKED 24u

typedef struct {
    uint8_t *bytes;     /* payload */
    uint64_t m;         /* counters */
    uint64_t nbytes;    /* payload bytes (a multiple of 8) */
    uint64_t num_blocks; /* blocked: m / cells; classic: 0 */
    uint32_t k;
    uint32_t bits;      /* 4, 8 or 16 */
    uint32_t max;       /* 2^bits - 1: the saturation value */
    uint32_t layout;    /* BK_COUNTING_LAYOUT_* */
    uint32_t cells_log2; /* blocked: log2(512 / bits) = 7, 6 or 5; classic: 0 */
} bk_counting;

/* Payload size for m counters of `bits` bits: ceil(m * bits / 8) rounded
 * up to a multiple of 8 (blocked: m a multiple of 512 / bits, so exactly
 * m * bits / 8).  BK_ERR_ARG (with a reason) for invalid shapes. */
bk_rc bk_counting_shape(uint32_t layout, uint64_t m, uint32_t k, uint32_t bits,
                        uint64_t *payload_len, const char **reason);

/* Fresh header + params in buf (BK_COUNTING_HEADER_LEN + payload_len
 * bytes, payload zeroed by the caller). */
void bk_counting_init_state(uint8_t *buf, uint32_t layout, uint64_t m, uint32_t k,
                            uint32_t bits, uint64_t capacity, double error_rate, uint64_t seed,
                            int keyed, uint64_t key_check);

void bk_counting_attach(bk_counting *c, uint8_t *buf);

bk_rc bk_counting_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                           int checks, const char **reason);

/* ---- Begin logic for counters ----------------------------------------- */

/* Counter i: 4 bits -> byte i/2, low nibble for even i, high nibble for
 * odd i; 8 bits -> byte i; 16 bits -> u16 little-endian at byte 2i. */
BK_INLINE uint32_t bk_counting_get(const bk_counting *c, uint64_t i)
{
    if (c->bits == 4) {
        uint8_t b = c->bytes[i >> 1];
        return (i & 1) ? (uint32_t)(b >> 4) : (uint32_t)(b & 15u);
    }
    if (c->bits == 8)
        return c->bytes[i];
    return bk_load_u16le(c->bytes + 2 * i);
}

/* Add delta (+1 or -1) to counter i unless it is saturated (== max) or
 * the result would leave [0, max].  Atomic mode uses a CAS loop on the
 * byte or the 16-bit word holding the counter, so concurrent writers
 * sharing a buffer never lose each other's updates. */
BK_INLINE void bk_counting_step(bk_counting *c, uint64_t i, int delta, int atomic)
{
#if !BK_HAS_ATOMICS
    atomic = 0; /* no byte CAS (bk_atomic.h): neither GCC/clang nor MSVC */
#endif
    if (c->bits == 16) {
        uint8_t *p = c->bytes + 2 * i;
        if (!atomic) {
            uint32_t v = bk_load_u16le(p);
            if (v == c->max || (delta < 0 && v == 0))
                return;
            bk_store_u16le(p, (uint16_t)(v + (uint32_t)delta));
            return;
        }
#if BK_HAS_ATOMICS
        {
            uint16_t *w = (uint16_t *)(void *)p, old = bk_atomic_load16(w), nw;
            do {
                uint32_t v = (uint16_t)BK_LE16(old);
                if (v == c->max || (delta < 0 && v == 0))
                    return;
                nw = (uint16_t)BK_LE16((uint16_t)(v + (uint32_t)delta));
            } while (!bk_atomic_cas16(w, &old, nw));
            return;
        }
#endif
    }
    {
        uint8_t *p = c->bytes + (c->bits == 4 ? (i >> 1) : i);
        int shift = (c->bits == 4 && (i & 1)) ? 4 : 0;
        uint32_t mask = c->bits == 4 ? 15u : 255u;
        uint8_t old = atomic ? 0 : *p, nb;
#if BK_HAS_ATOMICS
        if (atomic)
            old = bk_atomic_load8(p);
#endif
        for (;;) {
            uint32_t v = ((uint32_t)old >> shift) & mask;
            if (v == c->max || (delta < 0 && v == 0))
                return;
            v += (uint32_t)delta;
            nb = (uint8_t)(((uint32_t)old & ~(mask << shift)) | (v << shift));
            if (!atomic) {
                *p = nb;
                return;
            }
#if BK_HAS_ATOMICS
            if (bk_atomic_cas8(p, &old, nb))
                return;
#else
            *p = nb;
            return;
#endif
        }
    }
}

/* Blocked layout: the key's block is mulhi(h, num_blocks) (high bits of h,
 * as BlockedBloomFilter's), and its k in-block counters come from the
 * splitmix64 stream of h of BlockedBloomFilter's layout version 1: word j
 * is mix64(h + (j + 1) G), and counter i is the top log2(cells) bits of
 * its 16-bit lane i % 4 of word i / 4. */
BK_INLINE uint64_t bk_counting_block(const bk_counting *c, uint64_t h)
{
    return bk_mulhi64(h, c->num_blocks);
}

BK_INLINE uint64_t bk_counting_stream_word(uint64_t h, uint32_t j)
{
    return bk_mix64(h + (uint64_t)(j + 1) * UINT64_C(0x9E3779B97F4A7C15));
}

BK_INLINE uint32_t bk_counting_stream_pos(uint64_t w, uint32_t i, uint32_t cells_log2)
{
    return (uint32_t)(w >> (16u * (i & 3u) + 16u - cells_log2)) & ((1u << cells_log2) - 1u);
}

/* Every probe of a key, as global counter indices `pos` in probe order.
 * Classic: exactly the classic Bloom filter's sequence (bk_bloom.h):
 * x0 = h, y0 = mix64(h); probe i = mulhi(x_i, m); x += y; y += i.
 * Blocked: block * cells + the in-block position above. */
#define BK_COUNTING_PROBES(c, h, pos, body)                                                 \
    do {                                                                                    \
        if ((c)->layout == BK_COUNTING_LAYOUT_BLOCKED) {                                    \
            uint64_t bkcounting_base_ = bk_counting_block((c), (h)) << (c)->cells_log2;     \
            uint64_t bkcounting_w_ = 0;                                                     \
            for (uint32_t bkcounting_i_ = 0; bkcounting_i_ < (c)->k; bkcounting_i_++) {     \
                uint64_t pos;                                                               \
                if ((bkcounting_i_ & 3u) == 0)                                              \
                    bkcounting_w_ = bk_counting_stream_word((h), bkcounting_i_ >> 2);       \
                pos = bkcounting_base_ +                                                    \
                      bk_counting_stream_pos(bkcounting_w_, bkcounting_i_, (c)->cells_log2); \
                body;                                                                       \
            }                                                                               \
        } else {                                                                            \
            uint64_t bkcounting_x_ = (h), bkcounting_y_ = bk_mix64(h);                      \
            for (uint32_t bkcounting_i_ = 0; bkcounting_i_ < (c)->k; bkcounting_i_++) {     \
                uint64_t pos = bk_mulhi64(bkcounting_x_, (c)->m);                           \
                body;                                                                       \
                bkcounting_x_ += bkcounting_y_;                                             \
                bkcounting_y_ += bkcounting_i_;                                             \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* Blocked, 4-bit counters (the default width): test the key's k nibbles of
 * its one line without a branch between them (all loads hit the same,
 * already fetched line, so an early exit would only add mispredictions). */
BK_INLINE int bk_counting_blocked4_contains(const bk_counting *c, uint64_t h)
{
    const uint8_t *blk = c->bytes + bk_counting_block(c, h) * BK_COUNTING_BLOCK_BYTES;
    uint32_t k = c->k;
    unsigned all = 1;
    uint64_t w = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t p;
        if ((i & 3u) == 0)
            w = bk_counting_stream_word(h, i >> 2);
        p = bk_counting_stream_pos(w, i, 7u);
        all &= (((unsigned)blk[p >> 1] >> ((p & 1u) * 4u)) & 15u) != 0;
    }
    return (int)all;
}

/* Blocked, 4-bit, private writer: read, test and bump each nibble in one
 * branch-free pass (as the classic 4-bit add below). */
BK_INLINE int bk_counting_blocked4_add(bk_counting *c, uint64_t h)
{
    uint8_t *blk = c->bytes + bk_counting_block(c, h) * BK_COUNTING_BLOCK_BYTES;
    uint32_t k = c->k;
    unsigned zero = 0;
    uint64_t w = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t p;
        uint8_t *q;
        unsigned shift, b, v;
        if ((i & 3u) == 0)
            w = bk_counting_stream_word(h, i >> 2);
        p = bk_counting_stream_pos(w, i, 7u);
        q = &blk[p >> 1];
        shift = (p & 1u) * 4u;
        b = *q;
        v = (b >> shift) & 15u;
        zero |= v == 0;
        *q = (uint8_t)(b + ((unsigned)(v != 15u) << shift));
    }
    return (int)zero;
}

/* Per-width loops with the shape in locals: bk_counting_get re-dispatches
 * on the width at every probe, and the byte stores of add may alias *c, so
 * reading c->k, c->m and c->bytes in the loop would reload them each time.
 * Same probes, same results. */
BK_INLINE int bk_counting_contains(const bk_counting *c, uint64_t h)
{
    const uint8_t *bytes = c->bytes;
    uint64_t x = h, y = bk_mix64(h), m = c->m;
    uint32_t k = c->k;
    if (c->layout == BK_COUNTING_LAYOUT_BLOCKED) {
        int all = 1;
        if (c->bits == 4) {
            if (BK_LIKELY(bk_simd_avx2)) /* the same nibbles, 8 at a time (bk_simd.c) */
                return bk_simd_counting4_contains_avx2(
                    bytes + bk_counting_block(c, h) * BK_COUNTING_BLOCK_BYTES, h, k);
            return bk_counting_blocked4_contains(c, h);
        }
        BK_COUNTING_PROBES(c, h, pos, { all &= bk_counting_get(c, pos) != 0; });
        return all;
    }
    if (c->bits == 4) {
        uint32_t i = 0;
        if (k >= 2) {
            /* The first two nibbles loaded together and tested without a
             * branch between them: an absent key passes both only a
             * quarter of the time, and the two (likely cache-missing)
             * loads overlap instead of waiting on a coin-flip branch. */
            uint64_t p0 = bk_mulhi64(x, m), p1 = bk_mulhi64(x + y, m);
            unsigned n0 = ((unsigned)bytes[p0 >> 1] >> ((unsigned)(p0 & 1) * 4u)) & 15u;
            unsigned n1 = ((unsigned)bytes[p1 >> 1] >> ((unsigned)(p1 & 1) * 4u)) & 15u;
            if ((n0 == 0) | (n1 == 0))
                return 0;
            x += 2 * y;
            y += 1;
            i = 2;
        }
        for (; i < k; i++) {
            uint64_t pos = bk_mulhi64(x, m);
            if (!(((unsigned)bytes[pos >> 1] >> ((unsigned)(pos & 1) * 4u)) & 15u))
                return 0;
            x += y;
            y += i;
        }
        return 1;
    }
    if (c->bits == 8) {
        for (uint32_t i = 0; i < k; i++) {
            uint64_t pos = bk_mulhi64(x, m);
            if (bytes[pos] == 0)
                return 0;
            x += y;
            y += i;
        }
        return 1;
    }
    for (uint32_t i = 0; i < k; i++) {
        uint64_t pos = bk_mulhi64(x, m);
        if ((bytes[2 * pos] | bytes[2 * pos + 1]) == 0)
            return 0;
        x += y;
        y += i;
    }
    return 1;
}

/* Increment the key's counters; returns 1 when one of them was zero
 * before (the key was surely absent: the same answer BloomFilter.add
 * gives for the same sequence of adds). */
BK_INLINE int bk_counting_add(bk_counting *c, uint64_t h, int atomic)
{
    int was_new = 0;
    if (c->layout == BK_COUNTING_LAYOUT_BLOCKED && c->bits == 4 && !atomic)
        return bk_counting_blocked4_add(c, h);
    if (c->bits == 4 && !atomic && c->layout == BK_COUNTING_LAYOUT_CLASSIC) {
        /* The default width, private buffer: read, test and bump each nibble
         * in one pass (bk_counting_get + bk_counting_step would load it twice
         * and re-dispatch on the width per probe).  Same result. */
        uint8_t *bytes = c->bytes;
        uint64_t x = h, y = bk_mix64(h), m = c->m;
        uint32_t k = c->k;
        unsigned zero = 0;
        for (uint32_t i = 0; i < k; i++) {
            uint64_t pos = bk_mulhi64(x, m);
            uint8_t *p = &bytes[pos >> 1];
            unsigned shift = (unsigned)(pos & 1) * 4u;
            unsigned b = *p, v = (b >> shift) & 15u;
            zero |= v == 0;
            /* +1 unless saturated, branch-free */
            *p = (uint8_t)(b + ((unsigned)(v != 15u) << shift));
            x += y;
            y += i;
        }
        return (int)zero;
    }
    BK_COUNTING_PROBES(c, h, pos, {
        if (bk_counting_get(c, pos) == 0)
            was_new = 1;
        bk_counting_step(c, pos, 1, atomic);
    });
    return was_new;
}

/* The minimum of the key's counters (0: surely absent). */
BK_INLINE uint32_t bk_counting_count(const bk_counting *c, uint64_t h)
{
    uint32_t best = c->max;
    BK_COUNTING_PROBES(c, h, pos, {
        uint32_t v = bk_counting_get(c, pos);
        if (v < best)
            best = v;
    });
    return best;
}

/* Remove: BK_ERR_NOTFOUND (and nothing changed) when a counter is zero;
 * otherwise decrement every counter that is neither 0 nor saturated.
 * *zeroed is set to 1 when a counter reached zero. */
BK_INLINE bk_rc bk_counting_remove(bk_counting *c, uint64_t h, int atomic, int *zeroed)
{
    *zeroed = 0;
    if (!bk_counting_contains(c, h))
        return BK_ERR_NOTFOUND;
    BK_COUNTING_PROBES(c, h, pos, {
        bk_counting_step(c, pos, -1, atomic);
        if (bk_counting_get(c, pos) == 0)
            *zeroed = 1;
    });
    return BK_OK;
}

/* ---- End logic for counters ------------------------------------------- */

/* Batches over hash values (prefetching ahead).  add_many returns the
 * number of keys that were new; contains_many writes 0/1 bytes;
 * remove_many stops at the first surely-absent key and returns its index
 * (n when all were removed); *zeroed counts removes that zeroed a counter. */
uint64_t bk_counting_add_many(bk_counting *c, const uint64_t *hs, size_t n, int atomic);
void bk_counting_contains_many(const bk_counting *c, const uint64_t *hs, size_t n,
                               uint8_t *out);
size_t bk_counting_remove_many(bk_counting *c, const uint64_t *hs, size_t n, int atomic,
                               uint64_t *zeroed);

/* dst += src counter-wise, saturating at max (shapes checked by caller). */
void bk_counting_union(bk_counting *dst, const bk_counting *src);

/* Counters that are not zero. */
uint64_t bk_counting_nonzero(const bk_counting *c);

/* Estimates from the nonzero counters.  Classic: Swamidass-Baldi
 * -m/k ln(1 - X/m), and fill^k.  Blocked (cells counters a block):
 * ln(1 - X/m) / ln(1 - q/B) with q = 1 - (1 - 1/cells)^k (the expected
 * fill inverted, as bk_bloom_estimate_count), and the mean over blocks of
 * (nonzero/cells)^k (the exact rate of a random query given the counters).
 * INFINITY / 1.0 when every counter is set. */
double bk_counting_estimate_count(const bk_counting *c);
double bk_counting_estimate_error_rate(const bk_counting *c);

/* Set bit i of a classic Bloom payload (ceil(m/64) u64 LE words, zeroed)
 * for every nonzero counter i (classic layout: the blocked layout has no
 * Bloom filter with the same probes). */
void bk_counting_to_bits(const bk_counting *c, uint8_t *bloom_payload);

#endif /* BK_COUNTING_H */
