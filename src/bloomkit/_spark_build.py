"""bloomkit.spark.build: a filter of a Spark DataFrame column, built in parallel.

Each partition's rows reach a Python worker as Arrow record batches
(``DataFrame.mapInArrow``); the worker adds every batch to one partial filter
through the columnar C path (no Python object per key, no GIL) and yields the
partial's state bytes as a one-row batch.  The partials are then merged by a
tree: up to 64 partitions, pairwise in the driver; more, first by a shuffle
of the partial states into about sqrt(partitions) groups that executors merge
(a second mapInArrow), then pairwise in the driver, which so holds about
max(64, sqrt(partitions)) states at most.  (RDD.treeReduce was tried first:
the DataFrame-to-RDD conversion and its extra Python stages cost more than
the build at 10^5 rows.)

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

import math
from collections.abc import Iterator
from typing import Any

from . import _descriptor
from .persist import loads

_SCHEMA = "state binary"


#: Partials merged in the driver directly; more go through one executor level first.
_FAN_IN = 64


def _tree(states: list[bytes], combine: Any) -> bytes:
    """Pairwise merges, level by level, down to one state."""
    while len(states) > 1:
        nxt = [combine(states[i], states[i + 1]) for i in range(0, len(states) - 1, 2)]
        if len(states) % 2:
            nxt.append(states[-1])
        states = nxt
    return states[0]


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

    def merge_batches(self, batches: Iterator[Any]) -> Iterator[Any]:
        """mapInArrow task of the second level: every state of a group, merged."""
        import importlib

        pa = importlib.import_module("pyarrow")
        acc: Any = None
        for rb in batches:
            for v in rb.column(0).to_pylist():
                acc = self.load(bytes(v)) if acc is None else _merge(acc, self.load(bytes(v)))
        if acc is not None:
            yield pa.RecordBatch.from_arrays([pa.array([acc.to_bytes()], type=pa.binary())],
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


#: The SQL confs with which Spark's bloom_filter_agg (what df.stat.bloomFilter
#: runs since Spark 3.3) caps a filter's size, and their defaults.
_MAX_ITEMS = ("spark.sql.optimizer.runtime.bloomFilter.maxNumItems", 4_000_000)
_MAX_BITS = ("spark.sql.optimizer.runtime.bloomFilter.maxNumBits", 67_108_864)


def _conf_int(df: Any, entry: tuple[str, int]) -> int:
    value = df.sparkSession.conf.get(entry[0], str(entry[1]))
    return int(str(value).strip().rstrip("Ll"))


def _spark_format(df: Any, capacity: int, error_rate: float, params: dict[str, Any]) -> Any:
    """The empty filter df.stat.bloomFilter(column, capacity, error_rate) starts from.

    Spark's aggregate caps the expected items and the bits by two SQL confs
    (defaults 4,000,000 items and 2^26 bits = 8 MiB): past them its filter is
    smaller than the formula asks, and its false-positive rate higher (10^7
    keys at 0.01: 2^26 bits, k = 11, about 10% measured; benchmarks/
    spark_build.py).  ``spark_caps=False`` sizes by the formula alone.
    """
    from . import spark

    params = dict(params)
    if params.pop("spark_caps", True) and "num_bits" not in params:
        bits = min(spark.optimal_num_of_bits(capacity, error_rate), _conf_int(df, _MAX_BITS))
        capacity = min(capacity, _conf_int(df, _MAX_ITEMS))
        params["num_bits"] = bits
    return spark.BloomFilter(capacity, error_rate, **params)


def build(df: Any, column: str, capacity: int, error_rate: float, kind: Any,
          params: dict[str, Any]) -> Any:
    from . import spark

    if kind is spark.BloomFilter:
        proto: Any = _spark_format(df, capacity, error_rate, params)
        task = _Partial(proto.to_bytes(), "bloom")
    elif kind is spark.CountMinSketch:
        raise TypeError("a Spark CountMinSketch takes eps and confidence, not a capacity: build "
                        "it with df.stat.countMinSketch, or add_many over df.toArrow() batches")
    elif isinstance(kind, type):
        desc = _descriptor.of(kind)
        static = desc is not None and desc.static  # built once from all keys: no union
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
    parts = states.rdd.getNumPartitions()
    if parts > _FAN_IN:
        # a second level on the executors: the partials shuffled (one small
        # row each) into about sqrt(parts) groups, each merged by mapInArrow
        groups = max(2, math.isqrt(parts))
        states = states.repartition(groups).mapInArrow(task.merge_batches, _SCHEMA)
    # the last level in the driver: at most ~max(_FAN_IN, sqrt(parts)) states
    if hasattr(states, "toArrow"):  # PySpark 4: no pickled Rows
        found = [bytes(v) for v in states.toArrow().column(0).to_pylist()]
    else:
        found = [bytes(r[0]) for r in states.collect()]
    if not found:  # a DataFrame of no partitions
        return proto
    f = task.load(_tree(found, task.combine))
    # Bloom layouts store a count estimated from the bits after a union; the
    # root recounts, as bloomkit.dask does ("The count field", docs/dask.md).
    recount = getattr(f, "_recount", None)
    if callable(recount):
        recount()
    return f
