/*
 * bk_grow.h -- a growable fingerprint filter whose query cost does not grow
 * with its growth (issue 32, item 2).  See bk_grow.c for the structure, the
 * papers it follows, its invariants and its byte layout.
 *
 * C11, no Python.h.  The caller hashes keys (bloomkit's seeded 64-bit key
 * hash); the core takes the 64-bit hash h.
 */
#ifndef BK_GROW_H
#define BK_GROW_H

#include <stddef.h>
#include <stdint.h>

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_GROW_BUCKET_BYTES 64u  /* one cache line */
#define BK_GROW_SLOTS 32u         /* 16-bit slots per bucket */
#define BK_GROW_FP_BITS 15u       /* fingerprint bits of a new entry */
#define BK_GROW_STASH 16u         /* full hashes kept when both buckets are full */
#define BK_GROW_MAX_DOUBLINGS 14u /* a table's depth may exceed the floor by this much */
#define BK_GROW_MAX_DEPTH 40u     /* 2^40 buckets per table (64 TiB) */

/* The parameter block (little-endian; bk_grow.c's essay has the box). */
#define BK_GROW_P_Q0 0         /* u32 depth of table 0 */
#define BK_GROW_P_Q1 4         /* u32 depth of table 1 */
#define BK_GROW_P_FLOOR 8      /* u32 the first depth */
#define BK_GROW_P_RESERVED 12  /* u32 0 */
#define BK_GROW_P_COUNT 16     /* u64 fingerprints stored (tables + stash) */
#define BK_GROW_P_MAX_LOAD 24  /* f64 */
#define BK_GROW_P_NSTASH 32    /* u32 */
#define BK_GROW_P_RESERVED2 36 /* u32 0 */
#define BK_GROW_P_NBUCKETS 40  /* u64 2^q0 + 2^q1 (checked) */
#define BK_GROW_P_STASH 48     /* 16 x u64 full hashes; past nstash zero */
#define BK_GROW_P_CAPACITY 176 /* u64 the initial (design) capacity */
#define BK_GROW_P_ERROR_RATE 184 /* f64 the design rate max_load was chosen for */
#define BK_GROW_PARAMS_LEN 192u
#define BK_GROW_HEADER_LEN 256u /* 64 fixed + 192 params */

struct bk_grow;
/* Make the payload (the buckets) `len` bytes, keeping its first bytes and
 * the parameter block, and point g->params / g->buckets at the new place;
 * BK_ERR_NOMEM when it cannot (nothing changed then). */
typedef bk_rc (*bk_grow_resize_fn)(struct bk_grow *g, uint64_t len, void *ctx);

/* A view of a state: the parameter block and the payload, which is table
 * 0's 2^q0 buckets then table 1's 2^q1, 64 bytes each.  The fields below
 * params mirror it (bk_grow_attach reads them, every change writes them
 * back). */
typedef struct bk_grow {
    uint8_t *params;
    uint8_t *buckets;
    bk_grow_resize_fn resize; /* NULL: the state cannot grow (a mapped file) */
    void *ctx;
    uint32_t q[2], floor, nstash;
    uint64_t count;
    double max_load;
} bk_grow;

/* The max_load that keeps the false-positive rate at or below error_rate
 * up to `doublings` doublings of the filter (the bound of bk_grow.c's
 * essay, max_load * 2^-10 * (1.8 + 1.15 g)), at most 0.9; 0 when that
 * would be below 0.05 (the rate is too small for 16-bit slots). */
double bk_grow_max_load(double error_rate, double doublings);

/* ---- Begin logic for locating a key (shared with bk_simd.c) ----------- */

#define BK_GROW_K1 UINT64_C(0x9E3779B97F4A7C15) /* x1 = h * K1: odd, a bijection */
#define BK_GROW_AHEAD 16u /* batch queries: keys located and prefetched ahead (2^k) */

/* Table t's first bucket. */
BK_INLINE uint8_t *bk_grow_table(const bk_grow *g, unsigned t)
{
    return t ? g->buckets + ((UINT64_C(1) << g->q[0]) * BK_GROW_BUCKET_BYTES) : g->buckets;
}

/* The key's value for table t: x0 = h, x1 = h * K1. */
BK_INLINE uint64_t bk_grow_x(uint64_t h, unsigned t)
{
    return t ? h * BK_GROW_K1 : h;
}

/* The bucket of value x in table t (its top d = q[t] bits; (x >> 1) >>
 * (63 - d) is 0 for d = 0 without a shift by 64) and the 16 query bits
 * below them. */
BK_INLINE const uint8_t *bk_grow_locate(const bk_grow *g, unsigned t, uint64_t x, uint16_t *fp)
{
    unsigned d = g->q[t];
    *fp = (uint16_t)((x << d) >> 48);
    return bk_grow_table(g, t) + ((x >> 1) >> (63 - d)) * BK_GROW_BUCKET_BYTES;
}

/* 1 when the stash holds h exactly (inline: bk_simd.c uses it without
 * linking bk_grow.c). */
BK_INLINE int bk_grow_stash_contains(const bk_grow *g, uint64_t h)
{
    uint32_t i;
    for (i = 0; i < g->nstash; i++)
        if (bk_load_u64le(g->params + BK_GROW_P_STASH + 8 * i) == h)
            return 1;
    return 0;
}

/* ---- End logic for locating a key ------------------------------------ */

/* Shape of a new filter for `capacity` keys: the smallest 2 * 2^q or
 * 3 * 2^q buckets holding capacity at max_load (in [0.05, 1]); BK_ERR_ARG
 * with *reason otherwise. */
bk_rc bk_grow_shape(uint64_t capacity, double max_load, uint32_t *q0, uint32_t *q1,
                    uint64_t *payload_len, const char **reason);
/* Write a fresh parameter block (its first 176 bytes: the design fields
 * past them are the container's; payload zeroed by the caller). */
void bk_grow_init_params(uint8_t *params, uint32_t q0, uint32_t q1, double max_load);
/* Payload bytes of a parameter block's shape (0 when the levels are out of
 * range). */
uint64_t bk_grow_payload_len(uint32_t q0, uint32_t q1);
/* View a state (validated, or fresh). */
void bk_grow_attach(bk_grow *g, uint8_t *params, uint8_t *buckets);
uint64_t bk_grow_nbuckets(const bk_grow *g);

/* 1 if h may have been added, 0 if surely not. */
int bk_grow_contains(const bk_grow *g, uint64_t h);
/* Adds h unless it already answers present (*added = 0 then); doubles a
 * table (through g->resize) as the load requires.  BK_ERR_CAPACITY when
 * the filter has grown BK_GROW_MAX_DOUBLINGS doublings past its first
 * depth or cannot grow (no resize), BK_ERR_NOMEM when the resize fails;
 * membership is unchanged on every error. */
bk_rc bk_grow_add(bk_grow *g, uint64_t h, int *added);
/* Batches: out[i] = contains(hs[i]), prefetching ahead; add_many stops at
 * the first error (the keys before it stay added) and counts new keys. */
void bk_grow_contains_many(const bk_grow *g, const uint64_t *hs, size_t n, uint8_t *out);
bk_rc bk_grow_add_many(bk_grow *g, const uint64_t *hs, size_t n, uint64_t *added);

/* The false-positive rate of a random absent key under the current
 * contents: each entry of L fingerprint bits in table t matches a random
 * key's value with probability 2^-(q[t] + L); summed exactly over both
 * tables, plus the stash (2^-64 per entry). */
double bk_grow_estimate_fpr(const bk_grow *g);

/* ---- Begin logic for the container (kind BK_KIND_GROWABLE) ---------- */

/* A fresh state in buf (BK_GROW_HEADER_LEN + payload_len bytes from
 * bk_grow_shape, payload zeroed): header, parameters. */
void bk_grow_init_state(uint8_t *buf, uint32_t q0, uint32_t q1, double max_load,
                        uint64_t capacity, double error_rate, uint64_t seed, int keyed,
                        uint64_t key_check);
/* View a validated state (resize and ctx are the caller's to set). */
void bk_grow_attach_state(bk_grow *g, uint8_t *buf);
/* The kind validator (bk_format.c): parameters, payload length and, with
 * BK_CHECK_DEEP, every bucket. */
bk_rc bk_grow_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                       int checks, const char **reason);

/* ---- End logic for the container -------------------------------------- */

/* Checks the parameter block against a payload of payload_len bytes (and,
 * with deep, every bucket); BK_ERR_FORMAT and *reason. */
bk_rc bk_grow_check(const uint8_t *params, uint32_t params_len, const uint8_t *payload,
                    uint64_t payload_len, int deep, const char **reason);

#ifdef __cplusplus
}
#endif

#endif /* BK_GROW_H */
