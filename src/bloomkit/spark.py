"""Apache Spark's Bloom filter and count-min sketch, byte for byte.

:class:`BloomFilter` reads and writes the bytes of
``org.apache.spark.util.sketch.BloomFilter`` (``writeTo`` / ``readFrom``:
version 1, ``BloomFilterImpl``, and version 2, ``BloomFilterImplV2``, the
default of Spark 4.1 and later) and answers exactly as Spark's
``mightContain`` does; :class:`CountMinSketch` does the same for
``CountMinSketch`` (version 1).  Keys follow Spark's own typing: an ``int``
is a Java long (``putLong``), a ``str`` its UTF-8 bytes (``putString``), a
bytes-like object its bytes (``putBinary``); batches take numpy integer
arrays and Arrow integer, string and binary arrays without a Python object
per key (nulls skipped).  :func:`build` builds either format, or any
mergeable bloomkit kind, from a Spark DataFrame column in parallel.

Bad bytes raise :class:`bloomkit.FormatError` naming the reason.  See
docs/spark.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from . import _core
from ._jvm import (
    CMS,
    RULE_SPARK,
    SPARK,
    bloom_add_many,
    bloom_contains_many,
    columns,
    java_round,
    key_list,
)
from .errors import IncompatibleFiltersError

__all__ = ["BloomFilter", "CountMinSketch", "build", "optimal_num_of_bits"]

_INT_MAX = 2**31 - 1


def optimal_num_of_bits(expected_items: int, fpp: float) -> int:
    """Spark's ``BloomFilter.optimalNumOfBits(n, p)``: (long)(-n ln p / (ln 2)^2)."""
    return int(-expected_items * math.log(fpp) / (math.log(2) * math.log(2)))


def _java_int(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 2**32 if x >= 2**31 else x


class BloomFilter:
    """Spark's ``BloomFilter`` in its own bytes.

    ``BloomFilter(expected_items, fpp=0.03)`` is ``BloomFilter.create(n, fpp)``
    of the installed Spark's default version (2); ``version=1`` gives
    ``BloomFilterImpl``; ``num_bits=`` is ``create(n, numBits)``; ``seed=``
    (version 2 only) is ``create(n, numBits, seed)``.
    """

    __slots__ = ("_buf",)

    def __init__(self, expected_items: int, fpp: float = 0.03, *, num_bits: int | None = None,
                 version: int = 2, seed: int = 0) -> None:
        if expected_items <= 0:
            raise ValueError("expected_items must be positive")
        if num_bits is None:
            if not 0.0 < fpp < 1.0:
                raise ValueError("fpp must be within (0.0, 1.0)")
            num_bits = optimal_num_of_bits(expected_items, fpp)
        if num_bits <= 0:
            raise ValueError("num_bits must be positive")
        if version not in (1, 2):
            raise ValueError(f"Spark BloomFilter versions are 1 and 2, not {version!r}")
        if version == 1 and seed != 0:
            raise ValueError("version 1 has no seed")
        k = max(1, java_round(num_bits / expected_items * math.log(2)))
        nwords = math.ceil(num_bits / 64.0)
        if nwords > _INT_MAX:
            raise ValueError(f"{num_bits} bits need more than 2^31-1 longs (Spark's limit)")
        header = version.to_bytes(4, "big") + _java_int(k).to_bytes(4, "big", signed=True)
        if version == 2:
            header += _java_int(seed).to_bytes(4, "big", signed=True)
        self._buf = bytearray(header + nwords.to_bytes(4, "big") + bytes(8 * nwords))
        _core.jvm_parse(self._buf, SPARK)  # k out of range fails here

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> BloomFilter:
        """A filter from ``writeTo`` bytes (``FormatError`` if they are not one)."""
        buf = bytearray(data)
        _core.jvm_parse(buf, SPARK)
        f = cls.__new__(cls)
        f._buf = buf
        return f

    def to_bytes(self) -> bytes:
        """The bytes Spark's ``writeTo`` writes (``BloomFilter.readFrom`` loads them)."""
        return bytes(self._buf)

    def copy(self) -> BloomFilter:
        return BloomFilter.from_bytes(self._buf)

    @property
    def version(self) -> int:
        return int.from_bytes(self._buf[:4], "big")

    @property
    def num_hash_functions(self) -> int:
        return int(_core.jvm_parse(self._buf, SPARK)[1])

    @property
    def seed(self) -> int:
        return _java_int(int(_core.jvm_parse(self._buf, SPARK)[2]))

    @property
    def bit_size(self) -> int:
        return int(_core.jvm_parse(self._buf, SPARK)[3])

    def cardinality(self) -> int:
        """Set bits (Spark's ``cardinality()``)."""
        return int(_core.jvm_cardinality(self._buf, SPARK))

    def expected_fpp(self) -> float:
        """Spark's ``expectedFpp()``: (set bits / bit size) ** k."""
        return float((self.cardinality() / self.bit_size) ** self.num_hash_functions)

    def add(self, key: Any) -> bool:
        """``put(key)``: True if a bit changed."""
        return bool(_core.jvm_bloom_key(self._buf, SPARK, RULE_SPARK, key, True))

    put = add

    def __contains__(self, key: Any) -> bool:
        return bool(_core.jvm_bloom_key(self._buf, SPARK, RULE_SPARK, key, False))

    def might_contain(self, key: Any) -> bool:
        """``mightContain(key)``."""
        return key in self

    def add_many(self, keys: Iterable[Any]) -> None:
        bloom_add_many(self._buf, SPARK, RULE_SPARK, keys, "a Spark BloomFilter")

    def contains_many(self, keys: Iterable[Any]) -> Any:
        """The answers as a numpy bool array (a list without numpy)."""
        return bloom_contains_many(self._buf, SPARK, RULE_SPARK, keys, "a Spark BloomFilter")

    def is_compatible(self, other: BloomFilter) -> bool:
        return isinstance(other, BloomFilter) and \
            _core.jvm_parse(self._buf, SPARK)[:4] == _core.jvm_parse(other._buf, SPARK)[:4]

    def merge(self, other: BloomFilter) -> BloomFilter:
        """``mergeInPlace``: OR of equal filters (else ``IncompatibleFiltersError``)."""
        self._check(other)
        _core.jvm_combine(self._buf, other._buf, SPARK, 0)
        return self

    def intersect(self, other: BloomFilter) -> BloomFilter:
        """``intersectInPlace``: AND of equal filters."""
        self._check(other)
        _core.jvm_combine(self._buf, other._buf, SPARK, 1)
        return self

    def _check(self, other: Any) -> None:
        if not isinstance(other, BloomFilter):
            raise IncompatibleFiltersError(
                f"cannot combine a Spark BloomFilter with {type(other).__name__}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BloomFilter) and self._buf == other._buf

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"bloomkit.spark.BloomFilter(version={self.version}, bit_size={self.bit_size}, "
                f"num_hash_functions={self.num_hash_functions})")


def _java_random_ints(seed: int, count: int, bound: int) -> list[int]:
    """``new java.util.Random(seed)`` then ``nextInt(bound)`` count times
    (the 48-bit LCG of its documentation; bound not a power of two)."""
    mask = (1 << 48) - 1
    s = (seed ^ 0x5DEECE66D) & mask
    out: list[int] = []
    while len(out) < count:
        s = (s * 0x5DEECE66D + 0xB) & mask
        u = s >> 17  # next(31)
        r = u % bound
        if u - r + (bound - 1) > _INT_MAX:  # Java's int overflow: draw again
            continue
        out.append(r)
    return out


class CountMinSketch:
    """Spark's ``CountMinSketch`` in its own bytes (version 1).

    ``CountMinSketch(eps, confidence, seed)`` is ``CountMinSketch.create(eps,
    confidence, seed)``; ``CountMinSketch.with_size(depth, width, seed)`` is
    ``create(depth, width, seed)``.
    """

    __slots__ = ("_buf",)

    def __init__(self, eps: float, confidence: float, seed: int = 0) -> None:
        if not eps > 0:
            raise ValueError("relative error must be positive")
        if not 0.0 < confidence < 1.0:
            raise ValueError("confidence must be within (0.0, 1.0)")
        width = math.ceil(2 / eps)
        depth = math.ceil(-math.log1p(-confidence) / math.log(2))
        self._init(depth, width, seed)

    @classmethod
    def with_size(cls, depth: int, width: int, seed: int = 0) -> CountMinSketch:
        s = cls.__new__(cls)
        s._init(depth, width, seed)
        return s

    def _init(self, depth: int, width: int, seed: int) -> None:
        if not (0 < depth <= _INT_MAX and 0 < width <= _INT_MAX):
            raise ValueError("depth and width must be both positive (and Java ints)")
        hash_a = _java_random_ints(_java_int(seed), depth, _INT_MAX)
        head = (1).to_bytes(4, "big") + bytes(8) + depth.to_bytes(4, "big") + \
            width.to_bytes(4, "big") + b"".join(a.to_bytes(8, "big") for a in hash_a)
        self._buf = bytearray(head + bytes(8 * depth * width))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> CountMinSketch:
        buf = bytearray(data)
        _core.jvm_parse(buf, CMS)
        s = cls.__new__(cls)
        s._buf = buf
        return s

    def to_bytes(self) -> bytes:
        return bytes(self._buf)

    def copy(self) -> CountMinSketch:
        return CountMinSketch.from_bytes(self._buf)

    @property
    def depth(self) -> int:
        return int.from_bytes(self._buf[12:16], "big")

    @property
    def width(self) -> int:
        return int.from_bytes(self._buf[16:20], "big")

    @property
    def total_count(self) -> int:
        return int.from_bytes(self._buf[4:12], "big", signed=True)

    @property
    def relative_error(self) -> float:
        return 2.0 / self.width

    @property
    def confidence(self) -> float:
        return 1 - 1 / 2.0**self.depth

    def add(self, key: Any, count: int = 1) -> None:
        """``add(key, count)`` (count >= 0)."""
        _core.jvm_cms_key(self._buf, key, count, False)

    def estimate(self, key: Any) -> int:
        """``estimateCount(key)``."""
        est = _core.jvm_cms_key(self._buf, key, 0, True)
        assert est is not None
        return est

    estimate_count = estimate

    def add_many(self, keys: Iterable[Any], counts: Any = None) -> None:
        """Add every key (once, or counts[i] times: an int64 array of the same length)."""
        if counts is not None:
            import numpy as np

            counts = np.ascontiguousarray(counts, dtype=np.int64)
            if counts.size and int(counts.min()) < 0:
                raise ValueError("Spark's CountMinSketch takes no negative increments")
        cols = columns(keys, RULE_SPARK, "a Spark CountMinSketch")
        if cols is None:
            ks = key_list(keys)
            if counts is not None and len(counts) != len(ks):
                raise ValueError("counts and keys differ in length")
            for i, k in enumerate(ks):
                _core.jvm_cms_key(self._buf, k, 1 if counts is None else int(counts[i]), False)
            return
        start = 0
        for c in cols:
            part = None
            if counts is not None:
                part = counts[start:start + c.n]
                if len(part) != c.n:
                    raise ValueError("counts and keys differ in length")
            c.run(self._buf, CMS, counts=part)
            start += c.n
        if counts is not None and start != len(counts):
            raise ValueError("counts and keys differ in length")

    def estimate_many(self, keys: Iterable[Any]) -> Any:
        """The estimates as a numpy int64 array (null keys: 0)."""
        import numpy as np

        cols = columns(keys, RULE_SPARK, "a Spark CountMinSketch")
        if cols is None:
            return np.array([self.estimate(k) for k in key_list(keys)], dtype=np.int64)
        parts = []
        for c in cols:
            out = np.empty(c.n, dtype=np.int64)
            c.run(self._buf, CMS, out=out)
            parts.append(out)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def merge(self, other: CountMinSketch) -> CountMinSketch:
        """``mergeInPlace``: equal depth, width and hash seeds add up."""
        if not isinstance(other, CountMinSketch):
            raise IncompatibleFiltersError(
                f"cannot merge a Spark CountMinSketch with {type(other).__name__}")
        _core.jvm_combine(self._buf, other._buf, CMS, 0)
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountMinSketch) and self._buf == other._buf

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"bloomkit.spark.CountMinSketch(depth={self.depth}, width={self.width}, "
                f"total_count={self.total_count})")


def build(df: Any, column: str, capacity: int, error_rate: float = 0.03, *,
          kind: Any = BloomFilter, **params: Any) -> Any:
    """Build a filter of a Spark DataFrame column in parallel (docs/spark.md).

    Each partition builds its own filter over Arrow batches (``mapInArrow``)
    and the partial filters are merged by a tree (``treeReduce``).
    ``kind=bloomkit.spark.BloomFilter`` (default) gives Spark's own format,
    byte-identical to ``df.stat.bloomFilter(column, capacity, error_rate)``,
    including the size caps Spark's aggregate applies (the SQL confs
    ``spark.sql.optimizer.runtime.bloomFilter.maxNumItems`` / ``maxNumBits``,
    default 4,000,000 items and 2^26 bits; ``spark_caps=False`` sizes by the
    formula alone, as ``BloomFilter(capacity, error_rate)``);
    any mergeable bloomkit kind (``bloomkit.BlockedBloomFilter``, ...) gives
    the bytes a serial ``add_many`` of the same keys gives.  Nulls are
    skipped, as Spark does.  ``params`` go to the kind's constructor.
    """
    from ._spark_build import build as _build

    return _build(df, column, capacity, error_rate, kind, params)


