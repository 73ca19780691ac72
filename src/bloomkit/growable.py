"""A growable filter whose query cost does not grow with it (issue 32 item 2).

A thin facade over the C type :class:`bloomkit.GrowableBase`: two tables of
64-byte buckets of 16-bit fingerprints; a key lives in the less full of its two
buckets (one per table), a query reads those two cache lines, and a table doubles by
giving each entry's first fingerprint bit to its address, so the keys are never needed
and the query stays two lines however far the filter grows.  See docs/growable.md and
the essay in ``_native/bk_grow.c``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core
from ._typing import Key
from .design import validate_capacity, validate_error_rate
from .persist import Persistent

__all__ = ["DEFAULT_MAX_GROWTH", "GrowableFilter", "growable_max_load"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_GROWABLE: int = _core.KINDS["GrowableFilter"].id

DEFAULT_MAX_GROWTH = 1024
"""The growth the error rate is kept for by default: 2^10 times the initial capacity.
Past it the filter keeps growing (up to 2^7 times further) and the rate climbs by
about max_load * 2^-10 * 1.15 (0.09% at 1%) a doubling."""


def growable_max_load(error_rate: float, max_growth: float = DEFAULT_MAX_GROWTH) -> float:
    """The table load that keeps ``error_rate`` up to ``max_growth`` times the start.

    The measured bound of bk_grow.c (rate <= max_load * 2^-10 * (1.8 + 1.15 g) after
    g doublings), inverted and capped at 0.9; ValueError when it would be below 0.05
    (16-bit slots cannot give that rate over that growth).
    """
    error_rate = validate_error_rate(error_rate)
    if isinstance(max_growth, bool) or not isinstance(max_growth, (int, float)):
        raise TypeError(f"max_growth must be a number, not {type(max_growth).__name__}")
    if not 1.0 <= max_growth <= 2.0**14:
        raise ValueError(f"max_growth must be in [1, 2**14], got {max_growth!r}")
    ml = GrowableBase._max_load(error_rate, math.log2(max_growth))
    if ml == 0.0:
        raise ValueError(
            f"error_rate {error_rate!r} is too small for a GrowableFilter growing "
            f"{max_growth:g}x (16-bit fingerprints would need a table load under 5%); "
            "use a larger error_rate or max_growth, or a ScalableBloomFilter"
        )
    return float(ml)


if TYPE_CHECKING:
    # The C type _core.GrowableBase (py_grow.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from ._core import Updatable

    _GrowableSelf = TypeVar("_GrowableSelf", bound="GrowableBase[Any]")

    class GrowableBase(Updatable[_K]):
        def __new__(
            cls: type[_GrowableSelf],
            capacity: int,
            error_rate: float,
            max_load: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _GrowableSelf: ...
        def clear(self) -> None: ...
        def estimate_count(self) -> float: ...
        def estimate_error_rate(self) -> float: ...
        @staticmethod
        def _max_load(error_rate: float, doublings: float, /) -> float: ...
        def _key_hash(self, key: object, /) -> int: ...
        @property
        def num_buckets(self) -> int: ...
        @property
        def max_load(self) -> float: ...
        @property
        def stash_size(self) -> int: ...
        @property
        def doublings(self) -> int: ...
        @property
        def load_factor(self) -> float: ...
        @property
        def capacity(self) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def nbytes(self) -> int: ...

else:
    GrowableBase = _core.GrowableBase


class GrowableFilter(Persistent, GrowableBase[_K]):
    """Approximate membership for an unknown number of keys, at two cache lines a query.

    ``GrowableFilter(capacity=10_000, error_rate=0.01, *, max_growth=1024, seed=0,
    key=None, secret=None)``.  Starts sized for ``capacity`` keys and grows as keys
    arrive (a table doubles; nothing is rehashed from keys), keeping the measured
    false-positive rate at or below ``error_rate`` up to ``max_growth`` times
    ``capacity``.  Queries read two cache lines whatever the size.  No removal and no
    union; ``add`` returns False when the key already answers present.
    """

    __slots__ = ()
    _bk_kind = KIND_GROWABLE

    @overload
    def __new__(
        cls, capacity: int = 10_000, error_rate: float = 0.01, *,
        max_growth: float = DEFAULT_MAX_GROWTH, seed: int = 0, key: None = None,
        secret: bytes | None = None,
    ) -> GrowableFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int = 10_000, error_rate: float = 0.01, *,
        max_growth: float = DEFAULT_MAX_GROWTH, seed: int = 0,
        key: Callable[[_T], Key], secret: bytes | None = None,
    ) -> GrowableFilter[_T]: ...
    def __new__(
        cls,
        capacity: int = 10_000,
        error_rate: float = 0.01,
        *,
        max_growth: float = DEFAULT_MAX_GROWTH,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> GrowableFilter[Any]:
        capacity = validate_capacity(capacity)
        error_rate = validate_error_rate(error_rate)
        max_load = growable_max_load(error_rate, max_growth)
        return super().__new__(cls, capacity, error_rate, max_load, seed=seed,
                               secret=secret, key=key)

    @property
    def bits_per_key(self) -> float:
        """Bits of the tables per stored key (inf when empty)."""
        n = len(self)
        return math.inf if n == 0 else 8 * self.nbytes / n

    def __repr__(self) -> str:
        return (f"GrowableFilter(capacity={self.capacity}, error_rate={self.error_rate}, "
                f"len={len(self)}, num_buckets={self.num_buckets})")
