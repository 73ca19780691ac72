"""Upper bounds for the hit ratios of benchmarks/cache_traces.py.

How far above LRU can any cache get on these traces?  For each trace and
cache size this prints, next to LRU:

- ``OPT``: Belady's clairvoyant policy (evicts the entry asked again
  furthest in the future, and bypasses a key asked never again or later
  than everything cached).  No real cache reaches it: it knows the future.
- ``oracle``: knows every key's true Zipf popularity (not the future) and
  keeps the most popular keys seen so far (scan keys, popularity 0, are
  never cached).  On an independent-reference trace this is the best any
  non-clairvoyant policy can do in expectation: each step it holds the
  cached set of highest hit probability reachable.
- ``exact-LFU``: exact request counts since the start, and TinyLFU's rule
  (a missed key replaces the least-counted cached key only when counted
  more often).  With the popularity unknown, the count is all a request
  history says about a key of a stationary trace, so this is what a
  frequency-admission cache (TinyLFU, with sketch errors and aging on top)
  aims at.

    python benchmarks/cache_bounds.py [--length 1000000] [--sizes 100000]

Pure Python over the same traces (same generator calls and seed as
cache_traces.py; the script checks the keys are identical).
"""

from __future__ import annotations

import argparse
import heapq
import sys
from collections import OrderedDict
from pathlib import Path

import _checkout  # noqa: F401  (the in-place build, else the install)
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import cache_traces as ct
import machine


def ranked_traces(length: int) -> dict[str, tuple[list[int], list[int]]]:
    """name -> (keys, popularity rank of each request; scans rank NUM_KEYS+)."""
    rng = np.random.default_rng(ct.SEED)
    check = np.random.default_rng(ct.SEED)
    out: dict[str, tuple[list[int], list[int]]] = {}
    for s in (0.8, 1.0):
        ranks = np.arange(1, ct.NUM_KEYS + 1, dtype=np.float64)
        cdf = np.cumsum(ranks**-s)
        cdf /= cdf[-1]
        idx = np.minimum(np.searchsorted(cdf, rng.random(length), side="right"), ct.NUM_KEYS - 1)
        perm = rng.permutation(ct.NUM_KEYS)
        keys = perm[idx].astype(np.int64)
        assert np.array_equal(keys, ct.zipf_trace(s, length, check)), "trace recipe drifted"
        out[f"zipf{s}"] = (keys.tolist(), idx.tolist())
        pk = ct.polluted(keys)
        pr = ct.polluted(idx.astype(np.int64))  # scan keys get ids >= NUM_KEYS: rank "never"
        out[f"zipf{s}+scans"] = (pk.tolist(), pr.tolist())
    return out


def lru(keys: list[int], size: int) -> int:
    od: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for k in keys:
        if k in od:
            od.move_to_end(k)
            hits += 1
        else:
            od[k] = None
            if len(od) > size:
                od.popitem(last=False)
    return hits


def belady(keys: list[int], size: int) -> int:
    n = len(keys)
    never = n + 1
    nxt = [never] * n
    last: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = last.get(keys[i], never)
        last[keys[i]] = i
    cache: dict[int, int] = {}  # key -> next use
    heap: list[tuple[int, int]] = []  # (-next use, key), lazy
    hits = 0
    for i, k in enumerate(keys):
        nu = nxt[i]
        if k in cache:
            hits += 1
        elif nu == never:
            continue
        elif len(cache) >= size:
            while cache.get(heap[0][1]) != -heap[0][0]:
                heapq.heappop(heap)
            if -heap[0][0] < nu:
                continue  # bypass: everything cached is asked sooner
            del cache[heapq.heappop(heap)[1]]
        cache[k] = nu
        heapq.heappush(heap, (-nu, k))
    return hits


def oracle(ranks: list[int], size: int) -> int:
    cache: set[int] = set()
    heap: list[int] = []  # -rank of the cached keys (max-heap of ranks)
    hits = 0
    for r in ranks:
        if r in cache:
            hits += 1
        elif r >= ct.NUM_KEYS:
            continue  # a scan key: popularity 0
        elif len(cache) < size:
            cache.add(r)
            heapq.heappush(heap, -r)
        elif r < -heap[0]:
            cache.discard(-heapq.heappushpop(heap, -r))
            cache.add(r)
    return hits


def exact_lfu(keys: list[int], size: int) -> int:
    count: dict[int, int] = {}
    cache: dict[int, tuple[int, int]] = {}  # key -> (count, last use)
    heap: list[tuple[int, int, int]] = []  # (count, last use, key), lazy
    hits = 0
    for t, k in enumerate(keys):
        c = count.get(k, 0) + 1
        count[k] = c
        if k in cache:
            hits += 1
        elif len(cache) >= size:
            while cache.get(heap[0][2]) != heap[0][:2]:
                heapq.heappop(heap)
            if heap[0][0] >= c:
                continue  # TinyLFU's rule: the candidate must be counted more often
            del cache[heapq.heappop(heap)[2]]
        cache[k] = (c, t)
        heapq.heappush(heap, (c, t, k))
    return hits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--length", type=int, default=1_000_000, help="requests per Zipf trace")
    ap.add_argument("--sizes", type=str, default="100000")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    machine.announce()
    print("| trace | size | LRU | exact-LFU | oracle | OPT | oracle - LRU (points) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (keys, ranks) in ranked_traces(args.length).items():
        n = len(keys)
        for size in sizes:
            r = {f.__name__: f(keys, size) / n for f in (lru, exact_lfu, belady)}
            r["oracle"] = oracle(ranks, size) / n
            print(f"| {name} | {size:,} | {r['lru']:.2%} | {r['exact_lfu']:.2%} | "
                  f"{r['oracle']:.2%} | {r['belady']:.2%} | "
                  f"{(r['oracle'] - r['lru']) * 100:+.2f} |", flush=True)


if __name__ == "__main__":
    main()
