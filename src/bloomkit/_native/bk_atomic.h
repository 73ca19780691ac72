/*
 * bk_atomic.h -- the relaxed atomics of the core and the glue, in one place.
 *
 * Shared state buffers (mmap "r+" across processes) and batches that write
 * with the GIL released need read-modify-writes that never lose a
 * neighbour's update.  Relaxed ordering is enough everywhere: Bloom bits
 * only go 0 -> 1, counters saturate, and the header counts are statistics;
 * no other memory is published through these words.  This is the only file
 * that names a compiler's atomic primitives (tests/test_source_lint.py keeps
 * it so).  Three paths:
 *
 *   GCC / clang   the __atomic builtins (C11 memory model, any target the
 *                 compiler supports lock-free for 1, 2, 4 and 8 bytes)
 *   MSVC          the _Interlocked* intrinsics of <intrin.h> (full fences,
 *                 stronger than relaxed, never weaker) and plain volatile
 *                 loads, which are single aligned moves on x64 and ARM64
 *                 (the Windows targets of pyproject.toml's wheels; 32-bit
 *                 x86 would need _InterlockedCompareExchange64 for the
 *                 64-bit load, not done).  Not compiled on this project's
 *                 CI: docs/building.md, "Windows and MSVC".
 *   other         plain loads and stores: BK_HAS_ATOMICS is 0 and a shared
 *                 writer may lose concurrent updates (never a crash; a
 *                 process-local buffer written under the GIL is unaffected).
 *
 * Every *_u64le helper works on a little-endian word in a state buffer at
 * an 8-byte aligned address: on big-endian hosts it byte-swaps inside a
 * compare-and-swap loop instead of a fetch-add.
 */
#ifndef BK_ATOMIC_H
#define BK_ATOMIC_H

#include "bk_common.h"
#include "bk_endian.h"

#if defined(__GNUC__) || defined(__clang__)
#define BK_HAS_ATOMICS 1
#define BK_ATOMIC_GNU 1
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
#include <intrin.h>
#define BK_HAS_ATOMICS 1
#define BK_ATOMIC_MSVC 1
#else
#define BK_HAS_ATOMICS 0
#endif

/* ---- loads ------------------------------------------------------------ */

BK_INLINE uint8_t bk_atomic_load8(const uint8_t *p)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#else
    return *(volatile const uint8_t *)p;
#endif
}

BK_INLINE uint16_t bk_atomic_load16(const uint16_t *p)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#else
    return *(volatile const uint16_t *)p;
#endif
}

BK_INLINE uint32_t bk_atomic_load32(const uint32_t *p)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#else
    return *(volatile const uint32_t *)p;
#endif
}

BK_INLINE uint64_t bk_atomic_load64(const uint64_t *p)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#else
    return *(volatile const uint64_t *)p;
#endif
}

/* ---- compare and swap ------------------------------------------------- */

/* Weak, relaxed: 1 if *p was *expected and is now desired; else 0 with
 * *expected set to the current value (the caller loops; a weak CAS may
 * fail spuriously on LL/SC machines). */
BK_INLINE int bk_atomic_cas8(uint8_t *p, uint8_t *expected, uint8_t desired)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_compare_exchange_n(p, expected, desired, 1, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
#elif defined(BK_ATOMIC_MSVC)
    char old = _InterlockedCompareExchange8((volatile char *)p, (char)desired, (char)*expected);
    if ((uint8_t)old == *expected)
        return 1;
    *expected = (uint8_t)old;
    return 0;
#else
    *p = desired;
    return 1;
#endif
}

BK_INLINE int bk_atomic_cas16(uint16_t *p, uint16_t *expected, uint16_t desired)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_compare_exchange_n(p, expected, desired, 1, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
#elif defined(BK_ATOMIC_MSVC)
    short old = _InterlockedCompareExchange16((volatile short *)p, (short)desired,
                                              (short)*expected);
    if ((uint16_t)old == *expected)
        return 1;
    *expected = (uint16_t)old;
    return 0;
#else
    *p = desired;
    return 1;
#endif
}

BK_INLINE int bk_atomic_cas32(uint32_t *p, uint32_t *expected, uint32_t desired)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_compare_exchange_n(p, expected, desired, 1, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
#elif defined(BK_ATOMIC_MSVC)
    long old = _InterlockedCompareExchange((volatile long *)p, (long)desired, (long)*expected);
    if ((uint32_t)old == *expected)
        return 1;
    *expected = (uint32_t)old;
    return 0;
#else
    *p = desired;
    return 1;
#endif
}

BK_INLINE int bk_atomic_cas64(uint64_t *p, uint64_t *expected, uint64_t desired)
{
#if defined(BK_ATOMIC_GNU)
    return __atomic_compare_exchange_n(p, expected, desired, 1, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
#elif defined(BK_ATOMIC_MSVC)
    __int64 old = _InterlockedCompareExchange64((volatile __int64 *)p, (__int64)desired,
                                                (__int64)*expected);
    if ((uint64_t)old == *expected)
        return 1;
    *expected = (uint64_t)old;
    return 0;
#else
    *p = desired;
    return 1;
#endif
}

/* ---- read-modify-write ------------------------------------------------ */

/* *p |= v on a native-endian word (Bloom bits: OR is endian-neutral when
 * the mask was built for the stored order, see bk_bloom.h; the 32-bit one
 * serves the Parquet split-block filter's words, bk_sbbf.c). */
BK_INLINE void bk_atomic_or32(uint32_t *p, uint32_t v)
{
#if defined(BK_ATOMIC_GNU)
    __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
#elif defined(BK_ATOMIC_MSVC)
    _InterlockedOr((volatile long *)p, (long)v);
#else
    *p |= v;
#endif
}

BK_INLINE void bk_atomic_or64(uint64_t *p, uint64_t v)
{
#if defined(BK_ATOMIC_GNU)
    __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
#elif defined(BK_ATOMIC_MSVC)
    _InterlockedOr64((volatile __int64 *)p, (__int64)v);
#else
    *p |= v;
#endif
}

/* The little-endian word at p (8-byte aligned) += n, modulo 2^64. */
BK_INLINE void bk_atomic_add_u64le(uint8_t *p, uint64_t n)
{
    uint64_t *w = (uint64_t *)(void *)p;
#if BK_HAS_ATOMICS && !BK_BIG_ENDIAN
#if defined(BK_ATOMIC_GNU)
    __atomic_fetch_add(w, n, __ATOMIC_RELAXED);
#else
    _InterlockedExchangeAdd64((volatile __int64 *)w, (__int64)n);
#endif
#else
    uint64_t old = bk_atomic_load64(w);
    while (!bk_atomic_cas64(w, &old, BK_LE64(BK_LE64(old) + n))) {
    }
#endif
}

/* The little-endian word at p (8-byte aligned) = min(word + n, 2^64 - 1). */
BK_INLINE void bk_atomic_sat_add_u64le(uint8_t *p, uint64_t n)
{
    uint64_t *w = (uint64_t *)(void *)p;
    uint64_t old = bk_atomic_load64(w), sum;
    do {
        uint64_t v = BK_LE64(old);
        sum = v + n < v ? UINT64_MAX : v + n;
    } while (!bk_atomic_cas64(w, &old, BK_LE64(sum)));
}

#endif /* BK_ATOMIC_H */
