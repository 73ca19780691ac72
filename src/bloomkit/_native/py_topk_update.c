/*
 * py_topk_update.c -- TopKBase.update(keys), the batch path of TopK's type:
 * events are hashed in input chunks (a list, any iterable, a numpy buffer
 * or an Arrow column), summed per distinct key in a table of up to
 * BKTOPK_AGG_MAX events, then counted in the sketch and offered to the
 * candidates once per distinct key (bktopk_flush); a conservative sketch
 * takes the per-event loop.  Why, and what update() guarantees against
 * add() on each key, is the essay at the top of py_topk.c, which holds the
 * type and its other methods; the two share py_topk.h.
 */
#include "py_topk.h"

/* ---- Begin logic for batches ------------------------------------------ */

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

/* update(keys): count every key; see the essay at the top of py_topk.c for how it
 * relates to add() on each key. */
PyObject *bktopk_update(BKTopK *self, PyObject *keys)
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

/* ---- End logic for batches -------------------------------------------- */
