/*
 * py_sketch.c -- CPython types for the count-min sketch (CountMinBase,
 * kind 7) and the TinyLFU frequency sketch (TinyLFUBase, kind 8): the
 * count-min type here, TinyLFU's in its part py_sketch_tlfu.c.
 *
 * Both objects work directly on one state buffer (header + params +
 * payload, bk_sketch.c and bk_sketch_tlfu.c), owned or borrowed from an
 * mmap, exactly like py_bloom.c.  The two structs share a common initial
 * sequence (BKSk, py_sketch.h), so the state-level methods (to_bytes,
 * _seal, pickling, equality, ...) are written once.  The facades in
 * bloomkit/sketch.py and topk.py subclass these types.
 */
#include "py_sketch.h"

#include "bk_atomic.h"
#include "bk_endian.h"
#include "bk_sketch.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    PyObject *weakreflist;
    bk_cms cms;
} BKCms;

static PyTypeObject BKCms_Type;

/* ---- Begin logic for shared state methods ----------------------------- */

/* A non-negative int as u64; values >= 2^64 saturate (counters would
 * saturate anyway).  what names the argument in errors. */
static int bksketch_parse_count(PyObject *obj, uint64_t *out, const char *what)
{
    int overflow = 0;
    long long v;
    if (!PyLong_Check(obj) && !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a non-negative int, not %.50s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (!PyLong_Check(obj)) {
        PyObject *i = PyNumber_Index(obj);
        int rc;
        if (i == NULL)
            return -1;
        rc = bksketch_parse_count(i, out, what);
        Py_DECREF(i);
        return rc;
    }
    v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow < 0 || (!overflow && v < 0)) {
        PyErr_Format(PyExc_ValueError, "%s must be a non-negative int", what);
        return -1;
    }
    if (!overflow) {
        *out = (uint64_t)v;
        return 0;
    }
    *out = PyLong_AsUnsignedLongLong(obj);
    if (*out == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        *out = UINT64_MAX;
    }
    return 0;
}

BKPY_ATTACH(bksketch_cms, BKCms, cms, bk_sketch_cms_attach)

/* What a closed mapped sketch keeps: the smallest of its kind. */
static int bksketch_empty_cms(PyObject *self)
{
    bkpy_state *st = &((BKSk *)self)->st;
    if (bkpy_state_alloc(st, BK_CMS_HEADER_LEN + 4) < 0)
        return -1;
    bk_sketch_cms_init_state(st->buf, 1, 1, 32, 0, BK_CMS_ROWS_LATEST, 0, 0, 0);
    return bksketch_cms_attach(self);
}

/* Beyond the header's identity: parameters and payload (DIRTY and the
 * checksum field are not part of a sketch's value).  Both sketch types'
 * (py_sketch.h). */
int bksketch_equal(PyObject *a, PyObject *b)
{
    const bkpy_state *x = &((BKSk *)a)->st, *y = &((BKSk *)b)->st;
    return memcmp(x->buf + BK_OFF_PARAMS, y->buf + BK_OFF_PARAMS,
                  (size_t)(x->len - BK_OFF_PARAMS)) == 0;
}

/* A constructor's int argument (an exact int: checked by the caller) as
 * u64; 0, which the shape check refuses, when it is negative or >= 2**64.
 * Both constructors' (py_sketch.h). */
uint64_t bksketch_u64_or_0(PyObject *obj)
{
    uint64_t v = PyLong_AsUnsignedLongLong(obj);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        v = 0;
    }
    return v;
}

/* ---- End logic for shared state methods ------------------------------- */

/* ---- Begin logic for the count-min sketch ----------------------------- */

#define BKCMS_TOTAL_PTR(self) ((self)->st.buf + BK_OFF_PARAMS + BK_CMS_P_TOTAL)

static void bksketch_cms_total_add(BKCms *self, uint64_t n, int atomic)
{
    uint8_t *p = BKCMS_TOTAL_PTR(self);
    if (BK_HAS_ATOMICS && atomic) {
        bk_atomic_sat_add_u64le(p, n);
        return;
    }
    bk_store_u64le(p, bk_sat_add64(bk_load_u64le(p), n));
}

/* CountMinBase(width, depth, *, seed=0, secret=None, key=None,
 *              conservative=False, counter_bits=32, row_hash=1)
 * row_hash 0 rebuilds a sketch of the old row derivation (a Redis sketch
 * created before #16.5, or a rebuild of an old file); new work uses 1. */
static PyObject *bksketch_cms_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"width", "depth", "seed", "secret", "key", "conservative",
                             "counter_bits", "row_hash", NULL};
    PyObject *wobj, *dobj;
    int conservative = 0, bits = 32, rows = (int)BK_CMS_ROWS_LATEST;
    uint64_t width, depth, payload_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0);
    const char *reason = NULL;
    bk_rc shape;
    BKCms *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOpii:CountMinSketch", kwlist, &wobj,
                                     &dobj, &a.seed_obj, &a.secret, &a.key, &conservative,
                                     &bits, &rows))
        return NULL;
    if (rows < 0 || rows > (int)BK_CMS_ROWS_LATEST) {
        PyErr_Format(PyExc_ValueError,
                     "row_hash must be 0 (double hashing, sketches before bloomkit's "
                     "#16.5) or 1 (independent rows, the default), got %d", rows);
        return NULL;
    }
    if (PyBool_Check(wobj) || PyBool_Check(dobj) || !PyLong_Check(wobj) || !PyLong_Check(dobj)) {
        PyErr_SetString(PyExc_TypeError, "width and depth must be ints");
        return NULL;
    }
    width = bksketch_u64_or_0(wobj);
    depth = bksketch_u64_or_0(dobj);
    if (bkpy_parse_ctor(&a) < 0)
        return NULL;
    if (depth > BK_CMS_MAX_DEPTH)
        depth = 0; /* refused by the shape check below */
    if (bits != 32 && bits != 64) {
        PyErr_SetString(PyExc_ValueError, "counter_bits must be 32 or 64");
        return NULL;
    }
    shape = bk_sketch_cms_shape(width, (uint32_t)depth, (uint32_t)bits, &payload_len, &reason);
    self = bkpy_obj_new_ctor(type, &a, shape, reason, BK_CMS_HEADER_LEN + payload_len);
    if (self == NULL)
        return NULL;
    bk_sketch_cms_init_state(self->st.buf, width, (uint32_t)depth, (uint32_t)bits, conservative,
                             (uint32_t)rows, a.seed, a.keyed,
                             bk_hasher_key_check(&self->st.hasher));
    bk_sketch_cms_attach(&self->cms, self->st.buf);
    return (PyObject *)self;
}

static PyObject *bksketch_cms_add(BKCms *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t h, count = 1;
    int atomic;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "add(key, count=1) takes 1 or 2 arguments");
        return NULL;
    }
    if (BK_UNLIKELY(!self->st.writable) && bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (nargs == 2 && bksketch_parse_count(args[1], &count, "count") < 0)
        return NULL;
    if (bkpy_key_w(&self->st, args[0], &h) < 0)
        return NULL;
    atomic = bkpy_state_atomic(&self->st);
    bk_sketch_cms_add(&self->cms, h, count, atomic);
    bksketch_cms_total_add(self, count, atomic);
    return PyLong_FromUnsignedLongLong(bk_sketch_cms_estimate(&self->cms, h));
}

static PyObject *bksketch_cms_estimate(BKCms *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(bk_sketch_cms_estimate(&self->cms, h));
}

static int bksketch_cms_contains(BKCms *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_sketch_cms_estimate(&self->cms, h) > 0;
}

typedef struct {
    bk_cms *cms;
    const uint64_t *counts;  /* NULL: every count is 1 */
    size_t ncounts;
    int atomic;
    int mismatch;
    uint64_t total;
} bksketch_cms_add_ctx;

static void bksketch_cms_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bksketch_cms_add_ctx *ctx = (bksketch_cms_add_ctx *)vctx;
    for (size_t j = 0; j < n; j++) {
        uint64_t c = 1;
        if (ctx->counts != NULL) {
            if (offset + j >= ctx->ncounts) {
                ctx->mismatch = 1;
                return;
            }
            c = ctx->counts[offset + j];
        }
        bk_sketch_cms_add(ctx->cms, hs[j], c, ctx->atomic);
        ctx->total = bk_sat_add64(ctx->total, c);
    }
}

/* counts: a 1-d integer buffer (numpy array) or a sequence of ints. */
static int bksketch_cms_read_counts(PyObject *counts, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (PyObject_CheckBuffer(counts) && !PyBytes_Check(counts) && !PyByteArray_Check(counts)) {
        Py_buffer v;
        const char *f;
        char c;
        Py_ssize_t len, stride;
        int is_signed;
        if (PyObject_GetBuffer(counts, &v, PyBUF_RECORDS_RO) < 0)
            return -1;
        f = v.format ? v.format : "B";
        if (*f == '<' || *f == '=' || *f == '@' || *f == '|')
            f++;
        c = *f;
        if (v.ndim != 1 || f[1] != '\0' || strchr("bhilqnBHILQN", c) == NULL || c == '\0' ||
            (v.itemsize != 1 && v.itemsize != 2 && v.itemsize != 4 && v.itemsize != 8)) {
            PyErr_SetString(PyExc_TypeError,
                            "counts must be a 1-d array of native-endian integers or a sequence "
                            "of ints");
            PyBuffer_Release(&v);
            return -1;
        }
        is_signed = strchr("bhilqn", c) != NULL;
        len = v.shape ? v.shape[0] : v.len / v.itemsize;
        stride = v.strides ? v.strides[0] : v.itemsize;
        *out = (uint64_t *)PyMem_Malloc((size_t)(len > 0 ? len : 1) * sizeof(uint64_t));
        if (*out == NULL) {
            PyBuffer_Release(&v);
            bkpy_raise_nomem((uint64_t)(len > 0 ? len : 1) * 8, "the counts of a batch",
                             "pass fewer counts per call");
            return -1;
        }
        for (Py_ssize_t i = 0; i < len; i++) {
            const char *p = (const char *)v.buf + i * stride;
            int64_t s = 0;
            uint64_t u = 0;
            switch (v.itemsize) {
            case 1: { int8_t a; uint8_t b; memcpy(&a, p, 1); memcpy(&b, p, 1); s = a; u = b; break; }
            case 2: { int16_t a; uint16_t b; memcpy(&a, p, 2); memcpy(&b, p, 2); s = a; u = b; break; }
            case 4: { int32_t a; uint32_t b; memcpy(&a, p, 4); memcpy(&b, p, 4); s = a; u = b; break; }
            default: { int64_t a; uint64_t b; memcpy(&a, p, 8); memcpy(&b, p, 8); s = a; u = b; break; }
            }
            if (is_signed && s < 0) {
                PyMem_Free(*out);
                *out = NULL;
                PyBuffer_Release(&v);
                PyErr_SetString(PyExc_ValueError, "counts must be non-negative");
                return -1;
            }
            (*out)[i] = is_signed ? (uint64_t)s : u;
        }
        *n = (size_t)len;
        PyBuffer_Release(&v);
        return 0;
    }
    {
        PyObject *seq = PySequence_Fast(counts, "counts must be a sequence of ints or a 1-d "
                                                "integer array");
        Py_ssize_t len;
        if (seq == NULL)
            return -1;
        len = PySequence_Fast_GET_SIZE(seq);
        *out = (uint64_t *)PyMem_Malloc((size_t)(len > 0 ? len : 1) * sizeof(uint64_t));
        if (*out == NULL) {
            Py_DECREF(seq);
            bkpy_raise_nomem((uint64_t)(len > 0 ? len : 1) * 8, "the counts of a batch",
                             "pass fewer counts per call");
            return -1;
        }
        for (Py_ssize_t i = 0; i < len; i++) {
            if (bksketch_parse_count(PySequence_Fast_GET_ITEM(seq, i), &(*out)[i], "counts") < 0) {
                PyMem_Free(*out);
                *out = NULL;
                Py_DECREF(seq);
                return -1;
            }
        }
        *n = (size_t)len;
        Py_DECREF(seq);
        return 0;
    }
}

static PyObject *bksketch_cms_add_many(BKCms *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"keys", "counts", NULL};
    PyObject *keys, *counts = Py_None, *owned = NULL;
    bksketch_cms_add_ctx ctx;
    bkpy_batch_info info;
    int rc, nogil;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:add_many", kwlist, &keys, &counts))
        return NULL;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(&ctx, 0, sizeof ctx);
    if (counts != Py_None) {
        Py_ssize_t nkeys;
        uint64_t *cs;
        if (bksketch_cms_read_counts(counts, &cs, &ctx.ncounts) < 0)
            return NULL;
        ctx.counts = cs;
        if (!PyList_CheckExact(keys) && !PyTuple_CheckExact(keys) &&
            !((PyObject_CheckBuffer(keys) || bkbytekeys_api_check(keys) ||
               bkarrow_api_check(keys)) &&
              self->st.keyfunc == NULL) &&
            !PyUnicode_Check(keys) && !PyBytes_Check(keys) && !PyByteArray_Check(keys)) {
            owned = PySequence_List(keys);
            if (owned == NULL) {
                PyMem_Free(cs);
                return NULL;
            }
            keys = owned;
        }
        nkeys = PyObject_Length(keys);
        if (nkeys < 0)
            PyErr_Clear();
        if (nkeys >= 0 && (size_t)nkeys != ctx.ncounts) {
            PyErr_Format(PyExc_ValueError, "keys and counts differ in length (%zd vs %zu)",
                         nkeys, ctx.ncounts);
            PyMem_Free(cs);
            Py_XDECREF(owned);
            return NULL;
        }
    }
    ctx.cms = &self->cms;
    /* Conservative update is read-then-raise: keep the GIL (deterministic
     * bytes); plain updates over a buffer run without it, atomically (other
     * GIL-free batches may add at the same time), pinning the state so that
     * merge, clear and _detach wait for them (py_common.h). */
    nogil = !self->cms.conservative;
    ctx.atomic = nogil || bkpy_state_atomic(&self->st);
    rc = bkpy_for_each_chunk_pinned(&self->st, keys, bksketch_cms_add_chunk, NULL, &ctx, nogil, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    bksketch_cms_total_add(self, ctx.total, bkpy_state_atomic(&self->st));
    PyMem_Free((void *)ctx.counts);
    Py_XDECREF(owned);
    if (rc < 0)
        return NULL;
    if (ctx.counts != NULL &&
        (ctx.mismatch || (size_t)(info.count + info.nulls) != ctx.ncounts)) {
        PyErr_SetString(PyExc_ValueError, "keys and counts differ in length");
        return NULL;
    }
    Py_RETURN_NONE;
}

typedef struct {
    bkpy_bools out; /* first, u64 set: bkpy_bools_size receives this context */
    const bk_cms *cms;
} bksketch_cms_est_ctx;

static void bksketch_cms_est_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bksketch_cms_est_ctx *ctx = (bksketch_cms_est_ctx *)vctx;
    uint64_t *out = (uint64_t *)(void *)ctx->out.out + offset;
    for (size_t j = 0; j < n; j++)
        out[j] = bk_sketch_cms_estimate(ctx->cms, hs[j]);
}

static PyObject *bksketch_cms_estimate_many(BKCms *self, PyObject *keys)
{
    bksketch_cms_est_ctx ctx;
    bkpy_batch_info info;
    PyObject *res = NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.out.u64 = 1;
    ctx.cms = &self->cms;
    if (bkpy_for_each_chunk_pinned(&self->st, keys, bksketch_cms_est_chunk, bkpy_bools_size,
                                   &ctx, 1, &info) == 0)
        res = bkpy_bools_finish(&ctx.out, info.from_buffer);
    bkpy_bools_clear(&ctx.out);
    return res;
}

static int bksketch_cms_check_compatible(BKCms *a, PyObject *other, const char *op)
{
    BKCms *b;
    if (bkpy_check_other((PyObject *)a, other, op) < 0)
        return -1;
    b = (BKCms *)other;
    if (a->cms.width != b->cms.width || a->cms.depth != b->cms.depth) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s sketches of different shapes: width x depth %llu x %u vs "
                     "%llu x %u", op, (unsigned long long)a->cms.width, a->cms.depth,
                     (unsigned long long)b->cms.width, b->cms.depth);
        return -1;
    }
    if (a->cms.bytes != b->cms.bytes) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s sketches with different counter_bits: %u vs %u", op,
                     a->cms.bytes * 8, b->cms.bytes * 8);
        return -1;
    }
    if (a->cms.conservative != b->cms.conservative) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s a conservative-update sketch with a plain one", op);
        return -1;
    }
    if (a->cms.rows != b->cms.rows) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s sketches with different row hashing: %u vs %u (a key's "
                     "counters differ; rebuild the older one from its stream)",
                     op, a->cms.rows, b->cms.rows);
        return -1;
    }
    return bkpy_check_same_hashing(&a->st, &b->st, op, "sketches");
}

static int bksketch_cms_merge_into(BKCms *self, PyObject *other, int saturate)
{
    uint64_t other_total;
    if (bkpy_state_check_writable(&self->st) < 0)
        return -1;
    /* The merge is a plain read-modify-write of every counter: no GIL-free
     * add_many may run on this sketch meanwhile (it would lose counts).  The
     * wait releases the GIL, and another thread may close (detach) `other`
     * meanwhile: check the shapes after it. */
    bkpy_state_wait_pins(&self->st);
    if (bksketch_cms_check_compatible(self, other, "merge") < 0)
        return -1;
    other_total = bk_load_u64le(BKCMS_TOTAL_PTR((BKCms *)other));
    if (bk_sketch_cms_merge(&self->cms, &((BKCms *)other)->cms, saturate) != BK_OK) {
        PyErr_SetString(PyExc_OverflowError,
                        "merge would overflow a counter; the sketch is unchanged (use "
                        "merge(other, saturate=True) to clamp at the maximum, or 64-bit "
                        "counters)");
        return -1;
    }
    bksketch_cms_total_add(self, other_total, bkpy_state_atomic(&self->st));
    bkpy_state_merge_keys(&self->st, &((BKCms *)other)->st);
    return 0;
}

static PyObject *bksketch_cms_merge(BKCms *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"other", "saturate", NULL};
    PyObject *other;
    int saturate = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:merge", kwlist, &other, &saturate))
        return NULL;
    if (bksketch_cms_merge_into(self, other, saturate) < 0)
        return NULL;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *bksketch_cms_nb_add(PyObject *a, PyObject *b)
{
    PyObject *c;
    if (!PyObject_TypeCheck(a, &BKCms_Type) || !PyObject_TypeCheck(b, &BKCms_Type))
        Py_RETURN_NOTIMPLEMENTED;
    if (bksketch_cms_check_compatible((BKCms *)a, b, "add") < 0)
        return NULL;
    c = bkpy_obj_copy_of(a);
    if (c == NULL)
        return NULL;
    if (bksketch_cms_merge_into((BKCms *)c, b, 0) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return c;
}

static PyObject *bksketch_cms_nb_iadd(PyObject *a, PyObject *b)
{
    if (!PyObject_TypeCheck(a, &BKCms_Type) || !PyObject_TypeCheck(b, &BKCms_Type))
        Py_RETURN_NOTIMPLEMENTED;
    if (bksketch_cms_merge_into((BKCms *)a, b, 0) < 0)
        return NULL;
    Py_INCREF(a);
    return a;
}

static PyObject *bksketch_cms_clear(BKCms *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bkpy_state_wait_pins(&self->st); /* no GIL-free add_many half before, half after */
    memset(self->cms.counters, 0, (size_t)(self->cms.width * self->cms.depth * self->cms.bytes));
    bk_store_u64le(BKCMS_TOTAL_PTR(self), 0);
    Py_RETURN_NONE;
}

static PyObject *bksketch_cms_counter_positions(BKCms *self, PyObject *key)
{
    uint64_t h, pos[BK_CMS_MAX_DEPTH];
    PyObject *list;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    bk_sketch_cms_positions(&self->cms, h, pos);
    list = PyList_New(self->cms.depth);
    if (list == NULL)
        return NULL;
    for (uint32_t i = 0; i < self->cms.depth; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(pos[i]);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

BKPY_GETTER(bksketch_cms, BKCms, width, PyLong_FromUnsignedLongLong(self->cms.width))
BKPY_GETTER(bksketch_cms, BKCms, depth, PyLong_FromUnsignedLong(self->cms.depth))
BKPY_GETTER(bksketch_cms, BKCms, counter_bits, PyLong_FromUnsignedLong(self->cms.bytes * 8))
BKPY_GETTER(bksketch_cms, BKCms, conservative, PyBool_FromLong(self->cms.conservative))
BKPY_GETTER(bksketch_cms, BKCms, total,
            PyLong_FromUnsignedLongLong(bk_load_u64le(BKCMS_TOTAL_PTR(self))))
BKPY_GETTER(bksketch_cms, BKCms, row_hash, PyLong_FromUnsignedLong(self->cms.rows))
BKPY_GETTER(bksketch_cms, BKCms, counter_max, PyLong_FromUnsignedLongLong(self->cms.max))
static PyGetSetDef bksketch_cms_getset[] = {
    {"width", (getter)bksketch_cms_get_width, NULL, "Counters per row.", NULL},
    {"depth", (getter)bksketch_cms_get_depth, NULL, "Rows (one counter per row per key).", NULL},
    {"counter_bits", (getter)bksketch_cms_get_counter_bits, NULL, "32 or 64.", NULL},
    {"row_hash", (getter)bksketch_cms_get_row_hash, NULL,
     "How rows derive from the key hash: 1 independent (mixed) rows, 0 the double hashing "
     "of sketches written before bloomkit's #16.5.", NULL},
    {"counter_max", (getter)bksketch_cms_get_counter_max, NULL, "The saturation value of a counter.",
     NULL},
    {"conservative", (getter)bksketch_cms_get_conservative, NULL, "True with conservative update.",
     NULL},
    {"total", (getter)bksketch_cms_get_total, NULL, "Sum of all counts added (saturating u64).", NULL},
    BKSK_COMMON_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bksketch_cms_methods[] = {
    {"add", (PyCFunction)(void (*)(void))bksketch_cms_add, METH_FASTCALL,
     "add($self, key, count=1, /)\n--\n\nAdd count (a non-negative int) to key; return its new "
     "estimate.  Counters saturate at counter_max."},
    {"estimate", (PyCFunction)bksketch_cms_estimate, METH_O,
     "estimate($self, key, /)\n--\n\nThe estimated count of key: never below the true count."},
    {"add_many", (PyCFunction)(void (*)(void))bksketch_cms_add_many, METH_VARARGS | METH_KEYWORDS,
     "add_many($self, keys, counts=None)\n--\n\nAdd every key (count 1, or the matching entry "
     "of counts: a sequence of ints or a 1-d integer array)."},
    {"estimate_many", (PyCFunction)bksketch_cms_estimate_many, METH_O,
     "estimate_many($self, keys, /)\n--\n\nEstimates of every key: a list, or a numpy uint64 "
     "array for array input."},
    {"merge", (PyCFunction)(void (*)(void))bksketch_cms_merge, METH_VARARGS | METH_KEYWORDS,
     "merge($self, other, *, saturate=False)\n--\n\nAdd other's counters into this sketch "
     "(same shape, seed, counter width and hashing only).  If a sum would pass counter_max, "
     "raise OverflowError and change nothing, unless saturate=True (then clamp).  Returns self."},
    {"clear", (PyCFunction)bksketch_cms_clear, METH_NOARGS, "clear($self, /)\n--\n\nZero every counter."},
    {"_counter_positions", (PyCFunction)bksketch_cms_counter_positions, METH_O,
     "_counter_positions($self, key, /)\n--\n\nFlat counter indices (row * width + column), "
     "one per row, in payload order; counter j is at payload byte j * counter_bits / 8."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods bksketch_cms_as_sequence = {
    .sq_contains = (objobjproc)bksketch_cms_contains,
};

static PyNumberMethods bksketch_cms_as_number = {
    .nb_add = bksketch_cms_nb_add,
    .nb_inplace_add = bksketch_cms_nb_iadd,
};

static PyTypeObject BKCms_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.CountMinBase",
    BKPY_OBJ_SLOTS(bksketch_cms, BKCms),
    .tp_as_number = &bksketch_cms_as_number,
    .tp_as_sequence = &bksketch_cms_as_sequence,
    .tp_doc = "CountMinBase(width, depth, *, seed=0, secret=None, key=None, conservative=False, "
              "counter_bits=32)\n--\n\nC core of CountMinSketch.",
};

/* ---- End logic for the count-min sketch ------------------------------- */

/* ---- Begin logic for TopK's view of the sketch (py_sketch.h) ---------- */

int bksketch_cms_check(PyObject *o)
{
    return PyObject_TypeCheck(o, &BKCms_Type);
}

bk_cms *bksketch_cms_core(PyObject *o)
{
    return &((BKCms *)o)->cms;
}

bkpy_state *bksketch_cms_state(PyObject *o)
{
    return &((BKCms *)o)->st;
}

void bksketch_cms_count_total(PyObject *o, uint64_t n, int atomic)
{
    bksketch_cms_total_add((BKCms *)o, n, atomic);
}

int bksketch_cms_parse_count(PyObject *obj, uint64_t *out, const char *what)
{
    return bksketch_parse_count(obj, out, what);
}

/* ---- End logic for TopK's view of the sketch -------------------------- */

static const bkpy_desc bksketch_cms_desc = {
    .type = &BKCms_Type,
    .noun = "CountMinSketch",
    .kinds = 1u << BK_KIND_COUNT_MIN,
    .attach = bksketch_cms_attach,
    .empty = bksketch_empty_cms,
    .equal = bksketch_equal,
};

int bksketch_init(PyObject *m)
{
    if (bkpy_register_type(m, "CountMinBase", &bksketch_cms_desc) < 0)
        return -1;
    return bksketch_tlfu_init(m);
}
