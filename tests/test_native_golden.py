"""Every core that defines a kind, alone, in plain C (no Python), on its golden files.

tests/native_c.py's ``golden_alone`` builds tests/native/test_portable.c
with one core and the base only (-DBK_HAVE_<CORE>, the kind table lists
that core's kinds and the always-built Bloom ones) and runs it with
``--held-only``.  So each core compiles without the others, and its golden
states are validated (checksum, deep), answered (members, estimates, the
exact false-positive counts) and rebuilt from an emptied copy, byte for
byte, through its descriptor's operations (bk_kind.h, bk_kind_ops): the
plain-C test a new kind gets from its golden files and descriptor, with no
file of its own.  .ci/portable.sh runs the same program with every core on
foreign CPUs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import native_c
from bloomkit import _core

CORES = native_c.kind_cores()


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("portable") / "cases.txt"
    script = native_c.ROOT / "tests" / "native" / "make_portable_vectors.py"
    subprocess.run([sys.executable, str(script), str(out)], check=True)
    return out


def test_every_kind_has_its_core() -> None:
    """The cores found by their descriptors (in bk_<core>.c or one of its
    parts, as TinyLFU's in bk_sketch_tlfu.c) hold every kind _core.KINDS lists."""
    defined = set()
    for core in CORES:
        for path in [native_c.NATIVE / f"bk_{core}.c", *native_c.NATIVE.glob(f"bk_{core}_*.c")]:
            defined |= set(re.findall(r"const bk_kind_desc (bk_\w+_kind)\s*=", path.read_text()))
    table = (native_c.NATIVE / "bk_kinds.def").read_text()
    listed = set(re.findall(r"^BK_DESC\(\w+, (bk_\w+_kind)\)", table, re.M))
    assert listed == defined
    assert len(listed) == len(_core.KINDS)


@pytest.mark.parametrize("core", CORES)
def test_the_core_alone_answers_and_rebuilds_its_golden_files(
    core: str, cases: Path, tmp_path: Path
) -> None:
    out = native_c.golden_alone(core, tmp_path, cases)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    summary = re.search(r"(\d+) passed, (\d+) failed", out.stdout)
    assert summary is not None and summary.group(2) == "0"
    ran = re.search(r"^(\d+) cases \((\d+) rebuilt", out.stdout, re.M)
    assert ran is not None and int(ran.group(1)) > 0
