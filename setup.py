"""Build of the C extension bloomkit._core.

Environment switches (see docs/building.md):
  BLOOMKIT_DEBUG=1     -O0 -g, asserts on
  BLOOMKIT_SANITIZE=1  AddressSanitizer + UBSan (run with LD_PRELOAD of libasan, see .ci/run)
  BLOOMKIT_WERROR=1    warnings are errors (CI)
  BLOOMKIT_NATIVE=1    -march=native (local benchmarking only; never for wheels)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

NATIVE = Path("src/bloomkit/_native")


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _extension() -> Extension:
    sources = sorted(str(p) for p in NATIVE.glob("*.c"))
    # Every py_<structure>.c present registers its type (see module.c).
    macros = [
        (f"BK_HAVE_{p.stem[3:].upper()}", "1")
        for p in sorted(NATIVE.glob("py_*.c"))
        if not p.stem.startswith("py_common")  # shared glue (py_common*.c), not a structure
    ]
    compile_args: list[str] = []
    link_args: list[str] = []
    if sys.platform != "win32":
        compile_args += ["-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wno-unused-parameter",
                         "-Wno-missing-field-initializers", "-Wno-cast-function-type",
                         # Only PyInit__core (PyMODINIT_FUNC marks it default) leaves the
                         # shared object; every other symbol stays internal
                         # (tests/test_source_lint.py checks nm -D).
                         "-fvisibility=hidden"]
        if _flag("BLOOMKIT_DEBUG"):
            compile_args += ["-O0", "-g3", "-UNDEBUG"]
        else:
            compile_args += ["-O3"]
        if _flag("BLOOMKIT_SANITIZE"):
            san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                   "-fno-sanitize-recover=undefined"]
            compile_args += san + ["-O1", "-g"]
            link_args += san
        if _flag("BLOOMKIT_WERROR"):
            compile_args += ["-Werror"]
        if _flag("BLOOMKIT_NATIVE"):
            compile_args += ["-march=native"]
    return Extension(
        "bloomkit._core",
        sources=sources,
        include_dirs=[str(NATIVE)],
        define_macros=macros,
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        depends=sorted(str(p) for p in NATIVE.glob("*.h")),
    )


setup(ext_modules=[_extension()])
