"""bloomkit.spark.build: a filter of a Spark DataFrame column, built in parallel.

Each partition's rows reach a Python worker as Arrow record batches
(``DataFrame.mapInArrow``); the worker adds every batch to one partial filter
through the columnar C path (no Python object per key, no GIL) and yields the
partial's state bytes as a one-row batch.  The partials are then merged by
``RDD.treeReduce`` (a tree of depth 2: executors merge first, the driver
merges a few), so the driver never holds more than a handful of states.

Merging is a bitwise OR of filters with equal parameters, which is
order-independent: the result is byte-identical to a serial build of the
same keys (bloomkit kinds: ``add_many`` of the column then ``_recount()``,
exactly as bloomkit.dask.build's result, docs/dask.md "The count field";
Spark's format:
``df.stat.bloomFilter(column, capacity, error_rate)``, which Spark builds
the same way).  A kind that cannot be merged (no ``merge``/``union``) is
refused before any job starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .persist import loads

_SCHEMA = "state binary"


def _merge(a: Any, b: Any) -> Any:
    """a combined with b (a may be modified): bitwise union or counter sum."""
    if callable(getattr(a, "merge", None)):
        r = a.merge(b)
        return a if r is None else r
    return a.union(b)


class _Partial:
    """The picklable per-partition task of mapInArrow."""

    def __init__(self, empty: bytes, spark_kind: str | None) -> None:
        self.empty = empty
        self.spark_kind = spark_kind  # "bloom" / "cms" for Spark's formats, None: bloomkit's

    def new(self) -> Any:
        if self.spark_kind is None:
            return loads(self.empty)
        from . import spark

        if self.spark_kind == "bloom":
            return spark.BloomFilter.from_bytes(self.empty)
        return spark.CountMinSketch.from_bytes(self.empty)

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import importlib

        from .sources.arrow import arrow_keys

        pa = importlib.import_module("pyarrow")

        f = self.new()
        for rb in batches:
            col = rb.column(0)
            if self.spark_kind is None:
                keys, _ = arrow_keys(col, False)  # nulls dropped, as Spark skips them
                f.add_many(keys)
            else:
                f.add_many(col)  # the JVM formats' own Arrow path skips nulls
        yield pa.RecordBatch.from_arrays([pa.array([f.to_bytes()], type=pa.binary())],
                                         names=["state"])

    def combine(self, a: bytes, b: bytes) -> bytes:
        fa, fb = self.load(a), self.load(b)
        out: bytes = _merge(fa, fb).to_bytes()
        return out

    def load(self, data: bytes) -> Any:
        if self.spark_kind is None:
            return loads(data)
        from . import spark

        if self.spark_kind == "bloom":
            return spark.BloomFilter.from_bytes(data)
        return spark.CountMinSketch.from_bytes(data)


def build(df: Any, column: str, capacity: int, error_rate: float, kind: Any,
          params: dict[str, Any]) -> Any:
    from . import spark

    if kind is spark.BloomFilter:
        proto: Any = spark.BloomFilter(capacity, error_rate, **params)
        task = _Partial(proto.to_bytes(), "bloom")
    elif kind is spark.CountMinSketch:
        raise TypeError("a Spark CountMinSketch takes eps and confidence, not a capacity: build "
                        "it with df.stat.countMinSketch, or add_many over df.toArrow() batches")
    elif isinstance(kind, type):
        static = getattr(kind, "_bk_static", False)  # built once from all keys: no union
        if static or not (callable(getattr(kind, "merge", None)) or
                          callable(getattr(kind, "union", None))):
            raise TypeError(f"{kind.__name__} has neither merge() nor union(): it cannot be "
                            "built in parts (a static filter: build it with bloomkit.dask.build, "
                            "which ships hashes, or in one process)")
        proto = kind(capacity=capacity, error_rate=error_rate, **params)
        if getattr(proto, "conservative", False):
            raise ValueError("a conservative-update sketch cannot be built in parts "
                             "byte-identically; use conservative=False")
        task = _Partial(proto.to_bytes(), None)
    else:
        raise TypeError(f"kind must be a bloomkit structure class, not {type(kind).__name__}")
    states = df.select(column).mapInArrow(task, _SCHEMA)
    rdd = states.rdd.map(lambda row: bytes(row[0]))
    # Every partition yields one state, so the RDD is empty only for a
    # DataFrame of no partitions (treeReduce refuses an empty RDD).
    if rdd.getNumPartitions() == 0:
        return proto
    f = task.load(rdd.treeReduce(task.combine, depth=2))
    # Bloom layouts store a count estimated from the bits after a union; the
    # root recounts, as bloomkit.dask does ("The count field", docs/dask.md).
    recount = getattr(f, "_recount", None)
    if callable(recount):
        recount()
    return f
