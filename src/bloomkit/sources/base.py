"""What every key source shares: the formats and their file names, globs,
the batch and read statistics types, the :class:`Source` base class, and
text lines (:func:`open_input`, :func:`lines`, :class:`LinesSource`).
The package docstring (bloomkit.sources) describes every format.
"""

from __future__ import annotations

import gzip
import importlib
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

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
CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4", ".br": "brotli"}
COMPRESSED = tuple(CODECS)


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


def need(module: str, what: str, hint: str) -> Any:
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
    for comp in COMPRESSED:
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


UTF8_BOM = b"\xef\xbb\xbf"


def lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The keys of a text stream: each line without ``\\n``/``\\r\\n``, blank lines
    skipped, and a UTF-8 byte-order mark at the very start dropped (Windows
    editors write one: it made the first key ``b"\\xef\\xbb\\xbfhunter2"``, which
    no query of ``hunter2`` finds; issue #31 item 3).  The one reader of text
    keys: the CLI's KEYS files, ``--from`` and stdin, ``build_from`` and
    :func:`bloomkit.lines`."""
    first = True
    for line in stream:
        if first:
            first = False
            if line.startswith(UTF8_BOM):
                line = line[len(UTF8_BOM):]
        key = line.rstrip(b"\r\n") if line.endswith(b"\n") else line
        if key:
            yield key


def key_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The keys of a text file, exactly as ``bloomkit build``/``add``/``query``
    read them: one key per line, as the line's bytes without its ``\\n`` or
    ``\\r\\n``; blank lines skipped; a UTF-8 byte-order mark at the start
    dropped; gzip recognised by its magic number; ``"-"`` is stdin.  Exported
    as ``bloomkit.lines``::

        g = bloomkit.BinaryFuseFilter(bloomkit.lines("leaked.txt"))
        "hunter2" in g      # True: str keys hash as their UTF-8 bytes

    (Iterating a Python file instead yields each line *with* its newline,
    and ``open()`` in text mode keeps a BOM as ``"\\ufeff"``: docs/keys.md.)
    The file is opened when iteration starts and closed when it ends."""
    name = os.fspath(path)
    stream = open_input(name)
    try:
        yield from lines(stream)
    finally:
        if name != "-":
            stream.close()


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
                    yield Batch(chunk, len(chunk), 0, tell(raw, seen))
                    chunk = []
            if chunk or seen == 0:
                yield Batch(chunk, len(chunk), 0, tell(raw, seen))
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise OSError(f"{self.name}: cannot read keys: {exc}") from exc
        finally:
            if self.name != "-":
                stream.close()


def tell(raw: Any, fallback: int) -> int:
    try:
        return int(raw.tell())
    except (OSError, ValueError, AttributeError):
        return fallback


# ---- End logic for text lines ---------------------------------------------------------
