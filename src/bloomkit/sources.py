"""Keys from data files: text lines, ``.npy`` arrays, Parquet and CSV columns.

Used by :func:`build_from` (also ``bloomkit.build_from``), :func:`add_from`
and ``bloomkit build``; see docs/scale.md ("Building from data files").
Every format keeps the one key encoding (docs/keys.md):

- text lines (any other file name, ``-`` for stdin; gzip recognised by its
  magic number): each non-blank line's bytes without the line ending, which
  hash like the same ``str`` in Python;
- ``.npy``: memory-mapped (``numpy.load(mmap_mode="r")``, never loaded,
  never unpickled) and handed to ``add_many`` in slices of BATCH_ROWS, so
  integer, bool and fixed-width bytes (``S``) arrays take the GIL-free
  buffer path: ints by value, bools 0/1, bytes without trailing NULs
  (numpy's ``arr[i]``).  ``U`` arrays are str keys.  Structured arrays give
  one field (``column=``);
- Parquet (``.parquet``, ``.pq``, ``.parq``) and CSV (``.csv``, ``.tsv``,
  optionally compressed, e.g. ``.csv.gz``) through pyarrow: one column,
  streamed in record batches (``ParquetFile.iter_batches``,
  ``pyarrow.csv.open_csv``), never the whole file.  Integer columns are
  ints (a numpy view of each batch: the buffer path), bool columns 0/1,
  string columns str (UTF-8), binary columns bytes (both read in place
  through ``_core.ByteKeys``: no Python object per key).  Null values are
  skipped and counted.  Their batches are decoded in a reader thread,
  READ_AHEAD batches ahead of the adds (pyarrow decodes and ``add_many``
  of buffer keys hashes without the GIL, so the two overlap on two cores).

Refused, with a TypeError naming the file, the column and its type: float
and decimal columns (a Python float is not a key either), dates, times and
timestamps (no one encoding is obviously right: cast the column to int or
string first, or pass ``key=`` to the structure, which then receives each
value as the Python object pyarrow gives, ``datetime.date`` and so on),
nested types.  With ``key=`` every value goes through it as a Python
object, as ``add_many`` of those objects would.

Capacity by default: the number of non-null values, free from metadata
where the format records it (Parquet row counts less the null counts of the
column statistics; the ``.npy`` shape), else one counting pass (text lines,
CSV), as ``bloomkit build`` always did.
"""

from __future__ import annotations

import gzip
import importlib
import inspect
import mmap
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["FORMATS", "ReadStats", "add_from", "build_from", "count_keys", "open_sources"]

#: The formats ``format=`` names; ``None`` (or ``"auto"``) picks by file name.
FORMATS = ("lines", "npy", "parquet", "csv")

#: Keys per ``add_many`` call: large enough to amortise the call and the
#: conversion of one batch, small in memory (64 Ki keys: 512 KiB of int64).
BATCH_ROWS = 65536
PARQUET_BUFFER = 1 << 20  # Parquet reads: streamed through a 1 MiB buffer

ARROW_HINT = "pip install 'bloomkit[arrow]'"

_SUFFIXES = {
    ".npy": "npy",
    ".parquet": "parquet", ".pq": "parquet", ".parq": "parquet",
    ".csv": "csv", ".tsv": "csv",
}
# compressed CSV, by extension: pyarrow's codec names
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4", ".br": "brotli"}
_COMPRESSED = tuple(_CODECS)


@dataclass
class ReadStats:
    """What was read: files, rows (values and nulls), keys added, nulls skipped, bytes."""

    files: int = 0
    rows: int = 0
    keys: int = 0
    nulls: int = 0
    bytes: int = 0

    def describe(self) -> str:
        """``3 files, 1,000 rows, 12 nulls skipped, 4.1 MiB read`` (nulls only when some)."""
        parts = [f"{self.files:,} file{'' if self.files == 1 else 's'}", f"{self.rows:,} rows"]
        if self.nulls:
            parts.append(f"{self.nulls:,} null{'' if self.nulls == 1 else 's'} skipped")
        parts.append(f"{_human(self.bytes)} read")
        return ", ".join(parts)


@dataclass
class Batch:
    """One batch of a source: keys (a list, or a 1-d numpy array for the
    buffer path), the rows it covered (keys and nulls), the nulls skipped,
    and how far into the file (bytes) the source has read."""

    keys: Any
    rows: int
    nulls: int
    position: int


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _need(module: str, what: str, hint: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what} needs {module.split('.')[0]}: {hint}") from exc


# ---- Begin logic for file names, globs and formats ------------------------------------


def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def expand(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The files named by ``paths`` (a path, a glob, or several): an existing
    name is itself (even with ``*`` in it), a glob its matches in sorted
    order (``**`` recursive).  A missing file, a glob that matches nothing
    and a directory are errors naming them; ``-`` (stdin) is kept."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    import glob

    out: list[str] = []
    for p in paths:
        name = os.fspath(p)
        if not isinstance(name, str):
            raise TypeError(f"paths must be str or os.PathLike, not {type(p).__name__}")
        if name == "-" or os.path.exists(name):
            found = [name]
        elif _has_magic(name):
            found = sorted(m for m in glob.glob(name, recursive=True) if not os.path.isdir(m))
            if not found:
                raise FileNotFoundError(f"{name}: no file matches")
        else:
            raise FileNotFoundError(2, "No such file or directory", name)
        for f in found:
            if os.path.isdir(f):
                raise IsADirectoryError(21, "Is a directory", f)
        out.extend(found)
    if not out:
        raise ValueError("no input files")
    if out.count("-") > 1:
        raise ValueError("stdin ('-') can be given only once")
    return out


def detect_format(name: str) -> str:
    """The format a file name implies: by suffix (``.npy``, ``.parquet``/
    ``.pq``/``.parq``, ``.csv``/``.tsv`` also compressed), else ``lines``."""
    low = name.lower()
    for comp in _COMPRESSED:
        if low.endswith(comp):
            stem = low[: -len(comp)]
            return "csv" if os.path.splitext(stem)[1] in (".csv", ".tsv") else "lines"
    return _SUFFIXES.get(os.path.splitext(low)[1], "lines")


# ---- End logic for file names, globs and formats --------------------------------------


class Source:
    """One input file.  ``count()`` is its number of keys (non-null values):
    free from metadata when ``hint()`` is not None, else a counting pass;
    ``batches()`` reads it (again).  ``size`` is the file's bytes (0 for
    stdin); ``describe()`` names the column and its type, if any."""

    name: str
    size: int = 0
    column: str | None = None  # the column (or .npy field) read, if any
    #: batches() decodes without the GIL (pyarrow), so feed() reads ahead
    #: in a thread while the adds run
    read_ahead = False

    def hint(self) -> int | None:
        return None

    def count(self) -> int:
        hint = self.hint()
        if hint is not None:
            return hint
        return sum(b.rows - b.nulls for b in self.batches(counting=True))

    def batches(self, counting: bool = False) -> Iterator[Batch]:  # pragma: no cover
        raise NotImplementedError

    def describe(self) -> str:
        return "lines"


# ---- Begin logic for text lines -------------------------------------------------------


def open_input(name: str) -> IO[bytes]:
    """A binary stream of a key file (``-`` is stdin), gunzipped when needed."""
    raw: IO[bytes]
    if name == "-":
        raw = sys.stdin.buffer
    else:
        raw = open(name, "rb")
    peek = getattr(raw, "peek", None)
    magic = peek(2)[:2] if peek is not None else b""
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


def lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The keys of a text stream: each line without ``\\n``/``\\r\\n``, blank lines skipped."""
    for line in stream:
        key = line.rstrip(b"\r\n") if line.endswith(b"\n") else line
        if key:
            yield key


class LinesSource(Source):
    """One key per line.  stdin can be read once: counting it keeps its keys."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.size = 0 if name == "-" else os.path.getsize(name)
        self._kept: list[bytes] | None = None

    def count(self) -> int:
        if self.name == "-":
            if self._kept is None:
                self._kept = [k for b in self._read() for k in b.keys]
            return len(self._kept)
        return super().count()

    def batches(self, counting: bool = False) -> Iterator[Batch]:
        if self._kept is not None:
            kept, self._kept = self._kept, None
            position = 0
            for i in range(0, len(kept), BATCH_ROWS):
                part = kept[i:i + BATCH_ROWS]
                position += sum(len(k) + 1 for k in part)
                yield Batch(part, len(part), 0, position)
            if not kept:
                yield Batch([], 0, 0, 0)
            return
        yield from self._read()

    def _read(self) -> Iterator[Batch]:
        stream = open_input(self.name)
        raw: Any = stream.fileobj if isinstance(stream, gzip.GzipFile) else stream
        seen = 0  # bytes of the lines so far, when the file cannot tell its position
        try:
            chunk: list[bytes] = []
            for key in lines(stream):
                chunk.append(key)
                seen += len(key) + 1
                if len(chunk) == BATCH_ROWS:
                    yield Batch(chunk, len(chunk), 0, _tell(raw, seen))
                    chunk = []
            if chunk or seen == 0:
                yield Batch(chunk, len(chunk), 0, _tell(raw, seen))
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise OSError(f"{self.name}: cannot read keys: {exc}") from exc
        finally:
            if self.name != "-":
                stream.close()


def _tell(raw: Any, fallback: int) -> int:
    try:
        return int(raw.tell())
    except (OSError, ValueError, AttributeError):
        return fallback


# ---- End logic for text lines ---------------------------------------------------------

# ---- Begin logic for .npy arrays ------------------------------------------------------


class NpySource(Source):
    """A 1-d ``.npy`` array, memory-mapped and read in slices.  The mapping
    is held only while the file is read (a glob of thousands of files must
    not hold thousands of mappings and descriptors)."""

    def __init__(self, name: str, column: str | None, keyed: bool) -> None:
        self.name = name
        self.size = os.path.getsize(name)
        self._keyed = keyed
        self._field = column
        arr = self._map()  # every check now, before any key is read
        self._len = int(arr.shape[0])
        self._dtype = arr.dtype
        del arr

    def _map(self) -> Any:
        name, column = self.name, self._field
        np = _need("numpy", f"{name}: reading .npy", "pip install 'bloomkit[numpy]'")
        with open(name, "rb") as fh:
            magic = fh.read(6)
        if magic != b"\x93NUMPY":
            what = "a .npz archive (save each array with numpy.save)" if magic[:2] == b"PK" \
                else "no .npy magic number"
            raise ValueError(f"{name}: not a .npy file: {what}")
        try:
            arr = np.load(name, mmap_mode="r", allow_pickle=False)
        except Exception as exc:  # a bad header fails in numpy's parser in many ways
            if isinstance(exc, OSError) and exc.filename:
                raise
            text = " ".join(str(exc).split()) or type(exc).__name__
            raise ValueError(f"{name}: cannot read .npy: {text}") from exc
        if not isinstance(arr, np.ndarray):  # pragma: no cover - the magic number says .npy
            raise ValueError(f"{name}: not a .npy array")
        names = arr.dtype.names
        if names:
            if column is None:
                if len(names) != 1:
                    raise ValueError(f"{name}: a structured array: pick a field with column= "
                                     f"/ --column ({', '.join(names)})")
                column = names[0]
            if column not in names:
                raise ValueError(f"{name}: no field {column!r} (fields: {', '.join(names)})")
            arr = arr[column]
            self.column = column
        if arr.ndim != 1:
            raise ValueError(f"{name}: a {arr.ndim}-d array of shape {arr.shape}; bloomkit reads "
                             "1-d arrays (reshape(-1) it, or save one column)")
        where = f"{name}" + (f" field {column!r}" if column else "")
        kind = arr.dtype.kind
        if kind in "fc":
            raise TypeError(f"{where}: dtype {arr.dtype} is a float: floats are not keys "
                            "(a Python float is not either); save integers or strings")
        if kind in "Mm" and not self._keyed:
            raise TypeError(f"{where}: dtype {arr.dtype} (dates/times) is not a key type; "
                            "save .astype('int64') or strings, or pass key= to map the values")
        if kind not in "iubSUMm":
            raise TypeError(f"{where}: dtype {arr.dtype} is not a key type (supported: "
                            "integer, bool, fixed-width bytes S, unicode U)")
        return arr

    def hint(self) -> int:
        return self._len

    def describe(self) -> str:
        return f".npy {self._dtype}"

    def batches(self, counting: bool = False) -> Iterator[Batch]:
        arr = self._map()
        n = int(arr.shape[0])
        native = arr.dtype.newbyteorder("=") if not arr.dtype.isnative else None
        drop = _DropBehind(arr)
        if n == 0:
            yield Batch([], 0, 0, self.size)
        for start in range(0, n, BATCH_ROWS):
            part = arr[start:start + BATCH_ROWS]
            stop = start + len(part)
            drop.consumed(start)  # rows before this batch were handed out and added
            position = self.size * stop // n
            if counting:
                yield Batch([], len(part), 0, position)
                continue
            if self._keyed or part.dtype.kind in "UMm":
                keys: Any = part.tolist()  # str keys (U), or the objects key= maps
            elif native is not None:
                keys = part.astype(native)  # big-endian: the buffer path reads native
            else:
                keys = part
            yield Batch(keys, len(part), 0, position)


class _DropBehind:
    """Keeps a mapped ``.npy`` file's pages out of this process's RSS.

    Pages of a file mapping that were read count in the reader's resident
    set until they are unmapped, so reading a 8 GB array (10^9 int64 keys)
    through one map would take the process's RSS to 8 GB plus the filter,
    though the kernel could drop them at any time (issue #19: peak RSS at
    most the filter plus 256 MiB).  Every DROP_BYTES of rows read, the
    pages wholly before the read position are released with
    ``madvise(MADV_DONTNEED)`` (a read-only shared file map: the page cache
    keeps them, nothing is lost; a re-read faults them back), and the map
    is marked ``MADV_SEQUENTIAL`` (larger read-ahead).  Where the map or
    ``madvise`` is not available this does nothing."""

    DROP_BYTES = 64 << 20

    def __init__(self, arr: Any) -> None:
        self._mm = None
        base = arr
        while base is not None and not isinstance(base, mmap.mmap):
            base = getattr(base, "_mmap", None) or getattr(base, "base", None)
        if isinstance(base, mmap.mmap) and hasattr(base, "madvise") \
                and hasattr(mmap, "MADV_DONTNEED"):
            self._mm = base
            self._stride = max(1, int(arr.strides[0]) if arr.ndim else 1)
            self._dropped = 0
            try:
                base.madvise(mmap.MADV_SEQUENTIAL)
            except (OSError, AttributeError):
                pass

    def consumed(self, rows: int) -> None:
        """Rows before ``rows`` are no longer needed."""
        mm = self._mm
        if mm is None:
            return
        # the array starts at or after the map's start, so rows * stride
        # bytes from the map's start are all before the read position
        end = min(rows * self._stride, len(mm)) // mmap.PAGESIZE * mmap.PAGESIZE
        if end - self._dropped < self.DROP_BYTES:
            return
        try:
            mm.madvise(mmap.MADV_DONTNEED, self._dropped, end - self._dropped)
        except (OSError, ValueError):
            self._mm = None  # a platform that refuses: stop trying
            return
        self._dropped = end


# ---- End logic for .npy arrays --------------------------------------------------------

# ---- Begin logic for Arrow columns (Parquet, CSV) -------------------------------------


def _arrow(what: str) -> Any:
    return _need("pyarrow", what, ARROW_HINT)


def check_arrow_type(t: Any, where: str, keyed: bool) -> None:
    """Refuse a column type that is not a key (TypeError naming ``where``)."""
    pa = _arrow(where)
    types = pa.types
    if types.is_dictionary(t):
        t = t.value_type
    if keyed:
        return  # every value goes through key= as a Python object
    if (types.is_integer(t) or types.is_boolean(t) or types.is_string(t)
            or types.is_large_string(t) or types.is_binary(t) or types.is_large_binary(t)
            or types.is_fixed_size_binary(t) or types.is_null(t)
            or _is_view(types, t)):
        return
    if types.is_floating(t) or types.is_decimal(t):
        raise TypeError(f"{where} is {t}: floats are not keys (a Python float is not either); "
                        "cast the column to an integer or string type")
    if types.is_temporal(t):
        raise TypeError(f"{where} is {t}: dates and times are not keys (which encoding would "
                        "be right is not obvious); cast the column to int64 or string, or "
                        "pass key= to build_from to map each value")
    raise TypeError(f"{where} is {t}, not a key type (supported: integer, bool, string, "
                    "binary)")


def _is_view(types: Any, t: Any) -> bool:
    # string_view / binary_view exist in pyarrow >= 16
    return any(getattr(types, f, lambda _: False)(t)
               for f in ("is_string_view", "is_binary_view"))


def arrow_keys(arr: Any, keyed: bool) -> tuple[Any, int]:
    """(keys, nulls) of one Arrow array, nulls dropped: integer and bool
    columns a numpy array (zero-copy for integers without nulls), string and
    binary columns a :class:`bloomkit._core.ByteKeys` over the array's own
    offsets and data (zero-copy); both take the batch path without the GIL
    and without a Python object per key.  A string is hashed as its UTF-8
    bytes, as a ``str`` key is.  With ``key=``: the Python objects."""
    pa = _arrow("reading Arrow data")
    types = pa.types
    if types.is_null(arr.type):
        return [], len(arr)  # every value is null
    nulls = int(arr.null_count)
    if nulls:
        arr = arr.drop_null()
    t = arr.type
    if types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if keyed:
        return arr.to_pylist(), nulls
    if types.is_integer(t) or types.is_boolean(t):
        return arr.to_numpy(zero_copy_only=False), nulls
    if _is_view(types, t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    return byte_keys(arr), nulls


def byte_keys(arr: Any) -> Any:
    """A ByteKeys over a string, binary (either width) or fixed-size binary
    Arrow array without nulls, sharing its buffers."""
    import numpy as np

    from ._core import ByteKeys

    types = _arrow("reading Arrow data").types
    n = len(arr)
    if n == 0:
        return []
    buffers = arr.buffers()
    if types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        offsets = (np.arange(n + 1, dtype=np.int64) + arr.offset) * width
        data = buffers[1]
    else:
        wide = types.is_large_string(arr.type) or types.is_large_binary(arr.type)
        dtype = np.int64 if wide else np.int32
        offsets = np.frombuffer(buffers[1], dtype=dtype, count=n + 1,
                                offset=arr.offset * np.dtype(dtype).itemsize)
        data = buffers[2]
    return ByteKeys(offsets, b"" if data is None else data)


def _pick_column(names: Sequence[str], column: str | None, where: str) -> str:
    if column is None:
        if len(names) == 1:
            return names[0]
        raise ValueError(f"{where}: {len(names)} columns: pick one with column= / --column "
                         f"({', '.join(names)})")
    if column not in names:
        raise ValueError(f"{where}: no column {column!r} (columns: {', '.join(names)})")
    return column


class ParquetSource(Source):
    """One Parquet column, read row group by row group in record batches."""

    read_ahead = True

    def __init__(self, name: str, column: str | None, keyed: bool) -> None:
        pa = _arrow(f"{name}: reading Parquet")
        pq = importlib.import_module("pyarrow.parquet")
        self.name = name
        self.size = os.path.getsize(name)
        self._keyed = keyed
        self._pq = pq
        try:
            # closed again at once: a glob of thousands of files holds no descriptors
            with pq.ParquetFile(name) as pf:
                schema = pf.schema_arrow
                self._meta = pf.metadata
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{name}: cannot read Parquet: {exc}") from exc
        self.column = _pick_column(schema.names, column, name)
        self._type = schema.field(self.column).type
        check_arrow_type(self._type, f"{name}: column {self.column!r}", keyed)

    def describe(self) -> str:
        return f"column {self.column!r}: {self._type}"

    def hint(self) -> int:
        """Rows less the column's nulls where every row group's statistics
        count them (else all rows: a bound, never below the truth)."""
        meta = self._meta
        rows = int(meta.num_rows)
        if meta.num_row_groups == 0:
            return rows
        first = meta.row_group(0)
        leaf = [i for i in range(first.num_columns)
                if first.column(i).path_in_schema == self.column]
        if len(leaf) != 1:
            return rows  # a nested column: its statistics are per leaf
        nulls = 0
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(leaf[0]).statistics
            if stats is None or not stats.has_null_count:
                return rows
            nulls += int(stats.null_count)
        return max(0, rows - nulls)

    def batches(self, counting: bool = False) -> Iterator[Batch]:
        pa = _arrow("reading Parquet")
        done = 0
        try:
            # pre_buffer=False: pyarrow's default pre-buffers the column's
            # chunks of many row groups at once; reading a 10^8-row int64
            # column that held 971 MiB at its peak and took 3.1 s of CPU,
            # streamed (a 1 MiB read buffer) 92 MiB and 0.6 s (issue #19)
            with self._pq.ParquetFile(self.name, pre_buffer=False,
                                      buffer_size=PARQUET_BUFFER) as pf:
                total = max(1, int(pf.metadata.num_rows))
                for rb in pf.iter_batches(batch_size=BATCH_ROWS, columns=[self.column]):
                    arr = rb.column(0)
                    done += len(arr)
                    position = self.size * done // total
                    if counting:
                        yield Batch([], len(arr), int(arr.null_count), position)
                        continue
                    keys, nulls = arrow_keys(arr, self._keyed)
                    yield Batch(keys, len(arr), nulls, position)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.name}: cannot read Parquet: {exc}") from exc
        if done == 0:
            yield Batch([], 0, 0, self.size)


class CsvSource(Source):
    """One CSV column, streamed with ``pyarrow.csv.open_csv`` (the first line
    names the columns).  An empty unquoted cell is null; everything else is
    a value (``NA`` and ``null`` are keys too: a country code may be ``NA``).
    The column's type is inferred from the first block unless ``as_text``
    (then it is text: ``007`` stays ``"007"``)."""

    read_ahead = True

    BLOCK = 1 << 20  # bytes pyarrow parses at a time (its default)

    def __init__(self, name: str, column: str | None, keyed: bool,
                 delimiter: str | None, as_text: bool) -> None:
        pa = _arrow(f"{name}: reading CSV")
        self._csv = importlib.import_module("pyarrow.csv")
        self.name = name
        self.size = os.path.getsize(name)
        self._keyed = keyed
        self._as_text = as_text
        if delimiter is None:
            stem = name.lower()
            for comp in _COMPRESSED:
                stem = stem[: -len(comp)] if stem.endswith(comp) else stem
            delimiter = "\t" if stem.endswith(".tsv") else ","
        if len(delimiter) != 1:
            raise ValueError(f"the CSV delimiter must be one character, not {delimiter!r}")
        self._delimiter = delimiter
        try:
            head = self._head()
            if head is None:  # pyarrow: "Empty CSV file or block: cannot infer ..."
                raise ValueError(
                    f"{name}: cannot read CSV: no line end in its first {self.BLOCK:,} bytes "
                    "(not text, or a header line longer than a block)")
            names = self._probe(head, None).schema.names
            self.column = _pick_column(names, column, name)
            self._type = self._probe(head, self.column).schema.field(self.column).type
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{name}: cannot read CSV: {exc}") from exc
        check_arrow_type(self._type, f"{name}: column {self.column!r}", keyed)

    def _open(self, column: str | None) -> tuple[Any, Any]:
        """(a streaming reader of the file, the raw file: its position is
        the bytes read).

        Never close the raw file while its reader may live: pyarrow's
        streaming reader reads blocks ahead on its I/O threads from the
        moment it opens, and a read that has passed the file's closed-check
        when we close it lands on whatever file is opened next under the
        same descriptor number (seen in CI: the next open of the same CSV
        lost its first 64-byte block, header and all).  Dropping our
        references leaves the closing to the last owner, a pending read
        included."""
        raw = _arrow("reading CSV").OSFile(self.name)
        return self._reader(self._decompressed(raw), column), raw

    def _decompressed(self, raw: Any) -> Any:
        low = self.name.lower()
        codec = next((c for suffix, c in _CODECS.items() if low.endswith(suffix)), None)
        return _arrow("reading CSV").CompressedInputStream(raw, codec) if codec else raw

    def _reader(self, stream: Any, column: str | None) -> Any:
        pa = _arrow("reading CSV")
        convert = self._csv.ConvertOptions(
            include_columns=[column] if column is not None else None,
            column_types={column: pa.string()} if column is not None and self._as_text else None,
            null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False)
        return self._csv.open_csv(
            stream, read_options=self._csv.ReadOptions(block_size=self.BLOCK),
            parse_options=self._csv.ParseOptions(delimiter=self._delimiter),
            convert_options=convert)

    def _head(self) -> bytes | None:
        """The whole lines of the (decompressed) file's first BLOCK bytes:
        what pyarrow names the columns and infers their types from.  Read
        here, in this thread, and parsed from memory, because a reader on
        the file starts reading some 30 blocks (30 MiB) ahead for a look at
        one: the two looks (names, then type) had read about 60 MiB of every
        CSV of a glob.  None when those bytes hold no line end."""
        with _arrow("reading CSV").OSFile(self.name) as raw:
            stream = self._decompressed(raw)
            parts: list[bytes] = []
            got = 0
            while got < self.BLOCK:
                part = stream.read(self.BLOCK - got)
                if not part:
                    return b"".join(parts)  # the whole file
                parts.append(part)
                got += len(part)
        head = b"".join(parts)
        cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
        return head[: cut + 1] if cut >= 0 else None

    def _probe(self, head: bytes, column: str | None) -> Any:
        """A reader whose schema is the file's (from ``_head``'s lines)."""
        return self._reader(_arrow("reading CSV").BufferReader(head), column)

    def describe(self) -> str:
        return f"column {self.column!r}: {self._type}"

    def batches(self, counting: bool = False) -> Iterator[Batch]:
        pa = _arrow("reading CSV")
        reader = raw = None
        try:
            reader, raw = self._open(self.column)
            for rb in reader:
                arr = rb.column(0)
                position = _tell(raw, 0)
                for start in range(0, len(arr), BATCH_ROWS):
                    part = arr.slice(start, BATCH_ROWS)
                    if counting:
                        yield Batch([], len(part), int(part.null_count), position)
                        continue
                    keys, nulls = arrow_keys(part, self._keyed)
                    yield Batch(keys, len(part), nulls, position)
        except (pa.ArrowException, OSError) as exc:
            hint = "" if self._as_text else (
                f" (the column's type, {self._type}, was inferred from the first block; "
                "read it as text with as_text=True / --as-text)")
            raise ValueError(f"{self.name}: cannot read CSV: {exc}{hint}") from exc
        finally:
            reader = raw = None  # not closed: see _open (a traceback would keep them)
        yield Batch([], 0, 0, self.size)


# ---- End logic for Arrow columns ------------------------------------------------------


def open_sources(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    column: str | None = None,
    format: str | None = None,
    delimiter: str | None = None,
    as_text: bool = False,
    keyed: bool = False,
) -> list[Source]:
    """One :class:`Source` per file (globs expanded).  Every file is opened
    and its column checked now, before any key is read.  ``column`` applies
    to Parquet, CSV and structured ``.npy`` files; ``delimiter`` and
    ``as_text`` to CSV; ``keyed``: the structure has a ``key=`` function
    (every value is then handed to it as a Python object)."""
    if format == "auto":
        format = None
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)} or None, not {format!r}")
    names = expand(paths)
    out: list[Source] = []
    for name in names:
        fmt = format or ("lines" if name == "-" else detect_format(name))
        if name == "-" and fmt != "lines":
            raise ValueError(f"stdin ('-') is read as text lines, not {fmt}")
        if fmt == "lines":
            out.append(LinesSource(name))
        elif fmt == "npy":
            out.append(NpySource(name, column, keyed))
        elif fmt == "parquet":
            out.append(ParquetSource(name, column, keyed))
        else:
            out.append(CsvSource(name, column, keyed, delimiter, as_text))
    # An option no file uses is refused, not ignored (one that some files
    # use is fine: `users.parquet ids.npy --column user_id`).
    if column is not None and not any(s.column is not None for s in out):
        raise ValueError(f"{names[0]}: column= / --column applies to Parquet, CSV and "
                         "structured .npy files, and no file given is one (a text file has "
                         "one key per line; name files .parquet, .csv or .npy, or give the "
                         "format)")
    if (delimiter is not None or as_text) and not any(isinstance(s, CsvSource) for s in out):
        raise ValueError(f"{names[0]}: the delimiter and as-text options apply to CSV files, "
                         "and no file given is one")
    return out


def count_keys(sources: Sequence[Source]) -> int:
    """The number of keys (non-null values) of every source: metadata where
    free, else a counting pass."""
    return sum(s.count() for s in sources)


def free_count(sources: Sequence[Source]) -> int | None:
    """count_keys when every source knows it from metadata, else None."""
    hints = [s.hint() for s in sources]
    return None if any(h is None for h in hints) else sum(h for h in hints if h is not None)


#: Batches a reader thread decodes ahead of the adds (feed): with two
#: cores, pyarrow's decoding and a GIL-free add_many overlap.  Measured on
#: the 2-core AMD guest, `bloomkit build` of a 10^8-row int64 Parquet
#: column: see docs/scale.md ("Reading ahead").  Memory: this many batches
#: plus one being decoded and one being added (64 Ki keys each).
READ_AHEAD = 2


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


def _read_ahead(src: Source) -> Iterator[Batch]:
    """``src.batches()`` decoded in a reader thread, READ_AHEAD batches
    ahead, in order.  An error in the reader is raised here; leaving early
    (an add that raised, a KeyboardInterrupt) stops the reader and closes
    the source before this returns."""
    q: queue.Queue[Any] = queue.Queue(maxsize=READ_AHEAD)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        gen = src.batches()
        last: Any = _DONE
        try:
            for b in gen:
                if not put(b):
                    return
        except BaseException as exc:  # handed to the consumer
            last = _Failed(exc)
        finally:
            close = getattr(gen, "close", None)  # a generator: its files close now
            if close is not None:
                close()
        put(last)

    reader = threading.Thread(target=run, name=f"bloomkit-read {src.name}", daemon=True)
    reader.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()
        reader.join()


def feed(obj: Any, sources: Sequence[Source],
         progress: Callable[[ReadStats], None] | None = None) -> ReadStats:
    """Add (``record_many`` for TinyLFU) every key of ``sources`` to ``obj``;
    ``progress`` is called after each batch with the running totals."""
    add = obj.record_many if hasattr(obj, "record_many") else obj.add_many
    stats = ReadStats()
    for src in sources:
        stats.files += 1
        done = stats.bytes
        for b in _read_ahead(src) if src.read_ahead else src.batches():
            if len(b.keys):
                add(b.keys)
            stats.rows += b.rows
            stats.nulls += b.nulls
            stats.keys += b.rows - b.nulls
            stats.bytes = done + b.position
            if progress is not None:
                progress(stats)
    return stats


def _keyed(params: dict[str, Any]) -> bool:
    return params.get("key") is not None


def add_from(
    obj: Any,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    column: str | None = None,
    format: str | None = None,
    delimiter: str | None = None,
    as_text: bool = False,
    progress: Callable[[ReadStats], None] | None = None,
) -> ReadStats:
    """Add the keys of data files to an existing structure; returns what was
    read (:class:`ReadStats`: files, rows, keys, nulls skipped, bytes)."""
    keyed = getattr(obj, "key", None) is not None
    srcs = open_sources(paths, column=column, format=format, delimiter=delimiter,
                        as_text=as_text, keyed=keyed)
    return feed(obj, srcs, progress)


def _accepts(kind: type[Any], name: str) -> bool:
    try:
        sig = inspect.signature(kind)
    except (TypeError, ValueError):  # pragma: no cover - C types without signatures
        return True
    return name in sig.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())


def build_from(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    kind: type[Any] | None = None,
    capacity: int | None = None,
    error_rate: float | None = None,
    *,
    column: str | None = None,
    format: str | None = None,
    delimiter: str | None = None,
    as_text: bool = False,
    progress: Callable[[ReadStats], None] | None = None,
    **params: Any,
) -> Any:
    """A new ``kind(capacity, error_rate, **params)`` (default
    :class:`~bloomkit.BlockedBloomFilter`) holding the keys of data files.

    ``paths``: a path, a glob (``"data/*.parquet"``) or several.  Formats by
    file name (``format=`` overrides): text lines, ``.npy``, Parquet, CSV;
    see this module's docstring for the key each value becomes.
    ``column``: the Parquet/CSV column (needed when a file has several).
    ``capacity=None``: the number of non-null values, from metadata where
    free (Parquet, ``.npy``), else one counting pass.  ``params`` go to the
    constructor (``seed=``, ``key=``, ``secret=``, ...); capacity and
    error_rate only to kinds that take them (as in ``bloomkit.dask.build``).
    ``progress`` is called after every batch with the running
    :class:`ReadStats`.  Pyarrow (Parquet, CSV): ``pip install 'bloomkit[arrow]'``.
    """
    if kind is None:
        from .bloom import BlockedBloomFilter

        kind = BlockedBloomFilter
    if not isinstance(kind, type):
        raise TypeError(f"kind must be a bloomkit structure class, not {type(kind).__name__}")
    srcs = open_sources(paths, column=column, format=format, delimiter=delimiter,
                        as_text=as_text, keyed=_keyed(params))
    if getattr(kind, "_bk_static", False):
        return _build_static(kind, srcs, capacity, error_rate, progress, params)
    kwargs = dict(params)
    if _accepts(kind, "capacity"):
        kwargs["capacity"] = max(1, count_keys(srcs)) if capacity is None else capacity
    elif capacity is not None:
        raise TypeError(f"{kind.__name__} takes no capacity")
    if error_rate is not None:
        if not _accepts(kind, "error_rate"):
            raise TypeError(f"{kind.__name__} takes no error_rate")
        kwargs["error_rate"] = error_rate
    obj = kind(**kwargs)
    feed(obj, srcs, progress)
    return obj


class _HashCollector:
    """Takes ``add_many`` batches and keeps only their 64-bit key hashes."""

    def __init__(self, kind: type[Any], params: dict[str, Any]) -> None:
        from array import array

        self.kind, self.hashes = kind, array("Q")
        self.hashing = {"seed": params.get("seed", 0), "secret": params.get("secret"),
                        "key": params.get("key")}

    def add_many(self, keys: Any) -> None:
        self.hashes.frombytes(self.kind._hash_keys(keys, **self.hashing))


def _build_static(kind: type[Any], srcs: Sequence[Source], capacity: int | None,
                  error_rate: float | None, progress: Callable[[ReadStats], None] | None,
                  params: dict[str, Any]) -> Any:
    """A static kind (BinaryFuseFilter): every key's hash (8 bytes a key),
    then the filter in one call, built in place on them."""
    if capacity is not None:
        raise TypeError(f"{kind.__name__} takes no capacity: it is built from exactly its keys")
    collect = _HashCollector(kind, params)
    feed(collect, srcs, progress)
    return kind.from_hashes(collect.hashes, error_rate=error_rate, reuse=True, **params)

