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
 */
#include "py_common.h"

#include "bk_topk.h"
#include "py_sketch.h"

typedef struct {
    PyObject_HEAD
    PyObject *sketch;   /* a CountMinBase; NULL in a shell made for unpickling */
    bk_topk t;          /* each slot's obj: a strong reference to its key */
    PyObject *weakreflist;
} BKTopK;

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

static int bktopk_ready(BKTopK *self)
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
static int bktopk_offer(BKTopK *self, uint64_t h, uint64_t est, PyObject *key,
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

/* Events a batch collects before it counts them: a power of two.  At
 * 2^16 a Zipf(1.0) stream over 10^6 keys has 0.4 distinct keys an event;
 * the table (2^17 cells of 16 bytes, 2 MiB) and the entries (44 bytes
 * each) sit in L3; 2^15 and 2^17 measured within the noise.  Smaller
 * batches take a table sized to their length (at least BKPY_CHUNK). */
#ifndef BKTOPK_AGG_MAX
#define BKTOPK_AGG_MAX ((size_t)1 << 16)
#endif

/* A batch: events are collected (hashed, input chunks of up to
 * BKPY_CHUNK) into a table of distinct keys, up to `cap` events, then
 * counted (bktopk_flush): each distinct key added once to the sketch with
 * its count, in order of first occurrence, and offered once with its
 * estimate right after that add.
 *
 * A table cell: 16 bytes, one cache access per event (2^17 cells = 2 MiB
 * for the largest chunk, prefetched BKTOPK_AGG_AHEAD events ahead).  A
 * cell belongs to the current chunk when its gen is the batch's: the next
 * chunk starts with one increment.  (Before, the flush read each used
 * cell back for its count and cleared it: a random access into the 2 MiB
 * table per distinct key, 580,000 simulated L2 misses per 10^6 Zipf
 * events; the count now lives in the entry, read in order.) */
typedef struct {
    uint64_t h;
    uint32_t e;   /* its entry */
    uint32_t gen; /* the chunk that filled it (0: none yet) */
} bktopk_cell;

/* Events ahead whose cells the collect loop prefetches. */
#define BKTOPK_AGG_AHEAD 8

/* Entries [0, held) own a reference to their key object objs[e]; the
 * others are found by their event's index at[e] in the source: a buffer
 * (an element made only for a key that enters), or, for a list or tuple
 * without key= (`borrow`), items[at[e]] borrowed from it.  Borrowing is
 * sound because no Python code runs between hashing those items and
 * counting them: the list loop (bkpy_for_each_chunk_hold) calls
 * bktopk_hold, which takes references, before any key that may run some,
 * and bktopk_collect counts its entries before it returns whenever the
 * next input chunk might not fit (so the flush of a full chunk, which
 * releases objects, never runs while an entry is borrowed).  That saves
 * an INCREF at the first occurrence and a DECREF at the flush (a write to
 * a key object long out of cache: 260,000 simulated L2 misses per 10^6
 * Zipf events). */
typedef struct {
    BKTopK *self;
    PyObject *source;     /* indexed for the keys that enter */
    int failed;           /* counting failed (exception set): stop counting */
    int borrow;           /* source is a list or tuple, entries borrow from it */
    size_t cap;           /* events per collected chunk at most, >= BKPY_CHUNK */
    size_t events;        /* events collected so far in this chunk */
    size_t ndistinct;     /* entries used */
    size_t held;          /* entries [0, held) own objs[e] */
    uint32_t mask;        /* table cells - 1 (2 cap cells: at most half full) */
    uint32_t gen;         /* the current chunk's cells, >= 1 */
    bktopk_cell *cells;   /* open addressing by h, linear probing */
    uint64_t *hs;         /* entry: the key's hash */
    uint32_t *counts;     /* entry: its events in this chunk */
    PyObject **objs;      /* entry < held: its key object (a reference) */
    size_t *at;           /* entry: index of its first event in the source */
    uint64_t *est;        /* entry: estimate after its add */
    PyObject **evicted;   /* up to cap evicted key objects of one flush */
    PyObject *slow;       /* borrow: the last slow-path key (a reference) */
    size_t slow_at;       /* its index (SIZE_MAX: none) */
    bkarrow_keys *arrow;  /* an Arrow source: key objects made from its rows */
    size_t nstage;        /* Arrow: events staged into input chunks */
    size_t cursor[2];     /* Arrow: bkarrow_api_slow_key's place */
    uint64_t stage_h[BKPY_CHUNK];
    size_t stage_at[BKPY_CHUNK];
} bktopk_batch;

/* A new reference to the key of event `index` of the source (batches
 * without key objects): the slow key bktopk_hold keeps, or the element. */
static PyObject *bktopk_source_key(bktopk_batch *b, size_t index)
{
    if (index == b->slow_at) {
        Py_INCREF(b->slow);
        return b->slow;
    }
    if (b->arrow != NULL) /* the row's value as to_pylist() gives it */
        return bkarrow_api_key(b->arrow, index);
    return PySequence_GetItem(b->source, (Py_ssize_t)index);
}

/* The old per-event loop, for conservative sketches (whose counters
 * depend on the order of adds): hs[0..n) added one by one, each offered
 * with its estimate; n <= BKPY_CHUNK <= b->cap. */
static void bktopk_run_events(bktopk_batch *b, const uint64_t *hs, PyObject *const *objs,
                              size_t n, size_t offset, const size_t *rows)
{
    BKTopK *self = b->self;
    bkpy_state *st = bksketch_cms_state(self->sketch);
    size_t nevicted = 0;
    int atomic;
    if (b->failed || n == 0)
        return;
    if (BK_UNLIKELY(!st->writable) && bkpy_state_check_writable(st) < 0) {
        b->failed = 1;
        return;
    }
    atomic = bkpy_state_atomic(st);
    bk_sketch_cms_add_estimate_many(bksketch_cms_core(self->sketch), hs, n, atomic, b->est);
    bksketch_cms_count_total(self->sketch, n, atomic);
    for (size_t j = 0; j < n; j++) {
        PyObject *key, *ev = NULL;
        int rc;
        /* Most events are below the minimum and untracked: one probe. */
        if (!bk_topk_admits(&self->t, hs[j], b->est[j]))
            continue;
        if (objs != NULL) {
            rc = bktopk_offer(self, hs[j], b->est[j], objs[j], &ev);
        } else if (bk_topk_find(&self->t, hs[j]) >= 0) {
            rc = bktopk_offer(self, hs[j], b->est[j], NULL, &ev); /* an update */
        } else {
            /* A buffer's element may run Python code (the collector):
             * offer after it. */
            key = bktopk_source_key(b, rows != NULL ? rows[j] : offset + j);
            if (key == NULL) {
                rc = -1;
            } else {
                rc = bktopk_offer(self, hs[j], b->est[j], key, &ev);
                Py_DECREF(key);
            }
        }
        if (ev != NULL)
            b->evicted[nevicted++] = ev;
        if (rc < 0) {
            b->failed = 1;
            break;
        }
    }
    for (size_t j = 0; j < nevicted; j++)
        Py_DECREF(b->evicted[j]);
}

/* Count the collected events and offer each distinct key, then release
 * the entries.  Runs Python code (releasing objects, indexing a buffer
 * source) only after the sketch is counted and the borrowed entries are
 * offered.  An exception already set (a bad key) is kept unless counting
 * itself fails, whose exception wins.  Returns 0, or -1 (b->failed). */
static int bktopk_flush(bktopk_batch *b)
{
    BKTopK *self = b->self;
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyObject **items = NULL;
    size_t n = b->ndistinct, held = b->held, nevicted = 0, nitems = 0;
    int pending = PyErr_Occurred() != NULL, failed_before = b->failed;
    if (n == 0)
        return b->failed ? -1 : 0;
    if (pending)
        PyErr_Fetch(&type, &value, &tb);
    b->ndistinct = 0;
    b->held = 0;
    if (++b->gen == 0) { /* 2^32 - 1 chunks later: start the cells again */
        memset(b->cells, 0, ((size_t)b->mask + 1) * sizeof(bktopk_cell));
        b->gen = 1;
    }
    if (!b->failed) {
        bkpy_state *st = bksketch_cms_state(self->sketch);
        int atomic;
        if (BK_UNLIKELY(!st->writable) && bkpy_state_check_writable(st) < 0) {
            b->failed = 1;
        } else {
            atomic = bkpy_state_atomic(st);
            bk_sketch_cms_add_estimate_counts(bksketch_cms_core(self->sketch), b->hs,
                                              b->counts, n, atomic, b->est);
            bksketch_cms_count_total(self->sketch, b->events, atomic);
        }
    }
    b->events = 0;
    if (b->borrow) {
        items = PySequence_Fast_ITEMS(b->source);
        nitems = (size_t)PySequence_Fast_GET_SIZE(b->source);
    }
    for (size_t e = 0; e < n && !b->failed; e++) {
        PyObject *key, *ev = NULL;
        int rc;
        if (!bk_topk_admits(&self->t, b->hs[e], b->est[e]))
            continue;
        if (e < held) {
            rc = bktopk_offer(self, b->hs[e], b->est[e], b->objs[e], &ev);
        } else if (b->borrow) {
            /* Borrowed: nothing ran Python code since it was hashed. */
            if (BK_UNLIKELY(b->at[e] >= nitems)) {
                PyErr_SetString(PyExc_RuntimeError, "the list changed size during update()");
                rc = -1;
            } else {
                rc = bktopk_offer(self, b->hs[e], b->est[e], items[b->at[e]], &ev);
            }
        } else if (bk_topk_find(&self->t, b->hs[e]) >= 0) {
            rc = bktopk_offer(self, b->hs[e], b->est[e], NULL, &ev); /* an update */
        } else {
            /* May run Python code (the collector): offer after it. */
            key = bktopk_source_key(b, b->at[e]);
            if (key == NULL) {
                rc = -1;
            } else {
                rc = bktopk_offer(self, b->hs[e], b->est[e], key, &ev);
                Py_DECREF(key);
            }
        }
        if (ev != NULL)
            b->evicted[nevicted++] = ev;
        if (rc < 0)
            b->failed = 1;
    }
    for (size_t j = 0; j < nevicted; j++)
        Py_DECREF(b->evicted[j]);
    for (size_t e = 0; e < held; e++)
        Py_DECREF(b->objs[e]);
    if (pending) {
        if (b->failed && !failed_before) { /* counting's own error wins */
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        } else {
            PyErr_Restore(type, value, tb);
        }
    }
    return b->failed ? -1 : 0;
}

/* Collect hs[0..n) (n <= BKPY_CHUNK), the keys of events offset.. of the
 * source (or of events rows[0..n) when rows is not NULL), with their key objects when the caller has them (borrowed: the
 * entry takes its own reference) or NULL (a buffer, or a list the entries
 * borrow from).  Counts the chunk before returning when another input
 * chunk might not fit, so that a borrowing batch never flushes (Python
 * code) before it has counted what it borrowed. */
static void bktopk_collect(bktopk_batch *b, const uint64_t *hs, PyObject *const *objs,
                           size_t n, size_t offset, const size_t *rows)
{
    const uint32_t mask = b->mask, gen = b->gen;
    bktopk_cell *cells = b->cells;
    uint64_t *ehs = b->hs;
    uint32_t *counts = b->counts;
    size_t nd;
    if (b->failed || n == 0)
        return;
    if (BK_UNLIKELY(bksketch_cms_core(b->self->sketch)->conservative)) {
        if (bktopk_flush(b) == 0)
            bktopk_run_events(b, hs, objs, n, offset, rows);
        return;
    }
    /* Never taken after a collect or a hold (both leave room for a full
     * input chunk); kept for any other caller. */
    if (b->events + n > b->cap && bktopk_flush(b) < 0)
        return;
    b->events += n;
    nd = b->ndistinct;
    for (size_t j = 0; j < n; j++) {
        uint64_t h = hs[j];
        uint32_t i = (uint32_t)(h >> 32) & mask;
        if (j + BKTOPK_AGG_AHEAD < n)
            bk_prefetch_w(&cells[(uint32_t)(hs[j + BKTOPK_AGG_AHEAD] >> 32) & mask]);
        for (;;) {
            bktopk_cell *c = &cells[i];
            if (c->gen != gen) {
                c->h = h;
                c->e = (uint32_t)nd;
                c->gen = gen;
                ehs[nd] = h;
                counts[nd] = 1;
                b->at[nd] = rows != NULL ? rows[j] : offset + j;
                if (objs != NULL) {
                    Py_INCREF(objs[j]);
                    b->objs[nd] = objs[j];
                    b->held = nd + 1; /* every entry holds one */
                } else if (BK_UNLIKELY(offset + j == b->slow_at)) {
                    /* The slow key is the first entry after bktopk_hold. */
                    Py_INCREF(b->slow);
                    b->objs[nd] = b->slow;
                    b->held = nd + 1;
                }
                nd++;
                break;
            }
            if (c->h == h) {
                counts[c->e]++;
                break;
            }
            i = (i + 1) & mask;
        }
    }
    b->ndistinct = nd;
    if (b->events + BKPY_CHUNK > b->cap)
        bktopk_flush(b);
}

/* A batch for about `hint` events (0: unknown): its arrays in one block. */
static bktopk_batch *bktopk_batch_new(BKTopK *self, PyObject *source, Py_ssize_t hint)
{
    size_t cap = BKPY_CHUNK, cells, size;
    bktopk_batch *b;
    char *p;
    while (cap < BKTOPK_AGG_MAX && (hint <= 0 || (size_t)hint > cap))
        cap *= 2;
    cells = 2 * cap;
    size = sizeof *b + cells * sizeof(bktopk_cell) +
           cap * (sizeof(uint64_t) * 2 + sizeof(PyObject *) * 2 + sizeof(size_t) +
                  sizeof(uint32_t));
    b = (bktopk_batch *)PyMem_Malloc(size);
    if (b == NULL)
        return NULL;
    p = (char *)(b + 1);
    b->cells = (bktopk_cell *)(void *)p;
    p += cells * sizeof(bktopk_cell);
    b->hs = (uint64_t *)(void *)p;
    p += cap * sizeof(uint64_t);
    b->est = (uint64_t *)(void *)p;
    p += cap * sizeof(uint64_t);
    b->objs = (PyObject **)(void *)p;
    p += cap * sizeof(PyObject *);
    b->evicted = (PyObject **)(void *)p;
    p += cap * sizeof(PyObject *);
    b->at = (size_t *)(void *)p;
    p += cap * sizeof(size_t);
    b->counts = (uint32_t *)(void *)p;
    memset(b->cells, 0, cells * sizeof(bktopk_cell));
    b->self = self;
    b->source = source;
    b->failed = 0;
    b->borrow = 0;
    b->cap = cap;
    b->events = 0;
    b->ndistinct = 0;
    b->held = 0;
    b->mask = (uint32_t)(cells - 1);
    b->gen = 1;
    b->slow = NULL;
    b->slow_at = SIZE_MAX;
    b->arrow = NULL;
    b->nstage = 0;
    b->cursor[0] = b->cursor[1] = 0;
    return b;
}

static void bktopk_buffer_chunk(void *ctx, const uint64_t *hs, size_t n, size_t offset)
{
    bktopk_collect((bktopk_batch *)ctx, hs, NULL, n, offset, NULL);
}

/* An Arrow batch's runs of non-null rows (py_arrow.c), staged with their
 * row numbers into the input chunks the list loop makes of the same
 * non-null values as Python objects (bkpy_chunks_sequence): BKPY_CHUNK
 * events, cut before each value that would take its slow path (a
 * non-ASCII str, an int beyond int64, a bool).  The sketch is then counted
 * in the same chunks and flushed at the same events, whatever the Arrow
 * chunks and nulls, so update(arr) equals update(arr.to_pylist() without
 * the nulls) exactly, candidates and their order included. */
static void bktopk_arrow_chunk(void *ctx, const uint64_t *hs, size_t n, size_t offset)
{
    bktopk_batch *b = (bktopk_batch *)ctx;
    for (size_t j = 0; j < n; j++) {
        if (b->nstage > 0 && bkarrow_api_slow_key(b->arrow, offset + j, b->cursor)) {
            bktopk_collect(b, b->stage_h, NULL, b->nstage, 0, b->stage_at);
            b->nstage = 0;
        }
        b->stage_h[b->nstage] = hs[j];
        b->stage_at[b->nstage] = offset + j;
        if (++b->nstage == BKPY_CHUNK) {
            bktopk_collect(b, b->stage_h, NULL, BKPY_CHUNK, 0, b->stage_at);
            b->nstage = 0;
        }
    }
}

/* Arrow arrays and streams (k, opened by the caller): hashed from the C
 * Data Interface (with the GIL: see the essay above), each entering key
 * made from its row as to_pylist() gives it; null rows are no key.  k
 * stays open until the last flush has made its key objects, then is
 * closed.  Returns 0 or -1 (exception set). */
static int bktopk_update_arrow(bktopk_batch *b, bkarrow_keys *k)
{
    bkpy_state *st = bksketch_cms_state(b->self->sketch);
    int rc;
    b->arrow = k;
    if (bkarrow_api_rows(k) > 0)
        bkpy_state_note_keys(st, bkarrow_api_seen(k));
    bkarrow_api_run(k, &st->hasher, bktopk_arrow_chunk, b);
    if (b->nstage > 0)
        bktopk_collect(b, b->stage_h, NULL, b->nstage, 0, b->stage_at);
    b->nstage = 0;
    rc = bktopk_flush(b);
    b->arrow = NULL;
    bkarrow_api_close(k);
    return rc;
}

/* bkpy_hold_fn of a list or tuple: key (items[index]) takes the slow
 * path, which may run Python code that changes the list, so every entry
 * borrowed so far takes its reference now, and the key is kept (its entry
 * takes it, bktopk_collect).  The chunks before it are all collected. */
static int bktopk_hold(void *ctx, PyObject *key, size_t index)
{
    bktopk_batch *b = (bktopk_batch *)ctx;
    PyObject **items = PySequence_Fast_ITEMS(b->source);
    PyObject *old = b->slow;
    if (b->failed)
        return -1;
    for (size_t e = b->held; e < b->ndistinct; e++) {
        b->objs[e] = items[b->at[e]];
        Py_INCREF(b->objs[e]);
    }
    b->held = b->ndistinct;
    Py_INCREF(key);
    b->slow = key;
    b->slow_at = index;
    Py_XDECREF(old); /* may run Python code: nothing is borrowed now */
    return 0;
}

/* Lists, tuples and other iterables under key=, and any other iterable:
 * up to BKPY_CHUNK keys hashed, each
 * held by a reference (a key= function or an iterator may run Python code
 * that changes the list), then collected.  A key that fails to hash or an
 * iterator that raises stops the batch with the keys before it collected
 * (the last flush counts them, as a loop of add() would have).  Returns 0,
 * or -1 with an exception set. */
static int bktopk_update_objects(bktopk_batch *b, PyObject *keys)
{
    uint64_t hs[BKPY_CHUNK];
    PyObject *objs[BKPY_CHUNK];
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    size_t fill = 0;
    unsigned seen = 0;
    int seq = PyList_CheckExact(keys) || PyTuple_CheckExact(keys), stopped = 0;
    PyObject *iter = NULL;
    Py_ssize_t i = 0;
    bkpy_state *st = bksketch_cms_state(b->self->sketch);
    if (!seq && (bkpy_check_iterable(keys, "add()") < 0 ||
                 (iter = PyObject_GetIter(keys)) == NULL))
        return -1;
    for (;;) {
        PyObject *key;
        if (seq) {
            if (i >= PySequence_Fast_GET_SIZE(keys))
                break;
            key = PySequence_Fast_ITEMS(keys)[i++];
            Py_INCREF(key);
        } else if ((key = PyIter_Next(iter)) == NULL) {
            stopped = PyErr_Occurred() != NULL;
            break;
        }
        objs[fill] = key;
        if (bkpy_hash_key_seen(key, st->keyfunc, &st->hasher, &hs[fill], &seen) < 0) {
            Py_DECREF(key);
            stopped = 1;
            break;
        }
        if (++fill == BKPY_CHUNK) {
            bktopk_collect(b, hs, objs, fill, 0, NULL);
            for (size_t j = 0; j < fill; j++)
                Py_DECREF(objs[j]);
            fill = 0;
            if (b->failed)
                break;
            st = bksketch_cms_state(b->self->sketch);
        }
    }
    if (stopped)
        PyErr_Fetch(&type, &value, &tb);
    bkpy_state_note_keys(bksketch_cms_state(b->self->sketch), seen);
    if (fill > 0) {
        bktopk_collect(b, hs, objs, fill, 0, NULL);
        for (size_t j = 0; j < fill; j++)
            Py_DECREF(objs[j]);
    }
    Py_XDECREF(iter);
    if (stopped) {
        if (b->failed) {  /* counting's own error wins */
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        } else {
            PyErr_Restore(type, value, tb);
        }
        return -1;
    }
    return b->failed ? -1 : 0;
}

/* update(keys): count every key; see the essay at the top for how it
 * relates to add() on each key. */
static PyObject *bktopk_update(BKTopK *self, PyObject *keys)
{
    bktopk_batch *b;
    bkpy_state *st;
    bkarrow_keys *arrow = NULL;
    Py_ssize_t hint;
    int rc;
    if (bktopk_ready(self) < 0)
        return NULL;
    if (bkpy_check_keys(keys, "add()") < 0)
        return NULL;
    st = bksketch_cms_state(self->sketch);
    if (bkpy_state_check_writable(st) < 0)
        return NULL;
    /* Sized by a list's or tuple's length (no __length_hint__ call: that
     * may run Python code); anything else gets the largest chunk. */
    hint = 0;
    if (PyList_CheckExact(keys) || PyTuple_CheckExact(keys)) {
        hint = PySequence_Fast_GET_SIZE(keys);
    } else if (st->keyfunc == NULL && !bkbytekeys_api_check(keys) &&
               !PyObject_CheckBuffer(keys) && bkarrow_api_check(keys)) {
        /* Arrow: opened (validated) first, sized by its rows.  A producer
         * that cannot export is iterated, as the other batches do. */
        int export_failed = 0;
        arrow = bkarrow_api_open(keys, &export_failed);
        if (arrow == NULL) {
            if (!export_failed || !(PyErr_ExceptionMatches(PyExc_TypeError) ||
                                    PyErr_ExceptionMatches(PyExc_ValueError) ||
                                    PyErr_ExceptionMatches(PyExc_NotImplementedError)))
                return NULL;
            PyErr_Clear();
        } else {
            hint = bkarrow_api_rows(arrow);
        }
        st = bksketch_cms_state(self->sketch); /* the export ran Python code */
        if (bkpy_state_check_writable(st) < 0) {
            bkarrow_api_close(arrow);
            return NULL;
        }
    }
    b = bktopk_batch_new(self, keys, hint);
    if (b == NULL) {
        bkarrow_api_close(arrow);
        return PyErr_NoMemory();
    }
    Py_INCREF(self); /* a finalizer run meanwhile must not free it */
    if (st->keyfunc == NULL &&
        (bkbytekeys_api_check(keys) || (PyObject_CheckBuffer(keys) && !PyList_Check(keys)))) {
        bkpy_batch_info info;
        /* nogil = 0: see the essay above. */
        rc = bkpy_for_each_chunk(keys, NULL, &st->hasher, bktopk_buffer_chunk, NULL, b, 0,
                                 &info);
        bkpy_state_note_keys(bksketch_cms_state(self->sketch), info.seen);
    } else if (st->keyfunc == NULL && (PyList_CheckExact(keys) || PyTuple_CheckExact(keys))) {
        /* The shared list loop (inline keys, prefetched objects); the
         * entries borrow the keys (bktopk_hold). */
        bkpy_batch_info info;
        b->borrow = 1;
        rc = bkpy_for_each_chunk_hold(keys, NULL, &st->hasher, bktopk_buffer_chunk, bktopk_hold,
                                      b, &info);
        bkpy_state_note_keys(bksketch_cms_state(self->sketch), info.seen);
    } else if (arrow != NULL) {
        rc = bktopk_update_arrow(b, arrow);
    } else {
        rc = bktopk_update_objects(b, keys);
    }
    /* The last collected chunk: counted even after a bad key (an
     * exception already set is kept). */
    if (bktopk_flush(b) < 0)
        rc = -1;
    Py_XDECREF(b->slow);
    PyMem_Free(b);
    Py_DECREF(self);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
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
