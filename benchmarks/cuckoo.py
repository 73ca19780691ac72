"""CuckooFilter speed against BlockedBloomFilter (issue 6 targets), one run.

    python benchmarks/cuckoo.py [n] [error_rate]

Per-item loops go through the same Python overhead for both structures, so
the ratios show what the C side adds.  Targets: per-item `in` within 1.2x of
BlockedBloomFilter's, add within 1.5x below 90% load, remove within 1.5x of
add, batch contains at least 2x faster than the per-item loop.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine
import numpy as np

from bloomkit import BlockedBloomFilter, CuckooFilter


def _ns_per_key(fn: Callable[[], object], n: int, reps: int = 5) -> float:
    """Best of reps: the machine is shared, and contention only adds time."""
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) / n * 1e9


def _pair(a: Callable[[], object], b: Callable[[], object], n: int,
          rounds: int = 5) -> tuple[float, float, float]:
    """Interleave a and b so both see the same load; best of each."""
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(_ns_per_key(a, n, 1))
        tb.append(_ns_per_key(b, n, 1))
    return min(ta), min(tb), statistics.median(ta) / statistics.median(tb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=1_000_000, help="keys (default 1e6)")
    ap.add_argument("error_rate", nargs="?", type=float, default=0.01, help="(default 0.01)")
    args = ap.parse_args()
    n, p = args.n, args.error_rate
    machine.announce()
    rng = np.random.default_rng(1)
    # below 90% load: 0.85 of the slots
    probe_cf = CuckooFilter(n, p)
    m = int(0.85 * probe_cf.num_buckets * probe_cf.bucket_size)
    arr = rng.integers(0, 2**62, m, dtype=np.int64)
    keys = arr.tolist()
    absent = rng.integers(2**62, 2**63 - 1, m, dtype=np.int64).tolist()

    def add_cuckoo() -> None:
        f = CuckooFilter(n, p)
        add = f.add
        for k in keys:
            add(k)

    def add_bloom() -> None:
        f = BlockedBloomFilter(n, p)
        add = f.add
        for k in keys:
            add(k)

    cf = CuckooFilter(n, p)
    cf.add_many(arr)
    bf = BlockedBloomFilter(n, p)
    bf.add_many(arr)

    # Query loops run over a 200k-key slice, many interleaved rounds: on a
    # shared machine the best of many short runs is the stable statistic.
    q = min(m, 200_000)

    def loop_in(f: object, ks: list[int]) -> Callable[[], object]:
        sub = ks[:q]
        return lambda: [k in f for k in sub]  # type: ignore[operator]

    def remove_all() -> None:
        f = cf.copy()
        rm = f.remove
        for k in keys:
            rm(k)

    def add_into_copy() -> None:
        f = CuckooFilter(n, p)
        add = f.add
        for k in keys:
            add(k)

    # The batch call takes the same pre-built list as the loop: slicing
    # inside the timed call would add a copy + incref + decref pass over
    # 200k int objects that the loop does not pay.
    batch_keys = keys[:q]

    rows: dict[str, float] = {}
    medians: dict[str, float] = {}
    for label, a, b, (na, nb) in [
        ("add", add_cuckoo, add_bloom, ("add loop (cuckoo)", "add loop (blocked bloom)")),
        ("in present", loop_in(cf, keys), loop_in(bf, keys),
         ("in loop, present (cuckoo)", "in loop, present (blocked bloom)")),
        ("in absent", loop_in(cf, absent), loop_in(bf, absent),
         ("in loop, absent (cuckoo)", "in loop, absent (blocked bloom)")),
        ("remove", remove_all, add_into_copy,
         ("remove loop (cuckoo)", "add loop again (cuckoo)")),
        ("batch", loop_in(cf, keys), lambda: cf.contains_many(keys),
         ("in loop again (cuckoo)", "contains_many list (cuckoo)")),
    ]:
        if label in ("in present", "in absent"):
            rows[na], rows[nb], medians[label] = _pair(a, b, q, 15)
        elif label == "batch":
            rows[na], rows[nb], medians[label] = _pair(
                a, lambda: cf.contains_many(batch_keys), q, 15)
        else:
            rows[na], rows[nb], medians[label] = _pair(a, b, m)
    rows["contains_many numpy (cuckoo)"] = _ns_per_key(lambda: cf.contains_many(arr), m)
    print(f"n={n} p={p} keys={m} load={cf.load_factor:.3f} f={cf.fingerprint_bits} "
          f"bits/key(capacity)={cf.state_nbytes * 8 / n:.2f} "
          f"blocked bits/key={bf.state_nbytes * 8 / n:.2f}")
    for name, v in rows.items():
        print(f"  {name:36s} {v:8.1f} ns/key")
    in_ratio = rows["in loop, present (cuckoo)"] / rows["in loop, present (blocked bloom)"]
    in_abs = rows["in loop, absent (cuckoo)"] / rows["in loop, absent (blocked bloom)"]
    add_ratio = rows["add loop (cuckoo)"] / rows["add loop (blocked bloom)"]
    rm_ratio = rows["remove loop (cuckoo)"] / rows["add loop again (cuckoo)"]
    batch = rows["in loop again (cuckoo)"] / rows["contains_many list (cuckoo)"]
    print("  ratios of best times (ratio of medians in brackets):")
    for label, v in medians.items():
        print(f"    median ratio {label:12s} {v:.2f}")
    print(f"  in / blocked in (present)   {in_ratio:.2f}x  target <= 1.2x "
          f"{'met' if in_ratio <= 1.2 else 'MISSED'}")
    print(f"  in / blocked in (absent)    {in_abs:.2f}x  target <= 1.2x "
          f"{'met' if in_abs <= 1.2 else 'MISSED'}")
    print(f"  add / blocked add           {add_ratio:.2f}x  target <= 1.5x "
          f"{'met' if add_ratio <= 1.5 else 'MISSED'}")
    print(f"  remove / add                {rm_ratio:.2f}x  target <= 1.5x "
          f"{'met' if rm_ratio <= 1.5 else 'MISSED'}")
    print(f"  in loop / contains_many     {batch:.2f}x  target >= 2x "
          f"{'met' if batch >= 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
