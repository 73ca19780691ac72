"""The one convention for a C core's plain-C test (no Python).

``tests/native/test_bk_<core>.c`` tests ``src/bloomkit/_native/bk_<core>.c``
(and its parts ``bk_<core>_*.c``, as bk_sliding_blocked.c).
It is built from that core plus the base every core may lean on -- the
format layer (bk_format.c, the kind table bk_kinds.c), the hash module and
the Bloom core the table always holds with its SIMD kernels (bk_bloom.c,
bk_simd.c) -- with
``-DBK_HAVE_<CORE>=1`` when the core defines a kind descriptor, so the kind
table lists it and no other; it must print ``test_bk_<core>: ok`` (or ``all passed``) and exit 0.
.ci/run builds every tests/native/test_bk_*.c by the same rule (gcc -Werror).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "src" / "bloomkit" / "_native"
BASE = ("bk_format.c", "bk_kinds.c", "bk_hash.c", "bk_bloom.c", "bk_simd.c")


def sources(core: str) -> list[Path]:
    """bk_<core>.c, its parts bk_<core>_*.c, and the base, each once."""
    parts = sorted(p.name for p in NATIVE.glob(f"bk_{core}_*.c"))
    names = [f"bk_{core}.c", *parts, *BASE]
    return [NATIVE / n for n in dict.fromkeys(names)]


def build_and_run(core: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Compile tests/native/test_bk_<core>.c by the convention (cc -Werror), run it."""
    exe = tmp_path / f"test_bk_{core}"
    is_kind = "const bk_kind_desc" in (NATIVE / f"bk_{core}.c").read_text()
    have = [f"-DBK_HAVE_{core.upper()}=1"] if is_kind else []
    subprocess.run(
        ["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
         *have, f"-I{NATIVE}", *map(str, sources(core)),
         str(ROOT / "tests" / "native" / f"test_bk_{core}.c"), "-lm", "-o", str(exe)],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, env=dict(os.environ))
    print(out.stdout, out.stderr)
    return out
