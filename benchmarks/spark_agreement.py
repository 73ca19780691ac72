"""Agreement of bloomkit.spark / bloomkit.guava with the real Spark and Guava at scale.

    python benchmarks/spark_agreement.py [--keys 1000000] [--smoke]

For each key type (Spark: long, string, binary; Guava: long, string, binary),
--keys inserted keys and --keys absent probes (disjoint by construction):
the JVM side (tests/jvm/BkSparkTool.java against the installed PySpark's
spark-sketch jar, tests/jvm/BkGuavaTool.java against Debian's libguava-java,
compiled with javac into a temp dir) builds its filter with put() and answers
mightContain for every probe; bloomkit builds from the same keys as an Arrow
array and answers contains_many.  Printed: the share of equal answers, whether
the serialized bytes are equal, and the false-positive rate.  The same for
Spark's CountMinSketch (estimates over the inserted and the absent keys).
Also checks the other direction: the JVM reads bloomkit's bytes and answers.
--smoke: 10^4 keys.  Needs java, javac, pyspark and /usr/share/java/guava.jar.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import machine
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _keys(kind: str, n: int, seed: int, tag: bytes) -> list[Any]:
    rng = np.random.default_rng(seed)
    if kind == "long":
        # odd and even halves keep inserted and absent longs disjoint
        v = rng.integers(-2**62, 2**62, n, dtype=np.int64) * 2 + (1 if tag == b"in" else 0)
        return v.tolist()
    lens = rng.integers(0, 24, n)
    raw = rng.integers(0, 256, int(lens.sum()), dtype=np.uint8).tobytes()
    ends = np.cumsum(lens)
    out: list[Any] = []
    start = 0
    for e in ends.tolist():
        b = tag + raw[start:e]
        start = e
        out.append(b.hex() if kind == "string" else b)  # strings: hex text, ASCII
    if kind == "string":
        out = [s + "é" if i % 3 == 0 else s for i, s in enumerate(out)]  # some multi-byte UTF-8
    return out


def _write(path: Path, keys: list[Any], kind: str) -> None:
    if kind == "long":
        path.write_bytes(struct.pack(">i", len(keys)) + np.array(keys, dtype=">i8").tobytes())
        return
    parts = [struct.pack(">i", len(keys))]
    for k in keys:
        b = k.encode() if kind == "string" else k
        parts.append(struct.pack(">i", len(b)) + b)
    path.write_bytes(b"".join(parts))


def _arrow(kind: str, keys: list[Any]) -> Any:
    import pyarrow as pa

    return pa.array(keys, type={"long": pa.int64(), "string": pa.large_string(),
                                "binary": pa.binary()}[kind])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--smoke", action="store_true", help="10^4 keys")
    args = ap.parse_args(argv)
    n = 10_000 if args.smoke else args.keys
    from bloomkit import guava, spark
    from jvm_tools import Missing, guava_tool, run, spark_tool

    machine.announce()
    tmp = Path(tempfile.mkdtemp(prefix="bk-agree-"))
    try:
        stool, gtool = spark_tool(tmp / "jvm"), guava_tool(tmp / "jvm")
    except Missing as exc:
        print(f"spark_agreement: {exc}")
        return 2
    ok = True
    print(f"{n:,} inserted keys and {n:,} absent probes per type")
    for kind in ("long", "string", "binary"):
        t0 = time.perf_counter()
        keys, absent = _keys(kind, n, 1, b"in"), _keys(kind, n, 2, b"out")
        probes = keys + absent
        _write(tmp / "k", keys, kind)
        _write(tmp / "p", probes, kind)
        arr, parr = _arrow(kind, keys), _arrow(kind, probes)
        for version in (1, 2):
            run(stool, "bloom", version, n, 0.01, kind, tmp / "k", tmp / "p", tmp / "f", tmp / "a")
            theirs = np.frombuffer((tmp / "a").read_bytes(), dtype=np.uint8).astype(bool)
            f = spark.BloomFilter(n, 0.01, version=version)
            f.add_many(arr)
            mine = f.contains_many(parr)
            same_bytes = f.to_bytes() == (tmp / "f").read_bytes()
            (tmp / "mine").write_bytes(f.to_bytes())
            run(stool, "query", tmp / "mine", kind, tmp / "p", tmp / "a2")
            back = np.frombuffer((tmp / "a2").read_bytes(), dtype=np.uint8).astype(bool)
            agree = float((mine == theirs).mean())
            ok &= same_bytes and agree == 1.0 and bool((back == mine).all())
            print(f"  Spark BloomFilter V{version} {kind:6s}: answers equal {agree:.2%}, bytes "
                  f"equal {same_bytes}, Spark reads bloomkit's bytes and agrees "
                  f"{float((back == mine).mean()):.2%}, inserted found {mine[:n].mean():.2%}, "
                  f"FPR {mine[n:].mean():.5f}")
        run(stool, "cms", 0.001, 0.99, 7, kind, tmp / "k", tmp / "p", tmp / "s", tmp / "e")
        est = np.frombuffer((tmp / "e").read_bytes(), dtype=">i8")
        s = spark.CountMinSketch(0.001, 0.99, 7)
        s.add_many(arr)
        me = s.estimate_many(parr)
        same = s.to_bytes() == (tmp / "s").read_bytes()
        agree = float((me == est).mean())
        ok &= same and agree == 1.0
        print(f"  Spark CountMinSketch    {kind:6s}: estimates equal {agree:.2%}, bytes equal "
              f"{same}, mean overestimate on absent keys {me[n:].mean():.2f}")
        funnel = {"long": "long", "string": "string", "binary": "bytes"}[kind]
        run(gtool, "bloom", n, 0.01, kind, tmp / "k", tmp / "p", tmp / "g", tmp / "ga")
        theirs = np.frombuffer((tmp / "ga").read_bytes(), dtype=np.uint8).astype(bool)
        g = guava.BloomFilter(n, 0.01, funnel=funnel)
        g.add_many(arr)
        mine = g.contains_many(parr)
        same = g.to_bytes() == (tmp / "g").read_bytes()
        agree = float((mine == theirs).mean())
        ok &= same and agree == 1.0
        print(f"  Guava BloomFilter       {kind:6s}: answers equal {agree:.2%}, bytes equal "
              f"{same}, FPR {mine[n:].mean():.5f}  ({time.perf_counter() - t0:.1f} s)")
    print("all equal" if ok else "DIFFERENCES FOUND")
    for p in tmp.rglob("*"):
        if p.is_file():
            p.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
