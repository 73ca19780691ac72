"""Frequency sketches: the count-min sketch, TinyLFU and a top-k tracker.

:class:`CountMinSketch` and :class:`TinyLFU` are thin facades over the C
types :class:`bloomkit._core.CountMinBase` and
:class:`bloomkit._core.TinyLFUBase` (``bk_sketch.c``); every per-key and batch
operation is C.  :class:`TopK` is a small pure-Python companion that keeps
the k most frequent keys seen, using a count-min sketch for the counts.
See docs/sketch.md.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar, overload

from . import _core
from ._typing import Key
from .persist import Persistent

__all__ = ["CountMinSketch", "TinyLFU", "TopK"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_COUNT_MIN = 7
KIND_TINYLFU = 8


def _check_rate(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in (0, 1), not {type(value).__name__}")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


class CountMinSketch(Persistent, _core.CountMinBase[_K]):
    """Count-min sketch (Cormode and Muthukrishnan, 2005).

    ``CountMinSketch(width, depth, *, seed=0, key=None, secret=None,
    conservative=False, counter_bits=32, row_hash=1)``: ``depth`` rows of
    ``width`` saturating counters.  Each row's column is an independent mix
    of the key hash (``row_hash=1``); ``row_hash=0`` is the double hashing of
    sketches written before, kept so that they load, answer and can be
    rebuilt as before (its rows are correlated: docs/sketch.md).
    ``estimate(key)`` is never below the true count (until a counter
    saturates); with ``width = ceil(e/eps)`` and ``depth = ceil(ln 1/delta)``
    it exceeds the truth by more than ``eps * total`` with probability at
    most ``delta`` (:meth:`from_error`).  ``a + b`` / ``a.merge(b)`` add
    counters of sketches of the same shape, seed, counter width, row hashing
    and hashing; a merge that would overflow a counter raises OverflowError
    and leaves the sketch unchanged unless ``saturate=True``.
    """

    __slots__ = ()
    _bk_kind = KIND_COUNT_MIN
    # in-place updates are atomic increments: many "r+" writers at once
    _shared_writers = True

    @overload
    def __new__(
        cls, width: int, depth: int, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Key]: ...
    @overload
    def __new__(
        cls, width: int, depth: int, *, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[_T]: ...
    def __new__(
        cls,
        width: int,
        depth: int,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        conservative: bool = False,
        counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Any]:
        for name, v in (("width", width), ("depth", depth), ("counter_bits", counter_bits),
                        ("row_hash", row_hash)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        return super().__new__(
            cls, width, depth, seed=seed, secret=secret, key=key,
            conservative=bool(conservative), counter_bits=counter_bits, row_hash=row_hash,
        )

    @overload
    @classmethod
    def from_error(
        cls, epsilon: float, delta: float, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Key]: ...
    @overload
    @classmethod
    def from_error(
        cls, epsilon: float, delta: float, *, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[_T]: ...
    @classmethod
    def from_error(
        cls,
        epsilon: float,
        delta: float,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        conservative: bool = False,
        counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Any]:
        """A sketch with error at most ``epsilon * total`` with probability ``1 - delta``.

        width = ceil(e / epsilon), depth = ceil(ln(1 / delta)).
        """
        eps = _check_rate("epsilon", epsilon)
        dlt = _check_rate("delta", delta)
        width = math.ceil(math.e / eps)
        depth = max(1, math.ceil(math.log(1.0 / dlt)))
        if width > 2**32:
            raise ValueError("epsilon too small: width would exceed 2**32")
        if depth > 64:
            raise ValueError("delta too small: depth would exceed 64")
        sketch: CountMinSketch[Any] = cls(
            width, depth, seed=seed, key=key, secret=secret, conservative=conservative,
            counter_bits=counter_bits, row_hash=row_hash,
        )
        return sketch

    @property
    def epsilon(self) -> float:
        """The additive error factor this width guarantees: e / width."""
        return math.e / self.width

    @property
    def delta(self) -> float:
        """The failure probability this depth guarantees: e ** -depth."""
        return math.exp(-self.depth)

    def __repr__(self) -> str:
        extra = ", conservative=True" if self.conservative else ""
        extra += ", row_hash=0" if self.row_hash == 0 else ""
        extra += ", keyed" if self.keyed else ""
        extra += ", mapped" if self.mapped else ""
        return (
            f"CountMinSketch(width={self.width}, depth={self.depth}, seed={self.seed}, "
            f"counter_bits={self.counter_bits}, total={self.total}{extra})"
        )


class TinyLFU(Persistent, _core.TinyLFUBase[_K]):
    """TinyLFU frequency sketch (Einziger, Friedman and Manes, 2017).

    ``TinyLFU(capacity, *, sample_factor=10, seed=0, key=None, secret=None)``:
    4-bit counters (a key's four in one 64-byte line) behind a doorkeeper
    Bloom filter; every ``sample_factor * capacity`` recorded events all
    counters are halved and the doorkeeper cleared.  ``record(key)`` on every
    access; ``admit(candidate, victim)`` is True when the candidate is
    estimated more frequent.
    """

    __slots__ = ()
    _bk_kind = KIND_TINYLFU

    @overload
    def __new__(
        cls, capacity: int, *, sample_factor: int = 10, seed: int = 0, key: None = None,
        secret: bytes | None = None,
    ) -> TinyLFU[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, *, sample_factor: int = 10, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None,
    ) -> TinyLFU[_T]: ...
    def __new__(
        cls,
        capacity: int,
        *,
        sample_factor: int = 10,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> TinyLFU[Any]:
        return super().__new__(
            cls, capacity, sample_factor=sample_factor, seed=seed, secret=secret, key=key
        )

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        extra += ", mapped" if self.mapped else ""
        return (
            f"TinyLFU(capacity={self.capacity}, sample_factor={self.sample_factor}, "
            f"seed={self.seed}, events={self.events}, resets={self.resets}{extra})"
        )


class TopK:
    """The ``k`` most frequent keys of a stream (heavy hitters).

    Counts come from a :class:`CountMinSketch` (so they are upper bounds);
    the candidates are the k keys with the highest estimates seen so far,
    kept in a min-heap.  A key that falls out can come back when its
    estimate grows again.  ``TopK(k, *, epsilon=1e-4, delta=1e-3, seed=0)``
    or ``TopK(k, sketch=existing_sketch)``.  Thread-safe: ``add`` and
    ``heavy_hitters`` run under a lock (the heap and the dict change
    together; without it threads raised IndexError and lost counts, R31).
    """

    def __init__(
        self,
        k: int,
        *,
        epsilon: float = 1e-4,
        delta: float = 1e-3,
        seed: int = 0,
        sketch: CountMinSketch[Any] | None = None,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"k must be an int, not {type(k).__name__}")
        if k < 1:
            raise ValueError("k must be >= 1")
        self.k = k
        if sketch is None:
            sketch = CountMinSketch.from_error(epsilon, delta, seed=seed)
        self.sketch: CountMinSketch[Any] = sketch
        self._top: dict[Hashable, int] = {}
        self._heap: list[tuple[int, int, Hashable]] = []  # (estimate, tiebreak, key), lazy
        self._tick = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # a lock does not pickle; a copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _push(self, key: Hashable, est: int) -> None:
        self._tick += 1
        heapq.heappush(self._heap, (est, self._tick, key))

    def _min(self) -> tuple[int, Hashable]:
        while True:
            est, _, key = self._heap[0]
            if self._top.get(key) == est:
                return est, key
            heapq.heappop(self._heap)  # stale entry

    def add(self, key: Hashable, count: int = 1) -> int:
        """Count ``key``; return its estimate."""
        with self._lock:
            return self._add(key, count)

    def _add(self, key: Hashable, count: int) -> int:
        est: int = self.sketch.add(key, count)
        top = self._top
        if key in top:
            top[key] = est
            self._push(key, est)
        elif len(top) < self.k:
            top[key] = est
            self._push(key, est)
        else:
            low, low_key = self._min()
            if est > low:
                del top[low_key]
                heapq.heappop(self._heap)
                top[key] = est
                self._push(key, est)
        if len(self._heap) > 4 * self.k + 64:  # drop stale entries
            self._heap = [(e, i, kk) for e, i, kk in self._heap if top.get(kk) == e]
            heapq.heapify(self._heap)
        return est

    def update(self, keys: Iterable[Hashable]) -> None:
        """Count every key of an iterable."""
        for key in keys:
            self.add(key)

    def heavy_hitters(self, k: int | None = None) -> list[tuple[Hashable, int]]:
        """The (up to) ``k`` most frequent keys and their estimates, most frequent first."""
        n = self.k if k is None else k
        with self._lock:
            items = list(self._top.items())
        return sorted(items, key=lambda kv: (-kv[1], repr(kv[0])))[:n]

    def __contains__(self, key: object) -> bool:
        return key in self._top

    def __len__(self) -> int:
        return len(self._top)

    def __repr__(self) -> str:
        return f"TopK(k={self.k}, tracked={len(self._top)}, total={self.sketch.total})"
