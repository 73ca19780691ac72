"""TopK against bounter and collections.Counter on a Zipf stream (issue #21.2), one run.

    PYTHONPATH=src python benchmarks/topk.py                  # 10^6 events, 5 rounds
    PYTHONPATH=src python benchmarks/topk.py --events 1e6 --universe 1e6 --rounds 7
    PYTHONPATH=src python benchmarks/topk.py --clock cpu      # thread CPU time (loaded machine)
    PYTHONPATH=src python benchmarks/topk.py --smoke          # 20,000 events, 1 round (CI)

The stream: ``--events`` draws from a Zipf(1.0) law over ``--universe`` keys (rank r has
probability proportional to 1/r), seed 2026, as ints, as str (bounter counts strings only)
and as a numpy int64 array.  Each round times every case once, in the same order, so that all
see the same load; the ratios are taken within a round and the median over rounds is
reported (with each case's best and median ns per event).  Cases:

  per event   ``top.add(k)`` for k in the list (TopK(100), default epsilon/delta), ints and
              str; ``b.increment(k)`` (bounter, str); ``c[k] += 1`` (Counter, ints)
  batch       ``TopK.update`` of the list and of the numpy array, ``Counter().update`` of the
              list and of the array, ``bounter.update`` of the str list

Then the top-100 recall of TopK and bounter against the exact counts (a key counts as found
when its true count is at least the 100th largest, so ties at the edge do not count against
it) and the memory each holds.  Targets (#21.2): ``top.add`` at most bounter's
``increment``; ``TopK.update`` (list and numpy) at least 5x faster than ``Counter.update``
of the same events.  Timing on a shared machine is only a rough indication: read the ratios.
Runs with the TopK of any bloomkit (``PYTHONPATH=/path/to/old/src`` for the before figures).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import machine
import numpy as np

import bloomkit
from bloomkit import TopK

HERE = Path(__file__).resolve().parent
K = 100
BOUNTER_MB = 64  # HashTable of bounter: holds every distinct key of 10^6 events

try:
    from bounter import bounter as _bounter
except ImportError:  # pip install bounter (the [bench] extra)
    _bounter = None


def zipf_stream(events: int, universe: int, seed: int) -> np.ndarray:
    """``events`` ranks in [0, universe) with P(r) proportional to 1/(r+1)."""
    w = 1.0 / np.arange(1, universe + 1, dtype=np.float64)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    u = np.random.default_rng(seed).random(events)
    return np.minimum(np.searchsorted(cdf, u, side="right"), universe - 1).astype(np.int64)


def cases(arr: np.ndarray, ints: list[int], strs: list[str]) -> dict[str, Callable[[], Any]]:
    def topk_add_int() -> TopK:
        top = TopK(K)
        for k in ints:
            top.add(k)
        return top

    def topk_add_str() -> TopK:
        top = TopK(K)
        for k in strs:
            top.add(k)
        return top

    def counter_loop() -> Counter[int]:
        c: Counter[int] = Counter()
        for k in ints:
            c[k] += 1
        return c

    def counter_update(keys: Any) -> Callable[[], Counter[Any]]:
        def run() -> Counter[Any]:
            c: Counter[Any] = Counter()
            c.update(keys)
            return c
        return run

    def topk_update(keys: Any) -> Callable[[], TopK]:
        def run() -> TopK:
            top = TopK(K)
            top.update(keys)
            return top
        return run

    out: dict[str, Callable[[], Any]] = {
        "TopK.add loop (int)": topk_add_int,
        "TopK.add loop (str)": topk_add_str,
        "Counter c[k] += 1 loop (int)": counter_loop,
        "TopK.update(list of int)": topk_update(ints),
        "TopK.update(numpy int64)": topk_update(arr),
        "Counter.update(list of int)": counter_update(ints),
        "Counter.update(numpy int64)": counter_update(arr),
    }
    if _bounter is not None:
        bounter = _bounter

        def bounter_loop() -> Any:
            b = bounter(size_mb=BOUNTER_MB)
            for k in strs:
                b.increment(k)
            return b

        def bounter_update() -> Any:
            b = bounter(size_mb=BOUNTER_MB)
            b.update(strs)
            return b

        out["bounter.increment loop (str)"] = bounter_loop
        out["bounter.update(list of str)"] = bounter_update
    return out


RATIOS = [  # (numerator, denominator, target, what the target says)
    ("TopK.add loop (str)", "bounter.increment loop (str)", "<= 1", "per event vs bounter"),
    ("TopK.add loop (int)", "bounter.increment loop (str)", "<= 1", "per event vs bounter"),
    ("TopK.add loop (int)", "Counter c[k] += 1 loop (int)", "", "per event vs Counter"),
    ("Counter.update(list of int)", "TopK.update(list of int)", ">= 5", "batch speed-up"),
    ("Counter.update(list of int)", "TopK.update(numpy int64)", ">= 5", "batch speed-up"),
    ("Counter.update(numpy int64)", "TopK.update(numpy int64)", "", "batch speed-up"),
    ("bounter.update(list of str)", "TopK.update(list of int)", "", "batch speed-up"),
]


CLOCK: Callable[[], float] = time.perf_counter


def timing(arr: np.ndarray, rounds: int) -> dict[str, Any]:
    ints = arr.tolist()
    strs = [str(k) for k in ints]
    todo = cases(arr, ints, strs)
    times: dict[str, list[float]] = {name: [] for name in todo}
    for _ in range(rounds):
        for name, fn in todo.items():
            t = CLOCK()
            fn()
            times[name].append(CLOCK() - t)
    n = len(arr)
    per_event = {name: {"best_ns": min(ts) / n * 1e9, "median_ns": statistics.median(ts) / n * 1e9}
                 for name, ts in times.items()}
    ratios = []
    for a, b, target, what in RATIOS:
        if a in times and b in times:
            r = [x / y for x, y in zip(times[a], times[b], strict=True)]
            ratios.append({"a": a, "b": b, "target": target, "what": what,
                           "median": statistics.median(r), "min": min(r), "max": max(r)})
    return {"per_event": per_event, "ratios": ratios}


def recall(arr: np.ndarray) -> dict[str, Any]:
    ints = arr.tolist()
    truth = Counter(ints)
    edge = truth.most_common(K)[-1][1]
    top = TopK(K)
    top.update(ints)
    found = [int(k) for k, _ in top.heavy_hitters()]
    res: dict[str, Any] = {
        "edge_count": edge,
        "TopK": sum(truth[k] >= edge for k in found) / K,
        "TopK_bytes": top.__sizeof__() + top.sketch.nbytes,
        "Counter_keys": len(truth),
    }
    if _bounter is not None:
        b = _bounter(size_mb=BOUNTER_MB)
        b.update(str(k) for k in ints)
        got = [int(k) for k, _ in sorted(b.items(), key=lambda kv: -kv[1])[:K]]
        res["bounter"] = sum(truth[k] >= edge for k in got) / K
        res["bounter_bytes"] = BOUNTER_MB << 20
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=lambda s: int(float(s)), default=10**6)
    ap.add_argument("--universe", type=lambda s: int(float(s)), default=10**6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default: $BLOOMKIT_BENCH_OUT, else "
                         "<temp dir>/bloomkit-bench; never the source tree unless named)")
    ap.add_argument("--smoke", action="store_true", help="20,000 events, 1 round (CI)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: perf_counter; cpu: the thread's CPU time (a loaded machine)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    info = machine.announce()
    if args.out is None:
        args.out = machine.results_dir()
    if args.smoke:
        args.events, args.universe, args.rounds = 20_000, 10_000, 1
    where = os.path.dirname(bloomkit.__file__)
    print(f"Zipf(1.0) over {args.universe:,} keys, {args.events:,} events, seed {args.seed}, "
          f"{args.rounds} interleaved rounds, {args.clock} clock; bloomkit from {where}"
          + ("" if _bounter is not None
             else f"; bounter not installed ({machine.PEERS_HINT})"))
    arr = zipf_stream(args.events, args.universe, args.seed)
    res: dict[str, Any] = {"events": args.events, "universe": args.universe,
                           "rounds": args.rounds, "seed": args.seed, "k": K, "clock": args.clock}
    res.update(timing(arr, args.rounds))
    res["recall"] = recall(arr)
    for name, v in res["per_event"].items():
        print(f"  {name:32} best {v['best_ns']:8.1f} ns/event, median {v['median_ns']:8.1f}")
    for r in res["ratios"]:
        tgt = f" (target {r['target']})" if r["target"] else ""
        print(f"  {r['what']}: {r['a']} / {r['b']} = {r['median']:.2f} "
              f"(rounds {r['min']:.2f}-{r['max']:.2f}){tgt}")
    rc = res["recall"]
    line = f"  top-{K} recall (ties at the edge count {rc['edge_count']}): TopK {rc['TopK']:.2f}"
    if "bounter" in rc:
        line += f", bounter {rc['bounter']:.2f}"
    print(line)
    print(f"  memory: TopK {rc['TopK_bytes'] / 1e6:.2f} MB (sketch + candidates), "
          + (f"bounter {BOUNTER_MB} MB table, " if "bounter" in rc else "")
          + f"Counter {rc['Counter_keys']:,} keys")
    res["machine"] = info
    res["load_average_end"] = machine.load_average()
    res["command"] = " ".join([os.path.basename(sys.executable), *sys.argv])
    args.out.mkdir(parents=True, exist_ok=True)
    name = "topk-smoke" if args.smoke else "topk"
    (args.out / f"{name}.json").write_text(json.dumps(res, indent=1))
    print(f"wrote {args.out / (name + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
