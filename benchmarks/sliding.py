"""SlidingBloomFilter over long streams, against the peers' sliding filters
(issue #18), one run.

    PYTHONPATH=src python benchmarks/sliding.py                  capacity 10^6
    PYTHONPATH=src python benchmarks/sliding.py --smoke          capacity 10^4
    PYTHONPATH=src python benchmarks/sliding.py --timing         add rough timings
    PYTHONPATH=src python benchmarks/sliding.py --ratios         speed ratios only (10^6)
    PYTHONPATH=src python benchmarks/sliding.py --ratios --n 10000000 --reps 3

For rates 1e-2 and 1e-3: a stream of 20 x capacity distinct int64 keys in
generation-sized batches; at checkpoints (full generations, the worst
moment) the false negatives among the last `capacity` keys, the measured
false-positive rate on never-added keys (worst and mean over checkpoints)
and the rate on keys past the forget bound.  Then the space against one
BloomFilter at the same (capacity, rate) and a naive ring of q Bloom
filters (q = 2..4, each for capacity / (q - 1) keys at rate / q, the same
guarantee).  Peers, when installed: pyprobables' RotatingBloomFilter
(pure Python) configured as its users do (max_queue_size q = 4 filters of
capacity / 3 keys each at the target rate), on a shorter stream (it runs
at ~20 us a key).  probabilistic-rs' ExpiringBloomFilter is a Rust crate
with no pip package: not measured here (docs/sliding.md quotes its
published figure).  No timing is asserted anywhere; --timing prints rough
per-key figures (a shared machine makes them indicative only).  --ratios
prints issue #32's speed cells at capacity n (--n, default 10^6), 1% (random
int64 keys) as ratios to BlockedBloomFilter(n, 0.01) measured in the same
process with the CPU clock (time.process_time), the blocked filter and both
sliding layouts alternated, median of --reps: numpy add_many and numpy
contains_many (absent keys) of n keys into a fresh filter, then on that full
filter `f.add(k)` of 10^6 fresh keys and `k in f` of 10^6 absent keys; and
the bits against one BloomFilter(n, 0.01).
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import machine
import numpy as np

import bloomkit
from bloomkit import SlidingBloomFilter
from bloomkit.sliding import sliding_design

RATES = (1e-2, 1e-3)


def stream_sliding(capacity: int, rate: float, factor: int, probes: int,
                   seed: int = 1) -> dict[str, Any]:
    f = SlidingBloomFilter(capacity, rate, seed=seed)
    d = f.design
    G, total = d.generation_length, factor * capacity
    base, added, fns, fps, olds = seed * 10**12, 0, 0, [], []
    probe_base = -1 - seed * 10**12
    step = max(1, d.generations // 2)
    while added < total:
        f.add_many(np.arange(base + added, base + added + G, dtype=np.int64))
        added += G
        if (added // G) % step or added < 2 * capacity:
            continue
        window = np.arange(base + added - capacity, base + added, dtype=np.int64)
        fns += int((~f.contains_many(window)).sum())
        absent = np.arange(probe_base - probes, probe_base, dtype=np.int64)
        probe_base -= probes
        fps.append(float(f.contains_many(absent).mean()))
        old = np.arange(base + added - d.forget_after - probes, base + added - d.forget_after,
                        dtype=np.int64)
        olds.append(float(f.contains_many(old).mean()))
    return {"design": d, "false_negatives": fns, "checkpoints": len(fps),
            "worst": max(fps), "mean": sum(fps) / len(fps), "old_worst": max(olds),
            "se": math.sqrt(rate * (1 - rate) / probes)}


def stream_rotating(capacity: int, rate: float, factor: int, probes: int) -> dict[str, Any]:
    from probables import RotatingBloomFilter

    q = 4
    f = RotatingBloomFilter(est_elements=math.ceil(capacity / (q - 1)),
                            false_positive_rate=rate, max_queue_size=q)
    total, fns, fps = factor * capacity, 0, []
    every = max(capacity // 2, 1)
    for i in range(total):
        f.add(str(i), force=True)
        if (i + 1) % every or i + 1 < 2 * capacity:
            continue
        fns += sum(1 for j in range(i + 1 - capacity, i + 1) if not f.check(str(j)))
        fps.append(sum(1 for j in range(probes) if f.check(f"absent-{i}-{j}")) / probes)
    return {"false_negatives": fns, "checkpoints": len(fps), "worst": max(fps),
            "mean": sum(fps) / len(fps), "filters": q,
            "bits": sum(b.number_bits for b in f._blooms)}


def naive_ring_bits(capacity: int, rate: float, q: int) -> int:
    """q Bloom filters, each for capacity / (q - 1) keys at rate / q: every key
    of the last `capacity` adds sits in one of them, and a query's rate is
    at most the sum of the q filters' rates."""
    return q * bloomkit.design(math.ceil(capacity / (q - 1)), rate / q).num_bits


def timing(capacity: int, rate: float) -> None:
    f = SlidingBloomFilter(capacity, rate)
    b = bloomkit.BlockedBloomFilter(capacity, rate)
    keys = np.arange(capacity, dtype=np.int64)
    lst = keys.tolist()
    for name, obj in (("SlidingBloomFilter", f), ("BlockedBloomFilter", b)):
        t = time.perf_counter()
        obj.add_many(keys)
        t_batch = time.perf_counter() - t
        t = time.perf_counter()
        for k in lst[:200_000]:
            k in obj  # noqa: B015
        t_in = (time.perf_counter() - t) / min(len(lst), 200_000)
        print(f"  {name:20s} add_many {t_batch / capacity * 1e9:7.1f} ns/key, "
              f"`in` {t_in * 1e9:7.1f} ns/key (indicative only)")


def ratios(reps: int = 5, n: int = 10**6, per_key: int = 10**6) -> None:
    """Issue #18's and #32's speed cells, as ratios to BlockedBloomFilter (see
    the docstring): both sliding layouts and the blocked filter built and
    timed in turn in each repetition (median of `reps`).  Per-key cells run
    on `per_key` keys against a filter already holding n keys."""
    import statistics

    rng = np.random.default_rng(7)
    keys = rng.integers(-2**62, 2**62, n, dtype=np.int64)
    absent = rng.integers(-2**62, 2**62, n, dtype=np.int64)
    more = rng.integers(-2**62, 2**62, per_key, dtype=np.int64).tolist()
    la = absent[:per_key].tolist()
    clock = time.process_time
    peers: list[tuple[str, Any]] = [
        ("BlockedBloomFilter", lambda: bloomkit.BlockedBloomFilter(n, 0.01)),
        ("Sliding blocked", lambda: SlidingBloomFilter(n, 0.01, layout="blocked")),
        ("Sliding sliced", lambda: SlidingBloomFilter(n, 0.01, layout="sliced")),
    ]
    cells = ("numpy add_many", "numpy contains_many", "f.add(k) (fresh)", "k in f (absent)")
    res: dict[tuple[str, str], list[float]] = {}
    bits: dict[str, int] = {}
    for _ in range(reps):
        for name, make in peers:
            f: Any = make()
            bits[name] = f.nbytes * 8
            t = clock()
            f.add_many(keys)
            t1 = (clock() - t) / n
            t = clock()
            f.contains_many(absent)
            t2 = (clock() - t) / n
            t = clock()
            for k in more:
                f.add(k)
            t3 = (clock() - t) / per_key
            t = clock()
            for k in la:
                k in f  # noqa: B015
            t4 = (clock() - t) / per_key
            del f
            for cell, v in zip(cells, (t1, t2, t3, t4), strict=True):
                res.setdefault((name, cell), []).append(v * 1e9)
    bloom = bloomkit.design(n, 0.01).num_bits
    print(f"  n = {n:,}, 1%, median of {reps} (CPU ns/key; ratio to BlockedBloomFilter)")
    for cell in cells:
        b = statistics.median(res[("BlockedBloomFilter", cell)])
        line = f"  {cell:22s} blocked {b:6.1f}"
        for name, _ in peers[1:]:
            s_ = statistics.median(res[(name, cell)])
            line += f" | {name} {s_:6.1f} ({s_ / b:4.2f}x)"
        print(line)
    for name, _ in peers[1:]:
        print(f"  bits: {name} {bits[name] / n:.2f} a key, {bits[name] / bloom:.3f}x a "
              f"BloomFilter's {bloom / n:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="capacity 10^4, short peer runs")
    ap.add_argument("--capacity", type=int, default=None)
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--ratios", action="store_true", help="only the speed ratios")
    ap.add_argument("--n", type=int, default=10**6, help="keys for --ratios (default 10^6)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions for --ratios")
    args = ap.parse_args()
    machine.announce()
    if args.ratios:
        if args.smoke:
            ratios(reps=1, n=10**4, per_key=10**4)
        else:
            ratios(reps=args.reps, n=args.n)
        return
    capacity = args.capacity or (10**4 if args.smoke else 10**6)
    factor, probes = (5, 20_000) if args.smoke else (20, 200_000)
    peer_capacity = 2000 if args.smoke else 100_000
    for rate in RATES:
        r = stream_sliding(capacity, rate, factor, probes)
        d = r["design"]
        bloom = bloomkit.design(capacity, rate).num_bits
        print(f"\nSlidingBloomFilter capacity {capacity:,}, rate {rate:g}: k={d.num_hashes}, "
              f"l={d.generations}, m={d.slice_bits:,} bits/slice, "
              f"{d.bits_per_key:.2f} bits/key ({d.num_bits / bloom:.3f}x BloomFilter's "
              f"{bloom / capacity:.2f})")
        print(f"  stream {factor}x capacity, {r['checkpoints']} checkpoints: false negatives "
              f"in the window {r['false_negatives']}, rate worst {r['worst']:.5f} mean "
              f"{r['mean']:.5f} (target {rate:g}, 1 s.e. {r['se']:.1e}); past the forget "
              f"bound ({d.forget_after:,} adds) worst {r['old_worst']:.5f}")
        for q in (2, 3, 4):
            ring = naive_ring_bits(capacity, rate, q)
            print(f"  naive ring of {q} Bloom filters: {ring / capacity:.2f} bits/key "
                  f"({ring / bloom:.3f}x), forgets after up to {q / (q - 1):.2f} x capacity")
        try:
            p = stream_rotating(peer_capacity, rate, 3 if args.smoke else 4,
                                2000 if args.smoke else 20_000)
        except ImportError:
            print(f"  pyprobables RotatingBloomFilter: not installed ({machine.PEERS_HINT})")
        else:
            print(f"  pyprobables RotatingBloomFilter (capacity {peer_capacity:,}, "
                  f"{p['filters']} filters of capacity/3 at {rate:g}): false negatives "
                  f"{p['false_negatives']}, rate worst {p['worst']:.5f} mean {p['mean']:.5f}, "
                  f"{p['bits'] / peer_capacity:.2f} bits/key")
        if args.timing:
            timing(capacity, rate)
    _ = sliding_design  # the sizing used above, for readers of this script


if __name__ == "__main__":
    main()
