"""Source lint of the C extension (src/bloomkit/_native): the layering rules that
the compiler does not check, kept by the suite (issue #24).

- the core (bk_*.c, bk_*.h) never includes Python.h, directly or through the glue
  header, so it builds and is tested as plain C (tests/native);
- the compiler's atomic primitives (__atomic_*, _Interlocked*) are named only in
  bk_atomic.h, which holds the GCC/clang, MSVC and plain paths together;
- every function a C file defines carries that file's one prefix;
- the built extension exports one dynamic symbol, PyInit__core
  (-fvisibility=hidden in setup.py);
- ``BK_HAVE_<X>`` has one meaning, "structure X is compiled in" (setup.py
  defines it for every py_<x>.c; py_<x>_<part>.c is one part of py_<x>.c's
  glue, split by concern, with py_<x>.c's prefix and no macro); a platform
  capability is ``BK_HAS_<X>`` (BK_HAS_ATOMICS, BK_HAS_INT128), issue #30.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import bloomkit._core

NATIVE = Path(__file__).resolve().parent.parent / "src" / "bloomkit" / "_native"
SOURCES = sorted(NATIVE.glob("*.[ch]"))

# A function definition at file scope: a line that starts with a type (no
# indentation), names the function and opens its parameter list; the body's
# brace is on a later line (STYLE.md), so a prototype ends in ';' instead.
_DEFINITION = re.compile(
    r"^(?:static\s+|inline\s+|BK_INLINE\s+|BK_AVX2(?:_BMI2)?\s+|__attribute__\(\((?:[^()]|\([^()]*\))*\)\)\s*"
    r"|PyMODINIT_FUNC\s*)*"
    r"(?:const\s+)?[A-Za-z_][A-Za-z0-9_]*(?:\s+|\s*\*+\s*)"
    r"\**([A-Za-z_][A-Za-z0-9_]*)\s*\(",
)

# ... or, after a line of attributes and type, the name alone at column 0
_NAME_ALONE = re.compile(r"^([a-z_][a-z0-9_]*)\(")  # lower case: not a macro
_NOT_NAMES = {"__attribute__", "if", "for", "while", "switch", "return", "sizeof"}


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)


def _defined_functions(path: Path) -> list[str]:
    lines = _strip_comments(path.read_text()).splitlines()
    names = []
    for i, line in enumerate(lines):
        m = _DEFINITION.match(line) or _NAME_ALONE.match(line)
        if not m or line.rstrip().endswith(";") or m.group(1) in _NOT_NAMES:
            continue
        # the definition's body follows: '{' on this line or after the
        # (possibly wrapped) parameter list, before any ';'
        rest = "\n".join(lines[i : i + 12])
        brace, semi = rest.find("{"), rest.find(";")
        if brace != -1 and (semi == -1 or brace < semi):
            names.append(m.group(1))
    return names


def _prefix(path: Path) -> str:
    """The one prefix of a file: bk_<stem>_ for the core, bk<stem>_ for the
    glue of a structure (bk<name>_ for each part py_<name>_<part>.c of it),
    bkpy_ for the shared glue, bkmod_ for module.c."""
    stem = path.stem
    if stem.startswith("bk_"):
        return stem + "_"
    if stem.startswith("py_common"):
        return "bkpy_"
    if stem.startswith("py_"):
        return "bk" + stem[3:].split("_")[0] + "_"
    if stem == "module":
        return "bkmod_"
    raise AssertionError(f"{path.name}: no prefix rule for this file")


def test_core_never_includes_python() -> None:
    offenders = []
    for path in SOURCES:
        if not path.name.startswith("bk_"):
            continue
        for line in path.read_text().splitlines():
            if re.match(r"\s*#\s*include\s*[<\"](Python\.h|py_[a-z_]*\.h)[>\"]", line):
                offenders.append(f"{path.name}: {line.strip()}")
    assert offenders == []


def test_atomics_only_in_the_atomics_header() -> None:
    offenders = []
    for path in SOURCES:
        if path.name == "bk_atomic.h":
            continue
        for n, line in enumerate(_strip_comments(path.read_text()).splitlines(), 1):
            if re.search(r"\b(__atomic_[a-z_]+|__sync_[a-z_]+|_Interlocked[A-Za-z0-9]*)\b", line):
                offenders.append(f"{path.name}:{n}: {line.strip()}")
    assert offenders == []


def test_one_prefix_per_c_file() -> None:
    offenders = []
    for path in SOURCES:
        if path.suffix != ".c":
            continue
        prefix = _prefix(path)
        for name in _defined_functions(path):
            if name == "PyInit__core" and path.name == "module.c":
                continue
            if not name.startswith(prefix):
                offenders.append(f"{path.name}: {name} (prefix {prefix})")
    assert offenders == []


def test_bk_have_names_a_compiled_structure() -> None:
    structures = {p.stem[3:].upper() for p in NATIVE.glob("py_*.c") if "_" not in p.stem[3:]}
    offenders = []
    for path in SOURCES:
        for n, line in enumerate(_strip_comments(path.read_text()).splitlines(), 1):
            for name in re.findall(r"\bBK_HAVE_([A-Z0-9_]+)", line):
                if name not in structures:
                    offenders.append(f"{path.name}:{n}: BK_HAVE_{name} (no py_{name.lower()}.c)")
    assert offenders == []
    assert {"SLIDING", "FUSE"} <= structures  # the walk found the glue files


def test_glue_parts_have_their_file() -> None:
    # py_<name>_<part>.c takes py_<name>.c's prefix and no BK_HAVE_ (setup.py):
    # without a py_<name>.c it would be a structure nothing registers
    names = {p.stem[3:] for p in NATIVE.glob("py_*.c")}
    orphans = sorted(f"py_{n}.c" for n in names if "_" in n and n.split("_")[0] not in names)
    assert orphans == []
    assert {"arrow_hash", "topk_update", "common_batch"} <= names  # the walk found the parts


def test_the_lint_sees_definitions() -> None:
    # guard against a parser that silently finds nothing
    assert len(_defined_functions(NATIVE / "bk_bloom.c")) >= 10
    assert "PyInit__core" in _defined_functions(NATIVE / "module.c")


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) is not installed")
def test_extension_exports_only_its_init() -> None:
    so = bloomkit._core.__file__
    assert so is not None
    out = subprocess.run(
        ["nm", "-D", "--defined-only", so], capture_output=True, text=True, check=True
    ).stdout
    symbols = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert symbols == ["PyInit__core"]
