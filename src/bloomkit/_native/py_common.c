/*
 * py_common.c -- shared CPython glue: exceptions, the key encoding's slow
 * paths, batch iteration and state buffers.  See py_common.h.
 */
#include "py_common.h"

#include <errno.h>
#include <stdio.h>
#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif
#if defined(__linux__)
#include <stdlib.h>
#include <sys/mman.h>
#endif

#include "bk_endian.h"

PyObject *bkpy_FormatError;
PyObject *bkpy_UnsupportedFormatError;
PyObject *bkpy_ChecksumError;
PyObject *bkpy_UncleanFileError;
PyObject *bkpy_IncompatibleFiltersError;
PyObject *bkpy_CapacityError;

static PyObject *bkpy_numpy_frombuffer; /* numpy.frombuffer, imported lazily */
static PyObject *bkpy_numpy_bool;

static int bkpy_import_error(PyObject *errors, const char *name, PyObject **slot)
{
    *slot = PyObject_GetAttrString(errors, name);
    return *slot == NULL ? -1 : 0;
}

int bkpy_common_init(PyObject *module)
{
    PyObject *errors = PyImport_ImportModule("bloomkit.errors");
    int rc = 0;
    (void)module;
    if (errors == NULL)
        return -1;
    if (bkpy_import_error(errors, "FormatError", &bkpy_FormatError) < 0 ||
        bkpy_import_error(errors, "UnsupportedFormatError", &bkpy_UnsupportedFormatError) < 0 ||
        bkpy_import_error(errors, "ChecksumError", &bkpy_ChecksumError) < 0 ||
        bkpy_import_error(errors, "UncleanFileError", &bkpy_UncleanFileError) < 0 ||
        bkpy_import_error(errors, "IncompatibleFiltersError", &bkpy_IncompatibleFiltersError) < 0 ||
        bkpy_import_error(errors, "CapacityError", &bkpy_CapacityError) < 0)
        rc = -1;
    Py_DECREF(errors);
    return rc;
}

void bkpy_raise_nomem(uint64_t nbytes, const char *what, const char *advice)
{
    /* PyErr_Format has no %f: format the size here. */
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    char human[32], msg[512];
    double size = (double)nbytes;
    int u = -1;
    while (size >= 1024.0 && u < 5) {
        size /= 1024.0;
        u++;
    }
    if (u < 0)
        snprintf(human, sizeof human, "%llu B", (unsigned long long)nbytes);
    else
        snprintf(human, sizeof human, "%.1f %s", size, units[u]);
    snprintf(msg, sizeof msg, "cannot allocate %llu bytes (%s) for %s; %s",
             (unsigned long long)nbytes, human, what, advice);
    PyErr_SetString(PyExc_MemoryError, msg);
}

void bkpy_raise_rc(bk_rc rc, const char *reason, const bk_header *h)
{
    switch (rc) {
    case BK_ERR_UNSUPPORTED:
        if (h != NULL && h->version_major != BK_VERSION_MAJOR)
            PyErr_Format(bkpy_UnsupportedFormatError,
                         "unsupported bloomkit format version %u.%u (this version reads %d.x)",
                         (unsigned)h->version_major, (unsigned)h->version_minor,
                         BK_VERSION_MAJOR);
        else if (h != NULL)
            PyErr_Format(bkpy_UnsupportedFormatError, "%s (kind %u, flags 0x%04x, hash %u)",
                         reason, (unsigned)h->kind, (unsigned)h->flags, (unsigned)h->hash_alg);
        else
            PyErr_SetString(bkpy_UnsupportedFormatError, reason);
        break;
    case BK_ERR_CHECKSUM:
        PyErr_SetString(bkpy_ChecksumError, reason);
        break;
    case BK_ERR_UNCLEAN:
        PyErr_SetString(bkpy_UncleanFileError, reason);
        break;
    case BK_ERR_NOMEM:
        PyErr_Format(PyExc_MemoryError, "out of memory: %s; free memory or use a smaller "
                     "structure", reason != NULL ? reason : "allocation failed");
        break;
    case BK_ERR_CAPACITY:
        PyErr_SetString(bkpy_CapacityError, reason);
        break;
    case BK_ERR_INCOMPATIBLE:
        PyErr_SetString(bkpy_IncompatibleFiltersError, reason);
        break;
    case BK_ERR_ARG:
        PyErr_SetString(PyExc_ValueError, reason);
        break;
    case BK_ERR_NOTFOUND:
        PyErr_SetString(PyExc_KeyError, reason);
        break;
    default:
        PyErr_Format(bkpy_FormatError, "invalid bloomkit data: %s", reason);
        break;
    }
}

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
typedef enum { BKPY_BUF_SIGNED, BKPY_BUF_UNSIGNED, BKPY_BUF_BOOL, BKPY_BUF_BYTES } bkpy_buf_kind;

typedef struct {
    const char *base;
    Py_ssize_t n, stride, itemsize;
    bkpy_buf_kind kind;
} bkpy_buf_iter;

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
static int bkpy_buffer_kind(const Py_buffer *v, bkpy_buf_kind *kind)
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

static uint64_t bkpy_hash_buffer_item(const bkpy_buf_iter *it, Py_ssize_t i,
                                      const bk_hasher *hs)
{
    const char *p = it->base + i * it->stride;
    switch (it->kind) {
    case BKPY_BUF_SIGNED: {
        int64_t v;
        switch (it->itemsize) {
        case 1: { int8_t x; memcpy(&x, p, 1); v = x; break; }
        case 2: { int16_t x; memcpy(&x, p, 2); v = x; break; }
        case 4: { int32_t x; memcpy(&x, p, 4); v = x; break; }
        default: { int64_t x; memcpy(&x, p, 8); v = x; break; }
        }
        return bk_fastkey_int64(hs, v);
    }
    case BKPY_BUF_UNSIGNED: {
        uint64_t v;
        switch (it->itemsize) {
        case 1: { uint8_t x; memcpy(&x, p, 1); v = x; break; }
        case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
        case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
        default: { uint64_t x; memcpy(&x, p, 8); v = x; break; }
        }
        return bk_fastkey_uint64(hs, v);
    }
    case BKPY_BUF_BOOL:
        /* A bool array viewed from uint8 may hold 2..255; numpy reads every
         * non-zero byte as True, and True is the int 1. */
        return bk_fastkey_int64(hs, *p != 0);
    default: {
        /* numpy's bytes_ drops trailing NULs: so do we, so that arr[i] and
         * the array itself give the same keys. */
        Py_ssize_t n = it->itemsize;
        while (n > 0 && p[n - 1] == '\0')
            n--;
        return bk_fastkey_bytes(hs, p, (size_t)n);
    }
    }
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
static int bkpy_hash_buffer_key(PyObject *key, const bk_hasher *hs, uint64_t *out)
{
    Py_buffer view;
    int scalar = bkpy_is_numpy_scalar(key);
    int rc = -1;

    if (PyObject_GetBuffer(key, &view, PyBUF_RECORDS_RO) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError))
            return -1;
        PyErr_Clear();
        if (PyIndex_Check(key) && bkpy_hash_index(key, hs, out) == 0)
            return 0;
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
static int bkpy_hash_plain(PyObject *key, const bk_hasher *hs, uint64_t *out)
{
    if (PyUnicode_Check(key)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(key, &n);
        if (s == NULL)
            return -1;
        *out = bk_key_bytes(hs, s, (size_t)n);
        return 0;
    }
    if (PyBytes_Check(key)) {
        *out = bk_key_bytes(hs, PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key));
        return 0;
    }
    if (PyLong_Check(key)) /* bool included */
        return bkpy_hash_bigint(key, hs, out);
    if (PyByteArray_Check(key)) {
        *out = bk_key_bytes(hs, PyByteArray_AS_STRING(key), (size_t)PyByteArray_GET_SIZE(key));
        return 0;
    }
    if (PyObject_CheckBuffer(key))
        return bkpy_hash_buffer_key(key, hs, out);
    if (PyIndex_Check(key))
        return bkpy_hash_index(key, hs, out);
    PyErr_Format(PyExc_TypeError, bkpy_key_types_msg, Py_TYPE(key)->tp_name);
    return -1;
}

int bkpy_hash_key_slow(PyObject *key, PyObject *keyfunc, const bk_hasher *hs, uint64_t *out)
{
    if (keyfunc != NULL) {
        PyObject *mapped = PyObject_CallOneArg(keyfunc, key);
        int rc;
        if (mapped == NULL)
            return -1;
        rc = bkpy_hash_plain(mapped, hs, out);
        Py_DECREF(mapped);
        return rc;
    }
    return bkpy_hash_plain(key, hs, out);
}

/* ---- End logic for key hashing ---------------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

static int bkpy_is_single_key(PyObject *keys)
{
    return PyUnicode_Check(keys) || PyBytes_Check(keys) || PyByteArray_Check(keys);
}

/* Lists: how many keys ahead the hashing loop prefetches the key objects.
 * The objects of a large list are out of cache (a 20-char str takes 80
 * bytes, an int 32-48), and the hardware prefetcher learns their addresses
 * only as the loop reads the list's pointers.  16 keys is ~200 ns ahead at
 * ~12 ns a key; 8 measured slower, 32 and 64 the same.  With the tight
 * loop below (Intel Xeon guest, 10^6 keys, blocked filter, ns/key):
 * list-of-str add_many 17.0 -> 13.9, contains_many 16.4 -> 13.5;
 * list-of-int add_many 14.4 -> 11.1 (docs/performance.md). */
#define BKPY_LIST_AHEAD 16

/* A key's header and, for a str, its first characters (compact ASCII data
 * starts 48 bytes in): the object's first two cache lines. */
static inline void bkpy_prefetch_key(const PyObject *key)
{
    bk_prefetch_r((const char *)key);
    bk_prefetch_r((const char *)key + 64);
}

/* bkpy_for_each_chunk, pinning `pin` (when not NULL) around the GIL-free
 * loop over a buffer. */
static int bkpy_chunks(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                       bkpy_chunk_fn fn, bkpy_size_fn size_fn, void *ctx, int nogil,
                       bkpy_state *pin, bkpy_batch_info *info)
{
    uint64_t hbuf[BKPY_CHUNK];
    size_t fill = 0, offset = 0;

    info->count = 0;
    info->from_buffer = 0;
    if (bkpy_is_single_key(keys)) {
        PyErr_Format(PyExc_TypeError,
                     "expected an iterable of keys, got a single %.50s; use add()/`in` "
                     "for one key, or wrap it in a list",
                     Py_TYPE(keys)->tp_name);
        return -1;
    }
    /* Arrow string/binary columns: hashed as bytes, without the GIL.  (With
     * a key= function a ByteKeys is iterated below, as bytes objects.) */
    if (keyfunc == NULL && bkpy_bytekeys_check(keys)) {
        Py_ssize_t total = bkpy_bytekeys_len(keys);
        PyThreadState *ts;
        info->from_buffer = 1;
        info->count = total;
        if (size_fn != NULL && size_fn(ctx, total, 1) < 0)
            return -1;
        /* The last thing before the GIL goes (see py_common.h). */
        if (nogil && pin != NULL && bkpy_state_pin(pin) < 0)
            return -1;
        ts = nogil ? PyEval_SaveThread() : NULL;
        for (Py_ssize_t i = 0; i < total; i += BKPY_CHUNK) {
            size_t n = (size_t)(total - i < BKPY_CHUNK ? total - i : BKPY_CHUNK);
            bkpy_bytekeys_hash(keys, i, n, hs, hbuf);
            fn(ctx, hbuf, n, (size_t)i);
        }
        if (ts != NULL)
            PyEval_RestoreThread(ts);
        if (nogil && pin != NULL)
            bkpy_state_unpin(pin);
        return 0;
    }
    /* 1-d buffers of ints, bools or fixed-width bytes (numpy arrays). */
    if (keyfunc == NULL && PyObject_CheckBuffer(keys)) {
        Py_buffer view;
        bkpy_buf_iter it;
        if (PyObject_GetBuffer(keys, &view, PyBUF_RECORDS_RO) < 0)
            return -1;
        if (view.ndim != 1 || bkpy_buffer_kind(&view, &it.kind) < 0) {
            PyErr_Format(PyExc_TypeError,
                         "buffer keys must be a 1-d array of integers, bools or fixed-width "
                         "bytes (got format '%.20s', ndim %d); convert it first",
                         view.format ? view.format : "B", view.ndim);
            PyBuffer_Release(&view);
            return -1;
        }
        it.base = (const char *)view.buf;
        it.n = view.shape ? view.shape[0] : view.len / view.itemsize;
        it.stride = view.strides ? view.strides[0] : view.itemsize;
        it.itemsize = view.itemsize;
        info->from_buffer = 1;
        info->count = it.n;
        if (size_fn != NULL && size_fn(ctx, it.n, 1) < 0) {
            PyBuffer_Release(&view);
            return -1;
        }
        /* The last thing before the GIL goes: nothing runs Python code
         * between the pin and the loop (see py_common.h). */
        if (nogil && pin != NULL && bkpy_state_pin(pin) < 0) {
            PyBuffer_Release(&view);
            return -1;
        }
        {
            PyThreadState *ts = nogil ? PyEval_SaveThread() : NULL;
            /* int64 (numpy's default integer) unswitched: the general loop
             * re-dispatches on kind and itemsize for every element. */
            int is_i64 = it.kind == BKPY_BUF_SIGNED && it.itemsize == 8;
            for (Py_ssize_t i = 0; i < it.n; i += BKPY_CHUNK) {
                size_t n = (size_t)(it.n - i < BKPY_CHUNK ? it.n - i : BKPY_CHUNK);
                if (is_i64) {
                    const char *p = it.base + i * it.stride;
                    for (size_t j = 0; j < n; j++, p += it.stride) {
                        int64_t x;
                        memcpy(&x, p, 8);
                        hbuf[j] = bk_fastkey_int64(hs, x);
                    }
                } else {
                    for (size_t j = 0; j < n; j++)
                        hbuf[j] = bkpy_hash_buffer_item(&it, i + (Py_ssize_t)j, hs);
                }
                fn(ctx, hbuf, n, (size_t)i);
            }
            if (ts != NULL)
                PyEval_RestoreThread(ts);
        }
        if (nogil && pin != NULL)
            bkpy_state_unpin(pin);
        PyBuffer_Release(&view);
        return 0;
    }
    if (PyList_CheckExact(keys) || PyTuple_CheckExact(keys)) {
        Py_ssize_t i = 0;
        if (size_fn != NULL && size_fn(ctx, PySequence_Fast_GET_SIZE(keys), 0) < 0)
            return -1;
        for (;;) {
            /* Size and items are read again after every key that may run
             * Python code (a key= call, __index__, a buffer exporter), which
             * may mutate the list; the inline keys run none. */
            Py_ssize_t n = PySequence_Fast_GET_SIZE(keys), end;
            PyObject **items = PySequence_Fast_ITEMS(keys);
            PyObject *key;
            int rc;
            if (i >= n)
                break;
            end = n - i < (Py_ssize_t)(BKPY_CHUNK - fill) ? n : i + (Py_ssize_t)(BKPY_CHUNK - fill);
            if (keyfunc == NULL) {
                for (; i < end; i++) {
                    if (i + BKPY_LIST_AHEAD < n)
                        bkpy_prefetch_key(items[i + BKPY_LIST_AHEAD]);
                    if (!bkpy_hash_key_fast(items[i], hs, &hbuf[fill]))
                        break;
                    fill++;
                }
            }
            if (i < end) {
                key = items[i];
                Py_INCREF(key);   /* the list may drop it meanwhile */
                rc = bkpy_hash_key_slow(key, keyfunc, hs, &hbuf[fill]);
                Py_DECREF(key);
                if (rc < 0) {
                    info->count = i;
                    return -1;
                }
                fill++;
                i++;
            }
            if (fill == BKPY_CHUNK) {
                fn(ctx, hbuf, fill, offset);
                offset += fill;
                fill = 0;
            }
        }
        info->count = i;
    } else {
        PyObject *iter = PyObject_GetIter(keys), *item;
        if (iter == NULL)
            return -1;
        if (size_fn != NULL && size_fn(ctx, -1, 0) < 0) {
            Py_DECREF(iter);
            return -1;
        }
        while ((item = PyIter_Next(iter)) != NULL) {
            int rc = bkpy_hash_key(item, keyfunc, hs, &hbuf[fill]);
            Py_DECREF(item);
            if (rc < 0) {
                Py_DECREF(iter);
                return -1;
            }
            if (++fill == BKPY_CHUNK) {
                if (size_fn != NULL && size_fn(ctx, -(Py_ssize_t)(offset + fill), 0) < 0) {
                    Py_DECREF(iter);
                    return -1;
                }
                fn(ctx, hbuf, fill, offset);
                offset += fill;
                fill = 0;
            }
            info->count++;
        }
        Py_DECREF(iter);
        if (PyErr_Occurred())
            return -1;
    }
    if (fill > 0) {
        if (size_fn != NULL && size_fn(ctx, -(Py_ssize_t)(offset + fill), 0) < 0)
            return -1;
        fn(ctx, hbuf, fill, offset);
    }
    return 0;
}

int bkpy_for_each_chunk(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                        bkpy_chunk_fn fn, bkpy_size_fn size_fn, void *ctx, int nogil,
                        bkpy_batch_info *info)
{
    return bkpy_chunks(keys, keyfunc, hs, fn, size_fn, ctx, nogil, NULL, info);
}

int bkpy_for_each_chunk_pinned(bkpy_state *st, PyObject *keys, bkpy_chunk_fn fn,
                               bkpy_size_fn size_fn, void *ctx, int nogil,
                               bkpy_batch_info *info)
{
    return bkpy_chunks(keys, st->keyfunc, &st->hasher, fn, size_fn, ctx, nogil, st, info);
}

/* size_fn protocol for bkpy_bools: n >= 0 is the exact length known up
 * front; n < 0 means "at least -n results will be written" (iterators). */
int bkpy_bools_size(void *ctx, Py_ssize_t n, int from_buffer)
{
    bkpy_bools *b = (bkpy_bools *)ctx;
    Py_ssize_t need = n >= 0 ? n : -n;
    if (from_buffer) {
        b->bytearray = PyByteArray_FromStringAndSize(NULL, need);
        if (b->bytearray == NULL)
            return -1;
        b->out = (uint8_t *)PyByteArray_AS_STRING(b->bytearray);
        b->cap = b->len = need;
        return 0;
    }
    if (need > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 256;
        uint8_t *p;
        while (cap < need)
            cap *= 2;
        p = (uint8_t *)PyMem_Realloc(b->out, (size_t)cap);
        if (p == NULL) {
            bkpy_raise_nomem((uint64_t)cap, "the results of a batch query",
                             "query fewer keys per call");
            return -1;
        }
        b->out = p;
        b->cap = cap;
    }
    if (need > b->len)
        b->len = need;
    return 0;
}

uint8_t *bkpy_bools_reserve(bkpy_bools *b, size_t offset, size_t n)
{
    (void)n;
    return b->out + offset;
}

/* Debug builds count every INCREF (Py_REF_DEBUG): keep them per item. */
#if PY_VERSION_HEX < 0x030C0000 && !defined(Py_REF_DEBUG)
#define BKPY_BULK_BOOL_REFS 1
#else
#define BKPY_BULK_BOOL_REFS 0
#endif

PyObject *bkpy_bools_finish(bkpy_bools *b, int from_buffer)
{
    PyObject *res;
    if (from_buffer) {
        if (bkpy_numpy_frombuffer == NULL) {
            PyObject *np = PyImport_ImportModule("numpy");
            if (np == NULL) {
                PyErr_Clear();
                Py_INCREF(b->bytearray);
                return b->bytearray;
            }
            bkpy_numpy_frombuffer = PyObject_GetAttrString(np, "frombuffer");
            bkpy_numpy_bool = PyObject_GetAttrString(np, "bool_");
            Py_DECREF(np);
            if (bkpy_numpy_frombuffer == NULL || bkpy_numpy_bool == NULL)
                return NULL;
        }
        res = PyObject_CallFunctionObjArgs(bkpy_numpy_frombuffer, b->bytearray,
                                           bkpy_numpy_bool, NULL);
        return res;
    }
    res = PyList_New(b->len);
    if (res == NULL)
        return NULL;
    {
        /* Branch-free (answers are close to random for a mixed batch), and
         * on 3.11 the references are added once at the end: an INCREF per
         * item is a chain of dependent read-modify-writes of one counter. */
        PyObject *const pick[2] = {Py_False, Py_True};
        Py_ssize_t ntrue = 0;
        for (Py_ssize_t i = 0; i < b->len; i++) {
            uint8_t o = b->out[i];
            ntrue += o;
            PyList_SET_ITEM(res, i, pick[o]);
#if !BKPY_BULK_BOOL_REFS
            Py_INCREF(pick[o]);   /* 3.12+: immortal, no write */
#endif
        }
#if BKPY_BULK_BOOL_REFS
        Py_SET_REFCNT(Py_True, Py_REFCNT(Py_True) + ntrue);
        Py_SET_REFCNT(Py_False, Py_REFCNT(Py_False) + (b->len - ntrue));
#else
        (void)ntrue;
#endif
    }
    return res;
}

void bkpy_bools_clear(bkpy_bools *b)
{
    if (b->bytearray == NULL)
        PyMem_Free(b->out);
    Py_CLEAR(b->bytearray);
    b->out = NULL;
    b->len = b->cap = 0;
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for state buffers ------------------------------------ */

/* What a failed state allocation tells the user. */
static const char bkpy_state_nomem_advice[] =
    "use a smaller capacity or a larger error rate, free memory, or build it in a "
    "memory-mapped file with bloomkit.create(path, capacity, error_rate, kind=...), "
    "which needs no memory of that size";

/* Transparent huge pages for large states (issue #19).  A probe of a large
 * filter is one random line read, and with 4 KiB pages it is also a TLB
 * miss: benchmarks/line_probe.c measured independent random reads of a
 * 1.2 GB set at 37 ns with 4 KiB pages and 12 ns with 2 MiB pages on the
 * 2-core test machine (loaded), 16 against 14 ns at 124 MB.  Most kernels
 * ship THP as "madvise", so the state asks for it.  Only the 2 MiB-aligned
 * interior of the calloc'd block can be backed by huge pages (the edges,
 * under 4 MiB, keep 4 KiB pages); pages are still allocated on first
 * touch, so an untouched state costs nothing (a huge page is 2 MiB of it
 * at once).  Below BKPY_THP_MIN the TLB covers the state anyway.
 * BLOOMKIT_NO_THP=1 in the environment turns it off (for measurement). */
#define BKPY_THP_MIN ((uint64_t)32 << 20)
#define BKPY_THP_PAGE ((uintptr_t)2 << 20)

static void bkpy_state_advise(void *raw, uint64_t len)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const char *env;
    uintptr_t lo, hi;
    if (len < BKPY_THP_MIN)
        return;
    env = getenv("BLOOMKIT_NO_THP");
    if (env != NULL && env[0] != '\0' && !(env[0] == '0' && env[1] == '\0'))
        return;
    lo = ((uintptr_t)raw + BKPY_THP_PAGE - 1) & ~(BKPY_THP_PAGE - 1);
    hi = ((uintptr_t)raw + (uintptr_t)len) & ~(BKPY_THP_PAGE - 1);
    if (hi > lo)
        (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE); /* a hint: errors ignored */
#else
    (void)raw;
    (void)len;
#endif
}

int bkpy_state_alloc(bkpy_state *st, uint64_t len)
{
    void *raw;
    if (len > (uint64_t)PY_SSIZE_T_MAX - BK_ALIGN) {
        bkpy_raise_nomem(len, "the structure's state (more than this platform can address)",
                         bkpy_state_nomem_advice);
        return -1;
    }
    /* calloc: untouched zero pages cost nothing until written. */
    raw = calloc(1, (size_t)len + BK_ALIGN);
    if (raw == NULL) {
        bkpy_raise_nomem(len, "the structure's state", bkpy_state_nomem_advice);
        return -1;
    }
    bkpy_state_advise(raw, len);
    st->alloc = raw;
    st->buf = (uint8_t *)raw + (BK_ALIGN - ((uintptr_t)raw % BK_ALIGN)) % BK_ALIGN;
    st->len = len;
    st->writable = 1;
    return 0;
}

/* Lazily allocate *lock; -1 with MemoryError. */
static int bkpy_lock_ready(PyThread_type_lock *lock)
{
    if (*lock == NULL && (*lock = PyThread_allocate_lock()) == NULL) {
        bkpy_raise_nomem(sizeof(void *), "a lock", "free memory");
        return -1;
    }
    return 0;
}

/* Take lock (GIL held): at once if it is free, else wait for it with the
 * GIL released. */
static void bkpy_lock_take(PyThread_type_lock lock)
{
    if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

/* Pass a gate (GIL held): wait while a waiter holds it. */
static void bkpy_gate_pass(PyThread_type_lock gate)
{
    bkpy_lock_take(gate);
    PyThread_release_lock(gate);
}

int bkpy_state_begin_batch(bkpy_state *st)
{
    if (bkpy_lock_ready(&st->batch_lock) < 0 || bkpy_lock_ready(&st->batch_gate) < 0)
        return -1;
    /* A thread that runs add_many in a loop would otherwise retake
     * batch_lock before a waiter wakes up (a union waited minutes). */
    bkpy_gate_pass(st->batch_gate);
    bkpy_lock_take(st->batch_lock);
    st->nogil_writers++;
    return 0;
}

void bkpy_state_end_batch(bkpy_state *st)
{
    st->nogil_writers--;
    PyThread_release_lock(st->batch_lock);
}

void bkpy_state_wait_batches_slow(bkpy_state *st)
{
    /* nogil_writers > 0: both locks exist (bkpy_state_begin_batch).  Loop:
     * with the GIL back, a batch that passed the gate before us may run. */
    bkpy_lock_take(st->batch_gate);
    while (st->nogil_writers > 0) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(st->batch_lock, WAIT_LOCK);
        PyThread_release_lock(st->batch_lock);
        Py_END_ALLOW_THREADS
    }
    PyThread_release_lock(st->batch_gate);
}

/* Pins (py_common.h).  pin_lock is held exactly while pins > 0: the first
 * pin takes it and the last unpin gives it back (a PyThread lock may be
 * released by another thread than the one that took it, like
 * threading.Lock), so a waiter sleeps on it instead of polling.  pin_gate
 * is held by a waiter for the whole of its wait: a new pin passes through
 * it first, so batches that keep overlapping in other threads cannot hold
 * pins above zero forever. */
int bkpy_state_pin(bkpy_state *st)
{
    if (bkpy_lock_ready(&st->pin_lock) < 0 || bkpy_lock_ready(&st->pin_gate) < 0)
        return -1;
    bkpy_gate_pass(st->pin_gate);
    /* With the GIL held nobody else pins or unpins now.  pins == 0 means
     * pin_lock is free: a waiter takes it only while it holds pin_gate,
     * and releases it before the gate. */
    if (st->pins++ == 0)
        bkpy_lock_take(st->pin_lock);
    return 0;
}

void bkpy_state_unpin(bkpy_state *st)
{
    if (--st->pins == 0)
        PyThread_release_lock(st->pin_lock);
}

void bkpy_state_wait_pins_slow(bkpy_state *st)
{
    /* pins > 0: both locks exist (bkpy_state_pin allocated them). */
    bkpy_lock_take(st->pin_gate);
    while (st->pins > 0) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(st->pin_lock, WAIT_LOCK);
        PyThread_release_lock(st->pin_lock);
        Py_END_ALLOW_THREADS
    }
    PyThread_release_lock(st->pin_gate);
}

void bkpy_state_release(bkpy_state *st)
{
    PyThread_type_lock *locks[4] = {&st->batch_lock, &st->batch_gate, &st->pin_lock,
                                    &st->pin_gate};
    for (int i = 0; i < 4; i++)
        if (*locks[i] != NULL) {
            PyThread_free_lock(*locks[i]);
            *locks[i] = NULL;
        }
    if (st->alloc != NULL)
        free(st->alloc);
    st->alloc = NULL;
    if (st->view.obj != NULL)
        PyBuffer_Release(&st->view);
    st->buf = NULL;
    st->len = 0;
    Py_CLEAR(st->keyfunc);
}

int bkpy_parse_secret(PyObject *secret, uint8_t out16[16], int *has)
{
    Py_buffer v;
    *has = 0;
    if (secret == NULL || secret == Py_None)
        return 0;
    if (PyUnicode_Check(secret) || PyObject_GetBuffer(secret, &v, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "secret must be 16 bytes (bytes-like), e.g. os.urandom(16)");
        return -1;
    }
    if (v.len != 16) {
        PyBuffer_Release(&v);
        PyErr_Format(PyExc_ValueError, "secret must be exactly 16 bytes, got %zd", v.len);
        return -1;
    }
    memcpy(out16, v.buf, 16);
    PyBuffer_Release(&v);
    *has = 1;
    return 0;
}

int bkpy_state_set_hasher(bkpy_state *st, const bk_header *h, PyObject *secret)
{
    uint8_t key[16];
    int has;
    if (bkpy_parse_secret(secret, key, &has) < 0)
        return -1;
    if ((h->flags & BK_FLAG_KEYED) && !has) {
        PyErr_SetString(PyExc_ValueError,
                        "this filter is keyed (SipHash): pass the secret it was built with "
                        "(secret=...); the secret is never stored in the file");
        return -1;
    }
    if (!(h->flags & BK_FLAG_KEYED) && has) {
        PyErr_SetString(PyExc_ValueError, "secret given, but this filter is not keyed");
        return -1;
    }
    bk_hasher_init(&st->hasher, h->seed, has ? key : NULL);
    if (has && bk_hasher_key_check(&st->hasher) != h->key_check) {
        PyErr_SetString(PyExc_ValueError, "wrong secret for this keyed filter");
        return -1;
    }
    return 0;
}

int bkpy_state_load(bkpy_state *st, PyObject *data, int copy, int writable, int checks,
                    unsigned kind_mask, PyObject *secret, bk_header *h)
{
    Py_buffer v;
    const char *reason = "invalid";
    bk_rc rc;

    if (PyUnicode_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "state must be bytes-like, not str");
        return -1;
    }
    if (PyObject_GetBuffer(data, &v, (writable && !copy) ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    rc = bk_format_validate((const uint8_t *)v.buf, (uint64_t)v.len, checks, h, &reason);
    if (rc != BK_OK) {
        bkpy_raise_rc(rc, reason, h);
        PyBuffer_Release(&v);
        return -1;
    }
    if (!(kind_mask & (1u << h->kind))) {
        PyErr_Format(bkpy_FormatError, "this data holds a %s, not the expected structure "
                     "(use bloomkit.loads() to load any kind)", bk_kind_name(h->kind));
        PyBuffer_Release(&v);
        return -1;
    }
    if (bkpy_state_set_hasher(st, h, secret) < 0) {
        PyBuffer_Release(&v);
        return -1;
    }
    st->kind = h->kind;
    if (copy) {
        if (bkpy_state_alloc(st, (uint64_t)v.len) < 0) {
            PyBuffer_Release(&v);
            return -1;
        }
        memcpy(st->buf, v.buf, (size_t)v.len);
        /* an owned copy is a clean in-memory filter */
        bk_store_u16le(st->buf + BK_OFF_FLAGS,
                       (uint16_t)(bk_load_u16le(st->buf + BK_OFF_FLAGS) & ~BK_FLAG_DIRTY));
        PyBuffer_Release(&v);
    } else {
        if (((uintptr_t)v.buf % 8) != 0) {
            PyErr_SetString(PyExc_ValueError, "a borrowed state buffer must be 8-byte aligned");
            PyBuffer_Release(&v);
            return -1;
        }
        st->view = v;
        st->buf = (uint8_t *)v.buf;
        st->len = (uint64_t)v.len;
        st->writable = writable;
    }
    return 0;
}

PyObject *bkpy_state_to_bytes(const bkpy_state *st)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)st->len);
    uint8_t *p;
    if (out == NULL) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
            bkpy_raise_nomem(st->len, "a copy of the state (to_bytes)",
                             "save it to a file with bloomkit.save(obj, path) or obj.save(path), "
                             "which writes it through a small buffer instead of a copy");
        }
        return NULL;
    }
    p = (uint8_t *)PyBytes_AS_STRING(out);
    memcpy(p, st->buf, (size_t)st->len);
    bk_store_u16le(p + BK_OFF_FLAGS, (uint16_t)(bk_load_u16le(p + BK_OFF_FLAGS) & ~BK_FLAG_DIRTY));
    bk_format_seal(p, st->len);
    return out;
}

int bkpy_state_check_writable(const bkpy_state *st)
{
    if (!st->writable) {
        PyErr_SetString(PyExc_TypeError, "this filter is read-only (opened with mode='r')");
        return -1;
    }
    return 0;
}

/* ---- End logic for state buffers -------------------------------------- */

/* ---- Begin logic for the common object contract ----------------------- */

#define BKPY_ST(o) (&((bkpy_obj *)(o))->st)

int bkpy_parse_seed(PyObject *obj, uint64_t *seed)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "seed must be an int in [0, 2**64), not %.50s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *seed = PyLong_AsUnsignedLongLong(obj);
    if (*seed == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "seed must be an int in [0, 2**64)");
        return -1;
    }
    return 0;
}

int bkpy_check_keyfunc(PyObject *key)
{
    if (key != NULL && key != Py_None && !PyCallable_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "key must be a callable (or None)");
        return -1;
    }
    return 0;
}

int bkpy_parse_ctor(PyObject *seed_obj, PyObject *secret, PyObject *key, bkpy_ctor_args *a)
{
    a->seed = 0;
    if (seed_obj != NULL && bkpy_parse_seed(seed_obj, &a->seed) < 0)
        return -1;
    if (bkpy_check_keyfunc(key) < 0 || bkpy_parse_secret(secret, a->secret16, &a->keyed) < 0)
        return -1;
    return 0;
}

void *bkpy_obj_new(PyTypeObject *type, uint64_t len, const bkpy_ctor_args *a, PyObject *key)
{
    PyObject *self = type->tp_alloc(type, 0);
    bkpy_state *st;
    if (self == NULL)
        return NULL;
    st = BKPY_ST(self);
    if (bkpy_state_alloc(st, len) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    bk_hasher_init(&st->hasher, a->seed, a->keyed ? a->secret16 : NULL);
    if (key != NULL && key != Py_None) {
        Py_INCREF(key);
        st->keyfunc = key;
    }
    return self;
}

void *bkpy_obj_copy(PyTypeObject *type, const bkpy_state *src)
{
    PyObject *self = type->tp_alloc(type, 0);
    bkpy_state *st;
    if (self == NULL)
        return NULL;
    st = BKPY_ST(self);
    if (bkpy_state_alloc(st, src->len) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    memcpy(st->buf, src->buf, (size_t)src->len);
    bk_store_u16le(st->buf + BK_OFF_FLAGS,
                   (uint16_t)(bk_load_u16le(st->buf + BK_OFF_FLAGS) & ~BK_FLAG_DIRTY));
    if (src->kind != 0) {
        /* A loaded state may be a map that another process rewrote since
         * it was validated (RELIABILITY R32), or the frozen copy of one
         * left by a close: the copy's attach reads its header again, so
         * the copy is validated like a load (O(1): no checksum, no deep
         * scan) and must still be the kind that was opened. */
        bk_header h;
        const char *reason = "invalid";
        bk_rc rc = bk_format_validate(st->buf, st->len, BK_ALLOW_DIRTY, &h, &reason);
        if (rc == BK_OK && h.kind != src->kind) {
            rc = BK_ERR_FORMAT;
            reason = "the kind field changed";
        }
        if (rc != BK_OK) {
            PyErr_Format(bkpy_FormatError,
                         "cannot copy: the mapped state was rewritten since it was opened "
                         "(another writer?): %s", reason);
            Py_DECREF(self);
            return NULL;
        }
    }
    st->kind = src->kind;
    st->hasher = src->hasher;
    st->keyfunc = src->keyfunc;
    Py_XINCREF(st->keyfunc);
    return self;
}

int bkpy_check_same_hashing(const bkpy_state *a, const bkpy_state *b, const char *op,
                            const char *noun)
{
    uint64_t sa = bk_load_u64le(a->buf + BK_OFF_SEED), sb = bk_load_u64le(b->buf + BK_OFF_SEED);
    if (sa != sb) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s %s with different seeds: %llu vs %llu", op, noun,
                     (unsigned long long)sa, (unsigned long long)sb);
        return -1;
    }
    if (bk_load_u16le(a->buf + BK_OFF_HASH) != bk_load_u16le(b->buf + BK_OFF_HASH) ||
        bk_load_u64le(a->buf + BK_OFF_KEY_CHECK) != bk_load_u64le(b->buf + BK_OFF_KEY_CHECK)) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s %s with different hashing (keyed vs unkeyed, or different "
                     "secrets)", op, noun);
        return -1;
    }
    return 0;
}

void bkpy_obj_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (type->tp_weaklistoffset != 0 &&
        *(PyObject **)((char *)self + type->tp_weaklistoffset) != NULL)
        PyObject_ClearWeakRefs(self);
    bkpy_state_release(BKPY_ST(self));
    type->tp_free(self);
}

int bkpy_obj_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(BKPY_ST(self)->keyfunc);
    Py_VISIT(BKPY_ST(self)->view.obj);
    return 0;
}

int bkpy_obj_clear(PyObject *self)
{
    Py_CLEAR(BKPY_ST(self)->keyfunc);
    return 0;
}

PyObject *bkpy_obj_to_bytes(PyObject *self, PyObject *unused)
{
    (void)unused;
    return bkpy_state_to_bytes(BKPY_ST(self));
}

/* ---- Begin logic for streaming a state to a file ---------------------- */

/* Bytes copied, hashed and written per step by _write_state.  The copy is
 * what makes the checksum exactly the checksum of the bytes written even
 * when other processes write into a shared map meanwhile; 1 MiB makes the
 * system call cost (~1 us) negligible against the copy (~100 us) and is
 * the whole extra memory of a save, whatever the state's size. */
#define BKPY_WRITE_CHUNK ((size_t)1 << 20)

static int bkpy_write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
#ifdef _WIN32
        int w = _write(fd, p, (unsigned)(n > 0x40000000u ? 0x40000000u : n));
#else
        ssize_t w = write(fd, p, n);
#endif
        if (w < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0)
                    return -1;
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The whole write holds the GIL (as to_bytes' copy did): every in-process
 * writer of every structure, GIL-free batches included (waited for first),
 * then sees the save as one atomic step, so the file is one consistent
 * state.  Releasing the GIL between chunks would let another thread move
 * entries (a cuckoo kick, a quotient shift) from a chunk not yet written
 * into one already written, losing a key that was added before the save;
 * only the GIL-free batch writers honour the batch lock, so the GIL is the
 * one lock every writer takes.  The price: other threads wait for the
 * write (disk speed).  Signals are checked between chunks (Ctrl-C aborts
 * the save; persist.save removes the temporary file); a handler may run
 * Python code, so the buffer and its size are read again after each check.
 * Other processes writing into a shared map are not stopped: each chunk is
 * copied, then hashed and written, so the checksum matches the file. */
PyObject *bkpy_obj_write_state(PyObject *self, PyObject *fd_obj)
{
    bkpy_state *st = BKPY_ST(self);
    bk_xxh3_stream xs;
    bk_header h;
    const char *reason = "invalid";
    uint8_t *chunk;
    uint64_t len, off;
    bk_rc rc;
    int fd = PyObject_AsFileDescriptor(fd_obj);

    if (fd < 0)
        return NULL;
    bkpy_state_wait_batches(st);
    len = st->len;
    rc = bk_format_parse(st->buf, len, &h, &reason);
    if (rc != BK_OK) {
        bkpy_raise_rc(rc, reason, &h);
        return NULL;
    }
    chunk = (uint8_t *)PyMem_Malloc(BKPY_WRITE_CHUNK);
    if (chunk == NULL) {
        bkpy_raise_nomem(BKPY_WRITE_CHUNK, "the write buffer of save()", "free memory");
        return NULL;
    }
    /* BK_MAX_HEADER (4096) <= BKPY_WRITE_CHUNK */
    memcpy(chunk, st->buf, h.header_len);
    bk_store_u16le(chunk + BK_OFF_FLAGS,
                   (uint16_t)(bk_load_u16le(chunk + BK_OFF_FLAGS) & ~BK_FLAG_DIRTY));
    bk_store_u64le(chunk + BK_OFF_CHECKSUM, 0);
    bk_format_checksum_begin(&xs, chunk, h.header_len);
    if (bkpy_write_all(fd, chunk, h.header_len) < 0)
        goto fail;
    for (off = h.header_len; off < len;) {
        size_t n = (size_t)(len - off < BKPY_WRITE_CHUNK ? len - off : BKPY_WRITE_CHUNK);
        if (PyErr_CheckSignals() < 0)
            goto fail;
        if (st->len != len || st->buf == NULL) {
            PyErr_SetString(PyExc_RuntimeError,
                            "the structure changed size while it was being saved");
            goto fail;
        }
        memcpy(chunk, st->buf + off, n);
        bk_xxh3_stream_update(&xs, chunk, n);
        if (bkpy_write_all(fd, chunk, n) < 0)
            goto fail;
        off += n;
    }
    PyMem_Free(chunk);
    return PyLong_FromUnsignedLongLong(bk_xxh3_stream_digest(&xs));
fail:
    PyMem_Free(chunk);
    return NULL;
}

/* ---- End logic for streaming a state to a file ------------------------ */

PyObject *bkpy_obj_reduce(PyObject *self, PyObject *unused)
{
    bkpy_state *st = BKPY_ST(self);
    PyObject *data, *ctor;
    (void)unused;
    if (st->hasher.keyed) {
        PyErr_SetString(PyExc_TypeError,
                        "cannot pickle a keyed structure: its secret is never serialized; use "
                        "to_bytes() and from_bytes(data, secret=...)");
        return NULL;
    }
    data = bkpy_state_to_bytes(st);
    if (data == NULL)
        return NULL;
    ctor = PyObject_GetAttrString((PyObject *)Py_TYPE(self), "from_bytes");
    if (ctor == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    return Py_BuildValue("(N(NOO))", ctor, data, Py_None,
                         st->keyfunc ? st->keyfunc : Py_None);
}

PyObject *bkpy_obj_seal(PyObject *self, PyObject *unused)
{
    bkpy_state *st = BKPY_ST(self);
    (void)unused;
    if (bkpy_state_check_writable(st) < 0)
        return NULL;
    /* A checksum over a payload that a GIL-free batch is still writing
     * would call a live file corrupt later (R30): wait for it. */
    bkpy_state_wait_pins(st);
    bk_format_seal(st->buf, st->len);
    Py_RETURN_NONE;
}

PyObject *bkpy_obj_set_dirty(PyObject *self, PyObject *arg)
{
    bkpy_state *st = BKPY_ST(self);
    int on = PyObject_IsTrue(arg);
    uint16_t flags;
    if (on < 0 || bkpy_state_check_writable(st) < 0)
        return NULL;
    flags = bk_load_u16le(st->buf + BK_OFF_FLAGS);
    flags = (uint16_t)(on ? (flags | BK_FLAG_DIRTY) : (flags & ~BK_FLAG_DIRTY));
    bk_store_u16le(st->buf + BK_OFF_FLAGS, flags);
    Py_RETURN_NONE;
}

PyObject *bkpy_obj_get_seed(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(BKPY_ST(self)->hasher.seed);
}

PyObject *bkpy_obj_get_keyed(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(BKPY_ST(self)->hasher.keyed);
}

PyObject *bkpy_obj_get_key(PyObject *self, void *closure)
{
    PyObject *k = BKPY_ST(self)->keyfunc;
    (void)closure;
    if (k == NULL)
        Py_RETURN_NONE;
    Py_INCREF(k);
    return k;
}

PyObject *bkpy_obj_get_writable(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(BKPY_ST(self)->writable);
}

PyObject *bkpy_obj_get_mapped(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(BKPY_ST(self)->view.obj != NULL);
}

PyObject *bkpy_obj_get_dirty(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong((bk_load_u16le(BKPY_ST(self)->buf + BK_OFF_FLAGS) & BK_FLAG_DIRTY) != 0);
}

PyObject *bkpy_obj_get_state_nbytes(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(BKPY_ST(self)->len);
}

int bkpy_parse_from_bytes(PyObject *args, PyObject *kwargs, bkpy_load_args *a)
{
    static char *kwlist[] = {"data", "secret", "key", "verify", NULL};
    int verify = 1;
    a->secret = a->key = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$p:from_bytes", kwlist, &a->data,
                                     &a->secret, &a->key, &verify))
        return -1;
    a->copy = 1;
    a->writable = 1;
    a->shared = 0;
    a->checks = BK_CHECK_DEEP | (verify ? BK_CHECK_CHECKSUM : 0);
    return 0;
}

int bkpy_parse_from_buffer(PyObject *args, PyObject *kwargs, bkpy_load_args *a)
{
    static char *kwlist[] = {"buf", "secret", "key", "writable", "shared", "allow_dirty",
                             "verify", NULL};
    int allow_dirty = 0, verify = 0;
    a->secret = a->key = Py_None;
    a->writable = a->shared = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$pppp:_from_buffer", kwlist, &a->data,
                                     &a->secret, &a->key, &a->writable, &a->shared,
                                     &allow_dirty, &verify))
        return -1;
    a->copy = 0;
    a->checks = (verify ? BK_CHECK_CHECKSUM | BK_CHECK_DEEP : 0) |
                (allow_dirty ? BK_ALLOW_DIRTY : 0);
    return 0;
}

PyObject *bkpy_obj_load(PyTypeObject *type, const bkpy_load_args *a, unsigned kind_mask)
{
    bkpy_obj *self;
    bk_header h;
    if (bkpy_check_keyfunc(a->key) < 0)
        return NULL;
    self = (bkpy_obj *)type->tp_alloc(type, 0); /* zeroed */
    if (self == NULL)
        return NULL;
    if (bkpy_state_load(&self->st, a->data, a->copy, a->writable, a->checks, kind_mask,
                        a->secret, &h) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->st.shared = a->shared;
    if (a->key != NULL && a->key != Py_None) {
        Py_INCREF(a->key);
        self->st.keyfunc = a->key;
    }
    return (PyObject *)self;
}

/* ---- End logic for the common object contract ------------------------- */
