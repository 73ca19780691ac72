"""A W-TinyLFU cache: keeps one-hit wonders out.

:class:`TinyLFUCache` is a dict-like bounded cache (Einziger, Friedman and
Manes, 2017): new entries land in a small LRU *window* (about 1% of
``maxsize``); an entry evicted from the window is admitted into the *main*
segment only if a :class:`bloomkit.TinyLFU` sketch estimates it more
frequent than the main segment's next victim.  The main segment is a
segmented LRU: *probation* (20%) for entries seen once in main, *protected*
(80%) for entries hit again.  A scan of one-hit keys therefore only churns
the window, and the frequently used entries stay.

The window/main split adapts by hill climbing (Einziger, Eytan, Friedman
and Manes, "Adaptive Software Cache Management", Middleware 2018): the
cache tries a window one step larger (or smaller) than the current one in
A-B-B-A trials of ``sample_factor * maxsize`` sampled lookups, takes the
new size when it hit more often beyond noise, and otherwise tries the other
way with a smaller step.  A recency-biased workload grows the window
(towards LRU), a frequency-biased one keeps it small (towards LFU).
``adaptive=False`` keeps the 1% window.  See ``TinyLFUCache._climb`` and
docs/cache.md.

:func:`tinylfu_cache` is a decorator with the shape of
:func:`functools.lru_cache` (``cache_info()``, ``cache_clear()``,
``cache_parameters()``, ``__wrapped__``).

The sketch is fed the key itself when it is a str, bytes or int (so the
cache's decisions are the same in every run), and ``hash(key)`` for any other
hashable (tuples, frozensets, ...: those decisions follow PYTHONHASHSEED,
which is harmless for an in-process cache); the cache lives in one process
(use a :class:`bloomkit.TinyLFU` directly to persist frequencies).  See docs/cache.md.
"""

from __future__ import annotations

import functools
import math
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

WINDOW_SHARE = 0.01     # initial window ~1% of maxsize (at least 1 entry)
PROTECTED_SHARE = 0.8   # protected ~80% of the main segment

# Hill climbing on the window size (adaptive=True).
CLIMB_STEP_SHARE = 0.0625  # a full step moves 6.25% of maxsize between window and main
CLIMB_STEP_DECAY = 0.8     # a rejected step shrinks by 20%
CLIMB_RESTART = 0.05       # a trial-to-trial hit-ratio change this large restarts the climb
CLIMB_NOISE_Z = 2.0        # a hit-ratio change within 2 standard errors moves nothing
CLIMB_MAX_LOOKS = 4        # trials at one B size before giving up on it (within noise)
CLIMB_WARMUP = 4           # samples after the cache is first full before the first trial
CLIMB_MIN_SAMPLE = 256     # re-references per sample (a quarter of a trial), at least
CLIMB_MIN_SIZE = 16        # smaller caches keep a fixed split


# Two-sided 95% quantiles of Student's t for (trials - 1) degrees of freedom.
_T95 = {3: 4.303, 4: 3.182}

_STABLE_KEYS = (str, bytes, int)


def _sketch_key(key: Any) -> Any:
    """The key as the sketch sees it: itself when bloomkit can encode it, else hash()."""
    return key if type(key) in _STABLE_KEYS else hash(key)


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
        "_adaptive",
        "_admissions",
        "_base",
        "_cur_a",
        "_cur_b",
        "_diff_sq",
        "_diff_sum",
        "_hits",
        "_last_miss",
        "_looks",
        "_main_max",
        "_misses",
        "_phase",
        "_prev_rate",
        "_probation",
        "_protected",
        "_protected_max",
        "_rejections",
        "_sample_hits",
        "_sample_left",
        "_sample_size",
        "_step",
        "_trial_a",
        "_trial_b",
        "_window",
        "_window_max",
        "maxsize",
        "sketch",
    )

    def __init__(
        self, maxsize: int, *, sample_factor: int = 10, seed: int = 0, adaptive: bool = True
    ) -> None:
        self.maxsize = _check_maxsize(maxsize)
        if not isinstance(adaptive, bool):
            raise TypeError(f"adaptive must be a bool, not {type(adaptive).__name__}")
        self.sketch = TinyLFU(max(1, self.maxsize), sample_factor=sample_factor, seed=seed)
        self._adaptive = adaptive and self.maxsize >= CLIMB_MIN_SIZE
        # A trial (4 samples) spans sample_factor * maxsize re-references.
        self._sample_size = max(CLIMB_MIN_SAMPLE, sample_factor * self.maxsize // 4)
        self._window: OrderedDict[K, V] = OrderedDict()
        self._probation: OrderedDict[K, V] = OrderedDict()
        self._protected: OrderedDict[K, V] = OrderedDict()
        self._last_miss: Any = _MISSING
        self._hits = self._misses = self._admissions = self._rejections = 0
        self._reset_split()

    def _reset_split(self) -> None:
        """The initial 1% window, and a climber that has not sampled yet."""
        self._window_max = min(self.maxsize, max(1, round(self.maxsize * WINDOW_SHARE)))
        self._main_max = self.maxsize - self._window_max
        self._protected_max = int(self._main_max * PROTECTED_SHARE)
        # The climber (see _climb): lookups left in this sample, and its hits.
        self._sample_left = self._sample_size if self._adaptive else 0
        self._sample_hits = 0
        self._phase = -CLIMB_WARMUP  # quarter of the A-B-B-A trial; < 0 warming up
        self._cur_a = self._cur_b = 0  # this trial's hits at the A and B sizes
        self._looks = 0  # trials run at this B size (their hits add up)
        self._diff_sum = self._diff_sq = 0.0  # sum of their B - A hit ratios, and squares
        self._base = self._window_max  # the A size
        self._trial_a = self._trial_b = 0
        self._prev_rate = -1.0  # the last trial's A hit ratio
        self._step = CLIMB_STEP_SHARE * self.maxsize  # the B size is base + step

    @property
    def adaptive(self) -> bool:
        """Whether the window size adapts (False when asked, or below 16 entries)."""
        return self._adaptive

    @property
    def window_maxsize(self) -> int:
        """The window's current share of ``maxsize`` in entries (adapts when ``adaptive``)."""
        return self._window_max

    # ---- lookups -------------------------------------------------------------

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: V) -> V: ...
    @overload
    def get(self, key: K, default: Any) -> Any: ...

    def get(self, key: K, default: Any = None) -> Any:
        """The cached value (a hit) or ``default`` (a miss)."""
        sk = _sketch_key(key)
        sketch = self.sketch
        sketch.record(sk)
        # The climber samples lookups of keys seen before (estimate >= 2 once
        # recorded): a first sighting misses under every split (see _climb).
        counted = self._sample_left > 0 and sketch.estimate(sk) > 1
        window = self._window
        if key in window:
            window.move_to_end(key)
            value = window[key]
        elif key in self._protected:
            protected = self._protected
            protected.move_to_end(key)
            value = protected[key]
        elif key in self._probation:
            protected = self._protected
            value = self._probation.pop(key)
            protected[key] = value
            if len(protected) > self._protected_max:
                k2, v2 = protected.popitem(last=False)
                self._probation[k2] = v2
        else:
            self._misses += 1
            self._last_miss = key
            if counted:
                self._sample_left -= 1
                if not self._sample_left:
                    self._climb()
            return default
        self._hits += 1
        if counted:
            self._sample_hits += 1
            self._sample_left -= 1
            if not self._sample_left:
                self._climb()
        return value

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
            self.sketch.record(_sketch_key(key))
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
        if self.sketch.admit(_sketch_key(cand), _sketch_key(victim)):
            del victim_seg[victim]
            probation[cand] = cval
            self._admissions += 1
        else:
            self._rejections += 1

    def _climb(self) -> None:
        """End of a sample: one quarter of an A-B-B-A trial of a window size.

        A sample is ``_sample_size`` lookups of keys the sketch had seen
        before (estimate >= 2 once recorded), hits and misses alike.  A first
        sighting (a compulsory miss; every request of a one-hit scan) misses
        under any split, so it is no evidence; leaving those out keeps a
        scan that falls into one sample but not the next from reading as a
        change of the split's quality.

        A trial runs four samples: A at the current window size, B twice at
        the size one step away, A again.  Comparing A+A with B+B cancels any
        linear drift of the hit ratio during the trial (a cache still
        learning frequencies, a slowly changing workload), which
        sample-to-sample hill climbing reads as "my last move helped".
        ``_judge`` then takes the B size (and steps on the same way), turns
        to the other way with the step shrunk by CLIMB_STEP_DECAY, or runs
        the trial again (up to CLIMB_MAX_LOOKS) when the difference is still
        within noise.  The step restarts at CLIMB_STEP_SHARE * maxsize when
        the A hit ratio moved by CLIMB_RESTART since the last decision (a
        changed workload).  The first trial waits until the cache is full
        and CLIMB_WARMUP samples more have passed.
        """
        n = self._sample_size
        hits = self._sample_hits
        self._sample_left = n
        self._sample_hits = 0
        phase = self._phase
        if phase < 0:
            # Warming up: the cache fills, then one trial's length more (a cache
            # still learning frequencies gains hit ratio on a concave curve, which
            # even A-B-B-A reads as "B is better").
            if len(self) >= self.maxsize:
                self._phase += 1
            return
        if phase == 0:
            if self._probe_size() == self._base and round(self._step):
                self._step = -self._step  # at a bound: step the other way
            self._cur_a = hits
            self._phase = 1
            self._resize_window(self._probe_size() - self._window_max)
        elif phase == 1:
            self._cur_b = hits
            self._phase = 2
        elif phase == 2:
            self._cur_b += hits
            self._phase = 3
            self._resize_window(self._base - self._window_max)
        else:
            self._phase = 0
            self._judge(self._cur_a + hits, self._cur_b)

    def _judge(self, a: int, b: int) -> None:
        """After a trial: take the B size, try the other way, or run the trial again.

        ``a`` and ``b`` are this trial's hits at the A and B sizes.  B is
        better (or worse) when the trials so far at this B size say so by
        either test: the pooled hit ratios differ by more than CLIMB_NOISE_Z
        binomial standard errors, or (from 3 trials) the per-trial
        differences pass a paired t-test at 95% -- the hits of one cache are
        not independent draws, and a small but steady gain shows in the
        paired differences before it clears the binomial bound.
        """
        n2 = 2 * self._sample_size  # lookups per arm and trial
        looks = self._looks = self._looks + 1
        d = (b - a) / n2
        self._trial_a += a
        self._trial_b += b
        self._diff_sum += d
        self._diff_sq += d * d
        m = n2 * looks
        rate_a, rate_b = self._trial_a / m, self._trial_b / m
        p = (rate_a + rate_b) / 2
        noise = CLIMB_NOISE_Z * math.sqrt(max(2 * p * (1 - p), 1 / m) / m)
        verdict = 0
        if abs(rate_b - rate_a) > noise:
            verdict = 1 if rate_b > rate_a else -1
        elif looks >= 3:
            mean = self._diff_sum / looks
            var = max(0.0, (self._diff_sq - looks * mean * mean) / (looks - 1))
            if mean and mean * mean * looks > _T95[looks] ** 2 * var:
                verdict = 1 if mean > 0 else -1
        if not verdict and looks >= CLIMB_MAX_LOOKS and rate_b - rate_a > noise / 2:
            # Out of looks with B ahead by more than one standard error: a
            # shallow slope reads like this (a loop trace at a 30% window: each
            # step of 13 entries gains ~1.5 SE over four trials).  Abandoning
            # it would shrink the step towards 0 and stall the climb short of
            # the optimum (seen in 1 of 60 seeds); taking it costs at most
            # noise where the curve is flat.
            verdict = 1
        step = self._step
        if verdict > 0:
            self._base = self._probe_size()  # better: take it, and step on the same way
            self._resize_window(self._base - self._window_max)
        elif verdict < 0 or looks >= CLIMB_MAX_LOOKS:
            step = -step * CLIMB_STEP_DECAY  # no better that way: try the other way next
        else:
            return  # within noise: the same trial again, the evidence adds up
        if self._prev_rate >= 0 and abs(rate_a - self._prev_rate) >= CLIMB_RESTART:
            step = math.copysign(CLIMB_STEP_SHARE * self.maxsize, step)
        self._prev_rate = rate_a
        self._step = step
        self._trial_a = self._trial_b = self._looks = 0
        self._diff_sum = self._diff_sq = 0.0

    def _probe_size(self) -> int:
        """The window size one step from the current one, within [1, maxsize - 1]."""
        return min(self.maxsize - 1, max(1, self._base + round(self._step)))

    def _resize_window(self, delta: int) -> None:
        """Move ``delta`` entries of capacity from main to the window (< 0: back)."""
        new = min(self.maxsize - 1, max(1, self._window_max + delta))
        if new == self._window_max:
            return
        self._window_max = new
        self._main_max = self.maxsize - new
        self._protected_max = int(self._main_max * PROTECTED_SHARE)
        window, probation, protected = self._window, self._probation, self._protected
        while len(protected) > self._protected_max:
            k, v = protected.popitem(last=False)
            probation[k] = v
        # A smaller main hands its LRU entries to the window's LRU end (oldest first,
        # in their order): they are the next window evictions and will ask back in.
        moved: list[tuple[K, V]] = []
        while len(probation) + len(protected) > self._main_max:
            moved.append((probation if probation else protected).popitem(last=False))
        for k, v in reversed(moved):
            window[k] = v
            window.move_to_end(k, last=False)
        # A smaller window hands its LRU entries to probation (main has room now).
        while len(window) > self._window_max:
            k, v = window.popitem(last=False)
            probation[k] = v

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
        """Drop every entry, the frequencies, the statistics and the adapted split."""
        self._window.clear()
        self._probation.clear()
        self._protected.clear()
        self.sketch.clear()
        self._last_miss = _MISSING
        self._hits = self._misses = self._admissions = self._rejections = 0
        self._reset_split()

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
            f"misses={s.misses}, window={self._window_max})"
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
    maxsize: int | Callable[..., Any] = 128,
    typed: bool = False,
    *,
    seed: int = 0,
    adaptive: bool = True,
) -> Any:
    """Memoize a function in a :class:`TinyLFUCache` (shape of functools.lru_cache).

    ``@tinylfu_cache`` or ``@tinylfu_cache(maxsize, typed=False)``.  The
    wrapper has ``cache_info()``, ``cache_clear()``, ``cache_parameters()``,
    ``__wrapped__`` and ``cache`` (the TinyLFUCache).  Arguments must be
    hashable.  Thread-safe: cache bookkeeping runs under a lock (the
    function itself runs outside it, so two threads may compute one value).
    ``adaptive`` as for :class:`TinyLFUCache`.
    """
    if callable(maxsize) and not isinstance(maxsize, int):
        return tinylfu_cache(128, typed, seed=seed, adaptive=adaptive)(maxsize)
    size = _check_maxsize(maxsize)

    def decorate(func: F) -> F:
        cache: TinyLFUCache[Hashable, Any] = TinyLFUCache(size, seed=seed, adaptive=adaptive)
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
