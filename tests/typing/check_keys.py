"""Checked by mypy (tests/test_typing.py), never run.

A trailing ``# N: <type>`` says mypy must reveal exactly that type on the
line; ``# E: <code>`` says mypy must report an error with that code there.
Any other note or error fails the test.  The key type shows as ``K`` below:
``str | bytes | bytearray | memoryview[int] | typing.SupportsIndex``
(bloomkit.Key, docs/keys.md).
"""

from __future__ import annotations

import array
from dataclasses import dataclass

import numpy as np
from typing_extensions import reveal_type  # mypy's own; this file never runs

import bloomkit
from bloomkit import (
    BinaryFuseFilter,
    BlockedBloomFilter,
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    CuckooFilter,
    QuotientFilter,
    ScalableBloomFilter,
    TinyLFU,
)


@dataclass
class Row:
    user: str
    day: int


def row_key(row: Row) -> str:
    return f"{row.user}:{row.day}"


# ---- every public constructor returns its class, parametrized by the key type ----

reveal_type(BloomFilter(1000))  # N: bloomkit.bloom.BloomFilter[K]
reveal_type(BlockedBloomFilter(1000, 0.001))  # N: bloomkit.bloom.BlockedBloomFilter[K]
reveal_type(CountingBloomFilter(1000))  # N: bloomkit.counting.CountingBloomFilter[K]
reveal_type(ScalableBloomFilter())  # N: bloomkit.scalable.ScalableBloomFilter[K]
reveal_type(CuckooFilter(1000))  # N: bloomkit.cuckoo.CuckooFilter[K]
reveal_type(QuotientFilter(1000))  # N: bloomkit.quotient.QuotientFilter[K]
reveal_type(CountMinSketch(100, 4))  # N: bloomkit.sketch.CountMinSketch[K]
reveal_type(TinyLFU(100))  # N: bloomkit.sketch.TinyLFU[K]
reveal_type(BinaryFuseFilter([1, 2, 3]))  # N: bloomkit.fuse.BinaryFuseFilter[K]
reveal_type(BloomFilter.with_size(1024, 7))  # N: bloomkit.bloom.BloomFilter[K]
reveal_type(BlockedBloomFilter.with_size(1024, 7))  # N: bloomkit.bloom.BlockedBloomFilter[K]
reveal_type(QuotientFilter.with_shape(10, 8))  # N: bloomkit.quotient.QuotientFilter[K]
reveal_type(CountMinSketch.from_error(0.01, 0.01))  # N: bloomkit.sketch.CountMinSketch[K]
reveal_type(CountingBloomFilter(10).to_bloom())  # N: bloomkit.bloom.BloomFilter[K]
reveal_type(QuotientFilter(10).resized(100))  # N: bloomkit.quotient.QuotientFilter[K]

# With key=, the key type is what the function takes.
reveal_type(BloomFilter(1000, key=row_key))  # N: bloomkit.bloom.BloomFilter[check_keys.Row]
reveal_type(CuckooFilter(1000, key=row_key))  # N: bloomkit.cuckoo.CuckooFilter[check_keys.Row]
chain = ScalableBloomFilter(key=row_key)
reveal_type(chain)  # N: bloomkit.scalable.ScalableBloomFilter[check_keys.Row]
reveal_type(TinyLFU(10, key=row_key))  # N: bloomkit.sketch.TinyLFU[check_keys.Row]
shipped = BinaryFuseFilter([Row("ann", 1)], key=row_key)
reveal_type(shipped)  # N: bloomkit.fuse.BinaryFuseFilter[check_keys.Row]
rows: BlockedBloomFilter[Row] = BlockedBloomFilter(1000, key=lambda r: f"{r.user}:{r.day}")

# ---- keys the encoding accepts type-check ----

f = BloomFilter(1000)
f.add("text")
f.add(b"raw")
f.add(bytearray(b"raw"))
f.add(memoryview(b"raw"))
f.add(memoryview(array.array("B", [1, 2])))
f.add(7)
f.add(True)
f.add(np.int64(7))
f.add_many(["a", "b"])
f.add_many(range(10))
f.add_many(np.arange(10, dtype=np.uint64))
f.update(["a"], [b"b"], range(3))
ok: bool = "text" in f
rows.add(Row("ann", 1))
rows.add_many([Row("bob", 2)])
same: BloomFilter[bloomkit.Key] = bloomkit.BloomFilter(10) | f

# ---- and what it refuses at run time is refused before ----

f.add(1.5)  # E: arg-type
f.add(None)  # E: arg-type
f.add(np.float64(1.5))  # E: arg-type
f.add_many(3)  # E: arg-type
f.add_many([1.5, 2.5])  # E: list-item
bad: bool = 1.5 in f  # E: operator
rows.add("ann:1")  # E: arg-type
BloomFilter(1000, key=row_key).add(Row("ann", 1))
BloomFilter(1000, key=row_key).add(7)  # E: arg-type
CuckooFilter(100).remove(2.5)  # E: arg-type
CountingBloomFilter(100).remove_many(7)  # E: arg-type
QuotientFilter(100).count([1])  # E: arg-type
CountMinSketch(10, 2).add(1.5, 3)  # E: arg-type
TinyLFU(10).admit("a", 1.5)  # E: arg-type
ScalableBloomFilter().contains_many(5)  # E: arg-type
BinaryFuseFilter([Row("ann", 1)])  # E: list-item
seen = 2.5 in BinaryFuseFilter([1, 2])  # E: operator
BloomFilter("1000")  # E: call-overload
BloomFilter(1000, key="not callable")  # E: call-overload
