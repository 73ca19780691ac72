"""bloomkit.parquet's sidecar index (build_index / open_index / candidates).

Against files no one here wrote by hand (DuckDB's and pyarrow's writers),
the index's candidate sets must contain every file / row group that really
holds each value (no false negatives, checked against DuckDB's scan for
files and pyarrow's row groups), for keys of every physical type the reader
supports; plus the container (kind 12) refusing every truncation, bit flip
and extreme field cleanly (R12, R13, R15), staleness (changed, added,
removed files), the empty lake, incremental update and the Dask build.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import struct
import warnings
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from bloomkit import FormatError, parquet
from bloomkit.parquet import ParquetIndex, StaleIndexError, StaleIndexWarning, build_index

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
np = pytest.importorskip("numpy")

FILES = 5
ROWS = 3_000
ROW_GROUP = 1_000


def _pa_table(i: int) -> Any:
    """File i of the pyarrow lake: values overlap between neighbouring files."""
    base = np.arange(i * 2_000, i * 2_000 + ROWS)
    nulls = base % 97 == 0
    return pa.table({
        "i32": pa.array((base * 7 - 10_000).astype(np.int32), mask=nulls),
        "i64": pa.array(base.astype(np.int64) * 1_000_000_007),
        "u16": pa.array((base % 60_000).astype(np.uint16)),
        "f32": pa.array((base / 3).astype(np.float32)),
        "dbl": pa.array(base / 7.0),
        "s": pa.array([f"user-{b}" for b in base]),
        "bin": pa.array([b"\x00" + int(b).to_bytes(3, "big") for b in base], pa.binary()),
        "d": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=int(b)) for b in base],
                      pa.date32()),
        "ts": pa.array(base.astype(np.int64) * 1_000_000 + 17, pa.timestamp("us")),
        "fb": pa.array([int(b).to_bytes(4, "little") for b in base], pa.binary(4)),
        "dec": pa.array([decimal.Decimal(int(b)).scaleb(-2) for b in base],
                        pa.decimal128(9, 2)),
    })


@pytest.fixture(scope="module")
def pa_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pa_lake")
    for i in range(FILES):
        pq.write_table(_pa_table(i), d / f"part-{i}.parquet", row_group_size=ROW_GROUP)
    return d


@pytest.fixture(scope="module")
def duck_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("duck_lake")
    con = duckdb.connect()
    for i in range(FILES):
        con.execute(f"""
            COPY (SELECT (r * 3)::INTEGER AS i32, (r * 1000003)::BIGINT AS i64,
                         r / 9.0 AS dbl, 'k' || r AS s,
                         DATE '2010-01-01' + (r % 5000)::INTEGER AS d
                  FROM range({i * 2_500}, {i * 2_500 + 4_096}) t(r))
            TO '{d}/part-{i}.parquet' (FORMAT PARQUET, ROW_GROUP_SIZE 2048)""")
    return d


def _truth_files(lake: Path, column: str) -> dict[Any, set[str]]:
    """value -> the files holding it, from DuckDB's scan of the lake."""
    rows = duckdb.sql(f"SELECT DISTINCT {column}, filename FROM "
                      f"read_parquet('{lake}/*.parquet', filename=true) "
                      f"WHERE {column} IS NOT NULL").fetchall()
    out: dict[Any, set[str]] = {}
    for v, f in rows:
        out.setdefault(v, set()).add(os.path.basename(f))
    return out


def _truth_row_groups(lake: Path, column: str) -> dict[Any, set[tuple[str, int]]]:
    """value -> the (file, row group) pairs holding it, read with pyarrow."""
    out: dict[Any, set[tuple[str, int]]] = {}
    for path in sorted(lake.glob("*.parquet")):
        pf = pq.ParquetFile(path)
        for g in range(pf.num_row_groups):
            for v in pf.read_row_group(g, columns=[column]).column(0).to_pylist():
                if v is not None:
                    out.setdefault(v, set()).add((path.name, g))
    return out


def _absent(column: str, rng: Any, n: int) -> list[Any]:
    r = [rng.randrange(10**6, 10**7) for _ in range(n)]
    return {
        "i32": [-(x * 7) - 10**6 for x in r], "i64": [x * 1_000_000_007 + 1 for x in r],
        "u16": [], "f32": [x + 0.5 for x in r], "dbl": [x + 0.25 for x in r],
        "s": [f"nobody-{x}" for x in r], "bin": [b"\x01" + x.to_bytes(3, "big") for x in r],
        "d": [dt.date(1900, 1, 1) + dt.timedelta(days=x % 30_000) for x in r],
        "ts": [dt.datetime(1990, 1, 1) + dt.timedelta(microseconds=x) for x in r],
        "fb": [(x + 2**31).to_bytes(4, "little") for x in r],
        "dec": [decimal.Decimal(-x).scaleb(-2) for x in r],
    }[column]


PA_COLUMNS = ["i32", "i64", "u16", "f32", "dbl", "s", "bin", "d", "ts", "fb", "dec"]
DUCK_COLUMNS = ["i32", "i64", "dbl", "s", "d"]


def _check(idx: ParquetIndex, truth: dict[Any, Any], probes: list[Any],
           by_row_group: bool) -> tuple[int, int, int]:
    """(probes, false negatives, false positives) of one index over probes."""
    res = idx.candidates(probes)
    fn = fp = 0
    for v in probes:
        got = {(os.path.basename(p), g) for p, g in res[v]}
        if not by_row_group:
            got = {(p, None) for p, _ in got}
            want = {(f, None) for f in truth.get(v, set())}
        else:
            want = truth.get(v, set())
        fn += len(want - got)
        fp += len(got - want)
    return len(probes), fn, fp


class AgreementTests:
    """Every file / row group holding a value is a candidate (DuckDB's scan
    and pyarrow's row groups are the truth), for every physical type."""

    @pytest.mark.parametrize("granularity", ["file", "row_group"])
    @pytest.mark.parametrize("column", PA_COLUMNS)
    def test_pyarrow_lake(self, pa_lake: Path, tmp_path: Path, rng: Any, column: str,
                          granularity: str) -> None:
        idx = build_index(str(pa_lake / "*.parquet"), column, 0.01, granularity,
                          output=tmp_path / "lake.bkidx", allow_outside=True)
        by_rg = granularity == "row_group"
        truth = _truth_row_groups(pa_lake, column) if by_rg else _truth_files(pa_lake, column)
        present = rng.sample(sorted(truth, key=repr), min(400, len(truth)))
        probes = present + _absent(column, rng, 400)
        n, fn, fp = _check(idx, truth, probes, by_rg)
        entries = len(idx)
        idx.close()
        assert fn == 0, f"{fn} false negatives in {n} probes"
        # at most a few times the design rate over every (probe, entry) pair
        assert fp <= 0.03 * n * entries + 5, (fp, n, entries)

    @pytest.mark.parametrize("granularity", ["file", "row_group"])
    @pytest.mark.parametrize("column", DUCK_COLUMNS)
    def test_duckdb_lake(self, duck_lake: Path, tmp_path: Path, rng: Any, column: str,
                         granularity: str) -> None:
        idx = build_index(duck_lake, column, granularity=granularity,
                          output=tmp_path / "lake.bkidx", allow_outside=True)
        by_rg = granularity == "row_group"
        truth = _truth_row_groups(duck_lake, column) if by_rg else _truth_files(
            duck_lake, column)
        present = rng.sample(sorted(truth, key=repr), 500)
        absent = {"i32": [x * 3 + 1 for x in range(500)],
                  "i64": [x * 1000003 + 5 for x in range(500)],
                  "dbl": [x / 9.0 + 1e-7 for x in range(500)],
                  "s": [f"q{x}" for x in range(500)],
                  "d": [dt.date(1950, 1, 1) + dt.timedelta(days=x) for x in range(500)]}[column]
        n, fn, fp = _check(idx, truth, present + absent, by_rg)
        entries = len(idx)
        idx.close()
        assert fn == 0
        assert fp <= 0.03 * n * entries + 5

    def test_sql_equality_for_floats(self, tmp_path: Path) -> None:
        """0.0 finds a stored -0.0 and NaN finds a stored NaN (DuckDB's = does)."""
        lake = tmp_path / "lake"
        lake.mkdir()
        pq.write_table(pa.table({"x": pa.array([-0.0, 1.5], pa.float64())}), lake / "a.parquet")
        pq.write_table(pa.table({"x": pa.array([math.nan, 2.5], pa.float32())}),
                       lake / "b.parquet")
        with build_index(lake, "x", output=tmp_path / "i.bkidx") as idx:
            res = idx.candidates([0.0, -0.0, float("nan"), 1.5, 2.5])
        names = {k: [os.path.basename(p) for p, _ in v] for k, v in res.items()}
        assert names[0.0] == ["a.parquet"]  # 0.0 and -0.0 are one key of the dict
        assert any(math.isnan(k) and v == ["b.parquet"] for k, v in names.items()
                   if isinstance(k, float))
        got = duckdb.sql(f"SELECT DISTINCT filename FROM read_parquet('{lake}/*.parquet', "
                         "filename=true) WHERE x = 0.0").fetchall()
        assert [os.path.basename(f) for (f,) in got] == ["a.parquet"]

    def test_int_probe_hashes_as_the_files_type(self, tmp_path: Path) -> None:
        """A lake whose files disagree on the column's width: each file's own
        type encodes the probe; a value its type cannot hold is in no file."""
        lake = tmp_path / "lake"
        lake.mkdir()
        pq.write_table(pa.table({"v": pa.array([5, 2**40], pa.int64())}), lake / "wide.parquet")
        pq.write_table(pa.table({"v": pa.array([5, 6], pa.int32())}), lake / "narrow.parquet")
        with build_index(lake, "v", output=tmp_path / "i.bkidx") as idx:
            types = sorted(f.column_type.physical for f in idx.files)
            res = idx.candidates([5, 2**40, 6])
        assert types == ["INT32", "INT64"]
        base = {k: sorted(os.path.basename(p) for p, _ in v) for k, v in res.items()}
        assert base[5] == ["narrow.parquet", "wide.parquet"]
        assert base[2**40] == ["wide.parquet"]
        assert "narrow.parquet" in base[6]

    def test_arrow_types_restored_from_the_stored_schema(self, tmp_path: Path) -> None:
        """pyarrow stores timestamp[s] as TIMESTAMP(MILLIS) and date64 as DATE
        (INT32 days).  pyarrow 26 reads them back as the stored types; were a
        release to restore the written Arrow types from the stored schema,
        their integers would not be what the file stores, and the index
        must take the value path (_stored_as_is) rather than hash them."""
        lake = tmp_path / "lake"
        lake.mkdir()
        ts = [dt.datetime(2020, 1, 1, 0, 0, s) for s in range(5)]
        days = [dt.date(2020, 1, d) for d in range(1, 6)]
        pq.write_table(pa.table({"ts": pa.array(ts, pa.timestamp("s")),
                                 "d": pa.array(days, pa.date64()),
                                 "dur": pa.array([1, 2, 3, 4, 5], pa.duration("s"))}),
                       lake / "a.parquet")
        for col, probe in (("ts", ts[3]), ("d", days[2])):
            with build_index(lake, col, output=tmp_path / "i.bkidx") as idx:
                assert idx.files[0].column_type.logical in ("TIMESTAMP", "DATE")
                assert idx.candidates([probe])[probe] == [(str(lake / "a.parquet"), None)]
        with build_index(lake, "dur", output=tmp_path / "i.bkidx") as idx:
            assert idx.candidates([3])[3] == [(str(lake / "a.parquet"), None)]

    def test_numpy_values(self, pa_lake: Path, tmp_path: Path) -> None:
        with build_index(pa_lake, "i64", output=tmp_path / "i.bkidx",
                         allow_outside=True) as idx:
            want = idx.candidates([0, 1_000_000_007 * 2_001])
            got = idx.candidates(np.array([0, 1_000_000_007 * 2_001], dtype=np.int64))
        assert got == want and want[0] == [(str(pa_lake / "part-0.parquet"), None)]

    def test_probe_type_errors_say_what_the_column_takes(self, pa_lake: Path,
                                                         tmp_path: Path) -> None:
        with build_index(pa_lake, "d", output=tmp_path / "i.bkidx",
                         allow_outside=True) as idx:
            with pytest.raises(TypeError, match=r"datetime\.date"):
                idx.candidates(["2001-01-01"])


def _write_small(lake: Path, name: str, values: list[int]) -> Path:
    p = lake / name
    pq.write_table(pa.table({"v": pa.array(values, pa.int64())}), p, row_group_size=2)
    return p


class StalenessTests:
    def _lake(self, tmp_path: Path) -> Path:
        lake = tmp_path / "lake"
        lake.mkdir()
        _write_small(lake, "a.parquet", [1, 2, 3])
        _write_small(lake, "b.parquet", [4, 5, 6])
        return lake

    def test_changed_file_is_a_candidate_for_every_value(self, tmp_path: Path) -> None:
        lake = self._lake(tmp_path)
        idx = build_index(str(lake / "*.parquet"), "v", output=lake / "i.bkidx")
        assert not idx.stale()
        _write_small(lake, "a.parquet", [1, 2, 3, 99])  # new size, new mtime
        st = idx.stale()
        assert [os.path.basename(p) for p in st.changed] == ["a.parquet"]
        with pytest.warns(StaleIndexWarning, match="1 changed"):
            res = idx.candidates([99, 4])
        assert ("a.parquet", None) in {(os.path.basename(p), g) for p, g in res[99]}
        assert {os.path.basename(p) for p, _ in res[4]} == {"a.parquet", "b.parquet"}
        with pytest.raises(StaleIndexError, match="changed"):
            idx.candidates([99], strict=True)
        idx.close()

    def test_same_size_rewrite_is_caught_by_mtime_and_footer(self, tmp_path: Path) -> None:
        lake = self._lake(tmp_path)
        idx = build_index(lake, "v", output=lake / "i.bkidx")
        f = lake / "a.parquet"
        before = f.stat()
        _write_small(lake, "a.parquet", [7, 8, 9])  # same size
        assert f.stat().st_size == before.st_size
        os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old mtime
        assert not idx.stale()  # size and mtime cannot tell ...
        assert [os.path.basename(p) for p in idx.stale(footers=True).changed] == ["a.parquet"]
        idx.close()

    def test_added_and_removed_files(self, tmp_path: Path) -> None:
        lake = self._lake(tmp_path)
        idx = build_index(str(lake / "*.parquet"), "v", output=lake / "i.bkidx")
        _write_small(lake, "c.parquet", [10])
        (lake / "b.parquet").unlink()
        st = idx.stale()
        assert [os.path.basename(p) for p in st.added] == ["c.parquet"]
        assert [os.path.basename(p) for p in st.removed] == ["b.parquet"]
        with pytest.warns(StaleIndexWarning):
            res = idx.candidates([10, 5])
        assert [os.path.basename(p) for p, _ in res[10]] == ["c.parquet"]
        assert all(os.path.basename(p) != "b.parquet" for p, _ in res[5])
        new, what = idx.update()
        assert [os.path.basename(p) for p in what.added] == ["c.parquet"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = new.candidates([10, 1, 5])
        assert [os.path.basename(p) for p, _ in res[10]] == ["c.parquet"]
        assert [os.path.basename(p) for p, _ in res[1]] == ["a.parquet"]
        assert res[5] == [] or all(os.path.basename(p) != "b.parquet" for p, _ in res[5])
        assert sorted(os.path.basename(f.path) for f in new.files) == ["a.parquet", "c.parquet"]
        new.close()

    def test_update_reuses_unchanged_filters(self, tmp_path: Path) -> None:
        lake = self._lake(tmp_path)
        idx = build_index(lake, "v", granularity="row_group", output=lake / "i.bkidx")
        kept = bytes(idx.filter(0).to_bytes())
        _write_small(lake, "b.parquet", [40, 50, 60, 70])
        new, what = idx.update()
        assert [os.path.basename(p) for p in what.changed] == ["b.parquet"]
        assert bytes(new.filter(0).to_bytes()) == kept
        assert [os.path.basename(p) for p, _ in new.candidates([70])[70]] == ["b.parquet"]
        new.close()

    def test_moving_lake_and_index_together_keeps_paths(self, tmp_path: Path) -> None:
        lake = self._lake(tmp_path)
        build_index(lake, "v", output=lake / "i.bkidx").close()
        moved = tmp_path / "moved"
        lake.rename(moved)
        with parquet.open_index(moved / "i.bkidx") as idx:
            assert not idx.stale()
            assert idx.candidates([4])[4] == [(str(moved / "b.parquet"), None)]


class EmptyLakeTests:
    def test_glob_matching_nothing_is_an_empty_index(self, tmp_path: Path) -> None:
        lake = tmp_path / "lake"
        lake.mkdir()
        idx = build_index(str(lake / "*.parquet"), "v", output=tmp_path / "i.bkidx")
        assert len(idx) == 0 and idx.files == []
        assert idx.candidates([1, "x"]) == {1: [], "x": []}
        _write_small(lake, "a.parquet", [1])
        with pytest.warns(StaleIndexWarning, match="1 added"):
            assert [os.path.basename(p) for p, _ in idx.candidates([1])[1]] == ["a.parquet"]
        idx.close()

    def test_empty_file_and_all_null_column(self, tmp_path: Path) -> None:
        lake = tmp_path / "lake"
        lake.mkdir()
        pq.write_table(pa.table({"v": pa.array([], pa.int64())}), lake / "empty.parquet")
        pq.write_table(pa.table({"v": pa.array([None, None], pa.int64())}),
                       lake / "nulls.parquet")
        for g in ("file", "row_group"):
            with build_index(lake, "v", granularity=g, output=tmp_path / "i.bkidx") as idx:
                assert [n for _, _, n in idx.entries] == [0] * len(idx)
                assert idx.candidates([0, 1]) == {0: [], 1: []}

    def test_dask_build_is_byte_identical(self, tmp_path: Path) -> None:
        pytest.importorskip("dask")
        lake = tmp_path / "lake"
        lake.mkdir()
        for i in range(4):
            _write_small(lake, f"p{i}.parquet", list(range(i * 10, i * 10 + 15)))
        build_index(lake, "v", output=tmp_path / "a.bkidx").close()
        build_index(lake, "v", output=tmp_path / "b.bkidx", dask=True).close()
        assert (tmp_path / "a.bkidx").read_bytes() == (tmp_path / "b.bkidx").read_bytes()


class BadInputTests:
    def test_arguments(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="granularity"):
            build_index([], "v", granularity="page", output=tmp_path / "i")
        with pytest.raises(ValueError, match="error_rate"):
            build_index([], "v", error_rate=1.0, output=tmp_path / "i")
        with pytest.raises(TypeError, match="column"):
            build_index([], "", output=tmp_path / "i")

    def test_unknown_column_names_the_file(self, tmp_path: Path) -> None:
        p = _write_small(tmp_path, "a.parquet", [1])
        with pytest.raises(KeyError, match=r"a\.parquet"):
            build_index(p, "nope", output=tmp_path / "i")
        assert not (tmp_path / "i").exists()

    def test_not_parquet_names_the_file(self, tmp_path: Path) -> None:
        p = tmp_path / "x.parquet"
        p.write_bytes(b"hello")
        with pytest.raises(FormatError, match=r"x\.parquet"):
            build_index(p, "v", output=tmp_path / "i")

    def test_boolean_column_is_refused(self, tmp_path: Path) -> None:
        p = tmp_path / "b.parquet"
        pq.write_table(pa.table({"b": [True, False]}), p)
        with pytest.raises(ValueError, match="BOOLEAN"):
            build_index(p, "b", output=tmp_path / "i")

    def test_other_bloomkit_files_are_not_indexes(self, tmp_path: Path) -> None:
        f = bloomkit.BloomFilter(100, 0.01)
        f.save(tmp_path / "f.bkf")
        with pytest.raises(FormatError, match="not a Parquet index"):
            parquet.open_index(tmp_path / "f.bkf")
        (tmp_path / "short").write_bytes(b"\x89BKF")
        with pytest.raises(FormatError, match="short"):
            parquet.open_index(tmp_path / "short")

    def test_loads_points_to_open_index(self, tmp_path: Path) -> None:
        p = _write_small(tmp_path, "a.parquet", [1])
        build_index(p, "v", output=tmp_path / "i.bkidx").close()
        with pytest.raises(bloomkit.UnsupportedFormatError, match="open_index"):
            bloomkit.load(tmp_path / "i.bkidx")


# ---- the container: hostile input (R12, R13, R15) ---------------------------


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    d = tmp_path_factory.mktemp("small_index")
    pq.write_table(pa.table({"v": pa.array([1, 2, 3, 4, 5], pa.int32())}), d / "a.parquet",
                   row_group_size=3)
    pq.write_table(pa.table({"v": pa.array(["x", "y"])}), d / "b.parquet")
    # b's column is a string: two types in one index
    build_index(str(d / "*.parquet"), "v", granularity="row_group",
                output=d / "i.bkidx").close()
    return d / "i.bkidx", (d / "i.bkidx").read_bytes()


def _reseal(data: bytes | bytearray) -> bytes:
    b = bytearray(data)
    bloomkit._core.seal(b)
    return bytes(b)


def _attempt(path: Path, data: bytes) -> None:
    """Checksummed: a clean error or an index; unchecksummed: the same, and
    an index that opens must answer queries."""
    for verify in (True, False):
        try:
            idx = ParquetIndex(path, verify=verify, _data=data)
        except FormatError:
            continue
        try:  # a flipped column type can make a probe's type unacceptable
            idx.candidates([1, 4, "x", "zz"], check=False)
        except TypeError:
            pass
        _ = idx.entries, repr(idx)
        idx.close()


class HostileIndexTests:
    def test_every_truncation_and_trailing_bytes(self, small_index: tuple[Path, bytes]) -> None:
        """R12"""
        path, data = small_index
        for n in range(len(data)):
            with pytest.raises(FormatError):
                ParquetIndex(path, verify=False, _data=data[:n])
        for extra in range(1, 17):
            with pytest.raises(FormatError, match="trailing"):
                ParquetIndex(path, verify=False, _data=data + bytes(extra))

    def test_every_bit_flip(self, small_index: tuple[Path, bytes]) -> None:
        """R13: with the checksum every flip is refused; without it, a flip
        in the header or the tables is refused or harmless, never a crash."""
        path, data = small_index
        for bit in range(len(data) * 8):
            b = bytearray(data)
            b[bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(FormatError):
                ParquetIndex(path, verify=True, _data=bytes(b))
            if bit // 8 < 1024 or bit % 61 == 0:
                _attempt(path, bytes(b))

    def test_every_table_byte_resealed(self, small_index: tuple[Path, bytes]) -> None:
        """R14 for the params and the tables: every value of every byte,
        checksum recomputed: a clean error or an index that answers."""
        path, data = small_index
        filters_off = 128 + struct.unpack_from("<Q", data, 64 + 40)[0]
        for pos in list(range(64, 128)) + list(range(128, filters_off, 3)):
            for v in (0, 1, 0x7F, 0x80, 0xFF, data[pos] ^ 0x10):
                b = bytearray(data)
                b[pos] = v
                _attempt(path, _reseal(b))

    @pytest.mark.parametrize("off,fmt,what", [
        (64, "<I", "granularity"), (68, "<I", "count"), (72, "<Q", "count"),
        (80, "<d", "error_rate"), (88, "<I", "length"), (92, "<I", "length"),
        (96, "<Q", "tables"), (104, "<Q", "tables"),
    ])
    def test_extreme_params_name_their_reason(self, small_index: tuple[Path, bytes],
                                              off: int, fmt: str, what: str) -> None:
        """R15"""
        path, data = small_index
        values = [math.nan, math.inf, -0.0, 0.0, 1.0] if fmt == "<d" else [
            v for v in (2**31 - 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1)
            if v < 2 ** (8 * struct.calcsize(fmt))]
        for v in values:
            b = bytearray(data)
            struct.pack_into(fmt, b, off, v)
            with pytest.raises(FormatError) as exc:
                ParquetIndex(path, _data=_reseal(b))
            assert "Parquet index" in str(exc.value) or what in str(exc.value)

    def test_crafted_records(self, small_index: tuple[Path, bytes]) -> None:
        path, data = small_index
        files = 128
        cases = {
            files + 48: (b"\x00", "physical type"),       # BOOLEAN
            files + 49: (b"\x63", "logical type"),
            files + 53: (b"\x01", "reserved"),
            files + 32: (b"\x05", "path out of place"),
            files + 64 * 2 + 0: (b"\x01", "order"),        # entry 0 claims file 1
        }
        for pos, (raw, reason) in cases.items():
            b = bytearray(data)
            b[pos:pos + len(raw)] = raw
            with pytest.raises(FormatError, match=reason):
                ParquetIndex(path, _data=_reseal(b))

    def test_verify_reads_the_whole_file(self, small_index: tuple[Path, bytes],
                                         tmp_path: Path) -> None:
        _, data = small_index
        b = bytearray(data)
        b[-1] ^= 0x40  # last bitset byte: only the checksum sees it
        p = tmp_path / "i.bkidx"
        p.write_bytes(bytes(b))
        with parquet.open_index(p, verify=False) as idx:
            with pytest.raises(bloomkit.ChecksumError):
                idx.verify()
        with pytest.raises(bloomkit.ChecksumError, match=r"i\.bkidx"):
            parquet.open_index(p)
