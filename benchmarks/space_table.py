"""The README's "space at 1% (n = 10^6)" column, computed.

    python benchmarks/space_table.py [--json]

Every number in that column is ``nbytes * 8 / n`` of a structure as its
constructor sizes it for n = 10^6 (at 1% unless the row says otherwise), a
ratio of two of them, or a false-positive rate measured here (the
BinaryFuseFilter at 2^-8: 10^6 random int64 keys of seed 1, 10^7 absent
random probes of seed 2).  The few numbers of that column that come from a
longer benchmark (the SlidingBloomFilter's rates over a 20x capacity
stream, the cache's hit ratios) are listed in ``QUOTED``, each with the
document whose benchmark output holds it.  tests/test_docs.py runs
``rows()`` and checks every number of the README's table against it, both
ways.  No timing; about a second.
"""

from __future__ import annotations

import argparse
import json

import machine
import numpy as np

import bloomkit

N = 10**6

# README row (the class in its "use" cell) -> {number as the README writes it:
# (document, the benchmark's figure it rounds)}: measured by longer runs.
QUOTED: dict[str, dict[str, tuple[str, str]]] = {
    "SlidingBloomFilter": {
        # the default blocked layout, benchmarks/sliding.py (docs/sliding.md)
        "0.0096": ("docs/sliding.md", "0.00963"),  # mean rate
        "0.0100": ("docs/sliding.md", "0.01004"),  # worst checkpoint
    },
    "TinyLFU": {
        "+5.7": ("docs/cache.md", "+5.71"),  # zipf0.8+scans at 1,000
        "+8.0": ("docs/cache.md", "+7.99"),  # zipf1.0+scans at 10,000
    },
}


def _bits(f: object) -> float:
    return f.nbytes * 8 / N  # type: ignore[attr-defined, no-any-return]


def _fuse_rate(fu: bloomkit.BinaryFuseFilter[bloomkit.Key], keys: np.ndarray) -> float:
    probes = np.random.default_rng(2).integers(-2**63, 2**63 - 1, size=10**7, dtype=np.int64)
    probes = probes[~np.isin(probes, keys)]
    return float(np.count_nonzero(fu.contains_many(probes))) / len(probes)


def rows() -> dict[str, list[str]]:
    """The README row's class -> the numbers its space cell states, formatted
    as the README writes them."""
    b = bloomkit
    p8 = 2.0**-8
    keys = np.random.default_rng(1).integers(-2**63, 2**63 - 1, size=N, dtype=np.int64)
    fuse8 = b.BinaryFuseFilter(keys, fingerprint_bits=8)
    fuse16 = b.BinaryFuseFilter(keys, fingerprint_bits=16)
    bloom8, blocked8 = _bits(b.BloomFilter(N, p8)), _bits(b.BlockedBloomFilter(N, p8))
    qf_n = int(0.9 * 2**20)  # a capacity that fills the power-of-two table to 0.9
    qf = b.QuotientFilter(N, 0.01)
    sliding, bloom = _bits(b.SlidingBloomFilter(N, 0.01)), _bits(b.BloomFilter(N, 0.01))
    cms = b.CountMinSketch.from_error(0.001, 0.01)
    tiny = b.TinyLFU(10_000)
    return {
        "BlockedBloomFilter": [f"{_bits(b.BlockedBloomFilter(N, 0.01)):.2f}"],
        "BloomFilter": [f"{bloom:.2f}"],
        "CountingBloomFilter": [f"{_bits(b.CountingBloomFilter(N, 0.01)):.1f}",
                                f"{_bits(b.CountingBloomFilter(N, 0.01, layout='classic')):.1f}"],
        "CuckooFilter": [f"{_bits(b.CuckooFilter(N, 0.01)):.2f}",
                         f"{_bits(b.CuckooFilter(N, 0.001)):.2f}"],
        "QuotientFilter": [f"{_bits(qf):.2f}", f"{N / 2 ** qf.q:.2f}",  # its load at n
                           f"{b.QuotientFilter(qf_n, 0.01).nbytes * 8 / qf_n:.1f}", f"{qf_n:,}"],
        "BinaryFuseFilter": [
            f"{_bits(fuse8):.2f}", f"{p8:.2%}", f"{_fuse_rate(fuse8, keys):.3%}", f"{bloom8:.2f}",
            # the fuse filter's saving against each: "22-25%"
            f"{blocked8:.2f}", f"{1 - _bits(fuse8) / bloom8:.0%}"[:-1],
            f"{1 - _bits(fuse8) / blocked8:.0%}", f"{_bits(fuse16):.2f}"],
        "SlidingBloomFilter": [f"{sliding:.2f}", f"{sliding / bloom:.2f}x",
                               *QUOTED["SlidingBloomFilter"]],
        "CountMinSketch": [f"{cms.nbytes / 1024:.0f} KiB", f"{cms.nbytes:,}"],
        "TinyLFU": [f"{tiny.nbytes / 10_000:.0f} bytes", *QUOTED["TinyLFU"]],
    }


def main(argv: list[str] | None = None) -> dict[str, list[str]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    machine.announce()  # the convention; no figure here depends on the machine
    r = rows()
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        for name, values in r.items():
            print(f"{name:20} {', '.join(values)}")
    return r


if __name__ == "__main__":
    main()
