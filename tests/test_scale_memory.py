"""Bounded memory for big files (issue #19): peak RSS of save, build, merge
and verify is at most the output structure plus 256 MiB, whatever the
input sizes.

Each operation runs in a fresh subprocess and its peak is the child's
``ru_maxrss`` (from ``os.wait4``), less the peak of a child that only
imports the same modules (the interpreter, numpy).  The structures are
~250 MB, large enough that holding a second copy, or the pages of a read
input, breaks the bound, small enough for CI (about 1 GB of disk in
tmp_path).  No timing is asserted.  The 10^9-key figures are in
docs/scale.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bloomkit

np = pytest.importorskip("numpy")

SRC = str(Path(bloomkit.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=SRC)
MIB = 1 << 20
SLACK = 256 * MIB
CAPACITY = 200_000_000  # a 1% blocked filter of ~240 MB


def _run_peak(argv: list[str]) -> tuple[int, bytes]:
    p = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    # the outputs are small: read them, then reap with wait4 for the usage
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, (argv, out, err)
    return int(usage.ru_maxrss) * 1024, out


def _cli_peak(*args: str | Path) -> int:
    return _run_peak([sys.executable, "-m", "bloomkit", *map(str, args)])[0]


def _py_peak(code: str) -> tuple[int, bytes]:
    return _run_peak([sys.executable, "-c", code])


@pytest.fixture(scope="module")
def base() -> int:
    """The peak of a child that imports what the commands import."""
    return _py_peak("import bloomkit, bloomkit.cli, bloomkit.sources, numpy")[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], int]:
    """Three compatible ~240 MB blocked filters with different keys (every
    page written), and their size."""
    d = tmp_path_factory.mktemp("bigfilters")
    f = bloomkit.BlockedBloomFilter(CAPACITY, 0.01)
    paths = []
    for i in range(3):
        keys = np.arange(i * 2_000_000, (i + 1) * 2_000_000, dtype=np.int64) * 7919
        f.add_many(keys)
        paths.append(d / f"f{i}.bkf")
        bloomkit.save(f, paths[-1])
    return paths, paths[0].stat().st_size


def _bound(base: int, size: int) -> int:
    return base + size + SLACK


def test_merge_of_three_files_holds_one_output(files: tuple[list[Path], int], base: int,
                                                tmp_path: Path) -> None:
    """Before: the three inputs were loaded and a union copied (4 x 240 MB)."""
    paths, size = files
    out = tmp_path / "m.bkf"
    peak = _cli_peak("merge", *paths, "-o", out, "-q")
    assert peak <= _bound(base, size), (peak / MIB, base / MIB, size / MIB)
    merged = bloomkit.open(out)
    try:
        for i in range(3):
            assert all(merged.contains_many(np.arange(i * 2_000_000, i * 2_000_000 + 1000,
                                                      dtype=np.int64) * 7919))
    finally:
        merged.close()
    assert bloomkit.verify(out)["kind_name"] == "BlockedBloomFilter"


def test_verify_streams_the_checksum(files: tuple[list[Path], int], base: int) -> None:
    paths, size = files
    assert _cli_peak("verify", paths[0], "-q") <= _bound(base, size)


def test_save_needs_no_second_copy(base: int, tmp_path: Path) -> None:
    out = tmp_path / "s.bkf"
    code = (
        "import bloomkit, numpy as np, resource\n"
        f"f = bloomkit.BlockedBloomFilter({CAPACITY}, 0.01)\n"
        "f.add_many(np.arange(3_000_000, dtype=np.int64) * 7919)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"bloomkit.save(f, {str(out)!r})\n"
        "print(before * 1024)\n"
    )
    peak, printed = _py_peak(code)
    before = int(printed.split()[0])
    size = out.stat().st_size
    assert peak <= _bound(base, size)
    assert peak - before <= 64 * MIB, ((peak - before) / MIB)  # a 1 MiB buffer, no copy


def test_build_from_a_large_npy_drops_its_pages(base: int, tmp_path: Path) -> None:
    """A mapped .npy file's pages count in RSS while mapped: before the
    drop-behind, a 480 MB key file added 480 MB to the build's peak."""
    n = 60_000_000
    keys = tmp_path / "k.npy"
    arr = np.lib.format.open_memmap(keys, mode="w+", dtype=np.int64, shape=(n,))
    for i in range(0, n, 10_000_000):
        arr[i:i + 10_000_000] = np.arange(i, i + 10_000_000, dtype=np.int64) * 7919
    arr.flush()
    del arr
    out = tmp_path / "k.bkf"
    peak = _cli_peak("build", keys, "-o", out, "-q")
    size = out.stat().st_size
    assert peak <= _bound(base, size), (peak / MIB, base / MIB, size / MIB)
    f = bloomkit.open(out)
    try:
        assert all(f.contains_many(np.arange(0, n, 997, dtype=np.int64) * 7919))
    finally:
        f.close()
