"""Hit ratios of TinyLFUCache against LRU and LFU caches on synthetic traces.

Traces (numpy, fixed seed): Zipf(0.8) and Zipf(1.0) popularity over 10^6
keys (key ids shuffled so popularity is not ordered by id), and the same
traces polluted with one-hit scans: after every 20,000 requests, a scan of
10,000 fresh keys that are never requested again (a third of all requests).
Each cache serves the trace cache-aside (look up; on a miss, insert).  Hit
ratio = hits / all requests (scan requests included: they miss everywhere).

Policies: bloomkit.cache.TinyLFUCache (W-TinyLFU with the adaptive window,
the default), TinyLFUCache(adaptive=False) (the fixed 1% window),
functools.lru_cache, cachetools.LRUCache and cachetools.LFUCache.
benchmarks/cache_bounds.py prints what no cache can beat on these traces.

    python benchmarks/cache_traces.py [--length 1000000]

Writes cache_traces.md (table) and cache_traces.png to --out (default:
$BLOOMKIT_BENCH_OUT, else <temp dir>/bloomkit-bench; the committed
benchmarks/results/ copies are written only with --out benchmarks/results).
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from pathlib import Path

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine
import numpy as np

from bloomkit.cache import TinyLFUCache

NUM_KEYS = 1_000_000
SCAN_EVERY = 20_000
SCAN_LEN = 10_000
SEED = 20240601


def zipf_trace(s: float, length: int, rng: np.random.Generator) -> np.ndarray:
    ranks = np.arange(1, NUM_KEYS + 1, dtype=np.float64)
    cdf = np.cumsum(ranks**-s)
    cdf /= cdf[-1]
    idx = np.searchsorted(cdf, rng.random(length), side="right")
    perm = rng.permutation(NUM_KEYS)
    return perm[np.minimum(idx, NUM_KEYS - 1)].astype(np.int64)


def polluted(trace: np.ndarray) -> np.ndarray:
    parts = []
    fresh = NUM_KEYS  # scan keys never collide with trace keys nor repeat
    for start in range(0, len(trace), SCAN_EVERY):
        parts.append(trace[start : start + SCAN_EVERY])
        parts.append(np.arange(fresh, fresh + SCAN_LEN, dtype=np.int64))
        fresh += SCAN_LEN
    return np.concatenate(parts)


def run_tinylfu(adaptive: bool) -> Callable[[list[int], int], int]:
    def run(keys: list[int], size: int) -> int:
        c: TinyLFUCache[int, int] = TinyLFUCache(size, adaptive=adaptive)
        get, put = c.get, c.set
        for k in keys:
            if get(k) is None:
                put(k, 1)
        return c.stats.hits

    return run


def run_functools(keys: list[int], size: int) -> int:
    f = functools.lru_cache(maxsize=size)(lambda k: k)
    for k in keys:
        f(k)
    return f.cache_info().hits


def run_cachetools(cls: type) -> Callable[[list[int], int], int]:
    def run(keys: list[int], size: int) -> int:
        c = cls(maxsize=size)
        hits = 0
        for k in keys:
            try:
                c[k]
                hits += 1
            except KeyError:
                c[k] = 1
        return hits

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--length", type=int, default=1_000_000, help="requests per Zipf trace")
    ap.add_argument("--sizes", type=str, default="1000,10000,100000")
    ap.add_argument("--no-lfu", action="store_true", help="skip the (slow) cachetools LFU")
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default: $BLOOMKIT_BENCH_OUT, else "
                         "<temp dir>/bloomkit-bench; never the source tree unless named)")
    args = ap.parse_args()
    try:
        import cachetools
    except ModuleNotFoundError:
        raise SystemExit("benchmarks/cache_traces.py needs cachetools: "
                         "pip install '.[bench]' (or pip install cachetools)") from None
    sizes = [int(x) for x in args.sizes.split(",")]
    info = machine.announce()
    rng = np.random.default_rng(SEED)
    traces: dict[str, np.ndarray] = {}
    for s in (0.8, 1.0):
        t = zipf_trace(s, args.length, rng)
        traces[f"zipf{s}"] = t
        traces[f"zipf{s}+scans"] = polluted(t)
    policies: dict[str, Callable[[list[int], int], int]] = {
        "TinyLFUCache": run_tinylfu(True),
        "TinyLFUCache(adaptive=False)": run_tinylfu(False),
        "functools.lru_cache": run_functools,
        "cachetools.LRUCache": run_cachetools(cachetools.LRUCache),
    }
    if not args.no_lfu:
        policies["cachetools.LFUCache"] = run_cachetools(cachetools.LFUCache)
    results: dict[tuple[str, int, str], float] = {}
    for tname, trace in traces.items():
        keys = trace.tolist()
        for size in sizes:
            for pname, fn in policies.items():
                t0 = time.perf_counter()
                hits = fn(keys, size)
                dt = time.perf_counter() - t0
                results[(tname, size, pname)] = hits / len(keys)
                print(f"{tname:14s} size={size:>7d} {pname:28s} hit={hits / len(keys):.4f} "
                      f"({dt:.1f} s, {dt / len(keys) * 1e9:.0f} ns/request)", flush=True)
    lines = [
        *machine.banner(info).splitlines(),
        "",
        f"Trace length {args.length:,} Zipf requests over {NUM_KEYS:,} keys (+ scans: "
        f"{SCAN_LEN:,} one-hit keys after every {SCAN_EVERY:,} requests), seed {SEED}.",
        "",
        "| trace | size | " + " | ".join(policies) + " | TinyLFU - LRU (points) |",
        "|---|---:|" + "---:|" * len(policies) + "---:|",
    ]
    for tname in traces:
        for size in sizes:
            row = [f"{results[(tname, size, p)] * 100:.2f}%" for p in policies]
            gap = (results[(tname, size, "TinyLFUCache")]
                   - results[(tname, size, "functools.lru_cache")]) * 100
            lines.append(f"| {tname} | {size:,} | " + " | ".join(row) + f" | {gap:+.2f} |")
    table = "\n".join(lines)
    print(table)
    out_dir = args.out if args.out is not None else machine.results_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cache_traces.md").write_text(table + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart")
        return
    fig, axes = plt.subplots(1, len(traces), figsize=(4.2 * len(traces), 3.8), sharey=True)
    for ax, tname in zip(axes, traces, strict=False):
        for pname in policies:
            ax.plot(sizes, [results[(tname, s, pname)] * 100 for s in sizes], marker="o",
                    label=pname)
        ax.set_xscale("log")
        ax.set_title(tname)
        ax.set_xlabel("cache size (entries)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("hit ratio (%)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Hit ratio, {NUM_KEYS:,} keys, {args.length:,} Zipf requests per trace")
    fig.tight_layout()
    fig.savefig(out_dir / "cache_traces.png", dpi=110)
    print(f"wrote {out_dir / 'cache_traces.md'} and {out_dir / 'cache_traces.png'}")


if __name__ == "__main__":
    main()
