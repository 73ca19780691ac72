"""Keys of the Parquet sidecar index: a column's values as the index hashes them.

The PLAIN encoding of each distinct non-null value, as the file's schema
stores the column, floats made canonical (-0.0 as +0.0, one NaN): read from
Parquet through pyarrow in batches when building (:func:`distinct_keys`),
and from Python values when probing (:func:`encode_probe`).  index.py
builds and reads the index itself; its docstring has the guarantees.
"""

from __future__ import annotations

import importlib
import math
import struct
from collections.abc import Sequence
from typing import Any

from .. import _core
from ..errors import ColumnNotFoundError, FormatError, UnsupportedFormatError
from .values import ColumnType

_CANON_NAN = {"FLOAT": struct.pack("<f", math.nan), "DOUBLE": struct.pack("<d", math.nan)}
_ZERO = {"FLOAT": struct.pack("<f", 0.0), "DOUBLE": struct.pack("<d", 0.0)}


def optional_module(name: str) -> Any:
    """An optional dependency (pyarrow, dask), untyped."""
    try:
        return importlib.import_module(name)
    except ImportError:
        top = name.split(".")[0]
        extra = "parquet" if top == "pyarrow" else "dask"
        raise ImportError(f"building a Parquet index needs {top}: pip install "
                          f"'bloomkit[{extra}]'") from None


def _canonical(col: ColumnType, plain: bytes) -> bytes:
    """SQL equality for floats: one encoding for +0.0/-0.0 and for NaN."""
    p = col.physical
    if p in ("FLOAT", "DOUBLE"):
        v = struct.unpack("<f" if p == "FLOAT" else "<d", plain)[0]
        if v != v:
            return _CANON_NAN[p]
        if v == 0.0:
            return _ZERO[p]
    return plain


def _fixed_keys(data: bytes, width: int) -> Any:
    """Fixed-width PLAIN values as a ByteKeys (no Python object per key)."""
    import numpy as np

    n = len(data) // width
    if n == 0:
        return []
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return _core.ByteKeys(offsets, data)


def _arrow_plain(col: ColumnType, arr: Any) -> tuple[Any, int]:
    """(keys, count): the distinct non-null values of an Arrow array as
    bloomkit bytes keys holding their canonical PLAIN encoding."""
    import numpy as np

    from ..sources.arrow import byte_keys

    pa, pc = optional_module("pyarrow"), optional_module("pyarrow.compute")

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        arr = arr.drop_null()
    t = arr.type
    p, lg = col.physical, col.logical
    if pa.types.is_null(t) or len(arr) == 0:
        return [], 0
    if p in ("INT32", "INT64") and _stored_as_is(col, t, pa):
        width = 4 if p == "INT32" else 8
        if not pa.types.is_integer(t):
            arr = arr.cast(pa.int32() if t.bit_width == 32 else pa.int64())
        a = pc.unique(arr).to_numpy(zero_copy_only=False)
        unsigned = a.dtype.kind == "u"
        dt = ("<u" if unsigned else "<i") + str(width)
        return _fixed_keys(a.astype(dt).tobytes(), width), len(a)
    if p in ("FLOAT", "DOUBLE") and lg is None and pa.types.is_floating(t):
        a = pc.unique(arr).to_numpy(zero_copy_only=False).astype(
            "<f4" if p == "FLOAT" else "<f8")
        a = np.where(a == 0, 0.0, a).astype(a.dtype)  # -0.0 -> +0.0
        a[np.isnan(a)] = np.nan  # one NaN
        a = np.unique(a)  # +0/-0 and the NaNs may have merged
        return _fixed_keys(a.tobytes(), a.dtype.itemsize), len(a)
    if p == "BYTE_ARRAY" and lg != "DECIMAL" and (
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)):
        u = pc.unique(arr)
        return byte_keys(u), len(u)
    if p == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(t) \
            and t.byte_width == col.type_length:
        u = pc.unique(arr)
        return byte_keys(u), len(u)
    # anything else (decimals, FLOAT16, extension types): the probe's own
    # encoder, value by value, so build and probe cannot disagree
    out = set()
    for v in pc.unique(arr).to_pylist():
        b = col.encode(v)
        if b is None:
            raise ValueError(f"the {col.describe()} column holds {v!r:.60}, which bloomkit "
                             "cannot encode back to its stored bytes")
        out.add(_canonical(col, b))
    return sorted(out), len(out)


_UNIT_ARROW = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}


def _stored_as_is(col: ColumnType, t: Any, pa: Any) -> bool:
    """Whether the Arrow array's integers are the stored INT32/INT64 values.

    pyarrow may restore an Arrow type from the file's stored Arrow schema
    (timestamp[s] written as TIMESTAMP(MILLIS), date64 written as DATE):
    then its integers are not what the file stores, and the values go the
    slow way (as Python objects through the probe's own encoder)."""
    lg = col.logical
    width = 32 if col.physical == "INT32" else 64
    if lg is None or lg == "INTEGER":
        return (pa.types.is_integer(t) and t.bit_width <= width) or (
            pa.types.is_duration(t) and width == 64)
    if lg == "DATE":
        return bool(pa.types.is_date32(t))
    if lg == "TIMESTAMP":
        return bool(pa.types.is_timestamp(t) and t.unit == _UNIT_ARROW.get(col.unit or ""))
    if lg == "TIME":
        return bool((pa.types.is_time32(t) or pa.types.is_time64(t))
                    and t.unit == _UNIT_ARROW.get(col.unit or "") and t.bit_width == width)
    return False


# Rows per Arrow batch while indexing: pyarrow sizes its buffers by the
# batch, never by a row group's declared num_rows (a footer whose counts all
# agree on 2**40 rows still costs one batch of memory, R47).
_BATCH_ROWS = 1 << 16


def distinct_keys(pf: Any, g: int | None, col: ColumnType, path: str) -> tuple[Any, int]:
    """(keys, count) of one row group (or every one, g None) of one column,
    read in batches of _BATCH_ROWS rows, each reduced to its distinct values."""
    pa, pc = optional_module("pyarrow"), optional_module("pyarrow.compute")
    column = col.name
    top = column.split(".")[0]
    parts = []
    groups = None if g is None else [g]
    for rb in pf.iter_batches(batch_size=_BATCH_ROWS, row_groups=groups, columns=[top]):
        t = pa.Table.from_batches([rb])
        while "." in column and t.num_columns and column not in t.column_names:
            t = t.flatten()
        if column not in t.column_names:
            raise ColumnNotFoundError(
                f"{path}: pyarrow cannot read column {column!r} as a flat column")
        arr = t.column(column).combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if arr.null_count:
            arr = arr.drop_null()
        if len(arr):
            parts.append(pc.unique(arr))
    if not parts:
        return [], 0
    return _arrow_plain(col, parts[0] if len(parts) == 1 else pa.concat_arrays(parts))


def arrow_failure(path: str, column: str, exc: BaseException) -> FormatError:
    """What a pyarrow exception on an untrusted file becomes (R54): the
    unsupported error for what pyarrow does not implement, else a
    FormatError naming the file; never pyarrow's own type."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if type(exc).__name__ == "ArrowNotImplementedError":
        return UnsupportedFormatError(f"{path}: column {column!r}: pyarrow cannot read it: "
                                      f"{text}")
    return FormatError(f"{path}: column {column!r}: corrupt or unreadable Parquet data "
                       f"({type(exc).__name__}: {text})")


def encode_probe(col: ColumnType, vals: Sequence[Any],
                  refused: dict[int, list[TypeError]]) -> tuple[list[int], Any]:
    """(positions, keys): the values the column can hold, canonical PLAIN
    bytes.  A value of a type the column does not take is recorded in
    ``refused`` (the caller raises when no column type of the lake took it)."""
    idx, plains = [], []
    for i, v in enumerate(vals):
        try:
            b = col.encode(v)
        except TypeError as e:
            refused.setdefault(i, []).append(e)
            continue
        if b is not None:
            idx.append(i)
            plains.append(_canonical(col, b))
    if not plains:
        return idx, plains
    # one ByteKeys for every filter: the C batch reads it without a Python
    # object per key (4x faster than a list of 1,000 bytes per filter)
    import numpy as np

    lengths = np.fromiter(map(len, plains), dtype=np.int64, count=len(plains))
    offsets = np.zeros(len(plains) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return idx, _core.ByteKeys(offsets, b"".join(plains))
