/*
 * bk_scalable.h -- the scalable Bloom filter: one container of kind 4 whose
 * payload is a chain of Bloom filter containers (see bk_scalable.c).
 */
#ifndef BK_SCALABLE_H
#define BK_SCALABLE_H

#include "bk_bloom.h"
#include "bk_common.h"
#include "bk_format.h"
#include "bk_kind.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_SCALABLE_P_ERROR_RATE 0   /* f64 target compound rate P */
#define BK_SCALABLE_P_TIGHTENING 8   /* f64 r: link i has rate P (1 - r) r^i */
#define BK_SCALABLE_P_INITIAL 16     /* u64 capacity of link 0 */
#define BK_SCALABLE_P_GROWTH 24      /* u32 s: link i has capacity n0 s^i */
#define BK_SCALABLE_P_NUM_LINKS 28   /* u32 L */
#define BK_SCALABLE_P_LAYOUT 32      /* u32 BK_BLOOM_LAYOUT_*: 0 classic, 1 and 2 blocked */
#define BK_SCALABLE_P_RESERVED 36    /* u32 0 */
#define BK_SCALABLE_P_LINK_LENS 40   /* L x u64: container length of each link */
#define BK_SCALABLE_PARAMS_FIXED 40

#define BK_SCALABLE_MAX_LINKS 64u     /* chain length limit (2^48 capacity is hit first) */
#define BK_SCALABLE_MIN_GROWTH 2u
#define BK_SCALABLE_MAX_GROWTH 16u
#define BK_SCALABLE_MAX_CAPACITY BK_CAPACITY_MAX /* the one limit, bk_kind.h */

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

/* ---- Begin logic for assembling a chain -------------------------------
 *
 * The one writer of a chain state's header and parameter block (the glue
 * only allocates the buffer): a new chain, growth by one link, clear and a
 * union with a longer chain all assemble a fresh state from link
 * containers. */

/* The chain's scheme: what every link shares and what growth needs. */
typedef struct {
    double p, r;                 /* target compound rate P, tightening r */
    uint64_t n0, seed, key_check;
    uint32_t growth, layout;     /* s; BK_BLOOM_LAYOUT_* */
    int keyed;
} bk_scalable_scheme;

/* The scheme of a validated (or assembled) chain state. */
void bk_scalable_scheme_of(const uint8_t *state, bk_scalable_scheme *sc);

/* Container length of link i of a validated chain state. */
uint64_t bk_scalable_link_len(const uint8_t *state, uint32_t i);

/* Bytes of the state of a chain of L links of container lengths lens[]. */
uint64_t bk_scalable_state_len(uint32_t num_links, const uint64_t *lens);

/* The 128-byte header of a fresh, empty link `index` of the scheme into
 * hdr (BK_BLOOM_HEADER_LEN bytes); *len: its full container length.
 * BK_ERR_ARG with *reason when the shape is not the scheme's. */
bk_rc bk_scalable_new_link(const bk_scalable_scheme *sc, uint32_t index, uint64_t num_bits,
                           uint32_t k, uint64_t capacity, double error_rate, uint8_t *hdr,
                           uint64_t *len, const char **reason);

/* Write the chain of L links into dst, which holds
 * bk_scalable_state_len(L, lens) ZEROED bytes: the header
 * (bk_format_init_header), the parameter block, then each link copied
 * whole from srcs[i] -- or its header alone when bit i of header_only is
 * set (a fresh link: its bits are the buffer's zeros).  A link's checksum
 * field is 0 and its flags carry only KEYED. */
void bk_scalable_assemble(uint8_t *dst, const bk_scalable_scheme *sc, uint32_t num_links,
                          const uint8_t *const *srcs, const uint64_t *lens,
                          uint64_t header_only);

/* ---- End logic for assembling a chain --------------------------------- */

/* ---- Begin logic for the per-key chain probes ------------------------- */

/* Every link probes with the SAME key hash h and the same double-hashing
 * sequence as bk_bloom_classic_contains (x_0 = h, y_0 = mix64(h),
 * x_{i+1} = x_i + y_i, y_{i+1} = y_i + i); only the range m differs.  So
 * the sequence is computed once per key, not once per link, and the bits
 * tested are exactly those of bk_bloom_contains on each link (same
 * answers, same stored bits).
 *
 * Probing link after link costs, for a key a link does not hold, about two
 * dependent probes each ending in a coin-flip branch (the first unset bit
 * ends the link), each probe a likely cache miss once the chain outgrows
 * L2: an absent key paid that for every link (callgrind, 200k keys, 7
 * links: 7.8 mispredicted branches per query).  The query instead:
 *   1. probes the newest link, then the one before it, depth first -- with
 *      growth 2 they hold about 70% of the keys, so most present keys are
 *      answered there;
 *   2. then loads the first r probes of EVERY older link and tests them
 *      without a branch ("the round"): the loads are independent, so their
 *      misses overlap, and an absent key survives it in only 2^-r of the
 *      (half-full) older links;
 *   3. finishes the survivors newest first.
 * Depth-first probing goes two probes per branch (bk_scalable_classic_probe).
 * callgrind (docs/scalable.md): 1.6 mispredicted branches per absent query
 * instead of 7.8 with r = 3, for about 10% more instructions.
 *
 * r is a compile-time constant of each copy of the probe code (the round
 * is unrolled; a run-time r measured slower than either constant): 6 when
 * every link has k >= 6 (targets up to ~4%), else 3 when every link has
 * k >= 3, else the plain link-by-link loop.  6 against the first
 * version's 3, Intel guest (2 MiB L2), 200k keys, 7 links, same-run ratios
 * to BloomFilter over three alternations: add 2.22-2.29x -> 2.05-2.08x,
 * `in` of absent keys 1.70-1.74x -> 1.55-1.59x, list contains_many
 * 2.25-2.30x -> 1.98-2.02x, numpy add_many 3.96-4.07x -> 3.70-3.88x;
 * present keys unchanged (most are answered in step 1, before the round's
 * sequence is even computed).  With 2 MiB of L2 the extra loads are cheap,
 * while each survivor costs a branchy probe: 1/64 of the older links
 * survive instead of 1/8. */
#define BK_SCALABLE_ROUND_LONG 6
#define BK_SCALABLE_ROUND_SHORT 3

/* The links' ranges, words and k side by side (a struct-of-arrays copy of
 * the bk_bloom views, filled by bk_scalable_soa_attach whenever the views
 * change), so that the round is a tight loop over arrays. */
typedef struct {
    uint64_t m[BK_SCALABLE_MAX_LINKS];
    const uint64_t *w[BK_SCALABLE_MAX_LINKS];
    uint32_t k[BK_SCALABLE_MAX_LINKS];
    uint32_t round;  /* r: BK_SCALABLE_ROUND_LONG or _SHORT (<= every link's k), or 0 */
    uint64_t nb[BK_SCALABLE_MAX_LINKS];  /* blocked: num_blocks (bk_simd_chain1_*) */
} bk_scalable_soa;

BK_INLINE void bk_scalable_soa_attach(bk_scalable_soa *s, const bk_bloom *links, uint32_t n)
{
    uint32_t min_k = BK_SCALABLE_ROUND_LONG;
    for (uint32_t l = 0; l < n; l++) {
        s->m[l] = links[l].num_bits;
        s->w[l] = links[l].words;
        s->k[l] = links[l].k;
        s->nb[l] = links[l].num_blocks;
        if (links[l].k < min_k)
            min_k = links[l].k;
    }
    s->round = min_k >= BK_SCALABLE_ROUND_LONG    ? BK_SCALABLE_ROUND_LONG
               : min_k >= BK_SCALABLE_ROUND_SHORT ? BK_SCALABLE_ROUND_SHORT
                                                  : 0;
}

/* x[0..r) = x_0..x_{r-1} of h's probe sequence, given y0 = mix64(h);
 * x[r] = x_r, x[r+1] = y_r (x holds BK_SCALABLE_ROUND_LONG + 2).  r is a
 * constant at every call. */
BK_INLINE void bk_scalable_classic_seq(uint64_t h, uint64_t y0, uint64_t *x, uint32_t r)
{
    uint64_t y = y0, xi = h;
    for (uint32_t i = 0; i < r; i++) {
        x[i] = xi;
        xi += y;
        y += i;
    }
    x[r] = xi;
    x[r + 1] = y;
}

/* Bit l set: link l (l < n) passes its first r probes.  Branch-free (r is
 * a constant: the inner loop unrolls); every link has k >= r. */
BK_INLINE uint64_t bk_scalable_classic_round(const bk_scalable_soa *s, uint32_t n,
                                             const uint64_t *x, uint32_t r)
{
    uint64_t alive = 0;
    for (uint32_t l = n; l-- > 0;) {
        uint64_t m = s->m[l];
        const uint64_t *w = s->w[l];
        uint64_t b = 1;
        for (uint32_t i = 0; i < r; i++) {
            uint64_t p = bk_mulhi64(x[i], m);
            b &= BK_LE64(w[p >> 6]) >> (p & 63);
        }
        alive = (alive << 1) | (b & 1);
    }
    return alive;
}

/* Probes i..k-1 of classic link l, given x_i and y_i, two per branch: a
 * key the link does not hold usually fails the first pair (one exit
 * instead of a coin-flip branch per probe), and a present key takes half
 * the branches.  Same bits as bk_bloom_classic_contains. */
BK_INLINE int bk_scalable_classic_probe(const bk_scalable_soa *s, uint32_t l, uint32_t i,
                                        uint64_t x, uint64_t y)
{
    const uint64_t *w = s->w[l];
    uint64_t m = s->m[l];
    uint32_t k = s->k[l];
    for (; i + 1 < k; i += 2) {
        uint64_t p0 = bk_mulhi64(x, m), p1;
        x += y;
        y += i;
        p1 = bk_mulhi64(x, m);
        x += y;
        y += i + 1;
        if (!((BK_LE64(w[p0 >> 6]) >> (p0 & 63)) & (BK_LE64(w[p1 >> 6]) >> (p1 & 63)) & 1))
            return 0;
    }
    if (i < k) {
        uint64_t p = bk_mulhi64(x, m);
        return (int)((BK_LE64(w[p >> 6]) >> (p & 63)) & 1);
    }
    return 1;
}

/* Index of the highest set bit of x != 0. */
BK_INLINE uint32_t bk_scalable_top(uint64_t x)
{
    return (uint32_t)bk_log2_64(x);
}

/* Finish the links of `alive` (those that passed the round of r probes),
 * newest first: 1 as soon as one holds the key. */
BK_INLINE int bk_scalable_classic_survivors(const bk_scalable_soa *s, uint64_t alive,
                                            const uint64_t *x, uint32_t r)
{
    while (alive != 0) {
        uint32_t l = bk_scalable_top(alive);
        alive &= ~(1ULL << l);
        if (bk_scalable_classic_probe(s, l, r, x[r], x[r + 1]))
            return 1;
    }
    return 0;
}

/* Steps 2-3 above over links[0..n) with a round of r probes (a
 * constant), given y0 = mix64(h). */
BK_INLINE int bk_scalable_classic_older_r(const bk_scalable_soa *s, uint32_t n, uint64_t h,
                                          uint64_t y0, uint32_t r)
{
    uint64_t x[BK_SCALABLE_ROUND_LONG + 2];
    bk_scalable_classic_seq(h, y0, x, r);
    return bk_scalable_classic_survivors(s, bk_scalable_classic_round(s, n, x, r), x, r);
}

/* Does any of links[0..n) (classic, n may be 0) hold h?  The round of the
 * chain's length, or link by link when some link has k < 3. */
BK_INLINE int bk_scalable_classic_older(const bk_bloom *links, const bk_scalable_soa *s,
                                        uint32_t n, uint64_t h, uint64_t y0)
{
    if (n == 0)
        return 0;
    if (BK_LIKELY(s->round == BK_SCALABLE_ROUND_LONG))
        return bk_scalable_classic_older_r(s, n, h, y0, BK_SCALABLE_ROUND_LONG);
    if (s->round == BK_SCALABLE_ROUND_SHORT)
        return bk_scalable_classic_older_r(s, n, h, y0, BK_SCALABLE_ROUND_SHORT);
    for (uint32_t l = n; l-- > 0;)
        if (bk_bloom_classic_contains(&links[l], h))
            return 1;
    return 0;
}

/* Does any of links[0..n) (classic, n >= 1) hold h?  Steps 1-3 above; the
 * round's sequence is computed only after the newest two links miss (most
 * present keys never need it). */
BK_INLINE int bk_scalable_classic_contains(const bk_bloom *links, const bk_scalable_soa *s,
                                           uint32_t n, uint64_t h)
{
    uint64_t y0 = bk_mix64(h);
    if (bk_scalable_classic_probe(s, n - 1, 0, h, y0))
        return 1;
    if (n < 2)
        return 0;
    if (bk_scalable_classic_probe(s, n - 2, 0, h, y0))
        return 1;
    return bk_scalable_classic_older(links, s, n - 2, h, y0);
}

/* Blocked links cost one branch-free line each: newest first, after a
 * prefetch of every link's line, so that the misses of an absent key (which
 * visits every link) overlap instead of following one another.  The
 * prefetch measured no faster on the Intel guest (2 MiB L2), where most
 * lines of a 10^6-key chain are L2 hits; on the AMD guest (512 KiB L2,
 * 7 links after 100x growth, counting_scalable.py) it is what keeps `in`
 * of absent keys near the add's cost (docs/scalable.md). */
BK_INLINE int bk_scalable_blocked_contains(const bk_bloom *links, const bk_scalable_soa *s,
                                           uint32_t n, uint64_t h)
{
    for (uint32_t l = n; l-- > 0;)
        bk_prefetch_r(bk_bloom_block(&links[l], h));
    /* version 1 (every chain written since it exists): the key's stream
     * words once for all links (bk_simd.c) */
    if (BK_LIKELY(bk_simd_avx2) && links[0].version == BK_BLOOM_VERSION_STREAM)
        return bk_simd_chain1_contains_avx2(s->w, s->nb, s->k, n, h);
    for (uint32_t l = n; l-- > 0;)
        if (bk_bloom_contains(&links[l], h))
            return 1;
    return 0;
}

/* The chain's membership test (== bk_bloom_contains on each link, OR'ed);
 * n >= 1 (a chain always has a link, bk_scalable_validate). */
BK_INLINE int bk_scalable_contains(const bk_bloom *links, const bk_scalable_soa *s, uint32_t n,
                                   uint64_t h)
{
    if (links[0].blocked)
        return bk_scalable_blocked_contains(links, s, n, h);
    return bk_scalable_classic_contains(links, s, n, h);
}

/* Add h to the newest of n >= 1 links unless some link holds it, in ONE
 * pass: the older links are tested (the round over all of them, then the
 * survivors), then the newest link's k bits are set branch-free; a key
 * already in the newest link sets no new bit (returns 0, nothing changes),
 * a key in an older link returns 0 before any store.  Private (unshared)
 * buffers only.  Returns 1 if the key was new.  Same bits and result as
 * "bk_bloom_contains on every link, else bk_bloom_add on the newest". */
BK_INLINE int bk_scalable_add_newest(bk_bloom *links, const bk_scalable_soa *s, uint32_t n,
                                     uint64_t h)
{
    bk_bloom *nb = &links[n - 1];
    if (nb->blocked) {
        for (uint32_t l = 0; l < n; l++)
            bk_prefetch_r(bk_bloom_block(&links[l], h));
        if (BK_LIKELY(bk_simd_avx2) && nb->version == BK_BLOOM_VERSION_STREAM)
            return bk_simd_chain1_add_avx2(s->w, s->nb, s->k, n, nb->words, h);
        for (uint32_t l = n - 1; l-- > 0;)
            if (bk_bloom_contains(&links[l], h))
                return 0;
        return bk_bloom_blocked_add(nb, h, 0);
    }
    if (bk_scalable_classic_older(links, s, n - 1, h, bk_mix64(h)))
        return 0;
    /* the newest link's private, branch-free add (bk_bloom.h) */
    return bk_bloom_classic_add(nb, h, 0);
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

/* View every link of a validated (or freshly assembled) chain state:
 * links[i], link_bufs[i] (link i's container) and soa; returns L. */
uint32_t bk_scalable_attach(uint8_t *state, bk_bloom *links, uint8_t **link_bufs,
                            bk_scalable_soa *soa);

/* 1 - prod(1 - rate_i) over the links' own estimates (fill_i ** k_i). */
double bk_scalable_estimate_error_rate(const bk_bloom *links, uint32_t n);

#endif /* BK_SCALABLE_H */
