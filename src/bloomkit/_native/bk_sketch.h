/*
 * bk_sketch.h -- the count-min sketch (kind 7) and the TinyLFU frequency
 * sketch (kind 8).  See bk_sketch.c (count-min) and bk_sketch_tlfu.c
 * (TinyLFU) for the essays and the byte layouts.
 */
#ifndef BK_SKETCH_H
#define BK_SKETCH_H

#include "bk_common.h"
#include "bk_endian.h"
#include "bk_format.h"
#include "bk_hash.h"

/* ---- Count-min sketch ------------------------------------------------- */

/* Parameter block (offsets from the params area at byte 64). */
#define BK_CMS_P_WIDTH 0        /* u64 w, counters per row, [1, 2^32] */
#define BK_CMS_P_DEPTH 8        /* u32 d, rows, [1, 64] */
#define BK_CMS_P_COUNTER_BITS 12 /* u32 32 or 64 */
#define BK_CMS_P_OPTIONS 16     /* u32 bit0: conservative update */
#define BK_CMS_P_ROW_HASH 20    /* u32 how rows derive from h: BK_CMS_ROWS_* */
#define BK_CMS_P_TOTAL 24       /* u64 sum of all counts added (saturating) */
#define BK_CMS_PARAMS_LEN 32
#define BK_CMS_HEADER_LEN 128

/* Row derivations (the u32 at params +20, which format 1.0 files hold as a
 * reserved 0, so every sketch written before #16.5 reads as DOUBLE and
 * keeps its positions; a reader that predates the field refuses 1 as a
 * "reserved" field instead of answering from the wrong counters). */
#define BK_CMS_ROWS_DOUBLE 0u   /* enhanced double hashing of h (before #16.5) */
#define BK_CMS_ROWS_MIXED 1u    /* row i: mix64(h + (i + 1) * golden), see bk_sketch.c */
#define BK_CMS_ROWS_LATEST BK_CMS_ROWS_MIXED /* what new sketches use; must be the max */

#define BK_CMS_OPT_CONSERVATIVE 0x1u
#define BK_CMS_OPTS_KNOWN BK_CMS_OPT_CONSERVATIVE
#define BK_CMS_MAX_WIDTH (1ULL << 32)
#define BK_CMS_MAX_DEPTH 64u
#define BK_CMS_MAX_PAYLOAD (1ULL << 40)   /* 1 TiB of counters */

typedef struct {
    uint8_t *counters;   /* payload: depth rows of width counters, LE */
    uint64_t width;
    uint32_t depth;
    uint32_t bytes;      /* 4 or 8 per counter */
    int conservative;
    uint32_t rows;       /* BK_CMS_ROWS_DOUBLE or BK_CMS_ROWS_MIXED */
    uint64_t max;        /* UINT32_MAX or UINT64_MAX */
} bk_cms;

bk_rc bk_sketch_cms_shape(uint64_t width, uint32_t depth, uint32_t counter_bits, uint64_t *payload_len,
                   const char **reason);
void bk_sketch_cms_init_state(uint8_t *buf, uint64_t width, uint32_t depth, uint32_t counter_bits,
                       int conservative, uint32_t rows, uint64_t seed, int keyed,
                       uint64_t key_check);
void bk_sketch_cms_attach(bk_cms *c, uint8_t *buf);
bk_rc bk_sketch_cms_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                      int checks, const char **reason);

/* Flat counter index (row * width + column) of row i, for i in [0, depth),
 * from the one 64-bit key hash h:
 *   BK_CMS_ROWS_MIXED   column i = mulhi(mix64(h + (i + 1) * 0x9E3779B97F4A7C15), width)
 *   BK_CMS_ROWS_DOUBLE  column i = mulhi(x_i, width), x0 = h, y0 = mix64(h),
 *                       x_{i+1} = x_i + y_i, y_{i+1} = y_i + i (old files). */
void bk_sketch_cms_positions(const bk_cms *c, uint64_t h, uint64_t *out);

/* Add count to the key of hash h (saturating).  atomic: relaxed CAS loops
 * (shared mmap, GIL-free batches).  Returns nothing: nothing can fail. */
void bk_sketch_cms_add(bk_cms *c, uint64_t h, uint64_t count, int atomic);
uint64_t bk_sketch_cms_estimate(const bk_cms *c, uint64_t h);

/* bk_sketch_cms_add then bk_sketch_cms_estimate of the same key, positions derived
 * once: the key's estimate right after its add (what TopK offers). */
uint64_t bk_sketch_cms_add_estimate(bk_cms *c, uint64_t h, uint64_t count, int atomic);
/* The same for hs[0..n) in order, count 1 each, est[j] the estimate after
 * key j's add: equal to n calls of bk_sketch_cms_add_estimate(c, hs[j], 1,
 * atomic), but the plain (non-atomic, non-conservative) loop prefetches
 * the counters of the keys a few places ahead. */
void bk_sketch_cms_add_estimate_many(bk_cms *c, const uint64_t *hs, size_t n, int atomic,
                              uint64_t *est);
/* The same with counts[j] for key j (TopK.update adds each distinct key
 * of a chunk once): counters equal to n bk_sketch_cms_add calls; est[j]
 * the estimate right after key j's add. */
void bk_sketch_cms_add_estimate_counts(bk_cms *c, const uint64_t *hs, const uint32_t *counts,
                                       size_t n, int atomic, uint64_t *est);

/* dst += src counter by counter.  saturate == 0: first check that no sum
 * exceeds the counter maximum; if one would, return BK_ERR_CAPACITY and
 * leave dst unchanged.  saturate != 0: sums clamp at the maximum. */
bk_rc bk_sketch_cms_merge(bk_cms *dst, const bk_cms *src, int saturate);

/* Saturating 64-bit addition. */
BK_INLINE uint64_t bk_sat_add64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return bk_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- TinyLFU ---------------------------------------------------------- */

#define BK_TLFU_P_CAPACITY 0       /* u64 capacity n, [1, 2^40] */
#define BK_TLFU_P_SAMPLE_FACTOR 8  /* u32 sample_factor, [1, 1024] */
#define BK_TLFU_P_DOOR_K 12        /* u32 doorkeeper probes (3) */
#define BK_TLFU_P_NUM_BLOCKS 16    /* u64 64-byte counter blocks */
#define BK_TLFU_P_DOOR_BLOCKS 24   /* u64 512-bit doorkeeper blocks */
#define BK_TLFU_P_EVENTS 32        /* u64 events since the last aging, < sample size */
#define BK_TLFU_P_RESETS 40        /* u64 agings so far */
#define BK_TLFU_P_RESERVED 48      /* u64 0 */
#define BK_TLFU_PARAMS_LEN 56
#define BK_TLFU_HEADER_LEN 128

#define BK_TLFU_MAX_CAPACITY (1ULL << 40)
#define BK_TLFU_MAX_SAMPLE_FACTOR 1024u
#define BK_TLFU_DOOR_K 3u          /* doorkeeper probes per key; 4 bits/event => k = 3 */
#define BK_TLFU_DOOR_BITS_PER_EVENT 4u /* doorkeeper bits per sampled event */
#define BK_TLFU_COUNTER_MAX 15u

typedef struct {
    uint8_t *buf;        /* the whole state (events live in the params) */
    uint64_t *blocks;    /* counter blocks: 8 u64 LE words = 128 nibbles */
    uint64_t num_blocks;
    uint64_t *door;      /* doorkeeper: door_blocks blocks of 8 words */
    uint64_t door_blocks;
    uint64_t sample_size;
} bk_tlfu;

bk_rc bk_sketch_tlfu_shape(uint64_t capacity, uint32_t sample_factor, uint64_t *num_blocks,
                    uint64_t *door_blocks, uint64_t *payload_len, const char **reason);
void bk_sketch_tlfu_init_state(uint8_t *buf, uint64_t capacity, uint32_t sample_factor, uint64_t seed,
                        int keyed, uint64_t key_check);
void bk_sketch_tlfu_attach(bk_tlfu *t, uint8_t *buf);
bk_rc bk_sketch_tlfu_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                          int checks, const char **reason);

/* Record one access; returns 1 if it triggered an aging (halving). */
int bk_sketch_tlfu_record(bk_tlfu *t, uint64_t h);
/* Estimated frequency: min of the key's four counters + its doorkeeper bit. */
unsigned bk_sketch_tlfu_estimate(const bk_tlfu *t, uint64_t h);
/* Halve every counter, clear the doorkeeper, halve the event count. */
void bk_sketch_tlfu_age(bk_tlfu *t);
void bk_sketch_tlfu_clear(bk_tlfu *t);
uint64_t bk_sketch_tlfu_events(const bk_tlfu *t);
uint64_t bk_sketch_tlfu_resets(const bk_tlfu *t);

#endif /* BK_SKETCH_H */
