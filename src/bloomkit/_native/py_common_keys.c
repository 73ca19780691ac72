/*
 * py_common_keys.c -- shared CPython glue: buffer elements as keys and the key encoding's
 * slow path (subclasses, numpy scalars, buffers, __index__, key=).
 * See py_common.h; the object contract is in py_common.c.
 */
#include "py_common.h"

#include "bk_endian.h"

/* ---- Begin logic for buffer elements ---------------------------------- */

/* One element of a buffer as a key.  The batch path hashes 1-d buffers
 * (numpy arrays, array.array) element by element with these; a numpy
 * scalar, which is what arr[i] gives, is hashed by the same code through a
 * 0-d view of itself.  So an element and the array it came from can never
 * take different key domains (R34; tests/test_numpy_keys.py):
 *
 *   integers of 1, 2, 4, 8 bytes   the int of that value (integer domain)
 *   bool ('?')                     the int 0 or 1 (any non-zero byte is 1,
 *                                  as numpy's arr[i] reads it)
 *   fixed-width bytes ("10s")      the bytes up to the last non-NUL byte,
 *                                  as numpy's bytes_ gives them
 *
 * Anything else (floats, complex, objects, unicode, records) is refused. */


/* A buffer's struct format without its byte-order prefix ('@', '=', '<',
 * '>', '!', '|'; NULL means "B"); *big is set for the big-endian ones. */
static const char *bkpy_format_body(const Py_buffer *v, int *big)
{
    const char *f = v->format ? v->format : "B";
    *big = (*f == '>' || *f == '!');
    if (*f == '<' || *f == '=' || *f == '@' || *f == '|' || *big)
        f++;
    return f;
}

/* Understand a buffer's struct format: integers of 1, 2, 4 or 8 bytes,
 * bool, or fixed-width bytes ("10s", numpy's S dtype).  Multi-byte
 * big-endian integers are refused (this code reads native little-endian). */
int bkpy_buffer_kind(const Py_buffer *v, bkpy_buf_kind *kind)
{
    int big;
    const char *f = bkpy_format_body(v, &big);
    char c = *f;
    if (c >= '0' && c <= '9') {
        while (*f >= '0' && *f <= '9')
            f++;
        if (*f == 's' && f[1] == '\0') {
            *kind = BKPY_BUF_BYTES;
            return 0;
        }
        return -1;
    }
    if (f[0] == '\0' || f[1] != '\0')
        return -1;
    switch (c) {
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
        *kind = BKPY_BUF_SIGNED;
        break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
        *kind = BKPY_BUF_UNSIGNED;
        break;
    case '?':
        *kind = BKPY_BUF_BOOL;
        return v->itemsize == 1 ? 0 : -1;
    case 's':
        *kind = BKPY_BUF_BYTES;
        return 0;
    default:
        return -1;
    }
    if (v->itemsize != 1 && v->itemsize != 2 && v->itemsize != 4 && v->itemsize != 8)
        return -1;
    if (big && v->itemsize != 1)
        return -1;
    return 0;
}

/* ---- End logic for buffer elements ------------------------------------ */

/* ---- Begin logic for key hashing -------------------------------------- */

static const char bkpy_key_types_msg[] =
    "bloomkit keys must be str, bytes-like (bytes, bytearray, memoryview, "
    "a 1-d buffer of bytes) or int (bool and numpy integer and bool scalars "
    "included), not %.100s; pass key= to map other objects to one of these";

/* Hash an int of any size: 8 bytes for the int64 range, else the minimal
 * two's-complement length that keeps the sign bit. */
static int bkpy_hash_bigint(PyObject *v, const bk_hasher *hs, uint64_t *out)
{
    int overflow;
    long long small = PyLong_AsLongLongAndOverflow(v, &overflow);
    PyObject *nbits_obj, *bytes;
    Py_ssize_t nbits, nbytes;

    if (!overflow) {
        if (small == -1 && PyErr_Occurred())
            return -1;
        *out = bk_key_int64(hs, (int64_t)small);
        return 0;
    }
    nbits_obj = PyObject_CallMethod(v, "bit_length", NULL);
    if (nbits_obj == NULL)
        return -1;
    nbits = PyLong_AsSsize_t(nbits_obj);
    Py_DECREF(nbits_obj);
    if (nbits < 0)
        return -1;
    nbytes = (nbits + 1 + 7) / 8; /* value bits plus the sign bit */
    if (nbytes < 9)
        nbytes = 9;
    bytes = PyObject_CallMethod(v, "to_bytes", "ns", nbytes, "little");
    if (bytes == NULL) {
        /* negative values need signed=True; retry through a kwargs call */
        PyObject *args, *kwargs, *meth;
        PyErr_Clear();
        meth = PyObject_GetAttrString(v, "to_bytes");
        if (meth == NULL)
            return -1;
        args = Py_BuildValue("(ns)", nbytes, "little");
        kwargs = Py_BuildValue("{s:O}", "signed", Py_True);
        bytes = (args && kwargs) ? PyObject_Call(meth, args, kwargs) : NULL;
        Py_XDECREF(args);
        Py_XDECREF(kwargs);
        Py_DECREF(meth);
        if (bytes == NULL)
            return -1;
    }
    *out = bk_key_intbytes(hs, PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    return 0;
}

/* An object with __index__ (and no usable buffer): the int it gives. */
static int bkpy_hash_index(PyObject *key, const bk_hasher *hs, uint64_t *out)
{
    PyObject *v = PyNumber_Index(key);
    int rc;
    if (v == NULL)
        return -1;
    rc = bkpy_hash_bigint(v, hs, out);
    Py_DECREF(v);
    return rc;
}

/* A numpy scalar: an instance of a type derived from numpy.generic.  Found
 * by the type's name so that the C code never needs numpy: numpy 1.x and
 * 2.x both name the base "numpy.generic", and a scalar's MRO is at most
 * six types deep (int64 -> signedinteger -> integer -> number -> generic
 * -> object), walked only for keys that are not str, bytes or int. */
static int bkpy_is_numpy_scalar(PyObject *key)
{
    PyObject *mro = Py_TYPE(key)->tp_mro;
    Py_ssize_t n;
    if (mro == NULL || !PyTuple_Check(mro))
        return 0;
    n = PyTuple_GET_SIZE(mro);
    for (Py_ssize_t i = 1; i < n; i++) {
        const char *name = ((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_name;
        if (name != NULL && strcmp(name, "numpy.generic") == 0)
            return 1;
    }
    return 0;
}

/* Is a buffer's format one-byte raw data: 'B', 'b', 'c', or "1s"/"s"? */
static int bkpy_is_byte_format(const Py_buffer *v)
{
    int big;
    const char *f = bkpy_format_body(v, &big);
    if (f[0] == '1' && f[1] == 's' && f[2] == '\0')
        return 1;
    return (f[0] == 'B' || f[0] == 'b' || f[0] == 'c' || f[0] == 's') && f[1] == '\0';
}

/* Any key that exports a buffer and is not bytes or bytearray.  The rule
 * (docs/keys.md):
 *   - a numpy scalar is the array element it came from: the 0-d view of a
 *     numpy integer or bool scalar goes through bkpy_hash_buffer_item like
 *     a batch element; floating, complex, datetime/timedelta (which export
 *     8 raw bytes as a 1-d 'B' buffer!) and void scalars are refused with
 *     the same TypeError as a Python float;
 *   - any other buffer is one key only when it is 1-d bytes (format 'B',
 *     'b', 'c' or "1s": bytes-like, its raw bytes); a 0-d, n-d or wider-
 *     item buffer (a numpy int array) is refused, pointing to add_many,
 *     instead of being hashed as one key made of its raw bytes.
 * An exporter whose buffer cannot be read (numpy datetime arrays) is an
 * int if its __index__ gives one, else refused like any unsupported type. */
static int bkpy_hash_buffer_key(PyObject *key, const bk_hasher *hs, uint64_t *out,
                                unsigned *seen)
{
    Py_buffer view;
    int scalar = bkpy_is_numpy_scalar(key);
    int rc = -1;

    if (PyObject_GetBuffer(key, &view, PyBUF_RECORDS_RO) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError))
            return -1;
        PyErr_Clear();
        if (PyIndex_Check(key) && bkpy_hash_index(key, hs, out) == 0) {
            *seen |= BKPY_SEEN_INT;
            return 0;
        }
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, bkpy_key_types_msg, Py_TYPE(key)->tp_name);
        return -1;
    }
    if (scalar) {
        bkpy_buf_iter it;
        if (view.ndim == 0 && bkpy_buffer_kind(&view, &it.kind) == 0) {
            it.base = (const char *)view.buf;
            it.n = 1;
            it.stride = it.itemsize = view.itemsize;
            *out = bkpy_hash_buffer_item(&it, 0, hs);
            *seen |= it.kind == BKPY_BUF_BYTES ? BKPY_SEEN_TEXT : BKPY_SEEN_INT;
            rc = 0;
        } else {
            PyErr_Format(PyExc_TypeError, bkpy_key_types_msg, Py_TYPE(key)->tp_name);
        }
    } else if (view.ndim == 1 && view.itemsize == 1 && bkpy_is_byte_format(&view)) {
        Py_ssize_t n = view.shape ? view.shape[0] : view.len;
        if (n > 1 && view.strides != NULL && view.strides[0] != 1) {
            PyErr_Format(PyExc_TypeError,
                         "bloomkit keys that are buffers must be C-contiguous (got %.100s)",
                         Py_TYPE(key)->tp_name);
        } else {
            *out = bk_key_bytes(hs, view.buf, (size_t)n);
            *seen |= BKPY_SEEN_TEXT;
            rc = 0;
        }
    } else {
        PyErr_Format(PyExc_TypeError,
                     "a %d-d %.100s of format '%.20s' is not one bloomkit key: a buffer is "
                     "one key only when it is 1-d bytes (format 'B', 'b' or 'c'); pass an "
                     "array of keys to add_many()/contains_many(), one element as arr.item(), "
                     "or raw bytes as arr.tobytes()",
                     view.ndim, Py_TYPE(key)->tp_name, view.format ? view.format : "B");
    }
    PyBuffer_Release(&view);
    return rc;
}

/* Every key that bkpy_hash_key_fast does not take, in this order: str,
 * bytes and int subclasses (numpy.str_ and numpy.bytes_ are str and bytes
 * subclasses; bool is an int), bytearray, buffers (bkpy_hash_buffer_key:
 * numpy scalars, memoryview, array.array, arrays), objects with __index__;
 * anything else is a TypeError. */
static int bkpy_hash_plain(PyObject *key, const bk_hasher *hs, uint64_t *out, unsigned *seen)
{
    if (PyUnicode_Check(key)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(key, &n);
        if (s == NULL)
            return -1;
        *out = bk_key_bytes(hs, s, (size_t)n);
        *seen |= BKPY_SEEN_TEXT;
        return 0;
    }
    if (PyBytes_Check(key)) {
        *out = bk_key_bytes(hs, PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key));
        *seen |= BKPY_SEEN_TEXT;
        return 0;
    }
    if (PyLong_Check(key)) { /* bool included */
        *seen |= BKPY_SEEN_INT;
        return bkpy_hash_bigint(key, hs, out);
    }
    if (PyByteArray_Check(key)) {
        *out = bk_key_bytes(hs, PyByteArray_AS_STRING(key), (size_t)PyByteArray_GET_SIZE(key));
        *seen |= BKPY_SEEN_TEXT;
        return 0;
    }
    if (PyObject_CheckBuffer(key))
        return bkpy_hash_buffer_key(key, hs, out, seen);
    if (PyIndex_Check(key)) {
        *seen |= BKPY_SEEN_INT;
        return bkpy_hash_index(key, hs, out);
    }
    PyErr_Format(PyExc_TypeError, bkpy_key_types_msg, Py_TYPE(key)->tp_name);
    return -1;
}

int bkpy_hash_key_slow_seen(PyObject *key, PyObject *keyfunc, const bk_hasher *hs,
                            uint64_t *out, unsigned *seen)
{
    if (keyfunc != NULL) {
        PyObject *mapped = PyObject_CallOneArg(keyfunc, key);
        int rc;
        if (mapped == NULL)
            return -1;
        rc = bkpy_hash_plain(mapped, hs, out, seen);
        Py_DECREF(mapped);
        return rc;
    }
    return bkpy_hash_plain(key, hs, out, seen);
}

int bkpy_hash_key_slow(PyObject *key, PyObject *keyfunc, const bk_hasher *hs, uint64_t *out)
{
    unsigned seen = 0;
    return bkpy_hash_key_slow_seen(key, keyfunc, hs, out, &seen);
}

/* ---- End logic for key hashing ---------------------------------------- */
