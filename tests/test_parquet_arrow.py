"""Arrow columns into Parquet's split-block Bloom filter (parquet/sbbf.py,
py_sbbf.c sbbf_hash_arrow; issue #33 item 4).

``add_many`` / ``contains_many`` of an Arrow column (pyarrow, chunked,
sliced, dictionary, view types, Polars) equal the same values as Python
objects, bit for bit and answer for answer, with Parquet's own hashing of
the column's physical type: Arrow ints into INT32/INT64 (range-checked as
``ColumnType.encode`` does), strings and binaries into BYTE_ARRAY and
FIXED_LEN_BYTE_ARRAY hashed from the Arrow buffers; other Arrow types
(dates, floats, decimals) through their Python values.  A null row is no
value: skipped on add, False on contains.  A value the column cannot hold
raises on add (as the object path does) and answers False on contains.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

import pytest

from bloomkit.parquet import ColumnType, SplitBlockBloomFilter

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")


def _object_answers(f: SplitBlockBloomFilter, values: list[Any]) -> list[bool]:
    present = [v for v in values if v is not None]
    it = iter(f.contains_many(present))
    return [False if v is None else bool(next(it)) for v in values]


def _check(column_type: Any, values: list[Any], arrow: Any, probes: list[Any],
           probe_arrow: Any, **kw: Any) -> None:
    a, b = SplitBlockBloomFilter(2048, column_type, **kw), \
        SplitBlockBloomFilter(2048, column_type, **kw)
    a.add_many([v for v in values if v is not None])
    b.add_many(arrow)
    assert a.to_bytes() == b.to_bytes() and a.fill_ratio > 0
    assert list(b.contains_many(probe_arrow)) == _object_answers(a, probes)


def _ints(rng: random.Random, lo: int, hi: int, n: int = 400) -> list[Any]:
    return [lo, hi, 0, -1 if lo < 0 else 1] + [rng.randint(lo, hi) for _ in range(n)]


@pytest.mark.parametrize("physical", ["INT32", "INT64"])
@pytest.mark.parametrize("arrow_type", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                        "uint32", "uint64"])
def test_arrow_ints_hash_as_the_python_ints(physical: str, arrow_type: str,
                                            rng: random.Random) -> None:
    info = np.iinfo(arrow_type)
    keys = _ints(rng, int(info.min), int(info.max))
    storable = [k for k in keys if -(2**31) <= k < 2**31] if physical == "INT32" else \
        [k for k in keys if k < 2**63]
    typ = getattr(pa, arrow_type)()
    with_nulls: list[Any] = [None if i % 9 == 4 else k for i, k in enumerate(storable)]
    probes = [*keys, None]
    _check(physical, with_nulls, pa.array(with_nulls, type=typ), probes,
           pa.array(probes, type=typ))


@pytest.mark.parametrize("physical,bits,signed", [("INT32", 8, False), ("INT32", 16, True),
                                                  ("INT64", 64, False)])
def test_integer_logical_types_range_check_arrow_ints(physical: str, bits: int, signed: bool,
                                                      rng: random.Random) -> None:
    column_type = ColumnType(physical, logical="INTEGER", bit_width=bits, signed=signed)
    lo, hi = (-(2**(bits - 1)), 2**(bits - 1) - 1) if signed else (0, 2**bits - 1)
    arrow = pa.uint64() if lo == 0 and hi > 2**63 else pa.int64()
    amin, amax = (0, 2**64 - 1) if arrow == pa.uint64() else (-(2**63), 2**63 - 1)
    keys = _ints(rng, max(lo, amin), min(hi, amax), 200)
    probes = keys + [k for k in (lo - 1, hi + 1, amin, amax) if amin <= k <= amax]
    _check(column_type, keys, pa.array(keys, type=arrow), probes, pa.array(probes, type=arrow))
    f = SplitBlockBloomFilter(64, column_type)
    if hi < amax:
        with pytest.raises(ValueError, match="cannot hold"):
            f.add_many(pa.array([hi + 1], type=arrow))
        assert f.fill_ratio == 0  # hashed and checked before the first insert


def _strs(rng: random.Random, n: int = 300) -> list[str]:
    return ["", "é", "abc"] + ["".join(rng.choice("abcxyzé€") for _ in range(rng.choice(
        [0, 1, 5, 12, 13, 16, 40]))) for _ in range(n)]


@pytest.mark.parametrize("form", ["string", "large_string", "string_view", "binary",
                                  "large_binary", "binary_view", "dictionary", "chunked",
                                  "sliced", "polars"])
def test_arrow_strings_hash_as_the_python_values(form: str, rng: random.Random) -> None:
    strs = _strs(rng)
    values: list[Any] = [s.encode() if "binary" in form else s for s in strs]
    values = [None if i % 7 == 2 else v for i, v in enumerate(values)]
    probes = values + (["absent", "nope"] if "binary" not in form else [b"absent"])
    arr: Any
    if form == "dictionary":
        arr, parr = pa.array(values).dictionary_encode(), pa.array(probes).dictionary_encode()
    elif form == "chunked":
        arr = pa.chunked_array([values[:100], values[100:]])
        parr = pa.chunked_array([probes[:3], probes[3:]])
    elif form == "sliced":
        arr = pa.array([None, "x", *values])[2:]
        parr = pa.array(["y", *probes]).slice(1)
    elif form == "polars":
        pl = pytest.importorskip("polars")
        arr, parr = pl.Series(values), pl.Series(probes)
    else:
        arr = pa.array(values, type=getattr(pa, form)())
        parr = pa.array(probes, type=getattr(pa, form)())
    _check("STRING" if "binary" not in form else "BYTE_ARRAY", values, arr, probes, parr)


def test_fixed_len_byte_array_checks_the_length(rng: random.Random) -> None:
    vals = [bytes(rng.randrange(256) for _ in range(16)) for _ in range(200)]
    probes: list[Any] = [*vals, b"short", b"x" * 17, None]
    _check("FIXED_LEN_BYTE_ARRAY", vals, pa.array(vals, type=pa.binary(16)), probes,
           pa.array(probes), type_length=16)
    with pytest.raises(ValueError, match="cannot hold"):
        SplitBlockBloomFilter(64, "FIXED_LEN_BYTE_ARRAY", type_length=16).add_many(
            pa.array([b"short"]))


def test_other_arrow_types_go_through_python_values(rng: random.Random) -> None:
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(2000)) for _ in range(100)]
    _check("DATE", [*days, None], pa.array([*days, None]), [*days, dt.date(1999, 1, 1), None],
           pa.array([*days, dt.date(1999, 1, 1), None]))
    floats = [rng.uniform(-1e6, 1e6) for _ in range(100)] + [0.0]
    probes: list[Any] = [*floats, -0.0, float("nan"), 1.5, None]
    _check("DOUBLE", floats, pa.array(floats), probes, pa.array(probes))



@pytest.mark.parametrize("physical,length", [("INT64", None), ("FIXED_LEN_BYTE_ARRAY", 8)])
def test_decimal_columns_take_arrow_decimals(physical: str, length: int | None) -> None:
    col = ColumnType(physical, type_length=length, logical="DECIMAL", scale=2, precision=18)
    vals: list[Any] = [decimal.Decimal(s) for s in ("1.25", "-3.50", "7.00", "0.01")]
    probes = [*vals, decimal.Decimal("9.99"), None]
    typ = pa.decimal128(18, 2)
    _check(col, vals, pa.array(vals, type=typ), probes, pa.array(probes, type=typ))


def test_a_parquet_writer_filter_holds_its_arrow_column(tmp_path: Any,
                                                        rng: random.Random) -> None:
    """Filters pyarrow and DuckDB wrote for a column answer True for that
    column read back as Arrow (the hashing is Parquet's, not bloomkit's),
    and as the same column's Python values do."""
    duckdb = pytest.importorskip("duckdb")
    pq = pytest.importorskip("pyarrow.parquet")
    from bloomkit import parquet

    ids = [rng.randrange(-2**62, 2**62) for _ in range(400)] * 5  # dictionary-encoded
    table = pa.table({"id": pa.array(ids), "name": pa.array([f"user-{i}é" for i in ids])})
    pa_path, dk_path = tmp_path / "pa.parquet", tmp_path / "duckdb.parquet"
    pq.write_table(table, pa_path, bloom_filter_options={
        c: {"ndv": 400, "fpp": 0.01} for c in ("id", "name")})
    con = duckdb.connect()
    con.register("src", table)
    con.execute(f"COPY src TO '{dk_path}' (FORMAT parquet)")
    probes = pa.array([rng.randrange(-2**62, 2**62) for _ in range(500)])
    for path in (pa_path, dk_path):
        for col in ("id", "name"):
            bf = parquet.read_filter(path, 0, col)
            assert bf is not None, (path, col)
            arr = table.column(col)
            assert bool(np.all(bf.contains_many(arr))), (path, col)
            other = probes if col == "id" else pa.array([f"user-{i}é" for i in probes.to_pylist()])
            assert bf.contains_many(other).tolist() == bf.contains_many(other.to_pylist()).tolist()
