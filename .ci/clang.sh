#!/usr/bin/env bash
# The extension built with clang and -Werror (BLOOMKIT_WERROR=1) into
# build/clang/lib (the in-place and installed builds are untouched), and
# the whole test suite run against it.
# Usage: .ci/clang.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/clang
BLOOMKIT_WERROR=1 CC=clang python setup.py -q \
    build_py --build-lib build/clang/lib \
    build_ext --build-lib build/clang/lib --build-temp build/clang/tmp >/dev/null
export PYTHONPATH=build/clang/lib
python - <<'PY'
import sys
import bloomkit
assert "build/clang/lib" in bloomkit.__file__, bloomkit.__file__
print("clang build:", bloomkit._core.__file__, file=sys.stderr)
PY
python -m pytest -q -p no:cacheprovider "$@"
