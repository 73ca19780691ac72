"""The one convention for a C core's plain-C test (no Python).

``tests/native/test_bk_<core>.c`` tests ``src/bloomkit/_native/bk_<core>.c``
(and its parts ``bk_<core>_*.c``, as bk_sliding_blocked.c).
It is built from that core plus the base every core may lean on -- the
format layer (bk_format.c, the kind table bk_kinds.c), the hash module
(bk_hash.c and its part bk_hash_murmur3.c) and
the Bloom core the table always holds with its SIMD kernels (bk_bloom.c,
bk_simd.c) -- with
``-DBK_HAVE_<CORE>=1`` when the core defines a kind descriptor, so the kind
table lists it and no other; it must print ``test_bk_<core>: ok`` (or ``all passed``) and exit 0.
.ci/run builds every tests/native/test_bk_*.c by the same rule (gcc -Werror).

Every core that defines a kind gets a plain-C test with no file of its own:
``golden_alone`` builds tests/native/test_portable.c by the same rule (that
core, its parts and the base, ``-DBK_HAVE_<CORE>=1``) and runs it on the
golden files with ``--held-only``: the core's golden cases are validated,
answered and rebuilt byte for byte through its descriptor's operations
(bk_kind.h), and the kinds of other cores are skipped.
tests/test_native_golden.py runs it for every such core.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "src" / "bloomkit" / "_native"
BASE = ("bk_format.c", "bk_kinds.c", "bk_hash.c", "bk_bloom.c", "bk_simd.c")


def _parts(name: str) -> list[str]:
    """bk_<name>.c's parts bk_<name>_*.c (bk_sliding_blocked.c, bk_hash_murmur3.c)."""
    return sorted(p.name for p in NATIVE.glob(f"{name.removesuffix('.c')}_*.c"))


def sources(core: str) -> list[Path]:
    """bk_<core>.c, its parts bk_<core>_*.c, and the base with its parts, each once."""
    base = [n for b in BASE for n in (b, *_parts(b))]
    names = [f"bk_{core}.c", *_parts(f"bk_{core}.c"), *base]
    return [NATIVE / n for n in dict.fromkeys(names)]


def kind_cores() -> list[str]:
    """The cores that define a kind descriptor (bk_<core>.c, not its parts)."""
    return sorted(
        p.stem[3:] for p in NATIVE.glob("bk_*.c")
        if "_" not in p.stem[3:] and "const bk_kind_desc" in p.read_text()
    )


def _build(core: str, test: Path, exe: Path, opt: str = "-O2") -> None:
    is_kind = "const bk_kind_desc" in (NATIVE / f"bk_{core}.c").read_text()
    have = [f"-DBK_HAVE_{core.upper()}=1"] if is_kind else []
    subprocess.run(
        ["cc", "-std=c11", opt, "-Wall", "-Wextra", "-Werror",
         *have, f"-I{NATIVE}", *map(str, sources(core)), str(test), "-lm", "-o", str(exe)],
        check=True,
    )


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
    print(out.stdout, out.stderr)
    return out


def build_and_run(core: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Compile tests/native/test_bk_<core>.c by the convention (cc -Werror), run it."""
    exe = tmp_path / f"test_bk_{core}"
    _build(core, ROOT / "tests" / "native" / f"test_bk_{core}.c", exe)
    return _run([str(exe)])


def golden_alone(core: str, tmp_path: Path, cases: Path) -> subprocess.CompletedProcess[str]:
    """Compile test_portable.c with bk_<core>.c and the base alone, and run it
    on the golden files (``cases``: make_portable_vectors.py's output),
    skipping the kinds of other cores."""
    exe = tmp_path / f"test_portable_{core}"
    _build(core, ROOT / "tests" / "native" / "test_portable.c", exe, opt="-O1")
    return _run([str(exe), str(cases), str(ROOT / "tests" / "format" / "golden"), "--held-only"])
