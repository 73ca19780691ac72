"""A small, defensive reader of the Thrift compact protocol (for Parquet footers).

Written from the Thrift compact protocol specification
(thrift/doc/specs/thrift-compact-protocol.md).  It decodes any struct into a
``dict[field_id, value]`` without a schema: integers as ``int`` (zigzag
varints, range-checked per width), doubles as ``float``, binary and strings
as ``bytes``, lists and sets as ``list``, maps as ``list`` of pairs, structs
and unions as ``dict``, booleans as ``bool``.  The callers (bloomkit's
Parquet footer reader) then pick the few fields they need.

Everything is bounded by the input: a list, map or binary cannot declare
more elements or bytes than remain (each element takes at least one byte),
varints are at most 10 bytes, and nesting is at most ``MAX_DEPTH`` deep, so
hostile bytes cost at most time and memory linear in their own size and
fail with :class:`ThriftError` naming the offset.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["MAX_DEPTH", "ThriftError", "decode_struct", "encode_bloom_header"]

# Parquet footers nest about 6 deep (FileMetaData > RowGroup > ColumnChunk >
# ColumnMetaData > Statistics); 64 leaves room for any real writer while
# keeping Python's recursion far from its limit.
MAX_DEPTH = 64

# Compact-protocol type ids (field headers; list elements use the same ids,
# with 1 or 2 for bool).
T_TRUE, T_FALSE, T_I8, T_I16, T_I32, T_I64, T_DOUBLE = 1, 2, 3, 4, 5, 6, 7
T_BINARY, T_LIST, T_SET, T_MAP, T_STRUCT, T_UUID = 8, 9, 10, 11, 12, 13

_INT_BITS = {T_I16: 16, T_I32: 32, T_I64: 64}
_DOUBLE = struct.Struct("<d")


class ThriftError(ValueError):
    """Malformed compact-protocol bytes (the message says what and where)."""


class _Reader:
    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def fail(self, what: str) -> ThriftError:
        return ThriftError(f"{what} at byte {self.pos}")

    def byte(self) -> int:
        if self.pos >= self.end:
            raise self.fail("truncated Thrift data")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = shift = 0
        for _ in range(10):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                if result >> 64:
                    raise self.fail("varint wider than 64 bits")
                return result
            shift += 7
        raise self.fail("varint longer than 10 bytes")

    def zigzag(self, bits: int) -> int:
        u = self.varint()
        v = (u >> 1) ^ -(u & 1)
        if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
            raise self.fail(f"integer out of range for i{bits}")
        return v

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.end - self.pos:
            raise self.fail(f"length {n} runs past the end of the data")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def value(self, t: int, depth: int) -> Any:
        if t == T_TRUE:
            return True
        if t == T_FALSE:
            return False
        if t == T_I8:
            b = self.byte()
            return b - 256 if b > 127 else b
        bits = _INT_BITS.get(t)
        if bits is not None:
            return self.zigzag(bits)
        if t == T_DOUBLE:
            return _DOUBLE.unpack(self.take(8))[0]
        if t == T_BINARY:
            return self.take(self.varint())
        if t in (T_LIST, T_SET):
            return self.list_(depth)
        if t == T_MAP:
            return self.map_(depth)
        if t == T_STRUCT:
            return self.struct_(depth + 1)
        if t == T_UUID:
            return self.take(16)
        raise self.fail(f"unknown Thrift type id {t}")

    def elem(self, t: int, depth: int) -> Any:
        if t in (T_TRUE, T_FALSE):  # list elements: one byte, 1 is true
            return self.byte() == 1
        return self.value(t, depth)

    def list_(self, depth: int) -> list[Any]:
        head = self.byte()
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n = self.varint()
        # Every element takes at least one byte: no list can be longer than
        # what remains (this bounds the allocation by the input size).
        if n > self.end - self.pos:
            raise self.fail(f"list of {n} elements runs past the end of the data")
        return [self.elem(et, depth) for _ in range(n)]

    def map_(self, depth: int) -> list[tuple[Any, Any]]:
        n = self.varint()
        if n == 0:
            return []
        kv = self.byte()
        if 2 * n > self.end - self.pos:
            raise self.fail(f"map of {n} entries runs past the end of the data")
        kt, vt = kv >> 4, kv & 0x0F
        return [(self.elem(kt, depth), self.elem(vt, depth)) for _ in range(n)]

    def struct_(self, depth: int) -> dict[int, Any]:
        if depth > MAX_DEPTH:
            raise self.fail(f"structs nested deeper than {MAX_DEPTH}")
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            t, delta = head & 0x0F, head >> 4
            fid = last + delta if delta else self.zigzag(16)
            last = fid
            fields[fid] = self.value(t, depth)


def decode_struct(buf: bytes, pos: int = 0) -> tuple[dict[int, Any], int]:
    """Decode one struct at ``buf[pos:]``; return it and the offset after it."""
    r = _Reader(buf, pos)
    out = r.struct_(1)
    return out, r.pos


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_bloom_header(num_bytes: int) -> bytes:
    """A BloomFilterHeader {1: numBytes, 2: BLOCK, 3: XXHASH, 4: UNCOMPRESSED}."""
    zz = (num_bytes << 1) ^ (num_bytes >> 63)
    # Field 1 i32 (delta 1, type 5); fields 2-4 structs (delta 1, type 12)
    # each a union whose field 1 is an empty struct: 0x1C 0x00 then stop.
    union = b"\x1c\x00\x00"
    return b"\x15" + _varint(zz) + b"\x1c" + union + b"\x1c" + union + b"\x1c" + union + b"\x00"
