"""Every estimate of every kind stays in its range (issue #31 item 5), from
0 keys up through capacity to overfull: rates and ratios (``estimate_error_rate``,
``fill_ratio``, ``load_factor``) within [0, 1], counts (``len``,
``estimate_count``, per-key ``count``/``estimate``) >= 0 and never NaN.
``estimate_count`` of a Bloom filter whose every bit is set is ``inf`` by its
documented definition (the maximum-likelihood count has no finite value
there): >= 0, as a count must be."""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import bloomkit
import kind_list

RATES = ("estimate_error_rate", "fill_ratio", "load_factor")
COUNTS = ("estimate_count",)


def _maker(cls: Any, **kw: Any) -> Callable[[int], Any]:
    return lambda cap: cls(cap, 0.01, **kw)


# Every kind built from (capacity, error_rate), filled one key at a time past
# capacity; the sliding window (fed in batches: test_sliding_estimates_in_range)
# and the kinds sized otherwise (test_fuse_sketch_topk_tinylfu_estimates_in_range)
# have their own tests below.
MAKERS: dict[str, Callable[[int], Any]] = {
    cls.__name__: _maker(cls) for cls in kind_list.classes(
        lambda k: k.capacity_param is not None and k.error_rate_param is not None
        and not k.window)
}
# layouts whose estimates are computed differently
MAKERS["CountingBloomFilter-classic"] = _maker(bloomkit.CountingBloomFilter, layout="classic")
MAKERS["CuckooFilter-b1"] = _maker(bloomkit.CuckooFilter, bucket_size=1)


def _values(f: Any) -> dict[str, float]:
    out: dict[str, float] = {"len": float(len(f))}
    for name in (*RATES, *COUNTS):
        v = getattr(f, name, None)
        if v is None:
            continue
        out[name] = float(v() if callable(v) else v)
    return out


def _check(f: Any, where: str) -> None:
    for name, v in _values(f).items():
        assert not math.isnan(v), (where, name, v)
        assert v >= 0 and math.copysign(1.0, v) > 0, (where, name, v)  # no -0.0 either
        if name in RATES:
            assert v <= 1, (where, name, v)


def _fill(f: Any, keys: list[str]) -> None:
    """Add one key at a time until the structure refuses (CapacityError)."""
    for k in keys:
        try:
            f.add(k)
        except bloomkit.CapacityError:
            return


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("capacity", [1, 10, 1000])
def test_estimates_in_range_from_empty_to_overfull(kind: str, capacity: int,
                                                     rng: random.Random) -> None:
    f = MAKERS[kind](capacity)
    salt = rng.getrandbits(32)
    keys = [f"{salt}-{i}" for i in range(capacity * 40 + 64)]
    _check(f, f"{kind} empty")
    done = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overfull warnings: the point here
        for n in sorted({1, 2, 5, capacity // 2, capacity, 2 * capacity, 5 * capacity,
                         len(keys)}):
            _fill(f, keys[done:n])
            done = n
            _check(f, f"{kind} capacity {capacity} after {n} offered keys")
            if hasattr(f, "remove") and n == capacity:
                g = f.copy()
                for k in keys[:n]:
                    if k in g:
                        try:
                            g.remove(k)
                        except (KeyError, ValueError):
                            pass
                _check(g, f"{kind} after removing")


def test_sliding_estimates_in_range() -> None:
    f = bloomkit.SlidingBloomFilter(100, 0.01)
    _check(f, "sliding empty")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(0, 5000, 7):
            f.add_many([f"s{j}" for j in range(i, i + 7)])
            _check(f, f"sliding after {i + 7}")


def test_fuse_sketch_topk_tinylfu_estimates_in_range() -> None:
    for n in (0, 1, 2, 10, 1000):
        keys = [f"k{i}" for i in range(n)]
        _check(bloomkit.BinaryFuseFilter(keys), f"fuse {n}")
        cms = bloomkit.CountMinSketch.from_error(0.01, 0.01)
        cms.add_many(keys)
        assert all(v >= 0 for v in cms.estimate_many([*keys, "absent"])), n
        assert cms.estimate("absent") >= 0
        top = bloomkit.TopK(5)
        top.update(keys)
        assert all(c >= 0 for _, c in top.heavy_hitters()), n
        t = bloomkit.TinyLFU(10)
        for k in keys:
            t.record(k)
        assert all(t.estimate(k) >= 0 for k in [*keys[:20], "absent"])
