/*
 * bk_sketch_tlfu.c -- the TinyLFU frequency sketch (Einziger, Friedman and
 * Manes, "TinyLFU: a highly efficient cache admission policy", ACM TOS
 * 13(4), 2017): its state, record / estimate / aging, and its kind
 * descriptor.  A part of the core bk_sketch (bk_sketch.h declares both
 * kinds; the count-min sketch is bk_sketch.c); it shares no code with
 * the count-min sketch, only the header's limits (BK_CMS_MAX_PAYLOAD).
 *
 * ---- TinyLFU frequency sketch (kind 8) ------------------------------------
 *
 * An approximate, aging access frequency for cache admission: on a miss
 * that would evict a victim, admit the candidate only if its estimated
 * frequency is higher.  Three parts, all in one state buffer:
 *
 *   counters    4-bit counters (max 15: an admission decision needs only
 *               "more often than the victim"), grouped in 64-byte blocks
 *               of 128 nibbles; a key's four counters all lie in ONE block
 *               (one cache line): block = mulhi(h, num_blocks), counter r
 *               (r = 0..3) is nibble (h >> 5r) & 31 of the 32-nibble row r
 *               (words 2r and 2r+1 of the block).  Increments are minimal
 *               ("conservative"): only the counters equal to the minimum
 *               grow.  num_blocks = ceil(capacity / 8): 16 nibbles per
 *               cached entry.
 *   doorkeeper  a blocked Bloom filter (bk_bloom.h) over mix64(h) in front
 *               of the counters: a key's first sighting in a sample sets
 *               its doorkeeper bits and no counter, so one-hit wonders
 *               cost no counters.  estimate = min(counters) + (key in
 *               doorkeeper).  Sized at 4 bits per sampled event, k = 3.
 *   aging       after sample_size = sample_factor * capacity recorded
 *               events, every counter is halved, the doorkeeper cleared and
 *               the event count halved ("reset" in the paper): frequencies
 *               track the recent past.
 *
 * State (kind 8):
 *   params @64  +0 u64 capacity  +8 u32 sample_factor  +12 u32 door_k (3)
 *               +16 u64 num_blocks  +24 u64 door_blocks  +32 u64 events
 *               +40 u64 resets  +48 u64 0
 *   payload @128  num_blocks * 64 bytes of counters (8 u64 LE words per
 *                 block, nibble j of a word is bits 4j..4j+3), then
 *                 door_blocks * 64 bytes of doorkeeper (blocked Bloom
 *                 layout of bk_bloom.c).
 * Invariant: events < sample_size (checked by the validator).  TinyLFU is
 * for one writer at a time (the glue never releases the GIL around it).
 */
#include "bk_sketch.h"
#include "bk_kind.h"

#include "bk_bloom.h"

/* ---- Begin logic for TinyLFU ------------------------------------------ */

bk_rc bk_sketch_tlfu_shape(uint64_t capacity, uint32_t sample_factor, uint64_t *num_blocks,
                    uint64_t *door_blocks, uint64_t *payload_len, const char **reason)
{
    uint64_t sample, door_bits, total;
    if (capacity < 1 || capacity > BK_TLFU_MAX_CAPACITY) {
        *reason = "capacity must be in [1, 2**40]";
        return BK_ERR_ARG;
    }
    if (sample_factor < 1 || sample_factor > BK_TLFU_MAX_SAMPLE_FACTOR) {
        *reason = "sample_factor must be in [1, 1024]";
        return BK_ERR_ARG;
    }
    /* capacity <= 2^40 and sample_factor <= 2^10: no overflow below. */
    sample = capacity * sample_factor;
    *num_blocks = (capacity + 7) / 8;
    door_bits = sample * BK_TLFU_DOOR_BITS_PER_EVENT;
    *door_blocks = (door_bits + BK_BLOCK_BITS - 1) / BK_BLOCK_BITS;
    total = (*num_blocks + *door_blocks) * 64;
    if (total > BK_CMS_MAX_PAYLOAD) {
        *reason = "capacity * sample_factor too large (state over 2**40 bytes)";
        return BK_ERR_ARG;
    }
    *payload_len = total;
    return BK_OK;
}

void bk_sketch_tlfu_init_state(uint8_t *buf, uint64_t capacity, uint32_t sample_factor, uint64_t seed,
                        int keyed, uint64_t key_check)
{
    uint64_t nb = 0, db = 0, payload_len = 0;
    const char *reason;
    uint8_t *p = buf + BK_OFF_PARAMS;
    (void)bk_sketch_tlfu_shape(capacity, sample_factor, &nb, &db, &payload_len, &reason);
    bk_format_init_header(buf, BK_KIND_TINYLFU, BK_TLFU_HEADER_LEN,
                          BK_TLFU_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u64le(p + BK_TLFU_P_CAPACITY, capacity);
    bk_store_u32le(p + BK_TLFU_P_SAMPLE_FACTOR, sample_factor);
    bk_store_u32le(p + BK_TLFU_P_DOOR_K, BK_TLFU_DOOR_K);
    bk_store_u64le(p + BK_TLFU_P_NUM_BLOCKS, nb);
    bk_store_u64le(p + BK_TLFU_P_DOOR_BLOCKS, db);
    bk_store_u64le(p + BK_TLFU_P_EVENTS, 0);
    bk_store_u64le(p + BK_TLFU_P_RESETS, 0);
    bk_store_u64le(p + BK_TLFU_P_RESERVED, 0);
}

void bk_sketch_tlfu_attach(bk_tlfu *t, uint8_t *buf)
{
    const uint8_t *p = buf + BK_OFF_PARAMS;
    uint8_t *payload = buf + bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    t->buf = buf;
    t->num_blocks = bk_load_u64le(p + BK_TLFU_P_NUM_BLOCKS);
    t->door_blocks = bk_load_u64le(p + BK_TLFU_P_DOOR_BLOCKS);
    t->blocks = (uint64_t *)(void *)payload;
    t->door = (uint64_t *)(void *)(payload + t->num_blocks * 64);
    t->sample_size = bk_load_u64le(p + BK_TLFU_P_CAPACITY) *
                     bk_load_u32le(p + BK_TLFU_P_SAMPLE_FACTOR);
}

bk_rc bk_sketch_tlfu_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                          int checks, const char **reason)
{
    uint64_t capacity, nb = 0, db = 0, payload_len = 0;
    uint32_t sf;
    (void)payload;
    (void)checks;
    capacity = bk_load_u64le(params + BK_TLFU_P_CAPACITY);
    sf = bk_load_u32le(params + BK_TLFU_P_SAMPLE_FACTOR);
    if (bk_sketch_tlfu_shape(capacity, sf, &nb, &db, &payload_len, reason) != BK_OK)
        return BK_ERR_FORMAT;
    if (bk_load_u32le(params + BK_TLFU_P_DOOR_K) != BK_TLFU_DOOR_K) {
        *reason = "TinyLFU door_k must be 3";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u64le(params + BK_TLFU_P_NUM_BLOCKS) != nb ||
        bk_load_u64le(params + BK_TLFU_P_DOOR_BLOCKS) != db) {
        *reason = "TinyLFU block counts do not match capacity and sample_factor";
        return BK_ERR_FORMAT;
    }
    if (payload_len != h->payload_len) {
        *reason = "payload_len does not match the TinyLFU shape";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u64le(params + BK_TLFU_P_EVENTS) >= capacity * sf) {
        *reason = "TinyLFU events must be below the sample size";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u64le(params + BK_TLFU_P_RESERVED) != 0) {
        *reason = "reserved TinyLFU parameter is not zero";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

/* ---- The kind descriptor (bk_kind.h) ------------------------------------ */

/* The TinyLFU state operations: an add is a recorded access (aging when
 * the sample is full); the core keeps events and resets in the state. */
static void bk_sketch_tlfu_ops_attach(void *view, uint8_t *state)
{
    bk_sketch_tlfu_attach((bk_tlfu *)view, state);
}

static uint64_t bk_sketch_tlfu_ops_count(const void *view, uint64_t h)
{
    return bk_sketch_tlfu_estimate((const bk_tlfu *)view, h);
}

static int bk_sketch_tlfu_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_sketch_tlfu_ops_count(view, h) > 0;
}

static bk_rc bk_sketch_tlfu_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    (void)now;
    if (count != 1)
        return BK_ERR_ARG;
    (void)bk_sketch_tlfu_record((bk_tlfu *)view, h);
    return BK_OK;
}

static void bk_sketch_tlfu_ops_clear(void *view, int64_t now)
{
    (void)now;
    bk_sketch_tlfu_clear((bk_tlfu *)view);
}

static const bk_kind_ops bk_sketch_tlfu_ops = {
    .view_size = sizeof(bk_tlfu),
    .attach = bk_sketch_tlfu_ops_attach,
    .contains = bk_sketch_tlfu_ops_contains,
    .count = bk_sketch_tlfu_ops_count,
    .add = bk_sketch_tlfu_ops_add,
    .clear = bk_sketch_tlfu_ops_clear,
};

static const bk_kind_param bk_sketch_tlfu_params[] = {
    {"capacity", BK_TLFU_P_CAPACITY, 8, BK_PARAM_U64},
    {"sample_factor", BK_TLFU_P_SAMPLE_FACTOR, 4, BK_PARAM_U32},
    {"door_k", BK_TLFU_P_DOOR_K, 4, BK_PARAM_U32},
    {"num_blocks", BK_TLFU_P_NUM_BLOCKS, 8, BK_PARAM_U64},
    {"door_blocks", BK_TLFU_P_DOOR_BLOCKS, 8, BK_PARAM_U64},
    {"events", BK_TLFU_P_EVENTS, 8, BK_PARAM_U64},
    {"resets", BK_TLFU_P_RESETS, 8, BK_PARAM_U64},
};

/* Its own capacity limit, 2^40: the sample (capacity * sample_factor, up to
 * 2^10) and the doorkeeper's bits stay below 2^64 without overflow checks. */
const bk_kind_desc bk_sketch_tlfu_kind = {
    BK_KIND_TINYLFU, "TinyLFU", "TinyLFU", BK_TLFU_PARAMS_LEN, BK_TLFU_HEADER_LEN,
    BK_KIND_PARAMS(bk_sketch_tlfu_params),
    0, BK_TLFU_MAX_CAPACITY, "capacity must be in [1, 2**40]",
    -1, BK_KIND_NO_ERROR_RATE,
    -1, 0,
    BK_TRAIT_COUNTS | BK_TRAIT_KEYED,
    bk_sketch_tlfu_validate,
    &bk_sketch_tlfu_ops,
};

/* The doorkeeper as a blocked Bloom filter view over our own payload. */
BK_INLINE void bk_sketch_tlfu_door(const bk_tlfu *t, bk_bloom *b)
{
    b->words = t->door;
    b->num_bits = t->door_blocks * BK_BLOCK_BITS;
    b->num_blocks = t->door_blocks;
    b->num_words = t->door_blocks * BK_BLOCK_WORDS;
    b->k = BK_TLFU_DOOR_K;
    b->version = BK_BLOOM_VERSION_SALT; /* fixed by kind 8's format */
    b->blocked = 1;
}

/* A second, independent-looking hash for the doorkeeper: the counter block
 * already uses the high bits of h and the nibble indices its low 20 bits. */
BK_INLINE uint64_t bk_sketch_tlfu_door_hash(uint64_t h)
{
    return bk_mix64(h ^ 0x646f6f726b656570ULL); /* "doorkeep" */
}

/* Nibble (word index within the block, shift) of the key's counter r. */
BK_INLINE void bk_sketch_tlfu_slot(uint64_t h, unsigned r, unsigned *word, unsigned *shift)
{
    unsigned idx = (unsigned)(h >> (5 * r)) & 31u;
    *word = 2 * r + (idx >> 4);
    *shift = (idx & 15u) * 4;
}

static unsigned bk_sketch_tlfu_counters_min(const bk_tlfu *t, uint64_t h, unsigned vals[4])
{
    const uint64_t *blk = t->blocks + bk_mulhi64(h, t->num_blocks) * 8;
    unsigned m = BK_TLFU_COUNTER_MAX;
    for (unsigned r = 0; r < 4; r++) {
        unsigned w, s;
        bk_sketch_tlfu_slot(h, r, &w, &s);
        vals[r] = (unsigned)(BK_LE64(blk[w]) >> s) & 15u;
        if (vals[r] < m)
            m = vals[r];
    }
    return m;
}

uint64_t bk_sketch_tlfu_events(const bk_tlfu *t)
{
    return bk_load_u64le(t->buf + BK_OFF_PARAMS + BK_TLFU_P_EVENTS);
}

uint64_t bk_sketch_tlfu_resets(const bk_tlfu *t)
{
    return bk_load_u64le(t->buf + BK_OFF_PARAMS + BK_TLFU_P_RESETS);
}

void bk_sketch_tlfu_age(bk_tlfu *t)
{
    uint64_t n = t->num_blocks * 8;
    uint8_t *p = t->buf + BK_OFF_PARAMS;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t w = BK_LE64(t->blocks[i]);
        t->blocks[i] = BK_LE64((w >> 1) & 0x7777777777777777ULL);
    }
    memset(t->door, 0, (size_t)(t->door_blocks * 64));
    bk_store_u64le(p + BK_TLFU_P_EVENTS, bk_sketch_tlfu_events(t) / 2);
    bk_store_u64le(p + BK_TLFU_P_RESETS, bk_sat_add64(bk_sketch_tlfu_resets(t), 1));
}

int bk_sketch_tlfu_record(bk_tlfu *t, uint64_t h)
{
    bk_bloom door;
    uint64_t events;
    bk_sketch_tlfu_door(t, &door);
    if (!bk_bloom_blocked_add(&door, bk_sketch_tlfu_door_hash(h), 0)) {
        /* seen before in this sample: count it (minimal increment) */
        unsigned vals[4];
        unsigned m = bk_sketch_tlfu_counters_min(t, h, vals);
        if (m < BK_TLFU_COUNTER_MAX) {
            uint64_t *blk = t->blocks + bk_mulhi64(h, t->num_blocks) * 8;
            for (unsigned r = 0; r < 4; r++) {
                unsigned w, s;
                if (vals[r] != m)
                    continue;
                bk_sketch_tlfu_slot(h, r, &w, &s);
                blk[w] = BK_LE64(BK_LE64(blk[w]) + (1ULL << s));
            }
        }
    }
    events = bk_sketch_tlfu_events(t) + 1;
    bk_store_u64le(t->buf + BK_OFF_PARAMS + BK_TLFU_P_EVENTS, events);
    if (events >= t->sample_size) {
        bk_sketch_tlfu_age(t);
        return 1;
    }
    return 0;
}

unsigned bk_sketch_tlfu_estimate(const bk_tlfu *t, uint64_t h)
{
    bk_bloom door;
    unsigned vals[4];
    unsigned m = bk_sketch_tlfu_counters_min(t, h, vals);
    bk_sketch_tlfu_door(t, &door);
    return m + (unsigned)bk_bloom_blocked_contains(&door, bk_sketch_tlfu_door_hash(h));
}

void bk_sketch_tlfu_clear(bk_tlfu *t)
{
    uint8_t *p = t->buf + BK_OFF_PARAMS;
    memset(t->blocks, 0, (size_t)((t->num_blocks + t->door_blocks) * 64));
    bk_store_u64le(p + BK_TLFU_P_EVENTS, 0);
    bk_store_u64le(p + BK_TLFU_P_RESETS, 0);
}

/* ---- End logic for TinyLFU -------------------------------------------- */
