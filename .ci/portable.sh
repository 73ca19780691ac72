#!/usr/bin/env bash
# Portability proofs of the pure C core (docs/building.md, "Platforms"):
# tests/native/test_portable.c checks every golden file (written on x86-64,
# little-endian) on
#   - gcc and clang, -Werror, x86-64;
#   - x86-64 under UBSan with alignment checks, no recovery;
#   - s390x (big-endian), cross-compiled, run under qemu-s390x;
#   - i686 (32-bit size_t), cross-compiled -static, run under qemu-i386;
#   - x86-64 with -DBK_NO_INTRINSICS: every wrapper of bk_intrin.h on its
#     portable C path (what a compiler without GCC/MSVC intrinsics gets);
#   - Windows: every bk_*.c through clang's x86_64-pc-windows-msvc target,
#     as cl.exe and as clang-cl would see it (tests/native/msvc_check.py).
#     No MSVC binary is built or run here (no cl.exe, no Wine).
# The cross compilers and qemu come from Debian's packages; if they cannot
# be installed the script says so and fails (it never skips).
# Usage: .ci/portable.sh   (as root, or with the packages already present)
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v s390x-linux-gnu-gcc >/dev/null || need+=(gcc-s390x-linux-gnu libc6-dev-s390x-cross)
command -v i686-linux-gnu-gcc >/dev/null || need+=(gcc-i686-linux-gnu libc6-dev-i386-cross)
command -v qemu-s390x >/dev/null && command -v qemu-i386 >/dev/null || need+=(qemu-user)
command -v clang >/dev/null || need+=(clang)
command -v llvm-nm >/dev/null || need+=(llvm)
if [ ${#need[@]} -gt 0 ]; then
    echo "== installing ${need[*]}"
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    if ! { $sudo apt-get update -q && \
           DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
               "${need[@]}"; }; then
        echo "FAILED: cannot install ${need[*]}: the big-endian, 32-bit and MSVC-mode proofs" \
             "cannot run" >&2
        exit 1
    fi
fi

n=src/bloomkit/_native
out=build/portable
mkdir -p "$out"
# every structure, with the BK_HAVE_* switches setup.py derives from py_*.c
have=$(for f in $n/py_*.c; do s=$(basename "$f" .c); s=${s#py_}; \
       case $s in common|*_*) continue ;; esac; echo "-DBK_HAVE_$(echo "$s" | tr a-z A-Z)=1"; done)
warn="-std=c11 -O2 -Wall -Wextra -Wpedantic -Wshadow -Werror"
src="$n/bk_*.c tests/native/test_portable.c"
python tests/native/make_portable_vectors.py "$out/cases.txt"

run() {  # run NAME COMMAND...: one build, its output, its verdict
    local name=$1; shift
    echo "== test_portable: $name"
    "$@" "$out/cases.txt" tests/format/golden
}

# shellcheck disable=SC2086
gcc $warn $have -I$n $src -lm -o "$out/tp-gcc"
run "gcc, x86-64" "$out/tp-gcc"
# shellcheck disable=SC2086
clang $warn $have -I$n $src -lm -o "$out/tp-clang"
run "clang, x86-64" "$out/tp-clang"
# shellcheck disable=SC2086
gcc $warn -DBK_NO_INTRINSICS $have -I$n $src -lm -o "$out/tp-portable"
run "gcc, x86-64, no intrinsics (portable C paths)" "$out/tp-portable"
# shellcheck disable=SC2086
gcc -std=c11 -O1 -g -fsanitize=undefined,alignment -fno-sanitize-recover=all $have -I$n $src \
    -lm -o "$out/tp-ubsan"
run "gcc, x86-64, UBSan (alignment, no recovery)" "$out/tp-ubsan"
# shellcheck disable=SC2086
s390x-linux-gnu-gcc $warn $have -static -I$n $src -lm -o "$out/tp-s390x"
run "s390x (big-endian) under qemu" qemu-s390x "$out/tp-s390x"
# shellcheck disable=SC2086
i686-linux-gnu-gcc $warn $have -static -I$n $src -lm -o "$out/tp-i686"
run "i686 (32-bit size_t) under qemu" qemu-i386 "$out/tp-i686"

# the hash module's pinned vectors on the same two foreign CPUs (the module
# with its parts, bk_hash_*.c: the MurmurHash3 of Spark and Guava)
th="$n/bk_hash.c $(ls $n/bk_hash_*.c) tests/native/test_bk_hash.c"
# shellcheck disable=SC2086
s390x-linux-gnu-gcc $warn -static -I$n $th -o "$out/th-s390x"
echo "== test_bk_hash: s390x (big-endian) under qemu"
qemu-s390x "$out/th-s390x"
# shellcheck disable=SC2086
i686-linux-gnu-gcc $warn -static -I$n $th -o "$out/th-i686"
echo "== test_bk_hash: i686 under qemu"
qemu-i386 "$out/th-i686"

# Parquet's split-block Bloom filter: little-endian words on a big-endian CPU
s390x-linux-gnu-gcc $warn -static -I$n $n/bk_hash.c $n/bk_sbbf.c tests/native/test_bk_sbbf.c \
    -lm -o "$out/ts-s390x"
echo "== test_bk_sbbf: s390x (big-endian) under qemu"
qemu-s390x "$out/ts-s390x"
i686-linux-gnu-gcc $warn -static -I$n $n/bk_hash.c $n/bk_sbbf.c tests/native/test_bk_sbbf.c \
    -lm -o "$out/ts-i686"
echo "== test_bk_sbbf: i686 under qemu"
qemu-i386 "$out/ts-i686"

# the growable filter: little-endian 16-bit slots read as 64-bit words
# (SWAR) on a big-endian CPU, and 32-bit size_t; the no-intrinsics build
# runs its SWAR path and portable popcount/ctz
gs="$n/bk_grow.c $n/bk_format.c $n/bk_kinds.c $n/bk_bloom.c $n/bk_hash.c $n/bk_simd.c tests/native/test_bk_grow.c"
# shellcheck disable=SC2086
s390x-linux-gnu-gcc $warn -static -I$n $gs -lm -o "$out/tg-s390x"
echo "== test_bk_grow: s390x (big-endian) under qemu"
qemu-s390x "$out/tg-s390x"
# shellcheck disable=SC2086
i686-linux-gnu-gcc $warn -static -I$n $gs -lm -o "$out/tg-i686"
echo "== test_bk_grow: i686 under qemu"
qemu-i386 "$out/tg-i686"
# shellcheck disable=SC2086
gcc $warn -DBK_NO_INTRINSICS -I$n $gs -lm -o "$out/tg-portable"
echo "== test_bk_grow: x86-64, no intrinsics (portable C paths)"
"$out/tg-portable"
# shellcheck disable=SC2086
gcc -std=c11 -O1 -g -fsanitize=undefined,alignment -fno-sanitize-recover=all -I$n $gs -lm \
    -o "$out/tg-ubsan"
echo "== test_bk_grow: x86-64, UBSan (alignment, no recovery)"
"$out/tg-ubsan"

# the hash vectors on the portable 64x64->128 multiply and byte swaps
# shellcheck disable=SC2086
gcc $warn -DBK_NO_INTRINSICS -I$n $th -o "$out/th-portable"
echo "== test_bk_hash: x86-64, no intrinsics (portable C paths)"
"$out/th-portable"

# Windows: the _MSC_VER paths without MSVC (see the script's docstring)
echo "== msvc_check: the C core in clang's MSVC mode (cl.exe and clang-cl views)"
python tests/native/msvc_check.py --out "$out/msvc"
