"""Ship a leaked-password filter as one file; check candidates locally.

Input: a password list, one password per line, or SHA-1 hex lines as in
public breach corpora (``HEX`` or ``HEX:COUNT``, the "Pwned Passwords"
shape). Every entry becomes the key SHA-1(password) (20 raw bytes), so both
input forms build the same filter. The filter file is what you ship to
clients; a client checks a candidate by hashing it and asking the filter.
A "maybe" means "possibly leaked: confirm with the server or refuse"; a
"no" is certain.

    python examples/leaked_passwords.py build passwords.txt -o leaked.bkf
    python examples/leaked_passwords.py check leaked.bkf "hunter2" "correct horse"
    python examples/leaked_passwords.py demo        # synthetic list, reports size and FPR
"""

from __future__ import annotations

import argparse
import hashlib
import random
import string
import sys
import tempfile
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


def build(source: Path, out: Path, error_rate: float = 0.001) -> Any:
    with source.open(encoding="utf-8", errors="surrogateescape") as fh:
        count = sum(1 for line in fh if line.strip())
    f = bloomkit.BloomFilter(max(count, 1), error_rate)
    with source.open(encoding="utf-8", errors="surrogateescape") as fh:
        f.add_many(keys_from_lines(fh))
    f.save(out)
    return f


def is_leaked(f: Any, password: str) -> bool:
    return hashlib.sha1(password.encode("utf-8")).digest() in f


def demo(n: int, probes: int, seed: int) -> dict[str, Any]:
    rnd = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    leaked = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(6, 14))) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "passwords.txt"
        plain.write_text("\n".join(leaked) + "\n", encoding="utf-8")
        hexes = Path(tmp) / "pwned.txt"
        hexes.write_text(
            "".join(
                f"{hashlib.sha1(p.encode()).hexdigest().upper()}:{rnd.randrange(1, 99)}\n"
                for p in leaked
            ),
            encoding="utf-8",
        )
        f1 = build(plain, Path(tmp) / "a.bkf")
        f2 = build(hexes, Path(tmp) / "b.bkf")
        if f1 != f2:
            raise AssertionError("plain and SHA-1 hex inputs must build the same filter")
        shipped = bloomkit.load(Path(tmp) / "a.bkf")
        size = (Path(tmp) / "a.bkf").stat().st_size
    missing = sum(not is_leaked(shipped, p) for p in leaked)
    leaked_set = set(leaked)
    fresh = [f"fresh-{i}-{rnd.random()}" for i in range(probes)]
    fp = sum(is_leaked(shipped, p) for p in fresh if p not in leaked_set)
    report = {
        "leaked": n,
        "file_bytes": size,
        "bytes_per_password": size / n,
        "false_negatives": missing,
        "probes": probes,
        "false_positives": fp,
        "measured_fpr": fp / probes,
        "target_fpr": shipped.error_rate,
    }
    print(
        f"{n:,} leaked passwords -> {size:,}-byte filter file "
        f"({report['bytes_per_password']:.2f} bytes each); missing: {missing}"
    )
    print(
        f"{probes:,} fresh candidates: {fp} flagged, measured FPR "
        f"{report['measured_fpr']:.4%} (target {shipped.error_rate:.4%})"
    )
    return report


def main(argv: list[str] | None = None) -> Any:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("source", type=Path)
    b.add_argument("-o", "--output", type=Path, required=True)
    b.add_argument("-p", type=float, default=0.001)
    c = sub.add_parser("check")
    c.add_argument("filter", type=Path)
    c.add_argument("passwords", nargs="+")
    d = sub.add_parser("demo")
    d.add_argument("-n", type=int, default=1_000_000)
    d.add_argument("--probes", type=int, default=1_000_000)
    d.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        f = build(args.source, args.output, args.p)
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
