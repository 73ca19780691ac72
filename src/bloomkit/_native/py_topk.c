/*
 * py_topk.c -- CPython type of TopK's core (TopKBase): a count-min sketch
 * (a CountMinBase object, py_sketch.c) counts every event, and the
 * candidate set of bk_topk.c keeps the k keys with the highest estimates,
 * each slot holding a strong reference to the key object it reports.
 *
 * Per event: hash the key once with the sketch's hasher (and key=), add it
 * to the sketch and read its estimate in one pass over its d counters
 * (bk_sketch_cms_add_estimate), offer (h, estimate) to the candidates.  The
 * facade (bloomkit/topk.py, TopK) adds construction from (epsilon,
 * delta), pickling and heavy_hitters' sort.
 *
 * Batches (update).  The per-event loop spent ~266 of ~450 instructions an
 * event in the sketch's 7 rows; most events of a skewed stream repeat a
 * key seen a moment ago.  So update() cuts the batch into chunks of at
 * most BKTOPK_AGG_MAX (65,536) consecutive events and, per chunk, first
 * sums the repeats of each key in a table by its 64-bit hash (its count
 * and its first event, whose key object a list lends: see bktopk_batch),
 * then adds each distinct key once with
 * its count (bk_sketch_cms_add_estimate_counts) in order of first
 * occurrence and offers it once with its estimate right after that add.
 * (Zipf 1.0 over 10^6 keys, benchmarks/topk.py: about 26,300 distinct
 * keys per chunk of 65,536 events.)  What update() guarantees, and what it no longer does:
 *   - the sketch's counters and total are byte for byte those of add() on
 *     each key in order: the counts reach the same counters, and
 *     saturating addition commutes;
 *   - each candidate's estimate lies between its true count and the
 *     sketch's current estimate;
 *   - the candidates are offered once per distinct key per chunk instead
 *     of once per event, so they can differ from the add() loop only in
 *     eviction order within a chunk (a key admitted and evicted inside
 *     one chunk by the loop, ties at the k-th place) -- the heavy hitters
 *     of Zipf streams are the loop's (tests/test_topk.py);
 *   - a conservative sketch is order-dependent (a raise-to-minimum), so
 *     there update() runs the per-event loop and equals add() exactly;
 *   - a key that fails to hash stops the batch with the keys before it
 *     counted and offered (the last, partial chunk is counted first).
 * add() is unchanged: one event, one offer.
 *
 * Arrow columns (py_arrow.c, docs/engines.md) are hashed from their
 * buffers, and a key that enters the candidates gets the Python object of
 * its row as pyarrow's to_pylist() gives it (bkarrow_api_key); the input
 * chunks are cut where the list of those objects would cut them
 * (bktopk_arrow_chunk), so update(column) equals update(its values as a
 * list, nulls left out) exactly, candidates included.
 *
 * TopKBase is not on the descriptor contract (bkpy_desc, py_common.h):
 * that contract is the state buffer's (from_bytes, _detach, copy, header
 * and DIRTY), and TopK owns none: its counts live in the CountMinBase it
 * drives, which is on the contract, and its candidates are Python objects
 * with no file format (pickled by the facade).  It registers plainly
 * (bktopk_init) and keeps the contract's other rules: one prefix, no
 * atomics of its own, GIL held with no Python code between reading and
 * writing shared state.
 *
 * Threads.  Everything here holds the GIL, including the batch over a
 * numpy array: the candidates hold Python objects and the heap and index
 * change with plain stores, and the sketch's counters are updated with
 * plain stores too unless other threads run GIL-free count-min batches on
 * the same sketch (then bkpy_state_atomic says so and every add is an
 * atomic one, as CountMinSketch.add does).  Releasing the GIL would make
 * every counter update a compare-and-swap: CountMinSketch.add_many, which
 * does that, measured 51-64 ns a key where this whole batch (hashing,
 * sketch and candidates) measured 43-45 before chunks were summed
 * (benchmarks/topk.py; 7 rows).
 * No Python code runs between reading the candidates and updating them:
 * a key= function, an iterator's __next__ and the hashing of unusual keys
 * run first; a key object made
 * for a numpy element (which may run the garbage collector) is made
 * before its offer, which then looks again; evicted objects are released
 * last.  So concurrent add() calls lose nothing (tests/test_threads.py).
 *
 * Files.  This file holds the type and its methods: construction, add(),
 * membership, the candidate lists, _restore and the type's tables.  The
 * batch path, update() over lists, iterables, numpy buffers and Arrow
 * columns (the chunk table and its flush), is py_topk_update.c; the two
 * share the object struct and three functions through py_topk.h.
 */
#include "py_topk.h"

static PyTypeObject BKTopK_Type;

/* ---- Begin logic for the object --------------------------------------- */

/* TopKBase(k, sketch): candidates for k keys over a CountMinBase.
 * TopKBase() with no argument at all makes an empty shell that only
 * _restore accepts: pickles written by the pure-Python TopK rebuild their
 * object with cls.__new__(cls) and then __setstate__ (topk.py). */
static PyObject *bktopk_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"k", "sketch", NULL};
    PyObject *kobj = NULL, *sketch = NULL;
    BKTopK *self;
    uint64_t k = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:TopK", kwlist, &kobj, &sketch))
        return NULL;
    if (kobj != NULL || sketch != NULL) {
        if (kobj == NULL || sketch == NULL) {
            PyErr_SetString(PyExc_TypeError, "TopKBase(k, sketch) takes both arguments");
            return NULL;
        }
        if (PyBool_Check(kobj) || !PyLong_Check(kobj)) {
            PyErr_Format(PyExc_TypeError, "k must be an int, not %.50s", Py_TYPE(kobj)->tp_name);
            return NULL;
        }
        k = PyLong_AsUnsignedLongLong(kobj);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            k = 0;
            if (PyObject_RichCompareBool(kobj, Py_False, Py_GT) == 1)
                k = BK_TOPK_MAX_K + 1;
        }
        if (k < 1) {
            PyErr_SetString(PyExc_ValueError, "k must be >= 1");
            return NULL;
        }
        if (k > BK_TOPK_MAX_K) {
            PyErr_SetString(PyExc_ValueError, "k must be <= 2**30");
            return NULL;
        }
        if (!bksketch_cms_check(sketch)) {
            PyErr_Format(PyExc_TypeError, "sketch must be a CountMinSketch, not %.50s",
                         Py_TYPE(sketch)->tp_name);
            return NULL;
        }
    }
    self = (BKTopK *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->weakreflist = NULL;
    memset(&self->t, 0, sizeof self->t);
    if (sketch != NULL) {
        if (bk_topk_init(&self->t, k) != BK_OK) {
            Py_DECREF(self);
            return PyErr_NoMemory();
        }
        Py_INCREF(sketch);
        self->sketch = sketch;
    }
    return (PyObject *)self;
}

static int bktopk_traverse(BKTopK *self, visitproc visit, void *arg)
{
    Py_VISIT(self->sketch);
    for (uint32_t s = 0; s < self->t.len; s++)
        Py_VISIT((PyObject *)self->t.slots[s].obj);
    return 0;
}

static int bktopk_clear_refs(BKTopK *self)
{
    /* Detach the slots first: a key's finalizer may look at this object. */
    bk_topk t = self->t;
    memset(&self->t, 0, sizeof self->t);
    Py_CLEAR(self->sketch);
    for (uint32_t s = 0; s < t.len; s++)
        Py_XDECREF((PyObject *)t.slots[s].obj);
    bk_topk_free(&t);
    return 0;
}

static void bktopk_dealloc(BKTopK *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    bktopk_clear_refs(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

int bktopk_ready(BKTopK *self)
{
    if (BK_UNLIKELY(self->sketch == NULL)) {
        PyErr_SetString(PyExc_TypeError,
                        "this TopK was made without k (TopK() takes k: TopK(k, ...))");
        return -1;
    }
    return 0;
}

/* ---- End logic for the object ----------------------------------------- */

/* ---- Begin logic for adds --------------------------------------------- */

/* Offer h/est with key object key (borrowed): on insertion the slot takes
 * a reference; an evicted object is returned (a reference to release once
 * nothing reads the candidates any more).  -1 on MemoryError. */
int bktopk_offer(BKTopK *self, uint64_t h, uint64_t est, PyObject *key,
                 PyObject **evicted)
{
    void *old = NULL;
    int rc = bk_topk_offer(&self->t, h, est, key, &old);
    *evicted = (PyObject *)old;
    if (rc < 0) {
        bkpy_raise_nomem((uint64_t)self->t.cap * 2 * sizeof(bk_topk_slot),
                         "TopK's candidate slots", "use a smaller k");
        return -1;
    }
    if (rc == BK_TOPK_INSERTED || rc == BK_TOPK_REPLACED)
        Py_INCREF(key);
    return 0;
}

/* add(key, count=1) -> the key's estimate after the add. */
static PyObject *bktopk_add(BKTopK *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t h, est, count = 1;
    PyObject *evicted = NULL;
    bkpy_state *st;
    int atomic;
    unsigned seen = 0;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "add(key, count=1) takes 1 or 2 arguments");
        return NULL;
    }
    if (bktopk_ready(self) < 0)
        return NULL;
    if (nargs == 2 && bksketch_cms_parse_count(args[1], &count, "count") < 0)
        return NULL;
    st = bksketch_cms_state(self->sketch);
    /* Python code (key=, __index__) may run while hashing: read the state
     * after it. */
    if (bkpy_hash_key_seen(args[0], st->keyfunc, &st->hasher, &h, &seen) < 0)
        return NULL;
    if (BK_UNLIKELY(!st->writable) && bkpy_state_check_writable(st) < 0)
        return NULL;
    bkpy_state_note_keys(st, seen);
    atomic = bkpy_state_atomic(st);
    est = bk_sketch_cms_add_estimate(bksketch_cms_core(self->sketch), h, count, atomic);
    bksketch_cms_count_total(self->sketch, count, atomic);
    if (bktopk_offer(self, h, est, args[0], &evicted) < 0)
        return NULL;
    Py_XDECREF(evicted);
    return PyLong_FromUnsignedLongLong(est);
}

/* ---- End logic for adds ----------------------------------------------- */

/* ---- Begin logic for reading and restoring ---------------------------- */

static int bktopk_contains(BKTopK *self, PyObject *key)
{
    uint64_t h;
    bkpy_state *st;
    if (bktopk_ready(self) < 0)
        return -1;
    st = bksketch_cms_state(self->sketch);
    if (bkpy_hash_key(key, st->keyfunc, &st->hasher, &h) < 0)
        return -1;
    return bk_topk_find(&self->t, h) >= 0;
}

static Py_ssize_t bktopk_len(BKTopK *self)
{
    return (Py_ssize_t)self->t.len;
}

/* [(key, estimate, tick), ...] (with_tick) or [(key, estimate), ...], in
 * slot order. */
static PyObject *bktopk_list(BKTopK *self, int with_tick)
{
    PyObject *res;
    if (bktopk_ready(self) < 0)
        return NULL;
    res = PyList_New((Py_ssize_t)self->t.len);
    for (uint32_t s = 0; res != NULL && s < self->t.len; s++) {
        const bk_topk_slot *slot = &self->t.slots[s];
        PyObject *e = with_tick ? Py_BuildValue("(OKK)", (PyObject *)slot->obj,
                                                (unsigned long long)slot->est,
                                                (unsigned long long)slot->tick)
                                : Py_BuildValue("(OK)", (PyObject *)slot->obj,
                                                (unsigned long long)slot->est);
        if (e == NULL)
            Py_CLEAR(res);
        else
            PyList_SET_ITEM(res, (Py_ssize_t)s, e);
    }
    return res;
}

/* _entries() -> [(key, estimate, tick), ...] (pickling and heavy_hitters;
 * the facade sorts). */
static PyObject *bktopk_entries(BKTopK *self, PyObject *Py_UNUSED(ignored))
{
    return bktopk_list(self, 1);
}

/* _items() -> [(key, estimate), ...] in slot order. */
static PyObject *bktopk_items(BKTopK *self, PyObject *Py_UNUSED(ignored))
{
    return bktopk_list(self, 0);
}

/* _restore(k, sketch, entries, tick): fill a shell from saved entries
 * [(key, estimate, tick), ...] (a pickle of either TopK).  Every key is
 * hashed with the sketch; a repeated key, a bad entry or more than k
 * entries raise ValueError/TypeError and leave the shell empty. */
static PyObject *bktopk_restore(BKTopK *self, PyObject *args)
{
    PyObject *kobj, *sketch, *entries, *tickobj, *seq;
    unsigned long long tick;
    uint64_t k;
    bkpy_state *st;
    if (!PyArg_ParseTuple(args, "OOOO:_restore", &kobj, &sketch, &entries, &tickobj))
        return NULL;
    if (self->sketch != NULL) {
        PyErr_SetString(PyExc_TypeError, "_restore fills a TopK being unpickled only");
        return NULL;
    }
    if (PyBool_Check(kobj) || !PyLong_Check(kobj)) {
        PyErr_SetString(PyExc_TypeError, "saved TopK: k must be an int");
        return NULL;
    }
    k = PyLong_AsUnsignedLongLong(kobj);
    if (PyErr_Occurred() || k < 1 || k > BK_TOPK_MAX_K) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "saved TopK: k must be in [1, 2**30]");
        return NULL;
    }
    if (!bksketch_cms_check(sketch)) {
        PyErr_Format(PyExc_TypeError, "saved TopK: sketch must be a CountMinSketch, not %.50s",
                     Py_TYPE(sketch)->tp_name);
        return NULL;
    }
    tick = PyLong_AsUnsignedLongLong(tickobj);
    if (tick == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "saved TopK: tick must be an int in [0, 2**64)");
        return NULL;
    }
    seq = PySequence_Fast(entries, "saved TopK: entries must be a list");
    if (seq == NULL)
        return NULL;
    if (bk_topk_init(&self->t, k) != BK_OK) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    Py_INCREF(sketch);
    self->sketch = sketch;
    st = bksketch_cms_state(sketch);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, i), *key;
        unsigned long long est, etick;
        uint64_t h;
        bk_rc rc;
        if (!PyTuple_Check(e) ||
            !PyArg_ParseTuple(e, "OKK:saved TopK entry", &key, &est, &etick)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError,
                                "saved TopK: an entry must be (key, estimate, tick)");
            goto fail;
        }
        if (bkpy_hash_key(key, st->keyfunc, &st->hasher, &h) < 0)
            goto fail;
        rc = bk_topk_restore(&self->t, h, est, etick, key);
        if (rc == BK_ERR_NOMEM) {
            PyErr_NoMemory();
            goto fail;
        }
        if (rc != BK_OK) {
            PyErr_SetString(PyExc_ValueError,
                            "saved TopK: a key appears twice or there are more than k");
            goto fail;
        }
        Py_INCREF(key);
    }
    if (self->t.tick < tick)
        self->t.tick = tick;
    Py_DECREF(seq);
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    bktopk_clear_refs(self);
    return NULL;
}

static PyObject *bktopk_sizeof(BKTopK *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong((unsigned long long)Py_TYPE(self)->tp_basicsize +
                                       bk_topk_nbytes(&self->t));
}

static PyObject *bktopk_get_k(BKTopK *self, void *c)
{
    if (bktopk_ready(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLong(self->t.k);
}

static PyObject *bktopk_get_sketch(BKTopK *self, void *c)
{
    if (bktopk_ready(self) < 0)
        return NULL;
    Py_INCREF(self->sketch);
    return self->sketch;
}

static PyObject *bktopk_get_tick(BKTopK *self, void *c)
{
    return PyLong_FromUnsignedLongLong(self->t.tick);
}

/* ---- End logic for reading and restoring ------------------------------ */

static PyGetSetDef bktopk_getset[] = {
    {"k", (getter)bktopk_get_k, NULL, "How many keys it keeps.", NULL},
    {"sketch", (getter)bktopk_get_sketch, NULL, "The CountMinSketch that counts every event.",
     NULL},
    {"_tick", (getter)bktopk_get_tick, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bktopk_methods[] = {
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS, NULL},
    {"add", (PyCFunction)(void (*)(void))bktopk_add, METH_FASTCALL,
     "add($self, key, count=1, /)\n--\n\nCount key; return its estimate."},
    {"update", (PyCFunction)bktopk_update, METH_O,
     "update($self, keys, /)\n--\n\nCount every key of an iterable, a numpy array, a "
     "ByteKeys or an Arrow column (null rows are no key; a candidate's key is its value "
     "as to_pylist() gives it): the sketch counts as add() on each key; each distinct "
     "key of a chunk (up to 65,536 events) is offered to the candidates once."},
    {"_entries", (PyCFunction)bktopk_entries, METH_NOARGS, NULL},
    {"_items", (PyCFunction)bktopk_items, METH_NOARGS, NULL},
    {"_restore", (PyCFunction)bktopk_restore, METH_VARARGS, NULL},
    {"__sizeof__", (PyCFunction)bktopk_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bktopk);

static PyTypeObject BKTopK_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.TopKBase",
    .tp_basicsize = sizeof(BKTopK),
    .tp_dealloc = (destructor)bktopk_dealloc,
    .tp_as_sequence = &bktopk_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "TopKBase(k, sketch)\n--\n\nC core of TopK: the k keys with the highest "
              "count-min estimates.",
    .tp_traverse = (traverseproc)bktopk_traverse,
    .tp_clear = (inquiry)bktopk_clear_refs,
    .tp_weaklistoffset = offsetof(BKTopK, weakreflist),
    .tp_methods = bktopk_methods,
    .tp_getset = bktopk_getset,
    .tp_new = bktopk_new,
};

int bktopk_init(PyObject *m)
{
    if (PyType_Ready(&BKTopK_Type) < 0)
        return -1;
    Py_INCREF(&BKTopK_Type);
    if (PyModule_AddObject(m, "TopKBase", (PyObject *)&BKTopK_Type) < 0) {
        Py_DECREF(&BKTopK_Type);
        return -1;
    }
    return 0;
}
