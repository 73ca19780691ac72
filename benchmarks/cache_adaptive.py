"""What the adaptive window buys: TinyLFUCache with and without it against LRU
on traces that favour recency, frequency, or change from one to the other.

- recency: a sliding working set of maxsize/2 keys moving by one key every 4
  requests (each key is asked ~4 times within 2*maxsize requests, then never);
- loop: a loop over 1.5*maxsize keys (LRU's worst case), 10% Pareto noise;
- recency->loop: the two, one after the other (the window must grow, then
  shrink back);
- zipf+scans: Zipf(1.0) over 50,000 keys, 1,000 one-hit keys after every
  2,000 requests.

The same generators as tests/test_cache_adaptive.py, seeded.

    python benchmarks/cache_adaptive.py [--maxsize 500] [--length 200000]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
import sys
from pathlib import Path

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine

from bloomkit.cache import TinyLFUCache

sys.path.insert(0, str(Path(__file__).parent))
from cache_bounds import lru  # the one reference LRU of the cache benchmarks


def recency(n: int, m: int, rng: random.Random) -> list[int]:
    return [t // 4 - rng.randrange(m // 2) for t in range(n)]


def loop(n: int, m: int, rng: random.Random) -> list[int]:
    size = m * 3 // 2
    start = 10**7
    return [
        start + t % size if rng.random() < 0.9 else start - 1 - int(rng.paretovariate(1.0))
        for t in range(n)
    ]


def zipf_scans(n: int, m: int, rng: random.Random) -> list[int]:
    cdf = list(itertools.accumulate((i + 1) ** -1.0 for i in range(50_000)))
    out: list[int] = []
    fresh = 10**9
    while len(out) < n:
        out.extend(bisect.bisect(cdf, rng.random() * cdf[-1]) for _ in range(2000))
        out.extend(range(fresh, fresh + 1000))
        fresh += 1000
    return out[:n]


def tinylfu(keys: list[int], m: int, adaptive: bool) -> tuple[int, int]:
    c: TinyLFUCache[int, int] = TinyLFUCache(m, adaptive=adaptive)
    for k in keys:
        if c.get(k) is None:
            c.set(k, k)
    return c.stats.hits, c.window_maxsize


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--maxsize", type=int, default=500)
    ap.add_argument("--length", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    machine.announce()
    m, n = args.maxsize, args.length
    rng = random.Random(args.seed)
    traces = {
        "recency": recency(n, m, rng),
        "loop": loop(n, m, rng),
        "recency->loop": recency(n, m, rng) + loop(n, m, rng),
        "zipf+scans": zipf_scans(n, m, rng),
    }
    print(f"maxsize {m}, {n:,} requests per trace part, seed {args.seed}")
    print()
    print("| trace | LRU | TinyLFU fixed 1% window | TinyLFU adaptive | final window |")
    print("|---|---:|---:|---:|---:|")
    for name, keys in traces.items():
        fixed, _ = tinylfu(keys, m, False)
        adaptive, window = tinylfu(keys, m, True)
        print(f"| {name} | {lru(keys, m) / len(keys):.2%} | {fixed / len(keys):.2%} | "
              f"{adaptive / len(keys):.2%} | {window} ({window / m:.0%}) |", flush=True)


if __name__ == "__main__":
    main()
