"""A W-TinyLFU cache: keeps one-hit wonders out.

:class:`TinyLFUCache` is a dict-like bounded cache (Einziger, Friedman and
Manes, 2017): new entries land in a small LRU *window* (about 1% of
``maxsize``); an entry evicted from the window is admitted into the *main*
segment only if a :class:`bloomkit.TinyLFU` sketch estimates it more
frequent than the main segment's next victim.  The main segment is a
segmented LRU: *probation* (20%) for entries seen once in main, *protected*
(80%) for entries hit again.  A scan of one-hit keys therefore only churns
the window, and the frequently used entries stay.

:func:`tinylfu_cache` is a decorator with the shape of
:func:`functools.lru_cache` (``cache_info()``, ``cache_clear()``,
``cache_parameters()``, ``__wrapped__``).

The sketch is fed ``hash(key)``, so any hashable key works; the cache lives
in one process (use a :class:`bloomkit.TinyLFU` directly to persist
frequencies).  See docs/cache.md.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, NamedTuple, TypeVar, overload

from .sketch import TinyLFU

__all__ = ["CacheInfo", "CacheStats", "TinyLFUCache", "tinylfu_cache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., Any])

_MISSING: Any = object()

WINDOW_SHARE = 0.01     # window ~1% of maxsize (at least 1 entry)
PROTECTED_SHARE = 0.8   # protected ~80% of the main segment


class CacheStats(NamedTuple):
    """Counters of a :class:`TinyLFUCache` since creation or the last ``clear()``."""

    hits: int
    misses: int
    admissions: int   # window evictions admitted into the main segment
    rejections: int   # window evictions TinyLFU refused (dropped)
    size: int
    maxsize: int


class CacheInfo(NamedTuple):
    """Same fields as :func:`functools.lru_cache`'s ``cache_info()``."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


def _check_maxsize(maxsize: object) -> int:
    if isinstance(maxsize, bool) or not isinstance(maxsize, int):
        raise TypeError(f"maxsize must be an int >= 0, not {type(maxsize).__name__}")
    if maxsize < 0:
        raise ValueError("maxsize must be >= 0")
    return maxsize


class TinyLFUCache(Generic[K, V]):
    """A bounded dict-like cache with W-TinyLFU admission.

    ``get``/``cache[key]`` count a hit or a miss and record the access in
    the sketch; ``set``/``cache[key] = value`` insert (a set right after a
    miss of the same key is not recorded twice).  ``in``, ``len``, ``pop``,
    ``del`` and iteration do not touch statistics or frequencies.
    ``len(cache) <= maxsize`` always.  Not thread-safe (the decorator locks).
    """

    __slots__ = (
        "_admissions", "_hits", "_last_miss", "_main_max", "_misses", "_probation",
        "_protected", "_protected_max", "_rejections", "_window", "_window_max",
        "maxsize", "sketch",
    )

    def __init__(self, maxsize: int, *, sample_factor: int = 10, seed: int = 0) -> None:
        self.maxsize = _check_maxsize(maxsize)
        self._window_max = min(self.maxsize, max(1, round(self.maxsize * WINDOW_SHARE)))
        self._main_max = self.maxsize - self._window_max
        self._protected_max = int(self._main_max * PROTECTED_SHARE)
        self.sketch = TinyLFU(max(1, self.maxsize), sample_factor=sample_factor, seed=seed)
        self._window: OrderedDict[K, V] = OrderedDict()
        self._probation: OrderedDict[K, V] = OrderedDict()
        self._protected: OrderedDict[K, V] = OrderedDict()
        self._last_miss: Any = _MISSING
        self._hits = self._misses = self._admissions = self._rejections = 0

    # ---- lookups -------------------------------------------------------------

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: V) -> V: ...
    @overload
    def get(self, key: K, default: Any) -> Any: ...

    def get(self, key: K, default: Any = None) -> Any:
        """The cached value (a hit) or ``default`` (a miss)."""
        self.sketch.record(hash(key))
        window = self._window
        if key in window:
            window.move_to_end(key)
            self._hits += 1
            return window[key]
        protected = self._protected
        if key in protected:
            protected.move_to_end(key)
            self._hits += 1
            return protected[key]
        probation = self._probation
        if key in probation:
            value = probation.pop(key)
            protected[key] = value
            if len(protected) > self._protected_max:
                k2, v2 = protected.popitem(last=False)
                probation[k2] = v2
            self._hits += 1
            return value
        self._misses += 1
        self._last_miss = key
        return default

    def __getitem__(self, key: K) -> V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        result: V = value
        return result

    def __contains__(self, key: object) -> bool:
        return key in self._window or key in self._protected or key in self._probation

    def __len__(self) -> int:
        return len(self._window) + len(self._probation) + len(self._protected)

    def __iter__(self) -> Iterator[K]:
        yield from list(self._window)
        yield from list(self._probation)
        yield from list(self._protected)

    # ---- updates -------------------------------------------------------------

    def set(self, key: K, value: V) -> None:
        """Insert or replace ``key``; may evict (or refuse) an entry to stay within maxsize."""
        last = self._last_miss
        self._last_miss = _MISSING
        for seg in (self._window, self._protected, self._probation):
            if key in seg:
                seg[key] = value
                seg.move_to_end(key)
                return
        if last is _MISSING or last != key:
            self.sketch.record(hash(key))
        if self.maxsize == 0:
            return
        window = self._window
        window[key] = value
        if len(window) > self._window_max:
            cand, cval = window.popitem(last=False)
            self._offer(cand, cval)

    __setitem__ = set

    def _offer(self, cand: K, cval: V) -> None:
        """A window eviction asks to enter the main segment."""
        probation, protected = self._probation, self._protected
        if len(probation) + len(protected) < self._main_max:
            probation[cand] = cval
            self._admissions += 1
            return
        if self._main_max == 0:
            self._rejections += 1
            return
        victim_seg = probation if probation else protected
        victim = next(iter(victim_seg))
        if self.sketch.admit(hash(cand), hash(victim)):
            del victim_seg[victim]
            probation[cand] = cval
            self._admissions += 1
        else:
            self._rejections += 1

    def pop(self, key: K, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its value (or ``default``; KeyError without one)."""
        for seg in (self._window, self._probation, self._protected):
            if key in seg:
                return seg.pop(key)
        if default is _MISSING:
            raise KeyError(key)
        return default

    def __delitem__(self, key: K) -> None:
        self.pop(key)

    def clear(self) -> None:
        """Drop every entry, the frequencies and the statistics."""
        self._window.clear()
        self._probation.clear()
        self._protected.clear()
        self.sketch.clear()
        self._last_miss = _MISSING
        self._hits = self._misses = self._admissions = self._rejections = 0

    @property
    def stats(self) -> CacheStats:
        """hits, misses, admissions, rejections, size and maxsize."""
        return CacheStats(
            self._hits, self._misses, self._admissions, self._rejections, len(self),
            self.maxsize,
        )

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"TinyLFUCache(maxsize={self.maxsize}, size={s.size}, hits={s.hits}, "
            f"misses={s.misses})"
        )


class _KwdMark:
    __slots__ = ()


_KWD_MARK = _KwdMark()
_FAST_TYPES = frozenset({int, str})


def _make_key(args: tuple[Any, ...], kwargs: dict[str, Any], typed: bool) -> Hashable:
    key: tuple[Any, ...] = args
    if kwargs:
        key += (_KWD_MARK, *kwargs.items())
    if typed:
        key += tuple(type(v) for v in args)
        if kwargs:
            key += tuple(type(v) for v in kwargs.values())
    elif len(key) == 1 and type(key[0]) in _FAST_TYPES:
        single: Hashable = key[0]
        return single
    return key


def tinylfu_cache(
    maxsize: int | Callable[..., Any] = 128, typed: bool = False, *, seed: int = 0
) -> Any:
    """Memoize a function in a :class:`TinyLFUCache` (shape of functools.lru_cache).

    ``@tinylfu_cache`` or ``@tinylfu_cache(maxsize, typed=False)``.  The
    wrapper has ``cache_info()``, ``cache_clear()``, ``cache_parameters()``,
    ``__wrapped__`` and ``cache`` (the TinyLFUCache).  Arguments must be
    hashable.  Thread-safe: cache bookkeeping runs under a lock (the
    function itself runs outside it, so two threads may compute one value).
    """
    if callable(maxsize) and not isinstance(maxsize, int):
        return tinylfu_cache(128, typed, seed=seed)(maxsize)
    size = _check_maxsize(maxsize)

    def decorate(func: F) -> F:
        cache: TinyLFUCache[Hashable, Any] = TinyLFUCache(size, seed=seed)
        lock = threading.Lock()

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = _make_key(args, kwargs, typed)
            with lock:
                value = cache.get(key, _MISSING)
            if value is not _MISSING:
                return value
            value = func(*args, **kwargs)
            with lock:
                cache.set(key, value)
            return value

        def cache_info() -> CacheInfo:
            with lock:
                s = cache.stats
            return CacheInfo(s.hits, s.misses, size, s.size)

        def cache_clear() -> None:
            with lock:
                cache.clear()

        def cache_parameters() -> dict[str, Any]:
            return {"maxsize": size, "typed": typed}

        w: Any = functools.update_wrapper(wrapper, func)
        w.cache_info = cache_info
        w.cache_clear = cache_clear
        w.cache_parameters = cache_parameters
        w.cache = cache
        result: F = w
        return result

    return decorate
