"""Bounded memory for big files (issue #19): peak RSS of save, build, merge
and verify is at most the output structure plus 256 MiB, whatever the
input sizes.

Each operation runs in a fresh subprocess and its peak is the child's
high-water RSS (VmHWM: what ``ru_maxrss`` reports, but for the child's own
address space, see ``_REPORT``), less the peak of a child that only
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
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="peak RSS is read from /proc (Linux)")

SRC = str(Path(bloomkit.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=SRC)
MIB = 1 << 20
SLACK = 256 * MIB
CAPACITY = 200_000_000  # a 1% blocked filter of ~240 MB


# The child reports its own high-water mark (VmHWM, the peak RSS of its
# address space) at exit.  Not ru_maxrss from wait4: on Linux a child's
# ru_maxrss starts from the RSS of the process it was forked (or vforked)
# from, here pytest holding test data, so it measures the parent.
_REPORT = """
import atexit, os, sys
def _hwm(path=os.environ["BK_HWM_OUT"]):
    with open("/proc/self/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(str(kib * 1024))
atexit.register(_hwm)
"""


def _run_peak(code: str, tmp: Path) -> tuple[int, bytes]:
    report = tmp / "hwm.txt"
    r = subprocess.run([sys.executable, "-c", _REPORT + code],
                       env=dict(ENV, BK_HWM_OUT=str(report)), capture_output=True, timeout=900)
    assert r.returncode == 0, (code, r.stdout, r.stderr)
    return int(report.read_text()), r.stdout


def _cli_peak(tmp: Path, *args: str | Path) -> int:
    argv = ["bloomkit", *map(str, args)]
    return _run_peak(f"sys.argv = {argv!r}\nimport runpy\n"
                     "runpy.run_module('bloomkit', run_name='__main__')\n", tmp)[0]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak of a child that imports what the commands import."""
    return _run_peak("import bloomkit, bloomkit.cli, bloomkit.sources, numpy",
                     tmp_path_factory.mktemp("base"))[0]


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
    peak = _cli_peak(tmp_path, "merge", *paths, "-o", out, "-q")
    assert peak <= _bound(base, size), (peak / MIB, base / MIB, size / MIB)
    merged = bloomkit.open(out)
    try:
        for i in range(3):
            assert all(merged.contains_many(np.arange(i * 2_000_000, i * 2_000_000 + 1000,
                                                      dtype=np.int64) * 7919))
    finally:
        merged.close()
    assert bloomkit.verify(out)["kind_name"] == "BlockedBloomFilter"


def test_verify_streams_the_checksum(files: tuple[list[Path], int], base: int,
                                     tmp_path: Path) -> None:
    paths, size = files
    assert _cli_peak(tmp_path, "verify", paths[0], "-q") <= _bound(base, size)


def test_save_needs_no_second_copy(base: int, tmp_path: Path) -> None:
    out = tmp_path / "s.bkf"
    code = (
        "import bloomkit, numpy as np\n"
        f"f = bloomkit.BlockedBloomFilter({CAPACITY}, 0.01)\n"
        "f.add_many(np.arange(3_000_000, dtype=np.int64) * 7919)\n"
        "before = int(next(line.split()[1] for line in open('/proc/self/status')\n"
        "                  if line.startswith('VmHWM:')))\n"
        f"bloomkit.save(f, {str(out)!r})\n"
        "print(before * 1024)\n"
    )
    peak, printed = _run_peak(code, tmp_path)
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
    peak = _cli_peak(tmp_path, "build", keys, "-o", out, "-q")
    size = out.stat().st_size
    assert peak <= _bound(base, size), (peak / MIB, base / MIB, size / MIB)
    f = bloomkit.open(out)
    try:
        assert all(f.contains_many(np.arange(0, n, 997, dtype=np.int64) * 7919))
    finally:
        f.close()
