/*
 * bk_cuckoo.h -- the cuckoo filter (core).
 *
 * The per-key lookup and the common cases of add and remove (one-word
 * buckets, a free slot / an empty stash) are inline here: the CPython glue
 * calls them once per `x in f`, `f.add(x)`, `f.remove(x)`.  bk_cuckoo.c
 * holds the essay, insertion with bounded kicks and undo, the general
 * removal, the batch paths, union and the validator.
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

/* SWAR on one bucket (tables with c->swar: b * f + 7 <= 64).  A bucket is
 * the word w of its b * f bits, lane s = slot s.  zero_lanes(w) is the
 * classic "has a zero lane" test, (w - lo) & ~w & hi: it is non-zero iff
 * some lane is zero, and its LOWEST set bit is exactly the top bit of the
 * lowest zero lane (below that lane no borrow is generated, so no lane
 * below reports; lanes above may report falsely, which we never use).  So
 * ctz gives the first empty slot, and zero_lanes(w ^ fp * lo) the first
 * slot holding fp: the very slots the scalar loops pick, bit for bit. */
BK_INLINE unsigned bk_cuckoo_ctz64(uint64_t x)
{
    return bk_ctz64(x); /* x != 0 here: some lane reported */
}

/* The bucket starting at bit position pos (= i * b * f), as one word. */
BK_INLINE uint64_t bk_cuckoo_word(const bk_cuckoo *c, uint64_t pos)
{
    return bk_cuckoo_load_bits(c, pos) & c->bmask;
}

BK_INLINE uint64_t bk_cuckoo_zero_lanes(const bk_cuckoo *c, uint64_t w)
{
    return (w - c->lanes_lo) & ~w & c->lanes_hi;
}

/* Bit position of the slot whose lane top bit is the lowest set bit of z
 * (z != 0), in the bucket starting at pos. */
BK_INLINE uint64_t bk_cuckoo_lane_pos(const bk_cuckoo *c, uint64_t pos, uint64_t z)
{
    return pos + bk_cuckoo_ctz64(z) - (c->f - 1);
}

/* OR v into the (empty) slot at bit position pos, or clear it (v = 0). */
BK_INLINE void bk_cuckoo_or_at(bk_cuckoo *c, uint64_t pos, uint32_t v)
{
    uint8_t *p = c->table + (pos >> 3);
    bk_store_u64le(p, bk_load_u64le(p) | ((uint64_t)v << (pos & 7)));
}

BK_INLINE void bk_cuckoo_clear_at(bk_cuckoo *c, uint64_t pos)
{
    uint8_t *p = c->table + (pos >> 3);
    bk_store_u64le(p, bk_load_u64le(p) & ~(c->fmask << (pos & 7)));
}

/* Does bucket i hold fingerprint fp? */
BK_INLINE int bk_cuckoo_bucket_has(const bk_cuckoo *c, uint64_t i, uint32_t fp)
{
    if (BK_LIKELY(c->swar))
        return bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, i * c->bucket_bits) ^
                                           ((uint64_t)fp * c->lanes_lo)) != 0;
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
    if (BK_LIKELY(c->swar)) {
        /* Both buckets, no branch between them: a present key sits in
         * either one about as often, which a branch would mispredict. */
        uint64_t rep = (uint64_t)fp * c->lanes_lo;
        i2 = bk_cuckoo_alt(c, i1, fp);
        if ((bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, i1 * c->bucket_bits) ^ rep) |
             bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, i2 * c->bucket_bits) ^ rep)) != 0)
            return 1;
        return BK_UNLIKELY(bk_cuckoo_stash_count(c) != 0) && bk_cuckoo_stash_has(c, fp, i1, i2);
    }
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
 * already has 2b copies); the state is then byte-for-byte unchanged.
 * The inline part is the common case of a SWAR table with a free slot in
 * either bucket (first free slot of i1, else of i2: the same slot the
 * general path picks); everything else is bk_cuckoo_add_slow. */
bk_rc bk_cuckoo_add_slow(bk_cuckoo *c, uint64_t h, int *was_new);

BK_INLINE bk_rc bk_cuckoo_add(bk_cuckoo *c, uint64_t h, int *was_new)
{
    if (BK_LIKELY(c->swar)) {
        uint64_t i1 = bk_cuckoo_index(c, h);
        uint32_t fp = bk_cuckoo_fingerprint(c, h);
        uint64_t i2 = bk_cuckoo_alt(c, i1, fp);
        uint64_t p1 = i1 * c->bucket_bits, p2 = i2 * c->bucket_bits, pos;
        uint64_t w1 = bk_cuckoo_word(c, p1), w2 = bk_cuckoo_word(c, p2);
        uint64_t rep = (uint64_t)fp * c->lanes_lo;
        uint64_t z1 = bk_cuckoo_zero_lanes(c, w1), z2 = bk_cuckoo_zero_lanes(c, w2);
        if (BK_UNLIKELY((z1 | z2) == 0))
            return bk_cuckoo_add_slow(c, h, was_new); /* both full: kicks */
        int fresh = (bk_cuckoo_zero_lanes(c, w1 ^ rep) | bk_cuckoo_zero_lanes(c, w2 ^ rep)) == 0;
        if (BK_UNLIKELY(bk_cuckoo_stash_count(c) != 0) && fresh)
            fresh = !bk_cuckoo_stash_has(c, fp, i1, i2);
        *was_new = fresh;
        /* i1 when it has a free slot, else i2: selects, not branches */
        pos = z1 ? p1 : p2;
        z1 = z1 ? z1 : z2;
        bk_cuckoo_or_at(c, bk_cuckoo_lane_pos(c, pos, z1), fp);
        bk_store_u64le(c->params + BK_CUCKOO_P_COUNT,
                       bk_load_u64le(c->params + BK_CUCKOO_P_COUNT) + 1);
        return BK_OK;
    }
    return bk_cuckoo_add_slow(c, h, was_new);
}

/* Remove one copy; BK_ERR_NOTFOUND (state unchanged) when none matches.
 * Inline: SWAR tables with an empty stash (first copy in i1, else in i2,
 * as the general path); the rest is bk_cuckoo_remove_slow. */
bk_rc bk_cuckoo_remove_slow(bk_cuckoo *c, uint64_t h);

BK_INLINE bk_rc bk_cuckoo_remove(bk_cuckoo *c, uint64_t h)
{
    if (BK_LIKELY(c->swar) && BK_LIKELY(bk_cuckoo_stash_count(c) == 0)) {
        uint64_t i1 = bk_cuckoo_index(c, h);
        uint32_t fp = bk_cuckoo_fingerprint(c, h);
        uint64_t i2 = bk_cuckoo_alt(c, i1, fp);
        uint64_t p1 = i1 * c->bucket_bits, p2 = i2 * c->bucket_bits, n;
        uint64_t rep = (uint64_t)fp * c->lanes_lo;
        uint64_t m1 = bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, p1) ^ rep);
        uint64_t m2 = bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, p2) ^ rep);
        if ((m1 | m2) == 0)
            return BK_ERR_NOTFOUND;
        bk_cuckoo_clear_at(c, m1 ? bk_cuckoo_lane_pos(c, p1, m1) : bk_cuckoo_lane_pos(c, p2, m2));
        n = bk_load_u64le(c->params + BK_CUCKOO_P_COUNT);
        if (n > 0) /* a hostile unverified count never wraps */
            bk_store_u64le(c->params + BK_CUCKOO_P_COUNT, n - 1);
        return BK_OK;
    }
    return bk_cuckoo_remove_slow(c, h);
}

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
/* Store as count the fingerprints really held (non-zero slots + stash):
 * the repair of a file whose writer was killed between a slot write and
 * the count update.  O(table). */
void bk_cuckoo_recount(bk_cuckoo *c);
void bk_cuckoo_clear(bk_cuckoo *c);

/* The table's fill: fingerprints in its slots / slots, in [0, 1] (the
 * stash's entries, counted in count, are not slots of the table). */
double bk_cuckoo_table_load(const bk_cuckoo *c);
/* 1 - (1 - 1/(2^f - 1))^(2 b load): the chance that one of the 2b slots a
 * query reads holds its fingerprint, at the current load. */
double bk_cuckoo_estimate_error_rate(const bk_cuckoo *c);

#endif /* BK_CUCKOO_H */
