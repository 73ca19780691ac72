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
from .thrift import ThriftError, decode_struct
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
        meta, end = decode_struct(raw)
    except ThriftError as e:
        raise _fmt(path, f"corrupt footer: {e}") from None
    if end != flen:
        raise _fmt(path, f"footer ends at byte {end} of its declared {flen}")
    try:
        return _build(path, f.size, start, meta)
    except FormatError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise _fmt(path, f"corrupt footer: {e}") from None


def _int(v: Any, what: str, lo: int = 0, hi: int = (1 << 63) - 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{what} is {v!r}")
    return v


def _schema_leaves(schema: Any) -> list[ColumnType]:
    if not isinstance(schema, list) or not schema or not all(isinstance(e, dict) for e in schema):
        raise ValueError("schema is missing or not a list of elements")
    leaves: list[ColumnType] = []
    # Depth-first: element 0 is the root group.  An explicit stack keeps
    # hostile nesting from touching Python's recursion limit.
    root_children = _int(schema[0].get(5, 0), "root num_children", 0, len(schema))
    stack: list[tuple[tuple[str, ...], int]] = [((), root_children)]
    i = 1
    while stack:
        prefix, remaining = stack[-1]
        if remaining == 0:
            stack.pop()
            continue
        stack[-1] = (prefix, remaining - 1)
        if i >= len(schema):
            raise ValueError("schema declares more children than elements")
        el = schema[i]
        i += 1
        name = el.get(4)
        if not isinstance(name, bytes):
            raise ValueError(f"schema element {i - 1} has no name")
        path = (*prefix, name.decode("utf-8", "replace"))
        nch = el.get(5)
        if nch is not None and el.get(1) is None:
            stack.append((path, _int(nch, "num_children", 0, len(schema))))
        else:
            leaves.append(ColumnType.from_schema(el, path))
    if i != len(schema):
        raise ValueError(f"schema has {len(schema) - i} elements outside the tree")
    return leaves


def _column_orders(meta: dict[int, Any], n: int) -> list[bool]:
    """Per leaf: whether min_value/max_value follow an order we know."""
    orders = meta.get(7)
    if not isinstance(orders, list):
        return [True] * n
    ok = [isinstance(o, dict) and len(o) == 1 and next(iter(o)) in (1, 2) for o in orders]
    return ok + [False] * (n - len(ok))


def _stats(col: ColumnType, st: Any, order_ok: bool) -> tuple[bytes | None, bytes | None]:
    if not isinstance(st, dict):
        return None, None
    mn, mx = st.get(6), st.get(5)
    if not (isinstance(mn, bytes) and isinstance(mx, bytes) and order_ok):
        mn, mx = None, None
        if col.signed_stats_ok():
            mn, mx = st.get(2), st.get(1)
    if not (isinstance(mn, bytes) and isinstance(mx, bytes)):
        return None, None
    if col.order_key(mn) is None or col.order_key(mx) is None:  # ValueError if malformed
        return None, None
    return mn, mx


def _build(path: str, size: int, start: int, meta: dict[int, Any]) -> Footer:
    columns = _schema_leaves(meta.get(2))
    orders = _column_orders(meta, len(columns))
    rgs = meta.get(4, [])
    if not isinstance(rgs, list):
        raise ValueError("row_groups is not a list")
    created = meta.get(6)
    footer = Footer(path, size, start, _int(meta.get(3, 0), "num_rows"), columns,
                    created_by=created.decode("utf-8", "replace") if isinstance(created, bytes)
                    else None)
    total_rows = 0
    for g, rg in enumerate(rgs):
        if not isinstance(rg, dict) or not isinstance(rg.get(1), list):
            raise ValueError(f"row group {g} has no column list")
        chunks = rg[1]
        rg_rows = _int(rg.get(3, 0), f"row group {g} num_rows")
        total_rows += rg_rows
        if len(chunks) != len(columns):
            raise ValueError(f"row group {g} has {len(chunks)} column chunks for "
                             f"{len(columns)} schema columns")
        out: list[ChunkMeta] = []
        for c, (ch, col) in enumerate(zip(chunks, columns, strict=True)):
            if not isinstance(ch, dict):
                raise ValueError(f"row group {g} chunk {c} is not a struct")
            md = ch.get(3)
            if not isinstance(md, dict):
                if ch.get(9) is not None or ch.get(8) is not None:
                    raise UnsupportedFormatError(
                        f"{path}: column {col.name!r} is encrypted (not supported)")
                raise ValueError(f"row group {g} column {col.name!r} has no metadata")
            pt = md.get(1)
            if pt not in PHYSICAL_TYPES or PHYSICAL_TYPES[pt] != col.physical:
                raise _fmt(path, f"row group {g}: chunk type {pt!r} differs from the "
                                 f"schema's {col.physical}", col.name)
            pis = md.get(3)
            if isinstance(pis, list) and tuple(
                    p.decode("utf-8", "replace") if isinstance(p, bytes) else "?"
                    for p in pis) != col.path:
                raise _fmt(path, f"row group {g}: chunk {c} path does not match the schema",
                           col.name)
            off, length = md.get(14), md.get(15)
            if off is not None:
                off = _int(off, f"bloom_filter_offset of {col.name!r}")
            if length is not None:
                length = _int(length, f"bloom_filter_length of {col.name!r}", 0, (1 << 31) - 1)
            try:
                mn, mx = _stats(col, md.get(12), orders[c])
            except ValueError as e:
                raise _fmt(path, f"row group {g}: bad statistics: {e}", col.name) from None
            _chunk_extent(md, start, f"row group {g} column {col.name!r}")
            out.append(ChunkMeta(g, col, _int(md.get(5, 0), "num_values"), mn, mx, off, length))
        # Every row has at least one entry (a value, a null, an empty list)
        # in every leaf, so a row group cannot have more rows than its
        # fullest chunk has values: a num_rows lie (2**40 in a 16 KB file)
        # is refused here, before any reader sizes an allocation by it.
        most = max((c.num_values for c in out), default=0)
        if rg_rows > most:
            raise _fmt(path, f"row group {g} declares {rg_rows} rows but its column chunks "
                             f"hold at most {most} values")
        footer.row_groups.append(out)
    if rgs and total_rows != footer.num_rows:
        raise _fmt(path, f"the row groups hold {total_rows} rows, the footer declares "
                         f"{footer.num_rows}")
    return footer


def _chunk_extent(md: dict[int, Any], data_end: int, where: str) -> None:
    """A column chunk's page offsets and sizes lie in the data part
    [4, data_end): a reader trusting them neither seeks past the file nor
    sizes a buffer by a length the file cannot hold."""
    for fid, what in ((9, "data_page_offset"), (10, "index_page_offset"),
                      (11, "dictionary_page_offset")):
        v = md.get(fid)
        if v is None or v == 0:  # writers write 0 for "none" (pyarrow: an empty row group)
            continue
        if not isinstance(v, int) or isinstance(v, bool) or not 4 <= v < data_end:
            raise ValueError(f"{where}: {what} {v!r} is outside the data part [4, {data_end})")
    for fid, what in ((6, "total_uncompressed_size"), (7, "total_compressed_size")):
        v = md.get(fid)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ValueError(f"{where}: {what} is {v!r}")
    comp = md.get(7)
    if isinstance(comp, int) and comp > data_end - 4:
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
    try:
        hdr, end = decode_struct(data)
    except ThriftError as e:
        raise _fmt(path, f"{where} header is corrupt: {e}", name) from None
    nbytes = hdr.get(1)
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise _fmt(path, f"{where} header has no numBytes", name)
    if nbytes <= 0 or nbytes % 32:
        raise _fmt(path, f"{where} numBytes {nbytes} is not a positive multiple of 32", name)
    for fid, what in ((2, "algorithm"), (3, "hash"), (4, "compression")):
        u = hdr.get(fid)
        if u is None and fid == 4:
            continue  # written before the field existed: uncompressed
        if not isinstance(u, dict) or len(u) != 1 or not isinstance(u.get(1), dict):
            known = {2: "BLOCK", 3: "XXHASH", 4: "UNCOMPRESSED"}[fid]
            got = sorted(u) if isinstance(u, dict) else u
            raise UnsupportedFormatError(
                f"{path}, column {name!r}: {where} {what} {got!r} is not {known} "
                "(the only one the Parquet specification defines)")
    return end, nbytes
