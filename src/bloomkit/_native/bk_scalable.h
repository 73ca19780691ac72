/*
 * bk_scalable.h -- the scalable Bloom filter: one container of kind 4 whose
 * payload is a chain of Bloom filter containers (see bk_scalable.c).
 */
#ifndef BK_SCALABLE_H
#define BK_SCALABLE_H

#include "bk_bloom.h"
#include "bk_common.h"
#include "bk_format.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_SCALABLE_P_ERROR_RATE 0   /* f64 target compound rate P */
#define BK_SCALABLE_P_TIGHTENING 8   /* f64 r: link i has rate P (1 - r) r^i */
#define BK_SCALABLE_P_INITIAL 16     /* u64 capacity of link 0 */
#define BK_SCALABLE_P_GROWTH 24      /* u32 s: link i has capacity n0 s^i */
#define BK_SCALABLE_P_NUM_LINKS 28   /* u32 L */
#define BK_SCALABLE_P_LAYOUT 32      /* u32 0 classic, 1 blocked */
#define BK_SCALABLE_P_RESERVED 36    /* u32 0 */
#define BK_SCALABLE_P_LINK_LENS 40   /* L x u64: container length of each link */
#define BK_SCALABLE_PARAMS_FIXED 40

#define BK_SCALABLE_MAX_LINKS 64u     /* chain length limit (2^48 capacity is hit first) */
#define BK_SCALABLE_MIN_GROWTH 2u
#define BK_SCALABLE_MAX_GROWTH 16u
#define BK_SCALABLE_MAX_CAPACITY (1ULL << 48)

/* params_len and header_len of a chain of L links. */
static inline uint32_t bk_scalable_params_len(uint32_t num_links)
{
    return BK_SCALABLE_PARAMS_FIXED + 8u * num_links;
}

static inline uint32_t bk_scalable_header_len(uint32_t num_links)
{
    return (uint32_t)bk_format_align(BK_OFF_PARAMS + bk_scalable_params_len(num_links));
}

/* Capacity of link i: n0 * s^i, or 0 when it exceeds 2^48. */
uint64_t bk_scalable_link_capacity(uint64_t n0, uint32_t growth, uint32_t i);

/* Error rate of link i: P (1 - r) r^i. */
double bk_scalable_link_error(double p, double r, uint32_t i);

/* Check that a link shape fits the chain's scheme at index i (used both
 * by the validator and before growing). */
bk_rc bk_scalable_check_link(double p, double r, uint64_t n0, uint32_t growth, uint32_t i,
                             uint64_t capacity, double error_rate, const char **reason);

/* ---- Begin logic for the per-key chain probes ------------------------- */

/* Every link probes with the SAME key hash h and the same double-hashing
 * sequence x_i of bk_bloom_classic_contains (x_0 = h, y_0 = mix64(h),
 * x_{i+1} = x_i + y_i, y_{i+1} = y_i + i); only the range m differs.  So
 * y is computed once per key, not once per link, and the bits tested are
 * exactly those of bk_bloom_contains on each link.
 *
 * A chain query would cost, link after link, about two dependent probes
 * per link that does not hold the key (the first unset bit ends a link),
 * each a likely cache miss once the chain outgrows L2 and each ending in a
 * branch that mispredicts about half the time.  Instead the first two
 * probes of EVERY link are loaded and tested branch-free in one round: the
 * loads are independent, so their misses overlap, and only the links that
 * pass both (a quarter of the full ones for an absent key) are finished,
 * newest first.  The result is the same as probing link by link. */
/* The links' ranges and words side by side (a struct-of-arrays copy of the
 * bk_bloom views, filled by bk_scalable_soa_attach), so that the round
 * below is a tight loop over two arrays. */
typedef struct {
    uint64_t m[BK_SCALABLE_MAX_LINKS];
    const uint64_t *w[BK_SCALABLE_MAX_LINKS];
    uint64_t k_lt2, k_lt3;  /* bit l set: link l has k < 2 (< 3): skip that probe */
} bk_scalable_soa;

BK_INLINE void bk_scalable_soa_attach(bk_scalable_soa *s, const bk_bloom *links, uint32_t n)
{
    s->k_lt2 = s->k_lt3 = 0;
    for (uint32_t l = 0; l < n; l++) {
        s->m[l] = links[l].num_bits;
        s->w[l] = links[l].words;
        s->k_lt2 |= (uint64_t)(links[l].k < 2) << l;
        s->k_lt3 |= (uint64_t)(links[l].k < 3) << l;
    }
}

#ifndef BKS_ROUND
#define BKS_ROUND 3
#endif

/* Bit l set: link l (l < n) passes its first BKS_ROUND probes, at x[0..). */
BK_INLINE uint64_t bk_scalable_classic_round(const bk_scalable_soa *s, uint32_t n,
                                             const uint64_t *x)
{
    uint64_t alive = 0;
    for (uint32_t l = 0; l < n; l++) {
        uint64_t m = s->m[l];
        const uint64_t *w = s->w[l];
        uint64_t p0 = bk_mulhi64(x[0], m), p1 = bk_mulhi64(x[1], m);
        uint64_t b0 = BK_LE64(w[p0 >> 6]) >> (p0 & 63);
        uint64_t b1 = (BK_LE64(w[p1 >> 6]) >> (p1 & 63)) | (s->k_lt2 >> l);
#if BKS_ROUND == 3
        uint64_t p2 = bk_mulhi64(x[2], m);
        b1 &= (BK_LE64(w[p2 >> 6]) >> (p2 & 63)) | (s->k_lt3 >> l);
#endif
        alive |= (b0 & b1 & 1) << l;
    }
    return alive;
}

/* x_0..x_{R-1} of the probe sequence in x[], and x_R, y_R in x[R], x[R+1]. */
BK_INLINE void bk_scalable_classic_seq(uint64_t h, uint64_t *x)
{
    uint64_t y = bk_mix64(h), xi = h;
    for (uint32_t i = 0; i < BKS_ROUND; i++) {
        x[i] = xi;
        xi += y;
        y += i;
    }
    x[BKS_ROUND] = xi;
    x[BKS_ROUND + 1] = y;
}

/* Probes R..k-1 of one link, given x_R and y_R. */
BK_INLINE int bk_scalable_classic_rest(const bk_bloom *b, uint64_t x, uint64_t y)
{
    uint64_t m = b->num_bits;
    const uint64_t *w = b->words;
    for (uint32_t i = BKS_ROUND; i < b->k; i++) {
        uint64_t pos = bk_mulhi64(x, m);
        if (!(w[pos >> 6] & BK_LE64(1ULL << (pos & 63))))
            return 0;
        x += y;
        y += i;
    }
    return 1;
}

/* Index of the highest set bit of x != 0. */
BK_INLINE uint32_t bk_scalable_top(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return 63u - (uint32_t)__builtin_clzll(x);
#else
    uint32_t r = 0;
    while (x >>= 1)
        r++;
    return r;
#endif
}

/* Finish the links of `alive` (bits of links that passed the round),
 * newest first: 1 as soon as one holds the key. */
BK_INLINE int bk_scalable_classic_survivors(const bk_bloom *links, uint64_t alive,
                                            const uint64_t *x)
{
    while (alive != 0) {
        uint32_t l = bk_scalable_top(alive);
        alive &= ~(1ULL << l);
        if (bk_scalable_classic_rest(&links[l], x[BKS_ROUND], x[BKS_ROUND + 1]))
            return 1;
    }
    return 0;
}

/* Does any of links[0..n) (classic) hold h?  The newest link, which holds
 * about half of the keys, is probed first on its own (a present key is
 * most often answered there without touching the others); then the round
 * over the older links, and their survivors newest first. */
BK_INLINE int bk_scalable_classic_contains(const bk_bloom *links, const bk_scalable_soa *s,
                                           uint32_t n, uint64_t h)
{
#ifndef BKS_CV
#define BKS_CV 'B'
#endif
#if BKS_CV == 'D'
    for (uint32_t l = 0; l < n; l++)
        bk_prefetch_r(&s->w[l][bk_mulhi64(h, s->m[l]) >> 6]);
    for (uint32_t l = n; l-- > 0;)
        if (bk_bloom_classic_contains(&links[l], h))
            return 1;
    return 0;
#elif BKS_CV == 'A'
    uint64_t x[BKS_ROUND + 2];
    bk_scalable_classic_seq(h, x);
    return bk_scalable_classic_survivors(links, bk_scalable_classic_round(s, n, x), x);
#else
    uint64_t x[BKS_ROUND + 2];
    if (bk_bloom_classic_contains(&links[n - 1], h))
        return 1;
    bk_scalable_classic_seq(h, x);
    return bk_scalable_classic_survivors(links, bk_scalable_classic_round(s, n - 1, x), x);
#endif
}

/* Blocked links cost one line each: fetch every link's line first so that
 * the misses overlap, then test newest first. */
BK_INLINE int bk_scalable_blocked_contains(const bk_bloom *links, uint32_t n, uint64_t h)
{
    for (uint32_t l = 0; l < n; l++)
        bk_prefetch_r(bk_bloom_block(&links[l], h));
    for (uint32_t l = n; l-- > 0;)
        if (bk_bloom_contains(&links[l], h))
            return 1;
    return 0;
}

/* The chain's membership test (== bk_bloom_contains on each link, OR'ed). */
BK_INLINE int bk_scalable_contains(const bk_bloom *links, const bk_scalable_soa *s, uint32_t n,
                                   uint64_t h)
{
    if (n == 0)
        return 0;
    if (links[0].blocked)
        return bk_scalable_blocked_contains(links, n, h);
    return bk_scalable_classic_contains(links, s, n, h);
}

/* Add h to the newest of n >= 1 links unless some link holds it, in ONE
 * pass: the older links are tested (round + survivors) while the newest
 * link's k bits are set branch-free; a key already in the newest link sets
 * no new bit (returns 0, nothing changes), a key in an older link returns 0
 * before any store.  Private (non-shared) buffers only.  Returns 1 if the
 * key was new.  Same bits and result as "contains on every link, else
 * bk_bloom_add on the newest". */
BK_INLINE int bk_scalable_add_newest(bk_bloom *links, const bk_scalable_soa *s, uint32_t n,
                                     uint64_t h)
{
    bk_bloom *nb = &links[n - 1];
    if (nb->blocked) {
        for (uint32_t l = 0; l < n; l++)
            bk_prefetch_r(bk_bloom_block(&links[l], h));
        for (uint32_t l = n - 1; l-- > 0;)
            if (bk_bloom_contains(&links[l], h))
                return 0;
        return bk_bloom_blocked_add(nb, h, 0);
    } else {
        uint64_t xs[BKS_ROUND + 2], x, y, m = nb->num_bits, missing = 0;
        uint64_t *w = nb->words;
        uint32_t k = nb->k;
        bk_scalable_classic_seq(h, xs);
        if (bk_scalable_classic_survivors(links, bk_scalable_classic_round(s, n - 1, xs), xs))
            return 0;
        x = h;
        y = xs[1] - h; /* y_0 = x_1 - x_0 */
        for (uint32_t i = 0; i < k; i++) {
            uint64_t pos = bk_mulhi64(x, m);
            uint64_t bit = BK_LE64(1ULL << (pos & 63));
            uint64_t *wp = &w[pos >> 6];
            uint64_t old = *wp;
            missing |= ~old & bit;
            *wp = old | bit;
            x += y;
            y += i;
        }
        return missing != 0;
    }
}

/* Prefetch the first line a query of h touches in every link (batches). */
BK_INLINE void bk_scalable_prefetch(const bk_bloom *links, uint32_t n, uint64_t h)
{
    for (uint32_t l = 0; l < n; l++) {
        const bk_bloom *b = &links[l];
        if (b->blocked)
            bk_prefetch_w(bk_bloom_block(b, h));
        else
            bk_prefetch_w(&b->words[bk_mulhi64(h, b->num_bits) >> 6]);
    }
}

/* ---- End logic for the per-key chain probes --------------------------- */

bk_rc bk_scalable_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                           int checks, const char **reason);

#endif /* BK_SCALABLE_H */
