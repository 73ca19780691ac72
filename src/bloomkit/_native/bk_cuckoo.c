/*
 * bk_cuckoo.c -- the cuckoo filter (Fan, Andersen, Kaminsky and
 * Mitzenmacher, "Cuckoo Filter: Practically Better Than Bloom", CoNEXT
 * 2014).
 *
 * The structure.  A table of nb buckets of b slots (b = 4 by default); a
 * slot holds an f-bit fingerprint of a key, 0 meaning empty.  A key with
 * hash h has two candidate buckets i1 and i2 and is stored as one copy of
 * its fingerprint in either.  Lookup reads two buckets (two cache lines at
 * most); insert places the fingerprint in a free slot of i1 or i2, else
 * evicts a random resident to ITS alternate bucket, and so on ("kicks").
 * Because only fingerprints are stored, the alternate of a resident must
 * be computable from (bucket, fingerprint) alone: partial-key cuckoo
 * hashing.  Deletion removes one matching copy, so the filter is a
 * multiset of fingerprints: add() twice and remove() once leaves the key.
 *
 * Alternate bucket, for ANY table size.  The paper uses i2 = i1 XOR
 * hash(fp), an involution only when nb is a power of two; rounding the
 * table up to a power of two costs up to 2x (38% on average) in space and
 * breaks the space target below.  We use instead
 *
 *     H = mulhi(mix64(fp), nb)        alt(i) = (H - i) mod nb
 *
 * which is an involution for every nb (alt(alt(i)) = H - (H - i) = i), is
 * uniform in i for uniform H, and costs one conditional add.  The price: a
 * key with 2 i1 == H (mod nb) has i1 == i2 (probability ~1/nb), i.e. one
 * bucket instead of two; counted once by count(), harmless elsewhere.
 *
 * Hashes.  i1 = mulhi(h, nb) takes the high bits of the one key hash; the
 * fingerprint is 1 + ((h mod 2^32) * (2^f - 1)) >> 32, uniform on
 * [1, 2^f - 1] and independent of i1 for nb <= 2^32 (the cap).
 *
 * Numbers.  A query compares its fingerprint with 2b slots; each matches
 * with probability 1/(2^f - 1), so at load a the false-positive rate is
 * about 2 b a / (2^f - 1).  The sizing (cuckoo.py) takes the smallest f >=
 * 8 with 2b / (2^f - 1) <= p (that is f >= log2(2b/p + 1), the paper's
 * f >= log2(2b/p) rounded up): p = 1% gives f = 10, 0.1% f = 13, 0.01%
 * f = 17.  With b = 4 the table reaches ~95% load before the first failed
 * insert (paper, Sec. 5; measured here 96.5-97.0% at the first failure,
 * stash full, for 10^5 and 10^6 keys), so the table is sized
 * nb = ceil(n / (0.94 b)): bits per key at capacity = f / 0.94, within
 * 1.1% of the paper's f / 0.95.  Measured at n = 10^6 and capacity:
 *     p       f   bits/key  observed FP   (blocked Bloom bits/key)
 *     1%     10    10.64     0.745%        9.90
 *     0.1%   13    13.83     0.090%       15.49
 *     0.01%  17    18.09     0.0047%         -
 * so the cuckoo filter is smaller than the blocked Bloom filter below about
 * 0.5%, and supports deletion at every rate.  Smaller buckets reach much
 * lower loads (paper: ~50% for b = 1, ~84% for b = 2; measured here, 10^4
 * to 4 * 10^6 keys: 48.2-55.6%, 87.1-89.6%, and 93.8-95.2% for b = 3), so
 * cuckoo.py sizes them for 0.45, 0.80 and 0.88 (issue #16.4: with 0.94 for
 * every b, b = 2 failed at 930,919 of 10^6 keys).  b >= 4 keeps 0.94.
 *
 * Packing.  Slot s of bucket i holds bits [(i b + s) f, (i b + s + 1) f) of
 * the payload read as one little-endian bit string (bit k is bit k%8 of
 * byte k/8).  Any f in [8, 32] packs without waste; a slot is read by one
 * unaligned 64-bit load and a shift (f + 7 <= 64), and when b f + 7 <= 64
 * (b = 4 with f <= 14) a whole bucket is one load and a match is a SWAR
 * "has zero lane" test on bucket XOR (fp * lanes).  The lowest set bit of
 * that test is exact (see bk_cuckoo.h), so the first free slot (add, the
 * kick loop) and the first matching slot (remove) are found with one ctz,
 * and they are the slots the scalar loops pick: the stored bits do not
 * depend on which path ran.  The inline add / remove (bk_cuckoo.h) read
 * both buckets up front and branch only on "both full" (kicks) and the
 * stash; `in` tests both buckets without a branch between them.
 * BK_CUCKOO_GUARD zero bytes after the table keep the last unaligned load
 * in bounds.
 *
 * Bounded kicks, a stash, and undo: a failed insert changes NOTHING.
 * The random walk makes at most max_kicks (500) evictions; the victim slot
 * comes from a splitmix64 stream seeded by the key hash, so a build is
 * deterministic (golden files rebuild byte-identically).  Every eviction
 * is logged as (bucket, slot).  If the walk ends without a free slot, the
 * homeless fingerprint goes to the stash (8 entries of {bucket, fp} in the
 * parameter block, scanned by lookups only while non-empty).  If the stash
 * is full too, the log is replayed backwards -- each logged slot gets back
 * the fingerprint it held, the homeless one -- which restores every slot;
 * the count and stash were not touched, so the state is byte-identical and
 * add() raises CapacityError.  A remove() tries to move stash entries back
 * into the table, so the stash drains as the filter empties.
 *
 * Copies.  A key can have at most 2b copies in its two buckets; adding a
 * key that already has 2b copies (table and stash together) raises
 * CapacityError without kicking (it would only shuffle copies).  Other
 * keys whose fingerprints collide count as copies: remove() of a key that
 * was never added may delete another key's fingerprint (a false negative
 * for that key), which is why docs/cuckoo.md says never to do it.
 *
 * Invariants (checked by the deep validator): count == non-zero slots +
 * stash entries in use; stash entries in use have bucket < nb and fp in
 * [1, 2^f - 1], entries past stash_count are all zero; bits past the
 * table and the guard bytes are zero.  (Whether each fingerprint sits in
 * one of ITS buckets cannot be checked: the key is not stored.)
 *
 * State (bk_format.c container, kind 5):
 *   params @64  +0 u64 num_buckets  +8 u32 b  +12 u32 f  +16 u64 capacity
 *               +24 f64 error_rate  +32 u64 count  +40 u32 max_kicks
 *               +44 u32 stash_count  +48 8 x {u64 bucket, u32 fp, u32 0}
 *   payload @256  ceil(nb b f / 64) u64 LE words of packed slots, then 8
 *                 zero guard bytes.
 *
 * Concurrency: the kicks move fingerprints through intermediate states, so
 * writers are not atomic; the CPython glue holds the GIL for every
 * operation and concurrent writers sharing a mapped file are unsupported.
 */
#include "bk_cuckoo.h"
#include "bk_kind.h"

#include <math.h>

/* Prefetch distance of the batch paths (two lines per key). */
#define BK_CUCKOO_AHEAD 8

bk_rc bk_cuckoo_shape(uint64_t num_buckets, uint32_t b, uint32_t f, uint64_t *payload_len,
                      const char **reason)
{
    uint64_t bits;
    if (num_buckets == 0 || num_buckets > BK_CUCKOO_MAX_BUCKETS) {
        *reason = "num_buckets must be in [1, 2**32]";
        return BK_ERR_ARG;
    }
    if (b == 0 || b > BK_CUCKOO_MAX_B) {
        *reason = "bucket_size must be in [1, 8]";
        return BK_ERR_ARG;
    }
    if (f < BK_CUCKOO_MIN_F || f > BK_CUCKOO_MAX_F) {
        *reason = "fingerprint_bits must be in [8, 32]";
        return BK_ERR_ARG;
    }
    /* nb <= 2^32, b <= 8, f <= 32: at most 2^40 bits, no overflow */
    bits = num_buckets * b * f;
    *payload_len = ((bits + 63) / 64) * 8 + BK_CUCKOO_GUARD;
    return BK_OK;
}

void bk_cuckoo_init_state(uint8_t *buf, uint64_t num_buckets, uint32_t b, uint32_t f,
                          uint64_t capacity, double error_rate, uint64_t seed, int keyed,
                          uint64_t key_check)
{
    uint64_t payload_len = 0;
    const char *reason = NULL;
    uint8_t *p = buf + BK_OFF_PARAMS;

    (void)bk_cuckoo_shape(num_buckets, b, f, &payload_len, &reason);
    bk_format_init_header(buf, BK_KIND_CUCKOO, BK_CUCKOO_HEADER_LEN,
                          BK_CUCKOO_PARAMS_LEN, payload_len, seed, keyed, key_check);
    bk_store_u64le(p + BK_CUCKOO_P_NUM_BUCKETS, num_buckets);
    bk_store_u32le(p + BK_CUCKOO_P_BUCKET_SIZE, b);
    bk_store_u32le(p + BK_CUCKOO_P_FP_BITS, f);
    bk_store_u64le(p + BK_CUCKOO_P_CAPACITY, capacity);
    bk_store_f64le(p + BK_CUCKOO_P_ERROR_RATE, error_rate);
    bk_store_u64le(p + BK_CUCKOO_P_COUNT, 0);
    bk_store_u32le(p + BK_CUCKOO_P_MAX_KICKS, BK_CUCKOO_DEFAULT_KICKS);
    bk_store_u32le(p + BK_CUCKOO_P_STASH_COUNT, 0);
}

void bk_cuckoo_attach(bk_cuckoo *c, uint8_t *buf)
{
    uint8_t *p = buf + BK_OFF_PARAMS;
    uint32_t header_len = bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    c->params = p;
    c->table = buf + header_len;
    c->num_buckets = bk_load_u64le(p + BK_CUCKOO_P_NUM_BUCKETS);
    c->b = bk_load_u32le(p + BK_CUCKOO_P_BUCKET_SIZE);
    c->f = bk_load_u32le(p + BK_CUCKOO_P_FP_BITS);
    c->max_kicks = bk_load_u32le(p + BK_CUCKOO_P_MAX_KICKS);
    c->bucket_bits = c->b * c->f;
    c->table_bits = c->num_buckets * c->bucket_bits;
    c->fmask = (1ULL << c->f) - 1;
    c->swar = c->bucket_bits + 7 <= 64;
    c->lanes_lo = 0;
    for (uint32_t s = 0; c->swar && s < c->b; s++) /* lanes only exist when they fit */
        c->lanes_lo |= 1ULL << (s * c->f);
    c->lanes_hi = c->swar ? c->lanes_lo << (c->f - 1) : 0;
    c->bmask = c->swar ? (1ULL << c->bucket_bits) - 1 : 0;
}

uint64_t bk_cuckoo_get_count(const bk_cuckoo *c)
{
    return bk_load_u64le(c->params + BK_CUCKOO_P_COUNT);
}

static void bk_cuckoo_set_count(bk_cuckoo *c, uint64_t n)
{
    bk_store_u64le(c->params + BK_CUCKOO_P_COUNT, n);
}

/* count / slots exceeded 1 on a tiny full filter before the stash was
 * taken out (1.25 at capacity 1 with one stashed key; issue #31 item 5). */
double bk_cuckoo_table_load(const bk_cuckoo *c)
{
    uint64_t count = bk_cuckoo_get_count(c), stash = bk_cuckoo_stash_count(c);
    double load = (double)(count > stash ? count - stash : 0) /
                  ((double)c->num_buckets * (double)c->b);
    return load > 1.0 ? 1.0 : load;
}

double bk_cuckoo_estimate_error_rate(const bk_cuckoo *c)
{
    double q = 1.0 / (double)c->fmask;
    return -expm1(2.0 * c->b * bk_cuckoo_table_load(c) * log1p(-q));
}

void bk_cuckoo_recount(bk_cuckoo *c)
{
    uint64_t used = bk_cuckoo_stash_count(c);
    for (uint64_t i = 0; i < c->num_buckets; i++)
        for (uint32_t s = 0; s < c->b; s++)
            used += bk_cuckoo_get(c, i, s) != 0;
    bk_cuckoo_set_count(c, used);
}

/* ---- Begin logic for the stash ---------------------------------------- */

static uint8_t *bk_cuckoo_stash_entry(const bk_cuckoo *c, uint32_t j)
{
    return c->params + BK_CUCKOO_P_STASH + (size_t)j * BK_CUCKOO_STASH_ENTRY;
}

/* The stash lives in the params block: in a shared map another process
 * may rewrite it after the validator ran (RELIABILITY R32, issue #23.6:
 * stash_count := 0xFFFFFFFF made remove() memmove 2^36 bytes past the
 * map).  So every stash field is bounded by the shape kept in the object
 * at attach time: the count by BK_CUCKOO_STASH_MAX, a bucket into
 * [0, nb), a fingerprint to its f bits.  A rewritten stash then answers
 * wrongly (that file is corrupt; verify() says so) but never indexes
 * outside the table or the params block. */
static uint64_t bk_cuckoo_stash_bucket(const bk_cuckoo *c, uint32_t j)
{
    uint64_t bj = bk_load_u64le(bk_cuckoo_stash_entry(c, j));
    return bj < c->num_buckets ? bj : bj % c->num_buckets;
}

static uint32_t bk_cuckoo_stash_fp(const bk_cuckoo *c, uint32_t j)
{
    return (uint32_t)(bk_load_u32le(bk_cuckoo_stash_entry(c, j) + 8) & c->fmask);
}

/* The stash count, clamped (a torn or hostile value never overruns). */
static uint32_t bk_cuckoo_stash_n(const bk_cuckoo *c)
{
    uint32_t n = bk_cuckoo_stash_count(c);
    return n > BK_CUCKOO_STASH_MAX ? BK_CUCKOO_STASH_MAX : n;
}

int bk_cuckoo_stash_has(const bk_cuckoo *c, uint32_t fp, uint64_t i1, uint64_t i2)
{
    uint32_t n = bk_cuckoo_stash_n(c);
    for (uint32_t j = 0; j < n; j++) {
        uint64_t bj = bk_cuckoo_stash_bucket(c, j);
        if (bk_cuckoo_stash_fp(c, j) == fp && (bj == i1 || bj == i2))
            return 1;
    }
    return 0;
}

/* The caller checked that the stash has room; n is re-clamped anyway (the
 * field may have been rewritten in between: the last entry is then
 * overwritten, never one past the stash). */
static void bk_cuckoo_stash_push(bk_cuckoo *c, uint64_t bucket, uint32_t fp)
{
    uint32_t n = bk_cuckoo_stash_n(c);
    uint8_t *e;
    if (n == BK_CUCKOO_STASH_MAX)
        n--;
    e = bk_cuckoo_stash_entry(c, n);
    bk_store_u64le(e, bucket);
    bk_store_u32le(e + 8, fp);
    bk_store_u32le(e + 12, 0);
    bk_store_u32le(c->params + BK_CUCKOO_P_STASH_COUNT, n + 1);
}

/* Remove entry j: the last entry moves into its place, the last is zeroed. */
static void bk_cuckoo_stash_delete(bk_cuckoo *c, uint32_t j)
{
    uint32_t n = bk_cuckoo_stash_n(c);
    if (j >= n)
        return; /* the count shrank under us (a rewritten shared map) */
    if (j + 1 != n)
        memcpy(bk_cuckoo_stash_entry(c, j), bk_cuckoo_stash_entry(c, n - 1),
               BK_CUCKOO_STASH_ENTRY);
    memset(bk_cuckoo_stash_entry(c, n - 1), 0, BK_CUCKOO_STASH_ENTRY);
    bk_store_u32le(c->params + BK_CUCKOO_P_STASH_COUNT, n - 1);
}

/* ---- End logic for the stash ------------------------------------------ */

/* ---- Begin logic for insertion ---------------------------------------- */

/* Put fp in the first free slot of bucket i; 1 on success. */
static int bk_cuckoo_place(bk_cuckoo *c, uint64_t i, uint32_t fp)
{
    if (BK_LIKELY(c->swar)) { /* the kick loop's hot step: no per-slot branches */
        uint64_t pos = i * c->bucket_bits, z = bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, pos));
        if (z == 0)
            return 0;
        bk_cuckoo_or_at(c, bk_cuckoo_lane_pos(c, pos, z), fp);
        return 1;
    }
    for (uint32_t s = 0; s < c->b; s++) {
        if (bk_cuckoo_get(c, i, s) == 0) {
            bk_cuckoo_set(c, i, s, fp);
            return 1;
        }
    }
    return 0;
}

static uint32_t bk_cuckoo_bucket_count(const bk_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t n = 0;
    if (BK_LIKELY(c->swar)) {
        /* Exact zero-lane mask (no borrows between lanes): with M the low
         * f - 1 bits of every lane, a lane of x is zero iff its top bit of
         * ((x & M) + M) | x is clear. */
        uint64_t x = bk_cuckoo_word(c, i * c->bucket_bits) ^ ((uint64_t)fp * c->lanes_lo);
        uint64_t m = c->lanes_hi - c->lanes_lo;
        return (uint32_t)bk_popcount64(~(((x & m) + m) | x) & c->lanes_hi);
    }
    for (uint32_t s = 0; s < c->b; s++)
        n += bk_cuckoo_get(c, i, s) == fp;
    return n;
}

static uint32_t bk_cuckoo_count_fp(const bk_cuckoo *c, uint64_t i1, uint32_t fp)
{
    uint64_t i2 = bk_cuckoo_alt(c, i1, fp);
    uint32_t n = bk_cuckoo_bucket_count(c, i1, fp), sn = bk_cuckoo_stash_n(c);
    if (i2 != i1)
        n += bk_cuckoo_bucket_count(c, i2, fp);
    for (uint32_t j = 0; j < sn; j++) {
        uint64_t bj = bk_cuckoo_stash_bucket(c, j);
        n += bk_cuckoo_stash_fp(c, j) == fp && (bj == i1 || bj == i2);
    }
    return n;
}

/* Insert fingerprint fp whose buckets are i1 and alt(i1).  `rs` seeds the
 * victim choice.  BK_ERR_CAPACITY leaves every byte as it was. */
static bk_rc bk_cuckoo_insert_fp(bk_cuckoo *c, uint64_t i1, uint32_t fp, uint64_t rs)
{
    uint64_t log_bucket[BK_CUCKOO_KICKS_LIMIT];
    uint8_t log_slot[BK_CUCKOO_KICKS_LIMIT];
    uint64_t i2 = bk_cuckoo_alt(c, i1, fp), i;
    uint32_t cur = fp, kicks = c->max_kicks, n;

    if (bk_cuckoo_place(c, i1, fp) || bk_cuckoo_place(c, i2, fp))
        goto stored;
    if (bk_cuckoo_count_fp(c, i1, fp) >= 2 * c->b)
        return BK_ERR_CAPACITY; /* both buckets already hold only this key */
    if (kicks > BK_CUCKOO_KICKS_LIMIT)
        kicks = BK_CUCKOO_KICKS_LIMIT;
    rs = bk_mix64(rs ^ 0x6375636b6f6f2121ULL); /* "cuckoo!!" */
    i = (rs & 1) ? i2 : i1;
    for (n = 0; n < kicks; n++) {
        uint32_t s, victim;
        rs += 0x9E3779B97F4A7C15ULL;
        s = (uint32_t)(((bk_mix64(rs) >> 32) * c->b) >> 32);
        victim = bk_cuckoo_get(c, i, s);
        bk_cuckoo_set(c, i, s, cur);
        log_bucket[n] = i;
        log_slot[n] = (uint8_t)s;
        cur = victim;
        i = bk_cuckoo_alt(c, i, cur);
        if (bk_cuckoo_place(c, i, cur))
            goto stored;
    }
    if (bk_cuckoo_stash_n(c) < BK_CUCKOO_STASH_MAX) {
        bk_cuckoo_stash_push(c, i, cur);
        goto stored;
    }
    /* Undo: walk the log backwards; each slot takes back what it held. */
    while (n > 0) {
        uint32_t held;
        n--;
        held = bk_cuckoo_get(c, log_bucket[n], log_slot[n]);
        bk_cuckoo_set(c, log_bucket[n], log_slot[n], cur);
        cur = held;
    }
    return BK_ERR_CAPACITY;
stored:
    bk_cuckoo_set_count(c, bk_cuckoo_get_count(c) + 1);
    return BK_OK;
}

bk_rc bk_cuckoo_add_slow(bk_cuckoo *c, uint64_t h, int *was_new)
{
    uint64_t i1 = bk_cuckoo_index(c, h);
    *was_new = !bk_cuckoo_contains(c, h);
    return bk_cuckoo_insert_fp(c, i1, bk_cuckoo_fingerprint(c, h), h);
}

/* ---- End logic for insertion ------------------------------------------ */

/* ---- Begin logic for removal ------------------------------------------ */

/* Clear the first slot of bucket i holding fp; 1 on success. */
static int bk_cuckoo_take(bk_cuckoo *c, uint64_t i, uint32_t fp)
{
    if (BK_LIKELY(c->swar)) {
        uint64_t pos = i * c->bucket_bits;
        uint64_t m = bk_cuckoo_zero_lanes(c, bk_cuckoo_word(c, pos) ^ ((uint64_t)fp * c->lanes_lo));
        if (m == 0)
            return 0;
        bk_cuckoo_clear_at(c, bk_cuckoo_lane_pos(c, pos, m));
        return 1;
    }
    for (uint32_t s = 0; s < c->b; s++) {
        if (bk_cuckoo_get(c, i, s) == fp) {
            bk_cuckoo_set(c, i, s, 0);
            return 1;
        }
    }
    return 0;
}

/* Move stash entries back into the table where a slot is free. */
static void bk_cuckoo_drain_stash(bk_cuckoo *c)
{
    uint32_t j = 0;
    while (j < bk_cuckoo_stash_n(c)) {
        uint64_t bj = bk_cuckoo_stash_bucket(c, j);
        uint32_t fp = bk_cuckoo_stash_fp(c, j);
        if (bk_cuckoo_place(c, bj, fp) || bk_cuckoo_place(c, bk_cuckoo_alt(c, bj, fp), fp))
            bk_cuckoo_stash_delete(c, j);
        else
            j++;
    }
}

bk_rc bk_cuckoo_remove_slow(bk_cuckoo *c, uint64_t h)
{
    uint64_t i1 = bk_cuckoo_index(c, h);
    uint32_t fp = bk_cuckoo_fingerprint(c, h);
    uint64_t i2 = bk_cuckoo_alt(c, i1, fp);
    uint32_t sn = bk_cuckoo_stash_n(c);

    if (bk_cuckoo_take(c, i1, fp) || bk_cuckoo_take(c, i2, fp))
        goto removed;
    for (uint32_t j = 0; j < sn; j++) {
        uint64_t bj = bk_cuckoo_stash_bucket(c, j);
        if (bk_cuckoo_stash_fp(c, j) == fp && (bj == i1 || bj == i2)) {
            bk_cuckoo_stash_delete(c, j);
            goto removed;
        }
    }
    return BK_ERR_NOTFOUND;
removed:
    if (bk_cuckoo_get_count(c) > 0) /* a hostile unverified count never wraps */
        bk_cuckoo_set_count(c, bk_cuckoo_get_count(c) - 1);
    if (sn != 0)
        bk_cuckoo_drain_stash(c);
    return BK_OK;
}

uint32_t bk_cuckoo_count(const bk_cuckoo *c, uint64_t h)
{
    return bk_cuckoo_count_fp(c, bk_cuckoo_index(c, h), bk_cuckoo_fingerprint(c, h));
}

void bk_cuckoo_clear(bk_cuckoo *c)
{
    memset(c->table, 0, (size_t)(((c->table_bits + 63) / 64) * 8));
    memset(c->params + BK_CUCKOO_P_STASH, 0,
           (size_t)BK_CUCKOO_STASH_MAX * BK_CUCKOO_STASH_ENTRY);
    bk_store_u32le(c->params + BK_CUCKOO_P_STASH_COUNT, 0);
    bk_cuckoo_set_count(c, 0);
}

/* ---- End logic for removal -------------------------------------------- */

/* ---- Begin logic for the batch paths ---------------------------------- */

/* always_inline, not just inline: as a plain static inline helper, GCC 12
 * (-O1 to -O3) deleted its calls in dead-code elimination (-fno-tree-dce
 * kept them), so add_many and the wide-bucket loop had no prefetch
 * instruction at all (objdump).  A helper whose only effect is a prefetch
 * looks side-effect free to the optimiser. */
BK_INLINE void bk_cuckoo_prefetch(const bk_cuckoo *c, uint64_t h)
{
    uint64_t i1 = bk_cuckoo_index(c, h);
    uint64_t i2 = bk_cuckoo_alt(c, i1, bk_cuckoo_fingerprint(c, h));
    bk_prefetch_r(c->table + ((i1 * c->bucket_bits) >> 3));
    bk_prefetch_r(c->table + ((i2 * c->bucket_bits) >> 3));
}

bk_rc bk_cuckoo_add_many(bk_cuckoo *c, const uint64_t *hs, size_t n, size_t *done,
                         uint64_t *added_new)
{
    size_t i;
    for (i = 0; i < n && i < BK_CUCKOO_AHEAD; i++)
        bk_cuckoo_prefetch(c, hs[i]);
    for (i = 0; i < n; i++) {
        int was_new;
        if (i + BK_CUCKOO_AHEAD < n)
            bk_cuckoo_prefetch(c, hs[i + BK_CUCKOO_AHEAD]);
        if (bk_cuckoo_add(c, hs[i], &was_new) != BK_OK) {
            *done = i;
            return BK_ERR_CAPACITY;
        }
        *added_new += (uint64_t)was_new;
    }
    *done = n;
    return BK_OK;
}

/* The SWAR probe loop: every field of c in a local (the byte stores to out
 * may alias anything, which would otherwise reload them per key), each
 * key's two positions computed once, when its buckets are prefetched, and
 * kept in a small ring until it is tested BK_CUCKOO_AHEAD keys later.
 * Both buckets are tested without a branch. */
#define BK_CUCKOO_RING 16 /* power of two > BK_CUCKOO_AHEAD */

static void bk_cuckoo_contains_many_swar(const bk_cuckoo *c, const uint64_t *hs, size_t n,
                                         uint8_t *out)
{
    const uint8_t *table = c->table;
    const uint64_t nb = c->num_buckets, fmask = c->fmask, bb = c->bucket_bits;
    const uint64_t lo = c->lanes_lo, hi = c->lanes_hi, bmask = c->bmask;
    uint64_t r1[BK_CUCKOO_RING], r2[BK_CUCKOO_RING], rrep[BK_CUCKOO_RING];
    size_t i;

#define BK_CUCKOO_PROBE_AT(j)                                                               \
    do {                                                                                    \
        uint64_t h_ = hs[j], i1_ = bk_mulhi64(h_, nb);                                      \
        uint64_t fp_ = 1 + (((h_ & 0xFFFFFFFFULL) * fmask) >> 32);                          \
        uint64_t H_ = bk_mulhi64(bk_mix64(fp_), nb);                                        \
        uint64_t i2_ = H_ >= i1_ ? H_ - i1_ : H_ + nb - i1_;                                \
        size_t k_ = (j) & (BK_CUCKOO_RING - 1);                                             \
        r1[k_] = i1_ * bb;                                                                  \
        r2[k_] = i2_ * bb;                                                                  \
        rrep[k_] = fp_ * lo;                                                                \
        bk_prefetch_r(table + (r1[k_] >> 3));                                               \
        bk_prefetch_r(table + (r2[k_] >> 3));                                               \
    } while (0)

    for (i = 0; i < n && i < BK_CUCKOO_AHEAD; i++)
        BK_CUCKOO_PROBE_AT(i);
    for (i = 0; i < n; i++) {
        size_t k = i & (BK_CUCKOO_RING - 1);
        uint64_t p1 = r1[k], p2 = r2[k], rep = rrep[k];
        uint64_t w1 = ((bk_load_u64le(table + (p1 >> 3)) >> (p1 & 7)) & bmask) ^ rep;
        uint64_t w2 = ((bk_load_u64le(table + (p2 >> 3)) >> (p2 & 7)) & bmask) ^ rep;
        uint64_t m = ((w1 - lo) & ~w1) | ((w2 - lo) & ~w2);
        if (i + BK_CUCKOO_AHEAD < n)
            BK_CUCKOO_PROBE_AT(i + BK_CUCKOO_AHEAD);
        out[i] = (uint8_t)((m & hi) != 0);
    }
#undef BK_CUCKOO_PROBE_AT
}

void bk_cuckoo_contains_many(const bk_cuckoo *c, const uint64_t *hs, size_t n, uint8_t *out)
{
    size_t i;
    if (c->swar && bk_cuckoo_stash_count(c) == 0) {
        bk_cuckoo_contains_many_swar(c, hs, n, out);
        return;
    }
    for (i = 0; i < n && i < BK_CUCKOO_AHEAD; i++)
        bk_cuckoo_prefetch(c, hs[i]);
    for (i = 0; i < n; i++) {
        if (i + BK_CUCKOO_AHEAD < n)
            bk_cuckoo_prefetch(c, hs[i + BK_CUCKOO_AHEAD]);
        out[i] = (uint8_t)bk_cuckoo_contains(c, hs[i]);
    }
}

/* ---- End logic for the batch paths ------------------------------------ */

bk_rc bk_cuckoo_merge(bk_cuckoo *dst, const bk_cuckoo *src)
{
    uint32_t sn = bk_cuckoo_stash_n(src);
    for (uint64_t i = 0; i < src->num_buckets; i++) {
        for (uint32_t s = 0; s < src->b; s++) {
            uint32_t fp = bk_cuckoo_get(src, i, s);
            if (fp != 0 && bk_cuckoo_insert_fp(dst, i, fp, (i << 32) ^ fp) != BK_OK)
                return BK_ERR_CAPACITY;
        }
    }
    for (uint32_t j = 0; j < sn; j++) {
        uint64_t bj = bk_cuckoo_stash_bucket(src, j);
        uint32_t fp = bk_cuckoo_stash_fp(src, j);
        if (bk_cuckoo_insert_fp(dst, bj, fp, (bj << 32) ^ fp) != BK_OK)
            return BK_ERR_CAPACITY;
    }
    return BK_OK;
}

bk_rc bk_cuckoo_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                         int checks, const char **reason)
{
    uint64_t nb, count, payload_len = 0;
    uint32_t b, f, kicks, sn;

    nb = bk_load_u64le(params + BK_CUCKOO_P_NUM_BUCKETS);
    b = bk_load_u32le(params + BK_CUCKOO_P_BUCKET_SIZE);
    f = bk_load_u32le(params + BK_CUCKOO_P_FP_BITS);
    count = bk_load_u64le(params + BK_CUCKOO_P_COUNT);
    kicks = bk_load_u32le(params + BK_CUCKOO_P_MAX_KICKS);
    sn = bk_load_u32le(params + BK_CUCKOO_P_STASH_COUNT);
    if (bk_cuckoo_shape(nb, b, f, &payload_len, reason) != BK_OK)
        return BK_ERR_FORMAT;
    if (payload_len != h->payload_len) {
        *reason = "payload_len does not match the cuckoo table shape";
        return BK_ERR_FORMAT;
    }
    if (kicks == 0 || kicks > BK_CUCKOO_KICKS_LIMIT) {
        *reason = "max_kicks must be in [1, 1000]";
        return BK_ERR_FORMAT;
    }
    if (sn > BK_CUCKOO_STASH_MAX) {
        *reason = "stash_count exceeds the stash size (8)";
        return BK_ERR_FORMAT;
    }
    /* nb * b <= 2^35, so this comparison cannot overflow */
    if (count > nb * b + sn) {
        *reason = "count exceeds the number of slots";
        return BK_ERR_FORMAT;
    }
    for (uint32_t j = 0; j < BK_CUCKOO_STASH_MAX; j++) {
        const uint8_t *e = params + BK_CUCKOO_P_STASH + (size_t)j * BK_CUCKOO_STASH_ENTRY;
        uint64_t bj = bk_load_u64le(e);
        uint32_t fj = bk_load_u32le(e + 8), pad = bk_load_u32le(e + 12);
        if (pad != 0 || (j < sn && (bj >= nb || fj == 0 || (uint64_t)fj > (1ULL << f) - 1)) ||
            (j >= sn && (bj != 0 || fj != 0))) {
            *reason = "invalid stash entry";
            return BK_ERR_FORMAT;
        }
    }
    if (checks & BK_CHECK_DEEP) {
        bk_cuckoo c;
        uint64_t used = 0, tail_byte, k;
        uint8_t fake[BK_CUCKOO_HEADER_LEN];
        /* attach needs a whole buffer: build a header view over params */
        memset(fake, 0, sizeof fake);
        bk_store_u32le(fake + BK_OFF_HEADER_LEN, BK_CUCKOO_HEADER_LEN);
        memcpy(fake + BK_OFF_PARAMS, params, BK_CUCKOO_PARAMS_LEN);
        bk_cuckoo_attach(&c, fake);
        c.table = (uint8_t *)(uintptr_t)payload;
        for (uint64_t i = 0; i < nb; i++)
            for (uint32_t s = 0; s < b; s++)
                used += bk_cuckoo_get(&c, i, s) != 0;
        if (used + sn != count) {
            *reason = "count does not match the stored fingerprints";
            return BK_ERR_FORMAT;
        }
        /* bits past the table, and the guard bytes, are zero */
        tail_byte = c.table_bits >> 3;
        if ((c.table_bits & 7) != 0) {
            if (payload[tail_byte] >> (c.table_bits & 7)) {
                *reason = "bits set past the cuckoo table";
                return BK_ERR_FORMAT;
            }
            tail_byte++;
        }
        for (k = tail_byte; k < payload_len; k++) {
            if (payload[k] != 0) {
                *reason = "bits set past the cuckoo table";
                return BK_ERR_FORMAT;
            }
        }
    }
    return BK_OK;
}

static const bk_kind_param bk_cuckoo_params[] = {
    {"num_buckets", BK_CUCKOO_P_NUM_BUCKETS, 8, BK_PARAM_U64},
    {"bucket_size", BK_CUCKOO_P_BUCKET_SIZE, 4, BK_PARAM_U32},
    {"fingerprint_bits", BK_CUCKOO_P_FP_BITS, 4, BK_PARAM_U32},
    {"capacity", BK_CUCKOO_P_CAPACITY, 8, BK_PARAM_U64},
    {"error_rate", BK_CUCKOO_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"count", BK_CUCKOO_P_COUNT, 8, BK_PARAM_U64},
    {"max_kicks", BK_CUCKOO_P_MAX_KICKS, 4, BK_PARAM_U32},
    {"stash_count", BK_CUCKOO_P_STASH_COUNT, 4, BK_PARAM_U32},
    {"stash", BK_CUCKOO_P_STASH, BK_CUCKOO_STASH_MAX * BK_CUCKOO_STASH_ENTRY, BK_PARAM_BYTES},
};

/* The state operations (bk_kind.h): the core keeps count and the stash
 * itself, so the view is the filter. */
static void bk_cuckoo_ops_attach(void *view, uint8_t *state)
{
    bk_cuckoo_attach((bk_cuckoo *)view, state);
}

static int bk_cuckoo_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_cuckoo_contains((const bk_cuckoo *)view, h);
}

static uint64_t bk_cuckoo_ops_count(const void *view, uint64_t h)
{
    return bk_cuckoo_count((const bk_cuckoo *)view, h);
}

static bk_rc bk_cuckoo_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    int was_new = 0;
    (void)now;
    return count != 1 ? BK_ERR_ARG : bk_cuckoo_add((bk_cuckoo *)view, h, &was_new);
}

static bk_rc bk_cuckoo_ops_remove(void *view, uint64_t h)
{
    return bk_cuckoo_remove((bk_cuckoo *)view, h);
}

static void bk_cuckoo_ops_clear(void *view, int64_t now)
{
    (void)now;
    bk_cuckoo_clear((bk_cuckoo *)view);
}

static double bk_cuckoo_ops_error_rate(const void *view, int64_t now)
{
    (void)now;
    return bk_cuckoo_estimate_error_rate((const bk_cuckoo *)view);
}

static void bk_cuckoo_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                        int64_t now, uint8_t *out)
{
    (void)now;
    bk_cuckoo_contains_many((const bk_cuckoo *)view, hs, n, out);
}

static bk_rc bk_cuckoo_ops_add_many(void *view, const uint64_t *hs, size_t n, int64_t now)
{
    size_t done = 0;
    uint64_t added = 0;
    (void)now;
    return bk_cuckoo_add_many((bk_cuckoo *)view, hs, n, &done, &added);
}

static const bk_kind_ops bk_cuckoo_ops = {
    .view_size = sizeof(bk_cuckoo),
    .attach = bk_cuckoo_ops_attach,
    .contains = bk_cuckoo_ops_contains,
    .contains_many = bk_cuckoo_ops_contains_many,
    .count = bk_cuckoo_ops_count,
    .add = bk_cuckoo_ops_add,
    .add_many = bk_cuckoo_ops_add_many,
    .remove = bk_cuckoo_ops_remove,
    .clear = bk_cuckoo_ops_clear,
    .estimate_error_rate = bk_cuckoo_ops_error_rate,
};

const bk_kind_desc bk_cuckoo_kind = {
    BK_KIND_CUCKOO, "CuckooFilter", "cuckoo", BK_CUCKOO_PARAMS_LEN, BK_CUCKOO_HEADER_LEN,
    BK_KIND_PARAMS(bk_cuckoo_params),
    3, BK_KIND_CAPACITY_DEFAULT,
    4, BK_KIND_ERROR_RATE_DEFAULT,
    -1, 0,
    BK_TRAIT_MERGEABLE | BK_TRAIT_INTERSECTABLE | BK_TRAIT_REMOVABLE | BK_TRAIT_COUNTS |
        BK_TRAIT_KEYED,
    bk_cuckoo_validate,
    &bk_cuckoo_ops,
};
