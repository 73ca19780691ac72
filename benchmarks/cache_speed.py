"""Per-request cost of bloomkit.cache.TinyLFUCache against cachetools and functools, one run.

Each policy serves the same trace cache-aside (look up; on a miss, insert), with the loops of
benchmarks/cache_traces.py: TinyLFUCache ``get`` / ``set``, cachetools ``c[k]`` with
``except KeyError`` on a miss (as cache_traces.py does), cachetools ``c.get(k)`` then
``c[k] = v`` (the idiom without an exception per miss), functools.lru_cache around an identity
function.  The trace is cache_traces.py's Zipf(1.0) over 10^6 keys (``--scans``: with its
one-hit scans), the first ``--length`` requests, into caches of ``--size`` entries.

Every repetition runs every policy back to back, the order rotating; a cell is the median over
the repetitions in microseconds per request (min-max in brackets), and a policy's ratio to
cachetools.LRUCache is the median of the ratios within each repetition, so that load that
changes from second to second cancels out.  Times are the thread's CPU time (``--clock wall``:
perf_counter), so time spent descheduled on a loaded machine is not counted; the machine block
printed first says how loaded it was.

    python benchmarks/cache_speed.py [--length 200000] [--size 10000]
        [--reps 7] [--scans] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import _checkout  # noqa: F401  (the in-place build, else the install)
import cache_traces as ct
import machine
import numpy as np


def run_cachetools_get(cls: type) -> Callable[[list[int], int], int]:
    def run(keys: list[int], size: int) -> int:
        c = cls(maxsize=size)
        get = c.get
        hits = 0
        for k in keys:
            if get(k) is None:
                c[k] = 1
            else:
                hits += 1
        return hits

    return run


def policies() -> dict[str, Callable[[list[int], int], int]]:
    import cachetools

    return {
        "bloomkit TinyLFUCache": ct.run_tinylfu(True),
        "bloomkit TinyLFUCache(adaptive=False)": ct.run_tinylfu(False),
        "cachetools.LRUCache (try/except)": ct.run_cachetools(cachetools.LRUCache),
        "cachetools.LRUCache (.get)": run_cachetools_get(cachetools.LRUCache),
        "cachetools.LFUCache (try/except)": ct.run_cachetools(cachetools.LFUCache),
        "functools.lru_cache": ct.run_functools,
    }


REFERENCE = "cachetools.LRUCache (try/except)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--length", type=lambda s: int(float(s)), default=200_000)
    ap.add_argument("--size", type=lambda s: int(float(s)), default=10_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--scans", action="store_true", help="the trace with one-hit scans")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    info = machine.announce()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    import cachetools

    trace = ct.zipf_trace(1.0, args.length, np.random.default_rng(ct.SEED))
    if args.scans:
        trace = ct.polluted(trace)[: args.length]
    keys = trace.tolist()
    pols = policies()
    names = list(pols)
    secs: dict[str, list[float]] = {name: [] for name in names}
    hits: dict[str, int] = {}
    for rep in range(args.reps):
        order = names[rep % len(names):] + names[: rep % len(names)]
        for name in order:
            t0 = clock()
            hits[name] = pols[name](keys, args.size)
            secs[name].append(clock() - t0)
    n = len(keys)
    us = {name: [s / n * 1e6 for s in v] for name, v in secs.items()}
    ratio = {name: statistics.median(a / b for a, b in zip(us[name], us[REFERENCE],
                                                           strict=True))
             for name in names}
    print(f"trace zipf1.0{'+scans' if args.scans else ''}, {n:,} requests, cache size "
          f"{args.size:,}, {args.reps} interleaved repetitions, {args.clock} time; "
          f"cachetools {cachetools.__version__}")
    print(f"{'policy':40} {'us/request (min-max)':>24} {'ratio':>7} {'hit ratio':>10}")
    for name in names:
        v = us[name]
        cell = f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
        print(f"{name:40} {cell:>24} {ratio[name]:6.2f}x {hits[name] / n:10.2%}")
    print(f"(ratio: median of same-repetition ratios to {REFERENCE}); load average at the "
          f"end: {machine.load_average()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "load_average_end": machine.load_average(),
                       "trace": "zipf1.0" + ("+scans" if args.scans else ""), "requests": n,
                       "size": args.size, "reps": args.reps, "clock": args.clock,
                       "cachetools": cachetools.__version__, "reference": REFERENCE,
                       "us_per_request": us, "ratio": ratio,
                       "hit_ratio": {k: h / n for k, h in hits.items()}}, fh, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
