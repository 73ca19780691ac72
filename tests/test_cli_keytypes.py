"""The CLI reads keys in the key domain a filter records (issue #31 item 1).

A filter built from integers (a Parquet or CSV int column, an int .npy)
holds ints, which hash differently from their decimal text: `query` must
read `5207496` as the int, from the arguments, --from files and stdin
(docs/cli.md, "Key types").  Before the fix every present id answered "no".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bloomkit
from key_domains import without_key_domains
from test_cli import run, run_many

IDS = [5207496, 0, 17, -3, 2**40 + 1, 99999999999]


def _lake(tmp: Path, rng: Any
          ) -> tuple[dict[str, list[str]], dict[str, list[int]], list[int]]:
    """Every input format `build` reads with an integer column: the build
    arguments for each (Parquet int64 and int32 over two files, CSV, TSV,
    .npy of int64, int32 and uint32, a structured .npy field)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ids = IDS + [rng.randrange(1, 2**62) for _ in range(200)]
    small = [i for i in ids if 0 <= i < 2**31]
    (tmp / "lake").mkdir()
    pq.write_table(pa.table({"user_id": pa.array(ids[:100], pa.int64()),
                             "name": [f"n{i}" for i in range(100)]}), tmp / "lake/a.parquet")
    pq.write_table(pa.table({"user_id": pa.array(ids[100:], pa.int64()),
                             "name": [f"n{i}" for i in range(len(ids) - 100)]}),
                   tmp / "lake/b.parquet")
    pq.write_table(pa.table({"id32": pa.array(small, pa.int32())}), tmp / "i32.parquet")
    (tmp / "users.csv").write_text("user_id,name\n" + "".join(f"{i},x{i}\n" for i in ids))
    (tmp / "users.tsv").write_text("user_id\tname\n" + "".join(f"{i}\tx\n" for i in ids))
    np.save(tmp / "i64.npy", np.array(ids, dtype=np.int64))
    np.save(tmp / "i32.npy", np.array(small, dtype=np.int32))
    np.save(tmp / "u32.npy", np.array(small, dtype=np.uint32))
    rec = np.zeros(len(ids), dtype=[("user_id", "<i8"), ("score", "<f8")])
    rec["user_id"] = ids
    np.save(tmp / "rec.npy", rec)
    return {
        "parquet int64": ["lake/*.parquet", "--column", "user_id"],
        "parquet int32": ["i32.parquet"],
        "csv": ["users.csv", "--column", "user_id"],
        "tsv": ["users.tsv", "--column", "user_id"],
        "npy int64": ["i64.npy"],
        "npy int32": ["i32.npy"],
        "npy uint32": ["u32.npy"],
        "npy field": ["rec.npy", "--column", "user_id"],
    }, {"parquet int32": small, "npy int32": small, "npy uint32": small}, ids


class EveryIntFormatTests:
    def test_every_present_value_answers_yes(self, tmp_path: Path, rng: Any) -> None:
        builds, narrow, ids = _lake(tmp_path, rng)
        cmds, expect = [], []
        for name, argv in builds.items():
            present = narrow.get(name, ids)
            out = tmp_path / f"{name.replace(' ', '_')}.bkf"
            keys_file = tmp_path / f"{out.stem}.keys"
            keys_file.write_text("".join(f"{v}\n" for v in present))
            cmds += [["build", *(str(tmp_path / a) if "." in a else a for a in argv), "-o",
                      str(out)],
                     ["query", str(out), *map(str, present)],             # arguments
                     ["query", str(out), "--from", str(keys_file)],     # a --from file
                     ["info", str(out), "--json"]]
            expect.append((name, present))
        results = run_many(cmds)
        for i, (name, present) in enumerate(expect):
            build, args, from_file, info = results[4 * i:4 * i + 4]
            assert build.returncode == 0, (name, build.stderr)
            assert b"keys: int" in build.stdout, (name, build.stdout)  # the build summary
            for r in (args, from_file):
                assert r.returncode == 0, (name, r.stdout[:300], r.stderr)
                lines = r.stdout.decode().splitlines()
                assert lines == [f"{v}\tyes" for v in present], name
                assert r.stderr == b"", name
            assert json.loads(info.stdout)["key_types"] == ["int"], name

    def test_stdin_and_integers_as_written(self, tmp_path: Path) -> None:
        np.save(tmp_path / "ids.npy", np.array(IDS, dtype=np.int64))
        f = tmp_path / "ids.bkf"
        assert run("build", tmp_path / "ids.npy", "-o", f, "-q").returncode == 0
        r = run("query", f, "-", stdin=b"5207496\n+17\n0017\n -3 \n0x4F75C8\n")
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode().splitlines() == [
            "5207496\tyes", "+17\tyes", "0017\tyes", " -3 \tyes", "0x4F75C8\tyes"]
        r = run("info", f)
        assert r.returncode == 0 and any(
            line.split() == ["keys", "int"] for line in r.stdout.decode().splitlines())


class OverrideAndWarningTests:
    @pytest.fixture
    def files(self, tmp_path: Path) -> dict[str, Path]:
        ints = bloomkit.BlockedBloomFilter(1000, 0.001)
        ints.add_many(IDS)
        text = bloomkit.BlockedBloomFilter(1000, 0.001)
        text.add_many([str(i) for i in IDS] + ["abc"])
        mixed = bloomkit.BlockedBloomFilter(1000, 0.001)
        mixed.add_many([5207496, "17", "abc"])
        out = {"int": tmp_path / "int.bkf", "text": tmp_path / "text.bkf",
               "mixed": tmp_path / "mixed.bkf", "unknown": tmp_path / "old.bkf"}
        for name, obj in (("int", ints), ("text", text), ("mixed", mixed)):
            bloomkit.save(obj, out[name])
        # as a bloomkit before the record wrote it: the same bytes, no key domains
        out["unknown"].write_bytes(without_key_domains(ints))
        return out

    def test_a_text_key_in_an_int_filter_warns_and_answers_no(
            self, files: dict[str, Path]) -> None:
        r = run("query", files["int"], "5207496", "abc")
        assert r.returncode == 1
        assert r.stdout.decode().splitlines() == ["5207496\tyes", "abc\tno"]
        err = r.stderr.decode().strip().splitlines()
        assert len(err) == 1 and "warning" in err[0] and "'abc' is not an integer" in err[0]

    def test_overrides(self, files: dict[str, Path]) -> None:
        r = run("query", files["int"], "--as-text", "5207496")  # the text is not the int
        assert r.returncode == 1 and r.stdout == b"5207496\tno\n" and r.stderr == b""
        r = run("query", files["text"], "--as-int", "5207496")
        assert r.returncode == 1 and r.stdout == b"5207496\tno\n"
        r = run("query", files["text"], "5207496", "abc")  # a text filter: text, as always
        assert r.returncode == 0 and r.stderr == b""
        r = run("query", files["int"], "--as-int", "abc")
        assert r.returncode == 2 and b"'abc' is not an integer" in r.stderr
        r = run("query", files["int"], "--as-int", "--as-text", "1")
        assert r.returncode == 2  # one or the other

    def test_unknown_answers_as_before_with_a_note(self, files: dict[str, Path]) -> None:
        assert bloomkit.load(files["unknown"]).key_types is None
        r = run("query", files["unknown"], "5207496", "abc", "17")
        assert r.returncode == 1 and r.stdout == b"5207496\tno\nabc\tno\n17\tno\n"
        err = r.stderr.decode().strip().splitlines()
        assert len(err) == 1 and "note" in err[0] and "--as-int" in err[0]  # once a run
        r = run("query", files["unknown"], "--as-int", "5207496", "17")
        assert r.returncode == 0 and r.stderr == b""
        r = run("query", files["unknown"], "abc")  # nothing numeric: no note
        assert r.stderr == b""
        r = run("info", files["unknown"])
        assert b"unknown" in r.stdout

    def test_mixed_looks_up_numbers_both_ways(self, files: dict[str, Path]) -> None:
        r = run("query", files["mixed"], "5207496", "17", "abc", "nope")
        assert r.stdout.decode().splitlines() == [
            "5207496\tyes", "17\tyes", "abc\tyes", "nope\tno"]
        assert b"mixed (int and text)" in run("info", files["mixed"]).stdout

    def test_add_reads_keys_as_the_filter_holds_them(self, files: dict[str, Path]) -> None:
        r = run("add", files["int"], "123", "--from", "-", stdin=b"456\n")
        assert r.returncode == 0, r.stderr
        f = bloomkit.load(files["int"])
        assert 123 in f and 456 in f and f.key_types == {"int"}
        r = run("add", files["int"], "--as-text", "789")
        assert r.returncode == 0
        f = bloomkit.load(files["int"])
        assert "789" in f and f.key_types == {"int", "text"}


def test_static_kind_records_the_keys_hashed(tmp_path: Path) -> None:
    np.save(tmp_path / "ids.npy", np.array(IDS, dtype=np.int64))
    (tmp_path / "words.txt").write_text("alpha\nbeta\n")
    f, g = tmp_path / "ids.bkf", tmp_path / "words.bkf"
    r1, r2, q1, q2 = run_many([
        ["build", str(tmp_path / "ids.npy"), "--kind", "BinaryFuseFilter", "-o", str(f)],
        ["build", str(tmp_path / "words.txt"), "--kind", "BinaryFuseFilter", "-o", str(g)],
        ["query", str(f), *map(str, IDS)], ["query", str(g), "alpha", "beta"]])
    assert b"keys: int" in r1.stdout and b"keys: text" in r2.stdout
    assert q1.returncode == 0 and q2.returncode == 0
    assert bloomkit.load(f).key_types == {"int"} and bloomkit.load(g).key_types == {"text"}


def test_merge_records_every_input(tmp_path: Path) -> None:
    """`merge` ORs Bloom files chunk by chunk without loading them
    (_filemerge.py) and the other kinds through the in-memory union: either
    way the output holds every input's key types, unknown if one is."""
    paths = {}
    for name, keys, kind in (("i", [1, 2], "b"), ("t", ["a"], "b"), ("ci", [1], "c"),
                             ("ct", ["a"], "c")):
        f = (bloomkit.BlockedBloomFilter(100, 0.01) if kind == "b"
             else bloomkit.CountingBloomFilter(100, 0.01))
        f.add_many(keys)
        paths[name] = tmp_path / f"{name}.bkf"
        bloomkit.save(f, paths[name])
    paths["old"] = tmp_path / "old.bkf"
    paths["old"].write_bytes(without_key_domains(paths["i"].read_bytes()))
    out = {n: tmp_path / f"m{n}.bkf" for n in ("b", "c", "u")}
    rs = run_many([["merge", str(paths["i"]), str(paths["t"]), "-o", str(out["b"])],
                   ["merge", str(paths["ci"]), str(paths["ct"]), "-o", str(out["c"])],
                   ["merge", str(paths["t"]), str(paths["old"]), "-o", str(out["u"])]])
    assert all(r.returncode == 0 for r in rs), [r.stderr for r in rs]
    assert b"mixed (int and text)" in rs[0].stdout
    assert bloomkit.load(out["b"]).key_types == {"int", "text"}
    assert bloomkit.load(out["c"]).key_types == {"int", "text"}
    assert bloomkit.load(out["u"]).key_types is None


def test_warnings_past_three_are_counted(tmp_path: Path) -> None:
    f = bloomkit.BlockedBloomFilter(100, 0.01)
    f.add(1)
    bloomkit.save(f, tmp_path / "f.bkf")
    r = run("query", tmp_path / "f.bkf", "1", "a", "b", "c", "d", "e")
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 4 and "2 more keys were not integers" in err[-1]
