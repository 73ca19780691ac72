/*
 * py_common.c -- shared CPython glue: the common object contract (every
 * type's cold methods, slots and getters that need only the state).  The
 * rest of the shared glue is split by concern: py_common_errors.c,
 * py_common_keys.c, py_common_batch.c, py_common_state.c.  See py_common.h.
 */
#include "py_common.h"

#include <math.h>
#include <stdio.h>
#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif

#include "bk_endian.h"

/* ---- Begin logic for the common object contract ----------------------- */

#define BKPY_ST(o) (&((bkpy_obj *)(o))->st)

int bkpy_parse_u64(PyObject *obj, const char *what, uint64_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int in [0, 2**64), not %.50s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyLong_AsUnsignedLongLong(obj);
    if (*out == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be an int in [0, 2**64)", what);
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

int bkpy_parse_ctor(bkpy_ctor_args *a)
{
    a->seed = 0;
    if (a->seed_obj != NULL && bkpy_parse_u64(a->seed_obj, "seed", &a->seed) < 0)
        return -1;
    if (bkpy_check_keyfunc(a->key) < 0 || bkpy_parse_secret(a->secret, a->secret16, &a->keyed) < 0)
        return -1;
    return 0;
}

int bkpy_ctor_check(bkpy_ctor_args *a, bk_rc shape, const char *reason)
{
    if (bkpy_parse_ctor(a) < 0)
        return -1;
    if (shape != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason);
        return -1;
    }
    return a->design ? bkpy_check_design(a->design, a->capacity, a->error_rate) : 0;
}

void *bkpy_obj_new_ctor(PyTypeObject *type, bkpy_ctor_args *a, bk_rc shape, const char *reason,
                        uint64_t len)
{
    return bkpy_ctor_check(a, shape, reason) < 0 ? NULL : bkpy_obj_new(type, len, a);
}

void *bkpy_obj_new(PyTypeObject *type, uint64_t len, const bkpy_ctor_args *a)
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
    if (a->key != NULL && a->key != Py_None) {
        Py_INCREF(a->key);
        st->keyfunc = a->key;
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
    bkpy_state_own(st);
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
            if (bkpy_io_failed() < 0)
                return -1;
            continue; /* EINTR */
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
    bk_hash_xxh3_stream xs;
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
    (void)bk_format_set_dirty(chunk, 0); /* a saved file is clean */
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
        bk_hash_xxh3_stream_update(&xs, chunk, n);
        if (bkpy_write_all(fd, chunk, n) < 0)
            goto fail;
        off += n;
    }
    PyMem_Free(chunk);
    return PyLong_FromUnsignedLongLong(bk_hash_xxh3_stream_digest(&xs));
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
    if (on < 0 || bkpy_state_check_writable(st) < 0)
        return NULL;
    (void)bk_format_set_dirty(st->buf, on);
    Py_RETURN_NONE;
}

PyObject *bkpy_obj_key_hash(PyObject *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(BKPY_ST(self), key, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

int bkpy_check_design(unsigned kind, unsigned long long capacity, double error_rate)
{
    const bk_kind_desc *d = bk_kinds_get(kind);
    if (d == NULL) {
        PyErr_Format(PyExc_SystemError, "no descriptor for kind %u", kind);
        return -1;
    }
    /* What a state of the kind may record (bk_format_check_kind's prologue):
     * capacity within the descriptor's limit, a rate in (0, 1).  The
     * constructor's narrower range (error_rate_min..max) is the facade's to
     * check: with_size() records the rate its shape implies, which may be
     * below it. */
    if (capacity >= 1 && capacity <= d->capacity_max && error_rate > 0.0 && error_rate < 1.0)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s and error_rate in (0, 1)", d->capacity_reason);
    return -1;
}

uint64_t bkpy_count_of_estimate(double est, uint64_t max)
{
    if (!(est >= 0.0))
        est = 0.0;
    if (est > (double)max)
        est = (double)max;
    return (uint64_t)llround(est);
}

PyObject *bkpy_remove_result(int r, PyObject *key, int raise)
{
    if (r < 0)
        return NULL;
    if (!raise)
        return PyBool_FromLong(r);
    if (r == 0) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    Py_RETURN_NONE;
}

PyObject *bkpy_obj_get_seed(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(BKPY_ST(self)->hasher.seed);
}

/* key_types: None when the state records no key domains (written before
 * they were recorded, or assembled from Redis), else a frozenset of "int"
 * and "text" (str and bytes-like keys: one domain), empty for no keys. */
PyObject *bkpy_obj_get_key_types(PyObject *self, void *closure)
{
    uint8_t bits;
    PyObject *set, *name;
    (void)closure;
    bits = BKPY_ST(self)->buf[BK_OFF_KEY_FLAGS];
    if (!(bits & (BK_FLAG_KEYS_RECORDED >> 8)))
        Py_RETURN_NONE;
    set = PyFrozenSet_New(NULL);
    for (int i = 0; set != NULL && i < 2; i++) {
        if (!(bits & (i == 0 ? BKPY_SEEN_INT : BKPY_SEEN_TEXT)))
            continue;
        name = PyUnicode_FromString(i == 0 ? "int" : "text");
        if (name == NULL || PySet_Add(set, name) < 0)
            Py_CLEAR(set);
        Py_XDECREF(name);
    }
    return set;
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

PyObject *bkpy_obj_get_u64(PyObject *self, void *closure)
{
    return PyLong_FromUnsignedLongLong(bk_load_u64le(BKPY_ST(self)->buf + (uintptr_t)closure));
}

PyObject *bkpy_obj_get_u32(PyObject *self, void *closure)
{
    return PyLong_FromUnsignedLong(bk_load_u32le(BKPY_ST(self)->buf + (uintptr_t)closure));
}

PyObject *bkpy_obj_get_f64(PyObject *self, void *closure)
{
    return PyFloat_FromDouble(bk_load_f64le(BKPY_ST(self)->buf + (uintptr_t)closure));
}

PyObject *bkpy_obj_get_payload_nbytes(PyObject *self, void *closure)
{
    const bkpy_state *st = BKPY_ST(self);
    (void)closure;
    return PyLong_FromUnsignedLongLong(st->len - bk_load_u32le(st->buf + BK_OFF_HEADER_LEN));
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

/* ---- Begin logic for the generic contract (type descriptors) ---------- */

/* Registered descriptors: one per structure type, a handful in all. */
#define BKPY_MAX_TYPES 16
static const bkpy_desc *bkpy_descs[BKPY_MAX_TYPES];
static int bkpy_ndescs;

int bkpy_register_type(PyObject *module, const char *name, const bkpy_desc *d)
{
    if (bkpy_ndescs == BKPY_MAX_TYPES) {
        PyErr_SetString(PyExc_RuntimeError, "bloomkit: too many registered types");
        return -1;
    }
    if (PyType_Ready(d->type) < 0)
        return -1;
    Py_INCREF(d->type);
    if (PyModule_AddObject(module, name, (PyObject *)d->type) < 0) {
        Py_DECREF(d->type);
        return -1;
    }
    bkpy_descs[bkpy_ndescs++] = d;
    return 0;
}

/* The descriptor of `type` or of the registered base it derives from;
 * NULL (nothing raised) for any other type.  Cold paths only: a walk of
 * at most a few bases over a table of a few entries. */
const bkpy_desc *bkpy_desc_of(PyTypeObject *type)
{
    for (PyTypeObject *t = type; t != NULL; t = t->tp_base)
        for (int i = 0; i < bkpy_ndescs; i++)
            if (bkpy_descs[i]->type == t)
                return bkpy_descs[i];
    return NULL;
}

int bkpy_check_other(PyObject *self, PyObject *other, const char *op)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(self));
    if (PyObject_TypeCheck(other, d->type))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s needs another %s, not %.50s", op, d->noun,
                 Py_TYPE(other)->tp_name);
    return -1;
}

static PyObject *bkpy_obj_load_desc(PyTypeObject *type, const bkpy_load_args *a)
{
    const bkpy_desc *d = bkpy_desc_of(type);
    PyObject *self;
    unsigned kinds;
    if (d == NULL) {
        PyErr_Format(PyExc_TypeError, "%.50s is not a bloomkit type", type->tp_name);
        return NULL;
    }
    if (d->check_load != NULL && d->check_load(a) < 0)
        return NULL;
    kinds = d->kind_mask != NULL ? d->kind_mask(type) : d->kinds;
    self = bkpy_obj_load(type, a, kinds);
    if (self != NULL && d->attach(self) < 0)
        Py_CLEAR(self);
    return self;
}

PyObject *bkpy_obj_from_bytes(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    bkpy_load_args a;
    return bkpy_parse_from_bytes(args, kwargs, &a) < 0 ? NULL : bkpy_obj_load_desc(type, &a);
}

/* _from_buffer: works in place on an exporter's memory (an mmap), keeping
 * the exporter alive. */
PyObject *bkpy_obj_from_buffer(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    bkpy_load_args a;
    return bkpy_parse_from_buffer(args, kwargs, &a) < 0 ? NULL : bkpy_obj_load_desc(type, &a);
}

/* _detach(): release a borrowed buffer (mmap close).  A small owned,
 * empty, read-only state of the same type stays behind (or, with a
 * descriptor's own detach, an owned copy: a scalable chain), so nothing
 * dangles and every method still answers. */
PyObject *bkpy_obj_detach(PyObject *self, PyObject *unused)
{
    bkpy_state *st = BKPY_ST(self);
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(self));
    (void)unused;
    if (st->view.obj == NULL)
        Py_RETURN_NONE;
    bkpy_state_wait_pins(st); /* no GIL-free batch still reads the map */
    if (st->view.obj == NULL)
        Py_RETURN_NONE; /* detached by another thread meanwhile */
    if (d->detach != NULL) {
        if (d->detach(self) < 0)
            return NULL;
    } else {
        PyBuffer_Release(&st->view);
        st->buf = NULL;
        st->len = 0;
        if (d->empty(self) < 0)
            return NULL;
    }
    st->writable = 0;
    st->shared = 0;
    st->lock_fd1 = 0; /* the descriptor is closed next */
    Py_RETURN_NONE;
}

PyObject *bkpy_obj_copy_of(PyObject *self)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(self));
    PyObject *c = bkpy_obj_copy(Py_TYPE(self), BKPY_ST(self));
    if (c != NULL && (d->attach(c) < 0 || (d->copied != NULL && d->copied(c, self) < 0)))
        Py_CLEAR(c);
    return c;
}

PyObject *bkpy_obj_copy_meth(PyObject *self, PyObject *unused)
{
    (void)unused;
    return bkpy_obj_copy_of(self);
}

/* The object and the state it owns (a borrowed map is not ours). */
PyObject *bkpy_obj_sizeof(PyObject *self, PyObject *unused)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(self));
    const bkpy_state *st = BKPY_ST(self);
    size_t own = st->alloc ? (size_t)st->len + BK_ALIGN : 0;
    (void)unused;
    return PyLong_FromSize_t((size_t)d->type->tp_basicsize + own);
}

/* == and !=: the header fields that define the structure (not the count,
 * the flags or the checksum), then the type's own comparison. */
PyObject *bkpy_obj_richcompare(PyObject *a, PyObject *b, int op)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(a));
    const bkpy_state *x, *y;
    int eq;
    if ((op != Py_EQ && op != Py_NE) || d == NULL || !PyObject_TypeCheck(b, d->type))
        Py_RETURN_NOTIMPLEMENTED;
    x = BKPY_ST(a);
    y = BKPY_ST(b);
    eq = x->len == y->len &&
         memcmp(x->buf + BK_OFF_KIND, y->buf + BK_OFF_KIND, 2) == 0 &&
         memcmp(x->buf + BK_OFF_HASH, y->buf + BK_OFF_HASH, 2) == 0 &&
         memcmp(x->buf + BK_OFF_SEED, y->buf + BK_OFF_SEED, 8) == 0 &&
         memcmp(x->buf + BK_OFF_KEY_CHECK, y->buf + BK_OFF_KEY_CHECK, 8) == 0 && d->equal(a, b);
    if (op == Py_NE)
        eq = !eq;
    return PyBool_FromLong(eq);
}

/* The type's in-place operation, then the key domains of both sides
 * (bkpy_state_merge_keys): every union and intersection goes through it. */
static PyObject *bkpy_obj_inplace(const bkpy_desc *d, PyObject *acc, PyObject *other,
                                  int is_union)
{
    PyObject *r = d->inplace(acc, other, is_union);
    if (r != NULL && BKPY_ST(r)->buf != NULL && BKPY_ST(other)->buf != NULL)
        bkpy_state_merge_keys(BKPY_ST(r), BKPY_ST(other));
    return r;
}

/* union(*others) / intersection(*others): every operand checked first,
 * then a copy of self folded with each in turn by the type's in-place
 * operation. */
static PyObject *bkpy_obj_setop(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                int is_union)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(self));
    const char *op = is_union ? "union" : "intersect";
    PyObject *acc;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (bkpy_check_other(self, args[i], op) < 0 || d->compatible(self, args[i], op) < 0)
            return NULL;
    acc = bkpy_obj_copy_of(self);
    for (Py_ssize_t i = 0; acc != NULL && i < nargs; i++) {
        PyObject *r = bkpy_obj_inplace(d, acc, args[i], is_union);
        Py_DECREF(acc);
        acc = r;
    }
    return acc;
}

PyObject *bkpy_obj_union(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return bkpy_obj_setop(self, args, nargs, 1);
}

PyObject *bkpy_obj_intersection(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return bkpy_obj_setop(self, args, nargs, 0);
}

PyObject *bkpy_obj_contains_many(PyObject *self, PyObject *keys)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(self));
    return bkpy_contains_many(BKPY_ST(self), keys, d->probe, (const char *)self + d->view_off,
                              d->query);
}

PyObject *bkpy_obj_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return bkpy_update(self, args, nargs, bkpy_desc_of(Py_TYPE(self))->add_many);
}

PyObject *bkpy_obj_remove(PyObject *self, PyObject *key)
{
    return bkpy_remove_result(bkpy_desc_of(Py_TYPE(self))->remove(self, key), key, 1);
}

PyObject *bkpy_obj_discard(PyObject *self, PyObject *key)
{
    return bkpy_remove_result(bkpy_desc_of(Py_TYPE(self))->remove(self, key), key, 0);
}

/* The operators: NotImplemented unless both sides are of one registered
 * type (either may be the reflected operand). */
static PyObject *bkpy_obj_binop(PyObject *a, PyObject *b, int is_union, int inplace)
{
    const bkpy_desc *d = bkpy_desc_of(Py_TYPE(a));
    if (d == NULL || d->inplace == NULL || !PyObject_TypeCheck(b, d->type))
        Py_RETURN_NOTIMPLEMENTED;
    if (inplace)
        return bkpy_obj_inplace(d, a, b, is_union);
    return bkpy_obj_setop(a, &b, 1, is_union);
}

/* | & |= &=: bkpy_obj_nb_or, _and, _ior, _iand. */
#define BKPY_BINOP(name, is_union, inplace)                                                 \
    PyObject *bkpy_obj_nb_##name(PyObject *a, PyObject *b)                                  \
    {                                                                                       \
        return bkpy_obj_binop(a, b, is_union, inplace);                                     \
    }
BKPY_BINOP(or, 1, 0)
BKPY_BINOP(and, 0, 0)
BKPY_BINOP(ior, 1, 1)
BKPY_BINOP(iand, 0, 1)
#undef BKPY_BINOP

PyNumberMethods bkpy_obj_as_number_union = {
    .nb_or = bkpy_obj_nb_or,
    .nb_inplace_or = bkpy_obj_nb_ior,
};

PyNumberMethods bkpy_obj_as_number_setops = {
    .nb_or = bkpy_obj_nb_or,
    .nb_inplace_or = bkpy_obj_nb_ior,
    .nb_and = bkpy_obj_nb_and,
    .nb_inplace_and = bkpy_obj_nb_iand,
};

/* ---- End logic for the generic contract ------------------------------- */

/* ---- Begin logic for loading a file (bloomkit.load) ------------------- */

/* The one load of bloomkit.load and bloomkit.loads: the header of
 * buf[0..len) is parsed once; its kind picks the class through
 * class_for(kind) (persist's registry: its "not supported" error comes
 * before the payload checks); the rest of the one validator runs; then a
 * new object of that class owns the state: tmp's buffer when tmp->buf is
 * buf (a file read straight into it: no copy), else one copy of buf.  On
 * failure the caller releases tmp; on success tmp is left empty. */
static PyObject *bkpy_load_kind(bkpy_state *tmp, const uint8_t *buf, uint64_t len,
                                PyObject *class_for, PyObject *secret, PyObject *key,
                                int verify)
{
    bk_header h;
    const char *reason = "invalid";
    const bkpy_desc *d;
    PyObject *cls;
    bkpy_obj *self;
    bk_rc rc = bk_format_parse(buf, len, &h, &reason);
    if (rc != BK_OK) {
        bkpy_raise_rc(rc, reason, &h);
        return NULL;
    }
    cls = PyObject_CallFunction(class_for, "I", (unsigned)h.kind);
    if (cls == NULL)
        return NULL;
    d = PyType_Check(cls) ? bkpy_desc_of((PyTypeObject *)cls) : NULL;
    if (d == NULL || !((d->kind_mask != NULL ? d->kind_mask((PyTypeObject *)cls) : d->kinds) &
                       (1u << h.kind))) {
        PyErr_Format(PyExc_TypeError, "the class registered for kind %u is not a bloomkit type "
                     "of that kind", (unsigned)h.kind);
        Py_DECREF(cls);
        return NULL;
    }
    rc = bk_format_validate_parsed(buf, len, BK_CHECK_DEEP | (verify ? BK_CHECK_CHECKSUM : 0),
                                   &h, &reason);
    if (rc != BK_OK || (tmp->buf != buf && bkpy_state_alloc(tmp, len) < 0)) {
        if (rc != BK_OK)
            bkpy_raise_rc(rc, reason, &h);
        Py_DECREF(cls);
        return NULL;
    }
    if (tmp->buf != buf)
        memcpy(tmp->buf, buf, (size_t)len);
    self = (bkpy_obj *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0); /* zeroed */
    Py_DECREF(cls); /* the object holds its type */
    if (self == NULL)
        return NULL;
    self->st.alloc = tmp->alloc; /* the buffer moves into the object */
    self->st.buf = tmp->buf;
    self->st.len = tmp->len;
    memset(tmp, 0, sizeof *tmp);
    self->st.writable = 1;
    self->st.kind = h.kind;
    bkpy_state_own(&self->st);
    if (key != Py_None) {
        Py_INCREF(key);
        self->st.keyfunc = key;
    }
    if (bkpy_state_set_hasher(&self->st, &h, secret) < 0 || d->attach((PyObject *)self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

PyObject *bkpy_load_fd(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fd", "size", "class_for", "secret", "key", "verify", NULL};
    int fd, verify = 1;
    unsigned long long size;
    PyObject *class_for, *secret = Py_None, *key = Py_None, *res = NULL;
    bkpy_state tmp;
    (void)mod;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iKO|OO$p:load_fd", kwlist, &fd, &size,
                                     &class_for, &secret, &key, &verify))
        return NULL;
    if (bkpy_check_keyfunc(key) < 0)
        return NULL;
    memset(&tmp, 0, sizeof tmp);
    if (bkpy_state_read_fd(&tmp, fd, size) == 0)
        res = bkpy_load_kind(&tmp, tmp.buf, tmp.len, class_for, secret, key, verify);
    bkpy_state_release(&tmp);
    return res;
}

PyObject *bkpy_load_bytes(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "class_for", "secret", "key", "verify", NULL};
    int verify = 1;
    PyObject *data, *class_for, *secret = Py_None, *key = Py_None, *res;
    bkpy_state tmp;
    Py_buffer v;
    (void)mod;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO$p:load_bytes", kwlist, &data,
                                     &class_for, &secret, &key, &verify))
        return NULL;
    if (bkpy_check_keyfunc(key) < 0 || PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    memset(&tmp, 0, sizeof tmp);
    res = bkpy_load_kind(&tmp, (const uint8_t *)v.buf, (uint64_t)v.len, class_for, secret, key,
                         verify);
    PyBuffer_Release(&v);
    bkpy_state_release(&tmp);
    return res;
}

/* ---- End logic for loading a file ------------------------------------- */
