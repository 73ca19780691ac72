#!/usr/bin/env bash
# What can be built here of the release artefacts is built and tested here:
#   1. `pip wheel .`: the Linux x86_64 wheel, which `auditwheel show` must
#      find consistent with a manylinux tag;
#   2. `python -m build --sdist`, then the sdist built into a wheel in a
#      clean virtual environment;
#   3. that wheel installed in another fresh virtual environment and tested
#      with the same fast subset cibuildwheel runs on every platform
#      ([tool.cibuildwheel] test-command in pyproject.toml), from a folder
#      outside the source tree, so the installed package is what is tested.
# The other platforms' wheels are configured only (docs/building.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/build/wheel
rm -rf "$out"
mkdir -p "$out"

echo "== pip wheel ."
pip wheel --no-deps -q -w "$out/wheel" .
pip install -q auditwheel
whl=$(ls "$out"/wheel/bloomkit-*.whl)
auditwheel show "$whl" | tee "$out/auditwheel.txt"
grep -q 'consistent with the' "$out/auditwheel.txt" && grep -q 'manylinux' "$out/auditwheel.txt"

echo "== sdist, built into a wheel in a clean virtual environment"
python -m venv "$out/venv-build"
"$out/venv-build/bin/pip" install -q build
"$out/venv-build/bin/python" -m build --sdist -o "$out/sdist" . >/dev/null
sdist=$(ls "$out"/sdist/bloomkit-*.tar.gz)
tar -tzf "$sdist" > "$out/sdist-files.txt"
grep -q "_native/bk_bloom.h" "$out/sdist-files.txt"   # the C headers ship
"$out/venv-build/bin/pip" wheel --no-deps -q -w "$out/from-sdist" "$sdist"

echo "== the wheel from the sdist in a fresh virtual environment, fast subset"
python -m venv "$out/venv-test"
"$out/venv-test/bin/pip" install -q "$out"/from-sdist/bloomkit-*.whl \
    pytest 'hypothesis>=6.80' 'numpy>=1.22' 'xxhash>=3.0'
cd "$out"
"$out/venv-test/bin/python" -c "import bloomkit, sys; assert '$out' in bloomkit.__file__, bloomkit.__file__"
"$out/venv-test/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$out" \
    "$root"/tests/test_bloom.py "$root"/tests/test_keys.py "$root"/tests/test_hash.py \
    "$root"/tests/format
