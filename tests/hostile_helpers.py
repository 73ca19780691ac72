"""Shared helpers for the hostile-input tests (R12-R15) of one container.

Each helper feeds mutated bytes to ``bloomkit.loads`` and accepts either a
clean error or a valid object that survives a re-serialization round trip
and whose size is bounded by the input.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from typing import Any

import bloomkit
from bloomkit import _core

CLEAN_ERRORS = (bloomkit.FormatError, bloomkit.IncompatibleFiltersError, ValueError, TypeError)

INT_VALUES = [0, 1, 2**31 - 1, 2**32, 2**63, 2**64 - 1]
FLOAT_VALUES = [math.nan, math.inf, -math.inf, -0.0, 5e-324]

# (offset, struct code) of every integer field of the fixed header.
HEADER_INT_FIELDS = [
    (8, "H"), (10, "H"), (12, "H"), (14, "H"), (16, "H"), (18, "H"), (20, "I"),
    (24, "Q"), (32, "Q"), (48, "I"), (52, "I"), (56, "Q"),
]

_MASK = {"H": 0xFFFF, "I": 0xFFFFFFFF, "Q": 0xFFFFFFFFFFFFFFFF}


def reseal(data: bytearray | bytes) -> bytes:
    """``data`` with its checksum recomputed (unchanged if the header does not parse)."""
    buf = bytearray(data)
    try:
        c = _core.checksum(bytes(buf))
    except bloomkit.FormatError:
        return bytes(buf)
    struct.pack_into("<Q", buf, 40, c)
    return bytes(buf)


def load_clean(data: bytes) -> Any:
    """Load ``data``: a clean error (returns None) or a valid, bounded object."""
    try:
        obj = bloomkit.loads(data)
    except CLEAN_ERRORS:
        return None
    assert obj.state_nbytes <= len(data)
    again = bloomkit.loads(obj.to_bytes())
    assert again == obj and type(again) is type(obj)
    "probe" in obj  # noqa: B015 - exercises the probes on the accepted state
    return obj


def mutate_fields(data: bytes, fields: Iterable[tuple[int, str]]) -> int:
    """R15: every field set to each extreme value, checksum recomputed.

    Returns how many mutations were accepted (as valid objects)."""
    accepted = 0
    for off, code in fields:
        values: list[Any] = FLOAT_VALUES if code == "d" else [v & _MASK[code] for v in INT_VALUES]
        for v in values:
            buf = bytearray(data)
            struct.pack_into("<" + code, buf, off, v)
            if load_clean(reseal(buf)) is not None:
                accepted += 1
    return accepted


def every_byte_value(data: bytes, start: int, stop: int) -> int:
    """R14: bytes [start, stop) set to all 256 values, checksum recomputed."""
    accepted = 0
    for i in range(start, stop):
        for v in range(256):
            if v == data[i]:
                continue
            buf = bytearray(data)
            buf[i] = v
            if load_clean(reseal(buf)) is not None:
                accepted += 1
    return accepted


def truncations_and_trailing(data: bytes) -> None:
    """R12: every truncation and 1..16 trailing bytes are clean errors."""
    for cut in range(len(data)):
        try:
            bloomkit.loads(data[:cut])
        except bloomkit.FormatError:
            continue
        raise AssertionError(f"truncation to {cut} bytes was accepted")
    for extra in range(1, 17):
        for fill in (b"\0", b"\xff"):
            try:
                bloomkit.loads(data + fill * extra)
            except bloomkit.FormatError:
                continue
            raise AssertionError(f"{extra} trailing bytes were accepted")


def bit_flips(data: bytes) -> None:
    """R13: every single-bit flip is a clean error with the checksum on."""
    for i in range(min(len(data) * 8, 32768)):
        bad = bytearray(data)
        bad[i // 8] ^= 1 << (i % 8)
        try:
            bloomkit.loads(bytes(bad))
        except bloomkit.FormatError:
            continue
        raise AssertionError(f"bit flip {i} was accepted")
