"""Keep one-hit wonders out of a CDN cache: admit on the second request, or by TinyLFU.

Replays a request trace (Zipf popularity plus a stream of objects requested
once) against an LRU cache of fixed size under three admission policies:

- always: every miss is written into the cache (plain LRU);
- second hit: a Bloom-filter doorkeeper remembers what was requested once;
  a miss is cached only if the doorkeeper has seen it before (the filter is
  swapped for a fresh one every ``--window`` requests, so it stays small);
- TinyLFU: ``bloomkit.cache.TinyLFUCache`` (W-TinyLFU admission); its writes
  are admissions into the main segment (the 1% window is a RAM-only LRU).

Reports hit ratio and cache writes (each write is a disk or SSD write in a
real CDN) for each policy.

    python examples/cdn_admission.py --requests 1000000 --cache 10000
"""

from __future__ import annotations

import argparse
import random
from collections import OrderedDict
from typing import Any

import bloomkit
from bloomkit.cache import TinyLFUCache


def make_trace(n: int, objects: int, one_hit_share: float, seed: int) -> list[str]:
    rnd = random.Random(seed)
    # Zipf(0.9)-like popularity by inverse-CDF on a precomputed table
    weights = [1.0 / (i + 1) ** 0.9 for i in range(objects)]
    popular = rnd.choices(range(objects), weights=weights, k=n)
    trace = []
    fresh = 0
    for obj in popular:
        if rnd.random() < one_hit_share:
            fresh += 1
            trace.append(f"/once/{fresh}")
        else:
            trace.append(f"/obj/{obj}")
    return trace


class LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[str, bool] = OrderedDict()
        self.writes = 0

    def get(self, key: str) -> bool:
        if key in self.data:
            self.data.move_to_end(key)
            return True
        return False

    def put(self, key: str) -> None:
        self.writes += 1
        self.data[key] = True
        if len(self.data) > self.size:
            self.data.popitem(last=False)


def run_always(trace: list[str], size: int) -> tuple[int, int]:
    cache, hits = LRU(size), 0
    for key in trace:
        if cache.get(key):
            hits += 1
        else:
            cache.put(key)
    return hits, cache.writes


def run_second_hit(trace: list[str], size: int, window: int) -> tuple[int, int]:
    cache, hits = LRU(size), 0
    seen = bloomkit.BlockedBloomFilter(window, 0.01)
    for i, key in enumerate(trace):
        if i and i % window == 0:
            seen = bloomkit.BlockedBloomFilter(window, 0.01)  # forget old one-timers
        if cache.get(key):
            hits += 1
        elif not seen.add(key):  # requested before: admit now
            cache.put(key)
    return hits, cache.writes


def run_tinylfu(trace: list[str], size: int) -> tuple[int, int]:
    cache: TinyLFUCache[str, bool] = TinyLFUCache(size)
    hits = 0
    for key in trace:
        if cache.get(key) is not None:
            hits += 1
        else:
            cache.set(key, True)
    # Writes to the cache store = admissions into the main segment; the
    # window (1% of the size) is a small LRU a CDN keeps in RAM.
    return hits, cache.stats.admissions


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--objects", type=int, default=200_000)
    ap.add_argument("--one-hit", type=float, default=0.3, help="share of one-hit requests")
    ap.add_argument("--cache", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    trace = make_trace(args.requests, args.objects, args.one_hit, args.seed)
    results = {
        "always": run_always(trace, args.cache),
        "second_hit": run_second_hit(trace, args.cache, args.window),
        "tinylfu": run_tinylfu(trace, args.cache),
    }
    report: dict[str, Any] = {"requests": args.requests, "cache": args.cache}
    print(
        f"{args.requests:,} requests ({args.one_hit:.0%} one-hit wonders), "
        f"cache of {args.cache:,} objects"
    )
    print(f"{'policy':<12} {'hit ratio':>9} {'cache writes':>13} {'writes saved':>13}")
    base_writes = results["always"][1]
    for name, (hits, writes) in results.items():
        report[name] = {"hit_ratio": hits / args.requests, "writes": writes}
        print(
            f"{name:<12} {hits / args.requests:>9.2%} {writes:>13,} "
            f"{1 - writes / base_writes:>12.1%}"
        )
    return report


if __name__ == "__main__":
    main()
