/*
 * py_cuckoo.c -- CPython type for the cuckoo filter.
 *
 * bloomkit._core.CuckooBase works directly on its state buffer (owned, or
 * borrowed from an mmap); the facade bloomkit.CuckooFilter (cuckoo.py)
 * subclasses it with __slots__ = () and does the sizing, so `x in f` goes
 * straight to sq_contains and add/remove/discard are METH_O.
 *
 * Every operation holds the GIL: a relocation chain passes through states
 * in which a fingerprint is briefly out of the table, so neither writers
 * nor readers may run concurrently with a writer (see bk_cuckoo.c).
 */
#include "py_common.h"

#include <math.h>

#include "bk_cuckoo.h"
#include "bk_endian.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_cuckoo ck;
    PyObject *weakreflist;
} BKCuckoo;

static PyTypeObject BKCuckoo_Type;

static const char bkcuckoo_full_msg[] =
    "cuckoo filter is full (500 relocations and the 8-entry stash could not place the key, "
    "or the key already has 2*bucket_size copies); the filter is unchanged";

/* Payload bytes (the table and its guard), wherever header_len puts it. */
#define BKCUCKOO_PAYLOAD_LEN(self) ((self)->st.len - (uint64_t)((self)->ck.table - (self)->st.buf))

/* CuckooBase(num_buckets, bucket_size, fingerprint_bits, capacity,
 *            error_rate, *, seed=0, secret=None, key=None) */
static PyObject *bkcuckoo_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"num_buckets", "bucket_size", "fingerprint_bits", "capacity",
                             "error_rate", "seed", "secret", "key", NULL};
    unsigned long long nb;
    unsigned int b, f;
    uint64_t payload_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(BK_KIND_CUCKOO);
    const char *reason = NULL;
    bk_rc shape;
    BKCuckoo *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KIIKd|$OOO:CuckooBase", kwlist, &nb, &b,
                                     &f, &a.capacity, &a.error_rate, &a.seed_obj, &a.secret,
                                     &a.key))
        return NULL;
    shape = bk_cuckoo_shape(nb, b, f, &payload_len, &reason);
    self = bkpy_obj_new_ctor(type, &a, shape, reason, BK_CUCKOO_HEADER_LEN + payload_len);
    if (self == NULL)
        return NULL;
    bk_cuckoo_init_state(self->st.buf, nb, b, f, a.capacity, a.error_rate, a.seed, a.keyed,
                         bk_hasher_key_check(&self->st.hasher));
    bk_cuckoo_attach(&self->ck, self->st.buf);
    return (PyObject *)self;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static PyObject *bkcuckoo_add(BKCuckoo *self, PyObject *key)
{
    uint64_t h;
    int was_new;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    if (BK_UNLIKELY(bk_cuckoo_add(&self->ck, h, &was_new) != BK_OK)) {
        PyErr_SetString(bkpy_CapacityError, bkcuckoo_full_msg);
        return NULL;
    }
    if (was_new)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static int bkcuckoo_contains(BKCuckoo *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_cuckoo_contains(&self->ck, h);
}

/* 1 removed, 0 absent, -1 error. */
static int bkcuckoo_remove_impl(PyObject *self_obj, PyObject *key)
{
    BKCuckoo *self = (BKCuckoo *)self_obj;
    uint64_t h;
    if (BK_UNLIKELY(!self->st.writable) && bkpy_state_check_writable(&self->st) < 0)
        return -1;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_cuckoo_remove(&self->ck, h) == BK_OK;
}

static PyObject *bkcuckoo_count(BKCuckoo *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLong(bk_cuckoo_count(&self->ck, h));
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

typedef struct {
    bk_cuckoo *ck;
    uint64_t added_new;
    size_t inserted;
    int failed;
} bkcuckoo_add_ctx;

static void bkcuckoo_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkcuckoo_add_ctx *ctx = (bkcuckoo_add_ctx *)vctx;
    size_t done = 0;
    (void)offset;
    if (ctx->failed)
        return; /* the rest of the input is hashed but not inserted */
    if (bk_cuckoo_add_many(ctx->ck, hs, n, &done, &ctx->added_new) != BK_OK)
        ctx->failed = 1;
    ctx->inserted += done;
}

static PyObject *bkcuckoo_add_many(BKCuckoo *self, PyObject *keys)
{
    bkcuckoo_add_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.ck = &self->ck;
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkcuckoo_add_chunk, NULL,
                             &ctx, 0, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    if (rc < 0)
        return NULL;
    if (ctx.failed) {
        PyErr_Format(bkpy_CapacityError,
                     "cuckoo filter is full: the first %zu keys were inserted, key #%zu could "
                     "not be placed and left no trace, the rest were not inserted",
                     ctx.inserted, ctx.inserted);
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(ctx.added_new);
}

static void bkcuckoo_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_cuckoo_contains_many((const bk_cuckoo *)view, hs, n, out);
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for union -------------------------------------------- */

static int bkcuckoo_check_compatible(PyObject *a_obj, PyObject *other_obj, const char *op)
{
    BKCuckoo *a = (BKCuckoo *)a_obj, *b;
    b = (BKCuckoo *)other_obj;
    if (a->ck.num_buckets != b->ck.num_buckets || a->ck.b != b->ck.b || a->ck.f != b->ck.f) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s cuckoo filters of different sizes: num_buckets %llu vs %llu, "
                     "bucket_size %u vs %u, fingerprint_bits %u vs %u (a fingerprint's two "
                     "buckets depend on all three)",
                     op, (unsigned long long)a->ck.num_buckets,
                     (unsigned long long)b->ck.num_buckets, a->ck.b, b->ck.b, a->ck.f, b->ck.f);
        return -1;
    }
    return bkpy_check_same_hashing(&a->st, &b->st, op, "cuckoo filters");
}

/* In-place multiset union: every fingerprint of `other` is inserted at its
 * own bucket pair.  All-or-nothing: on CapacityError the state is restored
 * from a backup copy.  (Cuckoo filters have no intersection: is_union is
 * always 1.) */
static PyObject *bkcuckoo_inplace_union(PyObject *self_obj, PyObject *other, int is_union)
{
    BKCuckoo *self = (BKCuckoo *)self_obj, *src;
    uint8_t *backup;
    (void)is_union;
    if (bkcuckoo_check_compatible(self_obj, other, "union") < 0 ||
        bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    src = (BKCuckoo *)other;
    if (src == self) { /* merging with itself: merge from a snapshot */
        PyObject *snap = bkpy_obj_copy_of(self_obj);
        PyObject *r;
        if (snap == NULL)
            return NULL;
        r = bkcuckoo_inplace_union(self_obj, snap, 1);
        Py_DECREF(snap);
        return r;
    }
    backup = (uint8_t *)PyMem_Malloc((size_t)self->st.len);
    if (backup == NULL) {
        bkpy_raise_nomem(self->st.len, "the union's backup copy of the filter (it is restored "
                         "if the union does not fit)", "free memory");
        return NULL;
    }
    memcpy(backup, self->st.buf, (size_t)self->st.len);
    if (bk_cuckoo_merge(&self->ck, &src->ck) != BK_OK) {
        memcpy(self->st.buf, backup, (size_t)self->st.len);
        PyMem_Free(backup);
        PyErr_SetString(bkpy_CapacityError,
                        "union does not fit: the merged fingerprints exceed this filter's "
                        "capacity; the filter is unchanged");
        return NULL;
    }
    PyMem_Free(backup);
    Py_INCREF(self);
    return (PyObject *)self;
}

/* Same state beyond the header's identity: all parameters (count and stash
 * included) and the table. */
static int bkcuckoo_equal(PyObject *a, PyObject *b)
{
    BKCuckoo *x = (BKCuckoo *)a, *y = (BKCuckoo *)b;
    return memcmp(x->ck.params, y->ck.params, BK_CUCKOO_PARAMS_LEN) == 0 &&
           BKCUCKOO_PAYLOAD_LEN(x) == BKCUCKOO_PAYLOAD_LEN(y) &&
           memcmp(x->ck.table, y->ck.table, (size_t)BKCUCKOO_PAYLOAD_LEN(x)) == 0;
}

/* ---- End logic for union ---------------------------------------------- */

static PyObject *bkcuckoo_clear(BKCuckoo *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bk_cuckoo_clear(&self->ck);
    Py_RETURN_NONE;
}

/* _recount(): count the stored fingerprints (bloomkit.repair after a
 * killed writer; bloomkit/persist). */
static PyObject *bkcuckoo_recount(BKCuckoo *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bk_cuckoo_recount(&self->ck);
    Py_RETURN_NONE;
}

BKPY_ATTACH(bkcuckoo, BKCuckoo, ck, bk_cuckoo_attach)

/* What a closed mapped filter keeps: one bucket of 4 8-bit slots. */
static int bkcuckoo_empty(PyObject *self_obj)
{
    BKCuckoo *self = (BKCuckoo *)self_obj;
    uint64_t payload_len = 0;
    const char *reason = NULL;
    (void)bk_cuckoo_shape(1, 4, 8, &payload_len, &reason);
    if (bkpy_state_alloc(&self->st, BK_CUCKOO_HEADER_LEN + payload_len) < 0)
        return -1;
    bk_cuckoo_init_state(self->st.buf, 1, 4, 8, 1, 0.5, 0, 0, 0);
    return bkcuckoo_attach(self_obj);
}

/* _locate(key) -> (fingerprint, i1, i2): where a key may live (tests). */
static PyObject *bkcuckoo_locate(BKCuckoo *self, PyObject *key)
{
    uint64_t h, i1;
    uint32_t fp;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    i1 = bk_cuckoo_index(&self->ck, h);
    fp = bk_cuckoo_fingerprint(&self->ck, h);
    return Py_BuildValue("(kKK)", (unsigned long)fp, (unsigned long long)i1,
                         (unsigned long long)bk_cuckoo_alt(&self->ck, i1, fp));
}

static PyObject *bkcuckoo_estimate_count(BKCuckoo *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble((double)bk_cuckoo_get_count(&self->ck));
}

/* The table's fill and the rate it gives (bk_cuckoo.c). */
static double bkcuckoo_table_load(const BKCuckoo *self)
{
    return bk_cuckoo_table_load(&self->ck);
}

static PyObject *bkcuckoo_estimate_error_rate(BKCuckoo *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_cuckoo_estimate_error_rate(&self->ck));
}

static Py_ssize_t bkcuckoo_len(BKCuckoo *self)
{
    uint64_t c = bk_cuckoo_get_count(&self->ck);
    return bkpy_len_of(c);
}

/* ---- getters ---- */

BKPY_GETTER(bkcuckoo, BKCuckoo, num_buckets, PyLong_FromUnsignedLongLong(self->ck.num_buckets))
BKPY_GETTER(bkcuckoo, BKCuckoo, bucket_size, PyLong_FromUnsignedLong(self->ck.b))
BKPY_GETTER(bkcuckoo, BKCuckoo, fingerprint_bits, PyLong_FromUnsignedLong(self->ck.f))
BKPY_GETTER(bkcuckoo, BKCuckoo, max_kicks, PyLong_FromUnsignedLong(self->ck.max_kicks))
BKPY_GETTER(bkcuckoo, BKCuckoo, stash_size, PyLong_FromUnsignedLong(bk_cuckoo_stash_count(&self->ck)))
BKPY_GETTER(bkcuckoo, BKCuckoo, load_factor, PyFloat_FromDouble(bkcuckoo_table_load(self)))

static PyGetSetDef bkcuckoo_getset[] = {
    {"num_buckets", (getter)bkcuckoo_get_num_buckets, NULL, "Buckets in the table.", NULL},
    {"bucket_size", (getter)bkcuckoo_get_bucket_size, NULL, "b, fingerprint slots per bucket.", NULL},
    {"fingerprint_bits", (getter)bkcuckoo_get_fingerprint_bits, NULL, "f, bits per fingerprint.", NULL},
    {"max_kicks", (getter)bkcuckoo_get_max_kicks, NULL, "Relocations tried per insert.", NULL},
    {"stash_size", (getter)bkcuckoo_get_stash_size, NULL, "Fingerprints held in the stash (0..8).", NULL},
    BKPY_DESIGN_GETSET(BK_CUCKOO_P_CAPACITY, BK_CUCKOO_P_ERROR_RATE),
    BKPY_PAYLOAD_NBYTES("Bytes of the table (payload)."),
    {"load_factor", (getter)bkcuckoo_get_load_factor, NULL,
     "Fingerprints in the table's slots / slots, in [0, 1] (stash entries not counted).", NULL},
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkcuckoo_methods[] = {
    {"add", (PyCFunction)bkcuckoo_add, METH_O,
     "add($self, key, /)\n--\n\nStore one copy of the key; return True if no copy was found "
     "before.  Raises CapacityError (filter unchanged) when full."},
    BKPY_REMOVE_METHODS("Remove one copy of the key; KeyError if none is stored.  Never "
                        "remove a key that was not added: it may delete another key's "
                        "fingerprint.",
                        "Like remove() but returns False instead of raising."),
    {"count", (PyCFunction)bkcuckoo_count, METH_O,
     "count($self, key, /)\n--\n\nCopies of the key's fingerprint stored (at least the number of "
     "adds minus removes; at most 2*bucket_size + stash)."},
    {"add_many", (PyCFunction)bkcuckoo_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key; return how many were absent before.  On "
     "CapacityError the keys before the failing one stay inserted."},
    BKPY_UPDATE_METHOD,
    BKPY_CONTAINS_MANY_METHOD,
    {"union", (PyCFunction)(void (*)(void))bkpy_obj_union, METH_FASTCALL,
     "union($self, *others)\n--\n\nA new filter holding every fingerprint of all (multiset "
     "sum: counts add).  CapacityError when they do not fit."},
    {"clear", (PyCFunction)bkcuckoo_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemove every key."},
    {"estimate_count", (PyCFunction)bkcuckoo_estimate_count, METH_NOARGS,
     "estimate_count($self, /)\n--\n\nFingerprints stored (adds minus removes), as a float."},
    {"estimate_error_rate", (PyCFunction)bkcuckoo_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\nFalse-positive rate at the current load: "
     "1 - (1 - 1/(2^f - 1))^(2 b load)."},
    {"_recount", (PyCFunction)bkcuckoo_recount, METH_NOARGS, NULL},
    {"_locate", (PyCFunction)bkcuckoo_locate, METH_O,
     "_locate($self, key, /)\n--\n\n(fingerprint, bucket1, bucket2) of a key."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkcuckoo);

static PyTypeObject BKCuckoo_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.CuckooBase",
    BKPY_OBJ_SLOTS(bkcuckoo, BKCuckoo),
    .tp_as_number = &bkpy_obj_as_number_union,
    .tp_as_sequence = &bkcuckoo_as_sequence,
    .tp_doc = "CuckooBase(num_buckets, bucket_size, fingerprint_bits, capacity, error_rate, *, "
              "seed=0, secret=None, key=None)\n--\n\nC core of CuckooFilter.",
};

static const bkpy_desc bkcuckoo_desc = {
    .type = &BKCuckoo_Type,
    .noun = "cuckoo filter",
    .kinds = 1u << BK_KIND_CUCKOO,
    .attach = bkcuckoo_attach,
    .empty = bkcuckoo_empty,
    .equal = bkcuckoo_equal,
    .compatible = bkcuckoo_check_compatible,
    .inplace = bkcuckoo_inplace_union,
    .probe = bkcuckoo_probe,
    .view_off = offsetof(BKCuckoo, ck),
    .query = BKPY_QUERY_GIL, /* a relocation moves fingerprints: see the top */
    .add_many = (PyObject *(*)(PyObject *, PyObject *))bkcuckoo_add_many,
    .remove = bkcuckoo_remove_impl,
};

int bkcuckoo_init(PyObject *m)
{
    return bkpy_register_type(m, "CuckooBase", &bkcuckoo_desc);
}
