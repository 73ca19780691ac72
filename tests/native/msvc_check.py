"""The C core's MSVC paths, checked without MSVC (docs/building.md, "Platforms").

There is no cl.exe on this machine (nor Wine): no Windows binary is built or
run here.  What can be checked is checked with clang's Windows target
(``--target=x86_64-pc-windows-msvc -fms-extensions -fms-compatibility``),
which defines ``_MSC_VER``, ``_WIN32``, ``_M_X64``, has 32-bit ``long``
(LLP64) and implements the MSVC intrinsics of ``<intrin.h>``.  Clang's own
headers provide ``<stddef.h>``, ``<stdint.h>``, ``<intrin.h>``,
``<immintrin.h>``; tests/native/msvc_shim/ declares the few UCRT functions
the core calls (see its README).  Every ``bk_*.c`` (the pure C core; the
``py_*.c`` glue needs a Windows ``pyconfig.h``) goes through three views:

1. **cl.exe view**, ``-fsyntax-only``: the GNU macros cl.exe does not
   define are removed (``-U__clang__ -U__SIZEOF_INT128__ -U__BYTE_ORDER__``
   ...), so every ``#if`` takes the branch cl.exe takes: the ``_MSC_VER``
   paths of bk_intrin.h and bk_simd.c are parsed and type-checked against
   the intrinsics' real declarations.  Twice: at cl.exe's default
   (x64 baseline) and as with ``/arch:AVX2`` (``__AVX__`` and ``__AVX2__``
   defined: the ``__popcnt64`` path).  bk_simd.c gets ``-mavx2`` in both:
   clang's headers in MSVC mode declare the AVX2 intrinsics only then,
   where cl.exe always declares them.  Warnings are errors, VLAs (which
   MSVC has never supported), implicit declarations and ``-Wconversion``
   (implicit narrowing: what cl.exe's /W4 reports as C4244/C4267)
   included.
2. **cl.exe view, preprocessed**: the probe below asserts the view selects
   the MSVC paths (BK_CC_MSVC, no __int128, the AVX2 dispatch on), and the
   code of our own files reaching the compiler holds no GNU-only token
   (``__builtin_``, ``__attribute__``, ``__int128``, ``__atomic_``,
   ``__sync_``) but the MSVC intrinsics of bk_intrin.h and the
   ``_Interlocked*`` atomics of bk_atomic.h, and bk_simd.c's holds the AVX2
   code and the CPUID check.
3. **clang-cl view**, ``-O2 -c`` to COFF objects (``__clang__`` kept: the
   GNU paths, as clang-cl compiles them): full code generation, so a
   target attribute an intrinsic needs (``_xgetbv`` wants ``xsave``) is
   checked; then every undefined symbol of the objects must be one of ours
   or of the C runtime (a ``__cpu_model`` from ``__builtin_cpu_supports``
   would not link against the MSVC runtime).

Also: every compiler macro an ``#if`` of the core tests must be one this
script knows how cl.exe treats (so a new GNU-only test cannot slip past
the cl.exe view).  Not checked: cl.exe's own diagnostics (its /W4
warnings differ from clang's), the ``py_*.c`` glue, linking, running.

Usage: python tests/native/msvc_check.py [--clang CLANG] [--out DIR]
Exit status 0 when every check passes; each step prints one line.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "src" / "bloomkit" / "_native"
SHIM = ROOT / "tests" / "native" / "msvc_shim"

TARGET = ["--target=x86_64-pc-windows-msvc", "-fms-extensions", "-fms-compatibility"]
# -Wconversion: the nearest clang analogue of cl.exe's /W4 C4244 and C4267
# (implicit narrowing, 64 -> 32 bits on LLP64); -Wvla: MSVC has no VLAs.
WARN = ["-std=c11", "-Wall", "-Wextra", "-Wconversion", "-Wvla", "-Werror",
        "-Werror=implicit-function-declaration"]
# Predefined by clang for this target but not by cl.exe.  __x86_64__ stays
# (clang's <immintrin.h> needs it); the core tests it only on GNU paths.
NOT_CL = ["__clang__", "__clang_major__", "__GNUC__", "__SIZEOF_INT128__", "__BYTE_ORDER__",
          "__ORDER_BIG_ENDIAN__", "__ORDER_LITTLE_ENDIAN__"]
# How cl.exe treats every compiler macro the core's #if lines may test.
CL_DEFINES = {"_MSC_VER", "_M_X64", "_M_ARM64", "_WIN32", "_WIN64"}
CL_WITH_ARCH = {"__AVX__", "__AVX2__"}          # /arch:AVX, /arch:AVX2
CL_NEVER = set(NOT_CL) | {"__cplusplus", "__x86_64__", "__i386__"}
# Which compiler it is gets asked in these files only; the rest of the core
# asks them (a test of __GNUC__ elsewhere once switched MSVC's atomic
# counting path off).
COMPILER_IDS = {"__GNUC__", "__clang__", "_MSC_VER"}
COMPILER_HOMES = {"bk_intrin.h", "bk_atomic.h", "bk_simd.c"}
# Symbols the objects may leave to the C runtime and the MSVC compiler
# support library (_fltused: floating point used; __chkstk: large frames).
CRT = {"_fltused", "__chkstk", "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen",
       "strcmp", "strncmp", "strchr", "malloc", "calloc", "realloc", "free", "getenv", "qsort",
       "abort", "abs", "llabs", "log", "log2", "log1p", "exp", "expm1", "pow", "sqrt", "ceil",
       "floor", "round", "fabs", "fmin", "fmax", "frexp", "ldexp", "lgamma"}
# What the cl.exe view must find in our code: bk_intrin.h's and bk_atomic.h's
# MSVC paths.
MSVC_PATHS = ("__umulh", "_BitScanForward64", "_BitScanReverse64", "_byteswap_uint64",
              "_mm_prefetch", "_InterlockedCompareExchange64", "_InterlockedOr64")
GNU_TOKENS = re.compile(r"__builtin_|__attribute__|__int128|__atomic_|__sync_")
PROBE = """\
#include "bk_intrin.h"
#if !BK_CC_MSVC || BK_CC_GNU
#error "the cl.exe view does not select the MSVC compiler paths"
#endif
#if BK_HAS_INT128 || BK_TARGET_ATTRIBUTES || !BK_X86_DISPATCH
#error "the cl.exe view: __int128 or target attributes on, or the AVX2 dispatch off"
#endif
int bk_msvc_probe(void);
int bk_msvc_probe(void) { return 0; }
"""


def _have_macros() -> list[str]:
    """-DBK_HAVE_<S>=1 for every py_<s>.c, as setup.py derives them."""
    return [f"-DBK_HAVE_{p.stem[3:].upper()}=1" for p in sorted(NATIVE.glob("py_*.c"))
            if "_" not in p.stem[3:] and p.stem != "py_common"]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


class Checker:
    def __init__(self, clang: str, out: Path) -> None:
        self.clang = clang
        self.out = out
        self.failures: list[str] = []
        self.sources = sorted(NATIVE.glob("bk_*.c"))
        self.base = [clang, *TARGET, "-ffreestanding", "-isystem", str(SHIM), *WARN,
                     f"-I{NATIVE}", *_have_macros()]
        self.cl = [*self.base, *(f"-U{m}" for m in NOT_CL)]

    def step(self, name: str, errors: list[str]) -> None:
        if errors:
            self.failures.append(name)
            print(f"FAIL {name}")
            for e in errors[:40]:
                print(f"    {e}")
        else:
            print(f"ok   {name}")

    def _compile(self, cmd: list[str], src: Path) -> list[str]:
        r = _run([*cmd, str(src)])
        return [] if r.returncode == 0 else [f"{src.name}: {ln}" for ln in
                                            (r.stdout + r.stderr).splitlines() if ln.strip()]

    def macros(self) -> None:
        known = CL_DEFINES | CL_WITH_ARCH | CL_NEVER
        errors = []
        for path in sorted(NATIVE.glob("bk_*.[ch]")):
            for no, line in enumerate(path.read_text().splitlines(), 1):
                if re.match(r"\s*#\s*(if|elif|ifdef|ifndef)\b", line):
                    for m in re.findall(r"\b(_[A-Z_]\w*)\b", line.split("/*")[0]):
                        if m in COMPILER_IDS and path.name not in COMPILER_HOMES:
                            errors.append(f"{path.name}:{no}: #if tests {m}: ask bk_intrin.h "
                                          "(BK_CC_*, BK_INTRIN_*) or bk_atomic.h "
                                          "(BK_HAS_ATOMICS) instead")
                        if m not in known:
                            errors.append(f"{path.name}:{no}: #if tests {m}: add it to "
                                          "msvc_check.py's NOT_CL (cl.exe lacks it) or "
                                          "CL_DEFINES")
        self.step(f"the core's #if lines test only compiler macros with a known cl.exe "
                  f"meaning ({len(known)} known), the compiler's identity only in "
                  f"{', '.join(sorted(COMPILER_HOMES))}", errors)

    def cl_view(self) -> None:
        for label, arch in (("x64 baseline", []), ("/arch:AVX2", ["-mavx2", "-mbmi2"])):
            errors: list[str] = []
            for src in self.sources:
                simd = ["-mavx2", "-mbmi2"] if src.name == "bk_simd.c" else []
                errors += self._compile([*self.cl, *arch, *simd, "-fsyntax-only"], src)
            self.step(f"cl.exe view ({label}): {len(self.sources)} bk_*.c parse and type-check "
                      "with -Werror", errors)

    def preprocessed(self) -> None:
        probe = self.out / "msvc_probe.c"
        probe.write_text(PROBE)
        self.step("cl.exe view selects the MSVC paths (BK_CC_MSVC, no __int128, AVX2 dispatch)",
                  self._compile([*self.cl, "-fsyntax-only"], probe))
        errors: list[str] = []
        simd_code = ""
        our_code = ""
        for src in self.sources:
            simd = ["-mavx2", "-mbmi2"] if src.name == "bk_simd.c" else []
            r = _run([*self.cl, *simd, "-E", str(src)])
            if r.returncode != 0:
                errors.append(f"{src.name}: preprocessing failed: {r.stderr.strip()[:300]}")
                continue
            ours = False
            for line in r.stdout.splitlines():
                marker = re.match(r'#\s*\d+\s+"([^"]+)"', line)
                if marker:
                    ours = Path(marker.group(1)).resolve().parent == NATIVE
                    continue
                if ours:
                    our_code += line + "\n"
                if ours and GNU_TOKENS.search(line):
                    errors.append(f"{src.name}: GNU-only code reaches cl.exe: {line.strip()[:120]}")
                if ours and src.name == "bk_simd.c":
                    simd_code += line + "\n"
        for needed in ("__cpuidex", "_xgetbv", "_mm256_permutevar8x32_epi32", "_mm256_sllv_epi32"):
            if needed not in simd_code:
                errors.append(f"bk_simd.c: {needed} missing: no AVX2 path for MSVC")
        for needed in MSVC_PATHS:
            if needed not in our_code:
                errors.append(f"{needed} missing from our code: an MSVC path is not taken")
        self.step("cl.exe view, preprocessed: no GNU-only token in our code, the MSVC "
                  "intrinsics and atomics in it; bk_simd.c has the CPUID check and the AVX2 code",
                  errors)

    def clang_cl(self) -> None:
        errors: list[str] = []
        objs = []
        for src in self.sources:
            obj = self.out / (src.stem + ".obj")
            errors += self._compile([*self.base, "-O2", "-c", "-o", str(obj)], src)
            objs.append(obj)
        self.step(f"clang-cl view: {len(self.sources)} bk_*.c compile to x86-64 COFF objects "
                  "(-O2, code generation)", errors)
        if errors:
            return
        nm = shutil.which("llvm-nm") or shutil.which("llvm-nm-14")
        if nm is None:
            self.step("clang-cl view: undefined symbols (llvm-nm not found)", ["no llvm-nm"])
            return
        defined, undefined = set(), set()
        for obj in objs:
            r = _run([nm, str(obj)])
            for line in r.stdout.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "U":
                    undefined.add(parts[1])
                elif len(parts) == 3:
                    defined.add(parts[2])
        missing = sorted(undefined - defined - CRT)
        self.step("clang-cl view: every undefined symbol is ours or the C runtime's "
                  f"({len(undefined - defined)} from the runtime)",
                  [f"unresolved against an MSVC runtime: {s}" for s in missing])

    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        print(f"msvc_check: {_run([self.clang, '--version']).stdout.splitlines()[0]}, "
              f"{' '.join(TARGET)}")
        self.macros()
        self.cl_view()
        self.preprocessed()
        self.clang_cl()
        print(f"msvc_check: {len(self.failures)} failed")
        return 1 if self.failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clang", default="clang")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "msvc")
    args = ap.parse_args(argv)
    if shutil.which(args.clang) is None:
        print(f"msvc_check: {args.clang} not found", file=sys.stderr)
        return 2
    return Checker(args.clang, args.out).run()


if __name__ == "__main__":
    sys.exit(main())
