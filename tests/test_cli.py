"""The ``bloomkit`` command line end to end, through subprocesses, and R20:
every subcommand on every kind of corrupt file exits non-zero with one line
on stderr and no traceback."""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import bloomkit
from bloomkit import BlockedBloomFilter, BloomFilter
from bloomkit.cli import (
    EXIT_ABSENT,
    EXIT_CORRUPT,
    EXIT_ERROR,
    EXIT_INCOMPATIBLE,
    EXIT_UNCLEAN,
    EXIT_UNSUPPORTED,
)

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
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        except BaseException:
            code, err = -1, io.StringIO(traceback.format_exc())
    results.append([argv, code, err.getvalue()])
json.dump(results, sys.stdout)
"""


def run_many(cmds: list[list[str]]) -> list[subprocess.CompletedProcess[bytes]]:
    """Run many CLI invocations through ``main()`` in ONE subprocess (the
    machine is shared; a crash still fails the test), each with its own
    captured stderr and exit status."""
    r = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(cmds).encode(),
                       capture_output=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return [subprocess.CompletedProcess(argv, code, b"", err.encode())
            for argv, code, err in json.loads(r.stdout)]


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
        r = run("build", keys_file, "-o", tmp_path / "a.bkf", "-p", "0.001")
        assert r.returncode == 0, r.stderr
        ref = BloomFilter(5000, 0.001)
        ref.add_many(f"user{i}" for i in range(5000))
        assert (tmp_path / "a.bkf").read_bytes() == ref.to_bytes()

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
        bloomkit.save(BloomFilter(5000), b)
        r = run("add", b, "new1", "new2", "-v")
        assert r.returncode == 0 and b"2 keys, 2 new" in r.stderr
        r = run("add", b, "-", stdin=b"piped1\npiped2\n")
        assert r.returncode == 0, r.stderr
        assert bloomkit.verify(b)["flags"] == 0  # closed cleanly

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
        assert info["kind"] == "BloomFilter" and info["capacity"] == 5000
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
