"""The false-positive rate of the blocked layout: the two models of design.py.

Pure Python, standard library only.  ``poisson_mixture`` is the Poisson fill
model of layout version 0; ``occupancy_fpr`` the exact occupancy model of
version 1, evaluated in closed form, with 30+ decimal digits where the
closed form loses digits, or load by load for nearly empty filters.
design.py sizes filters with them and validates the public entry point,
:func:`bloomkit.design.blocked_false_positive_rate`; docs/math.md, section
2.3, has the derivations.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

_HALF_LN_2PI = 0.5 * math.log(2.0 * math.pi)
# Poisson-sum truncation: stop walking away from the mode once a term is
# below _REL_TOL times the running total *and* the terms are decreasing.
_REL_TOL = 1e-18
# Above this load (standard deviation sqrt(lambda) >= 64) the summand is
# sampled every floor(sqrt(lambda) / 8) loads instead of at every load
# (trapezoid rule on a smooth, log-concave sequence; see poisson_mixture).
_STRIDE_MIN_SIGMA = 64.0


# --------------------------------------------------------------------------
# blocked layout: Poisson mixture
# --------------------------------------------------------------------------


def _log_poisson_pmf(j: int, lam: float) -> float:
    """``ln(lam**j * exp(-lam) / j!)``, accurate even for huge ``lam`` and ``j``.

    Small j: ``j ln(lam) - lam - lgamma(j + 1)``.  Otherwise Loader's
    saddle-point form ``-ln(2 pi j)/2 - stirlerr(j) - bd0(j, lam)``, which
    avoids the cancellation of ``j ln(lam) - lgamma(j + 1)`` when both are
    ~1e15 (lgamma would leave an absolute error ~0.1 in the exponent).
    """
    if j == 0:
        return -lam
    if j < 16:
        return j * math.log(lam) - lam - math.lgamma(j + 1.0)
    jf = float(j)
    inv = 1.0 / jf
    inv2 = inv * inv
    # Stirling-series remainder of ln(j!), error < 1e-17 for j >= 16.
    stirlerr = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 / 1680)))
    return -0.5 * math.log(jf) - _HALF_LN_2PI - stirlerr - _bd0(jf, lam)


def _bd0(x: float, lam: float) -> float:
    """Deviance term ``x ln(x / lam) + lam - x`` >= 0, without cancellation.

    Loader (2000): for ``|x - lam| < 0.1 (x + lam)`` use the series in
    ``v = (x - lam) / (x + lam)``:
    ``bd0 = (x - lam) v + 2 x sum_{i>=1} v**(2i+1) / (2i+1)``.
    """
    diff = x - lam
    if abs(diff) < 0.1 * (x + lam):
        v = diff / (x + lam)
        total = diff * v
        ej = 2.0 * x * v
        v2 = v * v
        i = 1
        while True:
            ej *= v2
            nxt = total + ej / (2 * i + 1)
            if nxt == total:
                return nxt
            total = nxt
            i += 1
    return x * math.log(x / lam) + lam - x


def poisson_mixture(lam: float, num_hashes: int, block_bits: int) -> float:
    """``sum_j Pois(j; lam) * (1 - (1 - 1/B) ** (j k)) ** k`` (lam > 0).

    The summand is log-concave in j (a Poisson pmf times
    ``(1 - q**j) ** k``, both log-concave), hence unimodal with
    monotonically decreasing term ratios on each side of its peak.  We start
    at the Poisson mode and walk outwards in both directions; a direction
    stops once its terms are decreasing and the current term is below
    ``1e-18`` of the running total (the remaining tail is then bounded by a
    geometric series of the same order).

    For ``lam < 4096`` every load j is visited, using the pmf recurrence
    ``P(j+1) = P(j) * lam / (j+1)``.  For larger loads the summand is
    sampled every ``s = floor(sqrt(lam) / 8)`` loads and weighted by s
    (trapezoid rule, pmf from :func:`_log_poisson_pmf`).  By Poisson
    summation the aliasing error of that rule is of order
    ``2**k * exp(-min(lam, 2 pi**2 * 64))``, far below double precision
    (measured: <= 2e-14 relative against the term-by-term sum).
    """
    k = num_hashes
    # c = k ln(1 - 1/B): a block holding j keys has a given bit clear with
    # probability u_j = exp(j c) = q**j, so a probe hits a set bit with
    # probability 1 - u_j.
    c = k * math.log1p(-1.0 / block_bits)
    sigma = math.sqrt(lam)
    mode = int(lam)
    tol = _REL_TOL

    if sigma < _STRIDE_MIN_SIGMA:
        # u_j by the recurrence u_{j+1} = u_j q from an exact u_mode: the
        # drift is |j - mode| ulps, giving a relative error ~1e-14 overall
        # (at most ~B ulps when lam << 1), at half the cost of exp per term.
        q = math.exp(c)
        pmf_mode = math.exp(_log_poisson_pmf(mode, lam))
        u_mode = math.exp(mode * c)
        total = pmf_mode * (1.0 - u_mode) ** k
        # upwards
        pmf, u, prev, j = pmf_mode, u_mode, total, mode
        while True:
            j += 1
            pmf *= lam / j
            u *= q
            term = pmf * (1.0 - u) ** k
            total += term
            if term <= prev and term <= tol * total:
                break
            prev = term
        # downwards
        pmf, u, prev, j = pmf_mode, u_mode, math.inf, mode
        while j > 0:
            pmf *= j / lam
            j -= 1
            u /= q
            term = pmf * (1.0 - u) ** k if u < 1.0 else 0.0
            total += term
            if term <= prev and term <= tol * total:
                break
            prev = term
        return float(min(1.0, total))

    step = max(1, int(sigma / 8.0))

    def term_at(j: int) -> float:
        return float(math.exp(_log_poisson_pmf(j, lam)) * (-math.expm1(j * c)) ** k)

    total = term_at(mode)
    prev = total
    j = mode
    while True:
        j += step
        term = term_at(j)
        total += term
        if term <= prev and term <= tol * total:
            break
        prev = term
    prev = math.inf
    j = mode
    while j - step >= 0:
        j -= step
        term = term_at(j)
        total += term
        if term <= prev and term <= tol * total:
            break
        prev = term
    return min(1.0, total * step)


# --------------------------------------------------------------------------
# blocked layout: the exact occupancy model
# --------------------------------------------------------------------------
#
# A block that took t throws (the k probes of each of its keys) has S set
# bits; a query's k probes are independent uniform positions, so given S it
# is a false positive with probability (S/B)**k.  With Y = B - S empty bits
# and the factorial moments E[(Y)_r] = (B)_r (1 - r/B)**t of the occupancy
# problem (Y**i = sum_r S2(i, r) (Y)_r, Stirling numbers of the second kind):
#
#     E[(S/B)**k] = sum_{r=0..k} w_r (1 - r/B)**t,
#     w_r = (B)_r sum_{i=r..k} C(k, i) (-1)**i S2(i, r) / B**i.
#
# The load J of the query's block is Binomial(n, 1/b) and t = J k, so
# E[(1 - r/B)**(J k)] = (1 - (1 - rho_r) / b)**n with rho_r = (1 - r/B)**k:
#
#     FPR = sum_{r=0..k} w_r (1 - (1 - rho_r) / b)**n                  (exact)
#
# k + 1 terms instead of a sum over loads.  The w_r alternate in sign
# (|w_r| ~ C(k, r)), so the sum loses digits when the rate is small next to
# sum_r |term_r| (k >= ~18, or low fill): then occupancy_closed_decimal
# evaluates it with 30+ decimal digits, and for nearly empty filters
# occupancy_sum adds the loads one by one with the cover probabilities of
# a positive recurrence.  At the designs of n = 10**6 the exact
# rate exceeds the Poisson fill model by 0.19% (p = 0.1), 0.93% (1e-2),
# 2.2% (1e-3) and 3.9% (1e-4) (docs/math.md, section 2.3).


@lru_cache(maxsize=256)
def _stirling2_row(i: int) -> tuple[int, ...]:
    """Stirling numbers of the second kind S2(i, r), r = 0..i."""
    if i == 0:
        return (1,)
    prev = _stirling2_row(i - 1)
    return tuple(
        (r * prev[r] if r < i else 0) + (prev[r - 1] if r >= 1 else 0) for r in range(i + 1)
    )


@lru_cache(maxsize=256)
def _occupancy_weights_exact(k: int, block_bits: int) -> tuple[Fraction, ...]:
    """The w_r above, as exact rationals."""
    weights = []
    falling = 1  # (B)_r
    for r in range(k + 1):
        if r > 0:
            falling *= block_bits - (r - 1)
        total = Fraction(0)
        if falling:  # else r > B: no r empty bins to choose, w_r = 0
            for i in range(r, k + 1):
                total += Fraction(math.comb(k, i) * (-1) ** i * _stirling2_row(i)[r],
                                  block_bits**i)
        weights.append(total * falling)
    return tuple(weights)


@lru_cache(maxsize=256)
def _occupancy_weights(k: int, block_bits: int) -> tuple[float, ...]:
    """The w_r above, each rounded once to a double."""
    return tuple(float(w) for w in _occupancy_weights_exact(k, block_bits))


@lru_cache(maxsize=256)
def distinct_probs(k: int, block_bits: int) -> tuple[float, ...]:
    """P(a key's k probes hit exactly d distinct bits), d = 0..k: (B)_d S2(k, d) / B**k."""
    out = []
    falling = 1
    for d in range(k + 1):
        if d > 0:
            falling *= block_bits - (d - 1)
        out.append(float(Fraction(falling * _stirling2_row(k)[d], block_bits**k)))
    return tuple(out)


# Largest number of throws occupancy_sum follows one by one.
_MAX_THROWS = 1 << 20


def _occupancy_closed(n: int, blocks: int, k: int, bb: int) -> tuple[float, float]:
    """The exact FPR by the closed form, and a bound on its rounding error."""
    weights = _occupancy_weights(k, bb)
    terms = []
    error = 0.0
    for r, w in enumerate(weights):
        if w == 0.0:
            continue
        # 1 - rho_r = 1 - (1 - r/B)**k, without cancellation for small r/B
        miss = 1.0 if r >= bb else -math.expm1(k * math.log1p(-r / bb))
        arg = 0.0
        if miss == 0.0:
            e = 1.0
        elif miss >= blocks:  # one block that every key fills completely
            e = 0.0
        else:
            arg = n * math.log1p(-miss / blocks)
            e = math.exp(arg)
        term = w * e
        terms.append(term)
        # Relative error of the term, in units of 2**-53: arg carries ~5
        # roundings (expm1, log1p, /, log1p, *), so exp(arg) is off by
        # 5 |arg| + 1, and w_r and the product add one each.
        error += abs(term) * (5.0 * abs(arg) + 4.0)
    # fsum adds the terms exactly.  Measured against occupancy_sum at
    # n = 10**6 the error is 5-20x below this bound: 1e-13 relative at the
    # design for p = 1e-2 (k = 6), 2e-10 at 1e-4 (k = 12), 2e-7 at 1e-6
    # (k = 16), 4e-6 at 1e-7 (k = 18), 1e-5 for k = 22 at 1e-7.
    error *= 2.0**-53
    return math.fsum(terms), error


def _dec_log1m(x: Decimal, tiny: Decimal) -> Decimal:
    """ln(1 - x) for 0 <= x < 1 in the current decimal context.

    The series -sum x**i / i for x <= 0.01 (about 30 us less than ln()
    at 40 digits and exact near 1); ``tiny`` is the relative truncation.
    """
    if x > Decimal("0.01"):
        return (1 - x).ln()
    total = Decimal(0)
    power = x
    i = 1
    while True:
        term = power / i
        total += term
        if term <= tiny * total:
            return -total
        power *= x
        i += 1


def _dec_exp(a: Decimal, squarings: int, tiny: Decimal) -> Decimal:
    """exp(a) in the current decimal context, faster than Decimal.exp (which
    rounds correctly at a price we do not need): the Taylor series of
    a / 2**squarings, squared that many times.  Each squaring doubles the
    relative error: the caller keeps 0.31 digit per squaring in hand."""
    a = a / (1 << squarings)
    total = Decimal(1)
    term = Decimal(1)
    i = 1
    while True:
        term = term * a / i
        total += term
        if abs(term) <= tiny:
            break
        i += 1
    for _ in range(squarings):
        total *= total
    return total


def occupancy_closed_decimal(
    n: int, blocks: int, k: int, bb: int, digits: int
) -> tuple[float, float]:
    """The closed form in decimal arithmetic good to ``digits`` digits per
    term, and an error bound.

    For rates far below their terms (high k, low fill), where doubles
    cancel.  Decimal arithmetic is the same on every platform (no libm).
    The working precision has guard digits for ``1 - miss/b`` (its log
    loses log10(b) digits) and for the squarings in _dec_exp (0.31 digit
    per doubling of |arg| past 2**-12).  A term with |arg| > 1e5 is below
    1e-43000 and set to 0: that only happens when blocks are so full that
    the rate is near 1.
    """
    # |arg| <= n (miss <= 1 <= b), so halving it to below 2**-12 takes at
    # most log2(n) + 12 squarings.
    squarings_max = max(0, n.bit_length() + 12)
    with localcontext() as ctx:
        one = Decimal(1)
        terms = []
        error = Decimal(0)
        base_prec = digits + len(str(blocks)) + 3
        for r, w in enumerate(_occupancy_weights_exact(k, bb)):
            if w == 0:
                continue
            ctx.prec = base_prec
            tiny = Decimal(10) ** -base_prec
            miss = one - (one - Decimal(r) / bb) ** k
            arg = Decimal(0)
            if miss >= blocks:
                e = Decimal(0)
            else:
                arg = _dec_log1m(miss / blocks, tiny) * n
                if arg < -100_000:
                    e = Decimal(0)
                else:
                    squarings = min(squarings_max, max(0, int(-arg * 4096).bit_length()))
                    ctx.prec = base_prec + (31 * squarings + 99) // 100
                    e = _dec_exp(arg, squarings, Decimal(10) ** -ctx.prec)
            ctx.prec = base_prec
            term = Decimal(w.numerator) / Decimal(w.denominator) * e
            terms.append(term)
            error += abs(term) * (abs(arg) + 10)
        total = sum(terms, Decimal(0))
        error *= Decimal(10) ** -digits
        return float(total), float(error)


def occupancy_sum(n: int, blocks: int, k: int, bb: int) -> float:
    """The exact FPR load by load (Binomial(n, 1/b) pmf times E[(S/B)**k]).

    E[(S/B)**k] = sum_d P(D = d) c_d(t): D is the number of distinct bits
    among the query's k probes, c_d(t) the probability that t throws cover
    d given bits, from c_d(t) = (d/B) c_{d-1}(t-1) + (1 - d/B) c_d(t-1)
    (condition on the first throw): positive terms only, no cancellation.
    Used for low loads, where the closed form cancels; stops once the pmf
    has passed its mode and a term is below 1e-18 of the running total.
    """
    pd = distinct_probs(k, bb)
    cover = [1.0] + [0.0] * k
    mean = n / blocks

    def advance(throws: int) -> None:
        for _ in range(throws):
            for d in range(k, 0, -1):
                cover[d] = (d / bb) * cover[d - 1] + (1.0 - d / bb) * cover[d]

    def block_rate() -> float:
        return math.fsum(pd[d] * cover[d] for d in range(1, k + 1))

    if blocks == 1:  # every key is in the query's block
        advance(n * k)
        return block_rate()
    q = 1.0 / blocks
    log_ratio = math.log(q / (1.0 - q))
    log_pmf = n * math.log1p(-q)  # ln P(J = 0), in logs: it may underflow
    total = 0.0
    j = 0
    while j < n:
        log_pmf += math.log((n - j) / (j + 1)) + log_ratio
        j += 1
        advance(k)
        term = math.exp(log_pmf) * block_rate()
        total += term
        if j >= mean and term <= 1e-18 * total:
            break
    return total


def occupancy_fpr(n: int, blocks: int, k: int, bb: int) -> float:
    """Exact FPR of ``blocks`` blocks of ``bb`` bits, ``k`` probes, ``n`` keys."""
    if n == 0:
        return 0.0
    total, error = _occupancy_closed(n, blocks, k, bb)
    if error <= 1e-4 * total:  # good to ~2e-6 relative, 1e-10 at p >= 1e-4
        return min(1.0, total)
    # The doubles cancelled: the rate is small next to its terms (k >= ~20
    # or low fill).  Decimal arithmetic first (about 25 us a term at 40
    # digits), then the sum over loads.
    for digits in (30, 60, 120, 240):
        total, error = occupancy_closed_decimal(n, blocks, k, bb, digits)
        if error <= 1e-12 * total:
            return min(1.0, total)
    lam = n / blocks
    throws = n * k if blocks == 1 else (lam + 12.0 * math.sqrt(lam) + 60.0) * k
    if throws <= _MAX_THROWS:
        return min(1.0, occupancy_sum(n, blocks, k, bb))
    return min(1.0, max(0.0, total))  # pragma: no cover - needs k in the hundreds
