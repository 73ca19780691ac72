/*
 * py_bytekeys.c -- bloomkit._core.ByteKeys: variable-length byte keys in
 * Apache Arrow's layout, for the batch path without Python objects.
 *
 * An Arrow string or binary column is two buffers: `data`, every value's
 * bytes back to back, and `offsets`, n + 1 integers (int32 for string and
 * binary, int64 for large_string and large_binary) such that key i is
 * data[offsets[i] : offsets[i + 1]].  ByteKeys(offsets, data) wraps them;
 * add_many / contains_many (every structure, through bkpy_for_each_chunk)
 * then hash key i exactly as the bytes object of those bytes -- which is
 * also the str whose UTF-8 they are (docs/keys.md) -- without building a
 * Python object per key and without the GIL.  Before it, bloomkit.sources
 * made a list of bytes per batch (arr.to_pylist(), about 180 ns a key
 * against about 30 ns for the hashing itself in a rough check).
 *
 * Invariants, checked once in the constructor and relied upon without the
 * GIL afterwards:
 *   - the offsets are copied into an owned int64 array, so a writable
 *     offsets buffer (a numpy array) changed later cannot move a key out of
 *     bounds;
 *   - 0 <= offsets[0] <= offsets[1] <= ... <= offsets[n] <= len(data);
 *   - the data buffer is held (a Py_buffer view) for the object's life, so
 *     its exporter can neither free nor resize it (a bytearray refuses to
 *     resize while exported).  Its contents may still change (a writable
 *     exporter): then the keys are whatever the bytes are when hashed.
 *
 * Nulls are not represented: drop them first (pyarrow's drop_null()).
 * A structure with a key= function iterates a ByteKeys as a sequence of
 * bytes objects instead, so the function sees bytes, as it would from a
 * list.
 */
#include "py_common.h"

#include "bk_endian.h"

typedef struct {
    PyObject_HEAD
    Py_buffer data;    /* the bytes of every key, back to back */
    int64_t *offsets;  /* n + 1, owned and validated (see above) */
    Py_ssize_t n;      /* number of keys */
} BKByteKeys;

static PyTypeObject BKByteKeys_Type;

/* The integer width of an offsets buffer: 4 or 8 (signed, native order:
 * numpy's and pyarrow's int32/int64), or 0 when it is anything else. */
static int bkbytekeys_offset_width(const Py_buffer *v)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=')
        f++;
#if !BK_BIG_ENDIAN
    else if (*f == '<')
        f++;
#endif
    if (f[0] == '\0' || f[1] != '\0')
        return 0;
    if ((f[0] == 'i' || f[0] == 'l' || f[0] == 'q') && (v->itemsize == 4 || v->itemsize == 8))
        return (int)v->itemsize;
    return 0;
}

/* ByteKeys(offsets, data) */
static PyObject *bkbytekeys_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"offsets", "data", NULL};
    PyObject *off_obj, *data_obj;
    Py_buffer ov;
    BKByteKeys *self;
    Py_ssize_t count, i;
    int width;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:ByteKeys", kwlist, &off_obj, &data_obj))
        return NULL;
    if (PyUnicode_Check(data_obj)) {
        PyErr_SetString(PyExc_TypeError, "ByteKeys data must be bytes-like, not str");
        return NULL;
    }
    if (PyObject_GetBuffer(off_obj, &ov, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    width = bkbytekeys_offset_width(&ov);
    if (ov.ndim != 1 || width == 0 || ov.len / ov.itemsize < 1) {
        PyErr_Format(PyExc_TypeError,
                     "ByteKeys offsets must be a 1-d array of n + 1 int32 or int64 (got format "
                     "'%.20s', ndim %d, %zd items)", ov.format ? ov.format : "B", ov.ndim,
                     ov.itemsize ? ov.len / ov.itemsize : 0);
        PyBuffer_Release(&ov);
        return NULL;
    }
    count = ov.len / ov.itemsize;
    self = (BKByteKeys *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyBuffer_Release(&ov);
        return NULL;
    }
    /* tp_alloc zero-filled: data.obj == NULL marks "no view" for dealloc */
    if (PyObject_GetBuffer(data_obj, &self->data, PyBUF_SIMPLE) < 0) {
        self->data.obj = NULL;
        goto fail;
    }
    if ((size_t)count > SIZE_MAX / sizeof(int64_t)) {
        PyErr_NoMemory();  /* unreachable: the offsets buffer itself would not fit */
        goto fail;
    }
    self->offsets = (int64_t *)PyMem_Malloc((size_t)count * sizeof(int64_t));
    if (self->offsets == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (i = 0; i < count; i++) {
        const char *p = (const char *)ov.buf + i * ov.itemsize;
        int64_t o;
        if (width == 4) {
            int32_t x;
            memcpy(&x, p, 4);
            o = x;
        } else {
            memcpy(&o, p, 8);
        }
        if (o < (i == 0 ? 0 : self->offsets[i - 1]) || o > (int64_t)self->data.len) {
            PyErr_Format(PyExc_ValueError,
                         "ByteKeys offsets must be non-decreasing, from 0 up to the data's "
                         "%zd bytes: offsets[%zd] = %lld", self->data.len, i, (long long)o);
            goto fail;
        }
        self->offsets[i] = o;
    }
    self->n = count - 1;
    PyBuffer_Release(&ov);
    return (PyObject *)self;
fail:
    PyBuffer_Release(&ov);
    Py_DECREF(self);
    return NULL;
}

static void bkbytekeys_dealloc(PyObject *op)
{
    BKByteKeys *self = (BKByteKeys *)op;
    if (self->data.obj != NULL)
        PyBuffer_Release(&self->data);
    PyMem_Free(self->offsets);
    Py_TYPE(op)->tp_free(op);
}

static Py_ssize_t bkbytekeys_len(PyObject *op)
{
    return ((BKByteKeys *)op)->n;
}

/* Key i as a bytes object: iteration (a structure with key=, list(...)). */
static PyObject *bkbytekeys_item(PyObject *op, Py_ssize_t i)
{
    BKByteKeys *self = (BKByteKeys *)op;
    if (i < 0 || i >= self->n) {
        PyErr_SetString(PyExc_IndexError, "ByteKeys index out of range");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)self->data.buf + self->offsets[i],
                                     (Py_ssize_t)(self->offsets[i + 1] - self->offsets[i]));
}

int bkbytekeys_api_check(PyObject *o)
{
    return Py_IS_TYPE(o, &BKByteKeys_Type);
}

Py_ssize_t bkbytekeys_api_len(PyObject *o)
{
    return ((BKByteKeys *)o)->n;
}

/* Hash keys start .. start + n - 1 into out.  No Python API: runs without
 * the GIL (the caller holds a reference to o). */
void bkbytekeys_api_hash(PyObject *o, Py_ssize_t start, size_t n, const bk_hasher *hs,
                        uint64_t *out)
{
    const BKByteKeys *self = (const BKByteKeys *)o;
    const char *base = (const char *)self->data.buf;
    const int64_t *off = self->offsets + start;
    for (size_t j = 0; j < n; j++)
        out[j] = bk_fastkey_bytes(hs, base + off[j], (size_t)(off[j + 1] - off[j]));
}

static PyObject *bkbytekeys_repr(PyObject *op)
{
    BKByteKeys *self = (BKByteKeys *)op;
    return PyUnicode_FromFormat("ByteKeys(%zd keys, %zd bytes)", self->n, self->data.len);
}

static PySequenceMethods bkbytekeys_as_sequence = {
    .sq_length = bkbytekeys_len,
    .sq_item = bkbytekeys_item,
};

PyDoc_STRVAR(bkbytekeys_doc,
"ByteKeys(offsets, data)\n--\n\n"
"Variable-length byte keys in Arrow's layout: key i is\n"
"data[offsets[i]:offsets[i + 1]] (offsets: n + 1 int32 or int64, non-decreasing,\n"
"within data).  add_many/contains_many hash them like the bytes objects, without\n"
"the GIL.  Iterating gives the bytes objects.");

static PyTypeObject BKByteKeys_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.ByteKeys",
    .tp_basicsize = sizeof(BKByteKeys),
    .tp_dealloc = bkbytekeys_dealloc,
    .tp_repr = bkbytekeys_repr,
    .tp_as_sequence = &bkbytekeys_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = bkbytekeys_doc,
    .tp_new = bkbytekeys_new,
};

int bkbytekeys_init(PyObject *m)
{
    if (PyType_Ready(&BKByteKeys_Type) < 0)
        return -1;
    Py_INCREF(&BKByteKeys_Type);
    if (PyModule_AddObject(m, "ByteKeys", (PyObject *)&BKByteKeys_Type) < 0) {
        Py_DECREF(&BKByteKeys_Type);
        return -1;
    }
    return 0;
}
