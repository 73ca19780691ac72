"""The Parquet sidecar index (bloomkit.parquet.build_index / open_index).

One bloomkit file per lake (container kind 12, docs/parquet.md "File layout")
that answers "which files, or row groups, may hold this value of column C?"
without opening a single Parquet file: a blocked Bloom filter (the bytes of
a :class:`bloomkit.BlockedBloomFilter`) per file or per row group, the list
of what each covers, and what each file looked like when it was indexed
(size, modification time, a hash of its footer) so that a stale entry is
noticed instead of answering wrongly.

Keys are the PLAIN encoding of each distinct non-null value, as the file's
schema stores the column (:class:`bloomkit.parquet.ColumnType`): probing
``5`` against an INT32 column looks for the 4 bytes of 5, against a DOUBLE
column for the 8 bytes of 5.0, exactly as :func:`bloomkit.parquet.may_contain`
encodes values.  Floats are made canonical first (-0.0 as +0.0, one NaN), so
a probe follows SQL equality (0.0 finds -0.0; NaN finds NaN, as in DuckDB).

No false negatives: every (file, row group) holding a value is a candidate,
as long as the files are the ones indexed.  A file changed or added since
the build is a candidate for every value (and a :class:`StaleIndexWarning`
says so, or ``strict=True`` raises :class:`StaleIndexError`); a removed
file is no candidate.  :meth:`ParquetIndex.update` re-indexes only what
changed.
"""

from __future__ import annotations

import mmap
import os
import struct
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import _core, _descriptor
from ..bloom import BlockedBloomFilter
from ..errors import BloomkitError, FormatError
from .footer import CountingFile, open_regular, read_footer
from .keys import arrow_failure, distinct_keys, encode_probe, optional_module
from .lake import expand, find
from .values import ColumnType

__all__ = [
    "KIND_PARQUET_INDEX",
    "IndexCandidates",
    "IndexedFile",
    "ParquetIndex",
    "StaleIndexError",
    "StaleIndexWarning",
    "Staleness",
    "build_index",
    "open_index",
]

KIND_PARQUET_INDEX: int = _core.KINDS["ParquetIndex"].id
_KIND = _core.KINDS["ParquetIndex"]  # its descriptor (bk_pqindex.c): lengths, params
_HEADER_LEN: int = _KIND.header_len
_PARAMS_LEN: int = _KIND.params_len
_FILE_LEN = 64
_ENTRY_LEN = 32
_WHOLE_FILE = 0xFFFFFFFF
_GRANULARITIES = ("file", "row_group")
_OUTSIDE = 0x80000000  # granularity bit 31: paths may leave the index's directory (R48)

# params: granularity, files, entries, error_rate, column_len, patterns_len,
# strings_len, filters_off, laid out by the kind's descriptor
_PARAMS = _descriptor.params_struct(_KIND)
# file record: size, mtime_ns, footer_hash, num_rows, path_off, path_len,
# row_groups, physical, logical, unit, tflags, bit_width, reserved0,
# precision, scale, reserved1, type_length
_FILE = struct.Struct("<QqQQQIIBBBBBBHHHI")
_ENTRY = struct.Struct("<IIQQQ")
assert _PARAMS.size == _PARAMS_LEN and _FILE.size == _FILE_LEN and _ENTRY.size == _ENTRY_LEN

_PHYSICAL_IDS = {"INT32": 1, "INT64": 2, "FLOAT": 4, "DOUBLE": 5, "BYTE_ARRAY": 6,
                 "FIXED_LEN_BYTE_ARRAY": 7}
_PHYSICAL_NAMES = {v: k for k, v in _PHYSICAL_IDS.items()}
# LogicalType union field ids of parquet.thrift (9 is the id the spec
# reserves for INTERVAL, which exists only as a ConvertedType)
_LOGICAL_IDS = {"STRING": 1, "MAP": 2, "LIST": 3, "ENUM": 4, "DECIMAL": 5, "DATE": 6,
                "TIME": 7, "TIMESTAMP": 8, "INTERVAL": 9, "INTEGER": 10, "UNKNOWN": 11,
                "JSON": 12, "BSON": 13, "UUID": 14, "FLOAT16": 15, "VARIANT": 16,
                "GEOMETRY": 17, "GEOGRAPHY": 18, "VECTOR": 19}
_LOGICAL_NAMES = {v: k for k, v in _LOGICAL_IDS.items()}
_UNIT_IDS = {"MILLIS": 1, "MICROS": 2, "NANOS": 3}
_UNIT_NAMES = {v: k for k, v in _UNIT_IDS.items()}


PathLike = str | os.PathLike[str]


class StaleIndexError(BloomkitError):
    """The lake changed since the index was built (``strict=True``)."""


class StaleIndexWarning(UserWarning):
    """The lake changed since the index was built; changed and added files
    are answered as candidates for every value (no false negative)."""


# ---- building -------------------------------------------------------------


@dataclass
class _FileIndex:
    """What indexing one file produced (picklable: a Dask task's result)."""

    path: str
    size: int
    mtime_ns: int
    footer_hash: int
    num_rows: int
    num_row_groups: int
    column: ColumnType
    entries: list[tuple[int, int, bytes]]  # (row group or _WHOLE_FILE, values, filter)


def _filter_bytes(keys: Any, count: int, error_rate: float, seed: int) -> bytes:
    bf = BlockedBloomFilter(max(count, 1), error_rate, seed=seed)
    if count:
        bf.add_many(keys)
    data = bytearray(bf.to_bytes())
    # an entry is no file of its own: no flags (key domains included: the
    # format requires 0, and bloomkit before the key-domain record checks it)
    _core.set_key_domains(data, -1)
    data[40:48] = bytes(8)  # the index's checksum covers its filters
    return bytes(data)


def _stat(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _index_file(path: str, column: str, granularity: str, error_rate: float,
                seed: int) -> _FileIndex:
    pq = optional_module("pyarrow.parquet")
    size, mtime = _stat(path)
    with CountingFile(path) as f:
        footer = read_footer(f)
        col = footer.columns[footer.column_index(column)]
        tail = f.read_at(footer.footer_start, f.size - footer.footer_start)
    if col.physical not in _PHYSICAL_IDS:
        raise ValueError(f"{path}: column {column!r} is {col.describe()}; the index covers "
                         "INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY")
    if col.logical is not None and col.logical not in _LOGICAL_IDS:
        raise ValueError(f"{path}: column {column!r} has a logical type ({col.logical}) "
                         "this bloomkit cannot store")
    pa = optional_module("pyarrow")
    entries: list[tuple[int, int, bytes]] = []
    try:
        with pq.ParquetFile(path, pre_buffer=False) as pf:
            if granularity == "file":
                keys, n = distinct_keys(pf, None, col, path)
                entries.append((_WHOLE_FILE, n, _filter_bytes(keys, n, error_rate, seed)))
            else:
                for g in range(len(footer.row_groups)):
                    keys, n = distinct_keys(pf, g, col, path)
                    entries.append((g, n, _filter_bytes(keys, n, error_rate, seed)))
    except (pa.ArrowException, OSError, MemoryError) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise  # the file is gone or unreadable: the OS's own error
        raise arrow_failure(path, col.name, e) from None
    if (size, mtime) != _stat(path):
        raise RuntimeError(f"{path} changed while it was being indexed; try again")
    return _FileIndex(path, size, mtime, _core.xxh3_64(tail), footer.num_rows,
                      len(footer.row_groups), col, entries)


def _expand(paths_or_glob: PathLike | Iterable[PathLike]) -> tuple[list[str], list[str]]:
    """(files, patterns): a glob matching nothing is an empty lake, not an
    error (bloomkit.parquet.lake: each real file once)."""
    return expand(paths_or_glob)


def _inside(rel: str) -> bool:
    """Whether a stored path stays below the index's directory (relative,
    no '..' segment): the rule bk_pqindex.c's validator holds (R48)."""
    if not rel or rel[0] in "/\\" or (len(rel) >= 2 and rel[1] == ":" and rel[0].isalpha()
                                        and (len(rel) == 2 or rel[2] in "/\\")):
        return rel == ""
    return ".." not in rel.replace("\\", "/").split("/")


def _rel(path: str, base: str) -> str:
    """path as stored: relative to the index's directory when possible."""
    absp = os.path.abspath(path)
    try:
        return os.path.relpath(absp, base)
    except ValueError:  # pragma: no cover - another drive on Windows
        return absp


def _check_args(column: str, error_rate: float, granularity: str) -> None:
    if not isinstance(column, str) or not column:
        raise TypeError("column must be a non-empty str (a dotted path for nested columns)")
    if isinstance(error_rate, bool) or not isinstance(error_rate, (int, float)) \
            or not 0.0 < error_rate < 1.0:
        raise ValueError(f"error_rate must be in (0, 1), not {error_rate!r}")
    if granularity not in _GRANULARITIES:
        raise ValueError(f"granularity must be 'file' or 'row_group', not {granularity!r}")


def _run(paths: list[str], column: str, granularity: str, error_rate: float, seed: int,
         use_dask: bool) -> list[_FileIndex]:
    if not use_dask or not paths:
        return [_index_file(p, column, granularity, error_rate, seed) for p in paths]
    dask = optional_module("dask")
    tasks = [dask.delayed(_index_file, pure=False)(p, column, granularity, error_rate, seed)
             for p in paths]
    return list(dask.compute(*tasks))


def build_index(paths_or_glob: PathLike | Iterable[PathLike], column: str,
                error_rate: float = 0.01, granularity: str = "file", *, output: PathLike,
                dask: bool = False, seed: int = 0, allow_outside: bool = False) -> ParquetIndex:
    """Index ``column`` of a lake into ONE bloomkit file at ``output``.

    ``paths_or_glob``: a path, a directory (every ``*.parquet`` below it), a
    glob, or a list of them; globs and directories are recorded so that
    files added later are noticed.  ``granularity="file"`` makes one blocked
    Bloom filter per file, ``"row_group"`` one per row group; each is sized
    for its distinct values at ``error_rate``.  ``dask=True`` indexes the
    files as Dask tasks (one per file, on the current scheduler) and merges
    their results.  Returns the index, opened.  Needs pyarrow (the
    ``bloomkit[parquet]`` extra) to read values.

    The index records its files and patterns relative to its own directory,
    which is the lake's root: a file or pattern outside it (``..`` or
    absolute) is refused unless ``allow_outside=True``, which marks the
    index so that readers must allow it too (``open_index(...,
    allow_outside=True)``; R48).
    """
    _check_args(column, error_rate, granularity)
    paths, patterns = _expand(paths_or_glob)
    _check_inside(output, paths, patterns, allow_outside)
    done = _run(paths, column, granularity, float(error_rate), seed, dask)
    _write(output, column, granularity, float(error_rate), seed, patterns, done,
           allow_outside)
    return open_index(output, allow_outside=allow_outside)


def _check_inside(output: PathLike, paths: list[str], patterns: list[str],
                  allow_outside: bool) -> None:
    if allow_outside:
        return
    base = os.path.dirname(os.path.abspath(os.fspath(output)))
    for p in [*patterns, *paths]:
        if not _inside(_rel(p, base)):
            raise ValueError(
                f"{p} is outside {base or '.'}, the directory of the index {os.fspath(output)}, "
                "which is the lake's root: write the index at (or above) the lake's root, or "
                "pass allow_outside=True (CLI: --allow-outside; its readers must allow it too)")


def _write(output: PathLike, column: str, granularity: str, error_rate: float, seed: int,
           patterns: list[str], files: list[_FileIndex], allow_outside: bool = False) -> None:
    from ..persist.atomic import atomic_write, write_all

    base = os.path.dirname(os.path.abspath(os.fspath(output)))
    col_b = column.encode("utf-8")
    pat_b = "\n".join(_rel(p, base) for p in patterns if "\n" not in p).encode("utf-8")
    paths_b = [_rel(f.path, base).encode("utf-8") for f in files]
    if len(col_b) > 4096 or len(pat_b) > 65536 or any(len(p) > 4096 for p in paths_b):
        raise ValueError("a column path or file path longer than 4096 bytes (or patterns "
                         "longer than 64 KiB) cannot be indexed")
    entries = [(i, g, n, fb) for i, f in enumerate(files) for g, n, fb in f.entries]
    strings = col_b + pat_b + b"".join(paths_b)
    tables = len(files) * _FILE_LEN + len(entries) * _ENTRY_LEN
    strings_end = tables + len(strings)
    filters_off = -(-strings_end // 64) * 64
    pos = filters_off
    offs = []
    for *_, fb in entries:
        offs.append(pos)
        pos += -(-len(fb) // 64) * 64
    payload_len = pos
    gran = _GRANULARITIES.index(granularity)
    if allow_outside and not all(map(_inside, (_rel(p, base) for p in [
            *patterns, *(f.path for f in files)]))):
        gran |= _OUTSIDE  # only when some path needs it: readers must then allow it
    header = bytearray(_HEADER_LEN)
    _core.init_header(header, KIND_PARQUET_INDEX, _HEADER_LEN, _PARAMS_LEN, payload_len,
                      seed=seed)
    _PARAMS.pack_into(header, 64, gran, len(files), len(entries), error_rate, len(col_b),
                      len(pat_b), len(strings), filters_off)
    body = header  # the state grows in place: one copy of the filters, not three
    poff = len(col_b) + len(pat_b)
    for f, pb in zip(files, paths_b, strict=True):
        c = f.column
        tflags = (1 if c.utc else 0) | (2 if c.signed else 0)
        timed = c.logical in ("TIME", "TIMESTAMP")
        body += _FILE.pack(
            f.size, f.mtime_ns, f.footer_hash, f.num_rows, poff, len(pb), f.num_row_groups,
            _PHYSICAL_IDS[c.physical], _LOGICAL_IDS.get(c.logical or "", 0),
            _UNIT_IDS.get(c.unit or "", 0) if timed else 0,
            tflags, c.bit_width if c.logical == "INTEGER" else 0, 0,
            c.precision if c.logical == "DECIMAL" else 0,
            c.scale if c.logical == "DECIMAL" else 0, 0, c.type_length or 0)
        poff += len(pb)
    for (i, g, n, fb), off in zip(entries, offs, strict=True):
        body += _ENTRY.pack(i, g, n, off, len(fb))
    body += strings
    body += bytes(_HEADER_LEN + filters_off - len(body))
    for (*_, fb), off in zip(entries, offs, strict=True):
        assert len(body) == _HEADER_LEN + off
        body += fb
        body += bytes(-len(body) % 64)
    state = body
    _core.seal(state)
    _core.validate(memoryview(state))  # the writer's own output passes the one validator

    atomic_write(output, lambda fd: write_all(fd, memoryview(state)))


# ---- reading ----------------------------------------------------------------


@dataclass(frozen=True)
class IndexedFile:
    """A file as the index saw it."""

    path: str  # as the caller can open it (the stored path joined to the index's directory)
    size: int
    mtime_ns: int
    footer_hash: int
    num_rows: int
    num_row_groups: int
    column_type: ColumnType


@dataclass
class Staleness:
    """What changed in the lake since the index was built: files whose size,
    modification time (or, with ``footers=True``, footer) differ, files gone,
    and files the recorded globs/directories now match that the index lacks."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed or self.added)

    def describe(self) -> str:
        parts = []
        for name, items in (("changed", self.changed), ("removed", self.removed),
                            ("added", self.added)):
            if items:
                shown = ", ".join(items[:3]) + (", ..." if len(items) > 3 else "")
                parts.append(f"{len(items)} {name} ({shown})")
        return "; ".join(parts) or "up to date"


class IndexCandidates(dict):  # type: ignore[type-arg]
    """``candidates()``' answer: ``{value: [(file, row_group or None), ...]}``
    plus ``entries`` (filters probed), ``stale`` (a :class:`Staleness`, or
    None when not checked)."""

    entries: int
    stale: Staleness | None

    def __init__(self) -> None:
        super().__init__()
        self.entries = 0
        self.stale = None


def _column_type(rec: tuple[Any, ...], path: tuple[str, ...]) -> ColumnType:
    (_s, _m, _h, _r, _po, _pl, _g, phys, logical, unit, tflags, bw, _r0, prec, scale, _r1,
     tlen) = rec
    lname = _LOGICAL_NAMES.get(logical) if logical else None
    return ColumnType(_PHYSICAL_NAMES[phys], type_length=tlen or None, logical=lname,
                      unit=_UNIT_NAMES.get(unit), utc=bool(tflags & 1), scale=scale,
                      precision=prec, bit_width=bw, signed=bool(tflags & 2), path=path)


def open_index(path: PathLike, *, verify: bool = True, max_bytes: int | None = None,
               allow_outside: bool = False) -> ParquetIndex:
    """Open an index written by :func:`build_index` (memory-mapped: only the
    tables and the filters a query touches are read).  ``verify`` checks the
    checksum and every filter deeply (one pass over the file); the tables
    and every filter's header are checked either way.  Raises
    :class:`bloomkit.FormatError` naming the file and the reason.

    The size guard every bloomkit file has (R53): with ``verify`` a sparse
    index declaring more than 16 GiB with little on disk is refused before
    the pass (:class:`bloomkit.SizeLimitError`), and ``max_bytes`` refuses
    any index larger than it.  An index whose paths leave its directory
    (built with ``allow_outside=True``) opens only with
    ``allow_outside=True`` (R48)."""
    return ParquetIndex(path, verify=verify, max_bytes=max_bytes, allow_outside=allow_outside)


class ParquetIndex:
    """A sidecar index of one column of a lake (see the module docstring)."""

    def __init__(self, path: PathLike, *, verify: bool = True, max_bytes: int | None = None,
                 allow_outside: bool = False, _data: bytes | None = None) -> None:
        from ..persist.checks import check_size

        self.path = os.fspath(path)
        self.allow_outside = allow_outside
        # stored paths are relative to the index's directory; answers join
        # them to the directory as the caller named it ("lake/i.bkidx" gives
        # "lake/part-0.parquet")
        self._base = os.path.dirname(self.path)
        self._mm: Any
        if _data is not None:  # tests: the same checks on bytes in memory
            self._mm = _data
        else:
            with open_regular(self.path, "a bloomkit file") as fh:
                st = os.fstat(fh.fileno())
                size = st.st_size
                check_size(self.path, st, max_bytes, full_pass=verify)
                if size < 64:
                    raise FormatError(f"{self.path}: not a bloomkit file ({size} bytes)")
                self._mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            self._load(verify)
        except BaseException:
            self._close_map()
            raise

    def _close_map(self) -> None:
        if isinstance(self._mm, mmap.mmap):
            self._mm.close()

    def _load(self, verify: bool) -> None:
        mm = self._mm
        try:
            hdr = _core.validate(memoryview(mm), checksum=verify, deep=verify)
        except FormatError as e:
            raise type(e)(f"{self.path}: {e}") from None
        if hdr["kind"] != KIND_PARQUET_INDEX:
            raise FormatError(f"{self.path}: a {hdr.get('kind_name')} file, not a Parquet "
                              "index (kind 12)")
        (gran, nfiles, nentries, self.error_rate, col_len, pat_len, _strings_len,
         _filters_off) = _PARAMS.unpack_from(mm, 64)
        hl = hdr["header_len"]
        self.outside = bool(gran & _OUTSIDE)
        self.granularity = _GRANULARITIES[gran & ~_OUTSIDE]
        self.seed = hdr["seed"]
        strings_off = hl + nfiles * _FILE_LEN + nentries * _ENTRY_LEN
        self.column = bytes(mm[strings_off:strings_off + col_len]).decode("utf-8")
        pats = bytes(mm[strings_off + col_len:strings_off + col_len + pat_len]).decode("utf-8")
        self.patterns = [os.path.join(self._base, p) for p in pats.split("\n")] if pats else []
        colpath = tuple(self.column.split("."))
        self.files: list[IndexedFile] = []
        self._abs: list[str] = []  # absolute paths, for staleness
        self._stored: list[str] = []  # as recorded (relative to the index's directory)
        for i in range(nfiles):
            rec = _FILE.unpack_from(mm, hl + i * _FILE_LEN)
            po, pl = rec[4], rec[5]
            stored = bytes(mm[strings_off + po:strings_off + po + pl]).decode("utf-8")
            self._stored.append(stored)
            self._abs.append(os.path.abspath(os.path.join(self._base, stored)))
            self.files.append(IndexedFile(
                os.path.normpath(os.path.join(self._base, stored)), rec[0], rec[1], rec[2],
                rec[3], rec[6], _column_type(rec, colpath)))
        if self.outside and not self.allow_outside and not all(
                map(_inside, [*pats.split("\n"), *self._stored] if pats else self._stored)):
            raise ValueError(
                f"{self.path}: this index lists files or patterns outside its own directory "
                "(built with allow_outside=True); open it with allow_outside=True (CLI: "
                "--allow-outside) if you trust it")
        eoff = hl + nfiles * _FILE_LEN
        # (file, row group or None, values, filter offset in the file, length)
        self._entries = []
        for k in range(nentries):
            fi, g, n, off, ln = _ENTRY.unpack_from(mm, eoff + k * _ENTRY_LEN)
            self._entries.append((fi, None if g == _WHOLE_FILE else g, n, hl + off, ln))
        self._filters: list[BlockedBloomFilter[Any] | None] = [None] * nentries

    # ---- info -----------------------------------------------------------------

    def __len__(self) -> int:
        """Entries: files (granularity "file") or row groups."""
        return len(self._entries)

    def __repr__(self) -> str:
        return (f"<ParquetIndex {self.path!r} column={self.column!r} files={len(self.files)} "
                f"entries={len(self._entries)} granularity={self.granularity!r} "
                f"error_rate={self.error_rate}>")

    @property
    def entries(self) -> list[tuple[str, int | None, int]]:
        """(file, row group or None, distinct values) of every entry."""
        return [(self.files[fi].path, g, n) for fi, g, n, _, _ in self._entries]

    def filter(self, i: int) -> BlockedBloomFilter[Any]:
        """Entry ``i``'s filter (a read-only BlockedBloomFilter over the map)."""
        f = self._filters[i]
        if f is None:
            _, _, _, off, ln = self._entries[i]
            f = BlockedBloomFilter._from_buffer(memoryview(self._mm)[off:off + ln],
                                                verify=False)
            self._filters[i] = f
        return f

    def close(self) -> None:
        for f in self._filters:
            if f is not None:
                f._detach()
        self._filters = [None] * len(self._entries)
        self._close_map()

    def __enter__(self) -> ParquetIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- staleness --------------------------------------------------------------

    def stale(self, *, footers: bool = False) -> Staleness:
        """Which indexed files changed, which are gone, and which files the
        recorded globs or directories match now that the index does not hold.

        Staleness is decided by content (R31/8): a file whose size and
        modification time are the indexed ones is unchanged (the shortcut);
        otherwise its footer is read and the file is unchanged when its size
        and footer hash are the indexed ones (``cp -r lake lake2`` resets
        mtimes, and the copy still answers from its filters).  With
        ``footers=True`` every footer is compared, whatever the times say."""
        out = Staleness()
        known = set()
        for f, a in zip(self.files, self._abs, strict=True):
            known.add(a)
            try:
                size, mtime = _stat(a)
            except FileNotFoundError:
                out.removed.append(f.path)
                continue
            if size != f.size:
                out.changed.append(f.path)
            elif (mtime != f.mtime_ns or footers) and _footer_hash(a) != f.footer_hash:
                out.changed.append(f.path)
        for pat in self.patterns:
            for p in find(pat):
                a = os.path.abspath(p)
                if a not in known:
                    known.add(a)
                    out.added.append(os.path.normpath(p))
        return out

    def update(self, paths_or_glob: PathLike | Iterable[PathLike] | None = None, *,
               dask: bool = False) -> tuple[ParquetIndex, Staleness]:
        """Re-index what changed and write the index again (atomically, same
        path): changed and added files are read, removed ones dropped, the
        others keep their filters.  ``paths_or_glob`` replaces the recorded
        lake (default: the indexed files plus the recorded globs).  Returns
        the new index (this one is closed) and what changed."""
        st = self.stale()
        if paths_or_glob is None:
            paths = [f.path for f in self.files if f.path not in st.removed] + st.added
            patterns = self.patterns
        else:
            paths, patterns = _expand(paths_or_glob)
        old = {os.path.abspath(f.path): i for i, f in enumerate(self.files)}
        changed = {os.path.abspath(p) for p in st.changed}
        todo = [p for p in paths
                if os.path.abspath(p) not in old or os.path.abspath(p) in changed]
        fresh = dict(zip(map(os.path.abspath, todo),
                         _run(todo, self.column, self.granularity, self.error_rate, self.seed,
                              dask), strict=True))
        done = []
        for p in paths:
            a = os.path.abspath(p)
            done.append(fresh[a] if a in fresh else self._reuse(old[a]))
        st.added = [p for p in st.added if os.path.abspath(p) in fresh] + [
            p for p in paths if os.path.abspath(p) not in old
            and os.path.normpath(p) not in st.added]
        path = self.path
        self.close()
        _check_inside(path, paths, patterns, self.outside)
        _write(path, self.column, self.granularity, self.error_rate, self.seed,
               patterns, done, self.outside)
        return open_index(path, allow_outside=self.outside), st

    def _reuse(self, fi: int) -> _FileIndex:
        f = self.files[fi]
        entries = [(_WHOLE_FILE if g is None else g, n, bytes(self._mm[off:off + ln]))
                   for i, g, n, off, ln in self._entries if i == fi]
        return _FileIndex(f.path, f.size, f.mtime_ns, f.footer_hash, f.num_rows,
                          f.num_row_groups, f.column_type, entries)

    # ---- queries ----------------------------------------------------------------

    def candidates(self, values: Iterable[Any], *, check: bool = True,
                   strict: bool = False) -> IndexCandidates:
        """For each value, the (file, row group) pairs that may hold it (row
        group None with granularity "file").

        Values are encoded per file as its schema stores the column (as in
        :func:`bloomkit.parquet.may_contain`); a value the column cannot hold
        is in no file.  ``check`` (default) first compares every indexed
        file's size and modification time and re-expands the recorded globs:
        a changed or added file is then a candidate for every value and a
        :class:`StaleIndexWarning` names them; ``strict=True`` raises
        :class:`StaleIndexError` instead.  Removed files are never candidates.
        """
        from .sbbf import value_key, values_list

        given = values_list(values, "candidates")
        result = IndexCandidates()
        vals, keys = [], []
        for v in given:  # each distinct value once (0.0 and -0.0 are one dict key)
            k = value_key(v)
            if k not in result:
                result[k] = []
                vals.append(v)
                keys.append(k)
        stale = self.stale() if check else Staleness()
        if check:
            result.stale = stale
        if stale:
            msg = (f"{self.path}: the lake changed since the index was built: "
                   f"{stale.describe()}; re-index with update() "
                   "(`bloomkit parquet update INDEX`)")
            if strict:
                raise StaleIndexError(msg)
            warnings.warn(msg + " (changed and added files answered as candidates)",
                          StaleIndexWarning, stacklevel=2)
        changed = {os.path.abspath(p) for p in stale.changed}
        removed = {os.path.abspath(p) for p in stale.removed}
        import numpy as np

        probes: dict[ColumnType, tuple[list[int], Any]] = {}
        refused: dict[int, list[TypeError]] = {}
        for f in self.files:  # encode first: a type error is raised before any work
            if f.column_type not in probes:
                probes[f.column_type] = encode_probe(f.column_type, vals, refused)
        for errors in refused.values():  # refused by every column type of the lake
            if len(errors) == len(probes):
                raise errors[0]

        for i, (fi, g, _n, _off, _ln) in enumerate(self._entries):
            f = self.files[fi]
            a = self._abs[fi]
            if a in removed:
                continue
            if a in changed:
                for k in keys:
                    result[k].append((f.path, g))
                continue
            idx, pkeys = probes[f.column_type]
            if not idx:
                continue
            result.entries += 1
            hits = np.flatnonzero(self.filter(i).contains_many(pkeys))
            for j in hits.tolist():
                result[keys[idx[j]]].append((f.path, g))
        for p in stale.added:
            for k in keys:
                result[k].append((p, None))
        return result

    def verify(self) -> None:
        """Checksum and deep checks of the whole index (FormatError if corrupt)."""
        try:
            _core.validate(memoryview(self._mm), checksum=True, deep=True)
        except FormatError as e:
            raise type(e)(f"{self.path}: {e}") from None


def _footer_hash(path: str) -> int | None:
    try:
        with CountingFile(path) as f:
            footer = read_footer(f)
            return int(_core.xxh3_64(f.read_at(footer.footer_start,
                                               f.size - footer.footer_start)))
    except (OSError, FormatError):
        return None

