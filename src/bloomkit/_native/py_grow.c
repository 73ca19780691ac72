/*
 * py_grow.c -- CPython type for the growable filter
 * (bloomkit._core.GrowableBase; facade bloomkit/growable.py).
 *
 * The filter is ONE state buffer (kind 13: header, parameters, two tables
 * of 64-byte buckets; bk_grow.c).  A doubling goes through the core's
 * resize callback, which allocates a larger owned state, copies the old one
 * into it and points the view at it; the tables are then split in place.
 * Growth reallocates, so a state borrowed from an mmap is read-only
 * (_from_buffer(writable=True) raises TypeError, as for the scalable
 * chain), and closing a mapped filter keeps an owned copy.
 *
 * Every operation holds the GIL: an add may reallocate the state, so no
 * query may run beside it.  Union is not offered: an entry keeps only the
 * bits of one of its two values, so a key of another filter cannot be
 * placed by choice; only identical shapes could merge bucket by bucket,
 * and an overfull bucket would have nowhere to go.
 */
#include "py_common.h"

#include <math.h>

#include "bk_endian.h"
#include "bk_grow.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_grow g;
    PyObject *weakreflist;
} BKGrow;

static PyTypeObject BKGrow_Type;

#define BKGROW_PARAMS(self) ((self)->st.buf + BK_OFF_PARAMS)

static bk_rc bkgrow_resize(bk_grow *g, uint64_t len, void *ctx);

static int bkgrow_attach(PyObject *self_obj)
{
    BKGrow *self = (BKGrow *)self_obj;
    bk_grow_attach_state(&self->g, self->st.buf);
    self->g.resize = bkgrow_resize;
    self->g.ctx = self;
    return 0;
}

/* The core's resize: a fresh owned state of header + len bytes holding the
 * old state's bytes, its payload_len updated.  The GIL is held (every path
 * that adds holds it), so MemoryError can be raised here. */
static bk_rc bkgrow_resize(bk_grow *g, uint64_t len, void *ctx)
{
    BKGrow *self = (BKGrow *)ctx;
    bkpy_state fresh;
    uint64_t total = BK_GROW_HEADER_LEN + len;
    (void)g;
    if (!self->st.writable || self->st.alloc == NULL)
        return BK_ERR_CAPACITY; /* a borrowed state cannot grow */
    memset(&fresh, 0, sizeof fresh);
    if (bkpy_state_alloc(&fresh, total) < 0)
        return BK_ERR_NOMEM;
    memcpy(fresh.buf, self->st.buf, (size_t)(self->st.len < total ? self->st.len : total));
    bk_store_u64le(fresh.buf + BK_OFF_PAYLOAD_LEN, len);
    bkpy_state_free(self->st.alloc);
    self->st.alloc = fresh.alloc;
    self->st.buf = fresh.buf;
    self->st.len = fresh.len;
    self->g.params = self->st.buf + BK_OFF_PARAMS;
    self->g.buckets = self->st.buf + BK_GROW_HEADER_LEN;
    return BK_OK;
}

/* GrowableBase(capacity, error_rate, max_load, *, seed=0, secret=None, key=None) */
static PyObject *bkgrow_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"capacity", "error_rate", "max_load", "seed", "secret", "key", NULL};
    double max_load;
    uint32_t q0 = 0, q1 = 0;
    uint64_t payload_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(BK_KIND_GROWABLE);
    const char *reason = NULL;
    bk_rc shape;
    BKGrow *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Kdd|$OOO:GrowableBase", kwlist, &a.capacity,
                                     &a.error_rate, &max_load, &a.seed_obj, &a.secret, &a.key))
        return NULL;
    shape = bk_grow_shape(a.capacity, max_load, &q0, &q1, &payload_len, &reason);
    self = bkpy_obj_new_ctor(type, &a, shape, reason, BK_GROW_HEADER_LEN + payload_len);
    if (self == NULL)
        return NULL;
    bk_grow_init_state(self->st.buf, q0, q1, max_load, a.capacity, a.error_rate, a.seed, a.keyed,
                       bk_hasher_key_check(&self->st.hasher));
    (void)bkgrow_attach((PyObject *)self);
    return (PyObject *)self;
}

static PyObject *bkgrow_raise(bk_rc rc)
{
    if (rc == BK_ERR_NOMEM) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else {
        PyErr_SetString(bkpy_CapacityError,
                        "growable filter cannot grow further: it has doubled 14 times past its "
                        "initial size (every fingerprint would lose its last bit); the key was "
                        "not added, the others are all still present.  Make one with a larger "
                        "initial capacity");
    }
    return NULL;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static PyObject *bkgrow_add(BKGrow *self, PyObject *key)
{
    uint64_t h;
    int added;
    bk_rc rc;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    rc = bk_grow_add(&self->g, h, &added);
    if (BK_UNLIKELY(rc != BK_OK))
        return bkgrow_raise(rc);
    if (added)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static int bkgrow_contains(BKGrow *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_grow_contains(&self->g, h);
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

typedef struct {
    bk_grow *g;
    uint64_t added;
    bk_rc rc;
} bkgrow_add_ctx;

static void bkgrow_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkgrow_add_ctx *ctx = (bkgrow_add_ctx *)vctx;
    (void)offset;
    if (ctx->rc != BK_OK)
        return; /* the rest of the input is hashed but not added */
    ctx->rc = bk_grow_add_many(ctx->g, hs, n, &ctx->added);
}

static PyObject *bkgrow_add_many(BKGrow *self, PyObject *keys)
{
    bkgrow_add_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    ctx.g = &self->g;
    ctx.added = 0;
    ctx.rc = BK_OK;
    /* nogil = 0: a doubling reallocates the state (and may raise). */
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkgrow_add_chunk, NULL,
                             &ctx, 0, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    if (rc < 0)
        return NULL;
    if (ctx.rc != BK_OK)
        return bkgrow_raise(ctx.rc);
    return PyLong_FromUnsignedLongLong(ctx.added);
}

static void bkgrow_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_grow_contains_many((const bk_grow *)view, hs, n, out);
}

/* ---- End logic for batches -------------------------------------------- */

/* Same parameters (count and stash included) and the same tables. */
static int bkgrow_equal(PyObject *a, PyObject *b)
{
    BKGrow *x = (BKGrow *)a, *y = (BKGrow *)b;
    return x->st.len == y->st.len &&
           memcmp(BKGROW_PARAMS(x), BKGROW_PARAMS(y), BK_GROW_PARAMS_LEN) == 0 &&
           memcmp(x->st.buf + BK_GROW_HEADER_LEN, y->st.buf + BK_GROW_HEADER_LEN,
                  (size_t)(x->st.len - BK_GROW_HEADER_LEN)) == 0;
}

static PyObject *bkgrow_clear(BKGrow *self, PyObject *Py_UNUSED(ignored))
{
    uint8_t *p = BKGROW_PARAMS(self);
    uint32_t q0 = 0, q1 = 0;
    uint64_t payload_len = 0;
    const char *reason = NULL;
    bkpy_state fresh;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (bk_grow_shape(bk_load_u64le(p + BK_GROW_P_CAPACITY), self->g.max_load, &q0, &q1,
                      &payload_len, &reason) != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason);
        return NULL;
    }
    memset(&fresh, 0, sizeof fresh);
    if (bkpy_state_alloc(&fresh, BK_GROW_HEADER_LEN + payload_len) < 0)
        return NULL;
    memcpy(fresh.buf, self->st.buf, BK_GROW_HEADER_LEN);
    bk_store_u64le(fresh.buf + BK_OFF_PAYLOAD_LEN, payload_len);
    bk_grow_init_params(fresh.buf + BK_OFF_PARAMS, q0, q1, self->g.max_load);
    bkpy_state_free(self->st.alloc);
    self->st.alloc = fresh.alloc;
    self->st.buf = fresh.buf;
    self->st.len = fresh.len;
    (void)bkgrow_attach((PyObject *)self);
    Py_RETURN_NONE;
}

/* A mapped state cannot follow a doubling. */
static int bkgrow_check_load(const bkpy_load_args *a)
{
    if (!a->copy && (a->writable || a->shared)) {
        PyErr_SetString(PyExc_TypeError,
                        "a GrowableFilter cannot be mapped for writing: a doubling reallocates "
                        "its state, which a mapping cannot follow; map it read-only, or load it "
                        "(bloomkit.load), add, and save it");
        return -1;
    }
    return 0;
}

/* _detach: release a borrowed buffer, keeping an owned copy (the view is
 * the same bytes at a new address). */
static int bkgrow_detach(PyObject *self_obj)
{
    BKGrow *self = (BKGrow *)self_obj;
    bkpy_state fresh;
    memset(&fresh, 0, sizeof fresh);
    if (bkpy_state_alloc(&fresh, self->st.len) < 0)
        return -1;
    memcpy(fresh.buf, self->st.buf, (size_t)self->st.len);
    PyBuffer_Release(&self->st.view);
    self->st.alloc = fresh.alloc;
    self->st.buf = fresh.buf;
    self->st.len = fresh.len;
    self->st.writable = 1;
    return bkgrow_attach(self_obj);
}

static PyObject *bkgrow_estimate_error_rate(BKGrow *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_grow_estimate_fpr(&self->g));
}

static PyObject *bkgrow_estimate_count(BKGrow *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble((double)self->g.count);
}

/* _max_load(error_rate, doublings): bk_grow_max_load (0.0: too small). */
static PyObject *bkgrow_max_load_for(PyObject *Py_UNUSED(cls), PyObject *args)
{
    double p, d;
    if (!PyArg_ParseTuple(args, "dd:_max_load", &p, &d))
        return NULL;
    return PyFloat_FromDouble(bk_grow_max_load(p, d));
}

static Py_ssize_t bkgrow_len(BKGrow *self)
{
    return bkpy_len_of(self->g.count);
}

BKPY_GETTER(bkgrow, BKGrow, num_buckets, PyLong_FromUnsignedLongLong(bk_grow_nbuckets(&self->g)))
BKPY_GETTER(bkgrow, BKGrow, max_load, PyFloat_FromDouble(self->g.max_load))
BKPY_GETTER(bkgrow, BKGrow, stash_size, PyLong_FromUnsignedLong(self->g.nstash))
BKPY_GETTER(bkgrow, BKGrow, doublings,
            PyLong_FromUnsignedLong(self->g.q[0] + self->g.q[1] - 2 * self->g.floor))
BKPY_GETTER(bkgrow, BKGrow, load_factor,
            PyFloat_FromDouble((double)(self->g.count - self->g.nstash) /
                               ((double)BK_GROW_SLOTS * (double)bk_grow_nbuckets(&self->g))))

static PyGetSetDef bkgrow_getset[] = {
    {"num_buckets", (getter)bkgrow_get_num_buckets, NULL,
     "64-byte buckets of both tables (grows as keys arrive).", NULL},
    {"max_load", (getter)bkgrow_get_max_load, NULL,
     "A table doubles when the filter holds more than max_load * 32 * num_buckets keys.",
     NULL},
    {"stash_size", (getter)bkgrow_get_stash_size, NULL, "Keys held in the stash (0..16).", NULL},
    {"doublings", (getter)bkgrow_get_doublings, NULL,
     "Table doublings since creation (the filter has grown about 2**(doublings/2) times).",
     NULL},
    {"load_factor", (getter)bkgrow_get_load_factor, NULL,
     "Entries in the tables / slots, in [0, 1].", NULL},
    BKPY_DESIGN_GETSET(BK_GROW_P_CAPACITY, BK_GROW_P_ERROR_RATE),
    BKPY_PAYLOAD_NBYTES("Bytes of the two tables (payload)."),
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkgrow_methods[] = {
    {"add", (PyCFunction)bkgrow_add, METH_O,
     "add($self, key, /)\n--\n\nAdd the key; True if it was not (apparently) present.  The "
     "filter grows as needed."},
    {"add_many", (PyCFunction)bkgrow_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key; return how many were absent before."},
    BKPY_UPDATE_METHOD,
    BKPY_CONTAINS_MANY_METHOD,
    {"clear", (PyCFunction)bkgrow_clear, METH_NOARGS,
     "clear($self, /)\n--\n\nRemove every key and shrink back to the initial size."},
    {"estimate_count", (PyCFunction)bkgrow_estimate_count, METH_NOARGS,
     "estimate_count($self, /)\n--\n\nKeys stored, as a float."},
    {"estimate_error_rate", (PyCFunction)bkgrow_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\nThe false-positive rate of the current contents, "
     "summed exactly over the stored fingerprints."},
    {"_max_load", (PyCFunction)bkgrow_max_load_for, METH_VARARGS | METH_STATIC,
     "_max_load(error_rate, doublings, /)\n--\n\nThe load that keeps error_rate up to that "
     "many doublings of the filter; 0.0 when the rate is too small for 16-bit slots."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkgrow);

static PyTypeObject BKGrow_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.GrowableBase",
    BKPY_OBJ_SLOTS(bkgrow, BKGrow),
    .tp_as_sequence = &bkgrow_as_sequence,
    .tp_doc = "GrowableBase(capacity, error_rate, max_load, *, seed=0, secret=None, key=None)"
              "\n--\n\nC core of GrowableFilter.",
};

/* No `empty`: a closed mapped filter keeps its own copy (bkgrow_detach). */
static const bkpy_desc bkgrow_desc = {
    .type = &BKGrow_Type,
    .noun = "GrowableFilter",
    .kinds = 1u << BK_KIND_GROWABLE,
    .attach = bkgrow_attach,
    .equal = bkgrow_equal,
    .check_load = bkgrow_check_load,
    .detach = bkgrow_detach,
    .probe = bkgrow_probe,
    .view_off = offsetof(BKGrow, g),
    .query = BKPY_QUERY_GIL, /* an add may reallocate the state: see the top */
    .add_many = (PyObject *(*)(PyObject *, PyObject *))bkgrow_add_many,
};

int bkgrow_init(PyObject *m)
{
    return bkpy_register_type(m, "GrowableBase", &bkgrow_desc);
}
