/*
 * bk_endian.h -- explicit little-endian load/store helpers.
 *
 * Every multi-byte field that reaches a state buffer (and so a file, an
 * mmap or a Redis string) is little-endian.  We never copy a struct to the
 * wire: fields are read and written one by one through these helpers,
 * which compile to single moves on little-endian hosts and to a byte swap
 * on big-endian ones.
 *
 * Payload words of bit arrays are 64-bit little-endian: bit i of a filter
 * is bit (i % 8) of byte (i / 8), on every platform.  Core code that works
 * on whole words in host order converts masks with BK_LE64().
 */
#ifndef BK_ENDIAN_H
#define BK_ENDIAN_H

#include <stdint.h>
#include <string.h>

#include "bk_intrin.h"

/* __BYTE_ORDER__ is GCC/clang's; every MSVC target is little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BK_BIG_ENDIAN 1
#define BK_LE64(x) bk_bswap64(x)
#define BK_LE32(x) bk_bswap32(x)
#define BK_LE16(x) bk_bswap16(x)
#else
#define BK_BIG_ENDIAN 0
#define BK_LE64(x) (x)
#define BK_LE32(x) (x)
#define BK_LE16(x) (x)
#endif

static inline uint16_t bk_load_u16le(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return (uint16_t)BK_LE16(v);
}

static inline uint32_t bk_load_u32le(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return (uint32_t)BK_LE32(v);
}

static inline uint64_t bk_load_u64le(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return (uint64_t)BK_LE64(v);
}

static inline void bk_store_u16le(void *p, uint16_t v)
{
    v = (uint16_t)BK_LE16(v);
    memcpy(p, &v, sizeof v);
}

static inline void bk_store_u32le(void *p, uint32_t v)
{
    v = (uint32_t)BK_LE32(v);
    memcpy(p, &v, sizeof v);
}

static inline void bk_store_u64le(void *p, uint64_t v)
{
    v = (uint64_t)BK_LE64(v);
    memcpy(p, &v, sizeof v);
}

/* IEEE-754 binary64, little-endian. */
static inline double bk_load_f64le(const void *p)
{
    uint64_t u = bk_load_u64le(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline void bk_store_f64le(void *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    bk_store_u64le(p, u);
}

#endif /* BK_ENDIAN_H */
