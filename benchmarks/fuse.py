"""BinaryFuseFilter against the Bloom filters (issue #17 targets), one run.

    PYTHONPATH=src python benchmarks/fuse.py [n ...]          (default: 10^6 10^7)
    PYTHONPATH=src python benchmarks/fuse.py --no-timing 1000000

Per n (random int64 keys, 10^7 absent probes): bits per key and the measured
false-positive rate for f = 8, 16, 32 beside BloomFilter and
BlockedBloomFilter at the same rate 2^-8; the peak extra memory of a build
(VmHWM, measured in a fresh subprocess); then, unless --no-timing, the
time ratios the issue targets, interleaved and best of 5: build against
BlockedBloomFilter.add_many of the same array, contains_many and per-item
`in` against BlockedBloomFilter's.  Timing on a shared machine is only a
rough indication.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from collections.abc import Callable

import machine
import numpy as np

from bloomkit import BinaryFuseFilter, BlockedBloomFilter, BloomFilter

PROBES = 10**7

_PEAK = r"""
import sys, numpy as np, bloomkit
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024
n, f = int(sys.argv[1]), int(sys.argv[2])
keys = np.random.default_rng(1).integers(-2**63, 2**63 - 1, size=n, dtype=np.int64)
bloomkit.BinaryFuseFilter(keys[:1000])
base = hwm()
fu = bloomkit.BinaryFuseFilter(keys, fingerprint_bits=f)
print((hwm() - base) / n, fu.nbytes / n)
"""


def _best(fn: Callable[[], object], reps: int = 5) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _ratio(a: Callable[[], object], b: Callable[[], object], rounds: int = 5) -> float:
    """min(a) / min(b), interleaved so both see the same load."""
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(_best(a, 1))
        tb.append(_best(b, 1))
    return min(ta) / min(tb)


def space_and_rate(n: int, keys: np.ndarray, probes: np.ndarray) -> None:
    for f in (8, 16, 32):
        fu = BinaryFuseFilter(keys, fingerprint_bits=f)
        assert fu.contains_many(keys).all(), "false negative"
        line = f"  fuse f={f:2} arity {fu.arity}: {fu.bits_per_key:7.3f} bits/key"
        if f < 32:
            fp = int(fu.contains_many(probes).sum())
            p = 2.0**-f
            z = (fp / PROBES - p) / math.sqrt(p * (1 - p) / PROBES)
            line += f", {fp} FP / {PROBES:.0e} = {fp / PROBES:.7f} (2^-f {p:.7f}, z {z:+.2f})"
        print(line)
    for cls in (BloomFilter, BlockedBloomFilter):
        b = cls(n, 2.0**-8)
        b.add_many(keys)
        fp = int(b.contains_many(probes).sum())
        print(f"  {cls.__name__} p=2^-8: {b.nbytes * 8 / n:7.3f} bits/key, "
              f"measured {fp / PROBES:.7f}")


def peak_memory(n: int) -> None:
    for f in (8, 32):
        out = subprocess.run([sys.executable, "-c", _PEAK, str(n), str(f)], check=True,
                             capture_output=True, text=True).stdout.split()
        extra, own = float(out[0]), float(out[1])
        print(f"  build peak extra memory f={f}: {extra:.2f} bytes/key "
              f"(the filter itself {own:.2f})")


def timing(n: int, keys: np.ndarray) -> None:
    def bloom() -> BlockedBloomFilter:
        b = BlockedBloomFilter(n, 2.0**-8)
        b.add_many(keys)
        return b

    build = _ratio(lambda: BinaryFuseFilter(keys), bloom)
    fu, bb = BinaryFuseFilter(keys), bloom()
    batch = _ratio(lambda: fu.contains_many(keys), lambda: bb.contains_many(keys))
    sample = keys[:200_000].tolist()
    per_item = _ratio(lambda: [k in fu for k in sample], lambda: [k in bb for k in sample])
    print(f"  time ratios vs BlockedBloomFilter: build {build:.2f}x (target <= 8), "
          f"contains_many {batch:.2f}x (<= 1.5), `in` {per_item:.2f}x (<= 1.2)")


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="*", type=lambda a: int(float(a)),
                    help="key counts (default: 10^6 10^7)")
    ap.add_argument("--no-timing", action="store_true",
                    help="space, rate and build memory only (no time ratios)")
    opts = ap.parse_args()
    sizes = opts.n or [10**6, 10**7]
    machine.announce()
    rng = np.random.default_rng(2026)
    probes = rng.integers(-(2**63), 2**63 - 1, size=PROBES, dtype=np.int64)
    for n in sizes:
        keys = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
        print(f"n = {n:,}")
        space_and_rate(n, keys, probes)
        peak_memory(n)
        if not opts.no_timing:
            timing(n, keys)


if __name__ == "__main__":
    main()
