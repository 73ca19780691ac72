"""TinyLFUCache's adaptive window (hill climbing on the window/main split):
the window grows on a recency-biased trace, shrinks back on a frequency-biased
one, stays small where frequency wins, the segments stay within their bounds
while entries move between them, and a run is deterministic for a seed."""

from __future__ import annotations

import bisect
import itertools
import random
from collections import OrderedDict

import pytest

from bloomkit.cache import TinyLFUCache, tinylfu_cache

M = 500  # cache size of the traces below; a trial is 10 * M = 5000 sampled lookups


def recency_trace(n: int, rng: random.Random, start: int = 0) -> list[int]:
    """A sliding working set of M/2 keys moving by one key every 4 requests:
    each key is asked about 4 times within 2M requests and never again, so
    recency is everything and frequency is no guide (LRU hits ~75%)."""
    return [start + t // 4 - rng.randrange(M // 2) for t in range(n)]


def loop_trace(n: int, rng: random.Random, start: int = 10**7) -> list[int]:
    """A loop over 1.5 M keys (LRU's worst case: it always evicts the next key),
    10% noise: a frequency-biased trace where a big window only hurts."""
    loop = M * 3 // 2
    return [
        start + t % loop if rng.random() < 0.9 else start - 1 - int(rng.paretovariate(1.0))
        for t in range(n)
    ]


def zipf_scan_trace(n: int, rng: random.Random) -> list[int]:
    """Zipf(1.0) over 50,000 keys, and after every 2,000 requests a scan of
    1,000 fresh keys never asked again."""
    cdf = list(itertools.accumulate((i + 1) ** -1.0 for i in range(50_000)))
    out: list[int] = []
    fresh = 10**9
    while len(out) < n:
        out.extend(bisect.bisect(cdf, rng.random() * cdf[-1]) for _ in range(2000))
        out.extend(range(fresh, fresh + 1000))
        fresh += 1000
    return out[:n]


def replay(c: TinyLFUCache[int, int], keys: list[int]) -> tuple[int, list[int]]:
    """Cache-aside replay; the hits and the window size after every 20,000 requests."""
    hits0 = c.stats.hits
    windows = []
    for i, k in enumerate(keys, 1):
        if c.get(k) is None:
            c.set(k, k)
        if i % 20_000 == 0:
            windows.append(c.window_maxsize)
    return c.stats.hits - hits0, windows


def lru_hits(keys: list[int], size: int) -> int:
    od: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for k in keys:
        if k in od:
            od.move_to_end(k)
            hits += 1
        else:
            od[k] = None
            if len(od) > size:
                od.popitem(last=False)
    return hits


class WindowAdaptationTests:
    def test_window_grows_on_a_recency_biased_trace(self, rng: random.Random) -> None:
        keys = recency_trace(200_000, rng)
        fixed = TinyLFUCache[int, int](M, adaptive=False)
        adaptive = TinyLFUCache[int, int](M)
        fixed_hits, fixed_windows = replay(fixed, keys)
        hits, windows = replay(adaptive, keys)
        assert set(fixed_windows) == {round(M * 0.01)}
        assert windows[-1] >= M * 0.4, windows
        # ... and that is what the hit ratio needed: far closer to LRU's.
        assert hits > fixed_hits + 0.2 * len(keys), (hits, fixed_hits)
        assert hits > 0.8 * lru_hits(keys, M)

    def test_window_shrinks_back_on_a_frequency_biased_trace(self, rng: random.Random) -> None:
        c = TinyLFUCache[int, int](M)
        _, windows = replay(c, recency_trace(200_000, rng))
        grown = windows[-1]
        assert grown >= M * 0.4
        keys = loop_trace(200_000, rng)
        hits, windows = replay(c, keys)
        assert windows[-1] <= M * 0.1 < grown, windows
        assert hits > 4 * lru_hits(keys, M)  # LRU's worst case; the adapted cache holds on

    @pytest.mark.parametrize("seed", [1051, 2182180347])
    def test_climb_does_not_stall_on_a_shallow_slope(self, seed: int) -> None:
        # These seeds stalled the window at 27-29% of the cache on the loop
        # trace when a trial out of looks was always abandoned: the step
        # shrank to 0 while B kept leading by 1-2 standard errors.
        self.test_window_shrinks_back_on_a_frequency_biased_trace(random.Random(seed))

    def test_window_stays_small_where_frequency_wins(self, rng: random.Random) -> None:
        c = TinyLFUCache[int, int](M)
        _, windows = replay(c, loop_trace(200_000, rng))
        assert max(windows) <= M * 0.1, windows  # a probe or two, no more

    def test_beats_lru_on_a_scan_polluted_trace(self, rng: random.Random) -> None:
        keys = zipf_scan_trace(150_000, rng)
        c = TinyLFUCache[int, int](M)
        hits, _ = replay(c, keys)
        assert hits > lru_hits(keys, M) + 0.03 * len(keys)

    def test_deterministic_for_a_seed(self, rng: random.Random) -> None:
        keys = recency_trace(60_000, rng) + loop_trace(60_000, rng)
        runs = []
        for _ in range(2):
            c = TinyLFUCache[int, int](M, seed=7)
            hits, windows = replay(c, keys)
            runs.append((hits, windows, c.stats, sorted(c)))
        assert runs[0] == runs[1]
        assert len(set(runs[0][1])) > 1  # the split did move


class ResizeInvariantTests:
    @pytest.mark.parametrize("maxsize", [16, 17, 64, 300])
    def test_segments_stay_within_bounds_and_keep_values(
        self, maxsize: int, rng: random.Random
    ) -> None:
        c = TinyLFUCache[int, int](maxsize, sample_factor=2)
        model: dict[int, int] = {}
        keys = [k // 8 - rng.randrange(maxsize // 2) for k in range(30_000)]
        keys += [k % (2 * maxsize) for k in range(30_000)]
        seen_windows = set()
        for i, k in enumerate(keys):
            v = c.get(k)
            if v is None:
                c.set(k, i)
                model[k] = i
            else:
                assert v == model[k]
            if i % 97 == 0 and rng.random() < 0.2:
                c.pop(k, None)
            w = c.window_maxsize
            seen_windows.add(w)
            assert 1 <= w <= maxsize - 1
            assert len(c._window) <= w
            assert len(c._protected) <= c._protected_max
            assert len(c._probation) + len(c._protected) <= maxsize - w
            assert len(c) <= maxsize
        for k in c:
            assert model[k] == c.get(k)
        assert len(seen_windows) > 1

    def test_adaptive_off_small_caches_and_clear(self, rng: random.Random) -> None:
        keys = recency_trace(60_000, rng)
        off = TinyLFUCache[int, int](M, adaptive=False)
        _, windows = replay(off, keys)
        assert not off.adaptive and set(windows) == {5}
        small = TinyLFUCache[int, int](15)
        assert not small.adaptive
        on = TinyLFUCache[int, int](M)
        _, windows = replay(on, keys)
        assert on.adaptive and windows[-1] > 5
        on.clear()
        assert on.window_maxsize == 5 and len(on) == 0 and "window=5" in repr(on)
        with pytest.raises(TypeError):
            TinyLFUCache(10, adaptive=1)  # type: ignore[arg-type]

    def test_decorator_passes_adaptive(self) -> None:
        @tinylfu_cache(M, adaptive=False)
        def fixed(x: int) -> int:
            return x

        @tinylfu_cache(M)
        def adapting(x: int) -> int:
            return x

        assert not fixed.cache.adaptive and adapting.cache.adaptive
