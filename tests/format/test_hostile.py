"""Hostile input for every kind that has a golden file: R12 truncations and
trailing bytes, R13 single-bit flips, R14 every header byte x 256 values,
R15 extreme integer and float fields, each through loads() (checksummed)
and through the in-place loader open() uses (checksum NOT read), which must
be memory-safe on its own.  Outcome allowed: a clean error, or a valid
object of bounded size that survives queries, an add, a copy and a
serialization round trip."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pytest
from _manifest import data_file, decode, load_kwargs, load_manifest, manifests

import bloomkit
import kind_list
from bloomkit import FormatError, _descriptor

CASES = manifests()
CLEAN = (FormatError, ValueError, TypeError)

INTS = [0, 1, 2**31 - 1, 2**32, 2**63, 2**64 - 1]
FLOATS = [math.nan, math.inf, -math.inf, -0.0, 5e-324]
# The container's integer fields (offset, struct format); docs/FORMAT.md.
CONTAINER_FIELDS = [(8, "<H"), (10, "<H"), (12, "<H"), (14, "<H"), (16, "<H"), (18, "<H"),
                    (20, "<I"), (24, "<Q"), (32, "<Q"), (48, "<I"), (52, "<I"), (56, "<Q")]


def _static(cls: type[Any]) -> bool:
    """A static kind (its descriptor says so): built once, no add."""
    desc = _descriptor.of(cls)
    return desc is not None and desc.static


def reseal(data: bytes | bytearray) -> bytes:
    """Recompute the checksum whatever the header says (docs/FORMAT.md)."""
    b = bytearray(data)
    header_len = min(max(struct.unpack_from("<I", b, 20)[0], 64), len(b))
    head = bytearray(b[:header_len])
    struct.pack_into("<Q", head, 40, 0)
    head[14] &= 0xFE
    seed = bloomkit._core.xxh3_64(bytes(head))
    struct.pack_into("<Q", b, 40, bloomkit._core.xxh3_64(bytes(b[header_len:]), seed))
    return bytes(b)


def exercise(obj: Any, size: int, kw: dict[str, Any]) -> None:
    """What every structure must survive after a successful load."""
    assert len(obj.to_bytes()) <= size  # bounded by the input
    if hasattr(type(obj), "__contains__"):
        _ = 12345 in obj
        _ = "probe" in obj
    c = obj.copy() if hasattr(obj, "copy") else bloomkit.loads(obj.to_bytes(), **kw)
    if hasattr(c, "add") and not _static(type(c)):  # static: no add
        try:
            c.add("new key")
        except bloomkit.CapacityError:
            pass
    again = bloomkit.loads(obj.to_bytes(), **kw)
    assert again.to_bytes() == obj.to_bytes()


def attempt(data: bytes, kw: dict[str, Any], mapped: bool) -> None:
    """loads() (checksum on), and the unchecksummed in-place path of open()."""
    try:
        obj = bloomkit.loads(data, **kw)
    except CLEAN:
        pass
    else:
        exercise(obj, len(data), kw)
    if not mapped:
        return
    header = None
    try:
        header = bloomkit._core.peek_header(data)
    except CLEAN:
        return
    cls = bloomkit.persist.kinds.KINDS.get(header["kind"])
    if cls is None:
        return
    buf = bytearray(data)
    try:
        obj = cls._from_buffer(buf, kw.get("secret"), writable=True, allow_dirty=True)
    except CLEAN:
        return
    try:
        if hasattr(type(obj), "__contains__"):
            _ = 12345 in obj
        if hasattr(obj, "add") and not _static(cls):
            obj.add("x")
        obj._seal()
    except bloomkit.CapacityError:
        pass
    finally:
        obj._detach()


@pytest.fixture(params=CASES, ids=[p.stem for p in CASES])
def golden(request: pytest.FixtureRequest) -> tuple[bytes, dict[str, Any]]:
    path: Path = request.param
    m = load_manifest(path)
    return data_file(path, m).read_bytes(), load_kwargs(m)


class TruncationTests:
    def test_every_truncation_and_trailing_bytes(self, golden: tuple[bytes, dict[str, Any]]
                                                 ) -> None:
        data, kw = golden
        for n in range(len(data)):
            with pytest.raises(FormatError):
                bloomkit.loads(data[:n], **kw)
        for extra in range(1, 17):
            with pytest.raises(FormatError):
                bloomkit.loads(data + b"\x00" * extra, **kw)
            with pytest.raises(FormatError):
                bloomkit.loads(data + b"\xff" * extra, **kw)


class BitFlipTests:
    def test_every_single_bit_flip(self, golden: tuple[bytes, dict[str, Any]]) -> None:
        data, kw = golden
        buf = bytearray(data)
        for bit in range(min(len(data) * 8, 32768)):
            buf[bit // 8] ^= 1 << (bit % 8)
            try:
                with pytest.raises(FormatError):
                    bloomkit.loads(buf, **kw)
            finally:
                buf[bit // 8] ^= 1 << (bit % 8)


class HeaderByteTests:
    def test_every_header_byte_every_value(self, golden: tuple[bytes, dict[str, Any]]) -> None:
        data, kw = golden
        header_len = struct.unpack_from("<I", data, 20)[0]
        for off in range(header_len):
            if 40 <= off < 48:
                continue  # the checksum itself: recomputed below anyway
            buf = bytearray(data)
            for value in range(256):
                buf[off] = value
                attempt(reseal(buf), kw, mapped=off >= 8)


class ExtremeFieldTests:
    def test_integer_and_float_fields(self, golden: tuple[bytes, dict[str, Any]]) -> None:
        data, kw = golden
        header_len = struct.unpack_from("<I", data, 20)[0]
        fields = list(CONTAINER_FIELDS)
        # the kind's parameters: every aligned u32 and u64 (each kind's page, "File layout")
        fields += [(off, "<I") for off in range(64, header_len, 4)]
        fields += [(off, "<Q") for off in range(64, header_len, 8)]
        # and every parameter at its own offset and width, as its descriptor lays it out
        desc = _descriptor.BY_ID.get(struct.unpack_from("<H", data, 12)[0])
        assert desc is not None
        # (a signed field as its unsigned twin: the same bytes, every bit pattern)
        params = [(64 + off, "<" + f.upper()) for _, off, _, f in desc.param_layout
                  if f in "HIQq"]
        fields += params
        for off, fmt in fields:
            width = struct.calcsize(fmt)
            for v in INTS:
                buf = bytearray(data)
                struct.pack_into(fmt, buf, off, v & ((1 << (8 * width)) - 1))
                attempt(reseal(buf), kw, mapped=True)
        floats = [64 + off for _, off, _, f in desc.param_layout if f == "d"]
        for off in [*range(64, header_len, 8), *floats]:
            for x in FLOATS:
                buf = bytearray(data)
                struct.pack_into("<d", buf, off, x)
                attempt(reseal(buf), kw, mapped=True)


def test_every_loadable_kind_has_golden_cases() -> None:
    """The sweep runs over the golden files: every kind a file can hold (the
    descriptors, the Parquet index included) must have one."""
    have = {load_manifest(p)["class"] for p in CASES}
    missing = [k.name for k in kind_list.loadable() if k.name not in have]
    assert missing == [], f"no golden file (tests/format/make_golden.py) for {missing}"


def test_decode_helper_is_sane() -> None:
    assert decode({"hex": "00ff"}) == b"\x00\xff"
