/*
 * py_scalable.c -- CPython type for the scalable Bloom filter
 * (bloomkit._core.ScalableBase; facade bloomkit/scalable.py).
 *
 * The whole chain is ONE state buffer (bk_scalable.c): the object attaches
 * a bk_bloom view to every link inside it (and a struct-of-arrays copy of
 * the views for the chain probes of bk_scalable.h), hashes a key once and
 * probes the links with bk_scalable_contains / bk_scalable_add_newest.
 * Growth appends a link by assembling a new buffer (old links copied,
 * geometric growth keeps the copying O(1) amortized per key); the shape of
 * the new link comes from the facade's _link_shape(index) (design.py
 * sizing), checked here against the chain's scheme so that a saved chain
 * always passes bk_scalable_validate.  That call runs Python code, during
 * which other threads may change the chain: it is made before the state is
 * read, and the growth itself is pure C (bkscalable_add_full; R31).
 *
 * Growth needs to reallocate the buffer, so a chain borrowed from an mmap
 * is read-only: _from_buffer(writable=True) raises TypeError.  The chain
 * state (header, parameters, links) is written by bk_scalable_assemble;
 * the shared object contract (from_bytes, copy, comparisons, union
 * dispatch, ...) is py_common.c's, through bkscalable_desc.
 */
#include "py_common.h"

#include <math.h>

#include "bk_bloom.h"
#include "bk_endian.h"
#include "bk_scalable.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    uint32_t n;                                /* links */
    bk_bloom links[BK_SCALABLE_MAX_LINKS];
    bk_scalable_soa soa;                       /* the links' m, words and k, for the probes */
    uint8_t *link_buf[BK_SCALABLE_MAX_LINKS];  /* each link's container */
    PyObject *weakreflist;
} BKScalable;

static PyTypeObject BKScalable_Type;

#define BKS_PARAMS(self) ((self)->st.buf + BK_OFF_PARAMS)
#define BKS_LINK_PARAM(self, i, off) ((self)->link_buf[i] + BK_OFF_PARAMS + (off))

static uint32_t bkscalable_layout(const BKScalable *s) { return bk_load_u32le(BKS_PARAMS(s) + BK_SCALABLE_P_LAYOUT); }

static uint64_t bkscalable_link_count(const BKScalable *s, uint32_t i)
{
    return bk_load_u64le(BKS_LINK_PARAM(s, i, BK_BLOOM_P_COUNT));
}

static uint64_t bkscalable_link_capacity(const BKScalable *s, uint32_t i)
{
    return bk_load_u64le(BKS_LINK_PARAM(s, i, BK_BLOOM_P_CAPACITY));
}

/* Attach views to a validated (or freshly assembled) state. */
static int bkscalable_attach(PyObject *self_obj)
{
    BKScalable *self = (BKScalable *)self_obj;
    self->n = bk_scalable_attach(self->st.buf, self->links, self->link_buf, &self->soa);
    return 0;
}

/* A fresh owned state in dst for a chain of L links (bk_scalable_assemble:
 * the buffer is calloc'ed, so a link passed as its header alone, bit i of
 * header_only, has zero bits that are never touched). */
static int bkscalable_assemble(bkpy_state *dst, const bk_scalable_scheme *sc, uint32_t L,
                               const uint8_t *const *srcs, const uint64_t *lens,
                               uint64_t header_only)
{
    memset(dst, 0, sizeof *dst);
    if (bkpy_state_alloc(dst, bk_scalable_state_len(L, lens)) < 0)
        return -1;
    bk_scalable_assemble(dst->buf, sc, L, srcs, lens, header_only);
    return 0;
}

/* Swap a freshly assembled buffer into self (owned states only). */
static void bkscalable_replace(BKScalable *self, bkpy_state *fresh)
{
    /* the same filter, reassembled: its key domains stay (bk_format.h) */
    fresh->buf[BK_OFF_KEY_FLAGS] = self->st.buf[BK_OFF_KEY_FLAGS];
    if (self->st.alloc != NULL)
        bkpy_state_free(self->st.alloc);
    else if (self->st.view.obj != NULL)
        PyBuffer_Release(&self->st.view);
    self->st.alloc = fresh->alloc;
    self->st.buf = fresh->buf;
    self->st.len = fresh->len;
    self->st.writable = 1;
    (void)bkscalable_attach((PyObject *)self);
}

/* The 128-byte header of a fresh, empty link into hdr (BK_BLOOM_HEADER_LEN
 * bytes); *len is the link's full container length. */
static int bkscalable_new_link(const bk_scalable_scheme *sc, uint32_t index, uint64_t num_bits,
                               uint32_t k, uint64_t capacity, double error_rate, uint8_t *hdr,
                               uint64_t *len)
{
    const char *reason = NULL;
    if (index >= BK_SCALABLE_MAX_LINKS) {
        PyErr_Format(bkpy_CapacityError,
                     "scalable chain is full: at most %u links", BK_SCALABLE_MAX_LINKS);
        return -1;
    }
    if (bk_scalable_new_link(sc, index, num_bits, k, capacity, error_rate, hdr, len,
                             &reason) != BK_OK) {
        PyErr_Format(PyExc_ValueError, "bad link %u shape: %s", index, reason);
        return -1;
    }
    return 0;
}

/* ---- Begin logic for growth (R31) ------------------------------------- */

/* The shape of link `index`, as the facade sizes it (design.py). */
typedef struct {
    uint32_t index;
    unsigned long long num_bits, capacity;
    unsigned int k;
    double error_rate;
} bkscalable_link_shape;

/* Ask the facade for the shape of link `index` (_link_shape(index)).  This
 * runs Python code, so other threads run meanwhile and may grow, clear or
 * union this very chain: call it BEFORE reading the state, never between
 * reading and using it (bkscalable_add_full). */
static int bkscalable_ask_shape(BKScalable *self, uint32_t index, bkscalable_link_shape *shape)
{
    PyObject *res = PyObject_CallMethod((PyObject *)self, "_link_shape", "I", index);
    int rc;
    if (res == NULL)
        return -1;
    rc = PyArg_ParseTuple(res, "KIKd;_link_shape must return (num_bits, num_hashes, "
                          "capacity, error_rate)", &shape->num_bits, &shape->k,
                          &shape->capacity, &shape->error_rate);
    Py_DECREF(res);
    if (!rc)
        return -1;
    shape->index = index;
    return 0;
}

/* Append link shape->index (== self->n) to the chain.  Pure C: reads the
 * state, assembles the longer chain and swaps it in without calling into
 * Python or releasing the GIL, so no other thread sees a half-grown chain
 * (the caller has waited out the GIL-free batches: pins == 0). */
static int bkscalable_grow(BKScalable *self, const bkscalable_link_shape *shape)
{
    bk_scalable_scheme sc;
    uint8_t link[BK_BLOOM_HEADER_LEN];
    const uint8_t *srcs[BK_SCALABLE_MAX_LINKS];
    uint64_t lens[BK_SCALABLE_MAX_LINKS];
    bkpy_state fresh;

    bk_scalable_scheme_of(self->st.buf, &sc);
    if (bkscalable_new_link(&sc, self->n, shape->num_bits, shape->k, shape->capacity,
                            shape->error_rate, link, &lens[self->n]) < 0)
        return -1;
    for (uint32_t i = 0; i < self->n; i++) {
        srcs[i] = self->link_buf[i];
        lens[i] = bk_scalable_link_len(self->st.buf, i);
    }
    srcs[self->n] = link;
    if (bkscalable_assemble(&fresh, &sc, self->n + 1, srcs, lens, 1ULL << self->n) < 0)
        return -1;
    bkscalable_replace(self, &fresh);
    return 0;
}

/* ---- End logic for growth --------------------------------------------- */

/* ScalableBase(error_rate, tightening, initial_capacity, growth, layout,
 *              num_bits, num_hashes, link_error_rate, *, seed=0,
 *              secret=None, key=None): link 0 is sized by the facade. */
static PyObject *bkscalable_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"error_rate", "tightening", "initial_capacity", "growth",
                             "layout", "num_bits", "num_hashes", "link_error_rate", "seed",
                             "secret", "key", NULL};
    bk_scalable_scheme sc;
    bk_hasher hs;
    unsigned long long n0, num_bits;
    unsigned int growth, layout, k;
    double link_err;
    uint8_t link[BK_BLOOM_HEADER_LEN];
    const uint8_t *srcs[1] = {link};
    uint64_t link_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0); /* the scheme is checked below */
    BKScalable *self;

    memset(&sc, 0, sizeof sc);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ddKIIKId|$OOO:ScalableBase", kwlist, &sc.p,
                                     &sc.r, &n0, &growth, &layout, &num_bits, &k, &link_err,
                                     &a.seed_obj, &a.secret, &a.key))
        return NULL;
    if (bkpy_parse_ctor(&a) < 0)
        return NULL;
    if (bkpy_check_design(BK_KIND_SCALABLE_BLOOM, n0, sc.p) < 0)
        return NULL;
    if (!(sc.r > 0.0 && sc.r < 1.0) || growth < BK_SCALABLE_MIN_GROWTH ||
        growth > BK_SCALABLE_MAX_GROWTH || layout > BK_BLOOM_LAYOUT_MAX) {
        PyErr_SetString(PyExc_ValueError,
                        "tightening must be in (0, 1), growth in [2, 16], layout 0, 1 or 2");
        return NULL;
    }
    sc.n0 = n0;
    sc.growth = growth;
    sc.layout = layout;
    sc.seed = a.seed;
    sc.keyed = a.keyed;
    bk_hasher_init(&hs, a.seed, a.keyed ? a.secret16 : NULL);
    sc.key_check = bk_hasher_key_check(&hs);
    if (bkscalable_new_link(&sc, 0, num_bits, k, n0, link_err, link, &link_len) < 0)
        return NULL;
    self = bkpy_obj_new(type, bk_scalable_state_len(1, &link_len), &a);
    if (self == NULL)
        return NULL;
    bk_scalable_assemble(self->st.buf, &sc, 1, srcs, &link_len, 1);
    (void)bkscalable_attach((PyObject *)self);
    return (PyObject *)self;
}

/* ---- Begin logic for per-key operations ------------------------------- */

BK_INLINE int bkscalable_contains_h(const BKScalable *self, uint64_t h)
{
    return bk_scalable_contains(self->links, &self->soa, self->n, h);
}

static int bkscalable_newest_full(const BKScalable *self)
{
    uint32_t last = self->n - 1;
    return bkscalable_link_count(self, last) >= bkscalable_link_capacity(self, last);
}

/* Add h to the newest link, which has room, unless some link holds it:
 * 1 new, 0 already present. */
static int bkscalable_add_newest(BKScalable *self, uint64_t h)
{
    uint8_t *cp = BKS_LINK_PARAM(self, self->n - 1, BK_BLOOM_P_COUNT);
    if (!bk_scalable_add_newest(self->links, &self->soa, self->n, h))
        return 0;
    bk_store_u64le(cp, bk_load_u64le(cp) + 1);
    return 1;
}

/* Add h to a chain whose newest link is full: 1 new, 0 already present, -1
 * error.  Growth needs two things that let other threads run: the new
 * link's shape from the facade (Python code, bkscalable_ask_shape) and the end of
 * every GIL-free batch on the old buffer, which growth frees
 * (bkpy_state_wait_pins releases the GIL while it waits).  Another thread
 * may meanwhile grow, clear or union this chain.  So both come first, and
 * the decision is taken again afterwards on the state as it then is: the
 * shape is used only if the chain still has shape.index links with the
 * newest full, and the read-check-grow-add that follows runs without any
 * call into Python and without releasing the GIL.  (Before: the shape was
 * asked for link n, then the link built at the n another thread had made
 * meanwhile -- "bad link N shape" from add and add_many, and an add_many
 * that raised lost the rest of its keys; issue #23, R31.)  Each retry
 * follows a change made by another thread, and a chain has at most 64
 * links, so the loop ends. */
static int bkscalable_add_full(BKScalable *self, uint64_t h)
{
    bkscalable_link_shape shape;
    shape.index = UINT32_MAX; /* none yet */
    for (;;) {
        if (!bkscalable_newest_full(self))
            return bkscalable_add_newest(self, h); /* room now (a clear, say) */
        if (bkscalable_contains_h(self, h))
            return 0; /* a key already present never makes the chain grow */
        if (self->n >= BK_SCALABLE_MAX_LINKS) {
            PyErr_Format(bkpy_CapacityError,
                         "scalable chain is full: at most %u links", BK_SCALABLE_MAX_LINKS);
            return -1;
        }
        if (shape.index == self->n && self->st.pins == 0)
            break;
        if (shape.index != self->n && bkscalable_ask_shape(self, self->n, &shape) < 0)
            return -1;
        bkpy_state_wait_pins(&self->st);
    }
    if (bkscalable_grow(self, &shape) < 0)
        return -1;
    (void)bk_bloom_add(&self->links[self->n - 1], h, 0);
    bk_store_u64le(BKS_LINK_PARAM(self, self->n - 1, BK_BLOOM_P_COUNT), 1);
    return 1;
}

/* Add one hashed key: 1 new, 0 already present, -1 error (growth).  The
 * common case (the newest link has room) is one pass over the chain
 * (bk_scalable_add_newest); a full newest link is checked first, so that a
 * key already present never makes the chain grow. */
static int bkscalable_add_h(BKScalable *self, uint64_t h)
{
    uint32_t last = self->n - 1;
    uint8_t *cp = BKS_LINK_PARAM(self, last, BK_BLOOM_P_COUNT);
    uint64_t count = bk_load_u64le(cp);
    if (BK_UNLIKELY(count >= bkscalable_link_capacity(self, last)))
        return bkscalable_add_full(self, h);
    if (!bk_scalable_add_newest(self->links, &self->soa, self->n, h))
        return 0;
    bk_store_u64le(cp, count + 1);
    return 1;
}

static PyObject *bkscalable_add(BKScalable *self, PyObject *key)
{
    uint64_t h;
    int rc;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    rc = bkscalable_add_h(self, h);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static int bkscalable_contains(BKScalable *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bkscalable_contains_h(self, h);
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

/* Keys ahead that the batch paths prefetch (one line per link per key). */
#define BKS_AHEAD 8

typedef struct {
    BKScalable *self;
    uint64_t added;
    int failed;
} bkscalable_add_ctx;

static void bkscalable_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkscalable_add_ctx *ctx = (bkscalable_add_ctx *)vctx;
    (void)offset;
    for (size_t i = 0; i < n && !ctx->failed; i++) {
        int rc;
        if (i + BKS_AHEAD < n) /* re-read each time: growth moves the links */
            bk_scalable_prefetch(ctx->self->links, ctx->self->n, hs[i + BKS_AHEAD]);
        rc = bkscalable_add_h(ctx->self, hs[i]);
        if (rc < 0)
            ctx->failed = 1;
        else
            ctx->added += (uint64_t)rc;
    }
}

static PyObject *bkscalable_add_many(BKScalable *self, PyObject *keys)
{
    bkscalable_add_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    ctx.self = self;
    ctx.added = 0;
    ctx.failed = 0;
    /* Holds the GIL: growth calls back into Python (bkscalable_add_full). */
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkscalable_add_chunk, NULL,
                             &ctx, 0, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    if (rc < 0 || ctx.failed)
        return NULL;
    return PyLong_FromUnsignedLongLong(ctx.added);
}

static void bkscalable_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    const BKScalable *self = (const BKScalable *)view;
    if (self->links[0].blocked) {
        /* Blocked links: link by link over the chunk with the prefetching
         * (AVX2) batch path of bk_bloom.c, newest first -- one line per key
         * per link, so testing every key in every link is cheap, and 2-3x
         * faster than the per-key chain walk below. */
        uint8_t tmp[BKPY_CHUNK];
        if (bk_simd_avx2 && self->links[0].version == BK_BLOOM_VERSION_STREAM) {
            /* the same passes, each key's positions derived once for all
             * links (bk_simd.c) */
            const uint64_t *words[BK_SCALABLE_MAX_LINKS];
            uint64_t nb[BK_SCALABLE_MAX_LINKS];
            for (uint32_t l = 0; l < self->n; l++) {
                words[l] = self->links[l].words;
                nb[l] = self->links[l].num_blocks;
            }
            bk_simd_chain1_contains_many_avx2(words, nb, self->soa.k, self->n, hs, n, out);
            return;
        }
        bk_bloom_contains_many(&self->links[self->n - 1], hs, n, out);
        for (uint32_t l = self->n - 1; l-- > 0;) {
            bk_bloom_contains_many(&self->links[l], hs, n, tmp);
            for (size_t i = 0; i < n; i++)
                out[i] |= tmp[i];
        }
        return;
    }
    /* Classic links: one key at a time through the chain query, with the
     * first line of every link prefetched BKS_AHEAD keys ahead (link by link
     * over the chunk would run all k probes of every key that a link holds
     * or falsely passes, in every link: 3x slower). */
    for (size_t i = 0; i < n && i < BKS_AHEAD; i++)
        bk_scalable_prefetch(self->links, self->n, hs[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + BKS_AHEAD < n)
            bk_scalable_prefetch(self->links, self->n, hs[i + BKS_AHEAD]);
        out[i] = (uint8_t)bkscalable_contains_h(self, hs[i]);
    }
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for set operations ----------------------------------- */

static int bkscalable_check_compatible(PyObject *a_obj, PyObject *other_obj, const char *op)
{
    BKScalable *a = (BKScalable *)a_obj, *b;
    bk_scalable_scheme x, y;
    b = (BKScalable *)other_obj;
    bk_scalable_scheme_of(a->st.buf, &x);
    bk_scalable_scheme_of(b->st.buf, &y);
    /* op is always "union": chains have no intersection */
#define BKS_DIFF(cond, ...)                                              \
    if (cond) {                                                          \
        PyErr_Format(bkpy_IncompatibleFiltersError, __VA_ARGS__);        \
        return -1;                                                       \
    }
    BKS_DIFF(x.layout != y.layout, "cannot union scalable chains of different layouts");
    BKS_DIFF(x.p != y.p, "cannot union scalable chains with different error_rate");
    BKS_DIFF(x.r != y.r, "cannot union scalable chains with different tightening");
    BKS_DIFF(x.n0 != y.n0, "cannot union scalable chains with different initial_capacity: "
             "%llu vs %llu", (unsigned long long)x.n0, (unsigned long long)y.n0);
    BKS_DIFF(x.growth != y.growth, "cannot union scalable chains with different growth: %u vs %u",
             x.growth, y.growth);
    BKS_DIFF(x.seed != y.seed, "cannot union scalable chains with different seeds: %llu vs %llu",
             (unsigned long long)x.seed, (unsigned long long)y.seed);
    BKS_DIFF(x.keyed != y.keyed || x.key_check != y.key_check,
             "cannot union scalable chains with different hashing (keyed vs unkeyed, or "
             "different secrets)");
    for (uint32_t i = 0; i < a->n && i < b->n; i++) {
        BKS_DIFF(a->links[i].num_bits != b->links[i].num_bits || a->links[i].k != b->links[i].k,
                 "cannot union scalable chains whose link %u shapes differ: num_bits %llu vs "
                 "%llu, num_hashes %u vs %u", i, (unsigned long long)a->links[i].num_bits,
                 (unsigned long long)b->links[i].num_bits, a->links[i].k, b->links[i].k);
    }
#undef BKS_DIFF
    return 0;
}

static void bkscalable_recount(BKScalable *self, uint32_t i)
{
    bk_bloom *b = &self->links[i]; /* as BloomBase's recount */
    bk_store_u64le(BKS_LINK_PARAM(self, i, BK_BLOOM_P_COUNT),
                   bkpy_count_of_estimate(bk_bloom_estimate_count(b), b->num_bits));
}

/* |= (scalable chains have no intersection: is_union is always 1). */
static PyObject *bkscalable_inplace_union(PyObject *self_obj, PyObject *other_obj, int is_union)
{
    BKScalable *self = (BKScalable *)self_obj, *o;
    uint32_t common;
    (void)is_union;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    /* Wait first (the GIL is released while waiting: either chain may
     * grow meanwhile), then check the link shapes on the chains as they
     * are now, and OR them without releasing the GIL again. */
    bkpy_state_wait_pins(&self->st); /* see bkscalable_contains_many */
    if (bkscalable_check_compatible(self_obj, other_obj, "union") < 0)
        return NULL;
    o = (BKScalable *)other_obj;
    common = self->n < o->n ? self->n : o->n;
    if (o->n > self->n) {
        /* Longer other chain: take its extra links as they are. */
        const uint8_t *srcs[BK_SCALABLE_MAX_LINKS];
        uint64_t lens[BK_SCALABLE_MAX_LINKS];
        bk_scalable_scheme sc;
        bkpy_state fresh;
        for (uint32_t i = 0; i < o->n; i++) {
            BKScalable *from = i < self->n ? self : o;
            srcs[i] = from->link_buf[i];
            lens[i] = bk_scalable_link_len(from->st.buf, i);
        }
        bk_scalable_scheme_of(self->st.buf, &sc);
        if (bkscalable_assemble(&fresh, &sc, o->n, srcs, lens, 0) < 0)
            return NULL;
        bkscalable_replace(self, &fresh);
    }
    for (uint32_t i = 0; i < common; i++) {
        bk_bloom_union(&self->links[i], &o->links[i], 0);
        bkscalable_recount(self, i);
    }
    Py_INCREF(self);
    return (PyObject *)self;
}

/* Same chain beyond the header's identity: the parameter block (scheme
 * and link lengths) and every link's shape and bits. */
static int bkscalable_equal(PyObject *a, PyObject *b)
{
    BKScalable *x = (BKScalable *)a, *y = (BKScalable *)b;
    int eq = x->n == y->n &&
             memcmp(BKS_PARAMS(x), BKS_PARAMS(y), bk_scalable_params_len(x->n)) == 0;
    for (uint32_t i = 0; eq && i < x->n; i++)
        eq = x->links[i].num_bits == y->links[i].num_bits && x->links[i].k == y->links[i].k &&
             memcmp(x->links[i].words, y->links[i].words, (size_t)x->links[i].num_words * 8) == 0;
    return eq;
}

/* ---- End logic for set operations ------------------------------------- */

static PyObject *bkscalable_clear(BKScalable *self, PyObject *Py_UNUSED(ignored))
{
    /* Back to link 0 alone, empty. */
    bk_scalable_scheme sc;
    bkpy_state fresh;
    const uint8_t *srcs[1];
    uint64_t len;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bkpy_state_wait_pins(&self->st); /* see bkscalable_contains_many */
    bk_scalable_scheme_of(self->st.buf, &sc);
    srcs[0] = self->link_buf[0];
    len = bk_scalable_link_len(self->st.buf, 0);
    if (bkscalable_assemble(&fresh, &sc, 1, srcs, &len, 1) < 0) /* header only: zero bits */
        return NULL;
    bkscalable_replace(self, &fresh);
    bk_store_u64le(BKS_LINK_PARAM(self, 0, BK_BLOOM_P_COUNT), 0);
    Py_RETURN_NONE;
}

/* A borrowed chain cannot grow: it is mapped read-only. */
static int bkscalable_check_load(const bkpy_load_args *a)
{
    if (!a->copy && (a->writable || a->shared)) {
        PyErr_SetString(PyExc_TypeError,
                        "a ScalableBloomFilter cannot be mapped for writing: growing the chain "
                        "reallocates its state, which a mapping cannot follow; map it read-only, "
                        "or load it (bloomkit.load), add, and save it");
        return -1;
    }
    return 0;
}

/* _detach: release a borrowed buffer, keeping an owned copy of the chain
 * (read-only), not an empty one. */
static int bkscalable_detach(PyObject *self_obj)
{
    BKScalable *self = (BKScalable *)self_obj;
    bkpy_state fresh;
    bk_header h;
    const char *reason = NULL;
    memset(&fresh, 0, sizeof fresh);
    if (bkpy_state_alloc(&fresh, self->st.len) < 0)
        return -1;
    memcpy(fresh.buf, self->st.buf, (size_t)self->st.len);
    if (bk_format_validate(fresh.buf, fresh.len, BK_ALLOW_DIRTY, &h, &reason) == BK_OK &&
        h.kind == BK_KIND_SCALABLE_BLOOM) {
        bkscalable_replace(self, &fresh);
    } else {
        /* Another process rewrote the map since it was opened (R32): its
         * header cannot be attached again, so the views validated at open
         * are moved onto the copy as they are.  (Copies of this object
         * re-validate and refuse it.) */
        const uint8_t *old = self->st.buf;
        for (uint32_t i = 0; i < self->n; i++) {
            self->link_buf[i] = fresh.buf + (self->link_buf[i] - old);
            self->links[i].words =
                (uint64_t *)(void *)(fresh.buf + ((const uint8_t *)self->links[i].words - old));
        }
        PyBuffer_Release(&self->st.view);
        self->st.alloc = fresh.alloc;
        self->st.buf = fresh.buf;
        self->st.len = fresh.len;
        bk_scalable_soa_attach(&self->soa, self->links, self->n);
    }
    return 0;
}

static PyObject *bkscalable_links(BKScalable *self, PyObject *Py_UNUSED(ignored))
{
    /* Read every number first: building the tuples allocates objects the
     * garbage collector tracks, and a collection may run finalizers (Python
     * code) that let another thread clear the chain and free its links. */
    struct {
        unsigned long long capacity, num_bits, count, bits_set, nbytes;
        double error_rate;
        unsigned int k;
    } row[BK_SCALABLE_MAX_LINKS];
    uint32_t n = self->n;
    PyObject *list;
    for (uint32_t i = 0; i < n; i++) {
        row[i].capacity = bkscalable_link_capacity(self, i);
        row[i].error_rate = bk_load_f64le(BKS_LINK_PARAM(self, i, BK_BLOOM_P_ERROR_RATE));
        row[i].num_bits = self->links[i].num_bits;
        row[i].k = self->links[i].k;
        row[i].count = bkscalable_link_count(self, i);
        row[i].bits_set = bk_bloom_popcount(&self->links[i]);
        row[i].nbytes = (unsigned long long)self->links[i].num_words * 8;
    }
    list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(KdKIKKK)", row[i].capacity, row[i].error_rate,
                                    row[i].num_bits, row[i].k, row[i].count, row[i].bits_set,
                                    row[i].nbytes);
        if (t == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *bkscalable_estimate_count(BKScalable *self, PyObject *Py_UNUSED(ignored))
{
    double total = 0.0;
    for (uint32_t i = 0; i < self->n; i++)
        total += bk_bloom_estimate_count(&self->links[i]); /* INFINITY when full */
    return PyFloat_FromDouble(total);
}

static PyObject *bkscalable_estimate_error_rate(BKScalable *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_scalable_estimate_error_rate(self->links, self->n));
}

static Py_ssize_t bkscalable_len(BKScalable *self)
{
    uint64_t c = 0;
    for (uint32_t i = 0; i < self->n; i++)
        c += bkscalable_link_count(self, i);
    return bkpy_len_of(c);
}

BKPY_GETTER(bkscalable, BKScalable, layout, PyUnicode_FromString(bkscalable_layout(self) ? "blocked" : "classic"))
BKPY_GETTER(bkscalable, BKScalable, layout_version,
           PyLong_FromUnsignedLong(bkscalable_layout(self) == BK_BLOOM_LAYOUT_BLOCKED_V1))
BKPY_GETTER(bkscalable, BKScalable, num_links, PyLong_FromUnsignedLong(self->n))

static PyObject *bkscalable_get_capacity(BKScalable *self, void *closure)
{
    uint64_t c = 0;
    (void)closure;
    for (uint32_t i = 0; i < self->n; i++)
        c += bkscalable_link_capacity(self, i);
    return PyLong_FromUnsignedLongLong(c);
}

static PyObject *bkscalable_get_num_bits(BKScalable *self, void *closure)
{
    uint64_t c = 0;
    (void)closure;
    for (uint32_t i = 0; i < self->n; i++)
        c += self->links[i].num_bits;
    return PyLong_FromUnsignedLongLong(c);
}

static PyGetSetDef bkscalable_getset[] = {
    BKPY_PARAM(f64, "error_rate", BK_SCALABLE_P_ERROR_RATE, "Target compound false-positive rate P."),
    BKPY_PARAM(f64, "tightening", BK_SCALABLE_P_TIGHTENING, "r: link i has rate P (1 - r) r**i."),
    BKPY_PARAM(u64, "initial_capacity", BK_SCALABLE_P_INITIAL, "Capacity of link 0."),
    BKPY_PARAM(u32, "growth", BK_SCALABLE_P_GROWTH, "s: link i has capacity initial_capacity * s**i."),
    {"layout", (getter)bkscalable_get_layout, NULL, "'classic' or 'blocked' links.", NULL},
    {"layout_version", (getter)bkscalable_get_layout_version, NULL,
     "The links' layout version (BlockedBloomFilter.layout_version; 0 for classic).", NULL},
    {"num_links", (getter)bkscalable_get_num_links, NULL, "Length of the chain.", NULL},
    {"capacity", (getter)bkscalable_get_capacity, NULL, "Sum of the links' capacities (keys before the next growth).", NULL},
    {"num_bits", (getter)bkscalable_get_num_bits, NULL, "Sum of the links' bits.", NULL},
    BKPY_PAYLOAD_NBYTES("Bytes of the payload (all links with their headers)."),
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkscalable_methods[] = {
    {"add", (PyCFunction)bkscalable_add, METH_O,
     "add($self, key, /)\n--\n\nAdd a key to the newest link unless some link already reports "
     "it; return True if it was added."},
    {"add_many", (PyCFunction)bkscalable_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key; return how many were added."},
    BKPY_CONTAINS_MANY_METHOD,
    {"union", (PyCFunction)(void (*)(void))bkpy_obj_union, METH_FASTCALL,
     "union($self, *others)\n--\n\nLink-wise OR of chains with identical parameters."},
    {"clear", (PyCFunction)bkscalable_clear, METH_NOARGS, "clear($self, /)\n--\n\nBack to one empty link."},
    {"estimate_count", (PyCFunction)bkscalable_estimate_count, METH_NOARGS,
     "estimate_count($self, /)\n--\n\nSum of the links' Swamidass-Baldi estimates."},
    {"estimate_error_rate", (PyCFunction)bkscalable_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\n1 - prod(1 - fill_i ** k_i) over the links."},
    {"_links", (PyCFunction)bkscalable_links, METH_NOARGS, NULL},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkscalable);

static PyTypeObject BKScalable_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.ScalableBase",
    BKPY_OBJ_SLOTS(bkscalable, BKScalable),
    .tp_as_number = &bkpy_obj_as_number_union,
    .tp_as_sequence = &bkscalable_as_sequence,
    .tp_doc = "C core of ScalableBloomFilter.",
};

/* No `empty`: a closed mapped chain keeps its own copy (bkscalable_detach). */
static const bkpy_desc bkscalable_desc = {
    .type = &BKScalable_Type,
    .noun = "ScalableBloomFilter",
    .kinds = 1u << BK_KIND_SCALABLE_BLOOM,
    .attach = bkscalable_attach,
    .equal = bkscalable_equal,
    .compatible = bkscalable_check_compatible,
    .inplace = bkscalable_inplace_union,
    .check_load = bkscalable_check_load,
    .detach = bkscalable_detach,
    /* Buffer input is queried without the GIL, pinning the chain: whatever
     * reallocates it (growth, clear, union, _detach) first waits for the
     * query to finish (bkpy_state_wait_pins).  Queries share the chain. */
    .probe = bkscalable_probe,
    .view_off = 0, /* the probe reads the object (links, soa, n) */
    .query = BKPY_QUERY_PINNED,
};

int bkscalable_init(PyObject *m)
{
    return bkpy_register_type(m, "ScalableBase", &bkscalable_desc);
}
