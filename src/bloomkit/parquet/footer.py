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
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any, overload

from ..errors import ColumnNotFoundError, FormatError, UnsupportedFormatError
from .schema import Columns, checked_int, read_schema
from .thrift import (
    KIND_BIN,
    KIND_HERE,
    KIND_INT,
    KIND_LIST_AT,
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
    columns: Sequence[ColumnType]
    row_groups: Sequence[Sequence[ChunkMeta]] = field(default_factory=list)
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


class RowGroups(Sequence[Sequence[ChunkMeta]]):
    """A footer's row groups, each a sequence of its column chunks, decoded
    from the footer's bytes when asked for: per chunk only its offset is
    kept (4 bytes, where a decoded ChunkMeta takes about 100 more than the
    5 bytes of the smallest chunk a footer can state), so a footer of many
    tiny row groups costs about its size (R50).  Every chunk was checked
    when the footer was read; decoding it again gives the same ChunkMeta.
    Readers take one column's chunk per row group (``footer.row_groups[g]
    [c]``), which now decodes that chunk alone."""

    __slots__ = ("_at", "_columns", "_data_end", "_n", "_ok", "_path", "_raw")

    def __init__(self, path: str, raw: bytes, columns: Sequence[ColumnType], data_end: int,
                 ok: list[bool], at: array[int], n: int) -> None:
        self._path, self._raw, self._columns, self._data_end = path, raw, columns, data_end
        self._ok, self._at, self._n = bytes(ok), at, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, g: int) -> Sequence[ChunkMeta]: ...
    @overload
    def __getitem__(self, g: slice) -> Sequence[Sequence[ChunkMeta]]: ...

    def __getitem__(self, g: int | slice) -> Any:
        if isinstance(g, slice):
            return [self[i] for i in range(*g.indices(self._n))]
        if g < 0:
            g += self._n
        if not 0 <= g < self._n:
            raise IndexError("row group index out of range")
        return _Chunks(self, g)

    def chunk(self, g: int, c: int) -> ChunkMeta:
        """Column chunk ``c`` of row group ``g``."""
        r = Reader(self._raw, self._at[g * len(self._columns) + c])
        return _chunk_meta(self._path, r, g, c, self._columns[c], self._data_end,
                           bool(self._ok[c]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return [list(rg) for rg in self] == [list(rg) for rg in other]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr([list(rg) for rg in self])


class _Chunks(Sequence[ChunkMeta]):
    __slots__ = ("_g", "_rgs")

    def __init__(self, rgs: RowGroups, g: int) -> None:
        self._rgs, self._g = rgs, g

    def __len__(self) -> int:
        return len(self._rgs._columns)

    @overload
    def __getitem__(self, c: int) -> ChunkMeta: ...
    @overload
    def __getitem__(self, c: slice) -> Sequence[ChunkMeta]: ...

    def __getitem__(self, c: int | slice) -> Any:
        n = len(self._rgs._columns)
        if isinstance(c, slice):
            return [self[i] for i in range(*c.indices(n))]
        if c < 0:
            c += n
        if not 0 <= c < n:
            raise IndexError("column chunk index out of range")
        return self._rgs.chunk(self._g, c)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


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
_COLUMN_ORDER = Union("ColumnOrder", {})
_BLOOM_UNION = {fid: Union(what, {}) for fid, what in
                ((2, "BloomFilterAlgorithm"), (3, "BloomFilterHash"),
                 (4, "BloomFilterCompression"))}
_BLOOM_HEADER = Spec("BloomFilterHeader", {1: ("numBytes", KIND_INT),
                                           2: ("algorithm", _BLOOM_UNION[2]),
                                           3: ("hash", _BLOOM_UNION[3]),
                                           4: ("compression", _BLOOM_UNION[4])})


# Column chunk offsets: footers are at most 2**32 - 1 bytes (a 4-byte length).
_OFFSET = "I" if array("I").itemsize >= 4 else "L"


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
    columns: Columns | None = None
    num_rows = 0
    created: bytes | None = None
    orders: bytearray | None = None
    rgs_at: int | None = None
    groups: tuple[array[int], int, int] | None = None
    for fid, t in r.fields(1):
        if fid == 2:
            if columns is not None:
                groups = None  # a second schema: the row groups are checked against it
            columns = read_schema(r, t)
        elif fid == 3:
            num_rows = checked_int(r.read(KIND_INT, t, 1, "FileMetaData", 3), "num_rows")
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
    ok: list[bool] | None = None if orders is None else [
        c < len(orders) and orders[c] == 1 for c in range(len(columns))]
    ok = ok or [True] * len(columns)
    if rgs_at is not None and (groups is None or not all(ok)):
        groups = _read_row_groups(path, Reader(raw, rgs_at), start, columns, ok)
    footer = Footer(path, size, start, num_rows, columns,
                    created_by=created.decode("utf-8", "replace") if created is not None
                    else None)
    if groups is not None and groups[1]:
        at, n, total_rows = groups
        footer.row_groups = RowGroups(path, raw, columns, start, ok, at, n)
        if total_rows != num_rows:
            raise _fmt(path, f"the row groups hold {total_rows} rows, the footer declares "
                             f"{num_rows}")
    return footer


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


def _read_row_groups(path: str, r: Reader, data_end: int, columns: Sequence[ColumnType],
                     ok: list[bool] | None) -> tuple[array[int], int, int]:
    """Check the row groups of the list starting at ``r`` one at a time;
    ``ok`` per column whether min_value/max_value follow a known order
    (None: not known yet, see _stats).  Returns the offset of every column
    chunk (row group by row group), the number of row groups and the sum of
    their rows: what RowGroups keeps."""
    n, et = r.list_header(2)
    if n and et != T_STRUCT:
        raise ValueError("row_groups is not a list of structs")
    at = array(_OFFSET)
    total = 0
    for g in range(n):
        most = -1
        rows: Any = 0
        for fid, t in r.fields(3):
            if fid == 1:
                if t not in (T_LIST, T_SET):
                    raise ValueError(f"row group {g} has no column list")
                most = _read_chunks(path, r, g, data_end, columns, ok, at)
            elif fid == 3:
                rows = r.read(KIND_INT, t, 3, "RowGroup", 3)
            else:
                r.skip(t, 3)
        if most < 0:
            raise ValueError(f"row group {g} has no column list")
        rg_rows = checked_int(rows, f"row group {g} num_rows")
        total += rg_rows
        # Every row has at least one entry (a value, a null, an empty list)
        # in every leaf, so a row group cannot have more rows than its
        # fullest chunk has values: a num_rows lie (2**40 in a 16 KB file)
        # is refused here, before any reader sizes an allocation by it.
        if rg_rows > most:
            raise _fmt(path, f"row group {g} declares {rg_rows} rows but its column chunks "
                             f"hold at most {most} values")
    return at, n, total


def _read_chunks(path: str, r: Reader, g: int, data_end: int, columns: Sequence[ColumnType],
                 ok: list[bool] | None, at: array[int]) -> int:
    """Check row group ``g``'s column chunks, appending their offsets to
    ``at``; return the most values a chunk holds (0 for no chunks)."""
    n, et = r.list_header(4)
    if n != len(columns):
        raise ValueError(f"row group {g} has {n} column chunks for "
                         f"{len(columns)} schema columns")
    most = 0
    for c, col in enumerate(columns):
        if et != T_STRUCT:
            raise ValueError(f"row group {g} chunk {c} is not a struct")
        at.append(r.pos)
        meta = _chunk_meta(path, r, g, c, col, data_end, None if ok is None else ok[c])
        most = max(most, meta.num_values)
    return most


def _chunk_meta(path: str, r: Reader, g: int, c: int, col: ColumnType, data_end: int,
                order_ok: bool | None) -> ChunkMeta:
    """The ColumnChunk at ``r`` (chunk ``c`` of row group ``g``), checked."""
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
        raise _fmt(path, f"row group {g}: chunk {c} path does not match the schema", col.name)
    off, length = md[_M_BLOOM_OFF], md[_M_BLOOM_LEN]
    if off is not None:
        off = checked_int(off, f"bloom_filter_offset of {col.name!r}")
    if length is not None:
        length = checked_int(length, f"bloom_filter_length of {col.name!r}", 0, (1 << 31) - 1)
    try:
        mn, mx = _stats(col, md[_M_STATS], order_ok)
    except ValueError as e:
        raise _fmt(path, f"row group {g}: bad statistics: {e}", col.name) from None
    _chunk_extent(md, data_end, f"row group {g} column {col.name!r}")
    values = md[_M_VALUES]
    return ChunkMeta(g, col, checked_int(0 if values is None else values, "num_values"),
                     mn, mx, off, length)


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
