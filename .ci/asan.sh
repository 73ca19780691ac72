#!/usr/bin/env bash
# R25: build the extension with AddressSanitizer + UBSan (BLOOMKIT_SANITIZE=1)
# into build/asan/lib (package and .so; the in-place build is untouched) and
# run the format, persistence, locking and Arrow-batch tests against it.  libasan is preloaded
# because the Python binary itself is not instrumented; leak checking is
# off (CPython's interned objects and caches read as leaks at exit).
# Usage: .ci/asan.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${CC:-gcc}
rm -rf build/asan
BLOOMKIT_SANITIZE=1 CC="$cc" python setup.py -q \
    build_py --build-lib build/asan/lib \
    build_ext --build-lib build/asan/lib --build-temp build/asan/tmp >/dev/null
export LD_PRELOAD="$($cc -print-file-name=libasan.so)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PYTHONMALLOC=malloc          # let ASan see every allocation
export PYTHONPATH=build/asan/lib
python - <<'PY'
import bloomkit, sys
assert "build/asan/lib" in bloomkit.__file__, bloomkit.__file__
print("sanitized build:", bloomkit._core.__file__, file=sys.stderr)
PY
python -m pytest -q -p no:cacheprovider tests/format tests/test_persist.py tests/test_locking.py \
    tests/test_arrow_keys.py "$@"   # Arrow capsules: every buffer read bounds-checked (#33.4)
