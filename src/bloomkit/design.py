"""Sizing math for bloomkit filters (pure Python, standard library only).

Two layouts are supported:

``classic``
    One bit array of ``m`` bits; every key sets ``k`` bits anywhere in it.
    Sized with the textbook formulas::

        m = ceil(-n * ln(p) / ln(2)**2)
        k = max(1, round(m / n * ln(2)))
        FPR(m, k, n) = (1 - exp(-k * n / m)) ** k

``blocked``
    ``num_blocks`` blocks of ``BLOCK_BITS`` = 512 bits (one 64-byte cache
    line).  Every key picks one block uniformly and sets ``k`` bits inside
    it.  The false-positive rate exceeds the classic formula for the same
    bits and k in every practical configuration (1.17x at 10 bits/key, 1.8x
    at 16), because the overloaded blocks dominate it.  Two models:

    * the exact occupancy model (layout version 1, the default): block
      loads ``J ~ Binomial(n, 1/b)``, and a block that took ``t = J k``
      throws has a random number ``S`` of set bits, so
      ``FPR = E[(S / B) ** k]``, evaluated in closed form
      (:func:`blocked_false_positive_rate`);
    * the Poisson fill model (layout version 0, the filters written before
      version 1 existed), which replaces ``S`` by its mean::

          FPR0 = sum_j Pois(j; lambda) * (1 - (1 - 1/B) ** (j * k)) ** k

      and so underestimates the rate of independent probes by 0.9% at
      p = 1e-2, 2.2% at 1e-3 and 3.9% at 1e-4 (Jensen: the fill of a block
      varies for a given load).

All functions validate their arguments and raise ``TypeError`` (wrong type)
or ``ValueError`` (out of range) with a message that says what is allowed.
See ``docs/math.md`` for the derivations and reference figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "BLOCKED_LAYOUT_VERSION",
    "BLOCKED_LAYOUT_VERSIONS",
    "BLOCK_BITS",
    "LAYOUTS",
    "MAX_BLOCKED_HASHES",
    "MAX_CAPACITY",
    "MAX_NUM_BITS",
    "MIN_ERROR_RATE",
    "Design",
    "blocked_estimate_count",
    "blocked_false_positive_rate",
    "design",
    "estimate_count",
    "false_positive_rate",
    "optimal_num_hashes",
    "validate_capacity",
    "validate_error_rate",
    "validate_layout_version",
]

MAX_CAPACITY = 2**48
"""Largest ``capacity`` accepted by :func:`validate_capacity` / constructors."""

MAX_NUM_BITS = 2**46
"""Largest number of bits in one filter (2**46 bits = 8 TiB of payload)."""

BLOCK_BITS = 512
"""Bits per block of the blocked layout: one 64-byte cache line."""

MIN_ERROR_RATE = 1e-12
"""Smallest target error rate accepted (documented floor)."""

MAX_BLOCKED_HASHES = 24
"""Largest ``k`` considered when sizing a blocked filter."""

# Version-0 blocked filters take their in-block bit pattern from 32 bits of
# the key's hash, so a query matches a stored key's whole pattern with
# probability about 2**-32 per key in its block (~20 keys): about 5e-9 at
# 1e-6. Below 1e-7 that term would be more than ~5% of the target, so we
# refuse.  Version 1 draws the pattern from 64-bit words and has no such
# term; it keeps the same floor so that a scalable chain ends at the same
# link whichever version its links use (below 1e-7 blocked filters cost
# over 45 bits per key anyway: use the classic layout there).
MIN_BLOCKED_ERROR_RATE = 1e-7
"""Smallest target error rate accepted for the blocked layout."""

LAYOUTS = ("classic", "blocked")

BLOCKED_LAYOUT_VERSIONS = (0, 1)
"""Blocked layout versions this bloomkit reads and writes (docs/FORMAT.md)."""

BLOCKED_LAYOUT_VERSION = 1
"""Version of new blocked filters: 1 = in-block positions from a splitmix64
stream of the key hash, sized with the exact occupancy model; 0 = positions
from 32 bits of the hash, sized with the Poisson fill model (every blocked
filter written before version 1 existed)."""

# k -> (minimal num_blocks, its model FPR), or None if over MAX_NUM_BITS.
_Results = dict[int, tuple[int, float] | None]

_LN2 = math.log(2.0)
_LN2_SQUARED = _LN2 * _LN2
_HALF_LN_2PI = 0.5 * math.log(2.0 * math.pi)

# Poisson-sum truncation: stop walking away from the mode once a term is
# below _REL_TOL times the running total *and* the terms are decreasing.
_REL_TOL = 1e-18
# Above this load (standard deviation sqrt(lambda) >= 64) the summand is
# sampled every floor(sqrt(lambda) / 8) loads instead of at every load
# (trapezoid rule on a smooth, log-concave sequence; see _poisson_mixture).
_STRIDE_MIN_SIGMA = 64.0
# Maximum number of secant steps in the block-count search.
_SECANT_STEPS = 12


# --------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------


def _as_int(name: str, value: object) -> int:
    """Return ``value`` as an int; accepts int and ``__index__`` types, not bool."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    if isinstance(value, int):
        return int(value)
    index = getattr(type(value), "__index__", None)
    if index is None:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    result = index(value)
    if not isinstance(result, int):  # pragma: no cover - broken __index__
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return int(result)


def _require_int(name: str, value: object, minimum: int) -> int:
    result = _as_int(name, value)
    if result < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {result}")
    return result


def validate_capacity(capacity: object) -> int:
    """Validate a filter capacity (expected number of distinct keys).

    Allowed: an ``int`` (or an object implementing ``__index__``, e.g. a
    NumPy integer), not ``bool`` and not ``float``, with
    ``1 <= capacity <= MAX_CAPACITY`` (2**48).  Returns it as a plain int.
    """
    if isinstance(capacity, bool) or not (
        isinstance(capacity, int) or hasattr(type(capacity), "__index__")
    ):
        raise TypeError(
            f"capacity must be an int with 1 <= capacity <= 2**48, not {type(capacity).__name__}"
        )
    value = _as_int("capacity", capacity)
    if not 1 <= value <= MAX_CAPACITY:
        raise ValueError(
            f"capacity must be an int with 1 <= capacity <= 2**48 ({MAX_CAPACITY}), got {value}"
        )
    return value


def validate_error_rate(error_rate: object) -> float:
    """Validate a target false-positive rate.

    Allowed: a real number (``float``, ``int`` or any non-string type with
    ``__float__``; not ``bool``) that is finite with
    ``1e-12 <= error_rate < 1``.  NaN, infinities, ``0``, ``-0.0`` and
    ``1`` are rejected.  Returns it as a float.
    """
    allowed = f"error_rate must be a real number with {MIN_ERROR_RATE:g} <= error_rate < 1"
    if isinstance(error_rate, (bool, str, bytes, bytearray, complex)) or not (
        isinstance(error_rate, (int, float)) or hasattr(type(error_rate), "__float__")
    ):
        raise TypeError(f"{allowed}, not {type(error_rate).__name__}")
    try:
        value = float(error_rate)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"{allowed}, not {type(error_rate).__name__}") from exc
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{allowed}, got {value!r}")
    if not 0.0 < value < 1.0:
        raise ValueError(f"{allowed}, got {value!r}")
    if value < MIN_ERROR_RATE:
        raise ValueError(f"{allowed}, got {value!r} (below the supported floor {MIN_ERROR_RATE:g})")
    return value


def _validate_layout(layout: object) -> str:
    if not isinstance(layout, str):
        raise TypeError(f"layout must be one of {LAYOUTS!r}, not {type(layout).__name__}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS!r}, got {layout!r}")
    return layout


# --------------------------------------------------------------------------
# the Design record
# --------------------------------------------------------------------------


def _format_bytes(nbytes: int) -> str:
    if nbytes < 1024:
        return f"{nbytes} B"
    size = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024.0
        if size < 1024.0 or unit == "TiB":
            break
    return f"{size:.1f} {unit}"


@dataclass(frozen=True)
class Design:
    """The result of :func:`design`: the parameters of one filter.

    ``expected_error_rate`` is the model false-positive rate once
    ``capacity`` distinct keys have been added: the classic formula for the
    classic layout, the exact occupancy model for blocked layout version 1
    and the Poisson fill model for version 0.  ``layout_version`` is 0 for
    the classic layout.
    """

    layout: str
    capacity: int
    error_rate: float
    num_bits: int
    num_hashes: int
    num_blocks: int
    expected_error_rate: float
    layout_version: int = 0

    @property
    def nbytes(self) -> int:
        """Payload bytes: classic ``ceil(m / 64) * 8``, blocked ``num_blocks * 64``."""
        if self.layout == "blocked":
            return self.num_blocks * (BLOCK_BITS // 8)
        return -(-self.num_bits // 64) * 8

    @property
    def bits_per_key(self) -> float:
        """``num_bits / capacity``."""
        return self.num_bits / self.capacity

    def __str__(self) -> str:
        blocks = ""
        if self.layout == "blocked":
            plural = "" if self.num_blocks == 1 else "s"
            blocks = f", {self.num_blocks:,} block{plural}"
        return (
            f"{self.layout} Bloom filter for {self.capacity:,} keys at "
            f"p={self.error_rate:g}: {self.num_bits:,} bits "
            f"({_format_bytes(self.nbytes)}){blocks}, k={self.num_hashes}, "
            f"{self.bits_per_key:.2f} bits/key, "
            f"model FPR {self.expected_error_rate:.4%}"
        )


# --------------------------------------------------------------------------
# formulas
# --------------------------------------------------------------------------


def false_positive_rate(num_bits: int, num_hashes: int, count: int) -> float:
    """Classic-layout model FPR ``(1 - exp(-k * n / m)) ** k``.

    ``num_bits`` (m) >= 1, ``num_hashes`` (k) >= 1, ``count`` (n) >= 0.
    Returns 0.0 for ``count == 0``.
    """
    m = _require_int("num_bits", num_bits, 1)
    k = _require_int("num_hashes", num_hashes, 1)
    n = _require_int("count", count, 0)
    if n == 0:
        return 0.0
    # -expm1(-x) == 1 - exp(-x) without cancellation for small x.
    fill = -math.expm1(-(k * n) / m)
    return float(fill**k)


def optimal_num_hashes(num_bits: int, capacity: int) -> int:
    """``max(1, round(m / n * ln 2))``: the k minimising the classic FPR."""
    m = _require_int("num_bits", num_bits, 1)
    n = _require_int("capacity", capacity, 1)
    return max(1, round(m / n * _LN2))


def estimate_count(num_bits: int, num_hashes: int, bits_set: int) -> float:
    """Swamidass-Baldi estimate of the number of distinct keys added.

    ``n* = -m / k * ln(1 - X / m)`` where X = ``bits_set``.  Returns
    ``math.inf`` when every bit is set (``X == m``).
    """
    m = _require_int("num_bits", num_bits, 1)
    k = _require_int("num_hashes", num_hashes, 1)
    x = _require_int("bits_set", bits_set, 0)
    if x > m:
        raise ValueError(f"bits_set must be an int with 0 <= bits_set <= num_bits ({m}), got {x}")
    if x == m:
        return math.inf
    if x == 0:
        return 0.0
    return -m / k * math.log1p(-x / m)


def blocked_estimate_count(num_blocks: int, num_hashes: int, bits_set: int) -> float:
    """Estimate of the number of distinct keys in a blocked filter.

    With ``n`` keys spread uniformly over ``b`` blocks of ``B = 512`` bits,
    each setting ``k`` positions drawn with replacement, a bit is still
    clear with probability ``(1 - c / b) ** n`` where
    ``c = 1 - (1 - 1/B) ** k``; inverting the expected fill gives::

        n* = ln(1 - X / m) / ln(1 - c / b)

    (:func:`estimate_count` reads about ``(k - 1) / 1024`` low here: it
    takes the ``k`` probes of a key to be distinct bits.)  The C core
    computes the same expression in the same order, so the count a union
    stores is the same double everywhere (py_bloom.c, bloomkit.redis).  Returns
    ``math.inf`` when every bit is set.
    """
    b = _require_int("num_blocks", num_blocks, 1)
    k = _require_int("num_hashes", num_hashes, 1)
    x = _require_int("bits_set", bits_set, 0)
    m = b * BLOCK_BITS
    if x > m:
        raise ValueError(f"bits_set must be an int with 0 <= bits_set <= num_bits ({m}), got {x}")
    if x == m:
        return math.inf
    if x == 0:
        return 0.0
    c = -math.expm1(k * math.log1p(-1.0 / BLOCK_BITS))
    return math.log1p(-x / m) / math.log1p(-c / b)


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


def _poisson_mixture(lam: float, num_hashes: int, block_bits: int) -> float:
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
# sum_r |term_r| (k >= ~18, or low fill): then _occupancy_closed_decimal
# evaluates it with 30+ decimal digits, and for nearly empty filters
# _occupancy_sum adds the loads one by one with the cover probabilities of
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
def _distinct_probs(k: int, block_bits: int) -> tuple[float, ...]:
    """P(a key's k probes hit exactly d distinct bits), d = 0..k: (B)_d S2(k, d) / B**k."""
    out = []
    falling = 1
    for d in range(k + 1):
        if d > 0:
            falling *= block_bits - (d - 1)
        out.append(float(Fraction(falling * _stirling2_row(k)[d], block_bits**k)))
    return tuple(out)


# Largest number of throws _occupancy_sum follows one by one.
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
    # fsum adds the terms exactly.  Measured against _occupancy_sum at
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


def _occupancy_closed_decimal(
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


def _occupancy_sum(n: int, blocks: int, k: int, bb: int) -> float:
    """The exact FPR load by load (Binomial(n, 1/b) pmf times E[(S/B)**k]).

    E[(S/B)**k] = sum_d P(D = d) c_d(t): D is the number of distinct bits
    among the query's k probes, c_d(t) the probability that t throws cover
    d given bits, from c_d(t) = (d/B) c_{d-1}(t-1) + (1 - d/B) c_d(t-1)
    (condition on the first throw): positive terms only, no cancellation.
    Used for low loads, where the closed form cancels; stops once the pmf
    has passed its mode and a term is below 1e-18 of the running total.
    """
    pd = _distinct_probs(k, bb)
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


def _occupancy_fpr(n: int, blocks: int, k: int, bb: int = BLOCK_BITS) -> float:
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
        total, error = _occupancy_closed_decimal(n, blocks, k, bb, digits)
        if error <= 1e-12 * total:
            return min(1.0, total)
    lam = n / blocks
    throws = n * k if blocks == 1 else (lam + 12.0 * math.sqrt(lam) + 60.0) * k
    if throws <= _MAX_THROWS:
        return min(1.0, _occupancy_sum(n, blocks, k, bb))
    return min(1.0, max(0.0, total))  # pragma: no cover - needs k in the hundreds


def blocked_false_positive_rate(
    num_blocks: int, num_hashes: int, count: int, block_bits: int = BLOCK_BITS
) -> float:
    """Exact model FPR of a blocked filter with ``count`` keys (layout version 1).

    Every key picks one of ``num_blocks`` blocks of ``block_bits`` bits
    uniformly and sets ``num_hashes`` positions in it, chosen independently
    and uniformly (with replacement); a query does the same.  The load of
    the query's block is ``Binomial(count, 1/num_blocks)`` and, given the
    ``S`` bits its load set, the query is a false positive with probability
    ``(S / B) ** k``, so ``FPR = E[(S / B) ** k]`` (the closed form is in
    the comment above; docs/math.md, section 2.3).  The Poisson fill model
    of layout version 0 is ``_poisson_mixture``.

    Returns 0.0 for ``count == 0``.
    """
    b = _require_int("num_blocks", num_blocks, 1)
    k = _require_int("num_hashes", num_hashes, 1)
    n = _require_int("count", count, 0)
    bb = _require_int("block_bits", block_bits, 2)
    return _occupancy_fpr(n, b, k, bb)


# --------------------------------------------------------------------------
# sizing
# --------------------------------------------------------------------------


def _too_big(capacity: int, error_rate: float, layout: str, bits: float | None) -> ValueError:
    need = "more" if bits is None else f"about {bits:.4g} bits, more"
    return ValueError(
        f"a {layout} filter for capacity={capacity} at error_rate={error_rate:g} "
        f"needs {need} than MAX_NUM_BITS = 2**46 bits (8 TiB); use a larger "
        "error_rate or split the keys over several filters"
    )


def _classic_design(n: int, p: float) -> Design:
    # Double-precision evaluation; see docs/math.md ("Floating point").
    exact = -n * math.log(p) / _LN2_SQUARED
    if exact > MAX_NUM_BITS:
        raise _too_big(n, p, "classic", exact)
    m = max(1, math.ceil(exact))
    k = optimal_num_hashes(m, n)
    return Design(
        layout="classic",
        capacity=n,
        error_rate=p,
        num_bits=m,
        num_hashes=k,
        num_blocks=0,
        expected_error_rate=false_positive_rate(m, k, n),
    )


def _secant_root(g: Callable[[int], float], x0: int, x1: int) -> float:
    """Root of the secant of g against ln(num_blocks) through x0, x1 (nan if none)."""
    if x0 <= 0 or x1 <= 0 or x0 == x1:
        return math.nan
    g0, g1 = g(x0), g(x1)
    if not (math.isfinite(g0) and math.isfinite(g1)) or g0 == g1:
        return math.nan
    l0, l1 = math.log(x0), math.log(x1)
    root = l1 - g1 * (l1 - l0) / (g1 - g0)
    if not root < 700.0:  # also catches nan
        return math.nan
    return math.exp(root)


def _model(version: int, cells: int = BLOCK_BITS) -> Callable[[int, int, int], float]:
    """The blocked FPR model ``(n, num_blocks, k) -> FPR`` of a layout version
    (blocks of ``cells`` bits, or counters of a blocked counting filter)."""
    if version == 0:
        return lambda n, blocks, k: _poisson_mixture(n / blocks, k, cells)
    return lambda n, blocks, k: _occupancy_fpr(n, blocks, k, cells)


def _min_blocks(
    n: int, p: float, k: int, max_blocks: int, version: int = BLOCKED_LAYOUT_VERSION,
    cells: int = BLOCK_BITS,
) -> tuple[int, float] | None:
    """Smallest num_blocks with blocked FPR <= p for this k (None if > max_blocks).

    Bracketed search on integers: ``lo`` always has FPR > p (``lo == 0`` is
    a sentinel), ``hi`` has FPR <= p, and the answer is ``hi`` once
    ``hi - lo == 1``.  The bracket starts at the classic block count for
    this k and 1.25x that (widened by doubling / halving if needed); trial
    points come from secant steps, a gallop and finally bisection, so the
    search needs ~5 model evaluations per k even for n ~ 1e13.
    """
    log_p = math.log(p)
    cache: dict[int, float] = {}
    model = _model(version, cells)

    def g(blocks: int) -> float:
        fpr = cache.get(blocks)
        if fpr is None:
            fpr = model(n, blocks, k)
            cache[blocks] = fpr
        return (math.log(fpr) if fpr > 0.0 else -math.inf) - log_p

    # Initial guess: the classic bits/key for this k, -k / ln(1 - p**(1/k)).
    classic_bpk = -k / math.log1p(-math.exp(log_p / k))
    guess = min(max_blocks, max(1, math.floor(n * classic_bpk / cells)))

    lo, hi = 0, 0
    if g(guess) > 0.0:
        lo = guess
        hi = min(max_blocks, max(lo + 1, math.ceil(lo * 1.25)))
        while g(hi) > 0.0:
            if hi >= max_blocks:
                return None
            lo = hi
            hi = min(max_blocks, 2 * hi)
    else:
        hi = guess
        lo = max(0, math.floor(hi / 1.25))
        while lo > 0 and g(lo) <= 0.0:
            hi = lo
            lo //= 2

    # 1. Secant steps on (ln num_blocks, ln FPR - ln p), which is nearly a
    #    straight line, each trial clamped into the open bracket.  Stops
    #    once a step moves by <= 1 block.
    x0, x1 = lo, hi
    for _ in range(_SECANT_STEPS):
        if hi - lo <= 1:
            break
        est = _secant_root(g, x0, x1)
        if not math.isfinite(est):
            break
        trial = min(max(math.ceil(est), lo + 1), hi - 1)
        step = abs(trial - x1)
        if g(trial) > 0.0:
            lo = trial
        else:
            hi = trial
        x0, x1 = x1, trial
        if step <= 1:
            break
    # 2. Gallop from the last trial towards the other end of the bracket
    #    (usually one evaluation: the neighbour of an accurate secant root).
    from_hi = x1 == hi
    gap = 1
    while hi - lo > 1:
        trial = hi - gap if from_hi else lo + gap
        trial = min(max(trial, lo + 1), hi - 1)
        if g(trial) > 0.0:
            lo = trial
            crossed = from_hi
        else:
            hi = trial
            crossed = not from_hi
        if crossed:
            break
        gap *= 2
    # 3. Plain bisection for whatever is left (rarely more than a few steps).
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if g(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return hi, cache[hi]


def _blocked_design(
    n: int, p: float, version: int = BLOCKED_LAYOUT_VERSION, cells: int = BLOCK_BITS
) -> Design:
    """Blocked sizing; ``cells`` is the block's bits (512), or its counters
    for a blocked counting filter (512 // counter_bits: its ``num_bits`` is
    then the number of counters)."""
    max_blocks = MAX_NUM_BITS // cells
    # Fewest blocks over k, ties -> smaller k.  The minimal block count is
    # unimodal in k, so start near the best k (below) and walk outwards,
    # stopping in each direction after two consecutive k that do not beat
    # the best found (going down, a tie does beat it: smaller k wins).  The
    # result equals a full scan of k = 1..24 (checked in the tests).
    results: _Results = {}

    def blocks_for(k: int) -> int | float:
        if k not in results:
            results[k] = _min_blocks(n, p, k, max_blocks, version, cells)
        res = results[k]
        return math.inf if res is None else res[0]

    # The best blocked k is below the classic log2(1/p): 0.9 of it near
    # 1e-2..1e-4, 0.77 at 1e-7 (crowded blocks make each probe dearer), so
    # start at 0.8 of it; the high k are also the slow ones to evaluate.
    start = min(MAX_BLOCKED_HASHES, max(1, round(-0.8 * math.log2(p))))
    best = blocks_for(start)
    for direction in (1, -1):
        worse = 0
        k = start + direction
        while 1 <= k <= MAX_BLOCKED_HASHES and worse < 2:
            value = blocks_for(k)
            if value < best or (direction < 0 and value == best):
                worse = 0
                best = value
            else:
                worse += 1
            k += direction
    return _pick_blocked(n, p, results, version, cells)


def _pick_blocked(
    n: int, p: float, results: _Results, version: int, cells: int = BLOCK_BITS
) -> Design:
    found = [(res[0], k, res[1]) for k, res in results.items() if res is not None]
    if not found:
        raise _too_big(n, p, "blocked", None)
    blocks, k, fpr = min(found)
    return Design(
        layout="blocked",
        capacity=n,
        error_rate=p,
        num_bits=blocks * cells,
        num_hashes=k,
        num_blocks=blocks,
        expected_error_rate=fpr,
        layout_version=version,
    )


def _blocked_design_exhaustive(
    n: int, p: float, version: int = BLOCKED_LAYOUT_VERSION, cells: int = BLOCK_BITS
) -> Design:
    """Reference implementation: scan every k in 1..24 (used by the tests)."""
    max_blocks = MAX_NUM_BITS // cells
    results = {
        k: _min_blocks(n, p, k, max_blocks, version, cells)
        for k in range(1, MAX_BLOCKED_HASHES + 1)
    }
    return _pick_blocked(n, p, results, version, cells)


def validate_layout_version(layout: str, layout_version: object) -> int:
    """The layout version to use: ``None`` means the current one (classic: 0,
    blocked: :data:`BLOCKED_LAYOUT_VERSION`); blocked accepts 0 and 1, classic
    only 0."""
    if layout_version is None:
        return BLOCKED_LAYOUT_VERSION if layout == "blocked" else 0
    allowed = BLOCKED_LAYOUT_VERSIONS if layout == "blocked" else (0,)
    if isinstance(layout_version, bool) or not isinstance(layout_version, int):
        raise TypeError(
            f"layout_version must be an int in {allowed!r} for the {layout} layout, "
            f"not {type(layout_version).__name__}"
        )
    if layout_version not in allowed:
        raise ValueError(
            f"layout_version must be one of {allowed!r} for the {layout} layout, "
            f"got {layout_version}"
        )
    return int(layout_version)


def design(
    capacity: int,
    error_rate: float = 0.01,
    layout: str = "classic",
    *,
    layout_version: int | None = None,
) -> Design:
    """Size a filter for ``capacity`` keys at false-positive rate ``error_rate``.

    ``layout="classic"``: ``m = ceil(-n ln p / ln(2)**2)``,
    ``k = max(1, round(m / n * ln 2))``.

    ``layout="blocked"``: for each k in 1..24 the smallest number of
    512-bit blocks whose model FPR is <= ``error_rate``; the k with the
    fewest blocks wins (ties go to the smaller k).  The model is the exact
    occupancy model for ``layout_version=1`` (the default) and the Poisson
    fill model for ``layout_version=0``, which is how version-0 filters
    were sized (it reproduces them; their measured rate at capacity is up
    to 4% above ``error_rate`` at 1e-4).

    Raises ``TypeError``/``ValueError`` for invalid arguments and
    ``ValueError`` if the filter would need more than ``MAX_NUM_BITS`` bits.
    """
    n = validate_capacity(capacity)
    p = validate_error_rate(error_rate)
    kind = _validate_layout(layout)
    version = validate_layout_version(kind, layout_version)
    if kind == "classic":
        return _classic_design(n, p)
    if p < MIN_BLOCKED_ERROR_RATE:
        raise ValueError(
            f"error_rate must be >= {MIN_BLOCKED_ERROR_RATE:g} for the blocked layout (below "
            "that it needs over 45 bits per key, and the in-block bit pattern of layout "
            "version 0 comes from 32 bits of the hash, which adds about keys_per_block / "
            "2**32 to the rate); use the classic layout for lower rates"
        )
    return _blocked_design(n, p, version)
