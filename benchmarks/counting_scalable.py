"""Counting and scalable Bloom filters against BlockedBloomFilter, side by side.

One process, the same keys, interleaved repetitions: every repetition times
each operation on every structure back to back (the order rotating), and a
structure's ratio to the baseline (BlockedBloomFilter) is the median over
repetitions of the ratio measured within the same repetition, so that load on
a shared machine, which changes from second to second, cancels out.  Times
are the thread's CPU time (time.thread_time_ns), so that time spent
descheduled is not counted.  Cells show the median ns per key.
Run:  python benchmarks/counting_scalable.py [sizes] [reps] [--sample N] [--json PATH]
(sizes: comma-separated, default 1e6,1e7, all in one run; --smoke: 2e4, 1 rep.)
Every filter is sized for n and the queried ones hold all n keys; each timed operation runs
over a sample of min(n, --sample) keys (default 10^6): present keys are the first ones
added, absent keys are n.., and adds go into a fresh filter sized for n.  The cost of a
key depends on the state's size (where it lives in the caches), not on the loop's length,
so a 10^7-key filter is measured with 10^6 operations: ten times shorter runs on a loaded
machine.  The adds go into a copy (made untimed) of a filter holding the other n - sample
keys, so that a scalable chain takes them at the end of its 100x growth.
The output starts with the machine block (benchmarks/machine.py) and says where each
structure's state lives in this machine's caches: the ratios depend on it.
--json writes the cells, the ratios and the machine block.

Targets (issue 21, item 3), at every size, ratio to BlockedBloomFilter:
counting add loop and `in` <= 1.5x, counting batches (add_many and
contains_many, numpy and list) <= 1.5x; scalable after 100x growth
(initial_capacity = n / 100) add loop and `in` <= 2x, batches <= 2.5x.
They are checked on the blocked counting filter (the default layout) and on
both scalable layouts (classic is ScalableBloomFilter's default); the classic
counting layout, a BloomFilter and a blocked chain with growth 4 (fewer
links, so fewer lines per absent query) are printed beside them.
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

from bloomkit import BlockedBloomFilter, BloomFilter, CountingBloomFilter, ScalableBloomFilter

BASE = "BlockedBloomFilter"
COUNTING = "CountingBloomFilter(4 bit, blocked)"
SCALABLE = "ScalableBloomFilter(n/100, blocked)"
SCALABLE_CLASSIC = "ScalableBloomFilter(n/100, classic)"
SCALABLE_G4 = "ScalableBloomFilter(n/100, blocked, growth=4)"
# (row, column group, target): the column groups are below.
TARGETS = [
    (COUNTING, "per item", 1.5), (COUNTING, "batch", 1.5),
    (SCALABLE, "per item", 2.0), (SCALABLE, "batch", 2.5),
    (SCALABLE_CLASSIC, "per item", 2.0), (SCALABLE_CLASSIC, "batch", 2.5),
]
PER_ITEM = ("add loop", "in (present)", "in (absent)")


def _time(fn: Callable[[], object], n: int) -> float:
    # CPU time of this thread: on a shared machine, time spent descheduled
    # while other processes run would otherwise land in random cells.
    # An op that needs a fresh filter gets it from its setup, untimed.
    arg = fn.setup() if hasattr(fn, "setup") else None  # type: ignore[attr-defined]
    t0 = time.thread_time_ns()
    fn() if arg is None else fn(arg)  # type: ignore[call-arg]
    return (time.thread_time_ns() - t0) / n


def _with_setup(setup: Callable[[], Any], fn: Callable[[Any], object]) -> Callable[..., object]:
    fn.setup = setup  # type: ignore[attr-defined]
    return fn


def _ops(
    make: Callable[[], Any], fill: Any, keys: list[int], probes: list[int],
) -> dict[str, Callable[[], object]]:
    full = make()
    full.add_many(fill)
    arr, parr = np.array(keys, dtype=np.int64), np.array(probes, dtype=np.int64)
    # Adds go into a filter holding every key but the timed ones: a scalable
    # chain then takes them at the end of its 100x growth, as at n = sample.
    base = make()
    base.add_many(fill[len(keys):])

    def add_loop(f: Any) -> None:
        for k in keys:
            f.add(k)  # the form users write (not a bound method)

    def contains_present() -> None:
        for k in keys:
            k in full  # noqa: B015

    def contains_absent() -> None:
        for k in probes:
            k in full  # noqa: B015

    return {
        "add loop": _with_setup(base.copy, add_loop),
        "in (present)": contains_present,
        "in (absent)": contains_absent,
        "add_many (list)": _with_setup(base.copy, lambda f: f.add_many(keys)),
        "add_many (numpy)": _with_setup(base.copy, lambda f: f.add_many(arr)),
        "contains_many (list)": lambda: full.contains_many(probes),
        "contains_many (numpy)": lambda: full.contains_many(parr),
    }


def _makers(n: int, p: float) -> dict[str, Callable[[], Any]]:
    return {
        BASE: lambda: BlockedBloomFilter(n, p),
        "BloomFilter": lambda: BloomFilter(n, p),
        COUNTING: lambda: CountingBloomFilter(n, p, layout="blocked"),
        "CountingBloomFilter(4 bit, classic)": lambda: CountingBloomFilter(
            n, p, layout="classic"),
        SCALABLE: lambda: ScalableBloomFilter(n // 100, p, layout="blocked"),
        SCALABLE_CLASSIC: lambda: ScalableBloomFilter(n // 100, p, layout="classic"),
        SCALABLE_G4: lambda: ScalableBloomFilter(n // 100, p, layout="blocked", growth=4),
    }


def run_size(n: int, reps: int, sample: int, info: dict[str, Any]) -> dict[str, Any]:
    m = min(n, sample)
    fill = np.arange(n, dtype=np.int64)
    keys = list(range(m))
    probes = list(range(n, n + m))
    floor = set(keys[:1000])
    p = 0.01
    makers = _makers(n, p)
    ops = {name: _ops(make, fill, keys, probes) for name, make in makers.items()}
    cols = list(ops[BASE])
    names = list(makers)
    ns: dict[tuple[str, str], list[float]] = {(a, c): [] for a in names for c in cols}
    floor_ns: list[float] = []
    for rep in range(reps):
        floor_ns.append(_time(lambda: [k in floor for k in keys], m))
        for c in cols:
            order = names[rep % len(names):] + names[:rep % len(names)]
            for a in order:
                ns[a, c].append(_time(ops[a][c], m))

    def ratio(a: str, c: str) -> float:
        return statistics.median(x / b for x, b in zip(ns[a, c], ns[BASE, c], strict=True))

    print(f"\nn = {n:,} (operations timed on {m:,} keys), p = {p}, {reps} interleaved "
          f"repetitions, median ns per key "
          f"(ratio: median of same-repetition ratios to {BASE}); interpreter floor "
          f"(`k in small_set` loop): {statistics.median(floor_ns):.0f} ns")
    chains = {}
    for name in (SCALABLE, SCALABLE_CLASSIC, SCALABLE_G4):
        s = makers[name]()
        s.add_many(fill)
        ks = [link.num_hashes for link in s.links]
        chains[name] = {"links": s.num_links, "bits_per_key": s.num_bits / n, "k": ks}
        print(f"{name} after 100x growth: {s.num_links} links, {s.num_bits / n:.2f} "
              f"bits/key, k per link {ks}")
    width = max(len(a) for a in names) + 1
    print(f"{'':{width}}" + "".join(f"{c:>24}" for c in cols))
    for a in names:
        cells = "".join(
            f"{statistics.median(ns[a, c]):>14.1f} ({ratio(a, c):4.2f}x)" for c in cols)
        print(f"{a:{width}}{cells}")
    checks = []
    for row, group, target in TARGETS:
        for c in cols:
            if (c in PER_ITEM) != (group == "per item"):
                continue
            r = ratio(row, c)
            checks.append({"row": row, "op": c, "ratio": r, "target": target,
                           "met": r <= target})
            print(f"  {row:{width}} {c:24} {r:5.2f}x <= {target}x  "
                  f"{'met' if r <= target else 'MISSED'}")
    sizes = {}
    for name, make in makers.items():  # the filled states the queries probe
        full = make()
        full.add_many(fill)
        sizes[name] = full.nbytes
        del full
    print("state sizes on this machine: " + "; ".join(
        f"{name} {machine.human(b)}: {machine.fits(b, info)}" for name, b in sizes.items()))
    return {
        "n": n, "timed_keys": m, "reps": reps,
        "ns_per_key": {a: {c: statistics.median(ns[a, c]) for c in cols} for a in names},
        "ratio_to_blocked": {a: {c: ratio(a, c) for c in cols} for a in names},
        "checks": checks, "chains": chains, "state_bytes": sizes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="?", default="1e6,1e7",
                    help="comma-separated key counts (default 1e6,1e7)")
    ap.add_argument("reps", nargs="?", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--smoke", action="store_true", help="2e4 keys, 1 repetition")
    ap.add_argument("--sample", type=lambda v: int(float(v)), default=1_000_000,
                    help="keys per timed operation (default 1e6)")
    args = ap.parse_args()
    sizes = [20_000] if args.smoke else [int(float(v)) for v in args.sizes.split(",")]
    reps = 1 if args.smoke else args.reps
    info = machine.announce()
    results = [run_size(n, reps, args.sample, info) for n in sizes]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({
                "command": f"counting_scalable.py {args.sizes} {reps} --sample {args.sample}",
                "machine": info,
                "load_average_end": machine.load_average(), "results": results,
            }, fh, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
