"""Sizing a time window the way people think (issue #31 item 4): the keys a
window holds and a burst factor or a peak rate give the capacity
(sliding.window_capacity, SlidingBloomFilter.for_window); `info` names the
mode, the window and the generations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from bloomkit import SlidingBloomFilter, SlidingWindowWarning
from bloomkit.sliding import DEFAULT_BURST, sliding_design, window_capacity

SRC = str(Path(bloomkit.__file__).resolve().parents[1])


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _feed(f: Any, clock: Clock, rates: list[float], seconds: float, rng: Any) -> list[str]:
    """Add keys at the given rates (keys/s, one rate per equal part of
    `seconds`), one second at a time; the keys of each second in one batch."""
    keys: list[str] = []
    part = seconds / len(rates)
    t0, n = clock.t, 0
    for rate in rates:
        for _ in range(int(part)):
            batch = [f"e{n + i}-{rng.randrange(2**32)}" for i in range(int(rate))]
            n += len(batch)
            f.add_many(batch)
            keys.extend(batch)
            clock.t += 1.0
    assert clock.t - t0 <= seconds
    return keys


class WindowCapacityTests:
    def test_the_reported_case_shifts_no_generation_early(self, rng: Any) -> None:
        """160k keys in an hour, the busiest minutes at 4x the average: a
        capacity of 160k (what a user writes) shifts early and forgets
        keys inside the hour; for_window(..., burst=4) does not."""
        clock = Clock(1e9)
        # ten minutes at 3.8x the hour's average (one batch a second), then calm: 156k keys
        rates = [170.0] + [18.0] * 5
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SlidingWindowWarning)
            naive = SlidingBloomFilter(160_000, 0.01, window=3600, clock=clock)
            keys = _feed(naive, clock, rates, 3600, rng)
        assert naive.stats()["early_shifts"] > 0
        assert not all(naive.contains_many(keys))  # the naive size lost keys of the hour

        clock = Clock(1e9)
        f = SlidingBloomFilter.for_window(3600, 160_000, 0.01, burst=4, clock=clock)
        assert f.mode == "time" and f.window == 3600
        with warnings.catch_warnings():
            warnings.simplefilter("error", SlidingWindowWarning)
            keys = _feed(f, clock, rates, 3600, rng)
        assert f.stats()["early_shifts"] == 0
        assert all(f.contains_many(keys))  # every key of the hour

    def test_peak_rate_bounds_every_generation(self) -> None:
        cap = window_capacity(3600, 160_000, peak_rate=500.0)
        gens = sliding_design(1, 0.01).generations
        D = -(-3_600_000_000 // gens) / 1e6
        assert cap // gens >= 500.0 * D  # G covers the busiest generation
        assert cap >= 160_000

    def test_burst_default_and_uniform(self) -> None:
        assert window_capacity(3600, 160_000) == window_capacity(3600, 160_000,
                                                                 burst=DEFAULT_BURST)
        # a uniform stream (burst 1) needs about the window's keys
        assert 160_000 <= window_capacity(3600, 160_000, burst=1) <= 160_000 * 1.01
        assert window_capacity(3600, 160_000, burst=8) >= 8 * 160_000

    @pytest.mark.parametrize(("kwargs", "exc", "match"), [
        ({"burst": 0.5}, ValueError, "burst"),
        ({"burst": float("nan")}, ValueError, "burst"),
        ({"peak_rate": -1}, ValueError, "peak_rate"),
        ({"peak_rate": "9"}, TypeError, "peak_rate"),
        ({"burst": 2, "peak_rate": 9}, TypeError, "not both"),
        ({"peak_rate": 1e30}, ValueError, "2\\*\\*48"),
    ])
    def test_bad_arguments_say_why(self, kwargs: dict[str, Any], exc: type, match: str) -> None:
        with pytest.raises(exc, match=match):
            window_capacity(3600, 1000, **kwargs)

    def test_bad_window_and_keys(self) -> None:
        with pytest.raises(ValueError, match="window"):
            window_capacity(0, 1000)
        with pytest.raises(TypeError, match="keys_per_window"):
            window_capacity(60, 10.5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="keys_per_window"):
            window_capacity(60, 0)


def test_info_names_mode_window_and_generations(tmp_path: Path) -> None:
    path = tmp_path / "w.bkf"
    f = SlidingBloomFilter.for_window(3600, 1000, burst=3)
    f.add("x")
    f.save(path)
    out = subprocess.run([sys.executable, "-m", "bloomkit", "info", "--json", str(path)],
                         env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["mode"] == "time" and info["window"] == 3600
    assert info["generations"] == f.generations and info["generation"] == f.generation
    count = SlidingBloomFilter(1000)
    assert count.mode == "count" and count.window is None
