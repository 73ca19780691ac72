/*
 * test_portable.c -- the golden files answer the same on every CPU.
 *
 * The README promises that a filter built on one platform answers the
 * same on any other: the format is little-endian everywhere and the hash
 * is ours (bk_hash.c), not the platform's.  This program proves it where
 * it can break, with no Python on the machine under test:
 *
 *   - big-endian: built with s390x-linux-gnu-gcc, run under qemu-s390x;
 *   - 32-bit size_t: built with i686-linux-gnu-gcc -static, run under
 *     qemu-i386 (or natively);
 *   - undefined behaviour: built with -fsanitize=undefined,alignment
 *     -fno-sanitize-recover on x86-64 (unaligned loads of mapped state);
 *   - clang as well as gcc, with -Werror.
 *
 * (.ci/portable.sh builds and runs all four, and once more with
 * -DBK_NO_INTRINSICS: every wrapper of bk_intrin.h on its portable C path,
 * the path an unknown compiler takes.)  First it compares each wrapper of
 * bk_intrin.h (mulhi, 128-bit product, fold, popcount, ctz, log2, byte
 * swaps, overflow checks) with a bit-by-bit reference on edge values and a
 * fixed pseudo-random stream.  Then, for every golden file of
 * tests/format/golden (written on x86-64, little-endian) it:
 *
 *   1. validates it with the one validator (checksum and deep checks);
 *   2. hashes the manifest's member keys, encoded as docs/keys.md says
 *      (str as UTF-8 bytes; ints as 8 little-endian bytes in their own
 *      domain), and checks each is present (sketches: each estimate is
 *      exactly the manifest's);
 *   3. probes the manifest's absent keys and checks the exact number of
 *      false positives, one by one and again by the kind's batch path;
 *   4. where the manifest's build is plain key operations, empties a copy
 *      of the file (clear: same shape, no keys), replays the build with
 *      the kind's own add and remove, seals it, and compares the whole
 *      file byte for byte: header, parameters (the counters the Python
 *      type keeps, a cuckoo filter's stash) and payload; a build of adds
 *      only is replayed once more by the kind's batch add.
 *
 * Every step goes through the kind's descriptor (bk_kind.h: bk_kinds_get
 * and its bk_kind_ops), naming no kind: a new kind with golden files and
 * operations is covered with no edit here.  (A kind without operations,
 * the Parquet index, is validated only: its answers need Python's value
 * encoding, tests/test_golden.py.)
 *
 * Every kind the build holds must have answered at least one golden
 * case.  Built with every core (.ci/portable.sh), a case of a kind the
 * build does not hold is a failure.  Built with one core and the base
 * alone (tests/native_c.py, golden_alone: -DBK_HAVE_<CORE>, as that core's
 * plain-C test is built), `--held-only` skips the other kinds' cases: this
 * is the plain-C test every core gets from its golden files, with no file
 * of its own.
 *
 * The cases come from tests/native/make_portable_vectors.py (its
 * docstring has the line format); the expectations are the manifests'.
 *
 * Usage: test_portable CASES GOLDEN_DIR [--held-only]
 */
#include "bk_bloom.h"    /* the sizes past 2^32 (tp_huge_states) */
#include "bk_counting.h" /* the same */
#include "bk_endian.h"
#include "bk_format.h"
#include "bk_keys.h"
#include "bk_kind.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP_MAX_LINE 4096
#define TP_MAX_KEY 512

static int tp_failures;
static int tp_checks;

#define TP_FAIL(...)                                                    \
    do {                                                                \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                          \
        fputc('\n', stderr);                                            \
        tp_failures++;                                                  \
    } while (0)

/* ---- one golden file, loaded ------------------------------------------- */

typedef struct {
    char name[256];
    unsigned kind;
    uint8_t *buf;           /* 64-byte aligned copy of the file */
    uint64_t len;
    bk_header h;
    bk_hasher hs;
    int have_secret;
    uint8_t secret[16];
    int loaded;
    const bk_kind_ops *ops; /* the kind's state operations, or NULL */
    void *view;             /* ops->view_size bytes, attached to buf */
    /* a rebuild: the hashes its "add" ops added, while every op was one */
    uint64_t *adds;
    size_t num_adds, cap_adds;
    int other_ops;
} tp_case;

/* The clock of every answer and write (bk_kind.h: only WINDOW kinds read
 * it): the manifests' answers are read at a time when every key expired,
 * as make_golden counts a time-mode sliding filter's false positives
 * (clock 4e9 s); INT64_MAX has every shift pending.  A count-mode sliding
 * filter ignores it.  (INT64_MIN, "as saved", gave the same 0 for layout
 * 0's golden by chance and 1 for the blocked one's.) */
#define TP_NOW INT64_MAX

static uint8_t *tp_alloc(uint64_t len)
{
    /* aligned_alloc wants a multiple of the alignment */
    size_t n = (size_t)((len + 63) & ~(uint64_t)63);
    uint8_t *p;
    if ((uint64_t)n < len)
        return NULL;
    p = aligned_alloc(64, n ? n : 64);
    if (p != NULL)
        memset(p, 0, n ? n : 64);
    return p;
}

static int tp_read_file(const char *path, uint8_t **out, uint64_t *len)
{
    FILE *f = fopen(path, "rb");
    long n;
    if (f == NULL)
        return -1;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return -1;
    }
    *out = tp_alloc((uint64_t)n);
    if (*out == NULL || fread(*out, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return -1;
    }
    fclose(f);
    *len = (uint64_t)n;
    return 0;
}

/* Attach the kind's view (a kind without operations: none). */
static int tp_attach(tp_case *c)
{
    const bk_kind_desc *d = bk_kinds_get(c->kind);
    c->ops = d != NULL ? d->ops : NULL;
    if (c->ops == NULL)
        return 0;
    c->view = malloc(c->ops->view_size);
    if (c->view == NULL) {
        TP_FAIL("%s: out of memory", c->name);
        return -1;
    }
    c->ops->attach(c->view, c->buf);
    return 0;
}

static int tp_load(tp_case *c, const char *dir)
{
    char path[1024];
    const char *reason = NULL;
    bk_rc rc;
    snprintf(path, sizeof path, "%s/%s", dir, c->name);
    if (tp_read_file(path, &c->buf, &c->len) != 0) {
        TP_FAIL("%s: cannot read", path);
        return -1;
    }
    rc = bk_format_validate(c->buf, c->len, BK_CHECK_CHECKSUM | BK_CHECK_DEEP, &c->h, &reason);
    tp_checks++;
    if (rc != BK_OK) {
        TP_FAIL("%s: validation failed: %s", c->name, reason ? reason : "?");
        return -1;
    }
    if (c->h.kind != c->kind) {
        TP_FAIL("%s: header kind %u, manifest says %u", c->name, c->h.kind, c->kind);
        return -1;
    }
    if (tp_attach(c) != 0)
        return -1;
    c->loaded = 1;
    return 0;
}

static void tp_hasher(tp_case *c)
{
    bk_hasher_init(&c->hs, c->h.seed, c->have_secret ? c->secret : NULL);
}

/* ---- keys ---------------------------------------------------------------- */

static int tp_hex(const char *s, uint8_t *out, size_t cap, size_t *n)
{
    size_t len = strlen(s), i;
    if (len % 2 != 0 || len / 2 > cap)
        return -1;
    for (i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    *n = len / 2;
    return 0;
}

/* KEY: i<decimal> (integer domain) or b<hex> (byte domain). */
static int tp_key_hash(const tp_case *c, const char *tok, uint64_t *h)
{
    if (tok[0] == 'i') {
        char *end;
        long long v = strtoll(tok + 1, &end, 10);
        if (*end != '\0')
            return -1;
        *h = bk_key_int64(&c->hs, (int64_t)v);
        return 0;
    }
    if (tok[0] == 'b') {
        uint8_t raw[TP_MAX_KEY];
        size_t n;
        if (tp_hex(tok + 1, raw, sizeof raw, &n) != 0)
            return -1;
        *h = bk_key_bytes(&c->hs, raw, n);
        return 0;
    }
    return -1;
}

/* ---- answers --------------------------------------------------------------- */

/* 1 present, 0 absent, -1 the kind has no operations. */
static int tp_contains(const tp_case *c, uint64_t h)
{
    return c->ops != NULL ? c->ops->contains(c->view, h, TP_NOW) : -1;
}

/* The kind's count of h (COUNTS kinds: a sketch's estimate), or
 * UINT64_MAX when it has none. */
static uint64_t tp_estimate(const tp_case *c, uint64_t h)
{
    return c->ops != NULL && c->ops->count != NULL ? c->ops->count(c->view, h) : UINT64_MAX;
}

static void tp_probes(const tp_case *c, const char *query, const char *prefix_hex, long start,
                      long stop, long expect)
{
    uint8_t key[TP_MAX_KEY];
    size_t plen = 0;
    long fp = 0;
    if (strcmp(prefix_hex, "-") != 0 && tp_hex(prefix_hex, key, sizeof key - 32, &plen) != 0) {
        TP_FAIL("%s: bad probe prefix", c->name);
        return;
    }
    size_t n = stop > start ? (size_t)(stop - start) : 0;
    uint64_t *hs = malloc((n ? n : 1) * sizeof *hs);
    uint8_t *out = malloc(n ? n : 1);
    if (hs == NULL || out == NULL) {
        TP_FAIL("%s: out of memory", c->name);
        free(hs);
        free(out);
        return;
    }
    for (long i = start; i < stop; i++) {
        int len = snprintf((char *)key + plen, 32, "%ld", i);
        uint64_t h = bk_key_bytes(&c->hs, key, plen + (size_t)len);
        hs[i - start] = h;
        if (strcmp(query, "estimate") == 0 ? tp_estimate(c, h) > 0 : tp_contains(c, h) == 1)
            fp++;
    }
    tp_checks++;
    if (fp != expect)
        TP_FAIL("%s: %ld false positives over %ld probes, the golden file says %ld", c->name, fp,
                stop - start, expect);
    /* the same probes through the kind's batch path, where it has one */
    if (strcmp(query, "contains") == 0 && c->ops != NULL && c->ops->contains_many != NULL) {
        fp = 0;
        c->ops->contains_many(c->view, hs, n, TP_NOW, out);
        for (size_t i = 0; i < n; i++)
            fp += out[i] != 0;
        tp_checks++;
        if (fp != expect)
            TP_FAIL("%s: %ld false positives over %ld batch probes, the golden file says %ld",
                    c->name, fp, stop - start, expect);
    }
    free(hs);
    free(out);
}

/* ---- rebuild ------------------------------------------------------------ */

/* An empty state of the golden file's shape: a copy of the file, attached
 * and cleared by the kind's own clear (payload and every counter adds
 * change zeroed, a cuckoo stash too); r is c's case with that state. */
static int tp_empty_like(const tp_case *c, tp_case *r)
{
    *r = *c;
    r->buf = NULL;
    r->view = NULL;
    r->adds = NULL;
    r->num_adds = r->cap_adds = 0;
    r->other_ops = 0;
    if (c->ops == NULL || c->ops->clear == NULL || c->ops->add == NULL) {
        TP_FAIL("%s: kind %u has no clear and add to rebuild with", c->name, c->kind);
        return -1;
    }
    r->buf = tp_alloc(c->len);
    if (r->buf == NULL) {
        TP_FAIL("%s: out of memory", c->name);
        return -1;
    }
    memcpy(r->buf, c->buf, (size_t)c->len);
    if (tp_attach(r) != 0)
        return -1;
    r->ops->clear(r->view, TP_NOW);
    return 0;
}

/* Apply one build op to the rebuilt state r (same kind as c): "add KEY",
 * "remove KEY", "addc KEY N" (add N times in one call: count-min's
 * add(key, N)), "record KEY" (TinyLFU's record: an add). */
static int tp_apply(tp_case *r, char *op)
{
    char *verb = strtok(op, " ");
    char *tok = strtok(NULL, " ");
    char *arg = strtok(NULL, " ");
    const bk_kind_ops *ops = r->ops;
    uint64_t h;
    if (verb == NULL || tok == NULL || tp_key_hash(r, tok, &h) != 0)
        return -1;
    if (strcmp(verb, "add") != 0)
        r->other_ops = 1;
    else if (!r->other_ops) { /* kept for the batch rebuild (tp_rebuild_batch) */
        if (r->num_adds == r->cap_adds) {
            size_t cap = r->cap_adds ? 2 * r->cap_adds : 1024;
            uint64_t *a = realloc(r->adds, cap * sizeof *a);
            if (a == NULL)
                return -1;
            r->adds = a;
            r->cap_adds = cap;
        }
        r->adds[r->num_adds++] = h;
    }
    if (strcmp(verb, "add") == 0 || strcmp(verb, "record") == 0)
        return ops->add(r->view, h, 1, TP_NOW) == BK_OK ? 0 : -1;
    if (strcmp(verb, "addc") == 0 && arg != NULL)
        return ops->add(r->view, h, strtoull(arg, NULL, 10), TP_NOW) == BK_OK ? 0 : -1;
    if (strcmp(verb, "remove") == 0 && ops->remove != NULL)
        return ops->remove(r->view, h) == BK_OK ? 0 : -1;
    return -1;
}

/* The rebuilt state, sealed, is the golden file: every byte.  The
 * parameters and payload are compared first, so that a difference there
 * is named rather than the checksum it also changes. */
static void tp_compare(const tp_case *c, tp_case *r)
{
    uint64_t i, j;
    tp_checks++;
    bk_format_seal(r->buf, r->len);
    for (j = 0; j < c->len; j++) {
        i = (j + BK_OFF_PARAMS) % c->len;
        if (c->buf[i] != r->buf[i]) {
            TP_FAIL("%s: rebuilt state differs from the golden file at byte %llu, in its %s "
                    "(0x%02x vs 0x%02x)", c->name, (unsigned long long)i,
                    i < BK_OFF_PARAMS ? "header" : i < c->h.header_len ? "parameters" : "payload",
                    r->buf[i], c->buf[i]);
            return;
        }
    }
}

/* ---- the intrinsic wrappers ------------------------------------------------ */

/* References written one bit at a time, sharing no method with any path
 * of bk_intrin.h (builtins, MSVC intrinsics, SWAR, 32-bit limbs). */
static uint64_t tp_ref_mul128(uint64_t a, uint64_t b, uint64_t *hi)
{
    uint64_t lo = 0, h = 0;
    for (unsigned i = 0; i < 64; i++) {
        if ((b >> i) & 1) {   /* (h:lo) += a << i */
            uint64_t add_lo = a << i, add_hi = i ? a >> (64 - i) : 0;
            uint64_t s = lo + add_lo;
            h += add_hi + (s < lo);
            lo = s;
        }
    }
    *hi = h;
    return lo;
}

static int tp_ref_popcount(uint64_t x)
{
    int n = 0;
    for (unsigned i = 0; i < 64; i++)
        n += (int)((x >> i) & 1);
    return n;
}

static unsigned tp_ref_ctz(uint64_t x)
{
    unsigned i = 0;
    while (!((x >> i) & 1))
        i++;
    return i;
}

static unsigned tp_ref_log2(uint64_t x)
{
    unsigned i = 63;
    while (!((x >> i) & 1))
        i--;
    return i;
}

static uint64_t tp_ref_bswap(uint64_t x, unsigned bytes)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < bytes; i++)
        r |= ((x >> (8 * i)) & 0xFF) << (8 * (bytes - 1 - i));
    return r;
}

static uint64_t tp_splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#define TP_INTRIN_EDGES 262
#define TP_INTRIN_RANDOM 4096
#define TP_INTRIN_SEED UINT64_C(20261203)

/* One check per wrapper: it agrees with its reference on every input (the
 * first disagreement is printed). */
static void tp_intrinsics(void)
{
    static uint64_t v[TP_INTRIN_EDGES + TP_INTRIN_RANDOM];
    size_t n = 0, i, j;
    uint64_t seed = TP_INTRIN_SEED;
    enum { MUL, MULHI, FOLD, MULOV, ADDOV, POP, CTZ, LOG2, BS16, BS32, BS64, NW };
    static const char *const names[NW] = {"bk_mul128", "bk_mulhi64", "bk_mulfold64",
                                          "bk_mul_overflow", "bk_add_overflow", "bk_popcount64",
                                          "bk_ctz64", "bk_log2_64", "bk_bswap16", "bk_bswap32",
                                          "bk_bswap64"};
    int bad[NW] = {0};
    /* 0, ~0, and 2^k - 1, 2^k, 2^k + 1, ~2^k for every k */
    v[n++] = 0;
    v[n++] = UINT64_MAX;
    for (i = 0; i < 64; i++) {
        uint64_t p = UINT64_C(1) << i;
        v[n++] = p - 1;
        v[n++] = p;
        v[n++] = p + 1;
        v[n++] = ~p;
    }
    v[n++] = UINT64_C(0x5555555555555555);
    v[n++] = UINT64_C(0xAAAAAAAAAAAAAAAA);
    v[n++] = UINT64_C(0x0123456789ABCDEF);
    v[n++] = UINT64_C(0xFEDCBA9876543210);
    v[n++] = UINT64_C(0x00000000FFFFFFFF);
    v[n++] = UINT64_C(0xFFFFFFFF00000000);
    while (n < TP_INTRIN_EDGES + TP_INTRIN_RANDOM)
        v[n++] = tp_splitmix(&seed);

#define TP_WRAPPER_BAD(w, fmt, ...)                                                  \
    do {                                                                             \
        if (!bad[w]++)                                                               \
            TP_FAIL("%s disagrees with its bit-by-bit reference: " fmt, names[w],   \
                    __VA_ARGS__);                                                    \
    } while (0)

    for (i = 0; i < n; i++) {
        uint64_t x = v[i];
        if (bk_popcount64(x) != tp_ref_popcount(x))
            TP_WRAPPER_BAD(POP, "x = 0x%016llx", (unsigned long long)x);
        if (x != 0 && bk_ctz64(x) != tp_ref_ctz(x))
            TP_WRAPPER_BAD(CTZ, "x = 0x%016llx", (unsigned long long)x);
        if (x != 0 && bk_log2_64(x) != tp_ref_log2(x))
            TP_WRAPPER_BAD(LOG2, "x = 0x%016llx", (unsigned long long)x);
        if (bk_bswap16((uint16_t)x) != tp_ref_bswap(x & 0xFFFF, 2))
            TP_WRAPPER_BAD(BS16, "x = 0x%04x", (unsigned)(x & 0xFFFF));
        if (bk_bswap32((uint32_t)x) != tp_ref_bswap(x & 0xFFFFFFFFu, 4))
            TP_WRAPPER_BAD(BS32, "x = 0x%08lx", (unsigned long)(x & 0xFFFFFFFFu));
        if (bk_bswap64(x) != tp_ref_bswap(x, 8))
            TP_WRAPPER_BAD(BS64, "x = 0x%016llx", (unsigned long long)x);
        /* products: every edge value with every edge value, and the random
         * stream in consecutive pairs */
        for (j = i < TP_INTRIN_EDGES ? 0 : i; j < (i < TP_INTRIN_EDGES ? TP_INTRIN_EDGES : i + 2) &&
                                               j < n;
             j++) {
            uint64_t y = v[j], hi, rhi, lo = bk_mul128(x, y, &hi), rlo = tp_ref_mul128(x, y, &rhi);
            uint64_t out;
            int ov;
            if (lo != rlo || hi != rhi)
                TP_WRAPPER_BAD(MUL, "0x%016llx * 0x%016llx", (unsigned long long)x,
                               (unsigned long long)y);
            if (bk_mulhi64(x, y) != rhi)
                TP_WRAPPER_BAD(MULHI, "0x%016llx * 0x%016llx", (unsigned long long)x,
                               (unsigned long long)y);
            if (bk_mulfold64(x, y) != (rlo ^ rhi))
                TP_WRAPPER_BAD(FOLD, "0x%016llx * 0x%016llx", (unsigned long long)x,
                               (unsigned long long)y);
            ov = bk_mul_overflow(x, y, &out);
            if (ov != (rhi != 0) || out != rlo)
                TP_WRAPPER_BAD(MULOV, "0x%016llx * 0x%016llx", (unsigned long long)x,
                               (unsigned long long)y);
            ov = bk_add_overflow(x, y, &out);
            if (ov != (x > UINT64_MAX - y) || out != x + y)
                TP_WRAPPER_BAD(ADDOV, "0x%016llx + 0x%016llx", (unsigned long long)x,
                               (unsigned long long)y);
        }
    }
#undef TP_WRAPPER_BAD
    int agree = 0;
    for (i = 0; i < NW; i++) {
        tp_checks++;
        agree += !bad[i];
    }
    printf("intrinsics (%s): %d of %d wrappers agree with bit-by-bit references on %u values "
           "(seed %llu)\n",
#if defined(BK_NO_INTRINSICS)
           "portable C paths",
#elif BK_CC_MSVC
           "MSVC paths",
#elif BK_CC_GNU
           "GCC/clang builtins",
#else
           "portable C paths",
#endif
           agree, (int)NW, (unsigned)n, (unsigned long long)TP_INTRIN_SEED);
}

/* ---- sizes past 2^32 ------------------------------------------------------ */

/* A header whose state passes 4 GiB, with parameters consistent with it:
 * on a 64-bit size_t the parameters alone validate (checks = 0 reads no
 * payload); on a 32-bit size_t the one validator must refuse it with a
 * format error, before any size is narrowed.  `len` is the length the
 * header claims; only the header is allocated. */
static void tp_huge(const char *what, uint8_t *hdr, uint64_t payload_len)
{
    bk_header h;
    const char *reason = NULL;
    uint64_t len = bk_load_u32le(hdr + BK_OFF_HEADER_LEN) + payload_len;
    bk_rc rc;
    bk_store_u64le(hdr + BK_OFF_PAYLOAD_LEN, payload_len);
    rc = bk_format_validate(hdr, len, 0, &h, &reason);
    tp_checks++;
    if (sizeof(size_t) < 8) {
        if (rc != BK_ERR_FORMAT)
            TP_FAIL("%s of %llu bytes: 32-bit validation returned %d, not a format error", what,
                    (unsigned long long)len, (int)rc);
        else
            printf("%-44s refused on 32-bit: %s\n", what, reason);
    } else if (rc != BK_OK) {
        TP_FAIL("%s of %llu bytes: 64-bit validation failed: %s", what, (unsigned long long)len,
                reason ? reason : "?");
    } else {
        printf("%-44s accepted on 64-bit (%llu bytes)\n", what, (unsigned long long)len);
    }
}

static void tp_huge_states(void)
{
    static const struct { int blocked; uint64_t bits; } blooms[] = {
        {0, UINT64_C(1) << 35}, {1, UINT64_C(1) << 35}, {0, (UINT64_C(1) << 35) + 64},
        {1, UINT64_C(1) << 40}};
    uint8_t *hdr = tp_alloc(4096);
    const char *reason = NULL;
    uint64_t pl;
    char what[64];
    if (hdr == NULL) {
        TP_FAIL("out of memory");
        return;
    }
    for (size_t i = 0; i < sizeof blooms / sizeof blooms[0]; i++) {
        memset(hdr, 0, 4096);
        if (bk_bloom_shape(blooms[i].blocked, blooms[i].bits, 7, &pl, &reason) != BK_OK) {
            TP_FAIL("bloom shape of 2^%d bits refused: %s", 35, reason);
            continue;
        }
        bk_bloom_init_state(hdr, blooms[i].blocked, blooms[i].bits, 7, 1000, 0.01, 0, 0, 0);
        snprintf(what, sizeof what, "%s Bloom header, %llu bits",
                 blooms[i].blocked ? "blocked" : "classic", (unsigned long long)blooms[i].bits);
        tp_huge(what, hdr, pl);
    }
#ifdef BK_HAVE_COUNTING
    memset(hdr, 0, 4096);
    if (bk_counting_shape(BK_COUNTING_LAYOUT_CLASSIC, UINT64_C(1) << 33, 7, 4, &pl, &reason) == BK_OK) {
        bk_counting_init_state(hdr, BK_COUNTING_LAYOUT_CLASSIC, UINT64_C(1) << 33, 7, 4, 1000, 0.01, 0, 0, 0);
        tp_huge("counting header, 2^33 4-bit counters", hdr, pl);
    } else {
        TP_FAIL("counting shape refused: %s", reason);
    }
#endif
    free(hdr);
}

/* ---- the case file ------------------------------------------------------ */

/* A build of adds only, once more through the kind's batch path: the
 * hashes of r's adds in one add_many on another empty state, compared as
 * the first rebuild was.  1 if it ran. */
static int tp_rebuild_batch(const tp_case *c, const tp_case *r)
{
    tp_case b;
    int ran = 0;
    if (r->other_ops || r->num_adds == 0 || c->ops == NULL || c->ops->add_many == NULL)
        return 0;
    if (tp_empty_like(c, &b) == 0) {
        if (b.ops->add_many(b.view, r->adds, r->num_adds, TP_NOW) != BK_OK)
            TP_FAIL("%s: the batch rebuild failed", c->name);
        else
            tp_compare(c, &b);
        ran = 1;
    }
    free(b.buf);
    free(b.view);
    return ran;
}

static void tp_finish(tp_case *c, tp_case *r, int *ops, int *batch_rebuilt)
{
    if (r->buf != NULL && *ops > 0) {
        tp_compare(c, r);
        *batch_rebuilt += tp_rebuild_batch(c, r);
    }
    printf("%-44s kind %u: %s%s\n", c->name, c->kind, c->loaded ? "loaded, answers" : "NOT LOADED",
           *ops > 0 ? ", rebuilt" : "");
    free(c->buf);
    free(c->view);
    free(r->buf);
    free(r->view);
    free(r->adds);
    memset(c, 0, sizeof *c);
    memset(r, 0, sizeof *r);
    *ops = 0;
}

int main(int argc, char **argv)
{
    static tp_case c, r;
    char line[TP_MAX_LINE];
    int ops = 0, in_case = 0, cases = 0, rebuilt = 0, batch_rebuilt = 0;
    int held_only = 0, skipping = 0, skipped = 0;
    unsigned seen_kinds = 0;
    FILE *f;
    if (argc == 4 && strcmp(argv[3], "--held-only") == 0)
        held_only = 1;
    else if (argc != 3) {
        fprintf(stderr, "usage: %s CASES GOLDEN_DIR [--held-only]\n", argv[0]);
        return 2;
    }
    f = fopen(argv[1], "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    printf("test_portable: %s-endian, sizeof(size_t) = %u, sizeof(void *) = %u\n",
           BK_BIG_ENDIAN ? "big" : "little", (unsigned)sizeof(size_t),
           (unsigned)sizeof(void *));
    tp_intrinsics();
    while (fgets(line, sizeof line, f) != NULL) {
        char *nl = strchr(line, '\n');
        char *rest;
        if (nl != NULL)
            *nl = '\0';
        rest = strchr(line, ' ');
        rest = rest != NULL ? rest + 1 : line + strlen(line);
        if (strncmp(line, "case ", 5) == 0) {
            if (sscanf(rest, "%255s %u", c.name, &c.kind) != 2) {
                TP_FAIL("bad case line: %s", line);
                break;
            }
            in_case = 1;
            if (held_only && bk_kinds_get(c.kind) == NULL) {
                skipping = 1; /* another core's kind: not in this build */
                skipped++;
                continue;
            }
            cases++;
            if (tp_load(&c, argv[2]) == 0) {
                seen_kinds |= 1u << c.kind;
                tp_hasher(&c);
            }
        } else if (!in_case) {
            TP_FAIL("line outside a case: %s", line);
            break;
        } else if (skipping) {
            if (strcmp(line, "end") == 0) {
                memset(&c, 0, sizeof c);
                skipping = in_case = 0;
            }
        } else if (strncmp(line, "secret ", 7) == 0) {
            size_t n = 0;
            if (tp_hex(rest, c.secret, sizeof c.secret, &n) != 0 || n != 16)
                TP_FAIL("%s: bad secret", c.name);
            c.have_secret = 1;
            if (c.loaded)
                tp_hasher(&c);
        } else if (!c.loaded) {
            if (strcmp(line, "end") == 0) {
                tp_finish(&c, &r, &ops, &batch_rebuilt);
                in_case = 0;
            }
        } else if (strncmp(line, "member ", 7) == 0) {
            uint64_t h;
            tp_checks++;
            if (tp_key_hash(&c, rest, &h) != 0 || tp_contains(&c, h) != 1 ||
                tp_estimate(&c, h) == 0)
                TP_FAIL("%s: member %s not reported present", c.name, rest);
        } else if (strncmp(line, "estimate ", 9) == 0) {
            char tok[TP_MAX_LINE];
            unsigned long long want;
            uint64_t h;
            tp_checks++;
            if (sscanf(rest, "%4095s %llu", tok, &want) != 2 || tp_key_hash(&c, tok, &h) != 0)
                TP_FAIL("%s: bad estimate line", c.name);
            else if (tp_estimate(&c, h) != want)
                TP_FAIL("%s: estimate of %s is %llu, the golden file says %llu", c.name, tok,
                        (unsigned long long)tp_estimate(&c, h), want);
        } else if (strncmp(line, "probes ", 7) == 0) {
            char query[16], prefix[TP_MAX_KEY];
            long start, stop, expect;
            if (sscanf(rest, "%15s %511s %ld %ld %ld", query, prefix, &start, &stop, &expect) != 5)
                TP_FAIL("%s: bad probes line", c.name);
            else
                tp_probes(&c, query, prefix, start, stop, expect);
        } else if (strncmp(line, "op ", 3) == 0) {
            if (ops == 0) {
                if (tp_empty_like(&c, &r) != 0)
                    ops = -1;
                else
                    rebuilt++;
            }
            if (ops >= 0) {
                ops++;
                if (tp_apply(&r, rest) != 0) {
                    TP_FAIL("%s: op failed: %s", c.name, line);
                    ops = -1;
                }
            }
        } else if (strcmp(line, "end") == 0) {
            tp_finish(&c, &r, &ops, &batch_rebuilt);
            in_case = 0;
        } else {
            TP_FAIL("unknown line: %s", line);
        }
    }
    fclose(f);
    tp_huge_states();
    /* every kind with golden files answered; the plain-op kinds rebuilt */
    if (cases == 0)
        TP_FAIL("no cases read");
    for (unsigned id = 1; id < BK_KIND_MAX_; id++) {
        const bk_kind_desc *d = bk_kinds_get(id);
        tp_checks++;
        if (d != NULL && !(seen_kinds & (1u << id)))
            TP_FAIL("kind %u (%s): this build holds it, and no golden case of it loaded", id,
                    d->name);
    }
    printf("%d cases (%d rebuilt, %d of them again by batch), %d checks, kinds seen 0x%x", cases,
           rebuilt, batch_rebuilt, tp_checks, seen_kinds);
    if (held_only)
        printf(", %d cases of kinds this build does not hold skipped", skipped);
    printf("\n");
    printf("%d passed, %d failed\n", tp_checks - tp_failures, tp_failures);
    return tp_failures == 0 ? 0 : 1;
}
