/*
 * bk_common.h -- portability macros and small helpers shared by the C core.
 *
 * Everything here is header-only and free of Python.h, so the structure
 * modules (bk_<structure>.c) can be compiled and tested as plain C.
 *
 *   bk_rc            the return-code enum every core function uses
 *   bk_intrin.h      (included) the compiler intrinsics, each with its
 *                    GCC/clang, MSVC and portable path: BK_LIKELY,
 *                    BK_INLINE, bk_mulhi64 (the range reduction used
 *                    everywhere instead of '%' or power-of-two rounding,
 *                    which wastes ~38% of memory on average),
 *                    bk_popcount64, bk_ctz64, bk_prefetch_*,
 *                    bk_add_overflow / bk_mul_overflow for the validators
 *   (the relaxed atomics of shared buffers are in bk_atomic.h)
 */
#ifndef BK_COMMON_H
#define BK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bk_intrin.h" /* BK_INLINE, BK_LIKELY, bk_mulhi64, bk_popcount64, ... */

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

#endif /* BK_COMMON_H */
