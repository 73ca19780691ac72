"""Hostile bytes for the JVM formats (bloomkit.spark, bloomkit.guava), in the
style of test_hostile.py: every truncation and a trailing byte, every bit of
the header flipped, every header byte x 256 values, extreme values in every
integer field.  Allowed outcomes: FormatError naming the reason, or a valid
object no larger than the input that survives queries (every key type), an
add, a copy, a merge with itself and a byte-exact round trip."""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from bloomkit import FormatError, guava, spark

INTS = [0, 1, 2**31 - 1, 2**31, 2**32 - 1]


def _spark_v1() -> bytes:
    f = spark.BloomFilter(50, 0.05, version=1)
    f.add_many([1, "two", b"three"])
    return f.to_bytes()


def _spark_v2() -> bytes:
    f = spark.BloomFilter(50, 0.05, seed=-7)
    f.add_many([1, "two", b"three"])
    return f.to_bytes()


def _cms() -> bytes:
    s = spark.CountMinSketch.with_size(3, 5, seed=1)
    s.add_many([1, "two", b"three"])
    return s.to_bytes()


def _guava(funnel: str) -> Callable[[], bytes]:
    def make() -> bytes:
        f = guava.BloomFilter(40, 0.05, funnel=funnel)
        f.add_many([1, 2] if funnel == "long" else ["a", "b"])
        return f.to_bytes()
    return make


# name: (make valid bytes, load, header length, integer fields (offset, struct format))
CASES: dict[str, tuple[Callable[[], bytes], Callable[[bytes], Any], int, list[tuple[int, str]]]] = {
    "spark-v1": (_spark_v1, spark.BloomFilter.from_bytes, 12, [(0, ">i"), (4, ">i"), (8, ">i")]),
    "spark-v2": (_spark_v2, spark.BloomFilter.from_bytes, 16,
                 [(0, ">i"), (4, ">i"), (8, ">i"), (12, ">i")]),
    "spark-cms": (_cms, spark.CountMinSketch.from_bytes, 20,
                  [(0, ">i"), (4, ">q"), (12, ">i"), (16, ">i")]),
    "guava-long": (_guava("long"), lambda b: guava.BloomFilter.from_bytes(b, "long"), 6,
                   [(0, ">b"), (1, ">B"), (2, ">i")]),
    "guava-string": (_guava("string"), lambda b: guava.BloomFilter.from_bytes(b, "string"), 6,
                     [(0, ">b"), (1, ">B"), (2, ">i")]),
}


def _exercise(obj: Any, size: int, load: Callable[[bytes], Any]) -> None:
    data = obj.to_bytes()
    assert len(data) <= size
    if isinstance(obj, spark.CountMinSketch):
        for key in (12345, "probe", b"\x80"):
            assert isinstance(obj.estimate(key), int)  # hostile counters may be any long
        c = obj.copy()
        c.add("new key")
        c.merge(obj.copy())
    else:
        keys: list[Any] = [12345, "probe", b"\x80"]
        if isinstance(obj, guava.BloomFilter):
            keys = {"long": [12345, -1], "string": ["probe", ""], "bytes": [b"\x80"]}[obj.funnel]
        for key in keys:
            _ = key in obj
        obj.contains_many(keys)
        c = obj.copy()
        c.add(keys[0])
        c.merge(obj.copy())
    assert load(data).to_bytes() == data


def _attempt(data: bytes, load: Callable[[bytes], Any]) -> None:
    try:
        obj = load(data)
    except FormatError as exc:
        assert str(exc)  # names a reason
        return
    _exercise(obj, len(data), load)


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_bytes_load_and_survive(name: str) -> None:
    make, load, _, _ = CASES[name]
    data = make()
    _exercise(load(data), len(data), load)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_truncation_and_a_trailing_byte_is_refused(name: str) -> None:
    make, load, _, _ = CASES[name]
    data = make()
    for cut in range(len(data)):
        with pytest.raises(FormatError, match=r"truncated|version|strategy|out of range"):
            load(data[:cut])
    with pytest.raises(FormatError, match="trailing bytes"):
        load(data + b"\x00")


@pytest.mark.parametrize("name", sorted(CASES))
def test_header_bit_flips(name: str) -> None:
    make, load, header_len, _ = CASES[name]
    data = make()
    for i in range(header_len):
        for bit in range(8):
            b = bytearray(data)
            b[i] ^= 1 << bit
            _attempt(bytes(b), load)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_header_byte_every_value(name: str) -> None:
    make, load, header_len, _ = CASES[name]
    data = make()
    for i in range(header_len):
        for v in range(256):
            b = bytearray(data)
            b[i] = v
            _attempt(bytes(b), load)


@pytest.mark.parametrize("name", sorted(CASES))
def test_extreme_integer_fields(name: str) -> None:
    make, load, _, fields = CASES[name]
    data = make()
    for off, fmt in fields:
        size = struct.calcsize(fmt)
        for v in [*INTS, 2**63 - 1, 2**64 - 1]:
            b = bytearray(data)
            b[off:off + size] = (v % 2 ** (8 * size)).to_bytes(size, "big")
            _attempt(bytes(b), load)


def test_reasons_are_named() -> None:
    v2 = _spark_v2()
    with pytest.raises(FormatError, match="version"):
        spark.BloomFilter.from_bytes(b"\x00\x00\x00\x03" + v2[4:])
    with pytest.raises(FormatError, match="number of hash functions"):
        spark.BloomFilter.from_bytes(v2[:4] + b"\x00\x00\x00\x00" + v2[8:])
    with pytest.raises(FormatError, match="truncated bit array"):
        spark.BloomFilter.from_bytes(v2[:12] + b"\x7f\xff\xff\xff" + v2[16:])
    with pytest.raises(FormatError, match="strategy"):
        guava.BloomFilter.from_bytes(b"\x02" + _guava("long")()[1:])
    cms = _cms()
    with pytest.raises(FormatError, match="depth or width"):
        spark.CountMinSketch.from_bytes(cms[:12] + b"\x00\x00\x00\x00" + cms[16:])
    with pytest.raises(FormatError, match="truncated table"):
        spark.CountMinSketch.from_bytes(cms[:16] + b"\x7f\xff\xff\xff" + cms[20:])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc/self/statm")
def test_a_huge_declared_size_allocates_nothing() -> None:
    # 2^31-1 words (16 GiB) declared in 16 bytes: refused before any allocation
    # (the parser compares the length first); run under an address-space limit
    # 512 MiB above the process's, so that an allocation would fail loudly.
    code = """
import resource, sys
from bloomkit import FormatError, spark, guava
# what is mapped now (ASan's shadow included) plus 512 MiB: 16 GiB cannot fit
vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20), resource.RLIM_INFINITY))
big = bytes.fromhex("7fffffff")
cases = [
    (spark.BloomFilter.from_bytes, bytes.fromhex("00000002" "00000003" "00000000") + big),
    (lambda b: guava.BloomFilter.from_bytes(b, "long"), bytes.fromhex("0103") + big),
    (spark.CountMinSketch.from_bytes, bytes.fromhex("00000001") + bytes(8) + big + big),
]
for load, data in cases:
    try:
        load(data)
    except FormatError:
        pass
    else:
        sys.exit(1)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
