/*
 * py_common_batch.c -- shared CPython glue: batch key iteration in chunks, one loop per
 * input kind, and the bool results of contains_many.
 * See py_common.h; the object contract is in py_common.c.
 */
#include "py_common.h"

#include "bk_endian.h"

static PyObject *bkpy_numpy_frombuffer; /* numpy.frombuffer, imported lazily */
static PyObject *bkpy_numpy_bool;

/* ---- Begin logic for batches ------------------------------------------ */

static int bkpy_is_single_key(PyObject *keys)
{
    return PyUnicode_Check(keys) || PyBytes_Check(keys) || PyByteArray_Check(keys);
}

/* The one message family of every batch method of every kind (issue #31
 * item 11; bloomkit/_batch.py words it the same for the Python faces): a
 * single str/bytes, or an object that is no iterable at all (5, None,
 * 1.5 said only "'int' object is not iterable"), is refused naming what
 * was given and what to do. */
int bkpy_check_keys(PyObject *keys, const char *one)
{
    if (bkpy_is_single_key(keys)) {
        PyErr_Format(PyExc_TypeError,
                     "expected an iterable of keys, got a single %.50s; use %s for one key, "
                     "or wrap it in a list", Py_TYPE(keys)->tp_name, one);
        return -1;
    }
    return 0;
}

/* The same family when the last resort, iteration, is impossible (checked
 * after the buffer and Arrow paths, which take objects with no __iter__). */
int bkpy_check_iterable(PyObject *keys, const char *one)
{
    if (Py_TYPE(keys)->tp_iter == NULL && !PySequence_Check(keys)) {
        PyErr_Format(PyExc_TypeError,
                     "expected an iterable of keys, got %.50s (not iterable); use %s for one "
                     "key, or wrap it in a list", Py_TYPE(keys)->tp_name, one);
        return -1;
    }
    return 0;
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
/* One batch: what the loops below share.  One loop per input kind, each
 * with its own 8 KiB of hashes on the stack (only one runs per batch). */
typedef struct {
    PyObject *keyfunc;
    const bk_hasher *hs;
    bkpy_chunk_fn fn;
    bkpy_size_fn size_fn;
    void *ctx;
    int nogil;
    bkpy_state *pin;        /* pinned while the GIL is released (or NULL) */
    bkpy_batch_info *info;
    bkpy_hold_fn hold;      /* lists and tuples: before a slow key (or NULL) */
} bkpy_batch;

/* Release the GIL for a GIL-free loop: the pin is the last thing before
 * the GIL goes, nothing runs Python code in between (see py_common.h).
 * Returns 0 and sets *ts (NULL when the GIL is kept), or -1. */
static int bkpy_batch_leave(const bkpy_batch *b, PyThreadState **ts)
{
    *ts = NULL;
    if (b->nogil && b->pin != NULL && bkpy_state_pin(b->pin) < 0)
        return -1;
    if (b->nogil)
        *ts = PyEval_SaveThread();
    return 0;
}

static void bkpy_batch_return(const bkpy_batch *b, PyThreadState *ts)
{
    if (ts != NULL)
        PyEval_RestoreThread(ts);
    if (b->nogil && b->pin != NULL)
        bkpy_state_unpin(b->pin);
}

/* The last, partial chunk of a list or an iterator (size_fn learns the
 * final length first when it was not known up front). */
static int bkpy_batch_flush(const bkpy_batch *b, const uint64_t *hbuf, size_t fill,
                            size_t offset)
{
    if (fill == 0)
        return 0;
    if (b->size_fn != NULL && b->size_fn(b->ctx, -(Py_ssize_t)(offset + fill), 0) < 0)
        return -1;
    b->fn(b->ctx, hbuf, fill, offset);
    return 0;
}

/* Arrow string/binary columns (ByteKeys): hashed as bytes, without the GIL
 * when nogil.  (With a key= function a ByteKeys is iterated as bytes
 * objects by bkpy_chunks_iter.) */
static int bkpy_chunks_bytekeys(const bkpy_batch *b, PyObject *keys)
{
    uint64_t hbuf[BKPY_CHUNK];
    Py_ssize_t total = bkbytekeys_api_len(keys);
    PyThreadState *ts;
    b->info->from_buffer = 1;
    b->info->count = total;
    b->info->seen = total > 0 ? BKPY_SEEN_TEXT : 0;
    if (b->size_fn != NULL && b->size_fn(b->ctx, total, 1) < 0)
        return -1;
    if (bkpy_batch_leave(b, &ts) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < total; i += BKPY_CHUNK) {
        size_t n = (size_t)(total - i < BKPY_CHUNK ? total - i : BKPY_CHUNK);
        bkbytekeys_api_hash(keys, i, n, b->hs, hbuf);
        b->fn(b->ctx, hbuf, n, (size_t)i);
    }
    bkpy_batch_return(b, ts);
    return 0;
}

/* Arrow arrays and streams (py_arrow.c): validated with the GIL, hashed
 * without it when nogil.  Null rows are skipped (BKPY_BUFFER_GAPS). */
static int bkpy_chunks_iter(const bkpy_batch *b, PyObject *keys);

static int bkpy_chunks_arrow(const bkpy_batch *b, PyObject *keys)
{
    int export_failed = 0;
    bkarrow_keys *k = bkarrow_api_open(keys, &export_failed);
    PyThreadState *ts;
    Py_ssize_t rows;
    int gaps;
    if (k == NULL) {
        /* The producer could not convert its values (pyarrow on a pandas
         * object column of mixed types: ArrowInvalid, ArrowTypeError,
         * ArrowNotImplementedError): its values as Python objects, as
         * before Arrow input.  Any other failure (a DuckDB relation whose
         * query fails) is raised as it is. */
        if (export_failed && (PyErr_ExceptionMatches(PyExc_TypeError) ||
                              PyErr_ExceptionMatches(PyExc_ValueError) ||
                              PyErr_ExceptionMatches(PyExc_NotImplementedError))) {
            PyErr_Clear();
            return bkpy_chunks_iter(b, keys);
        }
        return -1;
    }
    rows = bkarrow_api_rows(k);
    gaps = bkarrow_api_gaps(k);
    b->info->from_buffer = 1;
    b->info->seen = rows > 0 ? bkarrow_api_seen(k) : 0;
    if ((b->size_fn != NULL && b->size_fn(b->ctx, rows, gaps ? BKPY_BUFFER_GAPS : 1) < 0) ||
        bkpy_batch_leave(b, &ts) < 0) {
        bkarrow_api_close(k);
        return -1;
    }
    bkarrow_api_run(k, b->hs, b->fn, b->ctx);
    bkpy_batch_return(b, ts);
    b->info->nulls = bkarrow_api_nulls(k);
    b->info->count = rows - b->info->nulls;
    bkarrow_api_close(k);
    return 0;
}

/* The elements of a 1-d buffer at it->base, chunk by chunk. */
static void bkpy_buffer_loop(const bkpy_batch *b, const bkpy_buf_iter *it)
{
    uint64_t hbuf[BKPY_CHUNK];
    /* int64 (numpy's default integer) unswitched: the general loop
     * re-dispatches on kind and itemsize for every element. */
    int is_i64 = it->kind == BKPY_BUF_SIGNED && it->itemsize == 8;
    for (Py_ssize_t i = 0; i < it->n; i += BKPY_CHUNK) {
        size_t n = (size_t)(it->n - i < BKPY_CHUNK ? it->n - i : BKPY_CHUNK);
        if (is_i64) {
            const char *p = it->base + i * it->stride;
            for (size_t j = 0; j < n; j++, p += it->stride) {
                int64_t x;
                memcpy(&x, p, 8);
                hbuf[j] = bk_fastkey_int64(b->hs, x);
            }
        } else {
            for (size_t j = 0; j < n; j++)
                hbuf[j] = bkpy_hash_buffer_item(it, i + (Py_ssize_t)j, b->hs);
        }
        b->fn(b->ctx, hbuf, n, (size_t)i);
    }
}

/* 1-d buffers of ints, bools or fixed-width bytes (numpy arrays), without
 * the GIL when nogil. */
static int bkpy_chunks_buffer(const bkpy_batch *b, PyObject *keys)
{
    Py_buffer view;
    bkpy_buf_iter it;
    PyThreadState *ts;
    int rc = -1;
    if (PyObject_GetBuffer(keys, &view, PyBUF_RECORDS_RO) < 0)
        return -1;
    if (view.ndim != 1 || bkpy_buffer_kind(&view, &it.kind) < 0) {
        PyErr_Format(PyExc_TypeError,
                     "buffer keys must be a 1-d array of integers, bools or fixed-width "
                     "bytes (got format '%.20s', ndim %d); convert it first",
                     view.format ? view.format : "B", view.ndim);
        goto done;
    }
    it.base = (const char *)view.buf;
    it.n = view.shape ? view.shape[0] : view.len / view.itemsize;
    it.stride = view.strides ? view.strides[0] : view.itemsize;
    it.itemsize = view.itemsize;
    b->info->from_buffer = 1;
    b->info->count = it.n;
    if (it.n > 0)
        b->info->seen = it.kind == BKPY_BUF_BYTES ? BKPY_SEEN_TEXT : BKPY_SEEN_INT;
    if (b->size_fn != NULL && b->size_fn(b->ctx, it.n, 1) < 0)
        goto done;
    if (bkpy_batch_leave(b, &ts) < 0)
        goto done;
    bkpy_buffer_loop(b, &it);
    bkpy_batch_return(b, ts);
    rc = 0;
done:
    PyBuffer_Release(&view);
    return rc;
}

/* Exact lists and tuples by index, with the GIL: the inline keys (exact
 * str, int, bytes) in a tight prefetching loop, any other key (or every
 * key under key=) through the slow path one at a time. */
static int bkpy_chunks_sequence(const bkpy_batch *b, PyObject *keys)
{
    uint64_t hbuf[BKPY_CHUNK];
    size_t fill = 0, offset = 0;
    Py_ssize_t i = 0;
    if (b->size_fn != NULL && b->size_fn(b->ctx, PySequence_Fast_GET_SIZE(keys), 0) < 0)
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
        if (b->keyfunc == NULL) {
            unsigned seen = 0; /* in a register: one OR per key */
            for (; i < end; i++) {
                if (i + BKPY_LIST_AHEAD < n)
                    bkpy_prefetch_key(items[i + BKPY_LIST_AHEAD]);
                if (!bkpy_hash_key_fast_seen(items[i], b->hs, &hbuf[fill], &seen))
                    break;
                fill++;
            }
            b->info->seen |= seen;
        }
        if (i < end) {
            if (b->hold != NULL) {
                /* A borrowing caller: the hashes so far go first (fn may
                 * run Python code: read the list again), then it takes
                 * its references before the slow key runs any. */
                if (fill > 0) {
                    b->fn(b->ctx, hbuf, fill, offset);
                    offset += fill;
                    fill = 0;
                    if (i >= PySequence_Fast_GET_SIZE(keys))
                        break;
                }
                key = PySequence_Fast_ITEMS(keys)[i];
                Py_INCREF(key);
                if (b->hold(b->ctx, key, (size_t)i) < 0) {
                    Py_DECREF(key);
                    b->info->count = i;
                    return -1;
                }
            } else {
                key = items[i];
                Py_INCREF(key); /* the list may drop it meanwhile */
            }
            rc = bkpy_hash_key_slow_seen(key, b->keyfunc, b->hs, &hbuf[fill], &b->info->seen);
            Py_DECREF(key);
            if (rc < 0) {
                b->info->count = i;
                return -1;
            }
            fill++;
            i++;
        }
        if (fill == BKPY_CHUNK) {
            b->fn(b->ctx, hbuf, fill, offset);
            offset += fill;
            fill = 0;
        }
    }
    b->info->count = i;
    return bkpy_batch_flush(b, hbuf, fill, offset);
}

/* Any other iterable, by PyIter_Next, with the GIL. */
static int bkpy_chunks_iter(const bkpy_batch *b, PyObject *keys)
{
    uint64_t hbuf[BKPY_CHUNK];
    size_t fill = 0, offset = 0;
    PyObject *iter = PyObject_GetIter(keys), *item;
    if (iter == NULL)
        return -1;
    /* size_fn first hears of the keys with the first chunk: told "at least
     * 1" up front, bkpy_bools made an empty iterator's answers one
     * uninitialised entry (contains_many(iter([])) crashed). */
    while ((item = PyIter_Next(iter)) != NULL) {
        int rc = bkpy_hash_key_seen(item, b->keyfunc, b->hs, &hbuf[fill], &b->info->seen);
        Py_DECREF(item);
        if (rc < 0)
            goto fail;
        if (++fill == BKPY_CHUNK) {
            if (b->size_fn != NULL && b->size_fn(b->ctx, -(Py_ssize_t)(offset + fill), 0) < 0)
                goto fail;
            b->fn(b->ctx, hbuf, fill, offset);
            offset += fill;
            fill = 0;
        }
        b->info->count++;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred())
        return -1;
    return bkpy_batch_flush(b, hbuf, fill, offset);
fail:
    Py_DECREF(iter);
    return -1;
}

static int bkpy_chunks(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                       bkpy_chunk_fn fn, bkpy_size_fn size_fn, void *ctx, int nogil,
                       bkpy_state *pin, bkpy_batch_info *info, bkpy_hold_fn hold)
{
    bkpy_batch b = {keyfunc, hs, fn, size_fn, ctx, nogil, pin, info, hold};
    info->count = 0;
    info->from_buffer = 0;
    info->nulls = 0;
    info->seen = 0;
    if (bkpy_check_keys(keys, "add()/`in`") < 0)
        return -1;
    if (keyfunc == NULL && bkbytekeys_api_check(keys))
        return bkpy_chunks_bytekeys(&b, keys);
    if (keyfunc == NULL && PyObject_CheckBuffer(keys))
        return bkpy_chunks_buffer(&b, keys);
    if (PyList_CheckExact(keys) || PyTuple_CheckExact(keys))
        return bkpy_chunks_sequence(&b, keys);
    if (keyfunc == NULL && bkarrow_api_check(keys))
        return bkpy_chunks_arrow(&b, keys);
    if (bkpy_check_iterable(keys, "add()/`in`") < 0)
        return -1;
    return bkpy_chunks_iter(&b, keys);
}

int bkpy_for_each_chunk(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                        bkpy_chunk_fn fn, bkpy_size_fn size_fn, void *ctx, int nogil,
                        bkpy_batch_info *info)
{
    return bkpy_chunks(keys, keyfunc, hs, fn, size_fn, ctx, nogil, NULL, info, NULL);
}

int bkpy_for_each_chunk_hold(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                             bkpy_chunk_fn fn, bkpy_hold_fn hold, void *ctx,
                             bkpy_batch_info *info)
{
    return bkpy_chunks(keys, keyfunc, hs, fn, NULL, ctx, 0, NULL, info, hold);
}

int bkpy_for_each_chunk_pinned(bkpy_state *st, PyObject *keys, bkpy_chunk_fn fn,
                               bkpy_size_fn size_fn, void *ctx, int nogil,
                               bkpy_batch_info *info)
{
    return bkpy_chunks(keys, st->keyfunc, &st->hasher, fn, size_fn, ctx, nogil, st, info,
                       NULL);
}

/* Called with the GIL held before the chunks (and, for iterators, as they
 * grow): buffer input takes the batch lock once. */
int bkpy_writer_size(void *vctx, Py_ssize_t n, int from_buffer)
{
    bkpy_writer *w = (bkpy_writer *)vctx;
    (void)n;
    if (from_buffer && !w->nogil) {
        if (bkpy_state_begin_batch(w->st) < 0)
            return -1;
        w->nogil = 1;
    }
    return 0;
}

int bkpy_for_each_chunk_writer(bkpy_writer *w, PyObject *keys, bkpy_chunk_fn fn,
                               bkpy_size_fn size_fn, bkpy_batch_info *info)
{
    int rc = bkpy_for_each_chunk_pinned(w->st, keys, fn, size_fn ? size_fn : bkpy_writer_size,
                                        w, 1, info);
    if (w->nogil)
        bkpy_state_end_batch(w->st);
    bkpy_state_note_keys(w->st, info->seen);
    return rc;
}

static int bkpy_packed_mismatch(const bkpy_packed *pk, Py_ssize_t rows)
{
    PyErr_Format(PyExc_ValueError,
                 "out has %zd bytes; %zd rows need %zd bytes of bits", pk->nbytes, rows,
                 (rows + 7) / 8);
    return -1;
}

/* bkpy_bools_size with a packed destination: the bytes in the caller's
 * scratch while they fit (a DuckDB vector's 2,048 rows do), else in PyMem
 * storage; buffer input, whose row count is final, is checked against the
 * destination before a key is hashed. */
static int bkpy_bools_size_packed(bkpy_bools *b, Py_ssize_t need, int from_buffer)
{
    bkpy_packed *pk = b->packed;
    if (from_buffer && (need + 7) / 8 != pk->nbytes)
        return bkpy_packed_mismatch(pk, need);
    if (need > b->cap) {
        if (need <= pk->scratch_cap) { /* only ever the first call: out is NULL */
            b->out = pk->scratch;
            b->cap = pk->scratch_cap;
        } else {
            Py_ssize_t cap = need > 2 * b->cap ? need : 2 * b->cap;
            uint8_t *p = (uint8_t *)PyMem_Malloc((size_t)cap);
            if (p == NULL) {
                bkpy_raise_nomem((uint64_t)cap, "the results of a batch query",
                                 "query fewer keys per call");
                return -1;
            }
            if (b->len > 0)
                memcpy(p, b->out, (size_t)b->len);
            if (b->out != pk->scratch)
                PyMem_Free(b->out);
            b->out = p;
            b->cap = cap;
        }
    }
    if (from_buffer == BKPY_BUFFER_GAPS) /* null rows: False */
        memset(b->out, 0, (size_t)need);
    if (need > b->len)
        b->len = need;
    return 0;
}

/* Bit i % 8 of byte i / 8 is answer i (any non-zero byte is True): eight
 * answers a step, each byte's bits folded into its lowest, which the
 * multiply gathers into the top byte (the eight products land on distinct
 * bits, so nothing carries). */
static PyObject *bkpy_bools_pack(const bkpy_bools *b)
{
    const bkpy_packed *pk = b->packed;
    Py_ssize_t n = b->len, i;
    if ((n + 7) / 8 != pk->nbytes) {
        bkpy_packed_mismatch(pk, n);
        return NULL;
    }
    for (i = 0; i + 8 <= n; i += 8) {
        uint64_t w = bk_load_u64le(b->out + i);
        w |= w >> 4;
        w |= w >> 2;
        w |= w >> 1;
        pk->bits[i >> 3] = (uint8_t)(((w & 0x0101010101010101u) * 0x0102040810204080u) >> 56);
    }
    if (i < n) {
        uint8_t last = 0; /* and the bits past the last row stay 0 */
        for (Py_ssize_t j = 0; i + j < n; j++)
            last |= (uint8_t)((b->out[i + j] != 0) << j);
        pk->bits[i >> 3] = last;
    }
    Py_RETURN_NONE;
}

/* size_fn protocol for bkpy_bools: n >= 0 is the exact length known up
 * front; n < 0 means "at least -n results will be written" (iterators). */
int bkpy_bools_size(void *ctx, Py_ssize_t n, int from_buffer)
{
    bkpy_bools *b = (bkpy_bools *)ctx;
    Py_ssize_t need = n >= 0 ? n : -n, item = b->u64 ? 8 : 1;
    if (b->packed != NULL)
        return bkpy_bools_size_packed(b, need, from_buffer);
    if (from_buffer) {
        b->bytearray = PyByteArray_FromStringAndSize(NULL, need * item);
        if (b->bytearray == NULL)
            return -1;
        b->out = (uint8_t *)PyByteArray_AS_STRING(b->bytearray);
        if (from_buffer == BKPY_BUFFER_GAPS) /* null rows: False / 0 */
            memset(b->out, 0, (size_t)(need * item));
        b->cap = b->len = need;
        return 0;
    }
    if (need > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 256;
        uint8_t *p;
        while (cap < need)
            cap *= 2;
        p = (uint8_t *)PyMem_Realloc(b->out, (size_t)(cap * item));
        if (p == NULL) {
            bkpy_raise_nomem((uint64_t)(cap * item), "the results of a batch query",
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
    if (b->packed != NULL)
        return bkpy_bools_pack(b);
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
        if (b->u64)
            return PyObject_CallFunction(bkpy_numpy_frombuffer, "Os", b->bytearray, "<u8");
        res = PyObject_CallFunctionObjArgs(bkpy_numpy_frombuffer, b->bytearray,
                                           bkpy_numpy_bool, NULL);
        return res;
    }
    res = PyList_New(b->len);
    if (res == NULL)
        return NULL;
    for (Py_ssize_t i = 0; b->u64 && i < b->len; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(((const uint64_t *)(void *)b->out)[i]);
        if (v == NULL) {
            Py_DECREF(res);
            return NULL;
        }
        PyList_SET_ITEM(res, i, v);
    }
    if (!b->u64) {
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
    if (b->bytearray == NULL && (b->packed == NULL || b->out != b->packed->scratch))
        PyMem_Free(b->out);
    Py_CLEAR(b->bytearray);
    b->out = NULL;
    b->len = b->cap = 0;
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for shared batch methods ----------------------------- */

PyObject *bkpy_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *(*add_many)(PyObject *, PyObject *))
{
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *r = add_many(self, args[i]);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_NONE;
}

typedef struct {
    bkpy_bools out; /* first: bkpy_bools_size receives this context */
    bkpy_probe_fn probe;
    const void *view;
} bkpy_query_ctx;

static void bkpy_query_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkpy_query_ctx *ctx = (bkpy_query_ctx *)vctx;
    ctx->probe(ctx->view, hs, n, bkpy_bools_reserve(&ctx->out, offset, n));
}

PyObject *bkpy_contains_bits(bkpy_state *st, PyObject *keys, bkpy_probe_fn probe,
                             const void *view, bkpy_query_mode mode, bkpy_packed *pk)
{
    bkpy_query_ctx ctx;
    bkpy_batch_info info;
    PyObject *res = NULL;
    int rc;
    memset(&ctx, 0, sizeof ctx);
    ctx.out.packed = pk;
    ctx.probe = probe;
    ctx.view = view;
    if (mode == BKPY_QUERY_PINNED)
        rc = bkpy_for_each_chunk_pinned(st, keys, bkpy_query_chunk, bkpy_bools_size, &ctx, 1,
                                        &info);
    else
        rc = bkpy_for_each_chunk(keys, st->keyfunc, &st->hasher, bkpy_query_chunk,
                                 bkpy_bools_size, &ctx, mode == BKPY_QUERY_NOGIL, &info);
    if (rc == 0)
        res = bkpy_bools_finish(&ctx.out, info.from_buffer);
    bkpy_bools_clear(&ctx.out);
    return res;
}

PyObject *bkpy_contains_many(bkpy_state *st, PyObject *keys, bkpy_probe_fn probe,
                             const void *view, bkpy_query_mode mode)
{
    return bkpy_contains_bits(st, keys, probe, view, mode, NULL);
}

/* _core.contains_bits(filt, keys, out): filt.contains_many(keys)'s answers
 * bit-packed into the writable contiguous buffer `out` of ceil(rows / 8)
 * bytes, LSB first (an Arrow boolean column's bitmap), without the numpy
 * array contains_many returns.  True when written; False, with nothing
 * done, when filt's contains_many is not a C one this can run (another
 * type, a Python override, a type without the hook): the caller then calls
 * contains_many and packs its result.  bloomkit.engines refills the
 * Table it hands DuckDB with it: the packing in Python (np.packbits and a
 * copy) and the result array cost about 1.5 us of the ~16 us a 2,048-row
 * vector takes outside DuckDB, more inside it (benchmarks/engines.py). */
#define BKPY_PACKED_SCRATCH 4096

PyObject *bkpy_mod_contains_bits(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    static PyObject *name;
    PyObject *filt, *found, *res;
    const bkpy_desc *d;
    PyMethodDef *def;
    uint8_t scratch[BKPY_PACKED_SCRATCH];
    bkpy_packed pk;
    Py_buffer view;
    int ours;
    (void)mod;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "contains_bits() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    filt = args[0];
    d = bkpy_desc_of(Py_TYPE(filt));
    if (d == NULL || d->type->tp_methods == NULL)
        Py_RETURN_FALSE;
    for (def = d->type->tp_methods; def->ml_name != NULL; def++)
        if (strcmp(def->ml_name, "contains_many") == 0)
            break;
    if (def->ml_name == NULL ||
        (d->contains_bits == NULL && def->ml_meth != (PyCFunction)bkpy_obj_contains_many))
        Py_RETURN_FALSE;
    /* the method filt's class calls: the C base's (its own descriptor of
     * the same PyMethodDef, Persistent.__init_subclass__), not an override */
    if (name == NULL && (name = PyUnicode_InternFromString("contains_many")) == NULL)
        return NULL;
    found = _PyType_Lookup(Py_TYPE(filt), name); /* borrowed; NULL: nothing raised */
    ours = found != NULL && Py_IS_TYPE(found, &PyMethodDescr_Type) &&
           ((PyMethodDescrObject *)found)->d_method == def;
    if (!ours)
        Py_RETURN_FALSE;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    pk.bits = (uint8_t *)view.buf;
    pk.nbytes = view.len;
    pk.scratch = scratch;
    pk.scratch_cap = BKPY_PACKED_SCRATCH;
    if (d->contains_bits != NULL)
        res = d->contains_bits(filt, args[1], &pk);
    else
        res = bkpy_contains_bits(&((bkpy_obj *)filt)->st, args[1], d->probe,
                                 (const char *)filt + d->view_off, d->query, &pk);
    PyBuffer_Release(&view);
    if (res == NULL)
        return NULL;
    Py_DECREF(res);
    Py_RETURN_TRUE;
}

/* ---- End logic for shared batch methods ------------------------------- */
