/*
 * bk_common.h -- portability macros and small helpers shared by the C core.
 *
 * Everything here is header-only and free of Python.h, so the structure
 * modules (bk_<structure>.c) can be compiled and tested as plain C.
 *
 *   bk_rc            the return-code enum every core function uses
 *   BK_LIKELY        branch hints
 *   bk_mulhi64       (a * b) >> 64, the range reduction used everywhere
 *                    instead of '%' or power-of-two rounding (see PERFORMANCE:
 *                    rounding to powers of two wastes ~38% of memory on
 *                    average)
 *   bk_popcount64    population count
 *   bk_prefetch_*    cache prefetch hints (no-ops where unsupported)
 *   (the relaxed atomics of shared buffers are in bk_atomic.h)
 *   bk_add_overflow  overflow-checked size arithmetic for the validators
 */
#ifndef BK_COMMON_H
#define BK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Named return codes (no bare -1s).  Negative values are errors. */
typedef enum {
    BK_OK = 0,
    BK_ERR_FORMAT = -1,       /* malformed or corrupt state buffer */
    BK_ERR_UNSUPPORTED = -2,  /* valid container, unknown version/kind/flag */
    BK_ERR_CHECKSUM = -3,     /* checksum mismatch */
    BK_ERR_NOMEM = -4,
    BK_ERR_CAPACITY = -5,     /* structure full (cuckoo, quotient) */
    BK_ERR_INCOMPATIBLE = -6, /* set operation between different shapes */
    BK_ERR_ARG = -7,          /* bad argument */
    BK_ERR_NOTFOUND = -8,     /* remove of an absent key */
    BK_ERR_UNCLEAN = -9       /* file still marked open for writing */
} bk_rc;

#if defined(__GNUC__) || defined(__clang__)
#define BK_LIKELY(x) __builtin_expect(!!(x), 1)
#define BK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BK_INLINE static inline __attribute__((always_inline))
#else
#define BK_LIKELY(x) (x)
#define BK_UNLIKELY(x) (x)
#define BK_INLINE static inline
#endif

/* (a * b) >> 64: maps a uniform 64-bit hash onto [0, b) without division
 * and without bias worth measuring (Lemire's "fastrange"). */
#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 bk_u128; /* GNU C; -Wpedantic-clean */
#endif

BK_INLINE uint64_t bk_mulhi64(uint64_t a, uint64_t b)
{
#if defined(__SIZEOF_INT128__)
    return (uint64_t)(((bk_u128)a * b) >> 64);
#else
    uint64_t a_lo = (uint32_t)a, a_hi = a >> 32;
    uint64_t b_lo = (uint32_t)b, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo;
    uint64_t hi_lo = a_hi * b_lo;
    uint64_t lo_hi = a_lo * b_hi;
    uint64_t hi_hi = a_hi * b_hi;
    uint64_t cross = (lo_lo >> 32) + (uint32_t)hi_lo + lo_hi;
    return hi_hi + (hi_lo >> 32) + (cross >> 32);
#endif
}

BK_INLINE int bk_popcount64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
#endif
}

#if defined(__GNUC__) || defined(__clang__)
#define bk_prefetch_r(p) __builtin_prefetch((p), 0, 3)
#define bk_prefetch_w(p) __builtin_prefetch((p), 1, 3)
#else
#define bk_prefetch_r(p) ((void)(p))
#define bk_prefetch_w(p) ((void)(p))
#endif

/* Overflow-checked size arithmetic: returns 1 on overflow. */
BK_INLINE int bk_add_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, out);
#else
    *out = a + b;
    return *out < a;
#endif
}

BK_INLINE int bk_mul_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_mul_overflow(a, b, out);
#else
    *out = a * b;
    return a != 0 && *out / a != b;
#endif
}

#endif /* BK_COMMON_H */
