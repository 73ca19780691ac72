/*
 * py_fuse.c -- CPython type for the binary fuse filter (static set).
 *
 * bloomkit._core.BinaryFuseBase is built once from all its keys: the keys
 * are hashed (the batch key paths of py_common.c, GIL released over
 * buffers) into one array of 64-bit hashes, the core peels them without
 * the GIL (bk_fuse.c), the state buffer is allocated once the shape is
 * known and the fingerprints are written straight into it.  Afterwards the
 * object is read-only: only lookups, serialization and the common object
 * contract (py_common.h) remain.  The facade bloomkit.BinaryFuseFilter
 * (fuse.py) picks the fingerprint width and refuses add().
 *
 * Build memory: 8 bytes a key of hashes and the core's 13 bytes a slot
 * while it peels; the hashes are freed before the state is allocated.
 */
#include "py_common.h"

#include <stdlib.h>

#include "bk_endian.h"
#include "bk_fuse.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_fuse fu;
    PyObject *weakreflist;
} BKFuse;

static PyTypeObject BKFuse_Type;

/* ---- Begin logic for construction ------------------------------------- */

/* The key hashes, collected chunk by chunk (plain malloc: the chunks of a
 * buffer input run without the GIL). */
typedef struct {
    uint64_t *hs;
    size_t n, cap;
    int nomem;
    unsigned seen;  /* the key domains hashed (BKPY_SEEN_*) */
} bkfuse_collect;

static int bkfuse_reserve(bkfuse_collect *c, size_t want)
{
    uint64_t *p;
    if (want <= c->cap)
        return 0;
    if (want > SIZE_MAX / sizeof(uint64_t))
        return -1;
    p = (uint64_t *)realloc(c->hs, want * sizeof(uint64_t));
    if (p == NULL)
        return -1;
    c->hs = p;
    c->cap = want;
    return 0;
}

static int bkfuse_collect_size(void *vctx, Py_ssize_t n, int from_buffer)
{
    bkfuse_collect *c = (bkfuse_collect *)vctx;
    (void)from_buffer;
    if (n > 0 && bkfuse_reserve(c, (size_t)n) < 0) {
        bkpy_raise_nomem((uint64_t)n * 8, "the key hashes of a binary fuse build (8 bytes a key)",
                         "build from fewer keys or free memory");
        return -1;
    }
    return 0;
}

static void bkfuse_collect_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkfuse_collect *c = (bkfuse_collect *)vctx;
    (void)offset;
    if (c->nomem)
        return;
    if (c->n + n > c->cap) {
        size_t want = c->cap < 1024 ? 1024 : c->cap + c->cap / 2;
        if (want < c->n + n)
            want = c->n + n;
        if (bkfuse_reserve(c, want) < 0) {
            c->nomem = 1;
            return;
        }
    }
    memcpy(c->hs + c->n, hs, n * sizeof *hs);
    c->n += n;
}

/* Peel hs[0..n) (reordered in place), allocate the object, assign.  When
 * `owned` is set, hs is ours and is freed as soon as the peel is done (the
 * peel's arrays hold every key from then on), so the hashes and the new
 * state are never in memory together: peak 8 n + 13 c bytes, not + c f/8. */
static PyObject *bkfuse_build(PyTypeObject *type, uint64_t *hs, size_t n, unsigned f,
                              const bkpy_ctor_args *a, int owned, int domains)
{
    bk_fuse_work w;
    const char *reason = NULL;
    bk_rc rc;
    BKFuse *self;

    Py_BEGIN_ALLOW_THREADS
    rc = bk_fuse_peel(&w, hs, n, f, &reason);
    if (owned)
        free(hs);
    Py_END_ALLOW_THREADS
    if (rc != BK_OK) {
        bk_fuse_work_free(&w);
        if (rc == BK_ERR_NOMEM)
            bkpy_raise_nomem((uint64_t)n * 15, reason, "build from fewer keys or free memory");
        else if (rc == BK_ERR_CAPACITY)
            PyErr_SetString(bkpy_CapacityError, reason);
        else
            PyErr_SetString(PyExc_ValueError, reason);
        return NULL;
    }
    self = bkpy_obj_new(type, BK_FUSE_HEADER_LEN + bk_fuse_payload_len(&w), a);
    if (self == NULL) {
        bk_fuse_work_free(&w);
        return NULL;
    }
    bk_fuse_init_state(self->st.buf, &w, a->seed, a->keyed,
                       bk_hasher_key_check(&self->st.hasher));
    Py_BEGIN_ALLOW_THREADS
    bk_fuse_assign(&w, self->st.buf + BK_FUSE_HEADER_LEN);
    bk_fuse_work_free(&w);
    Py_END_ALLOW_THREADS
    bk_fuse_attach(&self->fu, self->st.buf);
    /* The key domains of the keys hashed (BKPY_SEEN_*), or -1: hashes of
     * keys of unknown domains (_from_hashes without key_domains). */
    if (domains < 0)
        self->st.buf[BK_OFF_KEY_FLAGS] &= (uint8_t)~(BK_FLAG_KEYS_RECORDED >> 8);
    else
        bkpy_state_note_keys(&self->st, (unsigned)domains);
    return (PyObject *)self;
}

static int bkfuse_parse_f(unsigned f)
{
    if (f != 8 && f != 16 && f != 32) {
        PyErr_Format(PyExc_ValueError, "fingerprint_bits must be 8, 16 or 32, got %u", f);
        return -1;
    }
    return 0;
}

/* Hash every key of `keys` into c (c->hs: the caller frees it on success).
 * 0, or -1 with an exception set (and nothing left to free). */
static int bkfuse_collect_keys(PyObject *keys, const bkpy_ctor_args *a, bkfuse_collect *c)
{
    bk_hasher hasher;
    bkpy_batch_info info;
    bk_hasher_init(&hasher, a->seed, a->keyed ? a->secret16 : NULL);
    memset(c, 0, sizeof *c);
    if (bkpy_for_each_chunk(keys, a->key == Py_None ? NULL : a->key, &hasher, bkfuse_collect_chunk,
                            bkfuse_collect_size, c, 1, &info) < 0) {
        free(c->hs);
        return -1;
    }
    c->seen = info.seen;
    if (c->nomem) {
        free(c->hs);
        bkpy_raise_nomem((uint64_t)(c->cap + c->cap / 2) * 8,
                         "the key hashes of a binary fuse build (8 bytes a key)",
                         "build from fewer keys or free memory");
        return -1;
    }
    return 0;
}

/* BinaryFuseBase(keys, fingerprint_bits=8, *, seed=0, secret=None, key=None) */
static PyObject *bkfuse_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"keys", "fingerprint_bits", "seed", "secret", "key", NULL};
    PyObject *keys;
    unsigned int f = 8;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0);
    bkfuse_collect c;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|I$OOO:BinaryFuseBase", kwlist, &keys, &f,
                                     &a.seed_obj, &a.secret, &a.key))
        return NULL;
    if (bkfuse_parse_f(f) < 0 || bkpy_parse_ctor(&a) < 0)
        return NULL;
    if (bkfuse_collect_keys(keys, &a, &c) < 0)
        return NULL;
    return bkfuse_build(type, c.hs, c.n, f, &a, 1, (int)c.seen);
}

/* _from_hashes(hashes, fingerprint_bits=8, *, seed=0, secret=None, key=None):
 * build from 64-bit key hashes already computed with this seed/secret (a
 * 1-d uint64 buffer; bloomkit.dask ships these instead of keys). */
static PyObject *bkfuse_from_hashes(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"hashes", "fingerprint_bits", "seed", "secret", "key", "reuse",
                             "key_domains", NULL};
    PyObject *obj, *res;
    unsigned int f = 8;
    int reuse = 0, domains = -1;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0);
    Py_buffer view;
    uint64_t *hs;
    size_t n;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|I$OOOpi:_from_hashes", kwlist, &obj, &f,
                                     &a.seed_obj, &a.secret, &a.key, &reuse, &domains))
        return NULL;
    if (domains < -1 || domains > (int)(BKPY_SEEN_INT | BKPY_SEEN_TEXT)) {
        PyErr_SetString(PyExc_ValueError, "key_domains must be -1 (unknown) or a mask of 1 "
                                          "(int) and 2 (text)");
        return NULL;
    }
    if (bkfuse_parse_f(f) < 0 || bkpy_parse_ctor(&a) < 0)
        return NULL;
    if (PyObject_GetBuffer(obj, &view,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (reuse ? PyBUF_WRITABLE : 0)) < 0)
        return NULL;
    if (view.itemsize != 8 || view.ndim != 1 || view.format == NULL ||
        (strcmp(view.format, "Q") != 0 && strcmp(view.format, "<Q") != 0 &&
         strcmp(view.format, "=Q") != 0 && strcmp(view.format, "L") != 0)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "_from_hashes needs a 1-d C-contiguous uint64 array");
        return NULL;
    }
    n = (size_t)(view.len / 8);
    if (reuse) { /* the caller's array is reordered and deduplicated in place: no copy */
        res = bkfuse_build(type, (uint64_t *)view.buf, n, f, &a, 0, domains);
        PyBuffer_Release(&view);
        return res;
    }
    hs = (uint64_t *)malloc(n ? n * 8 : 1); /* the core reorders it: a private copy */
    if (hs == NULL) {
        PyBuffer_Release(&view);
        bkpy_raise_nomem((uint64_t)n * 8, "a copy of the key hashes", "free memory");
        return NULL;
    }
    memcpy(hs, view.buf, n * 8);
    PyBuffer_Release(&view);
    return bkfuse_build(type, hs, n, f, &a, 1, domains);
}

/* _hash_keys(keys, *, seed=0, secret=None, key=None) -> bytes: the 64-bit
 * key hashes (native-endian uint64s) of a batch, as a filter built with the
 * same options hashes them: what the CLI and bloomkit.dask collect, chunk
 * by chunk, instead of the keys (8 bytes a key). */
static PyObject *bkfuse_hash_keys(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"keys", "seed", "secret", "key", "domains", NULL};
    PyObject *keys, *res;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0);
    bkfuse_collect c;
    int domains = 0;
    (void)type;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOp:_hash_keys", kwlist, &keys,
                                     &a.seed_obj, &a.secret, &a.key, &domains))
        return NULL;
    if (bkpy_parse_ctor(&a) < 0)
        return NULL;
    if (bkfuse_collect_keys(keys, &a, &c) < 0)
        return NULL;
    res = PyBytes_FromStringAndSize((const char *)c.hs, (Py_ssize_t)(c.n * 8));
    free(c.hs);
    if (res != NULL && domains) { /* (hashes, the key domains hashed: 1 int, 2 text) */
        PyObject *pair = Py_BuildValue("(NI)", res, c.seen);
        return pair;
    }
    return res;
}

/* ---- End logic for construction --------------------------------------- */

/* ---- Begin logic for lookups ------------------------------------------ */

static int bkfuse_contains(BKFuse *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_fuse_contains(&self->fu, h);
}

static void bkfuse_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_fuse_contains_many((const bk_fuse *)view, hs, n, out);
}

/* ---- End logic for lookups -------------------------------------------- */

/* ---- Begin logic for the object contract ------------------------------ */

BKPY_ATTACH(bkfuse, BKFuse, fu, bk_fuse_attach)

/* What a closed mapped filter keeps: the empty set. */
static int bkfuse_empty(PyObject *self_obj)
{
    BKFuse *self = (BKFuse *)self_obj;
    bk_fuse_work w;
    const char *reason = NULL;
    (void)bk_fuse_peel(&w, NULL, 0, 8, &reason); /* the empty set's shape */
    if (bkpy_state_alloc(&self->st, BK_FUSE_HEADER_LEN) < 0) {
        bk_fuse_work_free(&w);
        return -1;
    }
    bk_fuse_init_state(self->st.buf, &w, 0, 0, 0);
    bk_fuse_work_free(&w);
    return bkfuse_attach(self_obj);
}

/* Beyond the header's identity: the parameters and the fingerprints. */
static int bkfuse_equal(PyObject *a, PyObject *b)
{
    BKFuse *x = (BKFuse *)a, *y = (BKFuse *)b;
    return memcmp(x->st.buf + BK_OFF_PARAMS, y->st.buf + BK_OFF_PARAMS, BK_FUSE_PARAMS_LEN) == 0 &&
           memcmp(x->fu.fps, y->fu.fps, (size_t)(x->fu.array_length * (x->fu.f / 8))) == 0;
}

static Py_ssize_t bkfuse_len(BKFuse *self)
{
    uint64_t c = self->fu.count;
    return bkpy_len_of(c);
}

BKPY_GETTER(bkfuse, BKFuse, fingerprint_bits, PyLong_FromUnsignedLong(self->fu.f))
BKPY_GETTER(bkfuse, BKFuse, arity, PyLong_FromUnsignedLong(self->fu.arity))
BKPY_GETTER(bkfuse, BKFuse, segment_length, PyLong_FromUnsignedLong(self->fu.segment_length))
BKPY_GETTER(bkfuse, BKFuse, segment_count, PyLong_FromUnsignedLong(self->fu.segment_count))
BKPY_GETTER(bkfuse, BKFuse, array_length, PyLong_FromUnsignedLongLong(self->fu.array_length))
BKPY_GETTER(bkfuse, BKFuse, fuse_seed, PyLong_FromUnsignedLongLong(self->fu.fuse_seed))
BKPY_GETTER(bkfuse, BKFuse, attempts, PyLong_FromUnsignedLong(
                            bk_load_u32le(self->st.buf + BK_OFF_PARAMS + BK_FUSE_P_ATTEMPTS)))
BKPY_GETTER(bkfuse, BKFuse, nbytes, PyLong_FromUnsignedLongLong(self->fu.array_length * (self->fu.f / 8)))
BKPY_GETTER(bkfuse, BKFuse, error_rate, PyFloat_FromDouble(1.0 / (double)(1ULL << self->fu.f)))

static PyGetSetDef bkfuse_getset[] = {
    {"fingerprint_bits", (getter)bkfuse_get_fingerprint_bits, NULL, "f, bits per fingerprint (8, 16 or 32).", NULL},
    {"arity", (getter)bkfuse_get_arity, NULL, "Slots a key reads: 3 or 4 (by size, see docs/fuse.md).", NULL},
    {"segment_length", (getter)bkfuse_get_segment_length, NULL, "L, slots a segment.", NULL},
    {"segment_count", (getter)bkfuse_get_segment_count, NULL, "S, segments a first slot may fall in.", NULL},
    {"array_length", (getter)bkfuse_get_array_length, NULL, "Fingerprint slots, (S + arity - 1) L.", NULL},
    {"fuse_seed", (getter)bkfuse_get_fuse_seed, NULL, "The internal seed the construction settled on.", NULL},
    {"attempts", (getter)bkfuse_get_attempts, NULL, "Seeds the construction tried.", NULL},
    {"nbytes", (getter)bkfuse_get_nbytes, NULL, "Bytes of the fingerprint table (payload).", NULL},
    {"error_rate", (getter)bkfuse_get_error_rate, NULL, "The false-positive rate, 2**-fingerprint_bits.", NULL},
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkfuse_methods[] = {
    BKPY_CONTAINS_MANY_METHOD,
    {"_from_hashes", (PyCFunction)(void (*)(void))bkfuse_from_hashes,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "_from_hashes(hashes, fingerprint_bits=8, *, seed=0, secret=None, key=None, reuse=False, "
     "key_domains=-1)\n--\n\n"
     "Build from a uint64 array of key hashes made with the same seed/secret (reuse=True: "
     "a writable array that may be reordered and deduplicated in place)."},
    {"_hash_keys", (PyCFunction)(void (*)(void))bkfuse_hash_keys,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "_hash_keys(keys, *, seed=0, secret=None, key=None, domains=False)\n--\n\n"
     "The 64-bit key hashes of a batch as native-endian uint64 bytes."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkfuse);

static PyTypeObject BKFuse_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.BinaryFuseBase",
    BKPY_OBJ_SLOTS(bkfuse, BKFuse),
    .tp_as_sequence = &bkfuse_as_sequence,
    .tp_doc = "BinaryFuseBase(keys, fingerprint_bits=8, *, seed=0, secret=None, key=None)\n--\n\n"
              "C core of BinaryFuseFilter.",
};

/* ---- End logic for the object contract -------------------------------- */

static const bkpy_desc bkfuse_desc = {
    .type = &BKFuse_Type,
    .kinds = 1u << BK_KIND_BINARY_FUSE,
    .attach = bkfuse_attach,
    .empty = bkfuse_empty,
    .equal = bkfuse_equal,
    .probe = bkfuse_probe,
    .view_off = offsetof(BKFuse, fu),
    .query = BKPY_QUERY_NOGIL, /* read-only state: lookups run without the GIL */
};

int bkfuse_init(PyObject *m)
{
    return bkpy_register_type(m, "BinaryFuseBase", &bkfuse_desc);
}
