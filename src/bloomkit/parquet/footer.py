"""Reading the parts of a Parquet file that bloomkit.parquet needs.

A Parquet file is ``PAR1 <column chunks ...> <Bloom filters, page indexes>
<FileMetaData> <4-byte little-endian footer length> PAR1``.  We read the
last 8 bytes, then the footer (Thrift compact, decoded by
bloomkit.parquet.thrift), and keep only: the schema's leaf columns with their
physical and logical types, and per row group and column chunk its path,
type, statistics (min/max) and ``bloom_filter_offset`` /
``bloom_filter_length``.  A filter is then read on demand: its
BloomFilterHeader and bitset (:func:`read_bloom`).

Every read goes through :class:`CountingFile`, so callers can report the
bytes read.  Every inconsistency raises :class:`bloomkit.FormatError` with
the file (and the column where one is concerned) named; nothing is
allocated beyond what the file holds.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import IO, Any

from ..errors import ColumnNotFoundError, FormatError, UnsupportedFormatError
from .thrift import (
    KIND_BIN,
    KIND_BOOL,
    KIND_HERE,
    KIND_INT,
    KIND_LIST_AT,
    MAX_DEPTH,
    T_LIST,
    T_SET,
    T_STRUCT,
    Reader,
    Spec,
    ThriftError,
    Union,
)
from .values import PHYSICAL_TYPES, ColumnType

__all__ = ["ChunkMeta", "CountingFile", "Footer", "read_bloom", "read_footer"]

MAGIC = b"PAR1"
# The spec's fallback when bloom_filter_length is absent: read a guess of
# the header, parse it, then the bitset it declares.  A BloomFilterHeader is
# about 15 bytes; unknown extra fields could make it longer, so one retry
# with a larger guess.
_HEADER_GUESS = 64
_HEADER_MAX = 4096


def open_regular(path: str, what: str = "a Parquet file") -> Any:
    """``open(path, "rb")`` for a regular file only (R52): opened with
    O_NONBLOCK so that a FIFO named ``x.parquet`` in a lake does not block
    the open, then refused unless fstat says S_ISREG (a FIFO, socket, device
    or directory is a FormatError naming it).  The flag is cleared again
    before any read."""
    def refuse(mode: int) -> FormatError:
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        return FormatError(f"{path}: {kind}, not {what}")

    mode = os.stat(path).st_mode  # a socket cannot even be opened (ENXIO)
    if not stat.S_ISREG(mode):
        raise refuse(mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)  # again on what was opened: the name may have changed
        if not stat.S_ISREG(st.st_mode):
            raise refuse(st.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class CountingFile:
    """A file opened for positioned reads that counts the bytes it read."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._f: IO[bytes] = open_regular(self.path)  # closed by close() / __exit__
        self.size = os.fstat(self._f.fileno()).st_size
        self.bytes_read = 0

    def read_at(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise FormatError(f"{self.path}: read of {n} bytes at {offset} is past the end "
                              f"of the {self.size}-byte file")
        self._f.seek(offset)
        data = self._f.read(n)
        self.bytes_read += len(data)
        if len(data) != n:
            raise FormatError(f"{self.path}: file shrank while being read")
        return data

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ChunkMeta:
    """One column chunk: what may_contain and read_filter use."""

    row_group: int
    column: ColumnType
    num_values: int
    min_plain: bytes | None  # usable statistics (PLAIN, no length prefix)
    max_plain: bytes | None
    bloom_offset: int | None
    bloom_length: int | None


@dataclass
class Footer:
    path: str
    file_size: int
    footer_start: int  # offset of FileMetaData: filters lie before it
    num_rows: int
    columns: list[ColumnType]
    row_groups: list[list[ChunkMeta]] = field(default_factory=list)
    created_by: str | None = None

    def column_index(self, column: str | tuple[str, ...] | list[str]) -> int:
        """The leaf index of a column given as a dotted path or a tuple of names."""
        want = tuple(column) if not isinstance(column, str) else None
        for i, c in enumerate(self.columns):
            if (want is not None and c.path == want) or (want is None and c.name == column):
                return i
        if isinstance(column, str):  # a top-level name of a nested leaf, e.g. "a" for a.list.x
            hits = [i for i, c in enumerate(self.columns) if c.path and c.path[0] == column]
            if len(hits) == 1:
                return hits[0]
        names = ", ".join(repr(c.name) for c in self.columns[:20])
        raise ColumnNotFoundError(f"{self.path}: no column {column!r} (columns: {names})")


def _fmt(path: str, why: str, column: str | None = None) -> FormatError:
    col = f", column {column!r}" if column else ""
    return FormatError(f"{path}{col}: {why}")


# What the reader needs of each footer struct (parquet.thrift field ids).
# Every other field is walked over without making an object, and the big
# lists (the schema, the row groups, each row group's column chunks) are
# checked element by element as they are decoded, so a hostile footer is
# refused at its first bad element, before it costs memory (R50).
_STATS = Spec("Statistics", {1: ("max", KIND_BIN), 2: ("min", KIND_BIN),
                             5: ("max_value", KIND_BIN), 6: ("min_value", KIND_BIN)})
_COL_META = Spec("ColumnMetaData", {
    1: ("type", KIND_INT), 3: ("path_in_schema", KIND_LIST_AT), 5: ("num_values", KIND_INT),
    6: ("total_uncompressed_size", KIND_INT), 7: ("total_compressed_size", KIND_INT),
    9: ("data_page_offset", KIND_INT), 10: ("index_page_offset", KIND_INT),
    11: ("dictionary_page_offset", KIND_INT), 12: ("statistics", _STATS),
    14: ("bloom_filter_offset", KIND_INT), 15: ("bloom_filter_length", KIND_INT)})
(_M_TYPE, _M_PATH, _M_VALUES, _M_USIZE, _M_CSIZE, _M_DATA, _M_INDEX, _M_DICT, _M_STATS,
 _M_BLOOM_OFF, _M_BLOOM_LEN) = range(11)
_CHUNK = Spec("ColumnChunk", {3: ("meta_data", _COL_META), 8: ("crypto_metadata", KIND_HERE),
                              9: ("encrypted_column_metadata", KIND_HERE)})
_TIME = Spec("TimeType", {1: ("isAdjustedToUTC", KIND_BOOL), 2: ("unit", Union("TimeUnit", {}))})
_LOGICAL = Union("LogicalType", {
    5: Spec("DecimalType", {1: ("scale", KIND_INT), 2: ("precision", KIND_INT)}),
    7: _TIME, 8: _TIME,
    10: Spec("IntType", {1: ("bitWidth", KIND_INT), 2: ("isSigned", KIND_BOOL)})})
_SCHEMA_EL = Spec("SchemaElement", {
    1: ("type", KIND_INT), 2: ("type_length", KIND_INT), 4: ("name", KIND_BIN),
    5: ("num_children", KIND_INT), 6: ("converted_type", KIND_INT), 7: ("scale", KIND_INT),
    8: ("precision", KIND_INT), 10: ("logicalType", _LOGICAL)})
_COLUMN_ORDER = Union("ColumnOrder", {})
_BLOOM_UNION = {fid: Union(what, {}) for fid, what in
                ((2, "BloomFilterAlgorithm"), (3, "BloomFilterHash"),
                 (4, "BloomFilterCompression"))}
_BLOOM_HEADER = Spec("BloomFilterHeader", {1: ("numBytes", KIND_INT),
                                           2: ("algorithm", _BLOOM_UNION[2]),
                                           3: ("hash", _BLOOM_UNION[3]),
                                           4: ("compression", _BLOOM_UNION[4])})


class _OrdersUnknown(Exception):
    """Statistics met before the footer's column_orders said how to read them."""


def read_footer(f: CountingFile) -> Footer:
    """Read and check the footer of the open Parquet file ``f``."""
    path = f.path
    if f.size < 12:
        raise _fmt(path, f"not a Parquet file ({f.size} bytes, less than the 12 of an empty one)")
    if f.read_at(0, 4) != MAGIC:
        raise _fmt(path, "not a Parquet file (no PAR1 magic at the start)")
    tail = f.read_at(f.size - 8, 8)
    if tail[4:] == b"PARE":
        raise UnsupportedFormatError(f"{path}: encrypted Parquet footers are not supported")
    if tail[4:] != MAGIC:
        raise _fmt(path, "not a Parquet file (no PAR1 magic at the end)")
    flen = int.from_bytes(tail[:4], "little")
    if flen == 0 or flen > f.size - 12:
        raise _fmt(path, f"footer length {flen} does not fit the {f.size}-byte file")
    start = f.size - 8 - flen
    raw = f.read_at(start, flen)
    try:
        return _decode(path, f.size, start, raw)
    except ThriftError as e:
        raise _fmt(path, f"corrupt footer: {e}") from None
    except FormatError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise _fmt(path, f"corrupt footer: {e}") from None


def _decode(path: str, size: int, start: int, raw: bytes) -> Footer:
    """Walk FileMetaData field by field.  Writers put the schema (2) before
    the row groups (4) and those before column_orders (7), so the row groups
    are built as they are read, trusting the statistics' order; they are
    read again (once) only if column_orders then says an order is unknown,
    or when the schema comes after them."""
    r = Reader(raw)
    columns: list[ColumnType] | None = None
    num_rows = 0
    created: bytes | None = None
    orders: bytearray | None = None
    rgs_at: int | None = None
    groups: tuple[list[list[ChunkMeta]], int] | None = None
    for fid, t in r.fields(1):
        if fid == 2:
            if columns is not None:
                groups = None  # a second schema: the row groups are checked against it
            columns = _read_schema(r, t)
        elif fid == 3:
            num_rows = _int(r.read(KIND_INT, t, 1, "FileMetaData", 3), "num_rows")
        elif fid == 4:
            if t not in (T_LIST, T_SET):
                raise r.mismatch("FileMetaData", 4, t, "a list")
            rgs_at, groups = r.pos, None
            if columns is not None and orders is None:
                try:
                    groups = _read_row_groups(path, r, start, columns, None)
                except _OrdersUnknown:
                    r.pos = rgs_at
                    r.skip(t, 1)
            else:
                r.skip(t, 1)
        elif fid == 6:
            created = r.read(KIND_BIN, t, 1, "FileMetaData", 6)
        elif fid == 7:
            orders = _read_orders(r, t)
        else:
            r.skip(t, 1)
    if r.pos != len(raw):
        raise _fmt(path, f"footer ends at byte {r.pos} of its declared {len(raw)}")
    if columns is None:
        raise ValueError("schema is missing or not a list of elements")
    ok = None if orders is None else [c < len(orders) and orders[c] == 1
                                      for c in range(len(columns))]
    if rgs_at is not None and (groups is None or (ok is not None and not all(ok))):
        groups = _read_row_groups(path, Reader(raw, rgs_at), start, columns,
                                  ok or [True] * len(columns))
    footer = Footer(path, size, start, num_rows, columns,
                    created_by=created.decode("utf-8", "replace") if created is not None
                    else None)
    if groups is not None and groups[0]:
        footer.row_groups, total_rows = groups
        if total_rows != num_rows:
            raise _fmt(path, f"the row groups hold {total_rows} rows, the footer declares "
                             f"{num_rows}")
    return footer


def _int(v: Any, what: str, lo: int = 0, hi: int = (1 << 63) - 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{what} is {v!r}")
    return v


# Schema groups nest at most this deep: every leaf's path is a tuple as
# long as its depth, so a chain of nested groups would cost the square of
# the footer's size in paths.  Real schemas nest a few levels (a list of
# maps of structs is 5); Thrift's own limit is the same.
MAX_SCHEMA_DEPTH = MAX_DEPTH


def _read_schema(r: Reader, t: int) -> list[ColumnType]:
    """The leaf columns of the schema list starting at ``r``, checked and
    built one element at a time (depth-first: element 0 is the root group;
    an explicit stack keeps hostile nesting from Python's recursion)."""
    if t not in (T_LIST, T_SET):
        raise ValueError("schema is missing or not a list of elements")
    n, et = r.list_header(2)
    if not n or et != T_STRUCT:
        raise ValueError("schema is missing or not a list of elements")
    root = r.struct(_SCHEMA_EL, 3)
    root_children = _int(root[3] if root[3] is not None else 0, "root num_children", 0, n)
    leaves: list[ColumnType] = []
    stack: list[tuple[tuple[str, ...], int]] = [((), root_children)]
    i = 1
    while stack:
        prefix, remaining = stack[-1]
        if remaining == 0:
            stack.pop()
            continue
        stack[-1] = (prefix, remaining - 1)
        if i >= n:
            raise ValueError("schema declares more children than elements")
        el = r.struct(_SCHEMA_EL, 3)
        i += 1
        pt, _, name, nch, _, _, _, _ = el
        if name is None:
            raise ValueError(f"schema element {i - 1} has no name")
        path = (*prefix, name.decode("utf-8", "replace"))
        if nch is not None and pt is None:
            if len(stack) >= MAX_SCHEMA_DEPTH:
                raise ValueError(f"schema groups nested deeper than {MAX_SCHEMA_DEPTH}")
            stack.append((path, _int(nch, "num_children", 0, n)))
        else:
            leaves.append(ColumnType.from_schema(_schema_dict(el), path))
    if i != n:
        raise ValueError(f"schema has {n - i} elements outside the tree")
    return leaves


def _schema_dict(el: tuple[Any, ...]) -> dict[int, Any]:
    """A leaf SchemaElement as ColumnType.from_schema reads it (field id:
    value, the LogicalType union as {member id: {field id: value}})."""
    pt, tl, _, _, ct, scale, prec, lt = el
    d = {fid: v for fid, v in ((1, pt), (2, tl), (6, ct), (7, scale), (8, prec)) if v is not None}
    if lt is not None and lt[3]:
        member, _, body, _ = lt
        inner: dict[int, Any] = {}
        if body is not None:
            for k, v in enumerate(body, 1):
                if isinstance(v, tuple):  # a TimeUnit union: {unit id: {}}
                    v = {v[0]: {}} if v[3] else {}
                if v is not None:
                    inner[k] = v
        d[10] = {member: inner}
    return d


def _read_orders(r: Reader, t: int) -> bytearray | None:
    """Per leaf: 1 when its ColumnOrder is one we know (TYPE_ORDER, or
    IEEE_754_TOTAL_ORDER, field 2), 0 otherwise; one byte an element."""
    if t not in (T_LIST, T_SET):
        r.skip(t, 1)
        return None
    n, et = r.list_header(2)
    out = bytearray(n)
    for c in range(n):
        if et != T_STRUCT:
            r.skip(et, 2)  # not a ColumnOrder: an order we do not know
            continue
        fid, _, _, count = r.union(_COLUMN_ORDER, 3)
        out[c] = count == 1 and fid in (1, 2)
    return out


def _stats(col: ColumnType, st: tuple[Any, ...] | None,
           order_ok: bool | None) -> tuple[bytes | None, bytes | None]:
    """(min, max) usable for pruning: min_value/max_value when the column's
    order is known, else the deprecated min/max for signed orders only.
    ``order_ok`` None: column_orders not read yet; min_value/max_value are
    then trusted, and a malformed one raises _OrdersUnknown (the caller
    reads the row groups again once the orders are known)."""
    if st is None:
        return None, None
    mx, mn = st[2], st[3]
    if mn is None or mx is None or order_ok is False:
        mn = mx = None
        if col.signed_stats_ok():
            mx, mn = st[0], st[1]
    elif order_ok is None:
        try:
            return _usable(col, mn, mx)
        except ValueError:
            raise _OrdersUnknown from None
    return _usable(col, mn, mx)


def _usable(col: ColumnType, mn: bytes | None, mx: bytes | None
            ) -> tuple[bytes | None, bytes | None]:
    if mn is None or mx is None:
        return None, None
    if col.order_key(mn) is None or col.order_key(mx) is None:  # ValueError if malformed
        return None, None
    return mn, mx


def _read_row_groups(path: str, r: Reader, data_end: int, columns: list[ColumnType],
                     ok: list[bool] | None) -> tuple[list[list[ChunkMeta]], int]:
    """The row groups of the list starting at ``r``, each checked as it is
    read; ``ok`` per column whether min_value/max_value follow a known order
    (None: not known yet, see _stats).  Returns them and their rows' sum."""
    n, et = r.list_header(2)
    if n and et != T_STRUCT:
        raise ValueError("row_groups is not a list of structs")
    groups: list[list[ChunkMeta]] = []
    total = 0
    for g in range(n):
        chunks: list[ChunkMeta] | None = None
        rows: Any = 0
        for fid, t in r.fields(3):
            if fid == 1:
                if t not in (T_LIST, T_SET):
                    raise ValueError(f"row group {g} has no column list")
                chunks = _read_chunks(path, r, g, data_end, columns, ok)
            elif fid == 3:
                rows = r.read(KIND_INT, t, 3, "RowGroup", 3)
            else:
                r.skip(t, 3)
        if chunks is None:
            raise ValueError(f"row group {g} has no column list")
        rg_rows = _int(rows, f"row group {g} num_rows")
        total += rg_rows
        # Every row has at least one entry (a value, a null, an empty list)
        # in every leaf, so a row group cannot have more rows than its
        # fullest chunk has values: a num_rows lie (2**40 in a 16 KB file)
        # is refused here, before any reader sizes an allocation by it.
        most = max((c.num_values for c in chunks), default=0)
        if rg_rows > most:
            raise _fmt(path, f"row group {g} declares {rg_rows} rows but its column chunks "
                             f"hold at most {most} values")
        groups.append(chunks)
    return groups, total


def _read_chunks(path: str, r: Reader, g: int, data_end: int, columns: list[ColumnType],
                 ok: list[bool] | None) -> list[ChunkMeta]:
    n, et = r.list_header(4)
    if n != len(columns):
        raise ValueError(f"row group {g} has {n} column chunks for "
                         f"{len(columns)} schema columns")
    out: list[ChunkMeta] = []
    for c, col in enumerate(columns):
        if et != T_STRUCT:
            raise ValueError(f"row group {g} chunk {c} is not a struct")
        md, crypto, encrypted = r.struct(_CHUNK, 5)
        if md is None:
            if crypto is not None or encrypted is not None:
                raise UnsupportedFormatError(
                    f"{path}: column {col.name!r} is encrypted (not supported)")
            raise ValueError(f"row group {g} column {col.name!r} has no metadata")
        pt = md[_M_TYPE]
        if pt not in PHYSICAL_TYPES or PHYSICAL_TYPES[pt] != col.physical:
            raise _fmt(path, f"row group {g}: chunk type {pt!r} differs from the "
                             f"schema's {col.physical}", col.name)
        if md[_M_PATH] is not None and not _path_is(r, md[_M_PATH], col.path):
            raise _fmt(path, f"row group {g}: chunk {c} path does not match the schema",
                       col.name)
        off, length = md[_M_BLOOM_OFF], md[_M_BLOOM_LEN]
        if off is not None:
            off = _int(off, f"bloom_filter_offset of {col.name!r}")
        if length is not None:
            length = _int(length, f"bloom_filter_length of {col.name!r}", 0, (1 << 31) - 1)
        try:
            mn, mx = _stats(col, md[_M_STATS], None if ok is None else ok[c])
        except ValueError as e:
            raise _fmt(path, f"row group {g}: bad statistics: {e}", col.name) from None
        _chunk_extent(md, data_end, f"row group {g} column {col.name!r}")
        values = md[_M_VALUES]
        out.append(ChunkMeta(g, col, _int(0 if values is None else values, "num_values"),
                             mn, mx, off, length))
    return out


def _path_is(r: Reader, at: int, want: tuple[str, ...]) -> bool:
    """Whether the path_in_schema list at offset ``at`` names ``want``,
    compared one name at a time (a hostile list costs no objects)."""
    p = Reader(r.buf, at)
    n, et = p.list_header(7)
    if n != len(want):
        return False
    if n and et != 8:  # T_BINARY
        return False
    for name in want:
        if p.take(p.varint()).decode("utf-8", "replace") != name:
            return False
    return True


def _chunk_extent(md: tuple[Any, ...], data_end: int, where: str) -> None:
    """A column chunk's page offsets and sizes lie in the data part
    [4, data_end): a reader trusting them neither seeks past the file nor
    sizes a buffer by a length the file cannot hold."""
    for slot, what in ((_M_DATA, "data_page_offset"), (_M_INDEX, "index_page_offset"),
                       (_M_DICT, "dictionary_page_offset")):
        v = md[slot]
        if v is None or v == 0:  # writers write 0 for "none" (pyarrow: an empty row group)
            continue
        if not 4 <= v < data_end:
            raise ValueError(f"{where}: {what} {v!r} is outside the data part [4, {data_end})")
    for slot, what in ((_M_USIZE, "total_uncompressed_size"),
                       (_M_CSIZE, "total_compressed_size")):
        v = md[slot]
        if v is not None and v < 0:
            raise ValueError(f"{where}: {what} is {v!r}")
    comp = md[_M_CSIZE]
    if comp is not None and comp > data_end - 4:
        raise ValueError(f"{where}: total_compressed_size {comp} exceeds the "
                         f"{data_end - 4}-byte data part")


def read_bloom(f: CountingFile, footer: Footer, chunk: ChunkMeta) -> bytes | None:
    """The bitset of a chunk's Bloom filter, or None when it has none."""
    off, length = chunk.bloom_offset, chunk.bloom_length
    if off is None:
        return None
    name = chunk.column.name
    where = f"row group {chunk.row_group}: Bloom filter"
    limit = footer.footer_start  # filters lie between the magic and the footer
    if not 4 <= off < limit:
        raise _fmt(f.path, f"{where} offset {off} is outside the data part of the file "
                           f"[4, {limit})", name)
    avail = limit - off
    if length is not None:
        if length == 0 or length > avail:
            raise _fmt(f.path, f"{where} length {length} at offset {off} runs past the "
                               f"data part ({avail} bytes left)", name)
        data = f.read_at(off, length)
        hdr_len, nbytes = parse_bloom_header(f.path, name, where, data)
        if hdr_len + nbytes > length:
            raise _fmt(f.path, f"{where} header declares {nbytes} bitset bytes but only "
                               f"{length - hdr_len} follow it within bloom_filter_length", name)
        return data[hdr_len:hdr_len + nbytes]
    guess = f.read_at(off, min(_HEADER_GUESS, avail))
    try:
        hdr_len, nbytes = parse_bloom_header(f.path, name, where, guess)
    except FormatError:
        if len(guess) == avail:
            raise
        guess = f.read_at(off, min(_HEADER_MAX, avail))
        hdr_len, nbytes = parse_bloom_header(f.path, name, where, guess)
    if nbytes > avail - hdr_len:
        raise _fmt(f.path, f"{where} declares {nbytes} bitset bytes but only "
                           f"{avail - hdr_len} remain before the footer", name)
    return f.read_at(off + hdr_len, nbytes)


def parse_bloom_header(path: str, name: str, where: str, data: bytes) -> tuple[int, int]:
    """(header length, numBytes) of the BloomFilterHeader at data[0:]."""
    r = Reader(data)
    nbytes: Any = None
    unions: dict[int, Any] = {}
    try:
        for fid, t in r.fields(1):
            if fid == 1:
                nbytes = r.read(KIND_INT, t, 1, "BloomFilterHeader", 1)
            elif fid in _BLOOM_UNION and t == T_STRUCT:
                unions[fid] = r.union(_BLOOM_UNION[fid], 2)
            elif fid in _BLOOM_UNION:
                unions[fid] = t  # not a union at all: reported as its wire type
                r.skip(t, 1)
            else:
                r.skip(t, 1)
    except ThriftError as e:
        raise _fmt(path, f"{where} header is corrupt: {e}", name) from None
    if nbytes is None:
        raise _fmt(path, f"{where} header has no numBytes", name)
    if nbytes <= 0 or nbytes % 32:
        raise _fmt(path, f"{where} numBytes {nbytes} is not a positive multiple of 32", name)
    for fid, what in ((2, "algorithm"), (3, "hash"), (4, "compression")):
        u = unions.get(fid)
        if u is None and fid == 4:
            continue  # written before the field existed: uncompressed
        # honest: exactly one member, field 1 (BLOCK, XXHASH, UNCOMPRESSED), an empty struct
        if not isinstance(u, tuple) or u[3] != 1 or u[0] != 1 or u[1] != T_STRUCT:
            known = {2: "BLOCK", 3: "XXHASH", 4: "UNCOMPRESSED"}[fid]
            got = (u if not isinstance(u, tuple) else [] if not u[3] else [u[0]] if u[3] == 1
                   else f"{u[3]} members from {u[0]}")
            raise UnsupportedFormatError(
                f"{path}, column {name!r}: {where} {what} {got!r} is not {known} "
                "(the only one the Parquet specification defines)")
    return r.pos, nbytes
