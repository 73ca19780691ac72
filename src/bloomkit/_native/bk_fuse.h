/*
 * bk_fuse.h -- the binary fuse filter (core): a static set, built once.
 *
 * The per-key lookup is inline here (the CPython glue calls it once per
 * `x in f`); bk_fuse.c holds the essay, the sizing, the construction
 * (peeling) and the validator.
 */
#ifndef BK_FUSE_H
#define BK_FUSE_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"
#include "bk_hash.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_FUSE_P_ARITY 0           /* u32 k, 3 or 4 */
#define BK_FUSE_P_FP_BITS 4         /* u32 f, 8, 16 or 32 */
#define BK_FUSE_P_FUSE_SEED 8       /* u64 the internal seed that peeled */
#define BK_FUSE_P_SEGMENT_LENGTH 16 /* u32 L, a power of two in [1, 2^18] */
#define BK_FUSE_P_SEGMENT_COUNT 20  /* u32 S: 0 (empty set) or >= 1 */
#define BK_FUSE_P_ARRAY_LENGTH 24   /* u64 (S + k - 1) L, or 0 when S = 0 */
#define BK_FUSE_P_COUNT 32          /* u64 distinct keys, <= array_length */
#define BK_FUSE_P_ATTEMPTS 40       /* u32 seeds tried, 1..BK_FUSE_MAX_ATTEMPTS (0: empty) */
#define BK_FUSE_P_RESERVED 44       /* u32 0 */
#define BK_FUSE_PARAMS_LEN 48
#define BK_FUSE_HEADER_LEN 128      /* 64 fixed + 48 params, rounded to 64 */

#define BK_FUSE_MAX_SEGMENT_LENGTH (1u << 18) /* offsets use 18 hash bits each */
#define BK_FUSE_MAX_SLOTS 0xFFFFFFFFull       /* construction queue holds u32 slots */
#define BK_FUSE_MAX_ATTEMPTS 64u              /* seeds tried before giving up */
#define BK_FUSE_ARITY4_BELOW (1ull << 17)     /* n < 2^17: 4-wise, else 3-wise */

typedef struct {
    const uint8_t *fps;         /* payload: array_length fingerprints of f bits, LE */
    uint64_t fuse_seed;
    uint64_t array_length;
    uint64_t seg_count_length;  /* S * L: range of the first position */
    uint64_t count;
    uint32_t segment_length, segment_mask; /* L, L - 1 */
    uint32_t segment_count;
    uint32_t arity, f;
} bk_fuse;

/* The shape chosen for n distinct keys (bk_fuse_size). */
typedef struct {
    uint32_t arity, segment_length, segment_count;
    uint64_t array_length;
} bk_fuse_shape;

/* Sizing after Graf and Lemire (2022), see bk_fuse.c.  BK_ERR_ARG (with
 * *reason) when n needs more than BK_FUSE_MAX_SLOTS slots. */
bk_rc bk_fuse_size(uint64_t n, bk_fuse_shape *s, const char **reason);

/* Construction, in two steps so that the caller can allocate the state
 * once the payload size is known:
 *
 *   bk_fuse_work w;
 *   bk_fuse_peel(&w, hashes, n, f, &reason)   finds a shape and a seed
 *   ... allocate BK_FUSE_HEADER_LEN + bk_fuse_payload_len(&w) bytes ...
 *   bk_fuse_init_state(buf, &w, seed, keyed, key_check)
 *   bk_fuse_assign(&w, buf + BK_FUSE_HEADER_LEN)  writes the fingerprints
 *   bk_fuse_work_free(&w)                         (always; also on error)
 *
 * `hashes` is reordered and deduplicated in place when the input holds
 * duplicates (or a seed fails).  Neither step touches Python; peel and
 * assign may run without the GIL.  Working memory: 13 bytes a slot
 * (about 14.6 bytes a key) besides the caller's 8 bytes a key of hashes.
 * BK_ERR_NOMEM, BK_ERR_ARG (too many keys) or BK_ERR_CAPACITY (no seed
 * peeled in BK_FUSE_MAX_ATTEMPTS tries) with *reason. */
typedef struct {
    bk_fuse_shape shape;
    uint32_t f, attempts;
    uint64_t fuse_seed;
    uint64_t count;      /* distinct keys */
    uint64_t *t2hash;    /* per slot: XOR of the hashes mapped there */
    uint8_t *t2count;    /* per slot: how many hashes are mapped there */
    uint32_t *order;     /* queue of lone slots, then the peeling order */
    uint64_t alloc_slots;
} bk_fuse_work;

bk_rc bk_fuse_peel(bk_fuse_work *w, uint64_t *hashes, size_t n, uint32_t f,
                   const char **reason);
uint64_t bk_fuse_payload_len(const bk_fuse_work *w);
void bk_fuse_init_state(uint8_t *buf, const bk_fuse_work *w, uint64_t seed, int keyed,
                        uint64_t key_check);
void bk_fuse_assign(const bk_fuse_work *w, uint8_t *payload);
void bk_fuse_work_free(bk_fuse_work *w);

/* View of a validated state buffer. */
void bk_fuse_attach(bk_fuse *fu, const uint8_t *buf);

bk_rc bk_fuse_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                       int checks, const char **reason);

/* ---- Begin logic for the per-key lookup ------------------------------- */

/* The filter's own hash of a key hash: a bijection for every seed, so
 * distinct key hashes stay distinct. */
BK_INLINE uint64_t bk_fuse_mix(uint64_t key_hash, uint64_t fuse_seed)
{
    return bk_mix64(key_hash + fuse_seed);
}

/* The f low bits of h ^ (h >> 32) (the caller masks or truncates). */
BK_INLINE uint32_t bk_fuse_fingerprint(uint64_t h)
{
    return (uint32_t)(h ^ (h >> 32));
}

/* The k positions of h: p0 in the first S segments, p_j in segment
 * seg(p0) + j at an offset given by 18 further bits of h. */
BK_INLINE void bk_fuse_positions(const bk_fuse *fu, uint64_t h, uint64_t p[4])
{
    uint64_t p0 = bk_mulhi64(h, fu->seg_count_length), L = fu->segment_length;
    uint64_t m = fu->segment_mask;
    p[0] = p0;
    p[1] = (p0 + L) ^ ((h >> 18) & m);
    p[2] = (p0 + 2 * L) ^ (h & m);
    p[3] = (p0 + 3 * L) ^ ((h >> 36) & m); /* used by 4-wise filters only */
}

BK_INLINE uint32_t bk_fuse_get(const bk_fuse *fu, uint64_t i)
{
    switch (fu->f) {
    case 8:
        return fu->fps[i];
    case 16:
        return bk_load_u16le(fu->fps + 2 * i);
    default:
        return bk_load_u32le(fu->fps + 4 * i);
    }
}

BK_INLINE int bk_fuse_contains(const bk_fuse *fu, uint64_t key_hash)
{
    uint64_t h, p[4];
    uint32_t v, fmask;
    if (BK_UNLIKELY(fu->array_length == 0))
        return 0;
    h = bk_fuse_mix(key_hash, fu->fuse_seed);
    bk_fuse_positions(fu, h, p);
    fmask = fu->f == 32 ? 0xFFFFFFFFu : (1u << fu->f) - 1;
    v = bk_fuse_fingerprint(h) ^ bk_fuse_get(fu, p[0]) ^ bk_fuse_get(fu, p[1]) ^
        bk_fuse_get(fu, p[2]);
    if (fu->arity == 4)
        v ^= bk_fuse_get(fu, p[3]);
    return (v & fmask) == 0;
}

/* ---- End logic for the per-key lookup --------------------------------- */

void bk_fuse_contains_many(const bk_fuse *fu, const uint64_t *hs, size_t n, uint8_t *out);

#endif /* BK_FUSE_H */
