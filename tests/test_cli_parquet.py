"""``bloomkit parquet probe`` (src/bloomkit/cli_parquet.py)."""

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
