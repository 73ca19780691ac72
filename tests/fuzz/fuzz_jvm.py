"""#33: atheris fuzz target on the JVM formats' reader (bloomkit.spark,
bloomkit.guava).

    python tests/fuzz/fuzz_jvm.py CORPUS_DIR -max_total_time=30

The first input byte picks the format (Spark BloomFilter, Spark
CountMinSketch, Guava BloomFilter with each funnel); an odd second byte makes
the rest a recipe that edits up to 16 bytes of a small valid filter of that
format and truncates or extends it (the C parser gives atheris no coverage, so
near-valid inputs are made on purpose, as fuzz_loads.py does), an even one
takes the rest as the bytes.  A load either raises FormatError or gives an
object that answers every key type, takes an add, merges with a copy of
itself and round-trips byte for byte.
"""

from __future__ import annotations

import sys
from typing import Any

import atheris

with atheris.instrument_imports():
    from bloomkit import FormatError, guava, spark


def _seeds() -> list[tuple[Any, bytes, list[Any]]]:
    """(load, valid bytes, keys to exercise) per format."""
    v1 = spark.BloomFilter(40, 0.05, version=1)
    v2 = spark.BloomFilter(40, 0.05, seed=3)
    cms = spark.CountMinSketch.with_size(3, 7, 5)
    for x in (v1, v2, cms):
        x.add_many([1, "a", b"\x80b"])
    mixed = [7, "probe", b"\xff\x00"]
    out: list[tuple[Any, bytes, list[Any]]] = [
        (spark.BloomFilter.from_bytes, v1.to_bytes(), mixed),
        (spark.BloomFilter.from_bytes, v2.to_bytes(), mixed),
        (spark.CountMinSketch.from_bytes, cms.to_bytes(), mixed),
    ]
    for funnel, keys in (("long", [1, -5]), ("string", ["a", ""]), ("bytes", [b"", b"\x80"])):
        for strategy in guava.STRATEGIES:
            g = guava.BloomFilter(30, 0.05, funnel=funnel, strategy=strategy)
            g.add_many(keys)
            out.append((lambda b, f=funnel: guava.BloomFilter.from_bytes(b, f), g.to_bytes(),
                        keys))
    return out


SEEDS = _seeds()


def _recipe(fdp: Any, base: bytes) -> bytes:
    buf = bytearray(base)
    for _ in range(fdp.ConsumeIntInRange(0, 16)):
        buf[fdp.ConsumeIntInRange(0, len(buf) - 1)] = fdp.ConsumeIntInRange(0, 255)
    cut = fdp.ConsumeIntInRange(0, 3)
    if cut == 1:
        del buf[fdp.ConsumeIntInRange(0, len(buf) - 1):]
    elif cut == 2:
        buf += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 64))
    return bytes(buf)


def TestOneInput(data: bytes) -> None:  # atheris calls it by this name
    if len(data) < 2:
        return
    load, base, keys = SEEDS[data[0] % len(SEEDS)]
    if data[1] & 1:
        raw = _recipe(atheris.FuzzedDataProvider(data[2:]), base)
    else:
        raw = data[2:]
    try:
        obj = load(raw)
    except FormatError:
        return
    out = obj.to_bytes()
    assert out == raw and len(out) <= len(raw)
    if isinstance(obj, spark.CountMinSketch):
        for k in keys:
            obj.estimate(k)
        obj.estimate_many(keys)
    else:
        for k in keys:
            _ = k in obj
        obj.contains_many(keys)
    c = obj.copy()
    c.add(keys[0])
    c.merge(obj.copy())
    assert load(out).to_bytes() == out


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
