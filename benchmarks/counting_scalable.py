"""Counting and scalable Bloom filters against BloomFilter, side by side.

One process, the same keys, interleaved repetitions: every repetition times
each operation on every structure back to back (the order rotating), and a
structure's ratio to BloomFilter is the median over repetitions of the
ratio measured within the same repetition, so that load on a shared
machine, which changes from second to second, cancels out.  Times are the
thread's CPU time (time.thread_time_ns), so that time spent descheduled is
not counted.  Cells show the median ns per key.
Run:  python benchmarks/counting_scalable.py [n] [reps] [--json PATH]
The output starts with the machine block (benchmarks/machine.py) and says where each
structure's state lives in this machine's caches: the ratios depend on it (a 4-bit counting
filter is 4x a BloomFilter's bytes, so at some n one fits L2 and the other does not).
--json writes the cells, the ratios and the machine block.

Targets (issue 5): counting add / contains per item within 1.3x of
BloomFilter's; scalable per-item add within 1.5x and contains within 2x of
BloomFilter's after 100x growth (initial_capacity = n / 100).  The row
"BloomFilter(k=..., newest link's rate)" is a reference, not a target: the
cost of setting the newest link's k bits alone, without checking the older
links.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine
import numpy as np

from bloomkit import BloomFilter, CountingBloomFilter, ScalableBloomFilter


def _time(fn: Callable[[], object], n: int) -> float:
    # CPU time of this thread: on a shared machine, time spent descheduled
    # while other processes run would otherwise land in random cells.
    t0 = time.thread_time_ns()
    fn()
    return (time.thread_time_ns() - t0) / n


def _ops(
    make: Callable[[], Any], keys: list[int], probes: list[int],
) -> dict[str, Callable[[], object]]:
    full = make()
    full.add_many(keys)
    arr, parr = np.array(keys, dtype=np.int64), np.array(probes, dtype=np.int64)

    def add_loop() -> None:
        add = make().add
        for k in keys:
            add(k)

    def contains_present() -> None:
        for k in keys:
            k in full  # noqa: B015

    def contains_absent() -> None:
        for k in probes:
            k in full  # noqa: B015

    return {
        "add loop": add_loop,
        "in (present)": contains_present,
        "in (absent)": contains_absent,
        "add_many (numpy)": lambda: make().add_many(arr),
        "contains_many (numpy)": lambda: full.contains_many(parr),
        "contains_many (list)": lambda: full.contains_many(probes),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=lambda v: int(float(v)), default=1_000_000)
    ap.add_argument("reps", nargs="?", type=int, default=7)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    n, reps = args.n, args.reps
    info = machine.announce()
    keys = list(range(n))
    probes = list(range(n, 2 * n))
    floor = set(keys[:1000])
    p = 0.01
    # The chain after 100x growth: its newest link's rate sets the last adds' k.
    grown = ScalableBloomFilter(n // 100, p)
    grown.add_many(keys)
    newest = grown.links[-1]
    makers: dict[str, Callable[[], Any]] = {
        "BloomFilter": lambda: BloomFilter(n, p),
        # Reference, not a target: a plain BloomFilter with the newest link's rate (its k),
        # i.e. what every add would cost if it only had to set the newest link's bits.
        f"BloomFilter(k={newest.num_hashes}, newest link's rate)": lambda: BloomFilter(
            n, newest.error_rate),
        "CountingBloomFilter(4 bit)": lambda: CountingBloomFilter(n, p),
        "ScalableBloomFilter(n/100)": lambda: ScalableBloomFilter(n // 100, p),
        "ScalableBloomFilter(n/100, blocked)": lambda: ScalableBloomFilter(
            n // 100, p, layout="blocked"),
    }
    ops = {name: _ops(make, keys, probes) for name, make in makers.items()}
    cols = list(ops["BloomFilter"])
    names = list(makers)
    ns: dict[tuple[str, str], list[float]] = {(a, c): [] for a in names for c in cols}
    floor_ns: list[float] = []
    for rep in range(reps):
        floor_ns.append(_time(lambda: [k in floor for k in keys], n))
        for c in cols:
            order = names[rep % len(names):] + names[:rep % len(names)]
            for a in order:
                ns[a, c].append(_time(ops[a][c], n))

    def ratio(a: str, c: str) -> float:
        return statistics.median(x / b for x, b in zip(ns[a, c], ns["BloomFilter", c], strict=True))

    s, ref = grown, BloomFilter(n, p)
    print(f"n = {n:,}, p = {p}, {reps} interleaved repetitions, median ns per key "
          f"(ratio: median of same-repetition ratios to BloomFilter); interpreter floor "
          f"(`k in small_set` loop): {statistics.median(floor_ns):.0f} ns")
    ks = [link.num_hashes for link in s.links]
    mean_k = sum(link.num_keys * link.num_hashes for link in s.links) / n
    print(f"scalable chain after 100x growth: {s.num_links} links, "
          f"{s.num_bits / n:.2f} bits/key (BloomFilter: {ref.num_bits / n:.2f}); "
          f"k per link {ks}, mean k over the keys {mean_k:.1f} (BloomFilter: {ref.num_hashes})")
    print(f"{'':42}" + "".join(f"{c:>24}" for c in cols))
    for a in names:
        cells = "".join(
            f"{statistics.median(ns[a, c]):>14.1f} ({ratio(a, c):4.2f}x)" for c in cols)
        print(f"{a:42}{cells}")
    c, sc = "CountingBloomFilter(4 bit)", "ScalableBloomFilter(n/100)"
    checks = [
        ("counting add <= 1.3x", ratio(c, "add loop"), 1.3),
        ("counting in (present) <= 1.3x", ratio(c, "in (present)"), 1.3),
        ("counting in (absent) <= 1.3x", ratio(c, "in (absent)"), 1.3),
        ("scalable add <= 1.5x", ratio(sc, "add loop"), 1.5),
        ("scalable in (present) <= 2x", ratio(sc, "in (present)"), 2.0),
        ("scalable in (absent) <= 2x", ratio(sc, "in (absent)"), 2.0),
    ]
    for label, r, target in checks:
        print(f"  {label:32} {r:5.2f}x  {'met' if r <= target else 'MISSED'}")
    sizes = {}
    for name, make in makers.items():  # the filled states the queries probe
        full = make()
        full.add_many(keys)
        sizes[name] = full.nbytes
        del full
    print("state sizes on this machine: " + "; ".join(
        f"{name} {machine.human(b)}: {machine.fits(b, info)}" for name, b in sizes.items()))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({
                "command": f"counting_scalable.py {n} {reps}", "n": n, "reps": reps,
                "machine": info, "load_average_end": machine.load_average(),
                "ns_per_key": {a: {c: statistics.median(ns[a, c]) for c in cols}
                               for a in names},
                "ratio_to_bloomfilter": {a: {c: ratio(a, c) for c in cols} for a in names},
                "state_bytes": sizes,
            }, fh, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
