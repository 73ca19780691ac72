"""The ``bloomkit`` command line end to end, through subprocesses, and R20:
every subcommand on every kind of corrupt file exits non-zero with one line
on stderr and no traceback."""

from __future__ import annotations

import gzip
import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import bloomkit
import kind_list
from bloomkit import BlockedBloomFilter, BloomFilter, _core
from bloomkit.cli import (
    EXIT_ABSENT,
    EXIT_CORRUPT,
    EXIT_ERROR,
    EXIT_INCOMPATIBLE,
    EXIT_UNCLEAN,
    EXIT_UNSUPPORTED,
)
from bloomkit.cli import kinds as cli_kinds

# the bloomkit under test (src/, or the sanitized build of .ci/asan.sh)
SRC = str(Path(bloomkit.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=SRC)


def run(*args: str | Path, stdin: bytes | None = None, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bloomkit", *map(str, args)],
        input=stdin, capture_output=True, env=ENV, cwd=cwd, timeout=120,
    )


_DRIVER = r"""
import contextlib, io, json, sys, traceback
from bloomkit.cli import main
results = []
for argv in json.load(sys.stdin):
    err = io.StringIO()
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        except BaseException:
            code, err = -1, io.StringIO(traceback.format_exc())
    out.flush()
    results.append([argv, code, out.buffer.getvalue().decode("utf-8", "replace"),
                    err.getvalue()])
json.dump(results, sys.stdout)
"""


def run_many(cmds: list[list[str]]) -> list[subprocess.CompletedProcess[bytes]]:
    """Run many CLI invocations through ``main()`` in ONE subprocess (the
    machine is shared; a crash still fails the test), each with its own
    captured stderr and exit status."""
    r = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(cmds).encode(),
                       capture_output=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return [subprocess.CompletedProcess(argv, code, out.encode(), err.encode())
            for argv, code, out, err in json.loads(r.stdout)]


def one_line_error(r: subprocess.CompletedProcess[bytes]) -> None:
    err = r.stderr.decode(errors="replace")
    assert r.returncode != 0, (r.args, err)
    assert b"Traceback" not in r.stderr, err
    assert len(err.strip().splitlines()) == 1, (r.args, err)
    assert "error" in err


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    p = tmp_path / "keys.txt"
    p.write_text("".join(f"user{i}\n" for i in range(5000)))
    return p


class BuildTests:
    def test_build_from_file_matches_the_library(self, tmp_path: Path, keys_file: Path) -> None:
        # the default layout is blocked, as the README's first choice (issue #16)
        r = run("build", keys_file, "-o", tmp_path / "a.bkf", "-p", "0.001")
        assert r.returncode == 0, r.stderr
        ref = BlockedBloomFilter(5000, 0.001)
        ref.add_many(f"user{i}" for i in range(5000))
        assert (tmp_path / "a.bkf").read_bytes() == ref.to_bytes()
        r = run("build", keys_file, "-o", tmp_path / "c.bkf", "-p", "0.001", "--layout",
                "classic", "-q")
        assert r.returncode == 0 and r.stdout == b"", r.stderr
        classic = BloomFilter(5000, 0.001)
        classic.add_many(f"user{i}" for i in range(5000))
        assert (tmp_path / "c.bkf").read_bytes() == classic.to_bytes()

    def test_build_prints_a_one_line_summary(self, tmp_path: Path, keys_file: Path) -> None:
        out = tmp_path / "a.bkf"
        r = run("build", keys_file, "-o", out, "--layout", "classic")
        assert r.returncode == 0, r.stderr
        f = bloomkit.load(out)
        lines = r.stdout.decode().splitlines()
        assert len(lines) == 1, lines
        line = lines[0]
        for part in (str(out), "BloomFilter", "5,000 keys", f"{f.num_bits:,} bits",
                     f"k={f.num_hashes}", f"{out.stat().st_size:,} bytes",
                     f"estimated rate {f.estimate_error_rate():.3g}", "target 0.01"):
            assert part in line, (part, line)
        assert r.stderr == b""  # not overfull: no warning

    def test_build_blocked_from_gzip_and_stdin(self, tmp_path: Path) -> None:
        gz = tmp_path / "k.gz"
        gz.write_bytes(gzip.compress(b"".join(b"g%d\r\n" % i for i in range(300))))
        r = run("build", gz, "-", "-o", tmp_path / "b.bkf", "--layout", "blocked",
                "--seed", "9", "--progress",
                stdin=b"".join(b"s%d\n" % i for i in range(200)) + b"\nlast")
        assert r.returncode == 0, r.stderr
        f = bloomkit.load(tmp_path / "b.bkf")
        assert isinstance(f, BlockedBloomFilter) and f.seed == 9
        assert f.capacity == 501  # the line count: 300 + 200 + "last" (blank skipped)
        assert all(f.contains_many([f"g{i}" for i in range(300)] + ["last", "s199"]))
        info = json.loads(run("info", tmp_path / "b.bkf", "--json").stdout)
        assert info["layout_version"] == f.layout_version == 1
        assert info["estimated_error_rate"] == f.estimate_error_rate()
        BloomFilter(10, 0.01).save(tmp_path / "classic.bkf")
        info = json.loads(run("info", tmp_path / "classic.bkf", "--json").stdout)
        assert "layout_version" not in info  # classic filters have none

    def test_build_a_file_that_merges_with_an_old_blocked_one(self, tmp_path: Path) -> None:
        # The golden was built before blocked layout version 1 (version 0).
        old = Path(__file__).parent / "format" / "golden" / "BlockedBloomFilter_small.bkf"
        keys = tmp_path / "k.txt"
        keys.write_text("".join(f"new-{i}\n" for i in range(1000)))
        for version, ok in ((None, False), ("0", True)):
            out = tmp_path / f"v{version}.bkf"
            opts = ["--layout-version", version] if version else []
            r = run("build", keys, "-o", out, "--capacity", "1000", "-p", "0.01", *opts)
            assert r.returncode == 0, r.stderr
            r = run("merge", old, out, "-o", tmp_path / "m.bkf")
            assert (r.returncode == 0) is ok, r.stderr
            if not ok:
                assert b"layout versions" in r.stderr and len(r.stderr.splitlines()) == 1
        merged = bloomkit.load(tmp_path / "m.bkf")
        assert merged.layout_version == 0
        assert all(merged.contains_many([f"new-{i}" for i in range(1000)] + list(range(-500, 500))))
        r = run("build", keys, "-o", tmp_path / "c.bkf", "--layout", "classic",
                "--layout-version", "0")
        assert r.returncode != 0 and b"blocked" in r.stderr

    def test_build_capacity_given_and_stdin_gzip(self, tmp_path: Path) -> None:
        data = gzip.compress(b"a\nb\nc\n")
        r = run("build", "-", "-o", tmp_path / "c.bkf", "--capacity", "1e6", stdin=data)
        assert r.returncode == 0, r.stderr
        f = bloomkit.load(tmp_path / "c.bkf")
        assert f.capacity == 1_000_000 and "a" in f and "c" in f and len(f) == 3


class QueryAddTests:
    def test_add_query_info_verify_merge(self, tmp_path: Path, keys_file: Path) -> None:
        a, b, c = tmp_path / "a.bkf", tmp_path / "b.bkf", tmp_path / "c.bkf"
        assert run("build", keys_file, "-o", a).returncode == 0
        bloomkit.save(BlockedBloomFilter(5000), b)  # the CLI's default layout
        r = run("add", b, "new1", "new2", "-v")
        assert r.returncode == 0 and b"2 keys, 2 new" in r.stderr
        r = run("add", b, "-", stdin=b"piped1\npiped2\n")
        assert r.returncode == 0, r.stderr
        assert bloomkit.verify(b)["flags"] & 0xFF == 0  # closed cleanly

        r = run("query", b, "new1", "piped2", "absent")
        assert r.returncode == EXIT_ABSENT
        assert r.stdout.splitlines() == [b"new1\tyes", b"piped2\tyes", b"absent\tno"]
        assert run("query", b, "new1", "piped1", "-q").returncode == 0
        r = run("query", b, "-", "--misses", stdin=b"new1\nzzz\n")
        assert r.stdout == b"zzz\n" and r.returncode == EXIT_ABSENT
        r = run("query", b, "-", "--hits", stdin=b"new1\nzzz\n")
        assert r.stdout == b"new1\n"

        r = run("info", a, "--json")
        info = json.loads(r.stdout)
        assert info["kind"] == "BlockedBloomFilter" and info["capacity"] == 5000
        assert info["count"] == len(bloomkit.load(a)) and not info["dirty"]
        assert abs(info["estimated_count"] - 5000) < 250
        assert 0 < info["estimated_error_rate"] < 0.02
        assert info["file_bytes"] == a.stat().st_size
        r = run("info", a)
        assert r.returncode == 0 and b"fill_ratio" in r.stdout

        r = run("verify", a)
        assert r.returncode == 0 and b"ok" in r.stdout

        assert run("merge", a, b, "-o", c).returncode == 0
        merged = bloomkit.load(c)
        assert "user7" in merged and "piped1" in merged
        assert run("merge", a, b, "-o", c, "--intersection").returncode == 0
        assert bloomkit.load(c) == bloomkit.load(a) & bloomkit.load(b)

    def test_incompatible_merge(self, tmp_path: Path) -> None:
        bloomkit.save(BloomFilter(100), tmp_path / "a.bkf")
        bloomkit.save(BloomFilter(1000), tmp_path / "b.bkf")
        bloomkit.save(BlockedBloomFilter(100), tmp_path / "c.bkf")
        for other in ("b.bkf", "c.bkf"):
            r = run("merge", tmp_path / "a.bkf", tmp_path / other, "-o", tmp_path / "o.bkf")
            one_line_error(r)
            assert r.returncode == EXIT_INCOMPATIBLE
        assert not (tmp_path / "o.bkf").exists()

    def test_design_and_demo(self) -> None:
        r = run("design", "-n", "50000000", "-p", "0.01", "--json")
        rows = json.loads(r.stdout)
        want = bloomkit.design(50_000_000, 0.01, "blocked")
        assert [x["layout"] for x in rows] == ["classic", "blocked"]
        assert rows[1]["num_bits"] == want.num_bits and rows[1]["num_hashes"] == want.num_hashes
        r = run("design", "-n", "1000")
        assert r.returncode == 0 and b"bits/key" in r.stdout
        r = run("demo", "-n", "20000")
        assert r.returncode == 0, r.stderr

    def test_plot(self, tmp_path: Path) -> None:
        pytest.importorskip("matplotlib")
        bloomkit.save(BloomFilter(1000), tmp_path / "a.bkf")
        r = run("plot", tmp_path / "a.bkf", "-o", tmp_path / "p.png", "--probes", "1000")
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Python's own merge of each kind `--kind` lists (None: the class does not merge),
# from each kind's recipe (tests/kind_list.py); what it answers, from its descriptor.
PY_MERGE: dict[str, Callable[[Any, Any], Any] | None] = {
    name: kind_list.recipes()[name].merge for name in cli_kinds.kind_names()
    if name in kind_list.recipes()}
STATIC = set(kind_list.names(lambda k: k.static))  # built once: no capacity, no add, no merge
NO_CAPACITY = set(kind_list.names(lambda k: k.capacity_param is None))
SKETCHES = {n for n in PY_MERGE if hasattr(getattr(bloomkit, n), "estimate")}  # count answers


def _write_keys(path: Path, keys: list[str]) -> Path:
    path.write_text("".join(k + "\n" for k in keys))
    return path


class EveryKindTests:
    """Issue #16: every kind `--kind` lists builds, adds, queries, shows its
    info, verifies, and merges where its Python class merges."""

    def test_listed_kinds_are_the_registered_ones(self) -> None:
        r = run("build", "--help")
        assert r.returncode == 0
        help_text = " ".join(r.stdout.decode().split())
        for name in cli_kinds.kind_names():
            assert name in help_text
        missing = set(cli_kinds.kind_names()) - set(PY_MERGE)
        assert missing == set(), f"no recipe (tests/kind_list.py) for {sorted(missing)}"
        for name, merge in PY_MERGE.items():
            assert (merge is not None) == _core.KINDS[name].mergeable, name

    def test_every_kind_end_to_end(self, tmp_path: Path) -> None:
        a_keys = _write_keys(tmp_path / "a.txt", [f"a{i}" for i in range(1000)])
        b_keys = _write_keys(tmp_path / "b.txt", [f"a{i}" for i in range(500, 1500)])
        extra = _write_keys(tmp_path / "extra.txt", [f"x{i}" for i in range(100)])
        cmds: list[list[str]] = []
        for name in PY_MERGE:
            a, b, m = (str(tmp_path / f"{name}.{s}") for s in "abm")
            size = [] if name in NO_CAPACITY else ["--capacity", "4000"]
            cmds += [
                ["build", str(a_keys), "-o", a, "--kind", name.lower(), *size],
                ["build", str(b_keys), "-o", b, "--kind", name, *size, "-q"],
                ["add", a, "lit1", "lit2", "--from", str(extra)],
                ["query", a, "a0", "a999", "lit2", "x99"],
                ["info", a, "--json"], ["verify", a], ["merge", a, b, "-o", m, "-q"],
            ]
        results = iter(run_many(cmds))
        for name, merge in PY_MERGE.items():
            build_a, build_b, add, query, info, verify, merge_r = (next(results)
                                                                    for _ in range(7))
            for r in (build_a, build_b, verify, *(() if name in STATIC else (add,))):
                assert r.returncode == 0, (r.args, r.stderr)
            assert build_a.stdout.startswith(f"{tmp_path / name}.a: {name}, 1,000 keys".encode())
            assert build_b.stdout == b""
            lines = query.stdout.decode().splitlines()
            assert [x.split("\t")[0] for x in lines] == ["a0", "a999", "lit2", "x99"]
            if name in STATIC:  # add refused (one line, why); the built keys answer yes
                one_line_error(add)
                assert "static" in add.stderr.decode()
                assert all(x.endswith("\tyes") for x in lines[:2]), lines
            elif name in SKETCHES:  # a count estimate per key, never below the truth
                assert query.returncode == 0, (name, query.stdout, query.stderr)
                assert all(int(x.split("\t")[1]) >= 1 for x in lines), lines
            else:
                assert all(x.endswith("\tyes") for x in lines), lines
            assert json.loads(info.stdout)["kind"] == name
            a = bloomkit.load(tmp_path / f"{name}.a")
            b = bloomkit.load(tmp_path / f"{name}.b")
            out = tmp_path / f"{name}.m"
            if merge is None:
                one_line_error(merge_r)
                assert merge_r.returncode == EXIT_INCOMPATIBLE and not out.exists()
            else:
                assert merge_r.returncode == 0, (name, merge_r.stderr)
                assert out.read_bytes() == merge(a, b).to_bytes(), name

    def test_binary_fuse_build_matches_the_library(self, tmp_path: Path) -> None:
        """--kind BinaryFuseFilter: -p picks the fingerprint; the file equals a
        library build of the same keys (duplicates in the input included)."""
        keys = [f"pw{i}" for i in range(3000)]
        src = _write_keys(tmp_path / "k.txt", keys + keys[:100])
        out = tmp_path / "f.bkf"
        r = run("build", src, "-o", out, "--kind", "BinaryFuseFilter", "-p", "0.0001",
                "--seed", "4")
        assert r.returncode == 0, r.stderr
        assert b"16-bit fingerprints" in r.stdout and b"bits/key" in r.stdout
        ref = bloomkit.BinaryFuseFilter([k.encode() for k in keys], error_rate=0.0001, seed=4)
        assert out.read_bytes() == ref.to_bytes()
        r = run("build", src, "-o", tmp_path / "x.bkf", "--kind", "BinaryFuseFilter",
                "--capacity", "10")
        one_line_error(r)
        assert b"no capacity" in r.stderr and not (tmp_path / "x.bkf").exists()
        r = run("build", "--help")
        assert b"8 bytes a key" in b" ".join(r.stdout.split())

    def test_quotient_files_merge(self, tmp_path: Path) -> None:
        """The issue's first item: `merge` refused QuotientFilter files."""
        q1, q2 = bloomkit.QuotientFilter(1000, seed=3), bloomkit.QuotientFilter(1000, seed=3)
        q1.add_many(range(600))
        q2.add_many(range(400, 900))
        bloomkit.save(q1, tmp_path / "q1.bkf")
        bloomkit.save(q2, tmp_path / "q2.bkf")
        r = run("merge", tmp_path / "q1.bkf", tmp_path / "q2.bkf", "-o", tmp_path / "q.bkf")
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "q.bkf").read_bytes() == (q1 | q2).to_bytes()
        merged = bloomkit.load(tmp_path / "q.bkf")
        assert all(merged.contains_many(range(900)))
        assert merged.count(450) == 2  # a multiset: both copies kept

    def test_sketch_query_prints_count_estimates(self, tmp_path: Path) -> None:
        keys = _write_keys(tmp_path / "k.txt", ["apple"] * 5 + ["pear"] * 2 + ["fig"])
        cms, lfu = tmp_path / "cms.bkf", tmp_path / "lfu.bkf"
        r = run("build", keys, "-o", cms, "--kind", "CountMinSketch", "-p", "0.001",
                "--delta", "0.001")
        assert r.returncode == 0, r.stderr
        sketch = bloomkit.load(cms)
        assert (sketch.width, sketch.depth) == (2719, 7)  # ceil(e/eps), ceil(ln 1/delta)
        r = run("query", cms, "apple", "pear", "never-seen")
        assert r.returncode == EXIT_ABSENT  # an estimate of 0 is "absent"
        assert r.stdout.decode().splitlines() == ["apple\t5", "pear\t2", "never-seen\t0"]
        assert run("query", cms, "apple", "--hits").stdout == b"apple\n"
        assert run("build", keys, "-o", lfu, "--kind", "TinyLFU").returncode == 0
        r = run("query", lfu, "apple", "fig", "never-seen")
        got = dict(line.split("\t") for line in r.stdout.decode().splitlines())
        ref = bloomkit.TinyLFU(8)
        ref.record_many(["apple"] * 5 + ["pear"] * 2 + ["fig"])
        assert got == {k: str(ref.estimate(k)) for k in ("apple", "fig", "never-seen")}
        assert int(got["apple"]) > int(got["fig"]) > 0 and got["never-seen"] == "0"
        # options that do not apply to a kind are refused, not ignored
        for argv in (["--kind", "TinyLFU", "-p", "0.1"], ["--delta", "0.1"],
                     ["--kind", "CountMinSketch", "--capacity", "100"]):
            r = run("build", keys, "-o", tmp_path / "x.bkf", *argv)
            one_line_error(r)
            assert r.returncode == EXIT_ERROR and not (tmp_path / "x.bkf").exists()

    def test_add_to_a_scalable_file(self, tmp_path: Path) -> None:
        """A ScalableBloomFilter cannot be mapped for writing: `add` loads,
        adds and saves it, locked, so concurrent adds lose no key."""
        path = tmp_path / "s.bkf"
        bloomkit.save(bloomkit.ScalableBloomFilter(1000, 0.01), path)
        files = [_write_keys(tmp_path / f"k{j}.txt", [f"w{j}-{i}" for i in range(30000)])
                 for j in range(3)]
        procs = [subprocess.Popen([sys.executable, "-m", "bloomkit", "add", str(path),
                                   "--from", str(f)], env=ENV, stderr=subprocess.PIPE)
                 for f in files]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        f = bloomkit.load(path)
        assert f.num_links > 1  # it grew
        for j in range(3):
            assert all(f.contains_many([f"w{j}-{i}" for i in range(30000)])), j


class MergeTests:
    def test_plain_builds_say_how_to_make_mergeable_files(self, tmp_path: Path) -> None:
        d1 = _write_keys(tmp_path / "d1.txt", [f"u{i}" for i in range(1000)])
        d2 = _write_keys(tmp_path / "d2.txt", [f"v{i}" for i in range(5000)])
        for d in (d1, d2):
            assert run("build", d, "-o", d.with_suffix(".bkf")).returncode == 0
        r = run("merge", d1.with_suffix(".bkf"), d2.with_suffix(".bkf"), "-o", tmp_path / "w")
        one_line_error(r)
        assert r.returncode == EXIT_INCOMPATIBLE
        assert b"--capacity" in r.stderr and b"-p" in r.stderr
        # ... and doing what it says works
        for d in (d1, d2):
            assert run("build", d, "-o", d.with_suffix(".bkf"), "--capacity", "10000",
                       "-p", "0.001", "-q").returncode == 0
        r = run("merge", d1.with_suffix(".bkf"), d2.with_suffix(".bkf"), "-o", tmp_path / "w")
        assert r.returncode == 0, r.stderr
        assert all(bloomkit.load(tmp_path / "w").contains_many(["u999", "v4999"]))

    def test_docs_merge_example_runs_as_written(self, tmp_path: Path) -> None:
        doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
        section = doc.split("### Merging files", 1)[1]
        block = section.split("```sh\n", 1)[1].split("```", 1)[0]
        assert "bloomkit merge" in block
        _write_keys(tmp_path / "day1.txt", ["alice", "carol"] + [f"d1-{i}" for i in range(5000)])
        _write_keys(tmp_path / "day2.txt", ["bob"] + [f"d2-{i}" for i in range(20000)])
        script = (f'bloomkit() {{ "{sys.executable}" -m bloomkit "$@"; }}\n'
                  f"set -e\n{block}")
        r = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=ENV, capture_output=True,
                           timeout=300)
        assert r.returncode == 0, (block, r.stdout, r.stderr)
        week = bloomkit.load(tmp_path / "week.bkf")
        assert all(week.contains_many(["alice", "bob", "carol", "d1-4999", "d2-19999"]))

    def test_errors_name_the_bad_input(self, tmp_path: Path) -> None:
        good = BlockedBloomFilter(1000)
        bloomkit.save(good, tmp_path / "good.bkf")
        (tmp_path / "flipped.bkf").write_bytes(_flip(good.to_bytes()))
        (tmp_path / "short.bkf").write_bytes(good.to_bytes()[:-64])
        (tmp_path / "dir.bkf").mkdir()
        g = str(tmp_path / "good.bkf")
        cmds = []
        for bad in ("flipped.bkf", "short.bkf", "dir.bkf"):
            p = str(tmp_path / bad)
            cmds += [["merge", g, g, p, "-o", str(tmp_path / "o.bkf")], ["verify", p],
                     ["info", p], ["query", p, "k"], ["add", p, "k"]]
        for r in run_many(cmds):
            one_line_error(r)
            bad = next(a for a in r.args if a.endswith(("flipped.bkf", "short.bkf", "dir.bkf")))
            assert f": error: {bad}: " in r.stderr.decode(), (r.args, r.stderr)
            assert b"bktmp" not in r.stderr


class KeyInputTests:
    def test_add_and_query_read_key_files(self, tmp_path: Path) -> None:
        f = tmp_path / "f.bkf"
        bloomkit.save(BlockedBloomFilter(10000), f)
        plain = _write_keys(tmp_path / "k.txt", [f"p{i}" for i in range(300)])
        gz = tmp_path / "k.gz"
        gz.write_bytes(gzip.compress(b"".join(b"g%d\n" % i for i in range(300))))
        r = run("add", f, "lit", "--from", plain, "--from", gz, "--from", "-", "-v",
                stdin=b"s1\ns2\n")
        assert r.returncode == 0, r.stderr
        assert b"603 keys, 603 new" in r.stderr
        ref = BlockedBloomFilter(10000)
        ref.add_many(["lit", *(f"p{i}" for i in range(300)), *(f"g{i}" for i in range(300)),
                      "s1", "s2"])
        assert bloomkit.load(f) == ref
        r = run("query", f, "--from", plain, "--from", "-", stdin=b"g7\nabsent\n")
        assert r.returncode == EXIT_ABSENT
        lines = r.stdout.splitlines()
        assert len(lines) == 302 and lines[-2:] == [b"g7\tyes", b"absent\tno"]
        assert run("query", f, "--from", gz, "-q").returncode == 0
        # KEYS may also follow an option (argparse alone would refuse them)
        r = run("query", f, "--from", gz, "lit", "-q", "p3")
        assert r.returncode == 0, r.stderr
        one_line_error(run("query", f, "--from", gz, "--bogus", "lit"))

    def test_key_source_errors(self, tmp_path: Path) -> None:
        f = str(tmp_path / "f.bkf")
        bloomkit.save(BlockedBloomFilter(100), f)
        cmds = [["add", f], ["query", f], ["add", f, "-", "--from", "-"],
                ["query", f, "--from", str(tmp_path / "missing.txt")],
                ["query", f, "--from", str(tmp_path)]]
        for r in run_many(cmds):
            one_line_error(r)
            assert r.returncode == EXIT_ERROR
        assert bloomkit.verify(f)["flags"] & 0xFF == 0  # refused before opening for writing

    def test_binary_data_files_are_not_read_as_lines(self, tmp_path: Path) -> None:
        """`--from` reads text lines: a .npy array or a Parquet file (found by
        its magic number, whatever its name) would become garbage keys, so
        it is refused with a pointer to `bloomkit build`, before the filter
        is touched."""
        np = pytest.importorskip("numpy")
        f = str(tmp_path / "f.bkf")
        bloomkit.save(BlockedBloomFilter(1000), f)
        before = Path(f).read_bytes()
        np.save(tmp_path / "k.npy", np.arange(100, dtype=np.int64))
        (tmp_path / "k.txt").write_bytes((tmp_path / "k.npy").read_bytes())  # any name
        (tmp_path / "k.pq").write_bytes(b"PAR1" + b"\0" * 64)
        cmds = [["add", f, "--from", str(tmp_path / "k.npy")],
                ["add", f, "--from", str(tmp_path / "k.txt")],
                ["query", f, "--from", str(tmp_path / "k.pq")]]
        for r, what in zip(run_many(cmds), ("NumPy .npy", "NumPy .npy", "Parquet"), strict=True):
            one_line_error(r)
            assert r.returncode == EXIT_ERROR
            assert what.encode() in r.stderr and b"bloomkit build" in r.stderr
        assert Path(f).read_bytes() == before


class OverfullTests:
    def test_overfull_add_warns(self, tmp_path: Path) -> None:
        """The issue's file: capacity 1M, 21.5M keys, exit 0 and silence.
        Scaled down 1000x: capacity 1000, 21,500 keys."""
        f = tmp_path / "f.bkf"
        bloomkit.save(BlockedBloomFilter(1000), f)
        r = run("add", f, "-", stdin=b"".join(b"%d\n" % i for i in range(21500)))
        assert r.returncode == 0
        err = r.stderr.decode()
        assert "warning" in err and "overfull" in err and "--capacity" in err, err
        est = bloomkit.load(f).estimate_error_rate()
        assert est > 0.9 and f"{est:.5g}" in err
        # a filter at its capacity is not overfull
        _write_keys(tmp_path / "k1000.txt", [str(i) for i in range(1000)])
        r = run("build", tmp_path / "k1000.txt", "-o", tmp_path / "ok.bkf", "-q")
        assert r.returncode == 0 and r.stderr == b""

    def test_overfull_build_warns(self, tmp_path: Path, keys_file: Path) -> None:
        r = run("build", keys_file, "-o", tmp_path / "f.bkf", "--capacity", "1000")
        assert r.returncode == 0
        assert b"overfull" in r.stderr and b"5,000 keys" in r.stdout


class OutputPathTests:
    def test_bad_output_is_checked_first_and_named(self, tmp_path: Path) -> None:
        missing_keys = str(tmp_path / "no-such-keys.txt")
        good = str(tmp_path / "good.bkf")
        bloomkit.save(BlockedBloomFilter(100), good)
        nodir = str(tmp_path / "nodir" / "a.bkf")
        cmds = [["build", missing_keys, "-o", nodir], ["build", missing_keys, "-o", str(tmp_path)],
                ["merge", good, good, "-o", nodir], ["merge", good, good, "-o", str(tmp_path)]]
        for r in run_many(cmds):
            one_line_error(r)
            err = r.stderr.decode()
            assert f"-o {r.args[-1]}: " in err, err  # the destination, named ...
            assert "bktmp" not in err and "no-such-keys" not in err  # ... before any work


class HelpTests:
    def test_version(self) -> None:
        r = run("--version")
        assert r.returncode == 0 and r.stdout.decode().strip() == f"bloomkit {bloomkit.__version__}"

    def test_help_shows_statuses_choices_defaults_and_examples(self) -> None:
        commands = ["design", "build", "add", "query", "info", "verify", "merge", "plot", "demo"]
        results = run_many([["--help"]] + [[c, "--help"] for c in commands])
        top = results[0].stdout.decode()
        assert results[0].returncode == 0
        for code in range(7):
            assert f"\n  {code}  " in top, code
        for c in commands:
            assert f"  bloomkit {c} " in top or f"| bloomkit {c} " in top, c
        for c, r in zip(commands, results[1:], strict=True):
            text = r.stdout.decode()
            assert r.returncode == 0 and "example:" in text and "exit statuses:" in text, c
            example = text.split("example:\n", 1)[1].splitlines()[0]
            assert f"bloomkit {c} " in example, (c, example)
        build = " ".join(results[2].stdout.decode().split())
        assert re.search(r"--layout \{classic,blocked\} blocked: [^()]*\(default\)", build), build
        assert "CountMinSketch" in build and "default 0.01" in build


def _resealed(data: bytes) -> bytes:
    """Recompute the container checksum (docs/FORMAT.md) whatever the header says."""
    b = bytearray(data)
    (header_len,) = struct.unpack_from("<I", b, 20)
    head = bytearray(b[:header_len])
    struct.pack_into("<Q", head, 40, 0)
    head[14] &= 0xFE  # DIRTY is not covered
    seed = bloomkit._core.xxh3_64(bytes(head))
    struct.pack_into("<Q", b, 40, bloomkit._core.xxh3_64(bytes(b[header_len:]), seed))
    return bytes(b)


def _patched(offset: int, fmt: str, value: int) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        b = bytearray(data)
        struct.pack_into(fmt, b, offset, value)
        return _resealed(bytes(b))
    return f


def _flip(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) // 2] ^= 4
    return bytes(b)


# name -> (transform of a valid file, expected `verify` exit status)
CORRUPTIONS: dict[str, tuple[Callable[[bytes], bytes], int]] = {
    "empty": (lambda d: b"", EXIT_CORRUPT),
    "short_header": (lambda d: d[:40], EXIT_CORRUPT),
    "truncated_payload": (lambda d: d[:-64], EXIT_CORRUPT),
    "trailing_bytes": (lambda d: d + b"\0" * 7, EXIT_CORRUPT),
    "bit_flip": (_flip, EXIT_CORRUPT),
    "bad_magic": (lambda d: b"XXXX" + d[4:], EXIT_CORRUPT),
    "bad_params": (_patched(72, "<I", 0), EXIT_CORRUPT),
    "huge_payload": (lambda d: d[:32] + struct.pack("<Q", 2**40) + d[40:128], EXIT_CORRUPT),
    "new_major": (_patched(8, "<H", 2), EXIT_UNSUPPORTED),
    "unknown_kind": (_patched(12, "<H", 9), EXIT_UNSUPPORTED),
    "unknown_flag": (_patched(14, "<H", 0x10), EXIT_UNSUPPORTED),
    "dirty": (_patched(14, "<H", 1), EXIT_UNCLEAN),
    "text": (lambda d: b"hello\nworld\n", EXIT_CORRUPT),
}


class CorruptFileTests:
    """R20."""

    def test_every_subcommand_on_every_corrupt_file(self, tmp_path: Path) -> None:
        good = BloomFilter(2000, seed=1)
        good.add_many(range(1000))
        bloomkit.save(good, tmp_path / "good.bkf")
        cmds: list[list[str]] = []
        expected_verify: dict[str, int] = {}
        for name, (transform, code) in CORRUPTIONS.items():
            path = tmp_path / f"{name}.bkf"
            path.write_bytes(transform(good.to_bytes()))
            p, g, o = str(path), str(tmp_path / "good.bkf"), str(tmp_path / f"out_{name}")
            cmds += [
                ["verify", p], ["info", p], ["info", p, "--json"], ["query", p, "1"],
                ["add", p, "1"], ["merge", g, p, "-o", o], ["merge", p, g, "-o", o],
            ]
            expected_verify[p] = code
        missing = str(tmp_path / "missing.bkf")
        cmds += [["verify", missing], ["info", missing], ["query", missing, "k"],
                 ["add", missing, "k"], ["merge", missing, missing, "-o", missing],
                 ["build", missing, "-o", str(tmp_path / "x.bkf")],
                 ["verify", str(tmp_path)], ["query", str(tmp_path), "k"]]
        if _has_matplotlib():
            cmds += [["plot", str(tmp_path / "bit_flip.bkf"), "-o", str(tmp_path / "p.png")],
                     ["plot", missing, "-o", str(tmp_path / "p.png")]]
        results = run_many(cmds)
        for r in results:
            one_line_error(r)
            if r.args[0] == "verify" and r.args[1] in expected_verify:
                assert r.returncode == expected_verify[r.args[1]], (r.args, r.stderr)
        assert not any(p.name.startswith("out_") for p in tmp_path.iterdir())
        # and the exit statuses through real processes
        for name in ("bit_flip", "new_major", "dirty"):
            r = run("verify", tmp_path / f"{name}.bkf")
            one_line_error(r)
            assert r.returncode == CORRUPTIONS[name][1]

    def test_corrupt_gzip_key_input(self, tmp_path: Path) -> None:
        bad = tmp_path / "k.gz"
        bad.write_bytes(gzip.compress(b"a\nb\n" * 1000)[:40])
        one_line_error(run("build", bad, "-o", tmp_path / "o.bkf"))
        bloomkit.save(BloomFilter(10), tmp_path / "a.bkf")
        one_line_error(run("add", tmp_path / "a.bkf", "-", stdin=gzip.compress(b"x\n")[:15]))
        assert not (tmp_path / "o.bkf").exists()

    def test_bad_arguments(self) -> None:
        argvs = [
            ["design", "-n", "0"], ["design", "-n", "ten"], ["design", "-n", "5", "-p", "1.5"],
            ["design", "-n", "5", "-p", "nan"], ["design", "-n", str(10**30)],
            ["build"], ["nosuchcommand"], [], ["query"], ["plot"], ["merge", "a"],
            ["build", "x", "-o", "y", "--capacity", "-3"], ["build", "x", "-o", "y", "-p", "0"],
        ]
        for r in run_many(argvs):
            one_line_error(r)
            assert r.returncode == EXIT_ERROR, r.args
        one_line_error(run("design", "-n", "-1"))  # and once through a real process

    def test_read_only_directory_output(self, tmp_path: Path, keys_file: Path) -> None:
        r = run("build", keys_file, "-o", tmp_path / "nodir" / "a.bkf")
        one_line_error(r)


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
