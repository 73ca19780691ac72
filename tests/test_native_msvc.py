"""The MSVC side of the build (issue #22), checked on Linux: the compiler
flags setup.py picks for cl.exe, the C core's _MSC_VER paths through clang's
Windows target (tests/native/msvc_check.py), and the portable C paths of
bk_intrin.h against bit-by-bit references (tests/native/test_portable.c
built with -DBK_NO_INTRINSICS).  No MSVC binary is built or run here:
docs/building.md, "Platforms"."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import setuptools

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "src" / "bloomkit" / "_native"


@pytest.fixture
def setup_py(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """setup.py's namespace, its setup() call replaced by a recorder."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(setuptools, "setup", lambda **kw: calls.append(kw))
    monkeypatch.chdir(ROOT)
    for name in ("BLOOMKIT_DEBUG", "BLOOMKIT_SANITIZE", "BLOOMKIT_WERROR", "BLOOMKIT_NATIVE"):
        monkeypatch.delenv(name, raising=False)
    ns = runpy.run_path(str(ROOT / "setup.py"), run_name="bloomkit_setup_under_test")
    assert len(calls) == 1 and "build_ext" in calls[0]["cmdclass"]
    return ns


def test_msvc_flags_release(setup_py: dict[str, Any]) -> None:
    cargs, largs, macros = setup_py["compiler_args"]("msvc")
    assert cargs == ["/std:c11", "/O2"]
    assert largs == []
    assert ("_CRT_SECURE_NO_WARNINGS", "1") in macros
    # per-function dispatch only: never a global /arch or a GNU flag
    assert not any(a.startswith(("/arch", "-")) for a in cargs)


def test_msvc_flags_werror_and_debug(setup_py: dict[str, Any],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLOOMKIT_WERROR", "1")
    monkeypatch.setenv("BLOOMKIT_DEBUG", "1")
    cargs, _, _ = setup_py["compiler_args"]("msvc")
    assert cargs == ["/std:c11", "/Od", "/Zi", "/UNDEBUG", "/wd4714", "/W4", "/WX"]


@pytest.mark.parametrize("switch", ["BLOOMKIT_NATIVE", "BLOOMKIT_SANITIZE"])
def test_msvc_refuses_gnu_only_switches(setup_py: dict[str, Any],
                                        monkeypatch: pytest.MonkeyPatch, switch: str) -> None:
    monkeypatch.setenv(switch, "1")
    with pytest.raises(SystemExit, match=f"{switch} is a GCC/clang switch"):
        setup_py["compiler_args"]("msvc")


def test_gnu_flags_follow_the_compiler_not_the_platform(setup_py: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """MinGW on Windows is a GCC: compiler_type, not sys.platform, decides."""
    monkeypatch.setenv("BLOOMKIT_WERROR", "1")
    for ctype in ("unix", "mingw32"):
        cargs, _, macros = setup_py["compiler_args"](ctype)
        assert cargs[0] == "-std=c11" and "-O3" in cargs and cargs[-1] == "-Werror"
        assert not any(a.startswith("/") for a in cargs) and macros == []


@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang (Windows target)")
def test_core_compiles_in_msvc_mode(tmp_path: Path) -> None:
    """Every bk_*.c through clang's Windows target: the cl.exe view (syntax and
    types of the _MSC_VER paths, at x64 baseline and /arch:AVX2), the MSVC
    paths selected with no GNU-only token left, and the clang-cl view to
    COFF objects whose every undefined symbol is ours or the C runtime's.
    Before the MSVC path: bk_simd.c had no AVX2 code for cl.exe, and under
    clang-cl it did not compile (its AVX2 intrinsics undeclared) or, with
    -mavx2, needed __cpu_model, which an MSVC link lacks."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests/native/msvc_check.py"), "--out", str(tmp_path)],
        capture_output=True, text=True, check=False)
    print(out.stdout, out.stderr)
    assert out.returncode == 0, out.stdout[-3000:]
    assert out.stdout.count("\nok   ") == 7 and "msvc_check: 0 failed" in out.stdout


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("intrinsics", ["builtins", "portable"])
def test_intrinsic_wrappers_match_bit_by_bit_references(tmp_path: Path, intrinsics: str) -> None:
    """test_portable.c's first section: the 11 wrappers of bk_intrin.h against
    references written one bit at a time, with the compiler's builtins and
    with -DBK_NO_INTRINSICS (the portable C an unknown compiler gets; MSVC's
    popcount without /arch:AVX is this SWAR path).  The golden files are
    then checked by the same binary: the fallbacks give the same bytes."""
    cases = tmp_path / "cases.txt"
    subprocess.run([sys.executable, str(ROOT / "tests/native/make_portable_vectors.py"),
                    str(cases)], check=True, capture_output=True)
    have = [f"-DBK_HAVE_{p.stem[3:].upper()}=1" for p in sorted(NATIVE.glob("py_*.c"))
            if "_" not in p.stem[3:] and p.stem != "py_common"]  # as setup.py derives them
    flags = ["-DBK_NO_INTRINSICS"] if intrinsics == "portable" else []
    exe = tmp_path / "tp"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                    *flags, *have, f"-I{NATIVE}", *map(str, sorted(NATIVE.glob("bk_*.c"))),
                    str(ROOT / "tests/native/test_portable.c"), "-lm", "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe), str(cases), str(ROOT / "tests/format/golden")],
                         capture_output=True, text=True, check=False)
    print(out.stdout[-2000:], out.stderr)
    label = "portable C paths" if intrinsics == "portable" else "GCC/clang builtins"
    assert f"intrinsics ({label}): 11 of 11 wrappers agree" in out.stdout
    assert out.returncode == 0 and " 0 failed" in out.stdout
