/*
 * bk_fuse.c -- the binary fuse filter (Graf and Lemire, "Binary Fuse
 * Filters: Fast and Smaller Than Xor Filters", ACM JEA 27, 2022; after
 * their xor filters, "Xor Filters: Faster and Smaller Than Bloom and
 * Cuckoo Filters", JEA 25, 2020).  Written from the papers' descriptions.
 *
 * A static set of n keys becomes an array B of c ~ 1.075-1.125 n f-bit
 * fingerprints such that for every key x with filter hash h = H(x):
 *
 *     fp(h) == B[p_0(h)] ^ B[p_1(h)] ^ ... ^ B[p_{k-1}(h)]       (k = 3 or 4)
 *
 * A query computes the k positions and the XOR: a member always matches
 * (no false negatives, by construction); an absent key matches when the
 * XOR of k effectively random table entries equals its fingerprint, with
 * probability 2^-f.  Space is c f / n bits a key: 1.125 f (3-wise) or
 * 1.075 f (4-wise) for large n, against the lower bound f = log2(1/p);
 * a Bloom filter needs 1.44 f.
 *
 * Positions ("binary fuse"): the array is cut into S + k - 1 segments of
 * L = 2^s slots.  p_0 = mulhi(h, S L) picks a slot in the first S segments;
 * p_j (j >= 1) is the slot p_0 + j L (segment seg(p_0) + j) with its low s
 * bits XORed with 18 further bits of h (bits 18.., 0.., 36.. for j = 1, 2,
 * 3).  So a key's k slots are in k consecutive segments, all distinct, in
 * a window of k L slots: one small region of memory per query, and a
 * construction whose accesses are local.  L must be a power of two for the
 * XOR to stay inside the segment; L <= 2^18 so that 18 bits suffice.
 *
 * Sizing (the paper's empirical formulas, natural logarithms):
 *   3-wise: L = 2^floor(ln n / ln 3.33 + 2.25),
 *           c >= n max(1.125, 0.875 + 0.25 ln 10^6 / ln n)
 *   4-wise: L = 2^floor(ln n / ln 2.91 - 0.5),
 *           c >= n max(1.075, 0.77 + 0.305 ln(6 10^5) / ln n)
 * then S = ceil(c / L) - (k - 1) (at least 1) and c = (S + k - 1) L.  The
 * factor grows for small n, where the random hypergraph peels less often.
 * Which arity: 4-wise below n = 2^17 keys (BK_FUSE_ARITY4_BELOW), 3-wise
 * from there.  The paper offers 4-wise as the smaller (1.075 vs 1.125 f
 * at large n, about 5% less at every n) at the price of a fourth memory
 * read per query and a slower construction.  Below 2^17 keys the table
 * (at most ~140 KiB at f = 8, ~560 KiB at f = 32) sits in L2, so the
 * fourth read costs little and we take the smaller filter; above it each
 * read tends to be a cache miss, and a batch lookup is bound by the lines
 * it touches (a rough look at 10^6 keys on a loaded 2-core machine:
 * contains_many took ~3.4x a blocked Bloom filter's time 4-wise, ~2.5x
 * 3-wise; not a benchmark), so we keep queries at three.  The arity is stored in the header, so a reader
 * answers for either whatever a later release decides.
 *
 * Construction (peeling).  The filter hashes are computed in place of the
 * key hashes and, from 2^16 keys, sorted by their top 11 bits (so by
 * their first slot: the insertion then sweeps the table instead of
 * jumping about it; bk_fuse_block_sort).  For each slot keep the XOR of the filter hashes
 * mapped to it (t2hash, u64) and their number (t2count, u8).  A slot with
 * count 1 names its only key: take the key off its other k - 1 slots
 * (which may leave new slots with count 1) and remember (slot, key) on a
 * stack.  If every key is taken off, assign in reverse order: B[slot] =
 * fp(h) ^ the XOR of the key's other k - 1 entries, which are final when
 * it is assigned (every later-peeled key was assigned before it, and no
 * earlier-peeled key touches its slot).  Memory: the lone-slot queue and
 * the peel stack share one u32 array (a slot enters the queue at most
 * once, as counts only fall, and the stack never outgrows the consumed
 * part of the queue); a peeled slot keeps its t2hash, which is its key.
 * 8 + 1 + 4 = 13 bytes a slot, ~14.6 bytes a key at 1.125, plus the
 * caller's 8 bytes a key of key hashes: ~22.6 bytes a key at the peak
 * (the output table comes on top: c f / 8 bytes).
 *
 * Failures.  Peeling fails when some keys remain (a 2-core in the
 * hypergraph): always when a key hash occurs twice (the two copies share
 * all their slots and cancel in the XOR), rarely otherwise (the paper's
 * sizing makes it unlikely for n >= 10^5; small n retry more often).  A
 * counter that would pass 255 also fails the attempt.  On the first
 * failure the hashes are sorted (LSD radix sort, 6 passes of 11 bits,
 * using t2hash as scratch) and deduplicated; if that removed any, the
 * shape is recomputed for the distinct count and the same seed is tried
 * again; otherwise the next seed.  Seeds are a fixed sequence
 * (bk_fuse_seed_for), tried at most BK_FUSE_MAX_ATTEMPTS times; the one
 * that peeled is stored in the header.  So the filter is a function of the
 * SET of key hashes (their order, multiplicity and the machine do not
 * matter: t2hash/t2count are order-free and the queue is seeded in slot
 * order), which is what lets a distributed build match a local one byte
 * for byte.  (The sizing uses libm's log(); the stored shape is what
 * readers use, so files never depend on it.)
 *
 * State (bk_format.c container, kind 10):
 *   params @64  +0 u32 arity  +4 u32 fingerprint_bits  +8 u64 fuse_seed
 *               +16 u32 segment_length  +20 u32 segment_count
 *               +24 u64 array_length  +32 u64 count  +40 u32 attempts
 *               +44 u32 0
 *   payload @128  array_length fingerprints of f/8 bytes each,
 *                 little-endian; array_length * f / 8 bytes exactly.
 * The empty set has S = 0, array_length = 0, an empty payload and answers
 * False to everything.  The validator checks every field and the segment
 * arithmetic ((S + k - 1) L == array_length, overflow-checked); every
 * payload is a valid table (there is no deep invariant to scan), and the
 * checksum covers its integrity.
 */
#include "bk_fuse.h"
#include "bk_kind.h"

#include <math.h>
#include <stdlib.h>

/* ---- Begin logic for sizing ------------------------------------------- */

static uint32_t bk_fuse_segment_length(uint32_t arity, uint64_t n)
{
    double e;
    if (n <= 1)
        return 4;
    e = arity == 3 ? floor(log((double)n) / log(3.33) + 2.25)
                   : floor(log((double)n) / log(2.91) - 0.5);
    if (e < 0)
        e = 0;
    if (e > 18)
        e = 18;
    return 1u << (unsigned)e;
}

static double bk_fuse_size_factor(uint32_t arity, uint64_t n)
{
    double a;
    if (n <= 1)
        return 1.0;
    a = arity == 3 ? 0.875 + 0.25 * log(1e6) / log((double)n)
                   : 0.77 + 0.305 * log(6e5) / log((double)n);
    if (arity == 3)
        return a > 1.125 ? a : 1.125;
    return a > 1.075 ? a : 1.075;
}

bk_rc bk_fuse_size(uint64_t n, bk_fuse_shape *s, const char **reason)
{
    uint64_t cap, segs, L;
    double want;

    memset(s, 0, sizeof *s);
    s->arity = n < BK_FUSE_ARITY4_BELOW ? 4 : 3;
    if (n == 0) {
        s->segment_length = 1;
        return BK_OK; /* S = 0, array_length = 0: the empty set */
    }
    if (n > BK_FUSE_MAX_SLOTS / 2) {
        *reason = "too many keys for one binary fuse filter (at most 2**31)";
        return BK_ERR_ARG;
    }
    L = bk_fuse_segment_length(s->arity, n);
    want = ceil((double)n * bk_fuse_size_factor(s->arity, n));
    cap = (uint64_t)want;
    if (cap < n)
        cap = n;
    segs = (cap + L - 1) / L; /* segments needed to hold cap slots */
    segs = segs <= s->arity - 1 ? 1 : segs - (s->arity - 1);
    s->segment_length = (uint32_t)L;
    s->segment_count = (uint32_t)segs;
    s->array_length = (segs + s->arity - 1) * L;
    if (s->array_length > BK_FUSE_MAX_SLOTS) {
        *reason = "too many keys for one binary fuse filter";
        return BK_ERR_ARG;
    }
    return BK_OK;
}

/* ---- End logic for sizing --------------------------------------------- */

/* ---- Begin logic for construction ------------------------------------- */

/* Keys in flight in the pipelined loops (insertion, peeling, batch
 * lookups): their slots are computed and prefetched this many keys before
 * they are used, enough to cover a DRAM miss.  A power of two. */
#define BK_FUSE_PIPE 16

/* The attempt-th seed of the fixed sequence (attempt 0, 1, ...). */
static uint64_t bk_fuse_seed_for(uint32_t attempt)
{
    return bk_mix64(UINT64_C(0x9E3779B97F4A7C15) * ((uint64_t)attempt + 1));
}

static void bk_fuse_view_of(bk_fuse *fu, const bk_fuse_shape *s, uint32_t f, uint64_t seed)
{
    memset(fu, 0, sizeof *fu);
    fu->arity = s->arity;
    fu->f = f;
    fu->fuse_seed = seed;
    fu->segment_length = s->segment_length;
    fu->segment_mask = s->segment_length - 1;
    fu->segment_count = s->segment_count;
    fu->array_length = s->array_length;
    fu->seg_count_length = (uint64_t)s->segment_count * s->segment_length;
}

/* Sort hs[0..n) ascending (LSD radix, 11-bit digits, 6 passes; a pass
 * whose digit is the same for every value is skipped) with tmp[0..n) as
 * scratch, then drop repeats.  Returns the distinct count (in hs), or
 * SIZE_MAX when the 96 KiB of digit counts cannot be allocated. */
#define BK_FUSE_RADIX_BITS 11
#define BK_FUSE_RADIX_PASSES 6 /* 6 * 11 >= 64 */
static size_t bk_fuse_sort_unique(uint64_t *hs, uint64_t *tmp, size_t n)
{
    enum { R = 1u << BK_FUSE_RADIX_BITS };
    size_t *hist = (size_t *)calloc((size_t)BK_FUSE_RADIX_PASSES * R, sizeof(size_t));
    uint64_t *src = hs, *dst = tmp, *t;
    size_t i, m;
    if (hist == NULL)
        return SIZE_MAX;
    for (i = 0; i < n; i++)
        for (unsigned d = 0; d < BK_FUSE_RADIX_PASSES; d++)
            hist[d * R + ((hs[i] >> (d * BK_FUSE_RADIX_BITS)) & (R - 1))]++;
    for (unsigned d = 0; d < BK_FUSE_RADIX_PASSES; d++) {
        size_t *hd = hist + (size_t)d * R, sum = 0, c;
        int trivial = 0;
        for (unsigned b = 0; b < R; b++)
            if (hd[b] == n)
                trivial = 1;
        if (trivial)
            continue;
        for (unsigned b = 0; b < R; b++) {
            c = hd[b];
            hd[b] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            dst[hd[(src[i] >> (d * BK_FUSE_RADIX_BITS)) & (R - 1)]++] = src[i];
        t = src;
        src = dst;
        dst = t;
    }
    free(hist);
    if (src != hs)
        memcpy(hs, src, n * sizeof *hs);
    for (i = 0, m = 0; i < n; i++)
        if (m == 0 || hs[i] != hs[m - 1])
            hs[m++] = hs[i];
    return m;
}

static int bk_fuse_alloc(bk_fuse_work *w, uint64_t slots)
{
    if (slots <= w->alloc_slots)
        return 0;
    free(w->t2hash);
    free(w->t2count);
    free(w->order);
    w->t2hash = (uint64_t *)malloc((size_t)slots * sizeof(uint64_t));
    w->t2count = (uint8_t *)malloc((size_t)slots);
    w->order = (uint32_t *)malloc((size_t)slots * sizeof(uint32_t));
    if (w->t2hash == NULL || w->t2count == NULL || w->order == NULL) {
        w->alloc_slots = 0;
        return -1;
    }
    w->alloc_slots = slots;
    return 0;
}

/* The inverse of bk_mix64 (each step of it is invertible: an xorshift by
 * r is undone by XORing in the shifts by r, 2r, ...; a multiplication by
 * an odd constant by its inverse mod 2^64, found by Newton's iteration). */
static uint64_t bk_fuse_inv_odd(uint64_t a)
{
    uint64_t x = a; /* correct to 3 bits; each step doubles them: 6 steps > 64 */
    for (int i = 0; i < 6; i++)
        x *= 2 - a * x;
    return x;
}

static uint64_t bk_fuse_unxorshift(uint64_t y, unsigned r)
{
    uint64_t x = y;
    for (unsigned s = r; s < 64; s += r)
        x ^= y >> s;
    return x;
}

static uint64_t bk_fuse_unmix(uint64_t x, uint64_t inv1, uint64_t inv2)
{
    x = bk_fuse_unxorshift(x, 31);
    x *= inv2;
    x = bk_fuse_unxorshift(x, 27);
    x *= inv1;
    return bk_fuse_unxorshift(x, 30);
}

/* hs[0..n) hold filter hashes for `seed` (bk_fuse_try leaves them so):
 * back to the key hashes, as a set (the order is the sorted one). */
static void bk_fuse_restore(uint64_t *hs, size_t n, uint64_t seed)
{
    uint64_t inv1 = bk_fuse_inv_odd(UINT64_C(0xBF58476D1CE4E5B9));
    uint64_t inv2 = bk_fuse_inv_odd(UINT64_C(0x94D049BB133111EB));
    for (size_t i = 0; i < n; i++)
        hs[i] = bk_fuse_unmix(hs[i], inv1, inv2) - seed;
}

/* Sort the filter hashes by their top BK_FUSE_BLOCK_BITS bits (one
 * counting-sort pass through tmp, then back): since p0 = mulhi(h, S L) is
 * monotone in h, the keys then come in the order of their first slot,
 * and the insertion walks the table front to back instead of at random
 * (the paper's remedy for cache misses at large n: at 10^7 keys a block
 * of keys touches a window of ~3 segments, a few hundred KiB, not the
 * whole 100 MB of construction arrays).  Skipped for small n, where the
 * arrays are cache-resident anyway. */
#define BK_FUSE_BLOCK_BITS 11
#define BK_FUSE_SORT_FROM 65536
static void bk_fuse_block_sort(uint64_t *hs, uint64_t *tmp, size_t n)
{
    enum { R = 1u << BK_FUSE_BLOCK_BITS };
    size_t start[R + 1];
    size_t i, sum = 0;
    memset(start, 0, sizeof start);
    for (i = 0; i < n; i++)
        start[hs[i] >> (64 - BK_FUSE_BLOCK_BITS)]++;
    for (unsigned b = 0; b < R; b++) {
        size_t cnt = start[b];
        start[b] = sum;
        sum += cnt;
    }
    for (i = 0; i < n; i++)
        tmp[start[hs[i] >> (64 - BK_FUSE_BLOCK_BITS)]++] = hs[i];
    memcpy(hs, tmp, n * sizeof *hs);
}

/* One attempt with shape w->shape and seed `seed`: 1 when every hash
 * peeled (w->order[0..n) is then the peel order), else 0.  hs[0..n) is
 * replaced by the filter hashes of the keys, block-sorted: the caller
 * restores the key hashes (bk_fuse_restore) before another attempt. */
static int bk_fuse_try(bk_fuse_work *w, uint64_t *hs, size_t n, uint64_t seed)
{
    bk_fuse fu;
    uint64_t c = w->shape.array_length, p[4];
    uint64_t *t2h = w->t2hash;
    uint8_t *t2c = w->t2count;
    uint32_t *q = w->order, k = w->shape.arity;
    size_t qr = 0, qw = 0, sp = 0, i;
    uint64_t ring_p[BK_FUSE_PIPE][4];
    int overflow = 0;

    bk_fuse_view_of(&fu, &w->shape, w->f, seed);
    for (i = 0; i < n; i++)
        hs[i] = bk_fuse_mix(hs[i], seed);
    if (n >= BK_FUSE_SORT_FROM)
        bk_fuse_block_sort(hs, t2h, n); /* t2hash (c >= n slots) as scratch */
    memset(t2h, 0, (size_t)c * sizeof *t2h);
    memset(t2c, 0, (size_t)c);
    /* Insertion, software-pipelined: a key's slots are computed and their
     * lines prefetched BK_FUSE_PIPE keys before they are updated. */
    for (i = 0; i < n + BK_FUSE_PIPE; i++) {
        if (i >= BK_FUSE_PIPE) {
            size_t j = (i - BK_FUSE_PIPE) & (BK_FUSE_PIPE - 1);
            uint64_t h = hs[i - BK_FUSE_PIPE];
            for (uint32_t t = 0; t < k; t++) {
                uint64_t pt = ring_p[j][t];
                t2h[pt] ^= h;
                overflow |= ++t2c[pt] == 0;
            }
        }
        if (i < n) {
            size_t j = i & (BK_FUSE_PIPE - 1);
            bk_fuse_positions(&fu, hs[i], ring_p[j]);
            for (uint32_t t = 0; t < k; t++) {
                bk_prefetch_w(t2h + ring_p[j][t]);
                bk_prefetch_w(t2c + ring_p[j][t]);
            }
        }
    }
    if (overflow)
        return 0;
    for (uint64_t s = 0; s < c; s++)
        if (t2c[s] == 1)
            q[qw++] = (uint32_t)s;
    while (qr < qw) {
        uint32_t s;
        uint64_t h;
        /* Two-stage prefetch down the queue: the slot 2D ahead, then the
         * slots of the key the entry D ahead holds now (it may change
         * before its turn: then a prefetch is wasted, nothing else). */
        if (qr + 2 * BK_FUSE_PIPE < qw) {
            uint32_t s2 = q[qr + 2 * BK_FUSE_PIPE];
            bk_prefetch_r(t2h + s2);
            bk_prefetch_r(t2c + s2);
        }
        if (qr + BK_FUSE_PIPE < qw) {
            uint32_t s1 = q[qr + BK_FUSE_PIPE];
            bk_fuse_positions(&fu, t2h[s1], p);
            for (uint32_t t = 0; t < k; t++) {
                bk_prefetch_w(t2h + p[t]);
                bk_prefetch_w(t2c + p[t]);
            }
        }
        s = q[qr++];
        if (t2c[s] != 1)
            continue; /* emptied since it was queued */
        h = t2h[s];
        q[sp++] = s; /* sp < qr: overwrites a consumed queue entry */
        t2c[s] = 0;  /* peeled; t2h[s] keeps its key */
        bk_fuse_positions(&fu, h, p);
        for (uint32_t j = 0; j < k; j++) {
            if (p[j] == s)
                continue;
            t2h[p[j]] ^= h;
            if (--t2c[p[j]] == 1)
                q[qw++] = (uint32_t)p[j];
        }
    }
    return sp == n;
}

bk_rc bk_fuse_peel(bk_fuse_work *w, uint64_t *hashes, size_t n, uint32_t f,
                   const char **reason)
{
    uint32_t attempt = 0;
    int deduped = 0;
    bk_rc rc;

    memset(w, 0, sizeof *w);
    w->f = f;
    if (f != 8 && f != 16 && f != 32) {
        *reason = "fingerprint_bits must be 8, 16 or 32";
        return BK_ERR_ARG;
    }
    rc = bk_fuse_size(n, &w->shape, reason);
    if (rc != BK_OK)
        return rc;
    if (n == 0)
        return BK_OK;
    if (bk_fuse_alloc(w, w->shape.array_length) < 0) {
        *reason = "binary fuse construction arrays (13 bytes a slot)";
        return BK_ERR_NOMEM;
    }
    while (attempt < BK_FUSE_MAX_ATTEMPTS) {
        uint64_t seed = bk_fuse_seed_for(attempt);
        if (bk_fuse_try(w, hashes, n, seed)) {
            w->fuse_seed = seed;
            w->attempts = attempt + 1;
            w->count = n;
            bk_fuse_restore(hashes, n, seed); /* the caller's array: key hashes again */
            return BK_OK;
        }
        bk_fuse_restore(hashes, n, seed);
        if (!deduped) {
            /* t2hash has array_length >= n slots: the sort's scratch. */
            size_t m = bk_fuse_sort_unique(hashes, w->t2hash, n);
            deduped = 1;
            if (m == SIZE_MAX) {
                *reason = "binary fuse construction: the sort's digit counts";
                return BK_ERR_NOMEM;
            }
            if (m != n) {
                n = m;
                rc = bk_fuse_size(n, &w->shape, reason);
                if (rc != BK_OK)
                    return rc;
                if (bk_fuse_alloc(w, w->shape.array_length) < 0) {
                    *reason = "binary fuse construction arrays (13 bytes a slot)";
                    return BK_ERR_NOMEM;
                }
                continue; /* the same seed, on the distinct set */
            }
        }
        attempt++;
    }
    *reason = "binary fuse construction failed: no seed peeled in 64 attempts "
              "(this should not happen for distinct keys; please report it)";
    return BK_ERR_CAPACITY;
}

uint64_t bk_fuse_payload_len(const bk_fuse_work *w)
{
    return w->shape.array_length * (w->f / 8);
}

static void bk_fuse_put(uint8_t *fps, uint32_t f, uint64_t i, uint32_t v)
{
    switch (f) {
    case 8:
        fps[i] = (uint8_t)v;
        break;
    case 16:
        bk_store_u16le(fps + 2 * i, (uint16_t)v);
        break;
    default:
        bk_store_u32le(fps + 4 * i, v);
        break;
    }
}

void bk_fuse_assign(const bk_fuse_work *w, uint8_t *payload)
{
    bk_fuse fu;
    uint64_t p[4];
    size_t i = (size_t)w->count;

    bk_fuse_view_of(&fu, &w->shape, w->f, w->fuse_seed);
    fu.fps = payload;
    memset(payload, 0, (size_t)bk_fuse_payload_len(w));
    while (i-- > 0) {
        uint32_t s = w->order[i];
        /* Two-stage prefetch down the (known) order: the key's slot 2D
         * ahead, then the table entries of the key D ahead. */
        if (i >= 2 * BK_FUSE_PIPE)
            bk_prefetch_r(w->t2hash + w->order[i - 2 * BK_FUSE_PIPE]);
        if (i >= BK_FUSE_PIPE) {
            bk_fuse_positions(&fu, w->t2hash[w->order[i - BK_FUSE_PIPE]], p);
            for (uint32_t t = 0; t < fu.arity; t++)
                bk_prefetch_w(payload + p[t] * (w->f / 8));
        }
        uint64_t h = w->t2hash[s];
        uint32_t v = bk_fuse_fingerprint(h);
        bk_fuse_positions(&fu, h, p);
        for (uint32_t j = 0; j < fu.arity; j++)
            if (p[j] != s)
                v ^= bk_fuse_get(&fu, p[j]);
        bk_fuse_put(payload, w->f, s, v);
    }
}

void bk_fuse_work_free(bk_fuse_work *w)
{
    free(w->t2hash);
    free(w->t2count);
    free(w->order);
    w->t2hash = NULL;
    w->t2count = NULL;
    w->order = NULL;
    w->alloc_slots = 0;
}

void bk_fuse_init_state(uint8_t *buf, const bk_fuse_work *w, uint64_t seed, int keyed,
                        uint64_t key_check)
{
    uint8_t *params = buf + BK_OFF_PARAMS;

    bk_format_init_header(buf, BK_KIND_BINARY_FUSE, BK_FUSE_HEADER_LEN, BK_FUSE_PARAMS_LEN,
                          bk_fuse_payload_len(w), seed, keyed, key_check);
    bk_store_u32le(params + BK_FUSE_P_ARITY, w->shape.arity);
    bk_store_u32le(params + BK_FUSE_P_FP_BITS, w->f);
    bk_store_u64le(params + BK_FUSE_P_FUSE_SEED, w->fuse_seed);
    bk_store_u32le(params + BK_FUSE_P_SEGMENT_LENGTH, w->shape.segment_length);
    bk_store_u32le(params + BK_FUSE_P_SEGMENT_COUNT, w->shape.segment_count);
    bk_store_u64le(params + BK_FUSE_P_ARRAY_LENGTH, w->shape.array_length);
    bk_store_u64le(params + BK_FUSE_P_COUNT, w->count);
    bk_store_u32le(params + BK_FUSE_P_ATTEMPTS, w->attempts);
}

/* ---- End logic for construction --------------------------------------- */

/* ---- Begin logic for the validator and queries ------------------------ */

bk_rc bk_fuse_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                       int checks, const char **reason)
{
    uint32_t k, f, L, S, attempts;
    uint64_t array_length, count, want, bytes;
    (void)payload;
    (void)checks;

    k = bk_load_u32le(params + BK_FUSE_P_ARITY);
    f = bk_load_u32le(params + BK_FUSE_P_FP_BITS);
    L = bk_load_u32le(params + BK_FUSE_P_SEGMENT_LENGTH);
    S = bk_load_u32le(params + BK_FUSE_P_SEGMENT_COUNT);
    array_length = bk_load_u64le(params + BK_FUSE_P_ARRAY_LENGTH);
    count = bk_load_u64le(params + BK_FUSE_P_COUNT);
    attempts = bk_load_u32le(params + BK_FUSE_P_ATTEMPTS);
    if (k != 3 && k != 4) {
        *reason = "binary fuse arity must be 3 or 4";
        return BK_ERR_FORMAT;
    }
    if (f != 8 && f != 16 && f != 32) {
        *reason = "binary fuse fingerprint_bits must be 8, 16 or 32";
        return BK_ERR_FORMAT;
    }
    if (L == 0 || (L & (L - 1)) != 0 || L > BK_FUSE_MAX_SEGMENT_LENGTH) {
        *reason = "binary fuse segment_length must be a power of two in [1, 2**18]";
        return BK_ERR_FORMAT;
    }
    if (S == 0) {
        want = 0; /* the empty set */
    } else if (bk_mul_overflow((uint64_t)S + k - 1, L, &want)) {
        *reason = "binary fuse segment arithmetic overflows";
        return BK_ERR_FORMAT;
    }
    if (array_length != want) {
        *reason = "binary fuse array_length is not (segment_count + arity - 1) * segment_length";
        return BK_ERR_FORMAT;
    }
    if (array_length > BK_FUSE_MAX_SLOTS) {
        *reason = "binary fuse array_length exceeds 2**32 - 1";
        return BK_ERR_FORMAT;
    }
    if (count > array_length || (count == 0) != (array_length == 0)) {
        *reason = "binary fuse count must be in [1, array_length] (0 only for the empty set)";
        return BK_ERR_FORMAT;
    }
    if (attempts > BK_FUSE_MAX_ATTEMPTS || (attempts == 0) != (count == 0)) {
        *reason = "binary fuse attempts out of range";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u32le(params + BK_FUSE_P_RESERVED) != 0) {
        *reason = "reserved binary fuse parameter is not zero";
        return BK_ERR_FORMAT;
    }
    bytes = array_length * (f / 8); /* < 2^34: no overflow */
    if (bytes != h->payload_len) {
        *reason = "payload_len does not match array_length and fingerprint_bits";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

static const bk_kind_param bk_fuse_params[] = {
    {"arity", BK_FUSE_P_ARITY, 4, BK_PARAM_U32},
    {"fingerprint_bits", BK_FUSE_P_FP_BITS, 4, BK_PARAM_U32},
    {"fuse_seed", BK_FUSE_P_FUSE_SEED, 8, BK_PARAM_U64},
    {"segment_length", BK_FUSE_P_SEGMENT_LENGTH, 4, BK_PARAM_U32},
    {"segment_count", BK_FUSE_P_SEGMENT_COUNT, 4, BK_PARAM_U32},
    {"array_length", BK_FUSE_P_ARRAY_LENGTH, 8, BK_PARAM_U64},
    {"count", BK_FUSE_P_COUNT, 8, BK_PARAM_U64},
    {"attempts", BK_FUSE_P_ATTEMPTS, 4, BK_PARAM_U32},
};

/* The state operations (bk_kind.h): static, so only answers. */
static void bk_fuse_ops_attach(void *view, uint8_t *state)
{
    bk_fuse_attach((bk_fuse *)view, state);
}

static int bk_fuse_ops_contains(const void *view, uint64_t h, int64_t now)
{
    (void)now;
    return bk_fuse_contains((const bk_fuse *)view, h);
}

static void bk_fuse_ops_contains_many(const void *view, const uint64_t *hs, size_t n,
                                      int64_t now, uint8_t *out)
{
    (void)now;
    bk_fuse_contains_many((const bk_fuse *)view, hs, n, out);
}

static const bk_kind_ops bk_fuse_ops = {
    .view_size = sizeof(bk_fuse),
    .attach = bk_fuse_ops_attach,
    .contains = bk_fuse_ops_contains,
    .contains_many = bk_fuse_ops_contains_many,
};

/* Static: sized by its keys (no capacity), its rate is 2^-f (no range). */
const bk_kind_desc bk_fuse_kind = {
    BK_KIND_BINARY_FUSE, "BinaryFuseFilter", "binary fuse", BK_FUSE_PARAMS_LEN, BK_FUSE_HEADER_LEN,
    BK_KIND_PARAMS(bk_fuse_params),
    -1, 0, NULL,
    -1, BK_KIND_NO_ERROR_RATE,
    -1, 0,
    BK_TRAIT_STATIC | BK_TRAIT_KEYED,
    bk_fuse_validate,
    &bk_fuse_ops,
};

void bk_fuse_attach(bk_fuse *fu, const uint8_t *buf)
{
    const uint8_t *params = buf + BK_OFF_PARAMS;
    bk_fuse_shape s;
    s.arity = bk_load_u32le(params + BK_FUSE_P_ARITY);
    s.segment_length = bk_load_u32le(params + BK_FUSE_P_SEGMENT_LENGTH);
    s.segment_count = bk_load_u32le(params + BK_FUSE_P_SEGMENT_COUNT);
    s.array_length = bk_load_u64le(params + BK_FUSE_P_ARRAY_LENGTH);
    bk_fuse_view_of(fu, &s, bk_load_u32le(params + BK_FUSE_P_FP_BITS),
                    bk_load_u64le(params + BK_FUSE_P_FUSE_SEED));
    fu->count = bk_load_u64le(params + BK_FUSE_P_COUNT);
    fu->fps = buf + bk_load_u32le(buf + BK_OFF_HEADER_LEN);
}

/* Batch lookup, software-pipelined: each key's filter hash and slots are
 * computed once, BK_FUSE_PIPE keys ahead of its check, and its k slots
 * prefetched then; the check itself is specialized per fingerprint width
 * and arity (no per-slot switch). */
#define BK_FUSE_BATCH(NAME, GET, ARITY)                                              \
    static void NAME(const bk_fuse *fu, const uint64_t *hs, size_t n, uint8_t *out)  \
    {                                                                                \
        uint64_t ring_p[BK_FUSE_PIPE][4];                                            \
        uint32_t ring_fp[BK_FUSE_PIPE];                                              \
        uint32_t fmask = fu->f == 32 ? 0xFFFFFFFFu : (1u << fu->f) - 1;              \
        const uint8_t *b = fu->fps;                                                  \
        size_t bytes = fu->f / 8;                                                    \
        for (size_t i = 0; i < n + BK_FUSE_PIPE; i++) {                              \
            if (i >= BK_FUSE_PIPE) {                                                 \
                size_t j = i - BK_FUSE_PIPE;                                         \
                const uint64_t *p = ring_p[j & (BK_FUSE_PIPE - 1)];                  \
                uint32_t v = ring_fp[j & (BK_FUSE_PIPE - 1)] ^ GET(b, p[0]) ^        \
                             GET(b, p[1]) ^ GET(b, p[2]);                            \
                if (ARITY == 4)                                                      \
                    v ^= GET(b, p[3]);                                               \
                out[j] = (v & fmask) == 0;                                           \
            }                                                                        \
            if (i < n) {                                                             \
                uint64_t h = bk_fuse_mix(hs[i], fu->fuse_seed);                      \
                uint64_t *p = ring_p[i & (BK_FUSE_PIPE - 1)];                        \
                bk_fuse_positions(fu, h, p);                                         \
                ring_fp[i & (BK_FUSE_PIPE - 1)] = bk_fuse_fingerprint(h);            \
                for (uint32_t k = 0; k < ARITY; k++)                                 \
                    bk_prefetch_r(b + p[k] * bytes);                                 \
            }                                                                        \
        }                                                                            \
    }
#define BK_FUSE_GET8(b, i) ((uint32_t)(b)[i])
#define BK_FUSE_GET16(b, i) ((uint32_t)bk_load_u16le((b) + 2 * (i)))
#define BK_FUSE_GET32(b, i) bk_load_u32le((b) + 4 * (i))
BK_FUSE_BATCH(bk_fuse_batch_8_3, BK_FUSE_GET8, 3)
BK_FUSE_BATCH(bk_fuse_batch_8_4, BK_FUSE_GET8, 4)
BK_FUSE_BATCH(bk_fuse_batch_16_3, BK_FUSE_GET16, 3)
BK_FUSE_BATCH(bk_fuse_batch_16_4, BK_FUSE_GET16, 4)
BK_FUSE_BATCH(bk_fuse_batch_32_3, BK_FUSE_GET32, 3)
BK_FUSE_BATCH(bk_fuse_batch_32_4, BK_FUSE_GET32, 4)

void bk_fuse_contains_many(const bk_fuse *fu, const uint64_t *hs, size_t n, uint8_t *out)
{
    if (fu->array_length == 0) {
        memset(out, 0, n);
        return;
    }
    switch (fu->f * 10 + fu->arity) {
    case 83:
        bk_fuse_batch_8_3(fu, hs, n, out);
        break;
    case 84:
        bk_fuse_batch_8_4(fu, hs, n, out);
        break;
    case 163:
        bk_fuse_batch_16_3(fu, hs, n, out);
        break;
    case 164:
        bk_fuse_batch_16_4(fu, hs, n, out);
        break;
    case 323:
        bk_fuse_batch_32_3(fu, hs, n, out);
        break;
    default:
        bk_fuse_batch_32_4(fu, hs, n, out);
        break;
    }
}

/* ---- End logic for the validator and queries -------------------------- */
