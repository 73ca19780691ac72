"""Does a CuckooFilter hold its capacity?  The first failed insert, over many key sets.

    python benchmarks/cuckoo_capacity.py                      # 1,000 sets of 10^5, b = 1, 2
    python benchmarks/cuckoo_capacity.py --sets 200 --buckets 1 2 3 4 --n 1e4
    python benchmarks/cuckoo_capacity.py --design-load 1=0.40  # try another sizing
    python benchmarks/cuckoo_capacity.py --smoke               # CI: 20 sets of 10^4
    python benchmarks/cuckoo_capacity.py --sets 4000 --error-rate 0.001 --random-seeds 1

For each bucket size and each of --sets key sets (random int64 keys, the
set's own numpy seed; the filter's seed is the set number), a fresh
``CuckooFilter(n, bucket_size=b)`` takes ``add_many`` of 3 n keys and stops
at its first ``CapacityError`` (the keys before it stay: ``len`` is where it
failed).  Printed per b: the design load, how many sets failed before n
keys (what docs/cuckoo.md promises never happens), and the first failure in
units of capacity: min, mean, standard deviation and the z of capacity
below the mean.  The probability that a set fails before capacity is bounded
two ways: the observed count (0 of N: below 3/N with 95% confidence) and the
normal tail Phi(-z) of the fitted distribution (an extrapolation; it holds
only if the low tail is no heavier than normal, which the min beside it
checks roughly).  No timing; the CPU cost is about a second per 20 sets of
10^5 at b = 1.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine
import numpy as np

import bloomkit
from bloomkit import cuckoo


def first_failure(n: int, b: int, seed: int, error_rate: float) -> int:
    """Keys stored at the first CapacityError (or 3 n if none came)."""
    keys = np.random.default_rng(seed).integers(-2**63, 2**63 - 1, size=3 * n, dtype=np.int64)
    f = bloomkit.CuckooFilter(n, error_rate, bucket_size=b, seed=seed)
    try:
        f.add_many(keys)
    except bloomkit.CapacityError:
        pass
    return len(f)


def run(n: int, b: int, sets: int, error_rate: float,
        random_seeds: int | None = None) -> dict[str, float]:
    if random_seeds is None:
        seeds = [1_000_003 * b + s for s in range(sets)]
    else:  # 64-bit seeds, as a user's seed= or os.urandom would give
        r = random.Random(random_seeds * 1_000_003 + b)
        seeds = [r.getrandbits(64) for _ in range(sets)]
    at = [first_failure(n, b, s, error_rate) / n for s in seeds]
    mean, sd = statistics.fmean(at), statistics.stdev(at) if len(at) > 1 else 0.0
    z = (mean - 1.0) / sd if sd > 0 else math.inf
    return {"bucket_size": b, "error_rate": error_rate,
            "fingerprint_bits": bloomkit.cuckoo_design(n, error_rate, b).fingerprint_bits,
            "design_load": cuckoo.design_load(b), "n": n, "sets": sets,
            "failed_before_capacity": sum(a < 1.0 for a in at), "min": min(at),
            "mean": mean, "sd": sd, "z": z, "normal_tail": 0.5 * math.erfc(z / math.sqrt(2))}


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=lambda s: int(float(s)), default=10**5, help="capacity")
    ap.add_argument("--sets", type=int, default=1000, help="key sets per bucket size")
    ap.add_argument("--buckets", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--error-rate", type=float, nargs="*", default=[0.1, 0.001],
                    help="rates to size for (0.1: the fewest fingerprint bits, 8)")
    ap.add_argument("--design-load", action="append", default=[], metavar="B=L",
                    help="size bucket size B for table load L instead (an experiment)")
    ap.add_argument("--smoke", action="store_true", help="20 sets of 10^4 (CI)")
    ap.add_argument("--random-seeds", type=int, default=None, metavar="S",
                    help="draw each set's key and filter seed as a random 64-bit int "
                         "(from random.Random(S)) instead of the set number")
    args = ap.parse_args(argv)
    machine.announce()
    if args.smoke:
        args.n, args.sets = 10**4, 20
    for spec in args.design_load:
        b, load = spec.split("=")
        cuckoo.DESIGN_LOADS[int(b)] = float(load)
    rows = []
    print(f"capacity {args.n:,}, {args.sets:,} key sets per bucket size; first failure in "
          "units of capacity")
    print(" b  rate    f  load  failed<cap   min     mean    sd      z      normal tail")
    for b, p in ((b, p) for b in args.buckets for p in args.error_rate):
        r = run(args.n, b, args.sets, p, args.random_seeds)
        rows.append(r)
        print(f"{b:2d}  {p:<6g} {r['fingerprint_bits']:2d}  {r['design_load']:.2f}  "
              f"{r['failed_before_capacity']:4d}/{args.sets:<5d} "
              f"{r['min']:.4f}  {r['mean']:.4f}  {r['sd']:.4f}  {r['z']:5.2f}  "
              f"{r['normal_tail']:.1e}", flush=True)
    return rows


if __name__ == "__main__":
    main()
