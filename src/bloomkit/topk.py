"""TopK: the ``k`` most frequent keys of a stream (heavy hitters).

A thin facade over the C type :class:`bloomkit.TopKBase` (``bk_topk.c``:
a min-heap of candidates) that takes its counts from a
:class:`bloomkit.sketch.CountMinSketch`.  See docs/sketch.md.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from . import _core
from .sketch import CountMinBase, CountMinSketch

__all__ = ["TopK"]


if TYPE_CHECKING:
    # The C type _core.TopKBase (py_topk.c) as mypy sees it: the stub of a structure's
    # C type lives in its facade (_core.pyi keeps the module's functions and the shared
    # bases).
    from collections.abc import Iterable


    _TopKSelf = TypeVar("_TopKSelf", bound="TopKBase")

    class TopKBase:
        def __new__(
            cls: type[_TopKSelf], k: int = ..., sketch: CountMinBase[Any] = ...
        ) -> _TopKSelf: ...
        def add(self, key: Any, count: int = 1, /) -> int: ...
        def update(self, keys: Iterable[Any], /) -> None: ...
        def __contains__(self, key: object, /) -> bool: ...
        def __len__(self) -> int: ...
        def __sizeof__(self) -> int: ...
        def _entries(self) -> list[tuple[Any, int, int]]: ...
        def _items(self) -> list[tuple[Any, int]]: ...
        def _restore(
            self, k: int, sketch: CountMinBase[Any], entries: list[tuple[Any, int, int]],
            tick: int, /
        ) -> None: ...
        @property
        def k(self) -> int: ...
        @property
        def sketch(self) -> CountMinBase[Any]: ...
        @property
        def _tick(self) -> int: ...

else:
    TopKBase = _core.TopKBase


class TopK(TopKBase):
    """The ``k`` most frequent keys of a stream (heavy hitters).

    Counts come from a :class:`CountMinSketch` (so they are upper bounds);
    the candidates are the k keys with the highest estimates seen so far,
    kept in a min-heap in C (``bk_topk.c``).  A key that falls out can come
    back when its estimate grows again.  ``TopK(k, *, epsilon=1e-4,
    delta=1e-3, seed=0)`` or ``TopK(k, sketch=existing_sketch)``.  Keys are
    identified as the sketch counts them (its hash, seed, secret and key=);
    each candidate reports the key object it entered with.  ``update(keys)``
    takes a list, tuple, iterable, numpy array, ByteKeys or Arrow column
    (pyarrow, Polars: null rows are no key, and a candidate holds its row's
    value as ``to_pylist()`` gives it); the sketch
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
        elif not isinstance(sketch, CountMinBase):
            raise TypeError(f"sketch must be a CountMinSketch, not {type(sketch).__name__}")
        return super().__new__(cls, k, sketch)

    def __reduce__(self) -> tuple[Any, ...]:
        return (restore_topk, (type(self), self.k, self.sketch, self._entries(), self._tick))

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
# that CPython specialises top.add(key) on it as on TopKBase (#21).
_core.own_methods(TopK)


def restore_topk(
    cls: type[TopK], k: int, sketch: CountMinSketch[Any],
    entries: list[tuple[Hashable, int, int]], tick: int,
) -> TopK:
    """Unpickle a TopK (its ``__reduce__``)."""
    top = cls.__new__(cls)
    top._restore(k, sketch, entries, tick)
    return top
