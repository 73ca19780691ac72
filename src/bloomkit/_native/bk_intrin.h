/*
 * bk_intrin.h -- the compiler intrinsics of the C core, in one place.
 *
 * The core must compile with GCC and clang (Linux, macOS, the CI's s390x
 * and i686 cross compilers) and with MSVC (cl.exe, the Windows wheels of
 * pyproject.toml's [tool.cibuildwheel]).  Every builtin or intrinsic the
 * core uses is wrapped here, each wrapper with three paths:
 *
 *   GCC / clang   the __builtin_* functions, unsigned __int128, and
 *                 __attribute__((target(...))) for the run-time dispatch
 *   MSVC          the <intrin.h> intrinsics: __umulh / _umul128,
 *                 _BitScanForward64 / _BitScanReverse64, _byteswap_*,
 *                 _mm_prefetch; per-function targets do not exist (cl.exe
 *                 emits any intrinsic's instruction in any function, and
 *                 inserts vzeroupper after 256-bit code itself)
 *   portable C    shifts and masks, used by any other compiler and, with
 *                 -DBK_NO_INTRINSICS, by the CI build that proves these
 *                 fallbacks give the same bytes as the builtins
 *                 (.ci/portable.sh, test_portable "no intrinsics")
 *
 * clang-cl defines both _MSC_VER and __clang__: it takes the GCC/clang
 * path (it has the builtins and the target attribute), except for CPU
 * detection, which goes through __cpuid on every _MSC_VER compiler
 * (__builtin_cpu_supports needs compiler-rt's __cpu_model, which an MSVC
 * link does not have; bk_simd.c).  Relaxed atomics are not here: they live
 * in bk_atomic.h.
 *
 * What is not used on purpose: __popcnt64 and __lzcnt64 emit POPCNT and
 * LZCNT, which an x86-64 CPU before 2008 (POPCNT) or 2013 (LZCNT, Intel)
 * lacks ("results are unpredictable", Microsoft's documentation).  GCC
 * without -mpopcnt does not emit POPCNT either, so the MSVC path uses
 * __popcnt64 only when /arch:AVX or higher (which defines __AVX__) already
 * promises a CPU that has it; otherwise the 12-operation SWAR count.
 * BSF/BSR (_BitScanForward64/_BitScanReverse64) exist on every x86-64.
 */
#ifndef BK_INTRIN_H
#define BK_INTRIN_H

#include <stddef.h>
#include <stdint.h>

/* ---- which compiler -------------------------------------------------- */

#if defined(_MSC_VER) && !defined(__clang__)
#define BK_CC_MSVC 1 /* cl.exe */
#define BK_CC_GNU 0
#include <intrin.h>
#include <stdlib.h> /* _byteswap_ushort/_ulong/_uint64 live here, not in <intrin.h> */
#elif defined(__GNUC__) || defined(__clang__)
#define BK_CC_MSVC 0
#define BK_CC_GNU 1 /* GCC, clang, clang-cl */
#else
#define BK_CC_MSVC 0
#define BK_CC_GNU 0
#endif

/* BK_INTRIN_*: whether the value-returning wrappers below use the
 * compiler's intrinsics.  -DBK_NO_INTRINSICS turns them all off (a test
 * switch: the results must not change, only the instructions). */
#if defined(BK_NO_INTRINSICS)
#define BK_INTRIN_GNU 0
#define BK_INTRIN_MSVC 0
#else
#define BK_INTRIN_GNU BK_CC_GNU
#define BK_INTRIN_MSVC BK_CC_MSVC
#endif

/* ---- hints ----------------------------------------------------------- */

#if BK_CC_GNU
#define BK_LIKELY(x) __builtin_expect(!!(x), 1)
#define BK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BK_INLINE static inline __attribute__((always_inline))
#elif BK_CC_MSVC
#define BK_LIKELY(x) (x)
#define BK_UNLIKELY(x) (x)
#define BK_INLINE static __forceinline
#else
#define BK_LIKELY(x) (x)
#define BK_UNLIKELY(x) (x)
#define BK_INLINE static inline
#endif

/* Cache prefetch for a read (r) or a write (w).  GCC emits prefetcht0 for
 * both unless the target has PREFETCHW; MSVC's _mm_prefetch(T0) is the same
 * instruction (x64 only: SSE is part of the x64 baseline).  No-ops
 * elsewhere: they are hints, never needed for a result. */
#if BK_CC_GNU
#define bk_prefetch_r(p) __builtin_prefetch((p), 0, 3)
#define bk_prefetch_w(p) __builtin_prefetch((p), 1, 3)
#elif BK_CC_MSVC && defined(_M_X64)
#define bk_prefetch_r(p) _mm_prefetch((const char *)(const void *)(p), _MM_HINT_T0)
#define bk_prefetch_w(p) _mm_prefetch((const char *)(const void *)(p), _MM_HINT_T0)
#else
#define bk_prefetch_r(p) ((void)(p))
#define bk_prefetch_w(p) ((void)(p))
#endif

/* ---- run-time dispatch targets (x86) ---------------------------------- */

/* BK_X86_DISPATCH: 1 when this build carries AVX2/BMI2 code for bk_simd.c
 * to select at run time.  BK_TARGET_AVX2 / BK_TARGET_AVX2_BMI2 mark such
 * functions: with GCC/clang a target attribute (the rest of the module
 * stays baseline x86-64, no -mavx2); with MSVC nothing (intrinsics need no
 * /arch, and the build never passes one: setup.py).  BK_TARGET_ATTRIBUTES
 * is 1 when a target attribute can recompile a plain C function for
 * BMI2 (bk_bloom.c's classic loops): MSVC cannot, and takes the plain
 * loop. */
#if BK_CC_GNU && (defined(__x86_64__) || defined(__i386__)) && !defined(BK_NO_INTRINSICS)
#define BK_X86_DISPATCH 1
#define BK_TARGET_ATTRIBUTES 1
#define BK_TARGET_AVX2 __attribute__((target("avx2")))
#define BK_TARGET_AVX2_BMI2 __attribute__((target("avx2,bmi2")))
#define BK_TARGET_BMI2 __attribute__((target("bmi,bmi2")))
#elif BK_CC_MSVC && defined(_M_X64) && !defined(BK_NO_INTRINSICS)
#define BK_X86_DISPATCH 1
#define BK_TARGET_ATTRIBUTES 0
#define BK_TARGET_AVX2
#define BK_TARGET_AVX2_BMI2
#else
#define BK_X86_DISPATCH 0
#define BK_TARGET_ATTRIBUTES 0
#endif

/* ---- 64 x 64 -> 128-bit multiplication -------------------------------- */

#if BK_INTRIN_GNU && defined(__SIZEOF_INT128__)
#define BK_HAS_INT128 1
__extension__ typedef unsigned __int128 bk_u128; /* GNU C; -Wpedantic-clean */
#else
#define BK_HAS_INT128 0
#endif

/* The portable product: four 32 x 32 -> 64 partial products.  Cannot
 * overflow: (2^32-1) + (2^32-1) + (2^32-1)^2 < 2^64 in `cross`. */
BK_INLINE uint64_t bk_mul128_portable(uint64_t a, uint64_t b, uint64_t *hi)
{
    uint64_t a_lo = (uint32_t)a, a_hi = a >> 32;
    uint64_t b_lo = (uint32_t)b, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo;
    uint64_t hi_lo = a_hi * b_lo;
    uint64_t lo_hi = a_lo * b_hi;
    uint64_t hi_hi = a_hi * b_hi;
    uint64_t cross = (lo_lo >> 32) + (uint32_t)hi_lo + lo_hi;
    *hi = hi_hi + (hi_lo >> 32) + (cross >> 32);
    return (cross << 32) | (uint32_t)lo_lo;
}

/* a * b as 128 bits: returns the low 64, stores the high 64 in *hi. */
BK_INLINE uint64_t bk_mul128(uint64_t a, uint64_t b, uint64_t *hi)
{
#if BK_HAS_INT128
    bk_u128 r = (bk_u128)a * b;
    *hi = (uint64_t)(r >> 64);
    return (uint64_t)r;
#elif BK_INTRIN_MSVC && defined(_M_X64)
    unsigned __int64 h;
    uint64_t lo = _umul128(a, b, &h);
    *hi = h;
    return lo;
#elif BK_INTRIN_MSVC && defined(_M_ARM64)
    *hi = __umulh(a, b);
    return a * b;
#else
    return bk_mul128_portable(a, b, hi);
#endif
}

/* (a * b) >> 64: maps a uniform 64-bit hash onto [0, b) without division
 * and without bias worth measuring (Lemire's "fastrange"). */
BK_INLINE uint64_t bk_mulhi64(uint64_t a, uint64_t b)
{
#if BK_HAS_INT128
    return (uint64_t)(((bk_u128)a * b) >> 64);
#elif BK_INTRIN_MSVC && (defined(_M_X64) || defined(_M_ARM64))
    return __umulh(a, b);
#else
    uint64_t hi;
    (void)bk_mul128_portable(a, b, &hi);
    return hi;
#endif
}

/* low ^ high of a * b: XXH3's "fold" (xxhash_spec.md, mul128_fold64). */
BK_INLINE uint64_t bk_mulfold64(uint64_t a, uint64_t b)
{
    uint64_t hi, lo = bk_mul128(a, b, &hi);
    return lo ^ hi;
}

/* ---- bit counts ------------------------------------------------------- */

BK_INLINE int bk_popcount64(uint64_t x)
{
#if BK_INTRIN_GNU
    return __builtin_popcountll(x);
#elif BK_INTRIN_MSVC && defined(_M_X64) && defined(__AVX__)
    return (int)__popcnt64(x); /* /arch:AVX+ implies POPCNT (see the top) */
#else
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
#endif
}

/* Index of the lowest set bit of x; x must be non-zero (0..63). */
BK_INLINE unsigned bk_ctz64(uint64_t x)
{
#if BK_INTRIN_GNU
    return (unsigned)__builtin_ctzll(x);
#elif BK_INTRIN_MSVC && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long i; /* 32 bits on Windows, as _BitScanForward64 wants */
    (void)_BitScanForward64(&i, x);
    return (unsigned)i;
#else
    /* binary search: 6 halvings, no table */
    unsigned n = 0;
    if (!(x & 0xFFFFFFFFULL)) { n += 32; x >>= 32; }
    if (!(x & 0xFFFFULL)) { n += 16; x >>= 16; }
    if (!(x & 0xFFULL)) { n += 8; x >>= 8; }
    if (!(x & 0xFULL)) { n += 4; x >>= 4; }
    if (!(x & 0x3ULL)) { n += 2; x >>= 2; }
    if (!(x & 0x1ULL)) { n += 1; }
    return n;
#endif
}

/* Index of the highest set bit of x (floor(log2 x)); x must be non-zero. */
BK_INLINE unsigned bk_log2_64(uint64_t x)
{
#if BK_INTRIN_GNU
    return 63u - (unsigned)__builtin_clzll(x);
#elif BK_INTRIN_MSVC && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long i;
    (void)_BitScanReverse64(&i, x);
    return (unsigned)i;
#else
    unsigned n = 0;
    if (x >> 32) { n += 32; x >>= 32; }
    if (x >> 16) { n += 16; x >>= 16; }
    if (x >> 8) { n += 8; x >>= 8; }
    if (x >> 4) { n += 4; x >>= 4; }
    if (x >> 2) { n += 2; x >>= 2; }
    if (x >> 1) { n += 1; }
    return n;
#endif
}

/* ---- byte swaps ------------------------------------------------------- */

BK_INLINE uint16_t bk_bswap16(uint16_t x)
{
#if BK_INTRIN_GNU
    return __builtin_bswap16(x);
#elif BK_INTRIN_MSVC
    return _byteswap_ushort(x);
#else
    return (uint16_t)((x >> 8) | (x << 8));
#endif
}

BK_INLINE uint32_t bk_bswap32(uint32_t x)
{
#if BK_INTRIN_GNU
    return __builtin_bswap32(x);
#elif BK_INTRIN_MSVC
    return (uint32_t)_byteswap_ulong(x); /* unsigned long: 32 bits on Windows */
#else
    return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
#endif
}

BK_INLINE uint64_t bk_bswap64(uint64_t x)
{
#if BK_INTRIN_GNU
    return __builtin_bswap64(x);
#elif BK_INTRIN_MSVC
    return _byteswap_uint64(x);
#else
    return ((uint64_t)bk_bswap32((uint32_t)x) << 32) | bk_bswap32((uint32_t)(x >> 32));
#endif
}

/* ---- overflow-checked size arithmetic (the validators) ---------------- */

/* *out = a + b; returns 1 on overflow (then *out is a + b mod 2^64). */
BK_INLINE int bk_add_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
#if BK_INTRIN_GNU
    return __builtin_add_overflow(a, b, out);
#else
    *out = a + b;
    return *out < a;
#endif
}

/* *out = a * b; returns 1 on overflow (then *out is a * b mod 2^64).
 * Without the builtin: the high half of the 128-bit product is non-zero
 * (one MUL on x64 MSVC, no division). */
BK_INLINE int bk_mul_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
#if BK_INTRIN_GNU
    return __builtin_mul_overflow(a, b, out);
#else
    uint64_t hi;
    *out = bk_mul128(a, b, &hi);
    return hi != 0;
#endif
}

#endif /* BK_INTRIN_H */
