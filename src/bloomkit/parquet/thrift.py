"""A small, defensive reader of the Thrift compact protocol (for Parquet footers).

Written from the Thrift compact protocol specification
(thrift/doc/specs/thrift-compact-protocol.md).  Two decoders share the
primitives (varints, zigzag, bounds):

- :class:`Reader` with :class:`Spec` / :class:`Union`, what bloomkit's
  readers use (the footer, Bloom filter headers): the reader declares the
  fields it needs; those are built into one tuple a struct, every other
  field is walked over without making an object (R50).
- :func:`decode_struct`, a generic decoder of any struct into
  ``dict[field_id, value]`` (integers as ``int``, doubles as ``float``,
  binary as ``bytes``, lists and sets as ``list``, maps as ``list`` of
  pairs, structs and unions as ``dict``), for tools and tests; it keeps
  everything, so it spends from a budget (below).

Everything is bounded by the input: a list, map or binary cannot declare
more elements or bytes than remain (each element takes at least one byte,
a double eight), varints are at most 10 bytes, and nesting of structs,
lists and maps together is at most ``MAX_DEPTH`` deep (400 nested lists
raised RecursionError, issue #34), so hostile bytes fail with
:class:`ThriftError` naming the offset.

Cost (R50): every decoded value costs a Python object, 8 to 60 times the
one to three bytes it took, so "linear in the input" alone let a 15 MB
footer of one list of 15 million empty structs cost 6.4 s and 1.07 GiB.
The schema-aware Reader makes objects only for declared fields, and its
callers check big lists element by element (bloomkit.parquet.footer): a
hostile footer is refused having cost the bytes read (0.97x measured).
The generic decoder shares empty structs and lists and keeps an estimate
of the bytes of objects it made (``COST_*`` below), refusing past
``BUDGET_PER_BYTE`` (96) per input byte.  Time stays linear in the input.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["MAX_DEPTH", "Reader", "Spec", "ThriftError", "Union", "decode_struct",
           "encode_bloom_header"]

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


class _TypedReader(_Reader):
    """decode_struct(typed=True): each value with its wire type, the shape a
    tool needs to re-encode a struct it edited (tests/pq_hostile_helpers.py)."""

    __slots__ = ()

    def list_(self, depth: int) -> Any:
        et = self.buf[self.pos] & 0x0F if self.pos < self.end else 0
        items = super().list_(depth)
        self.spend(COST_ENTRY)
        return (et, list(items))  # a copy: the shared empty list stays empty

    def map_(self, depth: int) -> Any:
        head = _Reader(self.buf, self.pos)
        kv = head.byte() if head.varint() else 0
        items = super().map_(depth)
        self.spend(COST_ENTRY)
        return (kv >> 4, kv & 0x0F, list(items))

    def struct_(self, depth: int) -> dict[int, Any]:
        self.nest(depth)
        self.spend(COST_STRUCT)
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            self.spend(COST_FIELD + COST_ENTRY)
            t, delta = head & 0x0F, head >> 4
            fid = last + delta if delta else self.zigzag(16)
            last = fid
            fields[fid] = (T_TRUE if t == T_FALSE else t, self.value(t, depth))


def decode_struct(buf: bytes, pos: int = 0, *, typed: bool = False
                  ) -> tuple[dict[int, Any], int]:
    """Decode one struct at ``buf[pos:]``; return it and the offset after it.
    With ``typed``, a struct is ``{field id: (wire type, value)}`` (bools as
    T_TRUE), a list or set ``(element type, [values])`` and a map ``(key
    type, value type, [(key, value), ...])``: what re-encoding needs."""
    r = (_TypedReader if typed else _Reader)(buf, pos)
    out = r.struct_(1)
    return out, r.pos


# ---- the schema-aware decoder: what bloomkit's readers use (R50) ---------
#
# A reader declares, per struct, the fields it needs (Spec, Union); the
# decoder builds those into one tuple a struct and walks over every other
# field without making an object: skipping a binary is one bounds check,
# a list of fixed-width elements one, a nested struct or list a loop over
# its bytes.  The cost of a decoded struct is a tuple of its declared slots
# (40 + 8 a slot bytes), or nothing when none of them is present (the
# Spec's shared ``empty``).  Every count is checked against the bytes left
# before anything is read: a list of n elements of type t needs at least
# n * _MIN_BYTES[t] bytes (an empty struct or list still takes one).

KIND_INT, KIND_BIN, KIND_BOOL, KIND_HERE, KIND_LIST_AT = 0, 1, 2, 3, 4
# The fewest bytes one list (or map) element of each wire type takes.
_MIN_BYTES = {T_TRUE: 1, T_FALSE: 1, T_I8: 1, T_I16: 1, T_I32: 1, T_I64: 1, T_DOUBLE: 8,
              T_BINARY: 1, T_LIST: 1, T_SET: 1, T_MAP: 1, T_STRUCT: 1, T_UUID: 16}
# List elements of a fixed size (bools are one byte each inside a list).
_FIXED_ELEM = {T_TRUE: 1, T_FALSE: 1, T_I8: 1, T_DOUBLE: 8, T_UUID: 16}
# Struct fields of a fixed size (a bool field's value is in its header).
_FIXED_FIELD = {T_TRUE: 0, T_FALSE: 0, T_I8: 1, T_DOUBLE: 8, T_UUID: 16}
_TYPE_NAMES = {T_TRUE: "bool", T_FALSE: "bool", T_I8: "i8", T_I16: "i16", T_I32: "i32",
               T_I64: "i64", T_DOUBLE: "double", T_BINARY: "binary", T_LIST: "list",
               T_SET: "set", T_MAP: "map", T_STRUCT: "struct", T_UUID: "uuid"}


class Spec:
    """The fields of one Thrift struct that a reader needs.

    ``fields`` maps a field id to ``(name, kind)``; a kind is KIND_INT (any
    integer wire type, range-checked for its width), KIND_BIN (binary or
    string: bytes), KIND_BOOL, KIND_HERE (the value is skipped; the slot
    says True), KIND_LIST_AT (a list, skipped; the slot holds the offset of
    its header, for the caller to walk it element by element with
    :meth:`Reader.list_header`), a nested :class:`Spec` or :class:`Union`,
    or ``[kind]`` (a list whose elements are decoded by ``kind``).  A struct
    decodes to a tuple with one slot per declared field, in declaration
    order, ``None`` where absent; a field of another wire type than its kind
    is a :class:`ThriftError` naming it."""

    __slots__ = ("empty", "fields", "n", "name", "slots")

    def __init__(self, name: str, fields: dict[int, tuple[str, Any]]) -> None:
        self.name = name
        self.fields = fields
        self.slots = {fid: (i, kind) for i, (fid, (_, kind)) in enumerate(fields.items())}
        self.n = len(fields)
        self.empty: tuple[Any, ...] = (None,) * self.n


class Union:
    """A Thrift union (a struct meant to have exactly one field set).
    Decodes to ``(field id, wire type, body, fields set)`` of its first
    field: ``body`` is that field decoded by ``members[field id]`` when the
    member is declared and a struct, else None (skipped).  An empty union is
    ``(0, 0, None, 0)``; more than one field set shows as a count above 1."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: dict[int, Spec]) -> None:
        self.name = name
        self.members = members


_EMPTY_UNION = (0, 0, None, 0)


class Reader(_Reader):
    """Schema-aware decoding of compact-protocol bytes (see Spec).  Depths
    count structs, lists and maps together, as in the generic decoder."""

    __slots__ = ()

    def advance(self, n: int) -> None:
        if n > self.end - self.pos:
            raise self.fail(f"length {n} runs past the end of the data")
        self.pos += n

    def skip_varint(self) -> None:
        buf, pos, end = self.buf, self.pos, self.end
        for _ in range(10):
            if pos >= end:
                self.pos = pos
                raise self.fail("truncated Thrift data")
            b = buf[pos]
            pos += 1
            if b < 0x80:
                self.pos = pos
                return
        self.pos = pos
        raise self.fail("varint longer than 10 bytes")

    def mismatch(self, where: str, fid: int, t: int, want: str) -> ThriftError:
        got = _TYPE_NAMES.get(t, f"type {t}")
        return self.fail(f"{where} field {fid} is a {got}, not {want}")

    def list_header(self, depth: int) -> tuple[int, int]:
        """(element count, element type) of the list starting here, the
        count checked against the bytes left."""
        self.nest(depth)
        head = self.byte()
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n = self.varint()
        if n:
            least = _MIN_BYTES.get(et)
            if least is None:
                raise self.fail(f"unknown Thrift type id {et}")
            if n * least > self.end - self.pos:
                raise self.fail(f"list of {n} elements runs past the end of the data")
        return n, et

    def skip(self, t: int, depth: int) -> None:
        """Walk over one field value of wire type ``t`` inside a struct at
        ``depth`` without making any object."""
        fixed = _FIXED_FIELD.get(t)
        if fixed is not None:
            self.advance(fixed)
        elif t in _INT_BITS:
            self.skip_varint()
        elif t == T_BINARY:
            self.advance(self.varint())
        elif t == T_STRUCT:
            self.nest(depth + 1)
            while True:
                head = self.byte()
                if not head:
                    return
                if not head >> 4:
                    self.skip_varint()  # a long-form field id
                self.skip(head & 0x0F, depth + 1)
        elif t in (T_LIST, T_SET):
            n, et = self.list_header(depth + 1)
            if not n:
                return
            size = _FIXED_ELEM.get(et)
            if size is not None:
                self.advance(n * size)
            elif et in _INT_BITS:
                for _ in range(n):
                    self.skip_varint()
            else:
                for _ in range(n):
                    self.skip(et, depth + 1)
        elif t == T_MAP:
            self.nest(depth + 1)
            n = self.varint()
            if not n:
                return
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            if kt not in _MIN_BYTES or vt not in _MIN_BYTES:
                raise self.fail(f"unknown Thrift type id in map header {kv:#x}")
            if n * (_MIN_BYTES[kt] + _MIN_BYTES[vt]) > self.end - self.pos:
                raise self.fail(f"map of {n} entries runs past the end of the data")
            for _ in range(n):
                for et in (kt, vt):
                    size = _FIXED_ELEM.get(et)
                    if size is not None:
                        self.advance(size)
                    else:
                        self.skip(et, depth + 1)
        else:
            raise self.fail(f"unknown Thrift type id {t}")

    def read(self, kind: Any, t: int, depth: int, where: str, fid: int) -> Any:
        """The value of a declared field of wire type ``t`` (see Spec)."""
        if kind == KIND_INT:
            if t == T_I8:
                b = self.byte()
                return b - 256 if b > 127 else b
            bits = _INT_BITS.get(t)
            if bits is None:
                raise self.mismatch(where, fid, t, "an integer")
            return self.zigzag(bits)
        if kind == KIND_BIN:
            if t != T_BINARY:
                raise self.mismatch(where, fid, t, "a binary")
            return self.take(self.varint())
        if isinstance(kind, Spec):
            if t != T_STRUCT:
                raise self.mismatch(where, fid, t, f"a {kind.name} struct")
            return self.struct(kind, depth + 1)
        if isinstance(kind, Union):
            if t != T_STRUCT:
                raise self.mismatch(where, fid, t, f"a {kind.name} union")
            return self.union(kind, depth + 1)
        if kind == KIND_BOOL:
            if t not in (T_TRUE, T_FALSE):
                raise self.mismatch(where, fid, t, "a bool")
            return t == T_TRUE
        if kind == KIND_HERE:
            self.skip(t, depth)
            return True
        if t not in (T_LIST, T_SET):
            raise self.mismatch(where, fid, t, "a list")
        if kind == KIND_LIST_AT:
            at = self.pos
            self.skip(t, depth)
            return at
        return self.list_of(kind[0], depth + 1, where, fid)

    def list_of(self, kind: Any, depth: int, where: str, fid: int) -> list[Any]:
        n, et = self.list_header(depth)
        if not n:
            return _EMPTY_LIST
        if isinstance(kind, Spec):
            if et != T_STRUCT:
                raise self.mismatch(where, fid, et, f"a list of {kind.name}")
            return [self.struct(kind, depth + 1) for _ in range(n)]
        if kind == KIND_BIN:
            if et != T_BINARY:
                raise self.mismatch(where, fid, et, "a list of binary")
            return [self.take(self.varint()) for _ in range(n)]
        if kind == KIND_INT and et in _INT_BITS:
            bits = _INT_BITS[et]
            return [self.zigzag(bits) for _ in range(n)]
        raise self.mismatch(where, fid, et, "a list of the declared kind")

    def struct(self, spec: Spec, depth: int) -> tuple[Any, ...]:
        """The declared fields of the struct starting here (see Spec)."""
        self.nest(depth)
        slots = spec.slots
        out: list[Any] | None = None
        last = 0
        while True:
            head = self.byte()
            if not head:
                return spec.empty if out is None else tuple(out)
            t = head & 0x0F
            delta = head >> 4
            fid = last + delta if delta else self.zigzag(16)
            last = fid
            slot = slots.get(fid)
            if slot is None:
                self.skip(t, depth)
                continue
            if out is None:
                out = list(spec.empty)
            out[slot[0]] = self.read(slot[1], t, depth, spec.name, fid)

    def union(self, u: Union, depth: int) -> tuple[int, int, Any, int]:
        """(first field id, its wire type, its body, fields set) (see Union)."""
        self.nest(depth)
        first = ftype = count = last = 0
        body = None
        while True:
            head = self.byte()
            if not head:
                return (first, ftype, body, count) if count else _EMPTY_UNION
            t = head & 0x0F
            delta = head >> 4
            fid = last + delta if delta else self.zigzag(16)
            last = fid
            count += 1
            member = u.members.get(fid) if count == 1 else None
            if count == 1:
                first, ftype = fid, t
            if member is not None and t == T_STRUCT:
                body = self.struct(member, depth + 1)
            else:
                self.skip(t, depth)

    def fields(self, depth: int) -> Any:
        """Iterate over a struct's fields as (field id, wire type): the
        caller reads each value (``read``) or skips it (``skip``) before
        asking for the next.  For structs a reader walks by hand, such as
        a FileMetaData whose row groups are checked one at a time."""
        self.nest(depth)
        last = 0
        while True:
            head = self.byte()
            if not head:
                return
            t = head & 0x0F
            delta = head >> 4
            fid = last + delta if delta else self.zigzag(16)
            last = fid
            yield fid, t



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
