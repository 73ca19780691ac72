"""The quotient filter: a compact, mergeable, resizable multiset of fingerprints.

Thin facade over the C type :class:`bloomkit.QuotientBase` (see
``bk_quotient.c`` for the structure and docs/quotient.md for the API).
Sizing from ``(capacity, error_rate, max_load)`` happens here; every per-key,
batch, merge and resize operation is C.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core
from ._setops import MergeSetOps
from ._typing import Key
from .design import validate_capacity, validate_error_rate
from .persist import Persistent

__all__ = ["KIND_QUOTIENT", "QuotientFilter", "quotient_shape"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_QUOTIENT: int = _core.KINDS["QuotientFilter"].id
_MAX_CAPACITY: int = _core.KINDS["QuotientFilter"].capacity_max or 0

MAX_Q = 44
MAX_R = 61
MAX_FINGERPRINT_BITS = 64
MAX_TABLE_BITS = 2**46
DEFAULT_MAX_LOAD = 0.9
MIN_MAX_LOAD = 0.01
"""A table sized for under 1% load wastes over 100x its space; the bound also
keeps ``log2(capacity / max_load)`` finite (5e-324 made sizing, resized() and
merge() raise OverflowError).  The C loader refuses the same range."""


def _validate_max_load(max_load: object) -> float:
    allowed = f"max_load must be a real number with {MIN_MAX_LOAD} <= max_load <= 1"
    if isinstance(max_load, (bool, str, bytes)) or not isinstance(max_load, (int, float)):
        raise TypeError(f"{allowed}, not {type(max_load).__name__}")
    value = float(max_load)
    if not MIN_MAX_LOAD <= value <= 1.0:  # also refuses NaN
        raise ValueError(f"{allowed}, got {value!r}")
    return value


def _q_for(capacity: int, max_load: float) -> int:
    """Smallest q >= 1 with capacity <= max_load * 2**q and capacity <= 2**q - 1."""
    q = max(1, math.ceil(math.log2(capacity / max_load)) - 1)
    while capacity > math.floor(max_load * 2.0**q) or capacity > 2**q - 1:
        q += 1
    return q


def _check_shape(q: int, r: int) -> None:
    if not 1 <= q <= MAX_Q:
        raise ValueError(f"q must be in [1, {MAX_Q}], got {q}")
    if not 1 <= r <= MAX_R:
        raise ValueError(f"r must be in [1, {MAX_R}], got {r}")
    if q + r > MAX_FINGERPRINT_BITS:
        raise ValueError(f"q + r must be at most {MAX_FINGERPRINT_BITS} (got {q + r})")
    if 2**q * (r + 3) > MAX_TABLE_BITS:
        raise ValueError(
            f"table too large: 2**{q} slots of {r + 3} bits exceeds 2**46 bits; "
            "lower capacity or raise error_rate"
        )


def quotient_shape(
    capacity: int, error_rate: float = 0.01, max_load: float = DEFAULT_MAX_LOAD
) -> tuple[int, int]:
    """``(q, r)`` for ``capacity`` keys at false-positive rate ``error_rate``.

    q is the smallest with ``capacity <= max_load * 2**q``; r the smallest
    with ``alpha * 2**-r <= error_rate`` at the load ``alpha = capacity /
    2**q`` (the rate of a query for an absent key, at capacity, is
    ``1 - (1 - 2**-(q + r))**capacity <= alpha * 2**-r``).
    """
    n = validate_capacity(capacity)
    p = validate_error_rate(error_rate)
    load = _validate_max_load(max_load)
    q = _q_for(n, load)
    alpha = n / 2.0**q
    r = max(1, math.ceil(math.log2(alpha / p)))
    while r > 1 and alpha * 2.0 ** -(r - 1) <= p:
        r -= 1
    while alpha * 2.0**-r > p:
        r += 1
    _check_shape(q, r)
    return q, r


def _nominal_rate(q: int, r: int, capacity: int) -> float:
    """The bound alpha * 2**-r at ``capacity`` keys, clamped into (0, 1)."""
    rate: float = min(capacity, 2**q - 1) / 2.0 ** (q + r)
    return min(max(rate, 5e-324), 1.0 - 2.0**-53)


if TYPE_CHECKING:
    # The C type _core.QuotientBase (py_quotient.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from collections.abc import Iterator

    from ._core import Membership

    _QuotientSelf = TypeVar("_QuotientSelf", bound="QuotientBase[Any]")

    class QuotientBase(Membership[_K]):
        def __new__(
            cls: type[_QuotientSelf],
            q: int,
            r: int,
            capacity: int,
            error_rate: float,
            max_load: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _QuotientSelf: ...
        def remove(self, key: _K, /) -> None: ...
        def discard(self, key: _K, /) -> bool: ...
        def count(self, key: _K, /) -> int: ...
        def validate(self) -> None: ...
        def estimate_error_rate(self) -> float: ...
        def __iter__(self) -> Iterator[int]: ...
        def _merge(
            self: _QuotientSelf,
            other: QuotientBase[Any],
            q: int,
            r: int,
            capacity: int,
            error_rate: float,
            max_load: float,
            /,
        ) -> _QuotientSelf: ...
        def _check_merge(self, other: QuotientBase[Any], /) -> None: ...
        def _rebuild(
            self: _QuotientSelf, q: int, r: int, capacity: int, error_rate: float,
            max_load: float, /
        ) -> _QuotientSelf: ...
        def clear(self) -> None: ...
        def _recount(self) -> None: ...
        def _fingerprint(self, key: object, /) -> int: ...
        def _key_hash(self, key: object, /) -> int: ...
        @property
        def q(self) -> int: ...
        @property
        def r(self) -> int: ...
        @property
        def fingerprint_bits(self) -> int: ...
        @property
        def num_slots(self) -> int: ...
        @property
        def capacity(self) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def max_load(self) -> float: ...
        @property
        def nbytes(self) -> int: ...
        @property
        def load_factor(self) -> float: ...

else:
    QuotientBase = _core.QuotientBase


class QuotientFilter(MergeSetOps, Persistent, QuotientBase[_K]):
    """A quotient filter (Bender et al., VLDB 2012).

    ``QuotientFilter(capacity, error_rate=0.01, *, max_load=0.9, seed=0,
    key=None, secret=None)``: 2**q slots of r-bit remainders plus three
    metadata bits, sized so that ``capacity`` keys fill at most
    ``max_load`` of the table and the false-positive rate at capacity is at
    most ``error_rate``.  It stores a multiset of (q + r)-bit fingerprints:
    ``add`` twice and ``count`` says 2; ``remove`` takes one copy away.
    Adds keep working past ``max_load`` until 2**q - 1 fingerprints are
    stored; the next raises :class:`bloomkit.CapacityError` and changes
    nothing.  ``merge``/``|`` and ``resized`` rebuild from the stored
    fingerprints without the keys.
    """

    __slots__ = ()
    _set_reason = (
        'bloomkit offers only the merge of two tables (f | g, a multiset '
        'union); subset, intersection and difference of their fingerprint '
        'multisets are not implemented (build a filter from the key sets '
        'instead)'
    )
    _bk_kind = KIND_QUOTIENT

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, max_load: float = DEFAULT_MAX_LOAD,
        seed: int = 0, key: None = None, secret: bytes | None = None,
    ) -> QuotientFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, max_load: float = DEFAULT_MAX_LOAD,
        seed: int = 0, key: Callable[[_T], Key], secret: bytes | None = None,
    ) -> QuotientFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.01,
        *,
        max_load: float = DEFAULT_MAX_LOAD,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> QuotientFilter[Any]:
        q, r = quotient_shape(capacity, error_rate, max_load)
        return super().__new__(
            cls, q, r, int(capacity), float(error_rate), float(max_load),
            seed=seed, secret=secret, key=key,
        )

    @overload
    @classmethod
    def with_shape(
        cls, q: int, r: int, *, capacity: int | None = None, error_rate: float | None = None,
        max_load: float = DEFAULT_MAX_LOAD, seed: int = 0, key: None = None,
        secret: bytes | None = None,
    ) -> QuotientFilter[Key]: ...
    @overload
    @classmethod
    def with_shape(
        cls, q: int, r: int, *, capacity: int | None = None, error_rate: float | None = None,
        max_load: float = DEFAULT_MAX_LOAD, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None,
    ) -> QuotientFilter[_T]: ...
    @classmethod
    def with_shape(
        cls,
        q: int,
        r: int,
        *,
        capacity: int | None = None,
        error_rate: float | None = None,
        max_load: float = DEFAULT_MAX_LOAD,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> QuotientFilter[Any]:
        """A filter of exactly 2**q slots and r-bit remainders.

        ``capacity`` defaults to ``floor(max_load * 2**q)``, ``error_rate``
        to the bound ``alpha * 2**-r`` at that capacity.
        """
        for name, v in (("q", q), ("r", r)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        _check_shape(q, r)
        load = _validate_max_load(max_load)
        if capacity is None:
            capacity = max(1, min(math.floor(load * 2.0**q), 2**q - 1))
        capacity = validate_capacity(capacity)
        if error_rate is None:
            rate = _nominal_rate(q, r, capacity)
        else:
            rate = validate_error_rate(error_rate)
        obj: QuotientFilter[Any] = QuotientBase.__new__(
            cls, q, r, capacity, rate, load, seed=seed, secret=secret, key=key
        )
        return obj

    def resized(self, capacity: int) -> QuotientFilter[_K]:
        """A new filter sized for ``capacity`` holding the same fingerprints.

        The fingerprint width q + r stays: each doubling of the table moves
        one bit from the remainder to the quotient (q + 1, r - 1), so the
        false-positive rate at the same load doubles.  The table can also
        shrink while the fingerprints fit.  ``ValueError`` when the new
        table would need r < 1; :class:`bloomkit.CapacityError` when the
        fingerprints do not fit.
        """
        n = validate_capacity(capacity)
        fbits = self.fingerprint_bits
        q = _q_for(n, self.max_load)
        if q > fbits - 1:
            raise ValueError(
                f"cannot resize to capacity {n}: it needs 2**{q} slots but the "
                f"fingerprints have only {fbits} bits (at most 2**{fbits - 1} slots)"
            )
        r = fbits - q
        _check_shape(q, r)
        out: QuotientFilter[_K] = self._rebuild(q, r, n, _nominal_rate(q, r, n), self.max_load)
        return out

    def merge(self, other: QuotientFilter[Any]) -> QuotientFilter[_K]:
        """A new filter holding both multisets of fingerprints.

        Both filters need the same seed, hashing and fingerprint width
        q + r (built with the same capacity and error_rate, or resized from
        such); otherwise :class:`bloomkit.IncompatibleFiltersError`.  The
        result is sized for ``self.capacity + other.capacity`` (never
        smaller than either input), keeping q + r; it is byte-identical to
        the filter of that shape built by adding both key multisets.
        """
        self._check_merge(other)
        fbits = self.fingerprint_bits
        capacity = min(self.capacity + other.capacity, _MAX_CAPACITY)
        q = max(self.q, other.q, _q_for(capacity, self.max_load))
        q = min(q, fbits - 1)
        r = fbits - q
        _check_shape(q, r)
        out: QuotientFilter[_K] = self._merge(
            other, q, r, capacity, _nominal_rate(q, r, capacity), self.max_load
        )
        return out

    def __or__(self, other: object) -> QuotientFilter[_K]:
        if not isinstance(other, QuotientBase):
            return NotImplemented
        return self.merge(other)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"q={self.q}, r={self.r}, seed={self.seed}, count={len(self)}, "
            f"load_factor={self.load_factor:.4f}{extra}{mapped})"
        )
