"""Counting and scalable Bloom filters against BloomFilter, side by side.

One process, the same keys, several repetitions, medians in ns per key.
Run:  PYTHONPATH=src python benchmarks/counting_scalable.py [n]

Targets (issue 5): counting add / contains per item within 1.3x of
BloomFilter's; scalable per-item add within 1.5x and contains within 2x of
BloomFilter's after 100x growth (initial_capacity = n / 100).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from bloomkit import BloomFilter, CountingBloomFilter, ScalableBloomFilter

REPS = 5


def _ns_per_key(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(times)


def _loops(make: Callable[[], object], keys: list[int], probes: list[int]) -> dict[str, float]:
    n = len(keys)
    res: dict[str, float] = {}
    filters: list[object] = []

    def add_loop() -> None:
        f = make()
        add = f.add  # type: ignore[attr-defined]
        for k in keys:
            add(k)
        filters.append(f)

    res["add loop"] = _ns_per_key(add_loop, n)
    f = filters[-1]

    def contains_present() -> None:
        for k in keys:
            k in f  # noqa: B015

    def contains_absent() -> None:
        for k in probes:
            k in f  # noqa: B015

    res["in (present)"] = _ns_per_key(contains_present, n)
    res["in (absent)"] = _ns_per_key(contains_absent, n)
    arr, parr = np.array(keys, dtype=np.int64), np.array(probes, dtype=np.int64)

    def add_many() -> None:
        make().add_many(arr)  # type: ignore[attr-defined]

    res["add_many (numpy)"] = _ns_per_key(add_many, n)
    res["contains_many (numpy)"] = _ns_per_key(lambda: f.contains_many(parr), n)  # type: ignore[attr-defined]
    res["contains_many (list)"] = _ns_per_key(lambda: f.contains_many(probes), n)  # type: ignore[attr-defined]
    return res


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    keys = list(range(n))
    probes = list(range(n, 2 * n))
    floor = set(keys[:1000])
    floor_ns = _ns_per_key(lambda: [k in floor for k in keys], n)
    p = 0.01
    rows = {
        "BloomFilter": _loops(lambda: BloomFilter(n, p), keys, probes),
        "CountingBloomFilter(4 bit)": _loops(lambda: CountingBloomFilter(n, p), keys, probes),
        "ScalableBloomFilter(n/100)": _loops(
            lambda: ScalableBloomFilter(n // 100, p), keys, probes),
        "ScalableBloomFilter(n/100, blocked)": _loops(
            lambda: ScalableBloomFilter(n // 100, p, layout="blocked"), keys, probes),
    }
    s = ScalableBloomFilter(n // 100, p)
    s.add_many(keys)
    print(f"n = {n:,}, p = {p}, median of {REPS}, ns per key; "
          f"interpreter floor (`k in small_set` loop): {floor_ns:.0f} ns")
    print(f"scalable chain after 100x growth: {s.num_links} links, "
          f"{s.num_bits / n:.2f} bits/key (BloomFilter: {BloomFilter(n, p).num_bits / n:.2f})")
    cols = list(rows["BloomFilter"])
    print(f"{'':38}" + "".join(f"{c:>24}" for c in cols))
    base = rows["BloomFilter"]
    for name, r in rows.items():
        cells = "".join(f"{r[c]:>14.1f} ({r[c] / base[c]:4.2f}x)" for c in cols)
        print(f"{name:38}{cells}")
    c, sc = rows["CountingBloomFilter(4 bit)"], rows["ScalableBloomFilter(n/100)"]
    checks = [
        ("counting add <= 1.3x", c["add loop"] / base["add loop"], 1.3),
        ("counting in <= 1.3x", c["in (absent)"] / base["in (absent)"], 1.3),
        ("scalable add <= 1.5x", sc["add loop"] / base["add loop"], 1.5),
        ("scalable in (present) <= 2x", sc["in (present)"] / base["in (present)"], 2.0),
        ("scalable in (absent) <= 2x", sc["in (absent)"] / base["in (absent)"], 2.0),
    ]
    for label, ratio, target in checks:
        print(f"  {label:30} {ratio:5.2f}x  {'met' if ratio <= target else 'MISSED'}")


if __name__ == "__main__":
    main()
