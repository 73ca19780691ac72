/*
 * py_bloom.c -- CPython type for the classic and blocked Bloom filters.
 *
 * One C type, bloomkit._core.BloomBase, serves both layouts (the layout is
 * read from the state header); the Python facades BloomFilter and
 * BlockedBloomFilter (bloomkit/bloom.py) subclass it with __slots__ = ()
 * and add sizing and persistence, so `x in f` still goes straight to
 * sq_contains and add() is METH_O: no method lookup, no temporaries.
 *
 * The object works directly on its state buffer (header + payload), owned
 * or borrowed from an mmap; to_bytes() is a sealed copy of it.
 */
#include "py_common.h"

#include <math.h>

#include "bk_bloom.h"
#include "bk_atomic.h"
#include "bk_endian.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_bloom bloom;
    PyObject *weakreflist;
    uint64_t alone_batches; /* add_many batches that held their shared file alone */
} BKBloom;

static PyTypeObject BKBloom_Type;

#define BKBLOOM_COUNT_PTR(self) ((self)->st.buf + BK_OFF_PARAMS + BK_BLOOM_P_COUNT)

static uint64_t bkbloom_get_count(const BKBloom *self)
{
    return bk_load_u64le(BKBLOOM_COUNT_PTR(self));
}

static void bkbloom_add_count(BKBloom *self, uint64_t n, int atomic)
{
    uint8_t *p = BKBLOOM_COUNT_PTR(self);
    if (n == 0)
        return;
    if (BK_HAS_ATOMICS && atomic) {
        bk_atomic_add_u64le(p, n);
        return;
    }
    bk_store_u64le(p, bk_load_u64le(p) + n);
}

static void bkbloom_set_count(BKBloom *self, uint64_t n)
{
    bk_store_u64le(BKBLOOM_COUNT_PTR(self), n);
}

/* The constructor's shape: the layout, then the core's verdict. */
static bk_rc bkbloom_shape(int layout, uint64_t num_bits, uint32_t k, uint64_t *payload_len,
                           const char **reason)
{
    if (layout < BK_BLOOM_LAYOUT_CLASSIC || layout > BK_BLOOM_LAYOUT_MAX) {
        *reason = "layout must be 0 (classic), 1 (blocked, layout version 0) or 2 (blocked, "
                  "layout version 1)";
        return BK_ERR_ARG;
    }
    return bk_bloom_shape(layout, num_bits, k, payload_len, reason);
}

/* BloomBase(layout, num_bits, num_hashes, capacity, error_rate, *, seed=0,
 *           secret=None, key=None): the low-level constructor; the facades
 * compute num_bits and num_hashes from (capacity, error_rate).  layout is
 * BK_BLOOM_LAYOUT_*: 0 classic, 1 blocked version 0, 2 blocked version 1. */
static PyObject *bkbloom_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"layout", "num_bits", "num_hashes", "capacity", "error_rate",
                             "seed", "secret", "key", NULL};
    int layout;
    unsigned long long num_bits;
    unsigned int k;
    uint64_t payload_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(BK_KIND_BLOOM);
    const char *reason = NULL;
    bk_rc shape;
    BKBloom *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iKIKd|$OOO:BloomBase", kwlist, &layout,
                                     &num_bits, &k, &a.capacity, &a.error_rate, &a.seed_obj,
                                     &a.secret, &a.key))
        return NULL;
    shape = bkbloom_shape(layout, num_bits, k, &payload_len, &reason);
    self = bkpy_obj_new_ctor(type, &a, shape, reason, BK_BLOOM_HEADER_LEN + payload_len);
    if (self == NULL)
        return NULL;
    bk_bloom_init_state(self->st.buf, layout, num_bits, k, a.capacity, a.error_rate, a.seed,
                        a.keyed, bk_hasher_key_check(&self->st.hasher));
    bk_bloom_attach(&self->bloom, self->st.buf);
    return (PyObject *)self;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static PyObject *bkbloom_add(BKBloom *self, PyObject *key)
{
    uint64_t h;
    int atomic, was_new;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    bkpy_state_wait_batches(&self->st); /* a GIL-free add_many holds the filter */
    atomic = self->st.shared;
    was_new = bk_bloom_add(&self->bloom, h, atomic);
    if (was_new) {
        bkbloom_add_count(self, 1, atomic);
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static int bkbloom_contains(BKBloom *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_bloom_contains(&self->bloom, h);
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

/* Partitioned batches (bk_bloom.h, bk_bloom_add_many_part): buffer input
 * (numpy arrays, ByteKeys: the GIL-free loops) to a blocked filter of 16
 * MiB or more is staged, BKBLOOM_STAGE hashes at a time, and each full
 * stage (and the last, partial one) is partitioned by block range before
 * it is applied.  Scratch: one allocation of the stage plus the
 * partition's buffers, at most 2^18 * (8 + 8) = 4 MiB for an add and
 * 2^18 * (8 + 8 + 4 + 1) = 5.25 MiB for a query, per running batch,
 * whatever the input's size.  If it cannot be allocated the batch runs
 * unpartitioned (same bits, same answers).  Lists and iterators keep the
 * plain chunks: their hashing, with the GIL, costs more than the misses. */
#define BKBLOOM_STAGE ((size_t)1 << 18)
#define BKBLOOM_STAGE_MIN 4096  /* smaller batches: nothing to gain */

typedef struct {
    uint64_t *hs;     /* cap staged hashes, followed by the scratch; NULL: not staging */
    size_t cap, fill, base, total;
} bkbloom_stage;

static void bkbloom_stage_open(bkbloom_stage *sg, const bk_bloom *b, Py_ssize_t total, int query)
{
    size_t cap;
    if (!bk_bloom_part_wanted(b) || total < BKBLOOM_STAGE_MIN)
        return;
    cap = (size_t)total < BKBLOOM_STAGE ? (size_t)total : BKBLOOM_STAGE;
    sg->hs = (uint64_t *)PyMem_RawMalloc(cap * 8 + bk_bloom_part_scratch_len(cap, query));
    sg->cap = cap;
    sg->fill = 0;
    sg->base = 0;
    sg->total = (size_t)total;
}

static void bkbloom_stage_close(bkbloom_stage *sg)
{
    PyMem_RawFree(sg->hs);
    sg->hs = NULL;
}

/* Copy a chunk into the stage; 1 when the stage is to be applied now (it
 * is full, or the chunk was the input's last).  The glue's chunks are
 * consecutive, so the stage holds keys base..base+fill-1. */
static int bkbloom_stage_put(bkbloom_stage *sg, const uint64_t *hs, size_t n, size_t offset)
{
    if (sg->fill == 0)
        sg->base = offset;
    memcpy(sg->hs + sg->fill, hs, n * sizeof *hs);
    sg->fill += n;
    return sg->fill + BKPY_CHUNK > sg->cap || offset + n >= sg->total;
}

typedef struct {
    bkpy_writer w; /* first: the shared writer batch (py_common.h) */
    bk_bloom *bloom;
    uint64_t added;
    bkbloom_stage stage;
    int alone;       /* holds its shared file alone (bkpy_state_hold_file): plain ORs */
    int held;        /* it did at the start (a joiner may have taken the file back) */
    size_t check_at; /* keys done when it next looks for a process waiting to join */
} bkbloom_add_ctx;

/* Buffer input runs without the GIL holding the batch lock (bkpy_writer)
 * and, to a large blocked filter, through the partition stage. */
static int bkbloom_add_size(void *vctx, Py_ssize_t n, int from_buffer)
{
    bkbloom_add_ctx *ctx = (bkbloom_add_ctx *)vctx;
    if (bkpy_writer_size(vctx, n, from_buffer) < 0)
        return -1;
    if (from_buffer == 1 && ctx->stage.hs == NULL) /* not BKPY_BUFFER_GAPS: not consecutive */
        bkbloom_stage_open(&ctx->stage, ctx->bloom, n, 0);
    /* A shared map's large GIL-free batch tries to hold its file alone:
     * three fcntl calls a batch against a locked OR a word (py_common.h). */
    if (from_buffer && ctx->w.nogil && !ctx->alone && n >= BKBLOOM_STAGE_MIN &&
        bkpy_state_hold_file(ctx->w.st)) {
        ctx->alone = ctx->held = 1;
        ctx->check_at = BKPY_HOLD_CHECK_KEYS;
    }
    return 0;
}

/* Whether the next keys (done: keys applied so far) must be ORed in
 * atomically; hands the file back when a process waits to join. */
static int bkbloom_add_atomic(bkbloom_add_ctx *ctx, size_t done)
{
    if (!ctx->w.st->shared)
        return 0;
    if (ctx->alone && done >= ctx->check_at) {
        ctx->check_at = done + BKPY_HOLD_CHECK_KEYS;
        if (bkpy_state_file_wanted(ctx->w.st)) {
            bkpy_state_share_file(ctx->w.st);
            ctx->alone = 0;
        }
    }
    return !ctx->alone;
}

static void bkbloom_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkbloom_add_ctx *ctx = (bkbloom_add_ctx *)vctx;
    bkbloom_stage *sg = &ctx->stage;
    /* Plain ORs keep the prefetched lines in flight (a locked OR per word
     * serialises the memory pipeline): a GIL-free batch holds the batch
     * lock, and a GIL-held chunk first waits out any GIL-free batch.  Only
     * a buffer shared with other processes needs atomics, and not while
     * the batch holds the file alone. */
    bkpy_writer_chunk(&ctx->w);
    if (sg->hs != NULL) {
        if (bkbloom_stage_put(sg, hs, n, offset)) {
            ctx->added += bk_bloom_add_many_part(ctx->bloom, sg->hs, sg->fill,
                                                 bkbloom_add_atomic(ctx, sg->base),
                                                 sg->hs + sg->cap);
            sg->fill = 0;
        }
        return;
    }
    ctx->added += bk_bloom_add_many(ctx->bloom, hs, n, bkbloom_add_atomic(ctx, offset));
}

static PyObject *bkbloom_add_many(BKBloom *self, PyObject *keys)
{
    bkbloom_add_ctx ctx = {{&self->st, 0}, &self->bloom, 0};
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    rc = bkpy_for_each_chunk_writer(&ctx.w, keys, bkbloom_add_chunk, bkbloom_add_size, &info);
    bkbloom_stage_close(&ctx.stage);
    if (ctx.alone)
        bkpy_state_share_file(&self->st);
    self->alone_batches += (uint64_t)ctx.held;
    bkbloom_add_count(self, ctx.added, self->st.shared);
    if (rc < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(ctx.added);
}

static void bkbloom_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_bloom_contains_many((const bk_bloom *)view, hs, n, out);
}

/* A query of a large filter (bkbloom_stage above): bkpy_contains_many's
 * loop with the stage between the hashing and the probes. */
typedef struct {
    bkpy_bools out;   /* first: bkpy_bools_size receives this context */
    const bk_bloom *bloom;
    bkbloom_stage stage;
} bkbloom_query_ctx;

static int bkbloom_query_size(void *vctx, Py_ssize_t n, int from_buffer)
{
    bkbloom_query_ctx *ctx = (bkbloom_query_ctx *)vctx;
    if (bkpy_bools_size(vctx, n, from_buffer) < 0)
        return -1;
    if (from_buffer == 1 && ctx->stage.hs == NULL) /* not BKPY_BUFFER_GAPS: not consecutive */
        bkbloom_stage_open(&ctx->stage, ctx->bloom, n, 1);
    return 0;
}

static void bkbloom_query_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkbloom_query_ctx *ctx = (bkbloom_query_ctx *)vctx;
    bkbloom_stage *sg = &ctx->stage;
    if (sg->hs == NULL) {
        bk_bloom_contains_many(ctx->bloom, hs, n, bkpy_bools_reserve(&ctx->out, offset, n));
        return;
    }
    if (bkbloom_stage_put(sg, hs, n, offset)) {
        bk_bloom_contains_many_part(ctx->bloom, sg->hs, sg->fill,
                                    bkpy_bools_reserve(&ctx->out, sg->base, sg->fill),
                                    sg->hs + sg->cap);
        sg->fill = 0;
    }
}

/* contains_many's answers: a list / numpy array, or bits into pk. */
static PyObject *bkbloom_query(BKBloom *self, PyObject *keys, bkpy_packed *pk)
{
    bkbloom_query_ctx ctx;
    bkpy_batch_info info;
    PyObject *res = NULL;
    /* Buffer input runs without the GIL, pinning the state: _detach (an
     * mmap's close) waits for it (py_common.h). */
    /* Only mapped files (borrowed buffers: 4 KiB pages here) are queried
     * through the stage: the query loop already keeps 16 misses in flight,
     * and on the huge pages an owned state gets (py_common_state.c) the
     * partition measured 5-10% slower at 10^8 keys, on 4 KiB-page file
     * maps 5-10% faster (docs/scale.md). */
    if (self->st.alloc != NULL || !bk_bloom_part_wanted(&self->bloom))
        return bkpy_contains_bits(&self->st, keys, bkbloom_probe, &self->bloom,
                                  BKPY_QUERY_PINNED, pk);
    memset(&ctx, 0, sizeof ctx);
    ctx.out.packed = pk;
    ctx.bloom = &self->bloom;
    if (bkpy_for_each_chunk_pinned(&self->st, keys, bkbloom_query_chunk, bkbloom_query_size,
                                   &ctx, 1, &info) == 0)
        res = bkpy_bools_finish(&ctx.out, info.from_buffer);
    bkpy_bools_clear(&ctx.out);
    bkbloom_stage_close(&ctx.stage);
    return res;
}

static PyObject *bkbloom_contains_many(BKBloom *self, PyObject *keys)
{
    return bkbloom_query(self, keys, NULL);
}

static PyObject *bkbloom_contains_bits(PyObject *self, PyObject *keys, bkpy_packed *pk)
{
    return bkbloom_query((BKBloom *)self, keys, pk);
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for set operations ----------------------------------- */

static int bkbloom_check_compatible(PyObject *a_obj, PyObject *other_obj, const char *op)
{
    BKBloom *a = (BKBloom *)a_obj, *b;
    bk_header ha, hb;
    const char *reason = NULL;
    b = (BKBloom *)other_obj;
    (void)bk_format_parse(a->st.buf, a->st.len, &ha, &reason);
    (void)bk_format_parse(b->st.buf, b->st.len, &hb, &reason);
    if (ha.kind != hb.kind) {
        PyErr_Format(bkpy_IncompatibleFiltersError, "cannot %s a %s with a %s: layouts differ",
                     op, bk_format_kind_name(ha.kind), bk_format_kind_name(hb.kind));
        return -1;
    }
    if (a->bloom.num_bits != b->bloom.num_bits) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters of different sizes: num_bits %llu vs %llu", op,
                     (unsigned long long)a->bloom.num_bits, (unsigned long long)b->bloom.num_bits);
        return -1;
    }
    if (a->bloom.k != b->bloom.k) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters with different num_hashes: %u vs %u", op,
                     a->bloom.k, b->bloom.k);
        return -1;
    }
    if (a->bloom.version != b->bloom.version) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters of different layout versions: %u vs %u (the same key "
                     "sets different bits in each)", op, a->bloom.version, b->bloom.version);
        return -1;
    }
    return bkpy_check_same_hashing(&a->st, &b->st, op, "filters");
}

static void bkbloom_recount(BKBloom *self)
{
    /* After a union or intersection the exact count is unknown: store the
     * estimate from the bits (estimate_count(): Swamidass-Baldi for
     * classic, the blocked form for blocked), clamped to [0, num_bits]. */
    bkbloom_set_count(self, bkpy_count_of_estimate(bk_bloom_estimate_count(&self->bloom),
                                                   self->bloom.num_bits));
}

/* _recount(): store the estimate_count() estimate as the count, exactly as a
 * union does.  The count a build keeps ("adds that were new") depends on the
 * order of the keys; the estimate depends only on the bits.  bloomkit.dask
 * calls this on every distributed build, so that the result is the same
 * bytes for any partitioning of the same keys (R27). */
static PyObject *bkbloom_recount_meth(BKBloom *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bkbloom_recount(self);
    Py_RETURN_NONE;
}

static PyObject *bkbloom_inplace(PyObject *self_obj, PyObject *other, int is_union)
{
    BKBloom *self = (BKBloom *)self_obj;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    /* Wait first: the wait releases the GIL, and another thread may close
     * (detach) `other` meanwhile, leaving a small stand-in of another
     * shape.  The shapes are checked on what is there after it. */
    bkpy_state_wait_batches(&self->st);
    if (bkbloom_check_compatible(self_obj, other, is_union ? "union" : "intersect") < 0)
        return NULL;
    if (is_union)
        bk_bloom_union(&self->bloom, &((BKBloom *)other)->bloom, self->st.shared);
    else
        bk_bloom_intersection(&self->bloom, &((BKBloom *)other)->bloom);
    bkbloom_recount(self);
    Py_INCREF(self);
    return (PyObject *)self;
}

/* Beyond the header's identity: the shape and the bits (not the count). */
static int bkbloom_equal(PyObject *a, PyObject *b)
{
    BKBloom *x = (BKBloom *)a, *y = (BKBloom *)b;
    return x->bloom.num_bits == y->bloom.num_bits && x->bloom.k == y->bloom.k &&
           x->bloom.version == y->bloom.version &&
           memcmp(x->bloom.words, y->bloom.words, (size_t)x->bloom.num_words * 8) == 0;
}

/* ---- End logic for set operations ------------------------------------- */

static PyObject *bkbloom_clear(BKBloom *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bkpy_state_wait_batches(&self->st);
    memset(self->bloom.words, 0, (size_t)self->bloom.num_words * 8);
    bkbloom_set_count(self, 0);
    Py_RETURN_NONE;
}

static unsigned bkbloom_kind_mask(PyTypeObject *type)
{
    PyObject *k = PyObject_GetAttrString((PyObject *)type, "_bk_kind");
    long v;
    if (k == NULL) {
        PyErr_Clear();
        return (1u << BK_KIND_BLOOM) | (1u << BK_KIND_BLOCKED_BLOOM);
    }
    v = PyLong_AsLong(k);
    Py_DECREF(k);
    if (v != BK_KIND_BLOOM && v != BK_KIND_BLOCKED_BLOOM) {
        PyErr_Clear();
        return (1u << BK_KIND_BLOOM) | (1u << BK_KIND_BLOCKED_BLOOM);
    }
    return 1u << v;
}

/* _header(layout, num_bits, num_hashes, capacity, error_rate, *, seed=0,
 *         secret=None): the 128-byte header of a fresh, empty filter (count
 * 0, checksum 0, DIRTY clear) without allocating its payload.
 * bloomkit.create() writes it to a file and extends the file with zeros:
 * a new mapped filter that was never built in memory. */
static PyObject *bkbloom_header(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"layout", "num_bits", "num_hashes", "capacity", "error_rate",
                             "seed", "secret", NULL};
    int layout;
    unsigned long long num_bits;
    unsigned int k;
    uint64_t payload_len = 0;
    uint8_t head[BK_BLOOM_HEADER_LEN];
    bkpy_ctor_args a = BKPY_CTOR_INIT(BK_KIND_BLOOM);
    const char *reason = NULL;
    bk_rc shape;
    bk_hasher hs;
    (void)type;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iKIKd|$OO:_header", kwlist, &layout,
                                     &num_bits, &k, &a.capacity, &a.error_rate, &a.seed_obj,
                                     &a.secret))
        return NULL;
    shape = bkbloom_shape(layout, num_bits, k, &payload_len, &reason);
    if (bkpy_ctor_check(&a, shape, reason) < 0)
        return NULL;
    bk_hasher_init(&hs, a.seed, a.keyed ? a.secret16 : NULL);
    bk_bloom_init_state(head, layout, num_bits, k, a.capacity, a.error_rate, a.seed, a.keyed,
                        bk_hasher_key_check(&hs));
    return PyBytes_FromStringAndSize((const char *)head, BK_BLOOM_HEADER_LEN);
}

BKPY_ATTACH(bkbloom, BKBloom, bloom, bk_bloom_attach)

/* What a closed mapped filter keeps: a classic filter of 512 bits. */
static int bkbloom_empty(PyObject *self)
{
    bkpy_state *st = &((BKBloom *)self)->st;
    if (bkpy_state_alloc(st, BK_BLOOM_HEADER_LEN + 64) < 0)
        return -1;
    bk_bloom_init_state(st->buf, 0, 512, 1, 1, 0.5, 0, 0, 0);
    return bkbloom_attach(self);
}

static PyObject *bkbloom_bit_positions(BKBloom *self, PyObject *key)
{
    uint64_t h, pos[BK_BLOOM_MAX_K_CLASSIC]; /* >= BK_BLOOM_MAX_K_BLOCKED */
    PyObject *list;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    bk_bloom_positions(&self->bloom, h, pos);
    list = PyList_New(self->bloom.k);
    if (list == NULL)
        return NULL;
    for (uint32_t i = 0; i < self->bloom.k; i++)
        PyList_SET_ITEM(list, i, PyLong_FromUnsignedLongLong(pos[i]));
    for (uint32_t i = 0; i < self->bloom.k; i++)
        if (PyList_GET_ITEM(list, i) == NULL) {
            Py_DECREF(list);
            return NULL;
        }
    return list;
}

/* _simd(on=None): the AVX2 query paths' state; True/False switches them
 * (False forces the scalar reference paths, for tests and comparisons).
 * Process-wide; a no-op returning False where AVX2 is unavailable. */
/* The argument of a process-wide switch, name(on=None): 1 with *on set,
 * 0 when only asked, -1 with TypeError. */
static int bkbloom_switch_arg(const char *name, PyObject *const *args, Py_ssize_t nargs, int *on)
{
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most one argument", name);
        return -1;
    }
    if (nargs == 0 || args[0] == Py_None)
        return 0;
    *on = PyObject_IsTrue(args[0]);
    return *on < 0 ? -1 : 1;
}

static PyObject *bkbloom_simd(PyObject *cls, PyObject *const *args, Py_ssize_t nargs)
{
    int on, r = bkbloom_switch_arg("_simd", args, nargs, &on);
    (void)cls;
    if (r > 0)
        bk_simd_set(on);
    return r < 0 ? NULL : PyBool_FromLong(bk_simd_avx2);
}

/* _partition(on=None): whether large blocked batches are partitioned by
 * block range (bk_bloom.h); True/False switches it, process-wide (False:
 * the plain loops, for tests and comparisons; BLOOMKIT_NO_PARTITION=1 at
 * import does the same). */
static PyObject *bkbloom_partition(PyObject *cls, PyObject *const *args, Py_ssize_t nargs)
{
    int on, r = bkbloom_switch_arg("_partition", args, nargs, &on);
    (void)cls;
    if (r > 0)
        bk_bloom_part_on = on;
    return r < 0 ? NULL : PyBool_FromLong(bk_bloom_part_on);
}

/* _hold_file([fd]): the descriptor that holds this shared map's writer
 * lock (bloomkit/persist, after joining the writers); None forgets it for good
 * (persist/registry.py's fork hook; _detach clears it).  Returns the number of
 * add_many batches that have started holding the file alone so far (the
 * tests' evidence that the plain path ran). */
static PyObject *bkbloom_hold_file(BKBloom *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *arg = nargs > 0 ? args[0] : NULL;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "_hold_file takes at most one argument");
        return NULL;
    }
    if (arg == NULL) {
        /* only the count */
    } else if (arg != Py_None) {
        long fd = PyLong_AsLong(arg);
        if (fd == -1 && PyErr_Occurred())
            return NULL;
        if (fd < 0 || fd >= INT_MAX || !self->st.shared) {
            PyErr_SetString(PyExc_ValueError,
                            "_hold_file needs a descriptor >= 0 and a shared map");
            return NULL;
        }
        self->st.lock_fd1 = (int)fd + 1;
    } else if (self->st.lock_fd1 > 0) {
        /* forgotten, not cleared: a batch holding the file alone now still
         * needs the descriptor to hand it back */
        self->st.lock_fd1 = -self->st.lock_fd1;
    }
    return PyLong_FromUnsignedLongLong(self->alone_batches);
}

static PyObject *bkbloom_estimate_count(BKBloom *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_bloom_estimate_count(&self->bloom));
}

static PyObject *bkbloom_estimate_error_rate(BKBloom *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_bloom_estimate_error_rate(&self->bloom));
}

static Py_ssize_t bkbloom_len(BKBloom *self)
{
    uint64_t c = bkbloom_get_count(self);
    return bkpy_len_of(c);
}

/* ---- getters ---- */

BKPY_GETTER(bkbloom, BKBloom, num_bits, PyLong_FromUnsignedLongLong(self->bloom.num_bits))
BKPY_GETTER(bkbloom, BKBloom, num_hashes, PyLong_FromUnsignedLong(self->bloom.k))
BKPY_GETTER(bkbloom, BKBloom, num_blocks, PyLong_FromUnsignedLongLong(self->bloom.num_blocks))
BKPY_GETTER(bkbloom, BKBloom, nbytes, PyLong_FromUnsignedLongLong(self->bloom.num_words * 8))
BKPY_GETTER(bkbloom, BKBloom, bits_set, PyLong_FromUnsignedLongLong(bk_bloom_popcount(&self->bloom)))
BKPY_GETTER(bkbloom, BKBloom, fill_ratio, PyFloat_FromDouble((double)bk_bloom_popcount(&self->bloom) /
                                                         (double)self->bloom.num_bits))
BKPY_GETTER(bkbloom, BKBloom, layout, PyUnicode_FromString(self->bloom.blocked ? "blocked" : "classic"))
BKPY_GETTER(bkbloom, BKBloom, layout_version, PyLong_FromUnsignedLong(self->bloom.version))

static PyGetSetDef bkbloom_getset[] = {
    {"num_bits", (getter)bkbloom_get_num_bits, NULL, "m, the number of bits.", NULL},
    {"num_hashes", (getter)bkbloom_get_num_hashes, NULL, "k, probes per key.", NULL},
    {"num_blocks", (getter)bkbloom_get_num_blocks, NULL, "512-bit blocks (blocked layout; 0 for classic).", NULL},
    BKPY_DESIGN_GETSET(BK_BLOOM_P_CAPACITY, BK_BLOOM_P_ERROR_RATE),
    {"nbytes", (getter)bkbloom_get_nbytes, NULL, "Bytes of the bit array (payload).", NULL},
    {"bits_set", (getter)bkbloom_get_bits_set, NULL, "Number of bits set (popcount).", NULL},
    {"fill_ratio", (getter)bkbloom_get_fill_ratio, NULL, "bits_set / num_bits.", NULL},
    {"layout", (getter)bkbloom_get_layout, NULL, "'classic' or 'blocked'.", NULL},
    {"layout_version", (getter)bkbloom_get_layout_version, NULL,
     "How a blocked key's in-block positions are derived: 1 (independent hash bits, "
     "the default) or 0 (32 bits of the hash: files written before version 1); 0 for "
     "classic.", NULL},
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkbloom_methods[] = {
    {"add", (PyCFunction)bkbloom_add, METH_O,
     "add($self, key, /)\n--\n\nAdd a key; return True if it was surely absent before."},
    {"add_many", (PyCFunction)bkbloom_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key of an iterable, list, tuple or 1-d numpy "
     "array; return how many were new.  Buffers are processed without the GIL."},
    BKPY_UPDATE_METHOD,
    {"contains_many", (PyCFunction)bkbloom_contains_many, METH_O,
     "contains_many($self, keys, /)\n--\n\nMembership of every key: a list of bools, or a numpy "
     "bool array for array input."},
    {"union", (PyCFunction)(void (*)(void))bkpy_obj_union, METH_FASTCALL,
     "union($self, *others)\n--\n\nA new filter holding the keys of all (bitwise OR)."},
    {"intersection", (PyCFunction)(void (*)(void))bkpy_obj_intersection, METH_FASTCALL,
     "intersection($self, *others)\n--\n\nA new filter approximating the common keys (bitwise "
     "AND; its false-positive rate is at least that of either input)."},
    {"clear", (PyCFunction)bkbloom_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemove every key."},
    {"_header", (PyCFunction)(void (*)(void))bkbloom_header, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "_header(layout, num_bits, num_hashes, capacity, error_rate, *, seed=0, secret=None)\n--\n\n"
     "The header of a fresh empty filter (no payload allocated); used by bloomkit.create()."},
    {"estimate_count", (PyCFunction)bkbloom_estimate_count, METH_NOARGS,
     "estimate_count($self, /)\n--\n\nEstimate of the number of distinct keys from the bits "
     "set (Swamidass-Baldi; for the blocked layout its form for k probes drawn with "
     "replacement in one block)."},
    {"estimate_error_rate", (PyCFunction)bkbloom_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\nCurrent false-positive rate from the bits: "
     "fill_ratio ** num_hashes (classic); the mean over blocks of (block fill) ** num_hashes "
     "(blocked)."},
    {"_bit_positions", (PyCFunction)bkbloom_bit_positions, METH_O,
     "_bit_positions($self, key, /)\n--\n\nThe payload bit indices a key probes (bit i is bit "
     "i % 8 of payload byte i // 8)."},
    {"_recount", (PyCFunction)bkbloom_recount_meth, METH_NOARGS,
     "_recount($self, /)\n--\n\nSet the count to the estimate from the bits (as a union "
     "does), so that it no longer depends on the order of the adds."},
    {"_hold_file", (PyCFunction)(void (*)(void))bkbloom_hold_file, METH_FASTCALL,
     "_hold_file($self, fd=..., /)\n--\n\nThe descriptor holding this shared map's writer "
     "lock (None: forget it), so that large add_many batches may hold the file alone; "
     "returns how many batches have.  Set by bloomkit.open/create."},
    {"_partition", (PyCFunction)(void (*)(void))bkbloom_partition, METH_FASTCALL | METH_CLASS,
     "_partition(on=None, /)\n--\n\nWhether batches of buffer keys to blocked filters of 16 "
     "MiB or more are partitioned by block range; pass False to force the plain loops "
     "(tests, comparisons).  Process-wide."},
    {"_simd", (PyCFunction)(void (*)(void))bkbloom_simd, METH_FASTCALL | METH_CLASS,
     "_simd(on=None, /)\n--\n\nWhether the AVX2 query paths are in use; pass False to force "
     "the scalar paths (process-wide), True to re-enable them where supported."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkbloom);

static PyTypeObject BKBloom_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.BloomBase",
    BKPY_OBJ_SLOTS(bkbloom, BKBloom),
    .tp_as_number = &bkpy_obj_as_number_setops,
    .tp_as_sequence = &bkbloom_as_sequence,
    .tp_doc = "BloomBase(layout, num_bits, num_hashes, capacity, error_rate, *, seed=0, "
              "secret=None, key=None)\n--\n\nC core of BloomFilter and BlockedBloomFilter.",
};

static const bkpy_desc bkbloom_desc = {
    .type = &BKBloom_Type,
    .noun = "Bloom filter",
    .kind_mask = bkbloom_kind_mask,
    .attach = bkbloom_attach,
    .empty = bkbloom_empty,
    .equal = bkbloom_equal,
    .compatible = bkbloom_check_compatible,
    .inplace = bkbloom_inplace,
    .add_many = (PyObject *(*)(PyObject *, PyObject *))bkbloom_add_many,
    .contains_bits = bkbloom_contains_bits,
};

int bkbloom_init(PyObject *m)
{
    bk_simd_init();
    bk_bloom_part_init();
    return bkpy_register_type(m, "BloomBase", &bkbloom_desc);
}
