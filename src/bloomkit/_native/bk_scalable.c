/*
 * bk_scalable.c -- the scalable Bloom filter (Almeida, Baquero, Preguica
 * and Hutchison, "Scalable Bloom Filters", Information Processing Letters
 * 101(6), 2007): the validator and the chain arithmetic.
 *
 * A chain of L Bloom filters ("links").  Link i has capacity n0 s^i
 * (growth s, default 2) and error rate p_i = P (1 - r) r^i (tightening r,
 * default 0.5), so that the compound rate of the chain -- a query is a
 * false positive if ANY link says yes -- is at most
 *     sum_i p_i = P (1 - r) sum_i r^i < P (1 - r) / (1 - r) = P
 * for any number of links.  Keys are added to the newest link only, and a
 * key some link already reports present is not added again (the paper's
 * rule; it also keeps the links' counts honest).  When the newest link has
 * taken its capacity, a new one is appended.  Each link costs
 * ln(1/r) / (ln 2)^2 more bits per key than the one before (1.44 at
 * r = 0.5): the price of a bound that holds for any n.  With s = 2 the
 * newest link holds about half of the keys; memory is measured in
 * docs/scalable.md.
 *
 * Every link probes with the SAME 64-bit key hash (bk_keys.h) and the
 * same double-hashing sequence, only reduced to its own range: a query
 * hashes once, derives the sequence once and probes L links.  The links'
 * false positives stay independent because their key sets are disjoint,
 * and the bound above is a union bound, which needs no independence at
 * all.  The order of the probes (the two newest links depth first, then
 * one branch-free round over the first three probes of every older link,
 * so that their cache misses overlap) is in bk_scalable.h; it changes no
 * answer and no stored bit.
 *
 * Limits (R15: a crafted file with an absurd chain is refused):
 *   - 1 <= L <= 64, 2 <= s <= 16, 0 < P < 1, 0 < r < 1, 1 <= n0 <= 2^48;
 *   - link i is a valid Bloom container (bk_format_validate) of the
 *     chain's layout, seed and hashing, with capacity exactly n0 s^i
 *     (<= 2^48) and error rate P (1 - r) r^i (relative tolerance 1e-9);
 *   - the links fill the payload exactly.
 * In practice the error-rate floors end a chain first: 1e-12 (classic) or
 * 1e-7 (blocked) below which design.py refuses to size a link.
 *
 * State (bk_format.c container, kind 4):
 *   params @64   +0 f64 P  +8 f64 r  +16 u64 n0  +24 u32 s  +28 u32 L
 *                +32 u32 layout (0 classic, 1 blocked links of layout
 *                version 0, 2 blocked links of version 1: BK_BLOOM_LAYOUT_*)
 *                +36 u32 0
 *                +40 L x u64 link_len (each link's container length)
 *   header_len = align64(64 + 40 + 8L)
 *   payload      the L link containers back to back, each a complete
 *                kind-1 or kind-2 state (128-byte header + bits, see
 *                bk_bloom.c) starting at a 64-byte aligned offset and
 *                zero-padded to a multiple of 64.  A link's own checksum
 *                field is 0 (the outer checksum covers the payload) and
 *                its flags carry only KEYED.
 */
#include "bk_scalable.h"
#include "bk_kind.h"

#include <math.h>

#include "bk_endian.h"

uint64_t bk_scalable_link_capacity(uint64_t n0, uint32_t growth, uint32_t i)
{
    uint64_t c = n0;
    for (uint32_t j = 0; j < i; j++)
        if (bk_mul_overflow(c, growth, &c) || c > BK_SCALABLE_MAX_CAPACITY)
            return 0;
    return c > BK_SCALABLE_MAX_CAPACITY ? 0 : c;
}

double bk_scalable_link_error(double p, double r, uint32_t i)
{
    return p * (1.0 - r) * pow(r, (double)i);
}

bk_rc bk_scalable_check_link(double p, double r, uint64_t n0, uint32_t growth, uint32_t i,
                             uint64_t capacity, double error_rate, const char **reason)
{
    uint64_t want = bk_scalable_link_capacity(n0, growth, i);
    double e = bk_scalable_link_error(p, r, i);
    if (want == 0 || capacity != want) {
        *reason = "link capacity is not initial_capacity * growth**index (or exceeds " BK_CAPACITY_MAX_TEXT ")";
        return BK_ERR_FORMAT;
    }
    if (!(fabs(error_rate - e) <= 1e-9 * e)) {
        *reason = "link error rate is not error_rate * (1 - tightening) * tightening**index";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

bk_rc bk_scalable_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                           int checks, const char **reason)
{
    double p, r;
    uint64_t n0, off = 0;
    uint32_t growth, num_links, layout, want_version;
    unsigned want_kind;

    p = bk_load_f64le(params + BK_SCALABLE_P_ERROR_RATE);   /* in range: the prologue */
    r = bk_load_f64le(params + BK_SCALABLE_P_TIGHTENING);
    n0 = bk_load_u64le(params + BK_SCALABLE_P_INITIAL);      /* in range: the prologue */
    growth = bk_load_u32le(params + BK_SCALABLE_P_GROWTH);
    num_links = bk_load_u32le(params + BK_SCALABLE_P_NUM_LINKS);
    layout = bk_load_u32le(params + BK_SCALABLE_P_LAYOUT);
    if (num_links == 0 || num_links > BK_SCALABLE_MAX_LINKS) {
        *reason = "scalable chain length must be in [1, 64]";
        return BK_ERR_FORMAT;
    }
    if (h->params_len < bk_scalable_params_len(num_links)) {
        *reason = "scalable link table truncated";
        return BK_ERR_FORMAT;
    }
    if (h->version_minor == 0 && h->header_len != bk_scalable_header_len(num_links)) {
        *reason = "scalable header_len must be align64(104 + 8 * num_links) in format 1.0";
        return BK_ERR_FORMAT;
    }
    if (!(r > 0.0 && r < 1.0)) { /* false for NaN */
        *reason = "tightening must be in (0, 1)";
        return BK_ERR_FORMAT;
    }
    if (growth < BK_SCALABLE_MIN_GROWTH || growth > BK_SCALABLE_MAX_GROWTH) {
        *reason = "growth must be in [2, 16]";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u32le(params + BK_SCALABLE_P_RESERVED) != 0) {
        *reason = "bad scalable layout or reserved field";
        return BK_ERR_FORMAT;
    }
    if (layout > BK_BLOOM_LAYOUT_MAX) {
        *reason = "unsupported scalable layout";   /* a later bloomkit's */
        return BK_ERR_UNSUPPORTED;
    }
    want_kind = layout ? BK_KIND_BLOCKED_BLOOM : BK_KIND_BLOOM;
    want_version = layout == BK_BLOOM_LAYOUT_BLOCKED_V1 ? BK_BLOOM_VERSION_STREAM
                                                       : BK_BLOOM_VERSION_SALT;
    for (uint32_t i = 0; i < num_links; i++) {
        uint64_t len = bk_load_u64le(params + BK_SCALABLE_P_LINK_LENS + 8u * i);
        uint64_t padded = bk_format_align(len), end;
        const uint8_t *link = payload + off;
        const uint8_t *lp;
        bk_header lh;
        bk_rc rc;

        if (len < BK_BLOOM_HEADER_LEN || padded == 0 || bk_add_overflow(off, padded, &end) ||
            end > h->payload_len) {
            *reason = "scalable link length out of range";
            return BK_ERR_FORMAT;
        }
        rc = bk_format_validate(link, len, checks & BK_CHECK_DEEP, &lh, reason);
        if (rc != BK_OK)
            return rc == BK_ERR_UNCLEAN ? BK_ERR_FORMAT : rc;
        if (lh.kind != want_kind) {
            *reason = "scalable link kind does not match the chain's layout";
            return BK_ERR_FORMAT;
        }
        if (lh.seed != h->seed || lh.hash_alg != h->hash_alg || lh.key_check != h->key_check ||
            lh.flags != (h->flags & BK_FLAG_KEYED) || lh.checksum != 0) {
            *reason = "scalable link seed, hashing, flags or checksum field disagree with "
                      "the chain";
            return BK_ERR_FORMAT;
        }
        lp = link + BK_OFF_PARAMS;
        if (bk_load_u32le(lp + BK_BLOOM_P_LAYOUT_VERSION) != want_version) {
            *reason = "scalable link layout version does not match the chain's layout";
            return BK_ERR_FORMAT;
        }
        rc = bk_scalable_check_link(p, r, n0, growth, i,
                                    bk_load_u64le(lp + BK_BLOOM_P_CAPACITY),
                                    bk_load_f64le(lp + BK_BLOOM_P_ERROR_RATE), reason);
        if (rc != BK_OK)
            return rc;
        if (checks & BK_CHECK_DEEP) {
            for (uint64_t j = len; j < padded; j++)
                if (link[j] != 0) {
                    *reason = "scalable link padding is not zero";
                    return BK_ERR_FORMAT;
                }
        }
        off = end;
    }
    if (off != h->payload_len) {
        *reason = "scalable links do not fill the payload exactly";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

static const bk_kind_param bk_scalable_params[] = {
    {"error_rate", BK_SCALABLE_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"tightening", BK_SCALABLE_P_TIGHTENING, 8, BK_PARAM_F64},
    {"initial_capacity", BK_SCALABLE_P_INITIAL, 8, BK_PARAM_U64},
    {"growth", BK_SCALABLE_P_GROWTH, 4, BK_PARAM_U32},
    {"num_links", BK_SCALABLE_P_NUM_LINKS, 4, BK_PARAM_U32},
    {"layout", BK_SCALABLE_P_LAYOUT, 4, BK_PARAM_U32},
};

uint32_t bk_scalable_attach(uint8_t *state, bk_bloom *links, uint8_t **link_bufs,
                            bk_scalable_soa *soa)
{
    uint8_t *payload = state + bk_load_u32le(state + BK_OFF_HEADER_LEN);
    uint32_t n = bk_load_u32le(state + BK_OFF_PARAMS + BK_SCALABLE_P_NUM_LINKS);
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        link_bufs[i] = payload + off;
        bk_bloom_attach(&links[i], payload + off);
        off += bk_format_align(bk_scalable_link_len(state, i));
    }
    bk_scalable_soa_attach(soa, links, n);
    return n;
}

double bk_scalable_estimate_error_rate(const bk_bloom *links, uint32_t n)
{
    double miss = 1.0;
    for (uint32_t i = 0; i < n; i++)
        miss *= 1.0 - bk_bloom_estimate_error_rate(&links[i]);
    return 1.0 - miss;
}

/* The state operations (bk_kind.h).  The view holds every link; a key goes
 * to the newest link unless some link reports it (the glue's add), and
 * the link's count (adds that found the key absent) is kept.  The chain
 * never grows here: a new key when the newest link has taken its capacity
 * answers BK_ERR_CAPACITY.  clear keeps every link (ScalableBloomFilter
 * .clear() goes back to one). */
typedef struct {
    bk_bloom links[BK_SCALABLE_MAX_LINKS];
    uint8_t *link_bufs[BK_SCALABLE_MAX_LINKS];
    bk_scalable_soa soa;
    uint32_t n;
} bk_scalable_view;

static void bk_scalable_ops_attach(void *view, uint8_t *state)
{
    bk_scalable_view *v = (bk_scalable_view *)view;
    v->n = bk_scalable_attach(state, v->links, v->link_bufs, &v->soa);
}

static int bk_scalable_ops_contains(const void *view, uint64_t h, int64_t now)
{
    const bk_scalable_view *v = (const bk_scalable_view *)view;
    (void)now;
    return bk_scalable_contains(v->links, &v->soa, v->n, h);
}

static bk_rc bk_scalable_ops_add(void *view, uint64_t h, uint64_t count, int64_t now)
{
    bk_scalable_view *v = (bk_scalable_view *)view;
    uint8_t *p = v->link_bufs[v->n - 1] + BK_OFF_PARAMS;
    uint64_t c = bk_load_u64le(p + BK_BLOOM_P_COUNT);
    (void)now;
    if (count != 1)
        return BK_ERR_ARG;
    if (c >= bk_load_u64le(p + BK_BLOOM_P_CAPACITY))
        return bk_scalable_contains(v->links, &v->soa, v->n, h) ? BK_OK : BK_ERR_CAPACITY;
    if (bk_scalable_add_newest(v->links, &v->soa, v->n, h))
        bk_store_u64le(p + BK_BLOOM_P_COUNT, c + 1);
    return BK_OK;
}

static void bk_scalable_ops_clear(void *view, int64_t now)
{
    bk_scalable_view *v = (bk_scalable_view *)view;
    (void)now;
    for (uint32_t i = 0; i < v->n; i++) {
        memset(v->links[i].words, 0, (size_t)v->links[i].num_words * 8);
        bk_store_u64le(v->link_bufs[i] + BK_OFF_PARAMS + BK_BLOOM_P_COUNT, 0);
    }
}

static double bk_scalable_ops_error_rate(const void *view, int64_t now)
{
    const bk_scalable_view *v = (const bk_scalable_view *)view;
    (void)now;
    return bk_scalable_estimate_error_rate(v->links, v->n);
}

static const bk_kind_ops bk_scalable_ops = {
    .view_size = sizeof(bk_scalable_view),
    .attach = bk_scalable_ops_attach,
    .contains = bk_scalable_ops_contains,
    .add = bk_scalable_ops_add,
    .clear = bk_scalable_ops_clear,
    .estimate_error_rate = bk_scalable_ops_error_rate,
};

/* Its header grows with its chain (align64(104 + 8 L)): the validator
 * checks format 1.0's header_len itself (header_len 0 here).  Its capacity
 * parameter is link 0's; the chain grows past it. */
const bk_kind_desc bk_scalable_kind = {
    BK_KIND_SCALABLE_BLOOM, "ScalableBloomFilter", "scalable Bloom", BK_SCALABLE_PARAMS_FIXED, 0,
    BK_KIND_PARAMS(bk_scalable_params),
    2, BK_KIND_CAPACITY_DEFAULT,
    0, BK_KIND_ERROR_RATE_DEFAULT,
    5, BK_BLOOM_LAYOUT_MAX,
    BK_TRAIT_MERGEABLE | BK_TRAIT_GROWS | BK_TRAIT_KEYED,
    bk_scalable_validate,
    &bk_scalable_ops,
};

/* ---- Begin logic for assembling a chain (bk_scalable.h) --------------- */

void bk_scalable_scheme_of(const uint8_t *state, bk_scalable_scheme *sc)
{
    const uint8_t *p = state + BK_OFF_PARAMS;
    sc->p = bk_load_f64le(p + BK_SCALABLE_P_ERROR_RATE);
    sc->r = bk_load_f64le(p + BK_SCALABLE_P_TIGHTENING);
    sc->n0 = bk_load_u64le(p + BK_SCALABLE_P_INITIAL);
    sc->growth = bk_load_u32le(p + BK_SCALABLE_P_GROWTH);
    sc->layout = bk_load_u32le(p + BK_SCALABLE_P_LAYOUT);
    sc->seed = bk_load_u64le(state + BK_OFF_SEED);
    sc->keyed = (bk_load_u16le(state + BK_OFF_FLAGS) & BK_FLAG_KEYED) != 0;
    sc->key_check = bk_load_u64le(state + BK_OFF_KEY_CHECK);
}

uint64_t bk_scalable_link_len(const uint8_t *state, uint32_t i)
{
    return bk_load_u64le(state + BK_OFF_PARAMS + BK_SCALABLE_P_LINK_LENS + 8u * i);
}

uint64_t bk_scalable_state_len(uint32_t num_links, const uint64_t *lens)
{
    /* at most 64 links, each a valid Bloom container: no overflow */
    uint64_t len = bk_scalable_header_len(num_links);
    for (uint32_t i = 0; i < num_links; i++)
        len += bk_format_align(lens[i]);
    return len;
}

bk_rc bk_scalable_new_link(const bk_scalable_scheme *sc, uint32_t index, uint64_t num_bits,
                           uint32_t k, uint64_t capacity, double error_rate, uint8_t *hdr,
                           uint64_t *len, const char **reason)
{
    uint64_t payload_len = 0;
    if (bk_bloom_shape((int)sc->layout, num_bits, k, &payload_len, reason) != BK_OK ||
        bk_scalable_check_link(sc->p, sc->r, sc->n0, sc->growth, index, capacity, error_rate,
                               reason) != BK_OK)
        return BK_ERR_ARG;
    *len = BK_BLOOM_HEADER_LEN + payload_len;
    bk_bloom_init_state(hdr, (int)sc->layout, num_bits, k, capacity, error_rate, sc->seed,
                        sc->keyed, sc->key_check);
    return BK_OK;
}

void bk_scalable_assemble(uint8_t *dst, const bk_scalable_scheme *sc, uint32_t num_links,
                          const uint8_t *const *srcs, const uint64_t *lens,
                          uint64_t header_only)
{
    uint32_t header_len = bk_scalable_header_len(num_links);
    uint64_t off = header_len;
    uint8_t *p = dst + BK_OFF_PARAMS;
    bk_format_init_header(dst, BK_KIND_SCALABLE_BLOOM, header_len,
                          bk_scalable_params_len(num_links),
                          bk_scalable_state_len(num_links, lens) - header_len, sc->seed,
                          sc->keyed, sc->key_check);
    bk_store_f64le(p + BK_SCALABLE_P_ERROR_RATE, sc->p);
    bk_store_f64le(p + BK_SCALABLE_P_TIGHTENING, sc->r);
    bk_store_u64le(p + BK_SCALABLE_P_INITIAL, sc->n0);
    bk_store_u32le(p + BK_SCALABLE_P_GROWTH, sc->growth);
    bk_store_u32le(p + BK_SCALABLE_P_NUM_LINKS, num_links);
    bk_store_u32le(p + BK_SCALABLE_P_LAYOUT, sc->layout);
    for (uint32_t i = 0; i < num_links; i++) {
        uint8_t *link = dst + off;
        bk_store_u64le(p + BK_SCALABLE_P_LINK_LENS + 8u * i, lens[i]);
        memcpy(link, srcs[i], (size_t)(((header_only >> i) & 1) ? BK_BLOOM_HEADER_LEN : lens[i]));
        /* a link carries no checksum and no DIRTY flag of its own */
        bk_store_u64le(link + BK_OFF_CHECKSUM, 0);
        bk_store_u16le(link + BK_OFF_FLAGS, (uint16_t)(sc->keyed ? BK_FLAG_KEYED : 0));
        off += bk_format_align(lens[i]);
    }
}

/* ---- End logic for assembling a chain --------------------------------- */
