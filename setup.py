"""Build of the C extension bloomkit._core.

Environment switches (see docs/building.md):
  BLOOMKIT_DEBUG=1     -O0 -g, asserts on
  BLOOMKIT_SANITIZE=1  AddressSanitizer + UBSan (run with LD_PRELOAD of libasan, see .ci/run)
  BLOOMKIT_WERROR=1    warnings are errors (CI)
  BLOOMKIT_NATIVE=1    -march=native (local benchmarking only; never for wheels)

The flags follow the compiler setuptools picked, not the platform: GCC and
clang ("unix", also MinGW) get the -std=c11 -W... set; MSVC (cl.exe, the
compiler of CPython's Windows builds) gets /std:c11, /O2 (/Od /Zi for
BLOOMKIT_DEBUG) and /W4 /WX for BLOOMKIT_WERROR, and never an /arch: the
AVX2 code is chosen per function at run time (bk_simd.c), so a global
/arch:AVX2 would only make the module crash on CPUs without AVX2.
BLOOMKIT_NATIVE and BLOOMKIT_SANITIZE are GCC/clang switches: an MSVC build
refuses them rather than ignoring them.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = Path("src/bloomkit/_native")


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _gnu_args(compiler_type: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wno-unused-parameter",
                    "-Wno-missing-field-initializers", "-Wno-cast-function-type"]
    if compiler_type != "mingw32":
        # Only PyInit__core (PyMODINIT_FUNC marks it default) leaves the
        # shared object; every other symbol stays internal
        # (tests/test_source_lint.py checks nm -D).  A Windows DLL exports
        # only what is marked anyway, and MinGW's GCC warns on the flag.
        compile_args.append("-fvisibility=hidden")
    link_args: list[str] = []
    if _flag("BLOOMKIT_DEBUG"):
        compile_args += ["-O0", "-g3", "-UNDEBUG"]
    else:
        compile_args += ["-O3"]
    if _flag("BLOOMKIT_SANITIZE"):
        san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
               "-fno-sanitize-recover=undefined"]
        compile_args += [*san, "-O1", "-g"]
        link_args += san
    if _flag("BLOOMKIT_WERROR"):
        compile_args += ["-Werror"]
    if _flag("BLOOMKIT_NATIVE"):
        compile_args += ["-march=native"]
    return compile_args, link_args, []


def _msvc_args() -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """cl.exe flags; setuptools already passes /nologo /O2 /W3 /MD /DNDEBUG."""
    for name in ("BLOOMKIT_NATIVE", "BLOOMKIT_SANITIZE"):
        if _flag(name):
            raise SystemExit(f"{name} is a GCC/clang switch; MSVC builds do not support it "
                             "(docs/building.md, Platforms)")
    # C11 as -std=c11 elsewhere (MSVC 2019 16.8+ and Windows SDK 10.0.20348+)
    args = ["/std:c11"]
    # /Od inlines nothing, so every BK_INLINE (__forceinline, bk_intrin.h)
    # would warn C4714 "not inlined": expected there, silenced there only.
    args += ["/Od", "/Zi", "/UNDEBUG", "/wd4714"] if _flag("BLOOMKIT_DEBUG") else ["/O2"]
    if _flag("BLOOMKIT_WERROR"):
        args += ["/W4", "/WX"]
    # getenv is "unsafe" to the UCRT headers (C4996)
    return args, [], [("_CRT_SECURE_NO_WARNINGS", "1")]


def compiler_args(compiler_type: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(compile args, link args, macros) for a setuptools compiler_type."""
    return _msvc_args() if compiler_type == "msvc" else _gnu_args(compiler_type)


class _BuildExt(build_ext):
    def build_extensions(self) -> None:
        cargs, largs, macros = compiler_args(self.compiler.compiler_type)
        for ext in self.extensions:
            ext.extra_compile_args = cargs + list(ext.extra_compile_args or [])
            ext.extra_link_args = largs + list(ext.extra_link_args or [])
            ext.define_macros = list(ext.define_macros or []) + macros
        super().build_extensions()


def _extension() -> Extension:
    sources = sorted(str(p) for p in NATIVE.glob("*.c"))
    # Every py_<structure>.c present registers its type (see module.c).  A name
    # with a second underscore, py_<name>_<part>.c, is one part of py_<name>.c's
    # glue split by concern (py_arrow_hash.c, py_topk_update.c), and py_common.c
    # is shared glue: neither is a structure.
    macros = [
        (f"BK_HAVE_{p.stem[3:].upper()}", "1")
        for p in sorted(NATIVE.glob("py_*.c"))
        if "_" not in p.stem[3:] and p.stem != "py_common"
    ]
    return Extension(
        "bloomkit._core",
        sources=sources,
        include_dirs=[str(NATIVE)],
        define_macros=macros,
        depends=sorted(str(p) for p in [*NATIVE.glob("*.h"), *NATIVE.glob("*.def")]),
    )


setup(ext_modules=[_extension()], cmdclass={"build_ext": _BuildExt})
