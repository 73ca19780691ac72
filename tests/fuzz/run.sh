#!/usr/bin/env bash
# R17: run both fuzz targets briefly (FUZZ_SECONDS each, default 30), seeded
# with the golden files (tests/format/golden: every kind has some).  The
# libFuzzer target needs clang; the atheris target needs `pip install
# atheris` (the `fuzz` extra).  With
# BLOOMKIT_FUZZ_ASAN=1 the atheris target runs on the ASan + UBSan build
# that .ci/asan.sh leaves in build/asan/lib.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-30}
work=build/fuzz
mkdir -p "$work/corpus_c" "$work/corpus_py"
for f in tests/format/golden/*.bkf; do
    b=$(basename "$f" .bkf)
    for m in 0 1 2 3 4 5 6 7; do
        { printf "\\x0$m"; cat "$f"; } > "$work/corpus_c/$b.$m"
    done
    for m in 0 1 2; do
        { printf "\\x0$m"; cat "$f"; } > "$work/corpus_py/$b.$m"
    done
done

# Seeds one write short of a limit the goldens are far from, which random
# mutation rarely hits exactly: a TinyLFU state one record short of its
# aging (events = sample_size - 1, the validator's bound), so that the
# fuzzer's adds age it.  Modes 0 and 2 (no checksum check: the patch leaves
# the stored checksum as it was).
python - "$work/corpus_c" <<'EOF'
import struct
import sys
from pathlib import Path

state = bytearray(Path("tests/format/golden/tinylfu_basic.bkf").read_bytes())
capacity, = struct.unpack_from("<Q", state, 64)      # params + 0
sample_factor, = struct.unpack_from("<I", state, 72)  # params + 8
struct.pack_into("<Q", state, 96, capacity * sample_factor - 1)  # params + 32: events
for mode in (0, 2):
    Path(sys.argv[1], f"tinylfu_one_short_of_aging.{mode}").write_bytes(bytes([mode]) + state)
EOF

if command -v clang >/dev/null 2>&1; then
    echo "== libFuzzer: bk_format_validate (${secs}s)"
    n=src/bloomkit/_native
    # every structure's validator, with the BK_HAVE_* switches setup.py derives
    have=$(for f in $n/py_*.c; do s=$(basename "$f" .c); s=${s#py_}; \
           case $s in common|*_*) continue ;; esac; echo "-DBK_HAVE_$(echo "$s" | tr a-z A-Z)=1"; done)
    # shellcheck disable=SC2086
    clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        $have -I$n tests/fuzz/fuzz_validate.c $n/bk_*.c -o "$work/fuzz_validate"
    "$work/fuzz_validate" -max_total_time="$secs" -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus_c" 2>&1 | tail -n 12
else
    echo "fuzz: clang not found; skipping the libFuzzer target (apt-get install clang)" >&2
    exit 1
fi

echo "== atheris: bloomkit.loads (${secs}s)"
if [ "${BLOOMKIT_FUZZ_ASAN:-0}" = 1 ]; then
    asan=$(python -c "import atheris, os; print(os.path.join(os.path.dirname(atheris.__file__), 'asan_with_fuzzer.so'))")
    [ -f "$asan" ] || asan=$(${CC:-gcc} -print-file-name=libasan.so)
    export LD_PRELOAD="$asan" ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=64 PYTHONMALLOC=malloc
    export PYTHONPATH=build/asan/lib
else
    export PYTHONPATH=src
fi
python tests/fuzz/fuzz_loads.py -max_total_time="$secs" -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus_py" 2>&1 | tail -n 12

echo "== atheris: bloomkit.parquet footer and Bloom filter reader (${secs}s)"
mkdir -p "$work/corpus_pq"
printf '\001\001fuzz-parquet-seed' > "$work/corpus_pq/seed-recipe"
printf 'PAR1PAR1' > "$work/corpus_pq/seed-raw"
(
    # The reader is pure Python and its seed file is written with pyarrow,
    # which is not built for ASan: run it on the plain build.
    unset LD_PRELOAD ASAN_OPTIONS PYTHONMALLOC
    if [ "${BLOOMKIT_FUZZ_ASAN:-0}" = 1 ]; then unset PYTHONPATH; else export PYTHONPATH=src; fi
    python tests/fuzz/fuzz_parquet.py -max_total_time="$secs" -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus_pq" 2>&1 | tail -n 12
)

echo "== atheris: bloomkit.spark and bloomkit.guava readers (${secs}s)"
mkdir -p "$work/corpus_jvm"
for i in 0 1 2 3 4 5 6 7 8; do printf "\\x0$i\\x01seed-recipe-$i" > "$work/corpus_jvm/seed-$i"; done
python tests/fuzz/fuzz_jvm.py -max_total_time="$secs" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus_jvm" 2>&1 | tail -n 12
