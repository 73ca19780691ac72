"""The growable filter's core against the blocked Bloom filter (issue 32 item 2), one run.

    python benchmarks/growable.py [--smoke] [--start N] [--out DIR] [final ...]
        (default: --start 10000, finals 10^6 and 10^7: grown 100x and 1000x)

Compiles benchmarks/grow_core.c with the C core (bk_grow.c) and the blocked Bloom
filter's (bk_bloom.c, bk_simd.c: the AVX2 paths the extension runs on this CPU) into
--out (default: a temporary directory, never the source tree), then for each final n:
the growable filter starts at capacity --start and grows to n; the blocked filter is
sized in hindsight for n at 1% exactly as ``BlockedBloomFilter(n, 0.01)`` sizes it (taken
from bloomkit when it imports, else 9.918 bits per key and k = 6, its shape at 10^6 and
10^7). Printed: ns per key of add_many (growth included), contains_many of absent keys
and a per-key contains loop, best of 3 in thread CPU time with the two structures
alternated inside every pass; the ratios the issue targets; bits per key; the measured
and estimated false-positive rate. Keys are 64-bit hashes: the cores alone, without the
key hashing and call overhead that the Python calls add to both sides.

--smoke: start 10^3, final 10^5 (a few seconds; CI runs it; no timing is asserted).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import machine

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "src" / "bloomkit" / "_native"
SOURCES = ["bk_grow.c", "bk_bloom.c", "bk_simd.c", "bk_hash.c", "bk_format.c", "bk_kinds.c"]
TARGETS = {"add_many": 3.0, "contains_many": 2.5, "contains": 2.0, "bits": 1.5}


def blocked_shape(n: int) -> tuple[int, int]:
    """(num_bits, k) of BlockedBloomFilter(n, 0.01)."""
    try:
        from bloomkit import BlockedBloomFilter

        f = BlockedBloomFilter(n, 0.01)
        return int(f.num_bits), int(f.num_hashes)
    except ImportError:
        return -(-round(n * 9.918464) // 512) * 512, 6


def build(out: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        sys.exit("no C compiler")
    exe = out / "grow_core"
    bench = str(Path(__file__).with_name("grow_core.c"))
    subprocess.run([cc, "-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", f"-I{NATIVE}",
                    *(str(NATIVE / s) for s in SOURCES), bench, "-lm", "-o", str(exe)],
                   check=True, timeout=300)
    return exe


def run(exe: Path, start: int, final: int) -> dict[str, float]:
    bits, k = blocked_shape(final)
    out = subprocess.run([str(exe), str(start), str(final), str(bits), str(k)],
                         capture_output=True, text=True, check=True, timeout=3600).stdout
    fields = dict(kv.split("=", 1) for kv in out.split())
    return {key: float(v) for key, v in fields.items()}


def report(r: dict[str, float]) -> None:
    growth = r["final"] / r["start"]
    print(f"\nstart {int(r['start']):,} -> {int(r['final']):,} keys (grown {growth:g}x), "
          f"{int(r['queries']):,} absent queries, avx2 {int(r['avx2'])}")
    rows = [
        ("add_many (ns/key)", r["grow_add_many_ns"], r["blocked_add_many_ns"], "add_many"),
        ("contains_many absent (ns/key)", r["grow_contains_many_ns"],
         r["blocked_contains_many_ns"], "contains_many"),
        ("contains loop absent (ns/key)", r["grow_contains_ns"], r["blocked_contains_ns"],
         "contains"),
        ("bits per key", r["grow_bits_per_key"], r["blocked_bits_per_key"], "bits"),
    ]
    print(f"  {'':32} {'growable':>9} {'blocked':>9} {'ratio':>7}  target")
    for name, g, b, t in rows:
        ratio = g / b
        verdict = "met" if ratio <= TARGETS[t] else "MISSED"
        print(f"  {name:32} {g:9.2f} {b:9.2f} {ratio:6.2f}x  <= {TARGETS[t]}x {verdict}")
    print(f"  false-positive rate: measured {100 * r['grow_fpr']:.3f}%, "
          f"estimate {100 * r['grow_fpr_estimate']:.3f}% (target 1%)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("final", nargs="*", type=int)
    ap.add_argument("--start", type=int, default=None)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    machine.announce()
    start = a.start or (1000 if a.smoke else 10_000)
    finals = a.final or ([100_000] if a.smoke else [1_000_000, 10_000_000])
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        exe = build(out)
        for final in finals:
            report(run(exe, start, final))


if __name__ == "__main__":
    main()
