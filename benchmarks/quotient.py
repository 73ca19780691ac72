"""QuotientFilter speed: per-item contains against a peer at 75% load, and
add/contains across load factors 0.5..0.95 (one run, medians of 3 reps).

    python benchmarks/quotient.py [--q 20]

The peer is CuckooFilter when bloomkit has one, else BlockedBloomFilter (it
says which).  Per-item numbers include the ~30-60 ns of interpreter work of
a Python loop; the `set` row is that floor.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine
import numpy as np

import bloomkit
from bloomkit import QuotientFilter


def _ns_per(fn: Callable[[], object], n: int, reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / n * 1e9


def _loop_contains(f: object, keys: list[int]) -> Callable[[], int]:
    def run() -> int:
        hits = 0
        for k in keys:
            if k in f:  # type: ignore[operator]
                hits += 1
        return hits

    return run


def peer_comparison(q: int, r: int) -> None:
    slots = 2**q
    n = int(0.75 * slots)
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**62, n, dtype=np.int64)
    qf = QuotientFilter.with_shape(q, r)
    qf.add_many(keys)
    cuckoo = getattr(bloomkit, "CuckooFilter", None)
    if cuckoo is not None:
        peer_name = "CuckooFilter"
        peer = cuckoo(int(n / 0.75 * 0.95), 0.01)
        peer.add_many(keys[: int(0.75 * peer.capacity)] if hasattr(peer, "capacity") else keys)
    else:
        peer_name = "BlockedBloomFilter (no CuckooFilter in this build)"
        peer = bloomkit.BlockedBloomFilter(n, 0.01)
        peer.add_many(keys)
    m = 200_000
    present = [int(k) for k in keys[:m // 2]]
    absent = [int(k) for k in rng.integers(2**62, 2**63 - 1, m // 2, dtype=np.int64)]
    probe = present + absent
    probe_np = np.array(probe, dtype=np.int64)
    floor_set = set(present)
    print(f"== per-item `in` at 75% load: q={q} (2^{q} slots), r={r}, n={n}, "
          f"{m} probes (half present), ns/key")
    print(f"{'structure':<52} {'in loop':>8} {'contains_many':>14} {'bits/key':>9}")
    rows = [
        ("set (interpreter floor)", floor_set, None),
        (f"QuotientFilter q={q} r={r}", qf, qf.nbytes * 8 / n),
        (peer_name, peer, peer.nbytes * 8 / n),
    ]
    res = {}
    for name, obj, bpk in rows:
        loop = _ns_per(_loop_contains(obj, probe), m)
        batch = (_ns_per(lambda o=obj: o.contains_many(probe_np), m)
                 if hasattr(obj, "contains_many") else float("nan"))
        res[name] = loop
        bits = f"{bpk:9.1f}" if bpk else f"{'-':>9}"
        print(f"{name:<52} {loop:8.1f} {batch:14.1f} {bits}")
    ratio = res[f"QuotientFilter q={q} r={r}"] / res[peer_name]
    print(f"QuotientFilter / peer per-item contains: {ratio:.2f}x")


def load_sweep(q: int, r: int) -> None:
    slots = 2**q
    loads = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 2**62, int(0.95 * slots) + 1, dtype=np.int64)
    absent = [int(k) for k in rng.integers(2**62, 2**63 - 1, 100_000, dtype=np.int64)]
    qf = QuotientFilter.with_shape(q, r)
    print(f"\n== load sweep: q={q}, r={r}; add = per-item add() of the last 2% of slots "
          "before each load; contains = per-item `in`, 100k present / 100k absent; ns/key")
    print(f"{'load':>5} {'add':>8} {'in (present)':>13} {'in (absent)':>12} "
          f"{'contains_many':>14} {'validate ms':>12}")
    filled = 0
    for load in loads:
        target = int(load * slots)
        step = int(0.02 * slots)
        bulk = target - step
        if bulk > filled:
            qf.add_many(keys[filled:bulk])
            filled = bulk
        chunk = [int(k) for k in keys[filled:target]]
        t0 = time.perf_counter()
        for k in chunk:
            qf.add(k)
        add_ns = (time.perf_counter() - t0) / len(chunk) * 1e9
        filled = target
        present = [int(k) for k in keys[: min(100_000, filled)]]
        pin = _ns_per(_loop_contains(qf, present), len(present))
        pout = _ns_per(_loop_contains(qf, absent), len(absent))
        batch_keys = np.concatenate([keys[:100_000], np.array(absent, dtype=np.int64)])
        pbatch = _ns_per(lambda b=batch_keys: qf.contains_many(b), len(batch_keys))
        t0 = time.perf_counter()
        qf.validate()
        val_ms = (time.perf_counter() - t0) * 1e3
        print(f"{load:5.2f} {add_ns:8.1f} {pin:13.1f} {pout:12.1f} {pbatch:14.1f} {val_ms:12.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--q", type=int, default=20)
    ap.add_argument("--r", type=int, default=7)
    args = ap.parse_args()
    machine.announce()
    peer_comparison(args.q, args.r)
    load_sweep(args.q, args.r)


if __name__ == "__main__":
    main()
