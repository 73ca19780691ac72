"""SlidingBloomFilter at its edges: the generation counter at its bound
(issue #34 item 11: a crafted counter near 2**64 used to load and, after
the wrap, lose keys of the window) and estimates that stay in [0, 1]
(issue #31 item 5: -8.88e-16 with 2 keys)."""

from __future__ import annotations

import struct
import warnings
from typing import Any

import pytest

import bloomkit
from bloomkit import FormatError, SlidingBloomFilter, SlidingWindowWarning
from hostile_helpers import reseal

P = 64  # params offset (bk_sliding.h)
OFF_GEN, OFF_RING = 40, 48
MAX_GENERATION = 2**62


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _with_generation(f: Any, g: int) -> bytes:
    """f's state with its counter set to g (and the ring to g mod S)."""
    buf = bytearray(f.to_bytes())
    struct.pack_into("<QQ", buf, P + OFF_GEN, g, 0)  # clears the ring word (+48, +52)...
    struct.pack_into("<II", buf, P + OFF_RING, g % f.num_slices,
                     1 if f.window_us else 0)  # ...and puts back ring and mode
    return reseal(buf)


class GenerationBoundTests:
    @pytest.mark.parametrize("g", [2**62 + 1, 2**63, 2**64 - 3, 2**64 - 1])
    def test_counter_past_the_bound_is_refused(self, g: int) -> None:
        f = SlidingBloomFilter(1000, 0.01)
        with pytest.raises(FormatError, match="generation counter"):
            bloomkit.loads(_with_generation(f, g))

    @pytest.mark.parametrize("start", [MAX_GENERATION - 3, MAX_GENERATION])
    def test_count_mode_keeps_the_window_across_the_bound(self, start: int) -> None:
        f = SlidingBloomFilter(1000, 0.01, seed=5)
        g = bloomkit.loads(_with_generation(f, start))
        assert g.generation == start
        keys = [f"w{i}" for i in range(5000)]
        for i, key in enumerate(keys):
            g.add(key)
            # every key of the last `capacity` adds is present, every time
            if i % 97 == 0:
                window = keys[max(0, i - 999):i + 1]
                assert all(g.contains_many(window)), (i, g.generation)
        assert all(g.contains_many(keys[-1000:]))
        assert g.generation <= MAX_GENERATION
        assert g.generation % g.num_slices == g._raw_stats()["generation"] % g.num_slices
        # the saturated state is a valid file that answers the same
        h = bloomkit.loads(g.to_bytes())
        assert h == g and all(h.contains_many(keys[-1000:]))

    def test_time_mode_jump_across_the_bound(self) -> None:
        clock = Clock(1e9)
        f = SlidingBloomFilter(1000, 0.01, window=60, clock=clock)
        g = bloomkit.loads(_with_generation(f, MAX_GENERATION - 2))
        g.clock = clock
        D = -(-60_000_000 // g.generations) / 1e6
        g.add("old")
        clock.t += 3 * D  # three shifts: past the bound, inside the window
        g.add("new")
        assert "old" in g and "new" in g
        assert g.generation <= MAX_GENERATION
        clock.t += 10**9  # a huge jump: everything expires, the counter stays bounded
        assert "new" not in g
        g.add("newer")
        assert "newer" in g and "new" not in g
        assert g.generation <= MAX_GENERATION
        assert bloomkit.loads(g.to_bytes()) == g


class EstimateRangeTests:
    @pytest.mark.parametrize("window", [None, 3600])
    @pytest.mark.parametrize("rate", [0.01, 0.001])
    def test_estimate_stays_in_the_unit_interval(self, window: Any, rate: float) -> None:
        clock = Clock(1e9)
        f = SlidingBloomFilter(100_000, rate, window=window, clock=clock)
        assert f.estimate_error_rate() == 0.0
        n = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SlidingWindowWarning)
            for step in (1, 1, 2, 4, 10, 100, 1000, 10_000, 100_000, 400_000):
                f.add_many(range(n, n + step))
                n += step
                e = f.estimate_error_rate()
                assert 0.0 <= e <= 1.0, (n, e)
                assert 0.0 <= f.stats()["estimated_error_rate"] <= 1.0

    def test_two_keys_in_an_hour_window(self) -> None:
        """The report's case: 2 keys gave -8.88e-16."""
        f = SlidingBloomFilter(100_000, 0.01, window=3600)
        f.add_many(["a", "b"])
        assert 0.0 <= f.estimate_error_rate() < 1e-6
