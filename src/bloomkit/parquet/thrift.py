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
varints are at most 10 bytes, and nesting of structs, lists and maps
together is at most ``MAX_DEPTH`` deep (400 nested lists raised
RecursionError, issue #34), so hostile bytes fail with
:class:`ThriftError` naming the offset.

Cost (R50): every decoded value costs a Python object, 8 to 60 times the
one to three bytes it took, so "linear in the input" alone let a 15 MB
footer of one list of 15 million empty structs cost 6.4 s and 1.07 GiB.
Two rules bound it: an empty struct or list decodes to one shared object
(no allocation per byte), and the decoder keeps an estimate of the bytes
of objects it made (``COST_*`` below), refusing past ``BUDGET_PER_BYTE``
(96) per input byte, about 2.5 times what honest footers cost.  Time stays linear in
the input (each element takes at least one byte).
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["MAX_DEPTH", "ThriftError", "decode_struct", "encode_bloom_header"]

# Parquet footers nest about 6 deep (FileMetaData > RowGroup > ColumnChunk >
# ColumnMetaData > Statistics); 64 leaves room for any real writer while
# keeping Python's recursion far from its limit.
MAX_DEPTH = 64

# Decoding cost, in bytes of the Python objects made (CPython 3.11 sizes,
# rounded up): a struct is a dict (200, plus 24 a field), a list 56 plus 8
# an element, a map entry a tuple (64), an int 32, a double 24, a binary
# 33 plus its length; empty structs and lists are shared (the 8 of the
# pointer).  Honest footers cost 22 to 32 bytes a byte (tracemalloc over
# pyarrow's and DuckDB's, with and without statistics and dictionaries),
# 29 to 43 by this model (which overestimates); a budget of 96 a byte
# admits them with room (tests/test_parquet_hostile.py measures the densest)
# and caps any footer at about 2.5 times what an honest one of its size
# costs.  (Only a schema-aware decoder that checks counts while decoding
# could do better; a list of 1-field structs costs a dict per 3 bytes.)
COST_STRUCT, COST_FIELD, COST_LIST, COST_ELEM, COST_ENTRY = 200, 24, 56, 8, 64
COST_INT, COST_DOUBLE, COST_BINARY = 32, 24, 33
BUDGET_PER_BYTE = 96

# Compact-protocol type ids (field headers; list elements use the same ids,
# with 1 or 2 for bool).
T_TRUE, T_FALSE, T_I8, T_I16, T_I32, T_I64, T_DOUBLE = 1, 2, 3, 4, 5, 6, 7
T_BINARY, T_LIST, T_SET, T_MAP, T_STRUCT, T_UUID = 8, 9, 10, 11, 12, 13

_INT_BITS = {T_I16: 16, T_I32: 32, T_I64: 64}
_DOUBLE = struct.Struct("<d")


class ThriftError(ValueError):
    """Malformed compact-protocol bytes (the message says what and where)."""


# Shared results for empty containers: the callers only read what they get.
_EMPTY_STRUCT: dict[int, Any] = {}
_EMPTY_LIST: list[Any] = []


class _Reader:
    __slots__ = ("budget", "buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.budget = BUDGET_PER_BYTE * (self.end - pos) + 4096  # bytes of objects left (R50)

    def spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise self.fail(f"more values than {self.end} bytes of Thrift can honestly hold "
                            f"(decoding would make over {BUDGET_PER_BYTE} bytes of objects a byte)")

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
            self.budget -= COST_INT
            return self.zigzag(bits)
        if t == T_DOUBLE:
            self.budget -= COST_DOUBLE
            return _DOUBLE.unpack(self.take(8))[0]
        if t == T_BINARY:
            raw = self.take(self.varint())
            self.budget -= COST_BINARY + len(raw)
            return raw
        if t in (T_LIST, T_SET):
            return self.list_(depth + 1)
        if t == T_MAP:
            return self.map_(depth + 1)
        if t == T_STRUCT:
            return self.struct_(depth + 1)
        if t == T_UUID:
            return self.take(16)
        raise self.fail(f"unknown Thrift type id {t}")

    def elem(self, t: int, depth: int) -> Any:
        if t in (T_TRUE, T_FALSE):  # list elements: one byte, 1 is true
            return self.byte() == 1
        return self.value(t, depth)

    def nest(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(f"structs, lists and maps nested deeper than {MAX_DEPTH}")

    def list_(self, depth: int) -> list[Any]:
        self.nest(depth)
        head = self.byte()
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n = self.varint()
        # Every element takes at least one byte: no list can be longer than
        # what remains (this bounds the allocation by the input size).
        if n > self.end - self.pos:
            raise self.fail(f"list of {n} elements runs past the end of the data")
        if n == 0:
            return _EMPTY_LIST
        self.spend(COST_LIST + COST_ELEM * n)
        return [self.elem(et, depth) for _ in range(n)]

    def map_(self, depth: int) -> list[tuple[Any, Any]]:
        self.nest(depth)
        n = self.varint()
        if n == 0:
            return _EMPTY_LIST
        kv = self.byte()
        if 2 * n > self.end - self.pos:
            raise self.fail(f"map of {n} entries runs past the end of the data")
        self.spend(COST_LIST + (COST_ELEM + COST_ENTRY) * n)
        kt, vt = kv >> 4, kv & 0x0F
        return [(self.elem(kt, depth), self.elem(vt, depth)) for _ in range(n)]

    def struct_(self, depth: int) -> dict[int, Any]:
        self.nest(depth)
        if self.pos < self.end and self.buf[self.pos] == 0:
            self.pos += 1
            return _EMPTY_STRUCT
        self.spend(COST_STRUCT)
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            self.spend(COST_FIELD)
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
