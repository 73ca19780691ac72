"""Text keys from files (issue #31 item 3): one reader for every face.

A UTF-8 byte-order mark at the start of a key file is dropped by every text
reader (the CLI's KEYS files, ``--from`` and stdin, ``build_from``'s text
lines, ``bloomkit.lines``); ``bloomkit.lines(path)`` gives Python the keys
the CLI reads, byte for byte."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

import bloomkit

BOM = b"\xef\xbb\xbf"
ENV = {"PYTHONPATH": str(Path(bloomkit.__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"}
RAW = BOM + b"hunter2\r\npassword\n\n  spaced  \nlast-no-newline"
KEYS = [b"hunter2", b"password", b"  spaced  ", b"last-no-newline"]


def cli(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bloomkit", *map(str, args)], input=stdin,
                          capture_output=True, env=ENV, timeout=120)  # type: ignore[return-value]


@pytest.fixture(params=["plain", "gzip"])
def leaked(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "leaked.txt"
    path.write_bytes(RAW if request.param == "plain" else gzip.compress(RAW))
    return path


def test_lines_drops_the_bom_and_line_ends(leaked: Path) -> None:
    assert list(bloomkit.lines(leaked)) == KEYS
    assert list(bloomkit.lines(str(leaked))) == KEYS
    # only at the very start: a BOM further down is part of its key
    later = leaked.parent / "later.txt"
    later.write_bytes(b"a\n" + BOM + b"b\n")
    assert list(bloomkit.lines(later)) == [b"a", BOM + b"b"]


def test_python_builds_answer_the_first_key(leaked: Path) -> None:
    """`BinaryFuseFilter(open(...))` kept each newline (docs/keys.md says what
    iterating a file yields); bloomkit.lines is the documented way."""
    g = bloomkit.BinaryFuseFilter(bloomkit.lines(leaked))
    assert all(k in g for k in ["hunter2", "password", "  spaced  ", "last-no-newline"])
    f = bloomkit.build_from(str(leaked))
    assert "hunter2" in f and all(f.contains_many(KEYS))


def test_cli_build_add_query_drop_the_bom(leaked: Path, tmp_path: Path) -> None:
    out = tmp_path / "pw.bkf"
    r = cli("build", leaked, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    r = cli("query", out, "hunter2")
    assert r.returncode == 0 and r.stdout.split() == [b"hunter2", b"yes"], r
    # query --from and stdin read the same lines (a BOM included)
    r = cli("query", out, "--from", leaked)
    assert r.returncode == 0, r.stdout
    assert b"\xef\xbb\xbf" not in r.stdout and r.stdout.count(b"yes") == len(KEYS)
    r = cli("query", out, "-", stdin=RAW)
    assert r.returncode == 0 and r.stdout.count(b"yes") == len(KEYS), r.stdout
    # add --from: hunter2 itself, not BOM+hunter2, is added
    f2 = tmp_path / "f2.bkf"
    bloomkit.BloomFilter(1000, 0.01).save(f2)
    assert cli("add", f2, "--from", leaked).returncode == 0
    assert "hunter2" in bloomkit.load(f2)


def test_lines_matches_the_cli_byte_for_byte(leaked: Path, tmp_path: Path) -> None:
    """The same filter from Python (bloomkit.lines) and from `bloomkit add`."""
    path = tmp_path / "f.bkf"
    bloomkit.BlockedBloomFilter(1000, 0.01, seed=7).save(path)
    assert cli("add", path, "--from", leaked).returncode == 0
    mine = bloomkit.BlockedBloomFilter(1000, 0.01, seed=7)
    mine.add_many(bloomkit.lines(leaked))
    assert bloomkit.load(path).to_bytes() == mine.to_bytes()
