/*
 * py_quotient.c -- CPython type for the quotient filter.
 *
 * bloomkit._core.QuotientBase works directly on its state buffer (header +
 * payload), owned or borrowed from an mmap, like BloomBase (py_bloom.c).
 * The facade bloomkit.QuotientFilter (quotient.py) subclasses it with
 * __slots__ = () and does the sizing, so `x in f` goes straight to
 * sq_contains and add() is METH_O.
 *
 * Every operation runs with the GIL held: an insert shifts a cluster, so a
 * reader racing a writer could see a half-moved run.  add_many is all or
 * nothing: the fingerprints it inserted are logged and removed again if the
 * table fills up (CapacityError) or a key fails to hash, which restores the
 * exact bytes (the layout depends only on the multiset of fingerprints).
 */
#include "py_common.h"

#include <math.h>

#include "bk_endian.h"
#include "bk_quotient.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_qf qf;
    uint64_t version; /* bumped by every mutation: live iterators notice */
    uint64_t clears;  /* bumped by clear and _detach: see bkquotient_add_ctx */
    PyObject *weakreflist;
} BKQuotient;

typedef struct {
    PyObject_HEAD
    BKQuotient *owner;
    bk_quotient_cursor cur;
    uint64_t version;
} BKQuotientIter;

static PyTypeObject BKQuotient_Type;
static PyTypeObject BKQuotientIter_Type;

static int bkquotient_check_params(unsigned long long capacity, double p, double max_load)
{
    if (bkpy_check_design(BK_KIND_QUOTIENT, capacity, p) < 0)
        return -1;
    if (!(max_load >= BK_QF_MIN_MAX_LOAD && max_load <= 1.0)) { /* NaN too */
        PyErr_SetString(PyExc_ValueError, "max_load must be in [0.01, 1]");
        return -1;
    }
    return 0;
}

/* An empty filter of shape (q, r) hashing with hs, keyfunc (NULL or a
 * callable) as its key function. */
static BKQuotient *bkquotient_new_empty(PyTypeObject *type, uint32_t q, uint32_t r,
                                  uint64_t capacity, double p, double max_load,
                                  const bk_hasher *hs, PyObject *keyfunc)
{
    uint64_t payload_len = 0;
    const char *reason = NULL;
    BKQuotient *self;
    if (bk_quotient_shape(q, r, &payload_len, &reason) != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason);
        return NULL;
    }
    self = (BKQuotient *)type->tp_alloc(type, 0); /* zeroed */
    if (self == NULL)
        return NULL;
    if (bkpy_state_alloc(&self->st, BK_QF_HEADER_LEN + payload_len) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->st.hasher = *hs;
    self->st.keyfunc = keyfunc == Py_None ? NULL : keyfunc;
    Py_XINCREF(self->st.keyfunc);
    bk_quotient_init_state(self->st.buf, q, r, capacity, p, max_load, hs->seed, hs->keyed,
                     bk_hasher_key_check(hs));
    bk_quotient_attach(&self->qf, self->st.buf);
    return self;
}

/* QuotientBase(q, r, capacity, error_rate, max_load, *, seed=0, secret=None,
 *              key=None): the low-level constructor; the facade computes q
 * and r from (capacity, error_rate, max_load). */
static PyObject *bkquotient_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"q", "r", "capacity", "error_rate", "max_load",
                             "seed", "secret", "key", NULL};
    unsigned int q, r;
    double max_load;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0); /* the design: bkquotient_check_params */
    bk_hasher hs;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "IIKdd|$OOO:QuotientBase", kwlist, &q, &r,
                                     &a.capacity, &a.error_rate, &max_load, &a.seed_obj,
                                     &a.secret, &a.key))
        return NULL;
    if (bkpy_parse_ctor(&a) < 0 || bkquotient_check_params(a.capacity, a.error_rate, max_load) < 0)
        return NULL;
    bk_hasher_init(&hs, a.seed, a.keyed ? a.secret16 : NULL);
    return (PyObject *)bkquotient_new_empty(type, q, r, a.capacity, a.error_rate, max_load, &hs,
                                            a.key);
}

static int bkquotient_raise(bk_rc rc)
{
    switch (rc) {
    case BK_ERR_CAPACITY:
        PyErr_SetString(bkpy_CapacityError,
                        "quotient filter is full (2**q - 1 fingerprints); it was left "
                        "unchanged: use resized() to grow it");
        break;
    case BK_ERR_NOTFOUND:
        PyErr_SetString(PyExc_KeyError, "key not in the quotient filter");
        break;
    default:
        bkpy_raise_rc(rc, "quotient filter table is corrupt (run validate())", NULL);
        break;
    }
    return -1;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static int bkquotient_fp_of(BKQuotient *self, PyObject *key, uint64_t *fp)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    *fp = bk_quotient_fingerprint(&self->qf, h);
    return 0;
}

static PyObject *bkquotient_add(BKQuotient *self, PyObject *key)
{
    uint64_t fp, h;
    int was_new;
    bk_rc rc;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    fp = bk_quotient_fingerprint(&self->qf, h);
    rc = bk_quotient_insert_fp(&self->qf, fp, &was_new);
    if (rc != BK_OK) {
        bkquotient_raise(rc);
        return NULL;
    }
    self->version++;
    return PyBool_FromLong(was_new);
}

static int bkquotient_contains(BKQuotient *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_quotient_contains(&self->qf, h);
}

/* 1 removed, 0 absent, -1 error. */
static int bkquotient_remove_impl(PyObject *self_obj, PyObject *key)
{
    BKQuotient *self = (BKQuotient *)self_obj;
    uint64_t fp;
    bk_rc rc;
    if (bkpy_state_check_writable(&self->st) < 0 || bkquotient_fp_of(self, key, &fp) < 0)
        return -1;
    rc = bk_quotient_remove_fp(&self->qf, fp);
    if (rc == BK_ERR_NOTFOUND)
        return 0;
    if (rc != BK_OK) {
        bkquotient_raise(rc);
        return -1;
    }
    self->version++;
    return 1;
}

static PyObject *bkquotient_count(BKQuotient *self, PyObject *key)
{
    uint64_t fp;
    if (bkquotient_fp_of(self, key, &fp) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(bk_quotient_count_fp(&self->qf, fp));
}

static PyObject *bkquotient_fingerprint(BKQuotient *self, PyObject *key)
{
    uint64_t fp;
    if (bkquotient_fp_of(self, key, &fp) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(fp);
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

/* add_many is all or nothing: it logs what it inserted and takes it back
 * if a later key fails.  Between chunks, a key= function (Python code) lets
 * other threads run; if one of them clears the filter, the logged entries
 * are gone already, and taking them back would remove another thread's
 * equal fingerprints added since (false negatives, R31).  So a chunk, and
 * the rollback, first forget the log when the filter's clear count moved. */
typedef struct {
    bk_qf *qf;
    uint64_t *log; /* fingerprints inserted by this call, for the rollback */
    size_t len, cap;
    uint64_t added;
    bk_rc rc;
    const uint64_t *clears; /* the filter's clear count ... */
    uint64_t seen;          /* ... when the log was last known valid */
} bkquotient_add_ctx;

static void bkquotient_log_check(bkquotient_add_ctx *ctx)
{
    if (*ctx->clears != ctx->seen) {
        ctx->len = 0;
        ctx->seen = *ctx->clears;
    }
}

static void bkquotient_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkquotient_add_ctx *ctx = (bkquotient_add_ctx *)vctx;
    (void)offset;
    if (ctx->rc != BK_OK)
        return;
    bkquotient_log_check(ctx);
    if (ctx->len + n > ctx->cap) {
        size_t cap = ctx->cap ? ctx->cap : 256;
        uint64_t *p;
        while (cap < ctx->len + n)
            cap *= 2;
        p = (uint64_t *)realloc(ctx->log, cap * sizeof *p);
        if (p == NULL) {
            ctx->rc = BK_ERR_NOMEM;
            return;
        }
        ctx->log = p;
        ctx->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t fp = bk_quotient_fingerprint(ctx->qf, hs[i]);
        int was_new;
        bk_rc rc = bk_quotient_insert_fp(ctx->qf, fp, &was_new);
        if (rc != BK_OK) {
            ctx->rc = rc;
            return;
        }
        ctx->log[ctx->len++] = fp;
        ctx->added += (uint64_t)was_new;
    }
}

/* Size callback: a known length that cannot fit fails before any insert;
 * for iterators (n < 0) it stops the iteration after a failed chunk. */
static int bkquotient_add_size(void *vctx, Py_ssize_t n, int from_buffer)
{
    bkquotient_add_ctx *ctx = (bkquotient_add_ctx *)vctx;
    (void)from_buffer;
    if (n >= 0 && (uint64_t)n > ctx->qf->nslots - 1 - bk_quotient_count(ctx->qf))
        ctx->rc = BK_ERR_CAPACITY;
    if (ctx->rc != BK_OK) {
        bkquotient_raise(ctx->rc);
        return -1;
    }
    return 0;
}

static PyObject *bkquotient_add_many(BKQuotient *self, PyObject *keys)
{
    bkquotient_add_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.qf = &self->qf;
    ctx.rc = BK_OK;
    ctx.clears = &self->clears;
    ctx.seen = self->clears;
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkquotient_add_chunk,
                             bkquotient_add_size, &ctx, 0, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    if (rc < 0 || ctx.rc != BK_OK) {
        /* All or nothing: take back what this call inserted (and is still
         * there: see bkquotient_add_ctx). */
        bkquotient_log_check(&ctx);
        while (ctx.len > 0)
            (void)bk_quotient_remove_fp(&self->qf, ctx.log[--ctx.len]);
        free(ctx.log);
        if (!PyErr_Occurred())
            bkquotient_raise(ctx.rc);
        return NULL;
    }
    free(ctx.log);
    if (ctx.len > 0)
        self->version++;
    return PyLong_FromUnsignedLongLong(ctx.added);
}

static void bkquotient_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_quotient_contains_many((const bk_qf *)view, hs, n, out);
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for iteration ---------------------------------------- */

static PyObject *bkquotient_iter(BKQuotient *self)
{
    BKQuotientIter *it = PyObject_GC_New(BKQuotientIter, &BKQuotientIter_Type);
    if (it == NULL)
        return NULL;
    Py_INCREF(self);
    it->owner = self;
    it->version = self->version;
    bk_quotient_cursor_init(&it->cur, &self->qf);
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

static void bkquotient_it_dealloc(BKQuotientIter *it)
{
    PyObject_GC_UnTrack(it);
    Py_XDECREF(it->owner);
    PyObject_GC_Del(it);
}

static int bkquotient_it_traverse(BKQuotientIter *it, visitproc visit, void *arg)
{
    Py_VISIT(it->owner);
    return 0;
}

static PyObject *bkquotient_it_next(BKQuotientIter *it)
{
    uint64_t fp;
    if (it->owner == NULL)
        return NULL;
    if (it->owner->version != it->version) {
        PyErr_SetString(PyExc_RuntimeError, "quotient filter changed during iteration");
        return NULL;
    }
    if (bk_quotient_cursor_next(&it->cur, &fp))
        return PyLong_FromUnsignedLongLong(fp);
    Py_CLEAR(it->owner);
    return NULL;
}

static PyTypeObject BKQuotientIter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.QuotientIterator",
    .tp_basicsize = sizeof(BKQuotientIter),
    .tp_dealloc = (destructor)bkquotient_it_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)bkquotient_it_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)bkquotient_it_next,
};

/* ---- End logic for iteration ------------------------------------------ */

/* ---- Begin logic for merge and resize --------------------------------- */

static int bkquotient_same_hashing(BKQuotient *a, PyObject *other_obj, const char *op)
{
    BKQuotient *b;
    if (bkpy_check_other((PyObject *)a, other_obj, op) < 0)
        return -1;
    b = (BKQuotient *)other_obj;
    if (bkpy_check_same_hashing(&a->st, &b->st, op, "quotient filters") < 0)
        return -1;
    if (a->qf.q + a->qf.r != b->qf.q + b->qf.r) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s quotient filters with different fingerprint widths "
                     "(q + r): %u vs %u bits", op, a->qf.q + a->qf.r, b->qf.q + b->qf.r);
        return -1;
    }
    return 0;
}

static PyObject *bkquotient_rebuild_impl(BKQuotient *self, BKQuotient *other, PyObject *args,
                                   const char *fmt)
{
    unsigned int q, r;
    unsigned long long capacity;
    double p, max_load;
    BKQuotient *dst;
    bk_rc rc;
    if (!PyArg_ParseTuple(args, fmt, &q, &r, &capacity, &p, &max_load))
        return NULL;
    if (bkquotient_check_params(capacity, p, max_load) < 0)
        return NULL;
    if (q + r != self->qf.q + self->qf.r) {
        PyErr_Format(PyExc_ValueError, "q + r must stay %u (the fingerprint width)",
                     self->qf.q + self->qf.r);
        return NULL;
    }
    dst = bkquotient_new_empty(Py_TYPE(self), q, r, capacity, p, max_load, &self->st.hasher,
                               self->st.keyfunc);
    if (dst == NULL)
        return NULL;
    rc = bk_quotient_rebuild(&dst->qf, &self->qf, other ? &other->qf : NULL);
    if (rc != BK_OK) {
        Py_DECREF(dst);
        bkquotient_raise(rc);
        return NULL;
    }
    /* the same keys: the same key domains (both sides' for a merge) */
    dst->st.buf[BK_OFF_KEY_FLAGS] = self->st.buf[BK_OFF_KEY_FLAGS];
    if (other != NULL)
        bkpy_state_merge_keys(&dst->st, &other->st);
    return (PyObject *)dst;
}

/* _rebuild(q, r, capacity, error_rate, max_load): the same fingerprints in a
 * table of another shape with the same q + r (resized()). */
static PyObject *bkquotient_rebuild(BKQuotient *self, PyObject *args)
{
    return bkquotient_rebuild_impl(self, NULL, args, "IIKdd:_rebuild");
}

/* _merge(other, q, r, capacity, error_rate, max_load): both multisets of
 * fingerprints, streamed in sorted order into a new table. */
static PyObject *bkquotient_merge(BKQuotient *self, PyObject *args)
{
    PyObject *other, *rest, *res;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "_merge(other, q, r, capacity, error_rate, max_load)");
        return NULL;
    }
    other = PyTuple_GET_ITEM(args, 0);
    if (bkquotient_same_hashing(self, other, "merge") < 0)
        return NULL;
    rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (rest == NULL)
        return NULL;
    res = bkquotient_rebuild_impl(self, (BKQuotient *)other, rest, "IIKdd:_merge");
    Py_DECREF(rest);
    return res;
}

static PyObject *bkquotient_check_merge(BKQuotient *self, PyObject *other)
{
    if (bkquotient_same_hashing(self, other, "merge") < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ---- End logic for merge and resize ----------------------------------- */

/* Beyond the header's identity: the shape and the slots. */
static int bkquotient_equal(PyObject *a, PyObject *b)
{
    BKQuotient *x = (BKQuotient *)a, *y = (BKQuotient *)b;
    return x->qf.q == y->qf.q && x->qf.r == y->qf.r &&
           memcmp(x->qf.words, y->qf.words, (size_t)x->qf.num_words * 8) == 0;
}

static PyObject *bkquotient_clear(BKQuotient *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(self->qf.words, 0, (size_t)self->qf.num_words * 8);
    bk_store_u64le(self->qf.count_p, 0);
    self->version++;
    self->clears++;
    Py_RETURN_NONE;
}

/* _recount(): count the occupied slots, the stored fingerprints
 * (bloomkit.repair after a killed writer; bloomkit/persist).  O(2^q). */
static PyObject *bkquotient_recount(BKQuotient *self, PyObject *Py_UNUSED(ignored))
{
    uint64_t used = 0;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    for (uint64_t i = 0; i < self->qf.nslots; i++)
        used += (bk_quotient_get(&self->qf, i) & BK_QF_META) != 0;
    bk_store_u64le(self->qf.count_p, used);
    Py_RETURN_NONE;
}

static PyObject *bkquotient_validate(BKQuotient *self, PyObject *Py_UNUSED(ignored))
{
    const char *reason = "invalid";
    bk_rc rc = bk_quotient_check(&self->qf, &reason);
    if (rc != BK_OK) {
        PyErr_Format(bkpy_FormatError, "invalid quotient filter: %s", reason);
        return NULL;
    }
    Py_RETURN_NONE;
}

BKPY_ATTACH(bkquotient, BKQuotient, qf, bk_quotient_attach)

/* What a closed mapped filter keeps: q = r = 1. */
static int bkquotient_empty(PyObject *self_obj)
{
    BKQuotient *self = (BKQuotient *)self_obj;
    if (bkpy_state_alloc(&self->st, BK_QF_HEADER_LEN + 8) < 0)
        return -1;
    bk_quotient_init_state(self->st.buf, 1, 1, 1, 0.5, 0.9, 0, 0, 0);
    self->version++;
    self->clears++; /* an add_many's log holds fingerprints of the old shape */
    return bkquotient_attach(self_obj);
}

static Py_ssize_t bkquotient_len(BKQuotient *self)
{
    uint64_t c = bk_quotient_count(&self->qf);
    return bkpy_len_of(c);
}

/* ---- getters ---- */

BKPY_GETTER(bkquotient, BKQuotient, q, PyLong_FromUnsignedLong(self->qf.q))
BKPY_GETTER(bkquotient, BKQuotient, r, PyLong_FromUnsignedLong(self->qf.r))
BKPY_GETTER(bkquotient, BKQuotient, fp_bits, PyLong_FromUnsignedLong(self->qf.q + self->qf.r))
BKPY_GETTER(bkquotient, BKQuotient, num_slots, PyLong_FromUnsignedLongLong(self->qf.nslots))
BKPY_GETTER(bkquotient, BKQuotient, nbytes, PyLong_FromUnsignedLongLong(self->qf.num_words * 8))
BKPY_GETTER(bkquotient, BKQuotient, load_factor,
            PyFloat_FromDouble((double)bk_quotient_count(&self->qf) / (double)self->qf.nslots))

static PyObject *bkquotient_estimate_error_rate(BKQuotient *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_quotient_estimate_error_rate(&self->qf));
}

static PyGetSetDef bkquotient_getset[] = {
    {"q", (getter)bkquotient_get_q, NULL, "Quotient bits: the table has 2**q slots.", NULL},
    {"r", (getter)bkquotient_get_r, NULL, "Remainder bits stored per slot.", NULL},
    {"fingerprint_bits", (getter)bkquotient_get_fp_bits, NULL, "q + r: the top bits of the key hash kept per key.", NULL},
    {"num_slots", (getter)bkquotient_get_num_slots, NULL, "2**q.", NULL},
    BKPY_DESIGN_GETSET(BK_QF_P_CAPACITY, BK_QF_P_ERROR_RATE),
    BKPY_PARAM(f64, "max_load", BK_QF_P_MAX_LOAD, "The load factor the table was sized for."),
    {"nbytes", (getter)bkquotient_get_nbytes, NULL, "Bytes of the slot table (payload).", NULL},
    {"load_factor", (getter)bkquotient_get_load_factor, NULL, "Stored fingerprints / 2**q.", NULL},
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkquotient_methods[] = {
    {"add", (PyCFunction)bkquotient_add, METH_O,
     "add($self, key, /)\n--\n\nStore the key's fingerprint (a multiset: duplicates are kept); "
     "return True if no equal fingerprint was stored.  CapacityError when full."},
    {"add_many", (PyCFunction)bkquotient_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key of an iterable, list, tuple or 1-d numpy "
     "array, all or nothing; return how many fingerprints were new."},
    BKPY_CONTAINS_MANY_METHOD,
    BKPY_REMOVE_METHODS("Remove one copy of the key's fingerprint; KeyError (and no change) "
                        "if absent.",
                        "Remove one copy if present; return whether one was removed."),
    {"count", (PyCFunction)bkquotient_count, METH_O,
     "count($self, key, /)\n--\n\nHow many copies of the key's fingerprint are stored."},
    {"validate", (PyCFunction)bkquotient_validate, METH_NOARGS,
     "validate($self, /)\n--\n\nCheck every metadata invariant; FormatError naming the first "
     "broken one."},
    {"estimate_error_rate", (PyCFunction)bkquotient_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\n1 - (1 - 2**-(q + r)) ** len(self)."},
    {"_merge", (PyCFunction)bkquotient_merge, METH_VARARGS, NULL},
    {"_check_merge", (PyCFunction)bkquotient_check_merge, METH_O, NULL},
    {"_rebuild", (PyCFunction)bkquotient_rebuild, METH_VARARGS, NULL},
    {"clear", (PyCFunction)bkquotient_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemove everything."},
    {"_recount", (PyCFunction)bkquotient_recount, METH_NOARGS, NULL},
    {"_fingerprint", (PyCFunction)bkquotient_fingerprint, METH_O,
     "_fingerprint($self, key, /)\n--\n\nThe key's (q + r)-bit fingerprint."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkquotient);

static PyTypeObject BKQuotient_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.QuotientBase",
    BKPY_OBJ_SLOTS(bkquotient, BKQuotient),
    .tp_as_sequence = &bkquotient_as_sequence,
    .tp_doc = "QuotientBase(q, r, capacity, error_rate, max_load, *, seed=0, secret=None, "
              "key=None)\n--\n\nC core of QuotientFilter.",
    .tp_iter = (getiterfunc)bkquotient_iter,
};

static const bkpy_desc bkquotient_desc = {
    .type = &BKQuotient_Type,
    .noun = "QuotientFilter",
    .kinds = 1u << BK_KIND_QUOTIENT,
    .attach = bkquotient_attach,
    .empty = bkquotient_empty,
    .equal = bkquotient_equal,
    .probe = bkquotient_probe,
    .view_off = offsetof(BKQuotient, qf),
    .query = BKPY_QUERY_GIL, /* a writer holding the GIL must not shift runs under us */
    .remove = bkquotient_remove_impl,
};

int bkquotient_init(PyObject *m)
{
    if (PyType_Ready(&BKQuotientIter_Type) < 0)
        return -1;
    return bkpy_register_type(m, "QuotientBase", &bkquotient_desc);
}
