"""The counting Bloom filter: a Bloom filter that supports remove().

A thin facade over the C type :class:`bloomkit.CountingBase`.  Two
layouts:

``layout="classic"``
    Sizing is the classic Bloom filter's (:func:`bloomkit.design`): the
    counting filter uses the same m and k and exactly the same probe
    sequence, so ``key in f`` answers as a :class:`~bloomkit.BloomFilter`
    built from the same adds would, and :meth:`CountingBloomFilter.to_bloom`
    returns that filter.  A query out of cache costs k cache misses.
``layout="blocked"``
    A key's k counters share one 64-byte line (``512 // counter_bits``
    counters a block), so a query costs one miss; sized with the exact
    blocked occupancy model over blocks of that many counters
    (:func:`counting_design`), which costs more counters per key
    (docs/counting.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core
from ._setops import MergeSetOps
from ._typing import Key
from .bloom import BloomFilter
from .design import (
    BLOCK_BITS,
    LAYOUTS,
    MIN_BLOCKED_ERROR_RATE,
    Design,
    blocked_design,
    design,
    validate_capacity,
    validate_error_rate,
)
from .persist import Persistent

__all__ = ["COUNTER_BITS", "KIND_COUNTING_BLOOM", "CountingBloomFilter", "counting_design"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_COUNTING_BLOOM: int = _core.KINDS["CountingBloomFilter"].id
COUNTER_BITS = (4, 8, 16)
_LAYOUT_IDS = {"classic": 0, "blocked": 1}  # BK_COUNTING_LAYOUT_*


def _check_counter_bits(counter_bits: object) -> int:
    if isinstance(counter_bits, bool) or not isinstance(counter_bits, int):
        raise TypeError(f"counter_bits must be one of {COUNTER_BITS}, "
                        f"not {type(counter_bits).__name__}")
    if counter_bits not in COUNTER_BITS:
        raise ValueError(f"counter_bits must be one of {COUNTER_BITS}, got {counter_bits}")
    return counter_bits


def _check_layout(layout: object) -> str:
    if not isinstance(layout, str):
        raise TypeError(f"layout must be one of {LAYOUTS!r}, not {type(layout).__name__}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS!r}, got {layout!r}")
    return layout


def counting_design(
    capacity: int, error_rate: float = 0.01, *, counter_bits: int = 4, layout: str = "blocked",
) -> Design:
    """Size a counting filter: ``num_bits`` of the result is its number of counters.

    ``layout="classic"`` is :func:`bloomkit.design`'s classic sizing.
    ``layout="blocked"``: blocks of ``512 // counter_bits`` counters (one
    64-byte line: 128, 64 or 32), sized like the blocked Bloom filter with
    the exact occupancy model over blocks of that many cells -- a counter
    is nonzero iff a key of its block probed it, as a bit is set -- the
    fewest blocks over k = 1..24 (ties to the smaller k).  The blocked
    layout accepts ``error_rate >= 1e-7`` (the blocked Bloom filter's floor).
    """
    bits = _check_counter_bits(counter_bits)
    kind = _check_layout(layout)
    if kind == "classic":
        return design(capacity, error_rate, "classic")
    n = validate_capacity(capacity)
    p = validate_error_rate(error_rate)
    if p < MIN_BLOCKED_ERROR_RATE:
        raise ValueError(
            f"error_rate must be >= {MIN_BLOCKED_ERROR_RATE:g} for the blocked layout (below "
            "that a blocked counting filter needs over 100 counters per key); use "
            "layout='classic' for lower rates"
        )
    cells = BLOCK_BITS // bits
    try:
        return blocked_design(n, p, 1, cells)
    except ValueError as exc:
        raise ValueError(str(exc).replace("blocked filter", "blocked counting filter")) from exc


if TYPE_CHECKING:
    # The C type _core.CountingBase (py_counting.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from collections.abc import Iterable

    from ._core import Membership
    from .bloom import BloomBase

    _BloomT = TypeVar("_BloomT", bound="BloomBase[Any]")
    _CountingSelf = TypeVar("_CountingSelf", bound="CountingBase[Any]")

    class CountingBase(Membership[_K]):
        def __new__(
            cls: type[_CountingSelf],
            num_counters: int,
            num_hashes: int,
            counter_bits: int,
            capacity: int,
            error_rate: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
            layout: int = 0,
        ) -> _CountingSelf: ...
        def remove(self, key: _K, /) -> None: ...
        def discard(self, key: _K, /) -> bool: ...
        def count(self, key: _K, /) -> int: ...
        def remove_many(self, keys: Iterable[_K], /) -> int: ...
        def union(self: _CountingSelf, *others: CountingBase[Any]) -> _CountingSelf: ...
        def __or__(self: _CountingSelf, other: CountingBase[Any], /) -> _CountingSelf: ...
        def __ior__(self: _CountingSelf, other: CountingBase[Any], /) -> _CountingSelf: ...
        def _recount(self) -> None: ...
        def _recount_total(self) -> bool: ...
        def clear(self) -> None: ...
        def estimate_count(self) -> float: ...
        def estimate_error_rate(self) -> float: ...
        def _counter_positions(self, key: object, /) -> list[int]: ...
        def _key_hash(self, key: object, /) -> int: ...
        def _to_bloom(self, cls: type[_BloomT], /) -> _BloomT: ...
        @property
        def num_counters(self) -> int: ...
        @property
        def num_bits(self) -> int: ...
        @property
        def num_hashes(self) -> int: ...
        @property
        def counter_bits(self) -> int: ...
        @property
        def counter_max(self) -> int: ...
        @property
        def layout(self) -> str: ...
        @property
        def num_blocks(self) -> int: ...
        @property
        def capacity(self) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def nbytes(self) -> int: ...
        @property
        def counters_set(self) -> int: ...
        @property
        def fill_ratio(self) -> float: ...

else:
    CountingBase = _core.CountingBase


class CountingBloomFilter(MergeSetOps, Persistent, CountingBase[_K]):
    """A Bloom filter of small saturating counters (Fan et al., 2000).

    ``CountingBloomFilter(capacity, error_rate=0.01, *, counter_bits=4,
    layout="blocked", seed=0, key=None, secret=None)``.  ``add`` increments a key's k counters,
    ``remove`` decrements them (``KeyError`` and no change when the key is
    surely absent), ``count(key)`` is the minimum of them.  A counter at its
    maximum ``2**counter_bits - 1`` saturates: it is never incremented past
    it nor decremented again, which can waste a little space but never
    creates a false negative.

    Removing a key that was never added (a false positive) decrements
    counters that other keys rely on and can create false negatives: only
    remove keys you added (keep the keys, or check ``count(key)`` against
    your own bookkeeping).

    ``layout="blocked"`` keeps a key's counters in one 64-byte line (one
    cache miss per operation instead of k) at the price of more counters
    per key (:func:`counting_design`); such a filter has no
    :meth:`to_bloom`, and filters of different layouts do not merge
    (:class:`~bloomkit.IncompatibleFiltersError`).
    """

    __slots__ = ()
    _set_reason = (
        'a counter is the sum over every key that hashes to it, so no '
        'counter-wise comparison or difference gives the relation of two key '
        'sets (subtracting counters would remove other keys too); remove keys '
        'by name with remove_many, or compare BloomFilters'
    )
    _bk_kind = KIND_COUNTING_BLOOM

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, counter_bits: int = 4,
        layout: str = "blocked", seed: int = 0, key: None = None, secret: bytes | None = None,
    ) -> CountingBloomFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, counter_bits: int = 4,
        layout: str = "blocked", seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None,
    ) -> CountingBloomFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.01,
        *,
        counter_bits: int = 4,
        layout: str = "blocked",
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> CountingBloomFilter[Any]:
        bits = _check_counter_bits(counter_bits)
        kind = _check_layout(layout)
        d = counting_design(capacity, error_rate, counter_bits=bits, layout=kind)
        return super().__new__(
            cls, d.num_bits, d.num_hashes, bits, d.capacity, d.error_rate,
            seed=seed, secret=secret, key=key, layout=_LAYOUT_IDS[kind],
        )

    def to_bloom(self) -> BloomFilter[_K]:
        """A :class:`BloomFilter` with bit i set iff counter i is nonzero.

        Same m, k, seed, hashing and key=; for a filter that only saw adds it
        is byte-identical to the BloomFilter built from the same adds.
        Classic layout only: a blocked filter raises ``TypeError``.
        """
        result: BloomFilter[_K] = self._to_bloom(BloomFilter)
        return result

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        if self.layout != "classic":
            extra += f", layout={self.layout!r}"
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"num_counters={self.num_counters}, num_hashes={self.num_hashes}, "
            f"counter_bits={self.counter_bits}, seed={self.seed}, count={len(self)}, "
            f"fill_ratio={self.fill_ratio:.4f}{extra}{mapped})"
        )
