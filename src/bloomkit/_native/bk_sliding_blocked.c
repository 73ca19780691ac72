/*
 * bk_sliding_blocked.c -- layout 1 ("blocked") of the age-partitioned Bloom
 * filter (kind 11; bk_sliding.c holds the structure, the state, the shifts
 * and the time arithmetic, common to both layouts).
 *
 * Why.  In layout 0 each slice is its own bit array, so an absent key's
 * query reads about 9 slices and every read is its own cache miss on a
 * filter past the L2 (issue #32: contains_many 18.6x a blocked Bloom
 * filter).  The APBF paper (Shtul, Baquero, Almeida, arXiv 2001.03147)
 * sketches a blocked variant; ours puts EVERY slice's bit of a key in one
 * 128-byte block (two adjacent lines, asked for together), so a query or
 * an add costs one memory round trip and the slice probes are register
 * work.
 *
 * The layout (bk_sliding.h's box).  A block is 32 lanes of 32 bits; lane
 * p of every block together is physical slice p (so m = 32 B).  A key
 * picks its block with mulhi(h, B) and its bit in lane p by a
 * multiply-shift of one mix64 word.  k + l <= 32 (one lane a slice); lanes S..31 are
 * never written.
 *
 * The query has no data-dependent branch: it reads the key's bit of all
 * 32 lanes into a mask (AVX2: four vector multiply-shifts and variable
 * shifts; else a fixed loop), rotates the
 * mask into age order and looks for a run of k set bits with log2(k)
 * shift-ANDs.  Layout 0's checkpoint scan probes ~9 slices behind
 * unpredictable branches; measured here (profile in docs/sliding.md) that
 * scan alone, inside one block, cost 54 ns a key in contains_many at 10^6
 * keys against 5.7 for the blocked Bloom filter, mostly mispredictions.  Clearing a slice at a shift zeroes one u32 in
 * every block: a strided pass over the whole payload (B 4-byte stores,
 * 128 bytes apart) every G adds, about 1024 / (l lam) / 8 = 2.8 bytes of
 * payload per add at 1%: measured in docs/sliding.md, small beside the
 * add itself.
 *
 * The price: the blocks' loads vary (Poisson), and a key's k consecutive
 * lanes share its block's load of the generations they hold, so the rate
 * is above the independent-slices model of layout 0 (as for any blocked
 * Bloom filter).  The sizing here computes it: at the worst moment
 * (generation full) a block receives X_t ~ Poisson(lam) keys of the
 * generation of age t (lam = G / B), lane of age a holds
 * n_a = X_max(0,a-k+1) + ... + X_a of them and has a given bit set with
 * probability 1 - (31/32)^n_a, independently across lanes given the X; the
 * rate is E_X[P(some k consecutive lanes set)].  The expectation over the
 * S loads has no small closed form (the lanes' loads overlap k - 1 terms),
 * so it is a Monte Carlo over 4096 draws of the X from a FIXED seed (the
 * same draws for every lam, inverse-CDF Poisson: the estimate is
 * deterministic and monotone in lam), and the sizing requires the
 * estimate plus two standard errors to meet the target.  k and l are
 * searched among the three pairs cheapest under the independent model (a
 * lower bound: the run event increases with every X).  At 1%: k = 8,
 * l = 24, 22.2 bits a window key (2.31x a Bloom filter's 9.59, layout 0:
 * 19.9).
 *
 * Invariants: those of bk_sliding.c; B = m / 32 >= 1; lanes S..31 zero
 * (checked deep).
 */
#include "bk_sliding.h"
#include "bk_simd.h"

#include <math.h>

/* ---- Begin logic for the per-key operations --------------------------- */

/* Blocks add_many and contains_many ask for ahead (each two lines). */
#define BK_SLIDINGB_AHEAD 8

const uint32_t bk_sliding_lane_mul[BK_SLIDING_LANES] = {
    0x100B05E5U, 0x3A2B148BU, 0xE31428F1U, 0x74562915U, 0xBEBB45DDU, 0x7078336DU,
    0x7B17DF15U, 0x9CEBA9E9U, 0x7FDD5AD7U, 0xA9320579U, 0xF53ABB6DU, 0xD7213BBDU,
    0xB5F881D1U, 0xF62FBE29U, 0x34EA1539U, 0xCCA4A8BDU, 0x721C51BFU, 0xF6AA8871U,
    0x9841F857U, 0x52640AF3U, 0x6FAF2B49U, 0xB404DD7BU, 0xBE593CA5U, 0xDB86CAB9U,
    0x06D3FE39U, 0xFA0A06DBU, 0x332A0EFDU, 0x33721BA3U, 0x27B74F53U, 0x69D42A73U,
    0x046EF165U, 0x497FAD45U,
};

/* Bit p of the result: lane p of blk holds the key's bit (all 32 lanes,
 * unused ones zero).  AVX2: four vector multiplies and variable shifts
 * (bk_simd.c); otherwise a fixed loop, the same bits. */
BK_INLINE uint64_t bk_sliding_blocked_has(const uint64_t *blk, uint64_t h)
{
    uint64_t w = bk_sliding_lane_word(h), m = 0;
    const uint8_t *lanes = (const uint8_t *)(const void *)blk;
    if (bk_simd_avx2)
        return bk_simd_sliding_has_avx2(blk, w, bk_sliding_lane_mul);
    for (uint32_t p = 0; p < BK_SLIDING_LANES; p++)
        m |= (uint64_t)((bk_load_u32le(lanes + 4u * p) >> bk_sliding_lane_pos_w(w, p)) & 1u) << p;
    return m;
}

/* Is there a run of k consecutive ages in [skip, S) all holding the key's
 * bit, given `has` by physical lane and the ring position r?  Age a is
 * lane (r - a) mod S, so ages S-1 .. 0 are lanes r+1 .. r+S of the ring
 * doubled: bit i of x is age S-1-i; a run of ages is a run of bits.  The
 * run test ANDs x with itself shifted, doubling the run length each step
 * (log2 k steps).  skip + k <= S (the caller's check). */
BK_INLINE int bk_sliding_blocked_run(uint64_t has, uint32_t r, uint32_t S, uint32_t k, uint32_t skip)
{
    uint64_t low = (1ULL << S) - 1, x, y;
    has &= low;
    x = ((has | (has << S)) >> (r + 1u)) & low;
    x &= (1ULL << (S - skip)) - 1u; /* ages below skip are empty */
    y = x;
    for (uint32_t len = 1; len < k;) {
        uint32_t t = len < k - len ? len : k - len;
        y &= y >> t;
        len += t;
    }
    return y != 0;
}

BK_INLINE void bk_sliding_blocked_prefetch(const uint64_t *blk, int write)
{
    if (write) {
        bk_prefetch_w(blk);
        bk_prefetch_w(blk + 8);
    } else {
        bk_prefetch_r(blk);
        bk_prefetch_r(blk + 8);
    }
}

int bk_sliding_blocked_scan(const bk_sliding *s, uint64_t h, uint32_t r, uint32_t skip)
{
    return bk_sliding_blocked_run(bk_sliding_blocked_has(bk_sliding_block(s, h), h), r, s->S, s->k, skip);
}

/* Set the key's bit in the k youngest lanes (ring position r, shifts
 * applied, c < G); count the insertion if one was 0; return 1 if the key
 * was absent before (the query over the bits as they were: the insert
 * only writes ages < k, so the older ages are unchanged).  The same
 * rules as layout 0's add. */
int bk_sliding_blocked_add(bk_sliding *s, uint64_t h, uint32_t r)
{
    uint64_t *blk = bk_sliding_block(s, h);
    uint64_t has = bk_sliding_blocked_has(blk, h), young = 0, w = bk_sliding_lane_word(h);
    uint32_t k = s->k, S = s->S;
    for (uint32_t a = 0; a < k; a++) {
        uint32_t p = bk_sliding_phys_r(r, a, S);
        young |= 1ULL << p;
        blk[p >> 1] |= BK_LE64(1ULL << (32u * (p & 1u) + bk_sliding_lane_pos_w(w, p)));
    }
    if ((has & young) == young)
        return 0; /* ages 0..k-1 held it: present, and no bit changed */
    {
        uint64_t ins = bk_load_u64le(s->params + BK_SLIDING_P_INSERTED);
        bk_store_u64le(s->params + BK_SLIDING_P_COUNT,
                       bk_load_u64le(s->params + BK_SLIDING_P_COUNT) + 1);
        bk_store_u64le(s->params + BK_SLIDING_P_INSERTED, ins + (ins != UINT64_MAX));
    }
    return !bk_sliding_blocked_run(has, r, S, k, 0);
}

/* One "now" for the batch: after the first prepare no time shift is
 * pending (start <= now < start + D), so only a full generation shifts. */
uint64_t bk_sliding_blocked_add_many(bk_sliding *s, const uint64_t *hs, size_t n, int64_t now_us)
{
    uint64_t added = 0, G = bk_load_u64le(s->params + BK_SLIDING_P_GEN_LENGTH);
    uint32_t r;
    bk_sliding_prepare_add(s, now_us);
    r = (uint32_t)(bk_sliding_generation(s) % s->S);
    for (size_t i = 0; i < n && i < BK_SLIDINGB_AHEAD; i++)
        bk_sliding_blocked_prefetch(bk_sliding_block(s, hs[i]), 1);
    for (size_t i = 0; i < n; i++) {
        if (i + BK_SLIDINGB_AHEAD < n)
            bk_sliding_blocked_prefetch(bk_sliding_block(s, hs[i + BK_SLIDINGB_AHEAD]), 1);
        if (BK_UNLIKELY(bk_load_u64le(s->params + BK_SLIDING_P_COUNT) >= G)) {
            bk_sliding_prepare_add(s, now_us);
            r = (uint32_t)(bk_sliding_generation(s) % s->S);
        }
        added += (uint64_t)bk_sliding_blocked_add(s, hs[i], r);
    }
    return added;
}

void bk_sliding_blocked_contains_many(const bk_sliding *s, const uint64_t *hs, size_t n, uint32_t r,
                               uint32_t skip, uint8_t *out)
{
    if (bk_simd_avx2) { /* one vector call a chunk, the run tests after it */
        uint64_t has[256];
        for (size_t i = 0; i < n; i += 256) {
            size_t c = n - i < 256 ? n - i : 256;
            bk_simd_sliding_has_many_avx2(s->slices, s->blocks, hs + i, c, bk_sliding_lane_mul,
                                          has);
            for (size_t j = 0; j < c; j++)
                out[i + j] = (uint8_t)bk_sliding_blocked_run(has[j], r, s->S, s->k, skip);
        }
        return;
    }
    for (size_t i = 0; i < n && i < BK_SLIDINGB_AHEAD; i++)
        bk_sliding_blocked_prefetch(bk_sliding_block(s, hs[i]), 0);
    for (size_t i = 0; i < n; i++) {
        if (i + BK_SLIDINGB_AHEAD < n)
            bk_sliding_blocked_prefetch(bk_sliding_block(s, hs[i + BK_SLIDINGB_AHEAD]), 0);
        out[i] = (uint8_t)bk_sliding_blocked_scan(s, hs[i], r, skip);
    }
}

/* ---- End logic for the per-key operations ----------------------------- */

/* ---- Begin logic for lanes -------------------------------------------- */

void bk_sliding_blocked_clear_lane(bk_sliding *s, uint32_t p)
{
    /* lane p is the u32 at byte 4p of every block: byte order does not
     * matter for zeroing */
    uint8_t *lane = (uint8_t *)(void *)s->slices + 4u * p;
    for (uint64_t b = 0; b < s->blocks; b++)
        memset(lane + b * 128u, 0, 4);
}

BK_INLINE uint32_t bk_sliding_blocked_lane(const uint64_t *blk, uint32_t p)
{
    return (uint32_t)(BK_LE64(blk[p >> 1]) >> (32u * (p & 1u)));
}

uint64_t bk_sliding_blocked_popcount(const bk_sliding *s, uint32_t p)
{
    uint64_t n = 0;
    for (uint64_t b = 0; b < s->blocks; b++)
        n += (uint64_t)bk_popcount64(
            bk_sliding_blocked_lane(s->slices + b * BK_SLIDING_BLOCK_WORDS, p));
    return n;
}

double bk_sliding_blocked_estimate(const bk_sliding *s, uint64_t g, uint64_t skip)
{
    double f[BK_SLIDING_LANES], sum = 0.0, r;
    uint32_t phys[BK_SLIDING_LANES];
    for (uint32_t a = 0; a < s->S; a++)
        phys[a] = bk_sliding_phys(g, a, s->S);
    for (uint64_t b = 0; b < s->blocks; b++) {
        const uint64_t *blk = s->slices + b * BK_SLIDING_BLOCK_WORDS;
        for (uint32_t a = 0; a < s->S; a++)
            f[a] = a < skip ? 0.0 : (double)bk_popcount64(bk_sliding_blocked_lane(blk, phys[a])) / 32.0;
        sum += bk_sliding_model_run_prob(f, s->S, s->k);
    }
    r = sum / (double)s->blocks;
    return r < 0.0 ? 0.0 : (r > 1.0 ? 1.0 : r);
}

int bk_sliding_blocked_unused_lanes_zero(const uint64_t *slices, uint64_t blocks, uint32_t S)
{
    const uint8_t *p = (const uint8_t *)(const void *)slices;
    for (uint64_t b = 0; b < blocks; b++)
        for (uint32_t i = 4u * S; i < 128u; i++)
            if (p[b * 128u + i] != 0)
                return 0;
    return 1;
}

/* ---- End logic for lanes ---------------------------------------------- */

/* ---- Begin logic for sizing ------------------------------------------- */

#define BK_SLIDINGB_SAMPLES 4096
#define BK_SLIDINGB_MAX_X 192   /* Poisson(lam <= 16) never reaches it in 2^53 draws */
#define BK_SLIDINGB_POW 1024    /* (31/32)^n below 1e-14 past it: a set bit */
#define BK_SLIDINGB_SEED 0x243F6A8885A308D3ULL

double bk_sliding_blocked_model_rate(uint32_t k, uint32_t l, double lam, double *se)
{
    double cdf[BK_SLIDINGB_MAX_X], pw[BK_SLIDINGB_POW];
    double pmf = exp(-lam), c = 0.0, sum = 0.0, sum2 = 0.0, mean, var;
    uint32_t S = k + l, x[BK_SLIDING_LANES];
    uint64_t st = BK_SLIDINGB_SEED;
    if (k == 0 || l == 0 || S > BK_SLIDING_LANES || !(lam > 0.0 && lam <= 16.0)) {
        *se = 0.0;
        return 1.0;
    }
    for (uint32_t n = 0; n < BK_SLIDINGB_MAX_X; n++) {
        c += pmf;
        cdf[n] = c;
        pmf *= lam / (double)(n + 1);
    }
    cdf[BK_SLIDINGB_MAX_X - 1] = 2.0; /* the search always stops */
    pw[0] = 1.0;
    for (uint32_t n = 1; n < BK_SLIDINGB_POW; n++)
        pw[n] = pw[n - 1] * (31.0 / 32.0);
    for (uint32_t i = 0; i < BK_SLIDINGB_SAMPLES; i++) {
        double rp;
        for (uint32_t t = 0; t < S; t++) {
            double u;
            uint32_t v = 0;
            st += BK_SLIDING_GAMMA;
            u = (double)(bk_mix64(st) >> 11) * (1.0 / 9007199254740992.0);
            while (u >= cdf[v])
                v++;
            x[t] = v;
        }
        {
            /* P(no run of k): dp[r] = P(current run r, none of k so far),
             * updated in place (bk_sliding_model_run_prob's recurrence) */
            double dp[BK_SLIDING_LANES], total = 1.0;
            uint32_t n = 0;
            dp[0] = 1.0;
            for (uint32_t r = 1; r < k; r++)
                dp[r] = 0.0;
            for (uint32_t a = 0; a < S; a++) {
                double q;
                n += x[a] - (a >= k ? x[a - k] : 0u); /* the generations lane a holds */
                q = n < BK_SLIDINGB_POW ? 1.0 - pw[n] : 1.0;
                for (uint32_t r = k - 1; r > 0; r--)
                    dp[r] = dp[r - 1] * q;
                dp[0] = total * (1.0 - q);
                total = 0.0;
                for (uint32_t r = 0; r < k; r++)
                    total += dp[r];
            }
            rp = total < 1.0 ? 1.0 - total : 0.0;
        }
        sum += rp;
        sum2 += rp * rp;
    }
    mean = sum / BK_SLIDINGB_SAMPLES;
    var = sum2 / BK_SLIDINGB_SAMPLES - mean * mean;
    *se = var > 0.0 ? sqrt(var / BK_SLIDINGB_SAMPLES) : 0.0;
    return mean;
}

/* lam of the independent-slices model (layout 0's, m / G = 32 / lam) that
 * meets p; 0 when none in (0, 16]. */
static double bk_sliding_blocked_lam_indep(uint32_t k, uint32_t l, double p)
{
    double lo = 1e-4, hi = 16.0;
    if (bk_sliding_model_rate(k, l, 32.0 / lo) > p)
        return 0.0;
    if (bk_sliding_model_rate(k, l, 32.0 / hi) <= p)
        return hi;
    for (int it = 0; it < 40; it++) {
        double mid = 0.5 * (lo + hi);
        if (bk_sliding_model_rate(k, l, 32.0 / mid) <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

#define BK_SLIDINGB_CANDIDATES 3

bk_rc bk_sliding_blocked_size(double error_rate, uint32_t *k_out, uint32_t *l_out, double *lam_out,
                       const char **reason)
{
    uint32_t ck[BK_SLIDINGB_CANDIDATES] = {0}, cl[BK_SLIDINGB_CANDIDATES] = {0};
    double clam[BK_SLIDINGB_CANDIDATES], ccost[BK_SLIDINGB_CANDIDATES], best = INFINITY;
    if (!(error_rate >= 1e-9 && error_rate <= 0.5)) {
        *reason = "sliding error_rate must be in [1e-9, 0.5]";
        return BK_ERR_ARG;
    }
    for (int i = 0; i < BK_SLIDINGB_CANDIDATES; i++)
        ccost[i] = INFINITY;
    /* the cheapest pairs under the independent model (a lower bound) */
    for (uint32_t k = 1; k < BK_SLIDING_LANES; k++)
        for (uint32_t l = 1; k + l <= BK_SLIDING_LANES; l++) {
            double lam = bk_sliding_blocked_lam_indep(k, l, error_rate), cost;
            int j;
            if (lam <= 0.0)
                continue;
            cost = 1024.0 / ((double)l * lam);
            if (cost >= ccost[BK_SLIDINGB_CANDIDATES - 1])
                continue;
            for (j = BK_SLIDINGB_CANDIDATES - 1; j > 0 && ccost[j - 1] > cost; j--) {
                ccost[j] = ccost[j - 1];
                ck[j] = ck[j - 1];
                cl[j] = cl[j - 1];
                clam[j] = clam[j - 1];
            }
            ccost[j] = cost;
            ck[j] = k;
            cl[j] = l;
            clam[j] = lam;
        }
    for (int i = 0; i < BK_SLIDINGB_CANDIDATES; i++) {
        double lo, hi, se, cost;
        if (!(ccost[i] < INFINITY))
            break;
        /* the blocked rate is higher, so lam is lower: about 0.8 lam_indep
         * at 1e-2..1e-4; the bracket widens down once if needed */
        lo = clam[i] * 0.6;
        hi = clam[i];
        if (bk_sliding_blocked_model_rate(ck[i], cl[i], lo, &se) + 2.0 * se > error_rate) {
            hi = lo;
            lo = clam[i] / 8.0;
            if (bk_sliding_blocked_model_rate(ck[i], cl[i], lo, &se) + 2.0 * se > error_rate)
                continue;
        }
        for (int it = 0; it < 11; it++) { /* lam to 0.04% */
            double mid = 0.5 * (lo + hi);
            if (bk_sliding_blocked_model_rate(ck[i], cl[i], mid, &se) + 2.0 * se <= error_rate)
                lo = mid;
            else
                hi = mid;
        }
        cost = 1024.0 / ((double)cl[i] * lo);
        if (cost < best) {
            best = cost;
            *k_out = ck[i];
            *l_out = cl[i];
            *lam_out = lo;
        }
    }
    if (!(best < INFINITY)) {
        *reason = "no blocked sliding shape meets this error_rate (use the sliced layout)";
        return BK_ERR_ARG;
    }
    return BK_OK;
}

/* ---- End logic for sizing --------------------------------------------- */
