/*
 * bk_cuckoo.h -- the cuckoo filter (core).
 *
 * The per-key lookup is inline here (the CPython glue calls it once per
 * `x in f`); bk_cuckoo.c holds the essay, insertion with bounded kicks and
 * undo, removal, the batch paths, union and the validator.
 */
#ifndef BK_CUCKOO_H
#define BK_CUCKOO_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"
#include "bk_hash.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_CUCKOO_P_NUM_BUCKETS 0   /* u64 nb, 1..2^32 */
#define BK_CUCKOO_P_BUCKET_SIZE 8   /* u32 b, 1..8 */
#define BK_CUCKOO_P_FP_BITS 12      /* u32 f, 8..32 */
#define BK_CUCKOO_P_CAPACITY 16     /* u64 design capacity n, 1..2^48 */
#define BK_CUCKOO_P_ERROR_RATE 24   /* f64 design error rate p, (0, 1) */
#define BK_CUCKOO_P_COUNT 32        /* u64 fingerprints stored (table + stash) */
#define BK_CUCKOO_P_MAX_KICKS 40    /* u32 relocations per insert, 1..BK_CUCKOO_KICKS_LIMIT */
#define BK_CUCKOO_P_STASH_COUNT 44  /* u32 stash entries in use, 0..BK_CUCKOO_STASH_MAX */
#define BK_CUCKOO_P_STASH 48        /* STASH_MAX x {u64 bucket, u32 fp, u32 0} */
#define BK_CUCKOO_STASH_ENTRY 16
#define BK_CUCKOO_STASH_MAX 8u      /* must be >= 1; small: every lookup may scan it */
#define BK_CUCKOO_PARAMS_LEN (BK_CUCKOO_P_STASH + BK_CUCKOO_STASH_MAX * BK_CUCKOO_STASH_ENTRY)
#define BK_CUCKOO_HEADER_LEN 256    /* 64 fixed + 176 params, rounded to 64 */

#define BK_CUCKOO_MAX_BUCKETS (1ULL << 32) /* keeps i1 and fp independent, see essay */
#define BK_CUCKOO_MAX_B 8u
#define BK_CUCKOO_MIN_F 8u
#define BK_CUCKOO_MAX_F 32u                /* f + 7 shift bits fit one 64-bit load */
#define BK_CUCKOO_DEFAULT_KICKS 500u
#define BK_CUCKOO_KICKS_LIMIT 1000u        /* bounds the undo log (on the stack) */
#define BK_CUCKOO_GUARD 8u                 /* zero bytes after the table (unaligned loads) */

typedef struct {
    uint8_t *table;       /* payload: nb * b slots of f bits, packed LE */
    uint8_t *params;      /* the params area (count and stash live there) */
    uint64_t num_buckets; /* nb */
    uint64_t table_bits;  /* nb * b * f */
    uint64_t fmask;       /* (1 << f) - 1 */
    uint64_t lanes_lo;    /* SWAR: bit 0 of every lane of a bucket */
    uint64_t lanes_hi;    /* SWAR: top bit of every lane */
    uint64_t bmask;       /* SWAR: the b * f bits of a bucket */
    uint32_t b, f;
    uint32_t bucket_bits; /* b * f */
    uint32_t max_kicks;
    int swar;             /* b * f + 7 <= 64: one load reads a whole bucket */
} bk_cuckoo;

/* Payload size for a shape; BK_ERR_ARG (with *reason) for invalid shapes. */
bk_rc bk_cuckoo_shape(uint64_t num_buckets, uint32_t b, uint32_t f, uint64_t *payload_len,
                      const char **reason);

/* Write a fresh header and parameter block into buf (BK_CUCKOO_HEADER_LEN +
 * payload_len bytes, payload zeroed). */
void bk_cuckoo_init_state(uint8_t *buf, uint64_t num_buckets, uint32_t b, uint32_t f,
                          uint64_t capacity, double error_rate, uint64_t seed, int keyed,
                          uint64_t key_check);

/* View of a validated state buffer. */
void bk_cuckoo_attach(bk_cuckoo *c, uint8_t *buf);

bk_rc bk_cuckoo_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                         int checks, const char **reason);

/* ---- Begin logic for the per-key lookup ------------------------------- */

/* From the key hash h: the first bucket (high bits) and the fingerprint
 * (low 32 bits, mapped onto [1, 2^f - 1]; 0 marks an empty slot). */
BK_INLINE uint64_t bk_cuckoo_index(const bk_cuckoo *c, uint64_t h)
{
    return bk_mulhi64(h, c->num_buckets);
}

BK_INLINE uint32_t bk_cuckoo_fingerprint(const bk_cuckoo *c, uint64_t h)
{
    return (uint32_t)(1 + (((h & 0xFFFFFFFFULL) * c->fmask) >> 32));
}

/* The alternate bucket: alt(i) = (H - i) mod nb with H = hash(fp) mod nb.
 * An involution for every nb (alt(alt(i)) == i), so no power-of-two table. */
BK_INLINE uint64_t bk_cuckoo_alt(const bk_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint64_t H = bk_mulhi64(bk_mix64((uint64_t)fp), c->num_buckets);
    return H >= i ? H - i : H + c->num_buckets - i;
}

BK_INLINE uint64_t bk_cuckoo_load_bits(const bk_cuckoo *c, uint64_t bitpos)
{
    return bk_load_u64le(c->table + (bitpos >> 3)) >> (bitpos & 7);
}

BK_INLINE uint32_t bk_cuckoo_get(const bk_cuckoo *c, uint64_t i, uint32_t s)
{
    return (uint32_t)(bk_cuckoo_load_bits(c, (i * c->b + s) * c->f) & c->fmask);
}

BK_INLINE void bk_cuckoo_set(bk_cuckoo *c, uint64_t i, uint32_t s, uint32_t v)
{
    uint64_t pos = (i * c->b + s) * c->f;
    uint8_t *p = c->table + (pos >> 3);
    unsigned sh = (unsigned)(pos & 7);
    uint64_t w = bk_load_u64le(p);
    w = (w & ~(c->fmask << sh)) | ((uint64_t)v << sh);
    bk_store_u64le(p, w);
}

/* Does bucket i hold fingerprint fp? */
BK_INLINE int bk_cuckoo_bucket_has(const bk_cuckoo *c, uint64_t i, uint32_t fp)
{
    if (BK_LIKELY(c->swar)) {
        uint64_t x = (bk_cuckoo_load_bits(c, i * c->bucket_bits) & c->bmask) ^
                     ((uint64_t)fp * c->lanes_lo);
        /* "has a zero lane": exact for the existence of a zero lane */
        return ((x - c->lanes_lo) & ~x & c->lanes_hi) != 0;
    }
    for (uint32_t s = 0; s < c->b; s++)
        if (bk_cuckoo_get(c, i, s) == fp)
            return 1;
    return 0;
}

BK_INLINE uint32_t bk_cuckoo_stash_count(const bk_cuckoo *c)
{
    return bk_load_u32le(c->params + BK_CUCKOO_P_STASH_COUNT);
}

int bk_cuckoo_stash_has(const bk_cuckoo *c, uint32_t fp, uint64_t i1, uint64_t i2);

BK_INLINE int bk_cuckoo_contains(const bk_cuckoo *c, uint64_t h)
{
    uint64_t i1 = bk_cuckoo_index(c, h);
    uint32_t fp = bk_cuckoo_fingerprint(c, h);
    uint64_t i2;
    if (bk_cuckoo_bucket_has(c, i1, fp))
        return 1;
    i2 = bk_cuckoo_alt(c, i1, fp);
    if (bk_cuckoo_bucket_has(c, i2, fp))
        return 1;
    return BK_UNLIKELY(bk_cuckoo_stash_count(c) != 0) && bk_cuckoo_stash_has(c, fp, i1, i2);
}

/* ---- End logic for the per-key lookup --------------------------------- */

/* Insert one copy of the key.  *was_new is set when no copy was found
 * before.  BK_ERR_CAPACITY: the table and stash are full (or the key
 * already has 2b copies); the state is then byte-for-byte unchanged. */
bk_rc bk_cuckoo_add(bk_cuckoo *c, uint64_t h, int *was_new);

/* Remove one copy; BK_ERR_NOTFOUND (state unchanged) when none matches. */
bk_rc bk_cuckoo_remove(bk_cuckoo *c, uint64_t h);

/* Copies of the key's fingerprint in its buckets and the stash (<= 2b + stash). */
uint32_t bk_cuckoo_count(const bk_cuckoo *c, uint64_t h);

/* Batch paths (prefetching).  add_many stops at the first failure: *done
 * receives how many keys were inserted; returns BK_OK or BK_ERR_CAPACITY. */
bk_rc bk_cuckoo_add_many(bk_cuckoo *c, const uint64_t *hs, size_t n, size_t *done,
                         uint64_t *added_new);
void bk_cuckoo_contains_many(const bk_cuckoo *c, const uint64_t *hs, size_t n, uint8_t *out);

/* Insert every fingerprint of src (same shape; the caller checks) into dst.
 * On BK_ERR_CAPACITY dst is partly merged: the caller restores a backup. */
bk_rc bk_cuckoo_merge(bk_cuckoo *dst, const bk_cuckoo *src);

uint64_t bk_cuckoo_get_count(const bk_cuckoo *c);
void bk_cuckoo_clear(bk_cuckoo *c);

#endif /* BK_CUCKOO_H */
