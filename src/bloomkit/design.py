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
    it.  The number of keys per block is Poisson(lambda = n / num_blocks)
    and the false-positive rate is the Poisson mixture::

        FPR = sum_j Pois(j; lambda) * (1 - (1 - 1/B) ** (j * k)) ** k

    which exceeds the classic formula for the same bits and k in every
    practical configuration (1.17x at 10 bits/key, 1.8x at 16), because the
    overloaded blocks dominate the sum.

All functions validate their arguments and raise ``TypeError`` (wrong type)
or ``ValueError`` (out of range) with a message that says what is allowed.
See ``docs/math.md`` for the derivations and reference figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "BLOCK_BITS",
    "LAYOUTS",
    "MAX_BLOCKED_HASHES",
    "MAX_CAPACITY",
    "MAX_NUM_BITS",
    "MIN_ERROR_RATE",
    "Design",
    "blocked_false_positive_rate",
    "design",
    "estimate_count",
    "false_positive_rate",
    "optimal_num_hashes",
    "validate_capacity",
    "validate_error_rate",
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

# Blocked filters take their in-block bit pattern from 32 bits of the key's
# hash, so a query matches a stored key's whole pattern with probability
# about 2**-32 per key in its block (~20 keys): about 5e-9 at 1e-6. Below
# 1e-7 that term would be more than ~5% of the target, so we refuse.
MIN_BLOCKED_ERROR_RATE = 1e-7
"""Largest ``k`` considered when sizing a blocked filter."""

LAYOUTS = ("classic", "blocked")

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
    classic layout, the Poisson block-load model for the blocked layout.
    """

    layout: str
    capacity: int
    error_rate: float
    num_bits: int
    num_hashes: int
    num_blocks: int
    expected_error_rate: float

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


def blocked_false_positive_rate(
    num_blocks: int, num_hashes: int, count: int, block_bits: int = BLOCK_BITS
) -> float:
    """Model FPR of a blocked filter with ``count`` keys.

    Every key picks one of ``num_blocks`` blocks of ``block_bits`` bits
    uniformly and sets ``num_hashes`` positions in it, chosen independently
    and uniformly (with replacement).  Block loads are Poisson with mean
    ``lam = count / num_blocks``, so::

        FPR = sum_j Pois(j; lam) * (1 - (1 - 1/B) ** (j * k)) ** k

    Returns 0.0 for ``count == 0``.
    """
    b = _require_int("num_blocks", num_blocks, 1)
    k = _require_int("num_hashes", num_hashes, 1)
    n = _require_int("count", count, 0)
    bb = _require_int("block_bits", block_bits, 2)
    if n == 0:
        return 0.0
    return _poisson_mixture(n / b, k, bb)


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


def _min_blocks(n: int, p: float, k: int, max_blocks: int) -> tuple[int, float] | None:
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

    def g(blocks: int) -> float:
        fpr = cache.get(blocks)
        if fpr is None:
            fpr = _poisson_mixture(n / blocks, k, BLOCK_BITS)
            cache[blocks] = fpr
        return (math.log(fpr) if fpr > 0.0 else -math.inf) - log_p

    # Initial guess: the classic bits/key for this k, -k / ln(1 - p**(1/k)).
    classic_bpk = -k / math.log1p(-math.exp(log_p / k))
    guess = min(max_blocks, max(1, math.floor(n * classic_bpk / BLOCK_BITS)))

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


def _blocked_design(n: int, p: float) -> Design:
    max_blocks = MAX_NUM_BITS // BLOCK_BITS
    # Fewest blocks over k, ties -> smaller k.  The minimal block count is
    # unimodal in k, so start at k = round(log2(1/p)) and walk outwards,
    # stopping in each direction after two consecutive k that do not beat
    # the best found (going down, a tie does beat it: smaller k wins).  The
    # result equals a full scan of k = 1..24 (checked in the tests).
    results: _Results = {}

    def blocks_for(k: int) -> int | float:
        if k not in results:
            results[k] = _min_blocks(n, p, k, max_blocks)
        res = results[k]
        return math.inf if res is None else res[0]

    start = min(MAX_BLOCKED_HASHES, max(1, round(-math.log2(p))))
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
    return _pick_blocked(n, p, results)


def _pick_blocked(n: int, p: float, results: _Results) -> Design:
    found = [(res[0], k, res[1]) for k, res in results.items() if res is not None]
    if not found:
        raise _too_big(n, p, "blocked", None)
    blocks, k, fpr = min(found)
    return Design(
        layout="blocked",
        capacity=n,
        error_rate=p,
        num_bits=blocks * BLOCK_BITS,
        num_hashes=k,
        num_blocks=blocks,
        expected_error_rate=fpr,
    )


def _blocked_design_exhaustive(n: int, p: float) -> Design:
    """Reference implementation: scan every k in 1..24 (used by the tests)."""
    max_blocks = MAX_NUM_BITS // BLOCK_BITS
    results = {k: _min_blocks(n, p, k, max_blocks) for k in range(1, MAX_BLOCKED_HASHES + 1)}
    return _pick_blocked(n, p, results)


def design(capacity: int, error_rate: float = 0.01, layout: str = "classic") -> Design:
    """Size a filter for ``capacity`` keys at false-positive rate ``error_rate``.

    ``layout="classic"``: ``m = ceil(-n ln p / ln(2)**2)``,
    ``k = max(1, round(m / n * ln 2))``.

    ``layout="blocked"``: for each k in 1..24 the smallest number of
    512-bit blocks whose Poisson-model FPR is <= ``error_rate``; the k with
    the fewest blocks wins (ties go to the smaller k).

    Raises ``TypeError``/``ValueError`` for invalid arguments and
    ``ValueError`` if the filter would need more than ``MAX_NUM_BITS`` bits.
    """
    n = validate_capacity(capacity)
    p = validate_error_rate(error_rate)
    kind = _validate_layout(layout)
    if kind == "classic":
        return _classic_design(n, p)
    if p < MIN_BLOCKED_ERROR_RATE:
        raise ValueError(
            f"error_rate must be >= {MIN_BLOCKED_ERROR_RATE:g} for the blocked layout (its "
            "in-block bit pattern comes from 32 bits of the hash, which adds about "
            "keys_per_block / 2**32 to the rate); use the classic layout for lower rates"
        )
    return _blocked_design(n, p)
