"""bloomkit.spark against the real Spark (PySpark's jars, a local JVM).

Byte-for-byte and answer-for-answer agreement of BloomFilter (V1, V2) and
CountMinSketch with Spark's own classes driven by tests/jvm/BkSparkTool.java,
for long, string and binary keys, both directions; then the parallel build
on one local[2] session for the module.  Skipped with an install hint
without Java or PySpark, except in CI (CI=true), where they must run."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bloomkit
from bloomkit import FormatError, IncompatibleFiltersError, _core, spark
from jvm_tools import Missing, missing, run, spark_tool, write_keys

pa = pytest.importorskip("pyarrow")


def _missing(exc: Exception) -> None:
    missing(exc, "Spark")


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    try:
        return spark_tool(tmp_path_factory.mktemp("jvm"))
    except Missing as exc:
        _missing(exc)
        raise


def _keys(kind: str, n: int, rng: random.Random, tag: str) -> list[Any]:
    if kind == "long":
        return [rng.randrange(-2**63, 2**63) for _ in range(n)]
    if kind == "string":  # ASCII and multi-byte UTF-8, lengths 0..~20
        return [f"{tag}{rng.randrange(10**9)}" + "é✓" * rng.randrange(3) for _ in range(n)]
    # a tag of its own keeps inserted and absent keys apart (bytes 0x80.. for the sign-
    # extended tail of Spark's hashUnsafeBytes)
    return [tag.encode() + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 22)))
            for _ in range(n)]


def _arrow(kind: str, keys: list[Any]) -> Any:
    t = {"long": pa.int64(), "string": pa.large_string(), "binary": pa.binary()}[kind]
    return pa.array(keys, type=t)


def test_hashes_equal_the_installed_spark(tool: list[str], tmp_path: Path) -> None:
    out = tmp_path / "vectors.txt"
    import subprocess
    out.write_text(subprocess.run([*tool, "hash"], capture_output=True, text=True,
                                  check=True).stdout)
    pinned = {json.dumps(v, sort_keys=True)
              for v in json.loads((Path(__file__).parent / "hash_vectors.json").read_text())
              ["spark_murmur3"]}
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == len(pinned) > 100
    for v in lines:
        data = bytes.fromhex(v.get("data_hex", ""))
        if v["fn"] == "long":
            got = _core.spark_hash_long(v["value"], v["seed"])
        elif v["fn"] == "int":
            got = _core.spark_hash_int(v["value"], v["seed"])
        elif v["fn"] == "bytes":
            got = _core.spark_hash_bytes(data, v["seed"])
        else:
            got = _core.spark_hash_bytes2(data, v["seed"])
        assert got == v["digest"], v
        assert json.dumps(v, sort_keys=True) in pinned


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("kind", ["long", "string", "binary"])
def test_bloom_bytes_and_answers_equal_spark(tool: list[str], tmp_path: Path, kind: str,
                                             version: int, rng: random.Random) -> None:
    n = 4000
    keys, absent = _keys(kind, n, rng, "in"), _keys(kind, n, rng, "out")
    probes = keys[:500] + absent
    write_keys(tmp_path / "k", keys, kind)
    write_keys(tmp_path / "p", probes, kind)
    run(tool, "bloom", version, n, 0.01, kind, tmp_path / "k", tmp_path / "p", tmp_path / "f",
        tmp_path / "a")
    theirs = np.frombuffer((tmp_path / "a").read_bytes(), dtype=np.uint8).astype(bool)
    assert theirs[:500].all() and 0 < theirs[500:].sum() < n // 20  # a real filter

    f = spark.BloomFilter(n, 0.01, version=version)
    f.add_many(keys)  # the key-by-key path
    assert f.to_bytes() == (tmp_path / "f").read_bytes()
    g = spark.BloomFilter(n, 0.01, version=version)
    g.add_many(_arrow(kind, keys))  # the columnar path
    assert g.to_bytes() == f.to_bytes()
    assert (f.contains_many(probes) == theirs).all()
    assert (f.contains_many(_arrow(kind, probes)) == theirs).all()
    assert [p in f for p in probes[:300]] == theirs[:300].tolist()
    if kind == "long":
        assert (f.contains_many(np.array(probes, dtype=np.int64)) == theirs).all()
    # Spark loads what bloomkit wrote (the same bytes) and answers the same
    loaded = spark.BloomFilter.from_bytes((tmp_path / "f").read_bytes())
    assert loaded == f and loaded.version == version


def test_spark_reads_a_filter_bloomkit_built(tool: list[str], tmp_path: Path,
                                             rng: random.Random) -> None:
    keys = _keys("string", 3000, rng, "k")
    probes = keys[:200] + _keys("string", 3000, rng, "p")
    f = spark.BloomFilter(3000, 0.02, seed=12345)  # V2 with a seed of its own
    f.add_many(keys)
    (tmp_path / "f").write_bytes(f.to_bytes())
    write_keys(tmp_path / "p", probes, "string")
    run(tool, "query", tmp_path / "f", "string", tmp_path / "p", tmp_path / "a")
    theirs = np.frombuffer((tmp_path / "a").read_bytes(), dtype=np.uint8).astype(bool)
    assert theirs[:200].all()
    assert (f.contains_many(probes) == theirs).all()


@pytest.mark.parametrize("kind", ["long", "string", "binary"])
def test_count_min_sketch_bytes_and_estimates_equal_spark(tool: list[str], tmp_path: Path,
                                                         kind: str, rng: random.Random) -> None:
    distinct = _keys(kind, 500, rng, "c")
    keys = [rng.choice(distinct) for _ in range(5000)]
    probes = distinct[:300] + _keys(kind, 300, rng, "z")
    write_keys(tmp_path / "k", keys, kind)
    write_keys(tmp_path / "p", probes, kind)
    run(tool, "cms", 0.01, 0.95, 42, kind, tmp_path / "k", tmp_path / "p", tmp_path / "s",
        tmp_path / "e")
    theirs = np.frombuffer((tmp_path / "e").read_bytes(), dtype=">i8")
    s = spark.CountMinSketch(0.01, 0.95, 42)
    s.add_many(_arrow(kind, keys))
    assert s.to_bytes() == (tmp_path / "s").read_bytes()
    assert s.total_count == 5000
    assert (s.estimate_many(probes) == theirs).all()
    t = spark.CountMinSketch(0.01, 0.95, 42)
    for k in keys:
        t.add(k)
    assert t == s
    # and Spark reads a sketch bloomkit built with counts
    u = spark.CountMinSketch(0.01, 0.95, 42)
    u.add_many(_arrow(kind, distinct), counts=np.arange(len(distinct)))
    (tmp_path / "u").write_bytes(u.to_bytes())
    run(tool, "cmsquery", tmp_path / "u", kind, tmp_path / "p", tmp_path / "e2")
    theirs2 = np.frombuffer((tmp_path / "e2").read_bytes(), dtype=">i8")
    assert (u.estimate_many(probes) == theirs2).all()
    assert (theirs2[:300] >= np.arange(300)).all()


def test_keys_follow_spark_types() -> None:
    f = spark.BloomFilter(100, 0.01)
    f.add(7)
    assert 7 in f and np.int32(7) in f  # every integral type is a long
    assert f.contains_many(pa.array([7], type=pa.int8())).tolist() == [True]
    with pytest.raises(TypeError, match=r"int \(as a Java long\).*not bool"):
        f.add(True)
    with pytest.raises(TypeError):
        f.add(1.5)
    with pytest.raises(OverflowError, match="Java long"):
        f.add(2**63)
    with pytest.raises(OverflowError, match="Java long"):
        f.add_many(np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(TypeError, match="single str"):
        f.add_many("abc")
    f.add_many(pa.array(["x", None, "y"]))  # nulls are skipped, as Spark does
    assert f.contains_many(pa.array(["x", None, "y"])).tolist() == [True, False, True]
    assert f.contains_many(pa.chunked_array([["x"], ["y", "x"]])).tolist() == [True] * 3


def test_merge_and_mismatches() -> None:
    a, b = spark.BloomFilter(1000, 0.01), spark.BloomFilter(1000, 0.01)
    a.add_many(range(500))
    b.add_many(range(500, 1000))
    c = a.copy().merge(b)
    assert all(x in c for x in range(1000))
    assert c.intersect(a) == a or c.cardinality() <= a.cardinality() + b.cardinality()
    with pytest.raises(IncompatibleFiltersError):
        a.merge(spark.BloomFilter(1000, 0.01, version=1))
    with pytest.raises(IncompatibleFiltersError):
        a.merge(spark.BloomFilter(1000, 0.01, seed=1))
    with pytest.raises(IncompatibleFiltersError):
        spark.CountMinSketch(0.01, 0.9, 1).merge(spark.CountMinSketch(0.01, 0.9, 2))
    with pytest.raises(FormatError, match="version"):
        spark.BloomFilter.from_bytes(spark.CountMinSketch(0.1, 0.5).to_bytes()[:0] + b"\0\0\0\7")


# ---- builds on a local Spark session ------------------------------------------------


@pytest.fixture(scope="module")
def session(tool: list[str]) -> Iterator[Any]:
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        _missing(exc)
    s = (SparkSession.builder.master("local[2]").appName("bloomkit-tests")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def _spark_bytes(df: Any, column: str, n: int, fpp: float) -> bytes:
    """df.stat.bloomFilter's bytes (PySpark does not wrap it: through the JVM)."""
    jf = df._jdf.stat().bloomFilter(column, n, fpp)
    jvm = df.sparkSession._jvm
    out = jvm.java.io.ByteArrayOutputStream()
    jf.writeTo(out)
    return bytes(out.toByteArray())


def test_build_spark_format_equals_df_stat_bloom_filter(session: Any) -> None:
    df = session.range(0, 30000, numPartitions=4).selectExpr(
        "id * 7919 - 100000 as l", "cast(id as int) as i", "concat('u', id, 'é') as s",
        "case when id % 7 = 0 then null else id end as n")
    for col in ["l", "i", "s", "n"]:
        theirs = _spark_bytes(df, col, 30000, 0.02)
        version = int.from_bytes(theirs[:4], "big")  # 2 since Spark 4.x, 1 before
        got = spark.build(df, col, 30000, 0.02, version=version)
        assert got.to_bytes() == theirs, col


def test_build_bloomkit_kinds_equal_serial_and_dask_builds(session: Any) -> None:
    x = (np.arange(40000, dtype=np.int64) * 2654435761) % (2**40)
    pdf = pa.table({"x": x, "s": pa.array([f"k{v}" for v in x[:5000]] * 8)})
    df = session.createDataFrame(pdf.to_pandas()).repartition(3)
    for kind in (bloomkit.BlockedBloomFilter, bloomkit.BloomFilter):
        ref = kind(capacity=40000, error_rate=0.01)
        ref.add_many(x)
        ref._recount()
        got = spark.build(df, "x", 40000, 0.01, kind=kind)
        assert got.to_bytes() == ref.to_bytes(), kind.__name__
    da = pytest.importorskip("dask.array")
    from bloomkit import dask as bkd
    dk = bkd.build(da.from_array(x, chunks=7000), bloomkit.BlockedBloomFilter, 40000, 0.01)
    assert dk.to_bytes() == spark.build(df, "x", 40000, 0.01,
                                        kind=bloomkit.BlockedBloomFilter).to_bytes()
    s_ref = bloomkit.BlockedBloomFilter(capacity=5000, error_rate=0.01)
    s_ref.add_many([f"k{v}" for v in x[:5000]])
    s_ref._recount()
    got_s = spark.build(df, "s", 5000, 0.01, kind=bloomkit.BlockedBloomFilter)
    assert got_s.to_bytes() == s_ref.to_bytes()


def test_build_refuses_what_cannot_be_merged(session: Any) -> None:
    df = session.range(10)
    with pytest.raises(TypeError, match=r"neither merge.*static filter"):
        spark.build(df, "id", 10, 0.01, kind=bloomkit.BinaryFuseFilter)
    with pytest.raises(TypeError, match="eps and confidence"):
        spark.build(df, "id", 10, 0.01, kind=spark.CountMinSketch)


def test_build_of_many_partitions_merges_on_the_executors_first(session: Any) -> None:
    # > 64 partitions: the partials are shuffled into sqrt(P) groups merged by a
    # second mapInArrow before the driver merges the rest; same bytes still
    df = session.range(0, 7000, numPartitions=70).selectExpr("id * 31 as k")
    ref = bloomkit.BlockedBloomFilter(capacity=7000, error_rate=0.01)
    ref.add_many(np.arange(7000, dtype=np.int64) * 31)
    ref._recount()
    got = spark.build(df, "k", 7000, 0.01, kind=bloomkit.BlockedBloomFilter)
    assert got.to_bytes() == ref.to_bytes()
    theirs = _spark_bytes(df, "k", 7000, 0.01)
    version = int.from_bytes(theirs[:4], "big")
    assert spark.build(df, "k", 7000, 0.01, version=version).to_bytes() == theirs


def test_build_spark_format_follows_sparks_size_caps(session: Any) -> None:
    # df.stat.bloomFilter runs bloom_filter_agg, which caps the items and bits by
    # two SQL confs (defaults 4e6 items, 2^26 bits); lowered here so that 20000
    # rows cross both, the bytes must still be Spark's
    df = session.range(0, 20000, numPartitions=3).selectExpr("id * 13 as k")
    conf = session.conf
    conf.set("spark.sql.optimizer.runtime.bloomFilter.maxNumItems", "5000")
    conf.set("spark.sql.optimizer.runtime.bloomFilter.maxNumBits", str(2**15))
    try:
        theirs = _spark_bytes(df, "k", 20000, 0.01)
        version = int.from_bytes(theirs[:4], "big")
        got = spark.build(df, "k", 20000, 0.01, version=version)
        assert got.to_bytes() == theirs
        assert got.bit_size == 2**15
        full = spark.build(df, "k", 20000, 0.01, version=version, spark_caps=False)
        assert full.bit_size > 2**15 and full.bit_size == spark.BloomFilter(20000, 0.01).bit_size
    finally:
        conf.unset("spark.sql.optimizer.runtime.bloomFilter.maxNumItems")
        conf.unset("spark.sql.optimizer.runtime.bloomFilter.maxNumBits")
