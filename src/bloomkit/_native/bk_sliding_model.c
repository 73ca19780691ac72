/*
 * bk_sliding_model.c -- the rate model of the age-partitioned Bloom filter
 * (bk_sliding.c; Shtul, Baquero and Almeida, "Age-Partitioned Bloom
 * Filters", 2020) and the sizing search built on it: pure arithmetic on
 * doubles, no state.  bk_sliding.c's estimate of a live filter's rate and
 * the blocked layout (bk_sliding_blocked.c: its estimate, and its model as
 * the independent-slices bound) call the run probability and the model
 * rate through bk_sliding.h.
 *
 * Sizing (bk_sliding_model_size).  The rate at the worst moment
 * (generation full, c = G) is computed exactly for independent slices: fills
 * f_a = 1 - exp(-min(a + 1, k) G / m), and P(no run of k set bits among S
 * independent trials with these probabilities) by dynamic programming over
 * the current run length.  For a target p we search k and l (k within
 * [log2(1/p) - 2, log2(1/p) + 10], l in [1, max_l]), bisect m / G to meet p,
 * and keep the (k, l) with the fewest bits per window key, S (m/G) / l.
 * The result does not depend on the capacity (only the ratio m / G
 * matters); m is then rounded up to a multiple of 512.  Numbers (l <= 32,
 * see docs/sliding.md for the table): 1e-2 -> k = 10, l = 32, 19.9 bits a
 * key, 2.07x a Bloom filter's 9.59; 1e-3 -> 2.05x.  The paper's claim of
 * competitiveness is against sliding-window dictionaries (SWAMP), not one
 * Bloom filter; a naive ring of two Bloom filters at p / 2 each costs
 * 2 x 1.44 log2(2/p) = 2.3x at 1e-2, and forgets after up to 2x capacity.
 */
#include "bk_sliding.h"

#include <math.h>

/* ---- Begin logic for the rate model ----------------------------------- */

/* P(some k consecutive of the S trials succeed), trial a with
 * probability f[a]: one minus the chance that every run stays below k. */
double bk_sliding_model_run_prob(const double *f, uint32_t S, uint32_t k)
{
    double dp[BK_SLIDING_MAX_K], nd[BK_SLIDING_MAX_K], none = 0.0;
    for (uint32_t r = 0; r < k; r++)
        dp[r] = 0.0;
    dp[0] = 1.0;
    for (uint32_t a = 0; a < S; a++) {
        double q = f[a];
        for (uint32_t r = 0; r < k; r++)
            nd[r] = 0.0;
        for (uint32_t r = 0; r < k; r++) {
            nd[0] += dp[r] * (1.0 - q);
            if (r + 1 < k)
                nd[r + 1] += dp[r] * q;
        }
        for (uint32_t r = 0; r < k; r++)
            dp[r] = nd[r];
    }
    for (uint32_t r = 0; r < k; r++)
        none += dp[r];
    /* rounding can take the sum of the run probabilities a few ulps past 1
     * (2 keys in 10^5: -8.88e-16, issue #31 item 5): a rate is in [0, 1] */
    if (!(none < 1.0))
        return 0.0;
    return none > 0.0 ? 1.0 - none : 1.0;
}

double bk_sliding_model_rate(uint32_t k, uint32_t l, double m_over_g)
{
    double f[BK_SLIDING_MAX_SLICES];
    uint32_t S = k + l;
    if (k == 0 || k > BK_SLIDING_MAX_K || l == 0 || l > BK_SLIDING_MAX_L)
        return 1.0;
    for (uint32_t a = 0; a < S; a++)
        f[a] = -expm1(-(double)(a + 1 < k ? a + 1 : k) / m_over_g);
    return bk_sliding_model_run_prob(f, S, k);
}

bk_rc bk_sliding_model_size(double error_rate, uint32_t max_l, uint32_t *k_out, uint32_t *l_out,
                      double *r_out, const char **reason)
{
    double best = INFINITY, base;
    int k_lo, k_hi;
    if (!(error_rate >= BK_SLIDING_MIN_ERROR_RATE && error_rate <= BK_SLIDING_MAX_ERROR_RATE)) {
        *reason = "sliding error_rate must be in [1e-9, 0.5]";
        return BK_ERR_ARG;
    }
    if (max_l == 0 || max_l > BK_SLIDING_MAX_L) {
        *reason = "sliding max_l must be in [1, 256]";
        return BK_ERR_ARG;
    }
    base = log2(1.0 / error_rate);
    k_lo = (int)floor(base) - 2;
    k_hi = (int)ceil(base) + 10;
    if (k_lo < 1)
        k_lo = 1;
    if (k_hi > 30)
        k_hi = 30;
    for (int k = k_lo; k <= k_hi; k++) {
        for (uint32_t l = 1; l <= max_l; l++) {
            double lo = 0.01, hi = 1e4, cost;
            if (bk_sliding_model_rate((uint32_t)k, l, hi) > error_rate)
                continue;
            /* bits per window key S r / l with r >= lo: skip hopeless pairs */
            if (((double)k + (double)l) * lo / l >= best)
                continue;
            for (int it = 0; it < 48 && hi - lo > 1e-6 * hi; it++) {
                double mid = 0.5 * (lo + hi);
                if (bk_sliding_model_rate((uint32_t)k, l, mid) <= error_rate)
                    hi = mid;
                else
                    lo = mid;
            }
            cost = ((double)k + (double)l) * hi / l;
            if (cost < best) {
                best = cost;
                *k_out = (uint32_t)k;
                *l_out = l;
                *r_out = hi;
            }
        }
    }
    if (!(best < INFINITY)) {
        *reason = "no sliding shape meets this error_rate";
        return BK_ERR_ARG;
    }
    return BK_OK;
}

/* ---- End logic for the rate model ------------------------------------- */
