"""Frequency sketches: the count-min sketch, TinyLFU and a top-k tracker.

:class:`CountMinSketch` and :class:`TinyLFU` are thin facades over the C
types :class:`bloomkit._core.CountMinBase` and
:class:`bloomkit._core.TinyLFUBase` (``bk_sketch.c``); every per-key and batch
operation is C.  :class:`TopK` keeps the k most frequent keys seen, using a
count-min sketch for the counts (its core :class:`bloomkit._core.TopKBase`,
``bk_topk.c``, is C too).
See docs/sketch.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, overload

from . import _core
from ._typing import Key
from .persist import Persistent

__all__ = ["CountMinSketch", "TinyLFU", "TopK"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_COUNT_MIN: int = _core.KINDS["CountMinSketch"]
KIND_TINYLFU: int = _core.KINDS["TinyLFU"]


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


class TopK(_core.TopKBase):
    """The ``k`` most frequent keys of a stream (heavy hitters).

    Counts come from a :class:`CountMinSketch` (so they are upper bounds);
    the candidates are the k keys with the highest estimates seen so far,
    kept in a min-heap in C (``bk_topk.c``).  A key that falls out can come
    back when its estimate grows again.  ``TopK(k, *, epsilon=1e-4,
    delta=1e-3, seed=0)`` or ``TopK(k, sketch=existing_sketch)``.  Keys are
    identified as the sketch counts them (its hash, seed, secret and key=);
    each candidate reports the key object it entered with.  ``update(keys)``
    takes a list, tuple, iterable, numpy array or ByteKeys; the sketch
    counts exactly as ``add`` on each key in order, and each distinct key
    of a chunk (up to 65,536 events) is offered to the candidates once,
    with its estimate right after that count is added (docs/sketch.md:
    what that guarantees).  Thread-safe: every call
    runs in C under the GIL (R31).
    """

    __slots__ = ()

    def __new__(
        cls,
        k: int | None = None,
        *,
        epsilon: float = 1e-4,
        delta: float = 1e-3,
        seed: int = 0,
        sketch: CountMinSketch[Any] | None = None,
    ) -> TopK:
        if k is None:
            # cls.__new__(cls): how pickles of the pure-Python TopK (before
            # #21) start; __setstate__ fills it.  Any other use raises.
            return super().__new__(cls)
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"k must be an int, not {type(k).__name__}")
        if k < 1:
            raise ValueError("k must be >= 1")
        if sketch is None:
            sketch = CountMinSketch.from_error(epsilon, delta, seed=seed)
        elif not isinstance(sketch, _core.CountMinBase):
            raise TypeError(f"sketch must be a CountMinSketch, not {type(sketch).__name__}")
        return super().__new__(cls, k, sketch)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_topk, (type(self), self.k, self.sketch, self._entries(), self._tick))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Load a pickle of the pure-Python TopK (before #21): its ``__dict__``
        with ``k``, ``sketch``, ``_top`` {key: estimate}, ``_heap`` [(estimate,
        tick, key)] (with stale entries) and ``_tick``.  A key's tick is the
        oldest heap entry that matches its estimate, the one its heap met
        first, so that later evictions happen in the same order."""
        if not isinstance(state, dict) or not {"k", "sketch", "_top"} <= state.keys():
            raise TypeError("not the state of a TopK")
        top: dict[Any, int] = state["_top"]
        ticks: dict[Any, int] = {}
        for est, tick, key in state.get("_heap", []):
            if top.get(key) == est and (key not in ticks or tick < ticks[key]):
                ticks[key] = tick
        entries = [(key, est, ticks.get(key, 0)) for key, est in top.items()]
        self._restore(state["k"], state["sketch"], entries, state.get("_tick", 0) + 1)

    def heavy_hitters(self, k: int | None = None) -> list[tuple[Hashable, int]]:
        """The (up to) ``k`` most frequent keys and their estimates, most frequent first."""
        n = self.k if k is None else k
        items = self._items()
        return sorted(items, key=lambda kv: (-kv[1], repr(kv[0])))[:n]

    def __repr__(self) -> str:
        return f"TopK(k={self.k}, tracked={len(self)}, total={self.sketch.total})"


# TopK is no Persistent (it has no state format): give it its own C method
# descriptors here, as Persistent.__init_subclass__ does for the others, so
# that CPython specialises top.add(key) on it as on _core.TopKBase (#21).
_core.own_methods(TopK)


def _restore_topk(
    cls: type[TopK], k: int, sketch: CountMinSketch[Any],
    entries: list[tuple[Hashable, int, int]], tick: int,
) -> TopK:
    """Unpickle a TopK (its ``__reduce__``)."""
    top = cls.__new__(cls)
    top._restore(k, sketch, entries, tick)
    return top
