"""Parquet and CSV columns as key sources, through pyarrow: one column,
streamed in record batches, never the whole file; the Arrow types accepted
as keys and how each becomes keys (bloomkit.sources describes them).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import ColumnNotFoundError
from . import base
from .base import ARROW_HINT, CODECS, COMPRESSED, PARQUET_BUFFER, Batch, Source, need, tell

# ---- Begin logic for Arrow columns (Parquet, CSV) -------------------------------------


def _arrow(what: str) -> Any:
    return need("pyarrow", what, ARROW_HINT)


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

    from .._core import ByteKeys

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
        raise ColumnNotFoundError(f"{where}: no column {column!r} (columns: {', '.join(names)})")
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
                for rb in pf.iter_batches(batch_size=base.BATCH_ROWS, columns=[self.column]):
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
            for comp in COMPRESSED:
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
        codec = next((c for suffix, c in CODECS.items() if low.endswith(suffix)), None)
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
                position = tell(raw, 0)
                for start in range(0, len(arr), base.BATCH_ROWS):
                    part = arr.slice(start, base.BATCH_ROWS)
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
