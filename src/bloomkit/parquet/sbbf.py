"""Parquet's own Bloom filters: read them, build them, skip files and row groups.

Parquet files can carry one split-block Bloom filter (SBBF) per column
chunk (parquet-format BloomFilter.md).  This module reads them without an
engine, with our own footer reader (Thrift compact protocol) and a C SBBF
that is bit-for-bit the specification's, and answers "which files and row
groups may hold these values?" from the filters and, where a chunk has
none, from its min/max statistics::

    from bloomkit import parquet
    hits = parquet.may_contain("lake/*.parquet", "user_id", [12345, 67890])
    hits[12345]          # [("lake/part-0007.parquet", 3), ...]
    hits.bytes_read      # footers + the filters consulted, nothing else

    bf = parquet.read_filter("lake/part-0007.parquet", 3, "user_id")
    12345 in bf          # hashed as the column's physical type says

Hashing is Parquet's, not bloomkit's key encoding: XXH64 (seed 0) of the
value's PLAIN encoding *as the column stores it*, so the column's type
decides the bytes (an int probed against an INT32 column hashes 4 bytes,
against INT64 8; a ``datetime.date`` against a DATE column its INT32 day
count).  See :class:`ColumnType` and docs/parquet.md.
"""

from __future__ import annotations

import bisect
import importlib
import os
import struct
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from .. import _core
from ..errors import IncompatibleFiltersError
from .footer import ChunkMeta, CountingFile, Footer, parse_bloom_header, read_bloom, read_footer
from .lake import expand
from .thrift import encode_bloom_header
from .values import ColumnType

__all__ = [
    "Candidates",
    "SplitBlockBloomFilter",
    "may_contain",
    "optimal_num_bytes",
    "read_filter",
    "row_group_filters",
]

PathLike = str | os.PathLike[str]


def _bools(raw: bytes, as_numpy: bool) -> Any:
    if as_numpy:
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy is in the parquet extra
            pass
        else:
            return np.frombuffer(raw, dtype=np.bool_)
    return [b == 1 for b in raw]


def is_numpy(values: object) -> bool:
    return type(values).__module__ == "numpy" and hasattr(values, "dtype")


def is_arrow(values: object) -> bool:
    """An Arrow column (pyarrow, Polars, nanoarrow: the PyCapsule protocol)."""
    t = type(values)
    return hasattr(t, "__arrow_c_array__") or hasattr(t, "__arrow_c_stream__")


def _arrow_values(values: Any) -> list[Any]:
    """An Arrow column's values as Python objects (None for a null), as
    ``to_pylist()`` gives them: for the types without a direct PLAIN
    encoding (floats, dates, timestamps, decimals)."""
    for name in ("to_pylist", "to_list"):  # pyarrow; Polars
        conv = getattr(values, name, None)
        if callable(conv):
            return list(conv())
    pa = importlib.import_module("pyarrow")  # untyped: imported as a module object
    if hasattr(type(values), "__arrow_c_array__"):
        return list(pa.array(values).to_pylist())
    return list(pa.chunked_array(values).to_pylist())


def _arrow_mode(col: ColumnType) -> tuple[int, int, int, int, int] | None:
    """sbbf_hash_arrow's (mode, lo, hi, width, text_ok) for a column whose
    PLAIN bytes an Arrow int or string value has directly, as
    ColumnType.encode writes the Python int, str or bytes; None for the
    others (their values go through Python objects)."""
    p, lg = col.physical, col.logical
    if lg == "DECIMAL":
        return None
    if p in ("INT32", "INT64"):
        bits = 32 if p == "INT32" else 64
        w, signed = bits, True
        if lg == "INTEGER":
            w, signed = min(col.bit_width, bits), col.signed
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
        return 0, lo, hi, bits // 8, 0
    if p == "BYTE_ARRAY":
        return 1, 0, 0, 1, 0
    if p == "FIXED_LEN_BYTE_ARRAY":
        return 2, 0, 0, col.type_length or 0, int(lg in ("STRING", "ENUM", "JSON", None))
    return None


def _hash_plain(col: ColumnType, plains: Sequence[bytes]) -> bytes:
    """Native uint64 hashes of PLAIN values (one C call)."""
    if not plains:
        return b""
    if col.physical in ("INT32", "INT64", "FLOAT", "DOUBLE", "FIXED_LEN_BYTE_ARRAY"):
        width = len(plains[0])
        return bytes(_core.sbbf_hash_fixed(b"".join(plains), width))
    return bytes(_core.sbbf_hash_items(list(plains)))


def _numpy_plain(col: ColumnType, arr: Any) -> tuple[Any, int] | None:
    """A numpy array as a little-endian PLAIN buffer, when no per-value
    conversion is needed (plain numeric columns); else None."""
    import numpy as np

    kind = arr.dtype.kind
    p, lg = col.physical, col.logical
    if arr.ndim != 1 or kind not in "iuf" or (lg is not None and lg != "INTEGER"):
        return None
    if lg == "INTEGER" and (col.bit_width not in (32, 64) or not col.signed):
        return None
    if p in ("INT32", "INT64"):
        if kind == "f":
            return None
        bits = 32 if p == "INT32" else 64
        if arr.size and (int(arr.min()) < -(1 << (bits - 1)) or int(arr.max()) >= 1 << (bits - 1)):
            return None
        return np.ascontiguousarray(arr.astype("<i4" if bits == 32 else "<i8")), bits // 8
    if p in ("FLOAT", "DOUBLE"):
        if kind != "f":
            return None
        if p == "FLOAT" and arr.dtype.itemsize > 4:
            # A double beyond FLOAT's range is in no FLOAT row group, as
            # encode() says for one value (the cast made it inf, with a
            # RuntimeWarning, so contains_many(np.array([1e300])) said True
            # after add(inf) while `1e300 in f` said False, #34 item 10):
            # such arrays take the per-value path.
            with np.errstate(over="ignore"):
                f32 = arr.astype("<f4")
            if bool(np.any(np.isinf(f32) & np.isfinite(arr))):
                return None
            return np.ascontiguousarray(f32), 4
        return np.ascontiguousarray(arr.astype("<f4" if p == "FLOAT" else "<f8")), (
            4 if p == "FLOAT" else 8)
    return None


def _zero_and_nan(col: ColumnType, plains: Sequence[bytes]) -> tuple[list[int], list[int]]:
    """Positions of zeros and NaNs among PLAIN float values.

    Probing follows SQL equality, as DuckDB's reader does: a zero probe
    matches a stored +0.0 or -0.0 (their encodings, and so their hashes,
    differ), and a NaN probe cannot be ruled out by a filter (NaNs have many
    encodings); both need more than one hash."""
    if col.physical not in ("FLOAT", "DOUBLE"):
        return [], []
    zeros, nans = [], []
    for j, b in enumerate(plains):
        k = col.order_key(b)
        if k is None:
            nans.append(j)
        elif k == 0:
            zeros.append(j)
    return zeros, nans


def _zero_hashes(col: ColumnType) -> tuple[int, int]:
    fmt = "<f" if col.physical == "FLOAT" else "<d"
    return (_core.xxh64(struct.pack(fmt, 0.0)), _core.xxh64(struct.pack(fmt, -0.0)))


class SplitBlockBloomFilter:
    """Parquet's split-block Bloom filter over one column's values.

    256-bit blocks of eight 32-bit words; a value's XXH64 picks the block
    from its upper 32 bits and one bit in each word from its lower 32
    (``((lo * salt[i]) mod 2^32) >> 27``).  ``column_type`` says how values
    are encoded before hashing (a :class:`ColumnType` or a name such as
    ``"INT64"``, ``"STRING"``, ``"DATE"``; FIXED_LEN_BYTE_ARRAY needs
    ``type_length``).  Filters read from files carry their column's type.

    ``SplitBlockBloomFilter(num_bytes, column_type)`` is empty;
    :meth:`for_ndv` sizes one as the reference writers do; :meth:`from_values`
    builds one; :meth:`from_bitset` / :meth:`from_parquet_bytes` wrap stored
    bytes.  No false negatives: every added value is reported present.
    """

    __slots__ = ("_sbbf", "_type")

    def __init__(self, num_bytes: int, column_type: str | ColumnType = "BYTE_ARRAY", *,
                 type_length: int | None = None) -> None:
        if isinstance(num_bytes, bool) or not isinstance(num_bytes, int):
            raise TypeError("num_bytes must be an int (a positive multiple of 32)")
        self._type = ColumnType.of(column_type, type_length)
        self._check_type()
        self._sbbf = _core.SBBF(num_bytes)

    def _check_type(self) -> None:
        if not self._type.bloom_supported():
            raise ValueError(f"Parquet Bloom filters do not cover {self._type.physical} columns")

    @classmethod
    def _wrap(cls, sbbf: Any, col: ColumnType) -> SplitBlockBloomFilter:
        self = cls.__new__(cls)
        self._type = col
        self._check_type()
        self._sbbf = sbbf
        return self

    @classmethod
    def for_ndv(cls, ndv: int, fpp: float = 0.01, column_type: str | ColumnType = "BYTE_ARRAY",
                *, type_length: int | None = None) -> SplitBlockBloomFilter:
        """An empty filter sized for ``ndv`` distinct values at rate ``fpp`` as
        the spec's writers size it: ``-8 ndv / ln(1 - fpp^(1/8))`` bits, then a
        power of two bytes in [32 B, 128 MiB]."""
        if isinstance(ndv, bool) or not isinstance(ndv, int) or ndv < 0:
            raise ValueError(f"ndv must be a non-negative int, not {ndv!r}")
        if not isinstance(fpp, (int, float)) or not 0.0 < fpp < 1.0:
            raise ValueError(f"fpp must be in (0, 1), not {fpp!r}")
        return cls(optimal_num_bytes(ndv, fpp), column_type, type_length=type_length)

    @classmethod
    def from_values(cls, values: Iterable[Any], column_type: str | ColumnType, *,
                    fpp: float = 0.01, type_length: int | None = None) -> SplitBlockBloomFilter:
        """A filter sized for the distinct values given (at rate ``fpp``) holding them."""
        col = ColumnType.of(column_type, type_length)
        plains = cls._encode_all(col, values, strict=True)
        distinct = set(plains)
        bf = cls.for_ndv(len(distinct), fpp, col)
        bf._sbbf.insert_hashes(_hash_plain(col, sorted(distinct)))
        return bf

    @classmethod
    def from_bitset(cls, bitset: bytes | bytearray | memoryview, column_type: str | ColumnType,
                    *, type_length: int | None = None) -> SplitBlockBloomFilter:
        """Wrap a stored bitset (copied): a positive multiple of 32 bytes."""
        return cls._wrap(_core.SBBF(bitset), ColumnType.of(column_type, type_length))

    @classmethod
    def from_parquet_bytes(cls, data: bytes, column_type: str | ColumnType, *,
                           type_length: int | None = None) -> SplitBlockBloomFilter:
        """From Bloom filter data as a file stores it: BloomFilterHeader then bitset."""
        hdr_len, nbytes = parse_bloom_header("<bytes>", "", "Bloom filter", bytes(data))
        if hdr_len + nbytes > len(data):
            from ..errors import FormatError

            raise FormatError(f"Bloom filter data: header declares {nbytes} bitset bytes, "
                              f"{len(data) - hdr_len} follow it")
        return cls.from_bitset(data[hdr_len:hdr_len + nbytes], column_type,
                               type_length=type_length)

    # ---- properties ------------------------------------------------------

    @property
    def column_type(self) -> ColumnType:
        return self._type

    @property
    def num_bytes(self) -> int:
        return int(self._sbbf.nbytes)

    @property
    def num_blocks(self) -> int:
        return self.num_bytes // 32

    @property
    def fill_ratio(self) -> float:
        """Share of set bits."""
        return float(self._sbbf.popcount()) / (self.num_bytes * 8)

    def estimated_fpp(self, ndv: int) -> float:
        """False-positive rate of this size holding ``ndv`` distinct values."""
        return float(_core.sbbf_fpp(self.num_bytes, float(ndv)))

    # ---- values ------------------------------------------------------------

    @staticmethod
    def _encode_all(col: ColumnType, values: Iterable[Any], strict: bool) -> list[bytes]:
        if is_numpy(values):
            values = values.tolist()  # type: ignore[attr-defined]
        elif is_arrow(values):  # a null row is no value
            values = [v for v in _arrow_values(values) if v is not None]
        out = []
        for v in values:
            b = col.encode(v)
            if b is None:
                if strict:
                    raise ValueError(f"the {col.describe()} column cannot hold {v!r:.60}")
                continue
            out.append(b)
        return out

    def hash(self, value: object) -> int | None:
        """Parquet's hash of ``value`` in this column (None: not storable)."""
        b = self._type.encode(value)
        if b is None:
            return None
        return int.from_bytes(_hash_plain(self._type, [b]), sys.byteorder)

    def add(self, value: object) -> None:
        h = self.hash(value)
        if h is None:
            raise ValueError(f"the {self._type.describe()} column cannot hold {value!r:.60}")
        self._sbbf.insert_hash(h)

    def add_many(self, values: Iterable[Any]) -> None:
        """Add values (a numpy array of a plain numeric column hashes without the GIL)."""
        self._sbbf.insert_hashes(self._hashes(values, strict=True)[0])

    def add_hash(self, h: int) -> None:
        self._sbbf.insert_hash(h)

    def contains_hash(self, h: int) -> bool:
        return bool(self._sbbf.check_hash(h))

    def __contains__(self, value: object) -> bool:
        """Whether the column may hold a value equal to ``value`` (a zero
        matches +0.0 and -0.0, a NaN is never ruled out: SQL equality)."""
        b = self._type.encode(value)
        if b is None:
            return False
        zeros, nans = _zero_and_nan(self._type, [b])
        if nans:
            return True
        if zeros:
            return any(self._sbbf.check_hash(h) for h in _zero_hashes(self._type))
        return bool(self._sbbf.check_hash(int.from_bytes(_hash_plain(self._type, [b]),
                                                         sys.byteorder)))

    def _hashes(self, values: Iterable[Any], strict: bool, nulls: bool = False
                ) -> tuple[bytes, list[int] | None, tuple[list[int], list[int]]]:
        """(hashes, positions, (zeros, nans)): positions lists the index of
        each hash's value when some values were not storable (None: one hash
        per value); zeros and nans index the hashes (see _zero_and_nan).
        An Arrow column's null rows (None when ``nulls``) are no value
        (skipped, not an error)."""
        col = self._type
        if is_arrow(values):
            got = self._arrow_hashes(values, strict)
            if got is not None:
                return got[:3]
            values, nulls = _arrow_values(values), True
        if is_numpy(values):
            fast = _numpy_plain(col, values)
            if fast is not None:
                buf, width = fast
                special: tuple[list[int], list[int]] = ([], [])
                if col.physical in ("FLOAT", "DOUBLE"):
                    import numpy as np

                    special = (np.flatnonzero(buf == 0).tolist(),
                               np.flatnonzero(np.isnan(buf)).tolist())
                return bytes(_core.sbbf_hash_fixed(buf, width)), None, special
            values = values.tolist()  # type: ignore[attr-defined]
        plains: list[bytes] = []
        pos: list[int] = []
        skipped = False
        for i, v in enumerate(values):
            if v is None and nulls:
                skipped = True
                continue
            b = col.encode(v)
            if b is None:
                if strict:
                    raise ValueError(f"the {col.describe()} column cannot hold {v!r:.60}")
                skipped = True
                continue
            plains.append(b)
            pos.append(i)
        return (_hash_plain(col, plains), (pos if skipped else None),
                _zero_and_nan(col, plains))

    def _arrow_hashes(self, values: Any, strict: bool
                      ) -> tuple[bytes, list[int] | None, tuple[list[int], list[int]], int] | None:
        """_hashes of an Arrow column hashed in C from its buffers, and its
        row count (ints into INT32/INT64, strings and binaries into
        BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY: see _arrow_mode); None for the
        other types, whose values go through Python objects."""
        mode = _arrow_mode(self._type)
        if mode is None:
            return None
        try:
            raw, status = _core.sbbf_hash_arrow(values, *mode)
        except TypeError:  # an Arrow type without that direct encoding
            return None
        rows = len(status)
        if status.count(1) == rows:
            return raw, None, ([], []), rows
        import numpy as np

        st = np.frombuffer(status, dtype=np.uint8)
        if strict and bool((st == 2).any()):
            v = _arrow_values(values)[int(np.flatnonzero(st == 2)[0])]
            raise ValueError(f"the {self._type.describe()} column cannot hold {v!r:.60}")
        keep = np.flatnonzero(st == 1)
        hs = np.frombuffer(raw, dtype=np.uint64)[keep].tobytes()
        return hs, keep.tolist(), ([], []), rows

    def contains_many(self, values: Iterable[Any]) -> Any:
        """Membership of each value (as ``in``): a numpy bool array when numpy
        is installed, else a list of bools.  The probing runs in C without
        the GIL (hashing too, for numpy arrays of a plain numeric column and
        Arrow columns of ints and strings).  An Arrow column's null rows
        answer False."""
        got = self._arrow_hashes(values, False) if is_arrow(values) else None
        if got is not None:
            hs, pos, (zeros, nans), n = got
        else:
            arrow = is_arrow(values)
            if arrow:
                values = _arrow_values(values)  # its nulls: None, answered False
            elif not is_numpy(values) and not isinstance(values, (list, tuple)):
                values = list(values)
            n = len(values)  # type: ignore[arg-type]
            hs, pos, (zeros, nans) = self._hashes(values, strict=False, nulls=arrow)
        raw = bytearray(self._sbbf.check_hashes(hs))
        if zeros:
            z = any(self._sbbf.check_hash(h) for h in _zero_hashes(self._type))
            for j in zeros:
                raw[j] = z
        for j in nans:
            raw[j] = 1
        if pos is not None:
            full = bytearray(n)
            for j, i in enumerate(pos):
                full[i] = raw[j]
            raw = full
        return _bools(bytes(raw), True)

    # ---- bytes ---------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The bitset (what a Parquet file stores after the header)."""
        return bytes(self._sbbf.to_bytes())

    def to_parquet_bytes(self) -> bytes:
        """BloomFilterHeader (BLOCK, XXHASH, UNCOMPRESSED) followed by the bitset."""
        return encode_bloom_header(self.num_bytes) + self.to_bytes()

    def merge(self, other: SplitBlockBloomFilter) -> None:
        """OR another filter of the same size and column type into this one."""
        if not isinstance(other, SplitBlockBloomFilter):
            raise TypeError(f"cannot merge {type(other).__name__} into a SplitBlockBloomFilter")
        if other._type.physical != self._type.physical:
            raise IncompatibleFiltersError(
                f"cannot merge filters over {self._type.describe()} and {other._type.describe()}")
        self._sbbf.merge(other._sbbf)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SplitBlockBloomFilter):
            return NotImplemented
        return (self._type.physical == other._type.physical
                and self.to_bytes() == other.to_bytes())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        col = f" column={self._type.name!r}" if self._type.path else ""
        return (f"<SplitBlockBloomFilter {self.num_bytes} bytes {self._type.describe()}{col} "
                f"fill={self.fill_ratio:.3f}>")


def optimal_num_bytes(ndv: int, fpp: float) -> int:
    """Bitset bytes the reference writers allocate for ``ndv`` values at ``fpp``."""
    return int(_core.sbbf_optimal_bytes(float(ndv), float(fpp)))


# ---- files ------------------------------------------------------------------


def read_filter(path: PathLike, row_group: int, column: str | Sequence[str]
                ) -> SplitBlockBloomFilter | None:
    """The Bloom filter of one column chunk, or None when the chunk has none.

    ``column`` is a dotted path (``"user_id"``, ``"address.zip"``) or a tuple
    of names.  Reads the footer, then the filter's header and bitset; raises
    :class:`bloomkit.FormatError` naming the file and column for any corrupt
    part, IndexError for a row group the file does not have, KeyError for
    an unknown column.
    """
    with CountingFile(path) as f:
        footer = read_footer(f)
        chunk = _chunk(footer, row_group, column)
        bits = read_bloom(f, footer, chunk)
    if bits is None:
        return None
    return SplitBlockBloomFilter._wrap(_core.SBBF(bits), chunk.column)


def row_group_filters(path: PathLike, column: str | Sequence[str]
                      ) -> list[SplitBlockBloomFilter | None]:
    """The filter of every row group of one column (None where absent)."""
    with CountingFile(path) as f:
        footer = read_footer(f)
        idx = footer.column_index(_colkey(column))
        out: list[SplitBlockBloomFilter | None] = []
        for rg in footer.row_groups:
            bits = read_bloom(f, footer, rg[idx])
            out.append(None if bits is None
                       else SplitBlockBloomFilter._wrap(_core.SBBF(bits), rg[idx].column))
    return out


def _colkey(column: str | Sequence[str]) -> str | tuple[str, ...]:
    if isinstance(column, str):
        return column
    return tuple(column)


def _chunk(footer: Footer, row_group: int, column: str | Sequence[str]) -> ChunkMeta:
    idx = footer.column_index(_colkey(column))
    n = len(footer.row_groups)
    if isinstance(row_group, bool) or not isinstance(row_group, int):
        raise TypeError("row_group must be an int")
    if not 0 <= row_group < n:
        raise IndexError(f"{footer.path}: row group {row_group} out of range (the file has "
                         f"{n}, numbered 0 to {n - 1}; a negative number is no row group)")
    return footer.row_groups[row_group][idx]


class Candidates(dict):  # type: ignore[type-arg]
    """``may_contain``'s answer: ``{value: [(file, row_group), ...]}`` plus
    what it cost: ``bytes_read`` (footers and filters, every byte read),
    ``files``, ``row_groups`` examined, ``filters_read``, and the row groups
    ruled out per value by Bloom filters (``pruned_by_bloom``) and by
    statistics (``pruned_by_stats``)."""

    bytes_read: int
    files: int
    row_groups: int
    filters_read: int
    pruned_by_bloom: int
    pruned_by_stats: int

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read = self.files = self.row_groups = self.filters_read = 0
        self.pruned_by_bloom = self.pruned_by_stats = 0

    def __repr__(self) -> str:
        return (f"Candidates({dict.__repr__(self)}, bytes_read={self.bytes_read}, "
                f"files={self.files}, row_groups={self.row_groups}, "
                f"filters_read={self.filters_read})")


def expand_paths(paths: PathLike | Iterable[PathLike]) -> list[str]:
    """The files of a lake: a path, a directory (every ``*.parquet`` below
    it), a glob, or a list of them; the one rule of bloomkit.parquet.lake
    (each real file once, symlink loops and FIFOs harmless).  A glob or
    directory with no Parquet file raises FileNotFoundError."""
    return expand(paths, empty_glob_ok=False)[0]


def values_list(values: Any, who: str) -> list[Any]:
    """``values`` as a list: an iterable of values (a numpy array too).  A
    single value is a TypeError that says so (a str or bytes is refused
    too: it would be probed character by character)."""
    if is_numpy(values):
        return values.tolist()  # type: ignore[no-any-return]
    if isinstance(values, (str, bytes, bytearray, memoryview)) or not hasattr(
            values, "__iter__"):
        raise TypeError(f"{who}() takes an iterable of values (a list, a tuple, a numpy "
                        f"array), not {type(values).__name__} {values!r:.40}; for one value "
                        "pass [value]")
    return list(values)


def value_key(v: object) -> object:
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v


class _Probe:
    """The values encoded for one column type: PLAIN bytes, hashes, and
    statistics keys sorted for range queries."""

    def __init__(self, col: ColumnType, values: list[Any]) -> None:
        self.col = col
        self.index: list[int] = []
        plains: list[bytes] = []
        for i, v in enumerate(values):
            b = col.encode(v)
            if b is not None:
                self.index.append(i)
                plains.append(b)
        self.hashes = _hash_plain(col, plains)
        zeros, nans = _zero_and_nan(col, plains)
        self.zeros, self.nans = set(zeros), set(nans)
        keyed = []
        self.unordered: list[int] = []  # values with no order key (NaN): stats cannot exclude
        for j, b in enumerate(plains):
            k = col.order_key(b)
            if k is None:
                self.unordered.append(j)
            else:
                keyed.append((k, j))
        keyed.sort(key=lambda t: t[0])
        self.keys = [k for k, _ in keyed]
        self.order = [j for _, j in keyed]

    def in_range(self, lo: Any, hi: Any) -> list[int]:
        """Positions (into self.index) of values with lo <= key <= hi."""
        a = bisect.bisect_left(self.keys, lo)
        b = bisect.bisect_right(self.keys, hi)
        return self.order[a:b] + self.unordered


def may_contain(paths_or_glob: PathLike | Iterable[PathLike], column: str | Sequence[str],
                values: Iterable[Any], *, use_bloom: bool = True, use_stats: bool = True
                ) -> Candidates:
    """For each value, the (file, row group) pairs that may hold it.

    A row group is ruled out for a value when its chunk's min/max statistics
    exclude it, or when its Bloom filter says no; a chunk with neither may
    hold anything.  Each file is read only at its footer and at the filters
    of the row groups that statistics did not already rule out for every
    value; the result's ``bytes_read`` counts every byte.  Values are encoded
    per file by the column's schema (see :class:`ColumnType`); a value the
    column cannot hold (an int outside INT32, ...) is in no row group.  A
    file without the column raises KeyError, a corrupt one FormatError, both
    naming the file.
    """
    given = values_list(values, "may_contain")
    result = Candidates()
    vals, keys = [], []
    for v in given:  # each distinct value once, as candidates() does (R55)
        k = value_key(v)
        if k not in result:
            result[k] = []
            vals.append(v)
            keys.append(k)
    probes: dict[ColumnType, _Probe] = {}
    colkey = _colkey(column)
    for path in expand_paths(paths_or_glob):
        with CountingFile(path) as f:
            try:
                footer = read_footer(f)
                idx = footer.column_index(colkey)
                col = footer.columns[idx]
                typekey = ColumnType(**{**col.__dict__, "path": ()})
                probe = probes.get(typekey)
                if probe is None:
                    probe = probes[typekey] = _Probe(col, vals)
                _file_candidates(f, footer, idx, probe, keys, result, use_bloom, use_stats)
            finally:
                result.bytes_read += f.bytes_read
        result.files += 1
    return result


def _file_candidates(f: CountingFile, footer: Footer, idx: int, probe: _Probe,
                     keys: list[object], result: Candidates, use_bloom: bool,
                     use_stats: bool) -> None:
    col = probe.col
    n = len(probe.index)
    for g, rg in enumerate(footer.row_groups):
        result.row_groups += 1
        chunk = rg[idx]
        if chunk.num_values == 0:
            result.pruned_by_stats += n
            continue
        cand = list(range(n))
        if use_stats and chunk.min_plain is not None and chunk.max_plain is not None:
            cand = sorted(probe.in_range(col.order_key(chunk.min_plain),
                                         col.order_key(chunk.max_plain)))
            result.pruned_by_stats += n - len(cand)
        if cand and use_bloom and chunk.bloom_offset is not None:
            bits = read_bloom(f, footer, chunk)
            if bits is not None:
                result.filters_read += 1
                sb = _core.SBBF(bits)
                hs = probe.hashes
                sub = b"".join(hs[8 * j:8 * j + 8] for j in cand) if len(cand) < n else hs
                hit = bytearray(sb.check_hashes(sub))
                if probe.zeros or probe.nans:
                    z = probe.zeros and any(sb.check_hash(h) for h in _zero_hashes(col))
                    for i, j in enumerate(cand):
                        if j in probe.nans or (z and j in probe.zeros):
                            hit[i] = 1
                kept = [j for j, h in zip(cand, hit, strict=True) if h]
                result.pruned_by_bloom += len(cand) - len(kept)
                cand = kept
        for j in cand:
            result[keys[probe.index[j]]].append((footer.path, g))

