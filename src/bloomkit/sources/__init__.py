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

The package's modules: base.py (formats, file names, the Source base
class, text lines), npy.py, arrow.py (Parquet and CSV); this module opens
sources and feeds them to structures (read ahead in a thread for pyarrow).
"""

from __future__ import annotations

import inspect
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .. import _descriptor, _domains
from .arrow import CsvSource as CsvSource
from .arrow import ParquetSource as ParquetSource
from .base import ARROW_HINT as ARROW_HINT
from .base import BATCH_ROWS as BATCH_ROWS  # patch sources.base.BATCH_ROWS to change it
from .base import (
    FORMATS,
    Batch,
    LinesSource,
    ReadStats,
    detect_format,
    expand,
)
from .base import PARQUET_BUFFER as PARQUET_BUFFER
from .base import (
    Source as Source,  # the type of open_sources' items
)
from .npy import NpySource as NpySource

__all__ = ["FORMATS", "ReadStats", "add_from", "build_from", "count_keys", "open_sources"]


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
        from ..bloom import BlockedBloomFilter

        kind = BlockedBloomFilter
    if not isinstance(kind, type):
        raise TypeError(f"kind must be a bloomkit structure class, not {type(kind).__name__}")
    srcs = open_sources(paths, column=column, format=format, delimiter=delimiter,
                        as_text=as_text, keyed=_keyed(params))
    desc = _descriptor.of(kind)
    if desc is not None and desc.static:
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
        self.domains = 0  # the key domains hashed (bloomkit/_domains.py masks)

    def add_many(self, keys: Any) -> None:
        raw, seen = self.kind._hash_keys(keys, domains=True, **self.hashing)
        self.hashes.frombytes(raw)
        self.domains |= seen

    @property
    def key_types(self) -> frozenset[str]:
        return _domains.names(self.domains)


def _build_static(kind: type[Any], srcs: Sequence[Source], capacity: int | None,
                  error_rate: float | None, progress: Callable[[ReadStats], None] | None,
                  params: dict[str, Any]) -> Any:
    """A static kind (BinaryFuseFilter): every key's hash (8 bytes a key),
    then the filter in one call, built in place on them."""
    if capacity is not None:
        raise TypeError(f"{kind.__name__} takes no capacity: it is built from exactly its keys")
    collect = _HashCollector(kind, params)
    feed(collect, srcs, progress)
    return kind.from_hashes(collect.hashes, error_rate=error_rate, reuse=True,
                            key_types=collect.key_types, **params)
