"""``bloomkit parquet probe`` (src/bloomkit/parquet/cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bloomkit.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    import datetime as dt

    for i in range(3):
        t = pa.table({
            "id": pa.array([i * 1000 + j for j in range(1000)], pa.int64()),
            "name": pa.array([f"n{i * 1000 + j}" for j in range(1000)]),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i)] * 1000),
        })
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=500,
                       bloom_filter_options={"name": True})
    return tmp_path


def test_probe_lines_summary_and_status(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parquet", "probe", str(lake / "*.parquet"), "--column", "name", "n1500",
                 "n2999"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"n1500\t{lake / 'part-1.parquet'}#1"
    assert lines[1] == f"n2999\t{lake / 'part-2.parquet'}#1"
    assert "bytes" in err and "3 file(s)" in err
    code = main(["parquet", "probe", str(lake), "-c", "name", "nobody"])
    out, _ = capsys.readouterr()
    assert code == 1 and out == "nobody\t-\n"


def test_probe_types_values_by_schema(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parquet", "probe", str(lake), "-c", "id", "2001", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["values"][0]["candidates"] == [[str(lake / "part-2.parquet"), 0]]
    assert out["bytes_read"] > 0 and out["type"].startswith("INT64")
    assert main(["parquet", "probe", str(lake), "-c", "day", "2024-01-02", "-q"]) == 0
    assert capsys.readouterr().out.count("part-1.parquet") == 2


@pytest.mark.parametrize("argv, needle", [
    (["-c", "nope", "1"], "no column 'nope'"),
    (["-c", "id", "abc"], "not a value of the INT64"),
])
def test_errors_are_one_line(lake: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                             needle: str) -> None:
    assert main(["parquet", "probe", str(lake), *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_corrupt_file_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"\0" * 20 + b"PAR1")
    assert main(["parquet", "probe", str(bad), "-c", "x", "1"]) == 3
    assert "bad.parquet" in capsys.readouterr().err


# ---- bloomkit parquet index / candidates / update -----------------------------


def test_index_then_candidates(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = lake / "lake.bkidx"
    assert main(["parquet", "index", str(lake / "*.parquet"), "-c", "id", "-o", str(idx)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("indexed 3 file(s), 3 file filter(s) of column 'id' (INT64)")
    assert main(["parquet", "candidates", str(idx), "5", "2999", "-1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"5\t{lake / 'part-0.parquet'}"
    assert lines[1] == f"2999\t{lake / 'part-2.parquet'}"
    assert lines[2].startswith("-1\t")  # a false positive is allowed, a miss is not
    assert main(["parquet", "candidates", str(idx), "5", "2999"]) == 0
    capsys.readouterr()


def test_row_group_index_json_and_dates(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = lake / "rg.bkidx"
    assert main(["parquet", "index", str(lake), "-c", "day", "-o", str(idx),
                 "--granularity", "row_group", "-q"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["parquet", "candidates", str(idx), "2024-01-02", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["values"][0]["candidates"] == [[str(lake / "part-1.parquet"), 0],
                                              [str(lake / "part-1.parquet"), 1]]
    assert out["granularity"] == "row_group" and out["stale"] == {
        "changed": [], "removed": [], "added": []}


def test_stale_index_warns_refuses_and_updates(lake: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    idx = lake / "lake.bkidx"
    assert main(["parquet", "index", str(lake), "-c", "id", "-o", str(idx), "-q"]) == 0
    pq.write_table(pa.table({"id": pa.array([123456], pa.int64())}), lake / "part-9.parquet")
    assert main(["parquet", "candidates", str(idx), "123456"]) == 0
    out, err = capsys.readouterr()
    assert out == f"123456\t{lake / 'part-9.parquet'}\n"
    assert err.count("\n") == 1 and "warning" in err and "1 added" in err
    assert main(["parquet", "candidates", str(idx), "123456", "--strict"]) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bloomkit parquet update" in err
    assert main(["parquet", "update", str(idx)]) == 0
    assert capsys.readouterr().out.startswith(f"updated {idx}: 1 added")
    assert main(["parquet", "candidates", str(idx), "123456", "--strict"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, needle, code", [
    (["index", "{lake}/nope.parquet", "-c", "id", "-o", "{lake}/i"], "no such file", 2),
    (["index", "{lake}", "-c", "nope", "-o", "{lake}/i"], "no column 'nope'", 2),
    (["index", "{lake}", "-c", "id", "-o", "{lake}/i", "-p", "2"], "error_rate", 2),
    (["candidates", "{lake}/missing.bkidx", "1"], "No such file", 2),
    (["candidates", "{lake}/part-0.parquet", "1"], "not a bloomkit file", 3),
])
def test_index_errors_are_one_line(lake: Path, capsys: pytest.CaptureFixture[str],
                                   argv: list[str], needle: str, code: int) -> None:
    argv = [a.format(lake=lake) for a in argv]
    assert main(["parquet", *argv]) == code
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_candidates_refuses_a_bad_value_and_a_corrupt_index(
        lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = lake / "lake.bkidx"
    assert main(["parquet", "index", str(lake), "-c", "id", "-o", str(idx), "-q"]) == 0
    assert main(["parquet", "candidates", str(idx), "abc"]) == 2
    assert "not a value of the INT64" in capsys.readouterr().err
    data = bytearray(idx.read_bytes())
    data[-3] ^= 1
    idx.write_bytes(bytes(data))
    assert main(["parquet", "candidates", str(idx), "1"]) == 3
    err = capsys.readouterr().err
    assert "checksum" in err and err.count("\n") == 1
