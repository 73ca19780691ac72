"""Ship a leaked-password filter as one file; check candidates locally.

Input: a password list, one password per line, or SHA-1 hex lines as in
public breach corpora (``HEX`` or ``HEX:COUNT``, the "Pwned Passwords"
shape). Every entry becomes the key SHA-1(password) (20 raw bytes), so both
input forms build the same filter. The filter file is what you ship to
clients; a client checks a candidate by hashing it and asking the filter.
A "maybe" means "possibly leaked: confirm with the server or refuse"; a
"no" is certain.

Two filters can be shipped. The Bloom filter (``--kind bloom``, default)
takes any error rate and can take more passwords later. A list that is
built once and shipped is the case for the binary fuse filter (``--kind
fuse``): static (the next list is a new build), its rate comes in steps
(2^-8, 2^-16, 2^-32: ``-p`` picks the smallest that meets it), and for the
same rate its file is 20-25% smaller than a Bloom filter's (docs/fuse.md).
Building it holds 8 bytes a password of hashes (plus ~15 while it solves).

    python examples/leaked_passwords.py build passwords.txt -o leaked.bkf [--kind fuse]
    python examples/leaked_passwords.py check leaked.bkf "hunter2" "correct horse"
    python examples/leaked_passwords.py demo        # both filters: file size, FPR, check time
"""

from __future__ import annotations

import argparse
import hashlib
import random
import string
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import bloomkit


def keys_from_lines(lines: Iterable[str]) -> Iterator[bytes]:
    """SHA-1 digests from password lines or SHA-1 hex lines (HEX or HEX:COUNT)."""
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            continue
        head = line.split(":", 1)[0]
        if len(head) == 40 and all(c in string.hexdigits for c in head):
            yield bytes.fromhex(head)
        else:
            yield hashlib.sha1(line.encode("utf-8")).digest()


def build(source: Path, out: Path, error_rate: float = 0.001, kind: str = "bloom") -> Any:
    f: Any
    if kind == "fuse":  # one pass: every key's hash, then the static filter
        with source.open(encoding="utf-8", errors="surrogateescape") as fh:
            f = bloomkit.BinaryFuseFilter(keys_from_lines(fh), error_rate=error_rate)
        f.save(out)
        return f
    with source.open(encoding="utf-8", errors="surrogateescape") as fh:
        count = sum(1 for line in fh if line.strip())
    f = bloomkit.BloomFilter(max(count, 1), error_rate)
    with source.open(encoding="utf-8", errors="surrogateescape") as fh:
        f.add_many(keys_from_lines(fh))
    f.save(out)
    return f


def is_leaked(f: Any, password: str) -> bool:
    return hashlib.sha1(password.encode("utf-8")).digest() in f


def _shipped(kind: str, plain: Path, hexes: Path, tmp: Path, error_rate: float
             ) -> tuple[Any, int]:
    f1 = build(plain, tmp / f"{kind}-a.bkf", error_rate, kind)
    f2 = build(hexes, tmp / f"{kind}-b.bkf", error_rate, kind)
    if f1 != f2:
        raise AssertionError("plain and SHA-1 hex inputs must build the same filter")
    path = tmp / f"{kind}-a.bkf"
    return bloomkit.load(path), path.stat().st_size


def _check_us(f: Any, candidates: list[str]) -> float:
    """Microseconds per client check (hash + lookup), best of 3: a rough figure."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for p in candidates:
            is_leaked(f, p)
        best = min(best, time.perf_counter() - t)
    return best / len(candidates) * 1e6


def demo(n: int, probes: int, seed: int, error_rate: float = 0.001) -> dict[str, Any]:
    """Both filters over one synthetic list; the Bloom filter's figures at the
    top level, the fuse filter's under "fuse"."""
    rnd = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    leaked = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(6, 14))) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        plain = tmp / "passwords.txt"
        plain.write_text("\n".join(leaked) + "\n", encoding="utf-8")
        hexes = tmp / "pwned.txt"
        hexes.write_text(
            "".join(
                f"{hashlib.sha1(p.encode()).hexdigest().upper()}:{rnd.randrange(1, 99)}\n"
                for p in leaked
            ),
            encoding="utf-8",
        )
        filters = {kind: _shipped(kind, plain, hexes, tmp, error_rate)
                   for kind in ("bloom", "fuse")}
        # the fair size comparison: a Bloom filter at the fuse filter's own rate 2^-f
        (tmp / "same").mkdir()
        same = filters["fuse"][0].error_rate
        filters["bloom_same_rate"] = _shipped("bloom", plain, hexes, tmp / "same", same)
    leaked_set = set(leaked)
    fresh = [f"fresh-{i}-{rnd.random()}" for i in range(probes)]
    fresh = [p for p in fresh if p not in leaked_set]
    reports: dict[str, dict[str, Any]] = {}
    for kind, (shipped, size) in filters.items():
        missing = sum(not is_leaked(shipped, p) for p in leaked)
        fp = sum(is_leaked(shipped, p) for p in fresh)
        reports[kind] = {
            "kind": type(shipped).__name__,
            "leaked": n,
            "file_bytes": size,
            "bytes_per_password": size / n,
            "false_negatives": missing,
            "probes": probes,
            "false_positives": fp,
            "measured_fpr": fp / max(1, len(fresh)),
            "target_fpr": shipped.error_rate,
            "check_us": _check_us(shipped, fresh[:20000]),
        }
        r = reports[kind]
        print(
            f"{r['kind']:>16}: {n:,} leaked passwords -> {size:,}-byte file "
            f"({r['bytes_per_password']:.2f} bytes each); missing: {missing}; "
            f"{probes:,} fresh candidates: {fp} flagged, measured FPR "
            f"{r['measured_fpr']:.4%} (target {r['target_fpr']:.4%}); "
            f"check {r['check_us']:.2f} us"
        )
    bloom_pw = reports["bloom_same_rate"]["bytes_per_password"]
    fuse_pw = reports["fuse"]["bytes_per_password"]
    print(f"at the same rate {reports['fuse']['target_fpr']:.3g} the fuse filter ships "
          f"{1 - fuse_pw / bloom_pw:.0%} fewer bytes than the Bloom filter (its rate comes in "
          "steps: -p picks 2^-8, 2^-16 or 2^-32)")
    return {**reports["bloom"], "fuse": reports["fuse"],
            "bloom_same_rate": reports["bloom_same_rate"]}


def main(argv: list[str] | None = None) -> Any:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("source", type=Path)
    b.add_argument("-o", "--output", type=Path, required=True)
    b.add_argument("-p", type=float, default=0.001)
    b.add_argument("--kind", choices=("bloom", "fuse"), default="bloom",
                   help="bloom: BloomFilter (any rate, can grow); fuse: BinaryFuseFilter "
                   "(static, smallest; rate 2^-8/2^-16/2^-32)")
    c = sub.add_parser("check")
    c.add_argument("filter", type=Path)
    c.add_argument("passwords", nargs="+")
    d = sub.add_parser("demo")
    d.add_argument("-n", type=int, default=1_000_000)
    d.add_argument("--probes", type=int, default=1_000_000)
    d.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        f = build(args.source, args.output, args.p, args.kind)
        print(f"wrote {args.output} ({args.output.stat().st_size:,} bytes, {len(f):,} keys)")
        return f
    if args.cmd == "check":
        f = bloomkit.load(args.filter)
        results = {p: is_leaked(f, p) for p in args.passwords}
        for p, hit in results.items():
            print(f"{'POSSIBLY LEAKED' if hit else 'not leaked':>15}  {p}")
        return results
    return demo(args.n, args.probes, args.seed)


if __name__ == "__main__":
    out = main()
    sys.exit(0)
