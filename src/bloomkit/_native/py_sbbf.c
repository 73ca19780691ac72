/*
 * py_sbbf.c -- CPython type for Parquet's split-block Bloom filter
 * (bloomkit._core.SBBF, bk_sbbf.c).
 *
 * Deliberately self-contained and small: an SBBF is not a bloomkit
 * container state (no header, seed or key encoding; its bytes are the
 * Parquet bitset), so it does not use bkpy_state / the common object
 * contract.  The object owns one bitset allocation (zero-filled, 16-byte
 * aligned by PyMem) and offers the hash-level operations; value encoding
 * (which bytes a DATE or a DECIMAL hashes) is the facade's job
 * (bloomkit/parquet/sbbf.py), which knows the column's schema.
 *
 * Batch methods take contiguous buffers of native-order uint64 hashes (or
 * of fixed-width little-endian PLAIN values) and run without the GIL past
 * a small size: inserts are atomic ORs (bk_sbbf.c), so concurrent batches
 * lose no bit.  sbbf_hash_arrow hashes an Arrow column's values (read by
 * py_arrow.c) as the PLAIN bytes of the facade's column type.
 */
#include "py_common.h"

#include "bk_atomic.h"
#include "bk_endian.h"
#include "bk_hash.h"
#include "bk_sbbf.h"

/* Below this many items the GIL round trip costs more than the work. */
#define BKSBBF_NOGIL_MIN 512

typedef struct {
    PyObject_HEAD
    uint8_t *bits;
    uint64_t nbytes;
} BKSbbf;

static PyTypeObject BKSbbf_Type;

static int bksbbf_alloc_bits(BKSbbf *self, uint64_t nbytes)
{
    const char *reason = "invalid";
    if (bk_sbbf_check_size(nbytes, &reason) != BK_OK) {
        PyErr_Format(PyExc_ValueError, "split-block Bloom filter size %llu: %s",
                     (unsigned long long)nbytes, reason);
        return -1;
    }
    if (nbytes > (uint64_t)PY_SSIZE_T_MAX) {
        bkpy_raise_nomem(nbytes, "a split-block Bloom filter bitset", "use a smaller filter");
        return -1;
    }
    self->bits = (uint8_t *)PyMem_Calloc(1, (size_t)nbytes);
    if (self->bits == NULL) {
        bkpy_raise_nomem(nbytes, "a split-block Bloom filter bitset", "use a smaller filter");
        return -1;
    }
    self->nbytes = nbytes;
    return 0;
}

/* SBBF(size_or_bitset): an int is a size in bytes (zeroed bitset); a
 * bytes-like object is copied as the bitset. */
static PyObject *bksbbf_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size_or_bitset", NULL};
    PyObject *arg;
    BKSbbf *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:SBBF", kwlist, &arg))
        return NULL;
    self = (BKSbbf *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if (PyLong_Check(arg)) {
        unsigned long long n = PyLong_AsUnsignedLongLong(arg);
        if (n == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "SBBF size must be a positive multiple of 32");
            goto fail;
        }
        if (bksbbf_alloc_bits(self, (uint64_t)n) < 0)
            goto fail;
    } else if (PyObject_CheckBuffer(arg) && !PyUnicode_Check(arg)) {
        Py_buffer v;
        if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
            goto fail;
        if (bksbbf_alloc_bits(self, (uint64_t)v.len) < 0) {
            PyBuffer_Release(&v);
            goto fail;
        }
        memcpy(self->bits, v.buf, (size_t)v.len);
        PyBuffer_Release(&v);
    } else {
        PyErr_Format(PyExc_TypeError, "SBBF() takes a size in bytes or a bitset, not %.50s",
                     Py_TYPE(arg)->tp_name);
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static void bksbbf_dealloc(BKSbbf *self)
{
    PyMem_Free(self->bits);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *bksbbf_insert_hash(BKSbbf *self, PyObject *arg)
{
    uint64_t h;
    if (bkpy_parse_u64(arg, "a hash", &h) < 0)
        return NULL;
    bk_sbbf_insert(self->bits, self->nbytes, h);
    Py_RETURN_NONE;
}

static PyObject *bksbbf_check_hash(BKSbbf *self, PyObject *arg)
{
    uint64_t h;
    if (bkpy_parse_u64(arg, "a hash", &h) < 0)
        return NULL;
    return PyBool_FromLong(bk_sbbf_check(self->bits, self->nbytes, h));
}

/* A contiguous buffer of native uint64 hashes; *n set to the count. */
static int bksbbf_hashes_view(PyObject *obj, Py_buffer *v, size_t *n)
{
    if (PyUnicode_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected a buffer of uint64 hashes, not str");
        return -1;
    }
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (v->len % 8 != 0) {
        PyBuffer_Release(v);
        PyErr_SetString(PyExc_ValueError, "a buffer of uint64 hashes must be a multiple of 8 bytes");
        return -1;
    }
    *n = (size_t)v->len / 8;
    return 0;
}

/* The hashes may be unaligned (a bytes object's data is 8-aligned in
 * CPython, a memoryview slice need not be): copy through an aligned
 * chunk. */
#define BKSBBF_CHUNK 1024

static void bksbbf_run(BKSbbf *self, const uint8_t *raw, size_t n, uint8_t *out)
{
    uint64_t hs[BKSBBF_CHUNK];
    for (size_t i = 0; i < n; i += BKSBBF_CHUNK) {
        size_t m = n - i < BKSBBF_CHUNK ? n - i : BKSBBF_CHUNK;
        memcpy(hs, raw + 8 * i, 8 * m);
        if (out == NULL)
            bk_sbbf_insert_many(self->bits, self->nbytes, hs, m);
        else
            bk_sbbf_check_many(self->bits, self->nbytes, hs, m, out + i);
    }
}

static PyObject *bksbbf_insert_hashes(BKSbbf *self, PyObject *arg)
{
    Py_buffer v;
    size_t n;
    if (bksbbf_hashes_view(arg, &v, &n) < 0)
        return NULL;
    if (n >= BKSBBF_NOGIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        bksbbf_run(self, (const uint8_t *)v.buf, n, NULL);
        Py_END_ALLOW_THREADS
    } else {
        bksbbf_run(self, (const uint8_t *)v.buf, n, NULL);
    }
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

/* check_hashes(hashes) -> bytes of 0/1, one per hash. */
static PyObject *bksbbf_check_hashes(BKSbbf *self, PyObject *arg)
{
    Py_buffer v;
    size_t n;
    PyObject *res;
    if (bksbbf_hashes_view(arg, &v, &n) < 0)
        return NULL;
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (res == NULL) {
        PyBuffer_Release(&v);
        return NULL;
    }
    if (n >= BKSBBF_NOGIL_MIN) {
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(res);
        Py_BEGIN_ALLOW_THREADS
        bksbbf_run(self, (const uint8_t *)v.buf, n, out);
        Py_END_ALLOW_THREADS
    } else {
        bksbbf_run(self, (const uint8_t *)v.buf, n, (uint8_t *)PyBytes_AS_STRING(res));
    }
    PyBuffer_Release(&v);
    return res;
}

static PyObject *bksbbf_to_bytes(BKSbbf *self, PyObject *unused)
{
    (void)unused;
    return PyBytes_FromStringAndSize((const char *)self->bits, (Py_ssize_t)self->nbytes);
}

static PyObject *bksbbf_popcount(BKSbbf *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(bk_sbbf_popcount(self->bits, self->nbytes));
}

/* merge(other): OR other's bitset (same size) into this one. */
static PyObject *bksbbf_merge(BKSbbf *self, PyObject *arg)
{
    BKSbbf *o;
    if (!PyObject_TypeCheck(arg, &BKSbbf_Type)) {
        PyErr_Format(PyExc_TypeError, "can only merge another SBBF, not %.50s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    o = (BKSbbf *)arg;
    if (o->nbytes != self->nbytes) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot merge split-block Bloom filters of %llu and %llu bytes",
                     (unsigned long long)self->nbytes, (unsigned long long)o->nbytes);
        return NULL;
    }
    for (uint64_t i = 0; i < self->nbytes; i += 4) {
        uint32_t w = bk_load_u32le(o->bits + i);
        if (w != 0)
            bk_atomic_or32((uint32_t *)(void *)(self->bits + i), (uint32_t)BK_LE32(w));
    }
    Py_RETURN_NONE;
}

static PyObject *bksbbf_get_nbytes(BKSbbf *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->nbytes);
}

static PyObject *bksbbf_sizeof(BKSbbf *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong((uint64_t)Py_TYPE(self)->tp_basicsize + self->nbytes);
}

static PyMethodDef bksbbf_methods[] = {
    {"insert_hash", (PyCFunction)bksbbf_insert_hash, METH_O,
     "insert_hash(h, /)\n--\n\nSet the eight bits of a 64-bit hash."},
    {"check_hash", (PyCFunction)bksbbf_check_hash, METH_O,
     "check_hash(h, /)\n--\n\nTrue when all eight bits of the hash are set."},
    {"insert_hashes", (PyCFunction)bksbbf_insert_hashes, METH_O,
     "insert_hashes(hashes, /)\n--\n\nInsert a buffer of native uint64 hashes (GIL released)."},
    {"check_hashes", (PyCFunction)bksbbf_check_hashes, METH_O,
     "check_hashes(hashes, /)\n--\n\nbytes of 0/1 for a buffer of native uint64 hashes (GIL released)."},
    {"to_bytes", (PyCFunction)bksbbf_to_bytes, METH_NOARGS,
     "to_bytes()\n--\n\nThe bitset, as a Parquet file stores it."},
    {"popcount", (PyCFunction)bksbbf_popcount, METH_NOARGS,
     "popcount()\n--\n\nThe number of set bits."},
    {"merge", (PyCFunction)bksbbf_merge, METH_O,
     "merge(other, /)\n--\n\nOR another bitset of the same size into this one."},
    {"__sizeof__", (PyCFunction)bksbbf_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef bksbbf_getset[] = {
    {"nbytes", (getter)bksbbf_get_nbytes, NULL, "Size of the bitset in bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BKSbbf_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.SBBF",
    .tp_basicsize = sizeof(BKSbbf),
    .tp_dealloc = (destructor)bksbbf_dealloc,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SBBF(size_or_bitset)\n--\n\nParquet's split-block Bloom filter bitset "
              "(hash level; see bloomkit.parquet).",
    .tp_methods = bksbbf_methods,
    .tp_getset = bksbbf_getset,
    .tp_new = bksbbf_new,
};

/* ---- Module-level helpers --------------------------------------------- */

/* sbbf_hash_fixed(values, width) -> bytes of native uint64: the XXH64 of
 * each width-byte PLAIN value of a contiguous buffer. */
static PyObject *bksbbf_hash_fixed(PyObject *mod, PyObject *args)
{
    PyObject *data, *res;
    Py_ssize_t width;
    Py_buffer v;
    size_t n;
    (void)mod;
    if (!PyArg_ParseTuple(args, "On:sbbf_hash_fixed", &data, &width))
        return NULL;
    if (width <= 0) {
        PyErr_SetString(PyExc_ValueError, "width must be positive");
        return NULL;
    }
    if (PyUnicode_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "expected a buffer of PLAIN values, not str");
        return NULL;
    }
    if (PyObject_GetBuffer(data, &v, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (v.len % width != 0) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "buffer length is not a multiple of the value width");
        return NULL;
    }
    n = (size_t)(v.len / width);
    if (n > (size_t)(PY_SSIZE_T_MAX / 8)) {
        PyBuffer_Release(&v);
        return PyErr_NoMemory();
    }
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    if (res == NULL) {
        PyBuffer_Release(&v);
        return NULL;
    }
    {
        /* CPython bytes data is 8-aligned (offsetof ob_sval is 32 on
         * 64-bit builds); keep a memcpy-free path only where it is. */
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(res);
        const uint8_t *in = (const uint8_t *)v.buf;
        if (((uintptr_t)out & 7) == 0) {
            if (n >= BKSBBF_NOGIL_MIN) {
                Py_BEGIN_ALLOW_THREADS
                bk_sbbf_hash_fixed(in, n, (size_t)width, (uint64_t *)(void *)out);
                Py_END_ALLOW_THREADS
            } else {
                bk_sbbf_hash_fixed(in, n, (size_t)width, (uint64_t *)(void *)out);
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                uint64_t h = bk_sbbf_hash_bytes(in + i * (size_t)width, (size_t)width);
                memcpy(out + 8 * i, &h, 8);
            }
        }
    }
    PyBuffer_Release(&v);
    return res;
}

/* sbbf_hash_items(items) -> bytes of native uint64: XXH64 of each item's
 * bytes (str as UTF-8, bytes-like raw): BYTE_ARRAY values. */
static PyObject *bksbbf_hash_items(PyObject *mod, PyObject *arg)
{
    PyObject *seq, *res;
    Py_ssize_t n;
    uint8_t *out;
    (void)mod;
    seq = PySequence_Fast(arg, "sbbf_hash_items expects a sequence of str or bytes");
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    res = PyBytes_FromStringAndSize(NULL, n * 8);
    if (res == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    out = (uint8_t *)PyBytes_AS_STRING(res);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        uint64_t h;
        if (PyUnicode_Check(item)) {
            Py_ssize_t len;
            const char *s = PyUnicode_AsUTF8AndSize(item, &len);
            if (s == NULL)
                goto fail;
            h = bk_sbbf_hash_bytes(s, (size_t)len);
        } else if (PyObject_CheckBuffer(item)) {
            Py_buffer v;
            if (PyObject_GetBuffer(item, &v, PyBUF_SIMPLE) < 0)
                goto fail;
            h = bk_sbbf_hash_bytes(v.buf, (size_t)v.len);
            PyBuffer_Release(&v);
        } else {
            PyErr_Format(PyExc_TypeError, "a BYTE_ARRAY value must be str or bytes-like, not %.50s",
                         Py_TYPE(item)->tp_name);
            goto fail;
        }
        memcpy(out + 8 * i, &h, 8);
    }
    Py_DECREF(seq);
    return res;
fail:
    Py_DECREF(seq);
    Py_DECREF(res);
    return NULL;
}

/* sbbf_hash_arrow(column, mode, lo, hi, width, text_ok) -> (hashes, status):
 * an Arrow column's PLAIN hashes (py_arrow.c's values; docs/engines.md),
 * one native uint64 per row, and one status byte per row: 0 a null row, 1
 * hashed, 2 a value the Parquet column cannot hold (its hash is 0).  What
 * the facade (parquet/sbbf.py) asks for, by the column's type:
 *   mode 0 (INT32/INT64, not DECIMAL): Arrow ints and bools; a value in
 *     [lo, hi] (hi inclusive, as a uint64) is its low width (4 or 8) bytes,
 *     little-endian, as ColumnType.encode writes an int;
 *   mode 1 (BYTE_ARRAY, not DECIMAL): Arrow strings and binaries, raw;
 *   mode 2 (FIXED_LEN_BYTE_ARRAY(width)): binaries (and strings when
 *     text_ok), raw, storable only at exactly width bytes.
 * Any other Arrow type is a TypeError (the facade then reads the column as
 * Python objects); an invalid array a ValueError (py_arrow.c).  The
 * values are hashed without the GIL. */
typedef struct {
    int mode, text_ok, mismatch;
    int64_t lo;
    uint64_t hi;
    size_t width;
    uint8_t *hashes, *status;
} bksbbf_arrow_ctx;

static void bksbbf_arrow_value(void *vctx, size_t row, const bkarrow_value *v)
{
    bksbbf_arrow_ctx *c = (bksbbf_arrow_ctx *)vctx;
    uint64_t h = 0;
    uint8_t st = 1;
    if (c->mismatch)
        return;
    if (v->kind == BKARROW_V_NULL) {
        st = 0;
    } else if (c->mode == 0) {
        if (v->kind != BKARROW_V_INT) {
            c->mismatch = 1;
            return;
        }
        if (v->is_signed ? ((int64_t)v->bits < c->lo ||
                            ((int64_t)v->bits >= 0 && v->bits > c->hi))
                         : v->bits > c->hi) {
            st = 2;
        } else {
            uint8_t le[8];
            for (size_t i = 0; i < c->width; i++)
                le[i] = (uint8_t)(v->bits >> (8 * i));
            h = bk_sbbf_hash_bytes(le, c->width);
        }
    } else {
        if (v->kind != BKARROW_V_BYTES || (c->mode == 2 && v->is_text && !c->text_ok)) {
            c->mismatch = 1;
            return;
        }
        if (c->mode == 2 && v->n != c->width)
            st = 2;
        else
            h = bk_sbbf_hash_bytes(v->p, v->n);
    }
    memcpy(c->hashes + 8 * row, &h, 8);
    c->status[row] = st;
}

static PyObject *bksbbf_hash_arrow(PyObject *mod, PyObject *args)
{
    PyObject *obj, *hashes = NULL, *status = NULL, *res = NULL;
    bksbbf_arrow_ctx c;
    long long lo;
    unsigned long long hi;
    Py_ssize_t width, rows;
    bkarrow_keys *k;
    int export_failed = 0;
    (void)mod;
    memset(&c, 0, sizeof c);
    if (!PyArg_ParseTuple(args, "OiLKni:sbbf_hash_arrow", &obj, &c.mode, &lo, &hi, &width,
                          &c.text_ok))
        return NULL;
    if (c.mode < 0 || c.mode > 2 || (c.mode == 0 && width != 4 && width != 8) ||
        (c.mode == 2 && width < 1)) {
        PyErr_SetString(PyExc_ValueError, "sbbf_hash_arrow: bad mode or width");
        return NULL;
    }
    c.lo = (int64_t)lo;
    c.hi = (uint64_t)hi;
    c.width = (size_t)width;
    if (!bkarrow_api_check(obj)) {
        PyErr_Format(PyExc_TypeError, "%.50s is no Arrow array or stream", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    k = bkarrow_api_open(obj, &export_failed);
    if (k == NULL)
        return NULL;
    rows = bkarrow_api_rows(k);
    if (rows > PY_SSIZE_T_MAX / 8) {
        bkarrow_api_close(k);
        return PyErr_NoMemory();
    }
    hashes = PyBytes_FromStringAndSize(NULL, rows * 8);
    status = PyBytes_FromStringAndSize(NULL, rows);
    if (hashes != NULL && status != NULL) {
        c.hashes = (uint8_t *)PyBytes_AS_STRING(hashes);
        c.status = (uint8_t *)PyBytes_AS_STRING(status);
        if (rows >= BKSBBF_NOGIL_MIN) {
            Py_BEGIN_ALLOW_THREADS
            bkarrow_api_values(k, bksbbf_arrow_value, &c);
            Py_END_ALLOW_THREADS
        } else {
            bkarrow_api_values(k, bksbbf_arrow_value, &c);
        }
        if (c.mismatch)
            PyErr_SetString(PyExc_TypeError,
                            "this Arrow type has no direct PLAIN encoding in this column");
        else
            res = PyTuple_Pack(2, hashes, status);
    }
    Py_XDECREF(hashes);
    Py_XDECREF(status);
    bkarrow_api_close(k);
    return res;
}

static PyObject *bksbbf_optimal_bytes(PyObject *mod, PyObject *args)
{
    double ndv, fpp;
    uint64_t n;
    (void)mod;
    if (!PyArg_ParseTuple(args, "dd:sbbf_optimal_bytes", &ndv, &fpp))
        return NULL;
    n = bk_sbbf_optimal_bytes(ndv, fpp);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "need ndv >= 0 and 0 < fpp < 1");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(n);
}

static PyObject *bksbbf_fpp(PyObject *mod, PyObject *args)
{
    unsigned long long nbytes;
    double ndv;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Kd:sbbf_fpp", &nbytes, &ndv))
        return NULL;
    return PyFloat_FromDouble(bk_sbbf_fpp((uint64_t)nbytes, ndv));
}

static PyMethodDef bksbbf_module_methods[] = {
    {"sbbf_hash_fixed", bksbbf_hash_fixed, METH_VARARGS,
     "sbbf_hash_fixed(values, width, /)\n--\n\nXXH64 of each fixed-width PLAIN value (native uint64 bytes)."},
    {"sbbf_hash_items", bksbbf_hash_items, METH_O,
     "sbbf_hash_items(items, /)\n--\n\nXXH64 of each str (UTF-8) or bytes item (native uint64 bytes)."},
    {"sbbf_hash_arrow", bksbbf_hash_arrow, METH_VARARGS,
     "sbbf_hash_arrow(column, mode, lo, hi, width, text_ok, /)\n--\n\nPLAIN hashes of an "
     "Arrow column's rows (native uint64 bytes) and a status byte per row (0 null, 1 hashed, "
     "2 not storable)."},
    {"sbbf_optimal_bytes", bksbbf_optimal_bytes, METH_VARARGS,
     "sbbf_optimal_bytes(ndv, fpp, /)\n--\n\nBitset bytes a Parquet writer allocates for ndv values at rate fpp."},
    {"sbbf_fpp", bksbbf_fpp, METH_VARARGS,
     "sbbf_fpp(nbytes, ndv, /)\n--\n\nFalse-positive rate of a bitset of nbytes holding ndv values."},
    {NULL, NULL, 0, NULL},
};

int bksbbf_init(PyObject *m)
{
    if (PyType_Ready(&BKSbbf_Type) < 0)
        return -1;
    Py_INCREF(&BKSbbf_Type);
    if (PyModule_AddObject(m, "SBBF", (PyObject *)&BKSbbf_Type) < 0) {
        Py_DECREF(&BKSbbf_Type);
        return -1;
    }
    return PyModule_AddFunctions(m, bksbbf_module_methods);
}
