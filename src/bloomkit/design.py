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

from . import _descriptor
from ._blocked_fpr import occupancy_fpr, poisson_mixture

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

MAX_CAPACITY = _descriptor.MAX_CAPACITY
"""Largest ``capacity`` accepted by :func:`validate_capacity` / constructors
(2**48: the kind descriptors' common limit, BK_CAPACITY_MAX in bk_kind.h)."""
_MAX_CAPACITY_TEXT = _descriptor.power_text(MAX_CAPACITY)

MAX_NUM_BITS = 2**46
"""Largest number of bits in one filter (2**46 bits = 8 TiB of payload)."""

BLOCK_BITS = 512
"""Bits per block of the blocked layout: one 64-byte cache line."""

MIN_ERROR_RATE = _descriptor.MIN_ERROR_RATE
"""Smallest target error rate accepted (documented floor; the kind
descriptors' common range, BK_ERROR_RATE_MIN in bk_kind.h)."""

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
"""Blocked layout versions this bloomkit reads and writes (docs/bloom.md, "File layout")."""

BLOCKED_LAYOUT_VERSION = 1
"""Version of new blocked filters: 1 = in-block positions from a splitmix64
stream of the key hash, sized with the exact occupancy model; 0 = positions
from 32 bits of the hash, sized with the Poisson fill model (every blocked
filter written before version 1 existed)."""

# k -> (minimal num_blocks, its model FPR), or None if over MAX_NUM_BITS.
_Results = dict[int, tuple[int, float] | None]

_LN2 = math.log(2.0)
_LN2_SQUARED = _LN2 * _LN2

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
            f"capacity must be an int with 1 <= capacity <= {_MAX_CAPACITY_TEXT}, "
            f"not {type(capacity).__name__}"
        )
    value = _as_int("capacity", capacity)
    if not 1 <= value <= MAX_CAPACITY:
        raise ValueError(
            f"capacity must be an int with 1 <= capacity <= {_MAX_CAPACITY_TEXT} ({MAX_CAPACITY}), "
            f"got {value}"
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
    _blocked_fpr.py's comment; docs/math.md, section 2.3).  The Poisson fill model
    of layout version 0 is ``_blocked_fpr.poisson_mixture``.

    Returns 0.0 for ``count == 0``.
    """
    b = _require_int("num_blocks", num_blocks, 1)
    k = _require_int("num_hashes", num_hashes, 1)
    n = _require_int("count", count, 0)
    bb = _require_int("block_bits", block_bits, 2)
    return occupancy_fpr(n, b, k, bb)


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


def _model(layout_version: int, cells: int = BLOCK_BITS) -> Callable[[int, int, int], float]:
    """The blocked FPR model ``(n, num_blocks, k) -> FPR`` of a layout version
    (blocks of ``cells`` bits, or counters of a blocked counting filter)."""
    if layout_version == 0:
        return lambda n, blocks, k: poisson_mixture(n / blocks, k, cells)
    return lambda n, blocks, k: occupancy_fpr(n, blocks, k, cells)


def _min_blocks(
    n: int, p: float, k: int, max_blocks: int, layout_version: int = BLOCKED_LAYOUT_VERSION,
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
    model = _model(layout_version, cells)

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


def blocked_design(
    n: int, p: float, layout_version: int = BLOCKED_LAYOUT_VERSION, cells: int = BLOCK_BITS
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
            results[k] = _min_blocks(n, p, k, max_blocks, layout_version, cells)
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
    return _pick_blocked(n, p, results, layout_version, cells)


def _pick_blocked(
    n: int, p: float, results: _Results, layout_version: int, cells: int = BLOCK_BITS
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
        layout_version=layout_version,
    )


def _blocked_design_exhaustive(
    n: int, p: float, layout_version: int = BLOCKED_LAYOUT_VERSION, cells: int = BLOCK_BITS
) -> Design:
    """Reference implementation: scan every k in 1..24 (used by the tests)."""
    max_blocks = MAX_NUM_BITS // cells
    results = {
        k: _min_blocks(n, p, k, max_blocks, layout_version, cells)
        for k in range(1, MAX_BLOCKED_HASHES + 1)
    }
    return _pick_blocked(n, p, results, layout_version, cells)


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
    layout_version = validate_layout_version(kind, layout_version)
    if kind == "classic":
        return _classic_design(n, p)
    if p < MIN_BLOCKED_ERROR_RATE:
        raise ValueError(
            f"error_rate must be >= {MIN_BLOCKED_ERROR_RATE:g} for the blocked layout (below "
            "that it needs over 45 bits per key, and the in-block bit pattern of layout "
            "version 0 comes from 32 bits of the hash, which adds about keys_per_block / "
            "2**32 to the rate); use the classic layout for lower rates"
        )
    return blocked_design(n, p, layout_version)
