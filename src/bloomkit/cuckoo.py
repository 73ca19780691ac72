"""The cuckoo filter (Fan, Andersen, Kaminsky and Mitzenmacher, CoNEXT 2014).

A thin facade over the C type :class:`bloomkit.CuckooBase`: sizing
from ``(capacity, error_rate, bucket_size)`` happens here; every per-key and
batch operation is C.  See docs/cuckoo.md and the essay in
``_native/bk_cuckoo.c``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core, _descriptor
from ._setops import MergeSetOps
from ._typing import Key
from .persist import Persistent

__all__ = [
    "DESIGN_LOAD", "DESIGN_LOADS", "CuckooDesign", "CuckooFilter", "cuckoo_design",
    "design_load", "min_fingerprint_bits",
]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_CUCKOO: int = _core.KINDS["CuckooFilter"].id

DESIGN_LOAD = 0.94
"""Table load at ``capacity`` for bucket_size >= 4: b = 4 tables reach
96.5-97% before the first failed insert, so sizing for 94% leaves a margin
while costing f / 0.94 bits per key, 1.1% above the f / 0.95 of the paper."""

DESIGN_LOADS = {1: 0.45, 2: 0.80, 3: 0.88}
"""Table load at ``capacity`` for the small buckets (issue #16.4).  Two
choices of b slots stop accepting keys near a threshold load that falls
steeply with b (Fan et al. 2014, Sec. 5: ~50% for b = 1, ~84% for b = 2;
the limits for unbounded kicks are 0.5, 0.897 and 0.959).  Measured first
failures with 500 kicks and the 8-entry stash, 10^4 .. 4 * 10^6 keys,
lowest at the largest n (docs/cuckoo.md): b = 1 at 48.2-55.6% load, b = 2
at 87.1-89.6%, b = 3 at 93.8-95.2%.  The single 0.94 used before made
b = 1 and 2 fail at about 0.53 and 0.93 of ``capacity`` (b = 3 at 0.9997
of it for 10^6 keys), so each small b gets a design load 6-8% under its
lowest measured failure load.  The price is space: f / 0.45 and f / 0.80
bits per key instead of f / 0.94."""


def design_load(bucket_size: int) -> float:
    """The table load at ``capacity`` the sizing uses for this bucket size."""
    return DESIGN_LOADS.get(bucket_size, DESIGN_LOAD)


def min_fingerprint_bits(capacity: int, bucket_size: int) -> int:
    """The fewest fingerprint bits that let ``capacity`` keys fit (issue #31 item 6).

    A key's other bucket is a function of its fingerprint, so keys with the
    same fingerprint and first bucket share their bucket pair: with b = 1
    two such keys fill a pair alone (a cycle of the cuckoo graph), and about
    ``n L / 2^f`` pairs of them come in a filter of n keys at load L.  At
    f = 8 (rates >= 0.8%) that was ~180 cycles in 10^5 keys, and 16% of key
    sets failed before capacity (the first at 0.61 of it); f = 11 (0.1%),
    0.4% of sets.  So for b = 1, f >= ceil(log2(capacity)) - 3 (about 5
    such pairs at L = 0.45): measured over 1,000 key sets of 10^5
    (benchmarks/cuckoo_capacity.py, docs/cuckoo.md), none failed before
    capacity.  Two slots a bucket hold a pair and more (b = 2 at f = 8: no
    set of 1,000 failed, the first failure 1.09 x capacity or later), so
    b >= 2 needs nothing beyond the rate's f.  The price is space for b = 1
    only: 17 bits instead of 11 at 0.1% and 10^6 keys."""
    if bucket_size != 1:
        return MIN_FP_BITS
    return max(MIN_FP_BITS, min(MAX_FP_BITS, (max(1, capacity) - 1).bit_length() - 3))

MIN_FP_BITS = 8
MAX_FP_BITS = 32
MAX_BUCKETS = 2**32
_KIND = _core.KINDS["CuckooFilter"]
MAX_CAPACITY: int = _KIND.capacity_max or 0


if TYPE_CHECKING:
    # The C type _core.CuckooBase (py_cuckoo.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from ._core import Updatable

    _CuckooSelf = TypeVar("_CuckooSelf", bound="CuckooBase[Any]")

    class CuckooBase(Updatable[_K]):
        def __new__(
            cls: type[_CuckooSelf],
            num_buckets: int,
            bucket_size: int,
            fingerprint_bits: int,
            capacity: int,
            error_rate: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _CuckooSelf: ...
        def remove(self, key: _K, /) -> None: ...
        def discard(self, key: _K, /) -> bool: ...
        def count(self, key: _K, /) -> int: ...
        def union(self: _CuckooSelf, *others: CuckooBase[Any]) -> _CuckooSelf: ...
        def __or__(self: _CuckooSelf, other: CuckooBase[Any], /) -> _CuckooSelf: ...
        def __ior__(self: _CuckooSelf, other: CuckooBase[Any], /) -> _CuckooSelf: ...
        def clear(self) -> None: ...
        def estimate_count(self) -> float: ...
        def estimate_error_rate(self) -> float: ...
        def _recount(self) -> None: ...
        def _key_hash(self, key: object, /) -> int: ...
        def _locate(self, key: object, /) -> tuple[int, int, int]: ...
        @property
        def num_buckets(self) -> int: ...
        @property
        def bucket_size(self) -> int: ...
        @property
        def fingerprint_bits(self) -> int: ...
        @property
        def max_kicks(self) -> int: ...
        @property
        def stash_size(self) -> int: ...
        @property
        def capacity(self) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def nbytes(self) -> int: ...
        @property
        def load_factor(self) -> float: ...

else:
    CuckooBase = _core.CuckooBase


@dataclass(frozen=True)
class CuckooDesign:
    """The shape chosen for ``(capacity, error_rate, bucket_size)``."""

    capacity: int
    error_rate: float
    bucket_size: int
    fingerprint_bits: int
    num_buckets: int

    @property
    def bits_per_key(self) -> float:
        """Table bits per key at capacity."""
        return self.num_buckets * self.bucket_size * self.fingerprint_bits / self.capacity


def fingerprint_bits_for(error_rate: float, bucket_size: int) -> int:
    """The smallest f >= 8 with 2b / (2^f - 1) <= error_rate (f >= log2(2b/p + 1))."""
    f = max(MIN_FP_BITS, math.ceil(math.log2(2 * bucket_size / error_rate + 1)))
    while f > MIN_FP_BITS and 2 * bucket_size / (2 ** (f - 1) - 1) <= error_rate:
        f -= 1  # log2 rounding: never more bits than needed
    while 2 * bucket_size / (2**f - 1) > error_rate:
        f += 1
    return f


def cuckoo_design(capacity: int, error_rate: float = 0.001, bucket_size: int = 4) -> CuckooDesign:
    """Size a cuckoo filter; raises TypeError/ValueError saying what is allowed."""
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"capacity must be an int, not {type(capacity).__name__}")
    if isinstance(error_rate, bool) or not isinstance(error_rate, (int, float)):
        raise TypeError(f"error_rate must be a float, not {type(error_rate).__name__}")
    if isinstance(bucket_size, bool) or not isinstance(bucket_size, int):
        raise TypeError(f"bucket_size must be an int, not {type(bucket_size).__name__}")
    if not 1 <= capacity <= MAX_CAPACITY:
        raise ValueError(f"capacity must be in {_descriptor.capacity_range(_KIND)}, got {capacity}")
    error_rate = float(error_rate)
    if not 1 <= bucket_size <= 8:
        raise ValueError(f"bucket_size must be in [1, 8], got {bucket_size}")
    lowest = 2 * bucket_size / (2**MAX_FP_BITS - 1)
    if not (lowest <= error_rate < 1.0):
        raise ValueError(
            f"error_rate must be in [{lowest:.3g}, 1) for bucket_size={bucket_size} "
            f"(fingerprints are at most {MAX_FP_BITS} bits), got {error_rate!r}"
        )
    f = max(fingerprint_bits_for(error_rate, bucket_size),
            min_fingerprint_bits(capacity, bucket_size))
    num_buckets = max(1, math.ceil(capacity / (bucket_size * design_load(bucket_size))))
    if num_buckets > MAX_BUCKETS:
        raise ValueError(
            f"capacity {capacity} needs {num_buckets} buckets, over the limit of 2**32; "
            "use a larger bucket_size or several filters"
        )
    return CuckooDesign(capacity, error_rate, bucket_size, f, num_buckets)


class CuckooFilter(MergeSetOps, Persistent, CuckooBase[_K]):
    """Approximate membership with deletion: a cuckoo hash table of fingerprints.

    ``CuckooFilter(capacity, error_rate=0.001, *, bucket_size=4, seed=0,
    key=None, secret=None)``.  Stores one f-bit fingerprint per added key
    (f = smallest value >= 8 with 2b/(2^f - 1) <= error_rate; for bucket_size=1
    at least ceil(log2(capacity)) - 3, see min_fingerprint_bits) in one of two
    buckets of ``bucket_size`` slots.  ``add`` raises
    :class:`bloomkit.CapacityError`, leaving the filter unchanged, when a
    key cannot be placed; ``remove`` raises KeyError and ``discard`` returns
    False when no copy is stored.  Keys are a multiset: ``count(key)`` is the
    number of stored copies (up to 2 * bucket_size).
    """

    __slots__ = ()
    _set_reason = (
        "a key's fingerprint may sit in either of its two buckets in each "
        'table, so no slot-wise comparison or difference gives the relation of '
        'two key sets; remove keys by name with remove'
    )
    _bk_kind = KIND_CUCKOO

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.001, *, bucket_size: int = 4, seed: int = 0,
        key: None = None, secret: bytes | None = None,
    ) -> CuckooFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.001, *, bucket_size: int = 4, seed: int = 0,
        key: Callable[[_T], Key], secret: bytes | None = None,
    ) -> CuckooFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.001,
        *,
        bucket_size: int = 4,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> CuckooFilter[Any]:
        d = cuckoo_design(capacity, error_rate, bucket_size)
        return super().__new__(
            cls, d.num_buckets, d.bucket_size, d.fingerprint_bits, d.capacity, d.error_rate,
            seed=seed, secret=secret, key=key,
        )

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"bucket_size={self.bucket_size}, fingerprint_bits={self.fingerprint_bits}, "
            f"num_buckets={self.num_buckets}, seed={self.seed}, count={len(self)}, "
            f"load_factor={self.load_factor:.4f}{extra}{mapped})"
        )

    def __and__(self, other: object) -> Any:
        raise TypeError(
            "cuckoo filters do not support intersection: a key's fingerprint may sit in either "
            "of its two buckets in each table, so no slot-wise operation yields the common "
            "keys; build a new filter from the intersection of the key sets"
        )

    def intersection(self, *others: object) -> Any:
        """Not supported; see ``__and__``."""
        return self.__and__(others[0] if others else None)
