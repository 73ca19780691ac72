/*
 * py_topk.h -- what the two files of TopK's CPython type share, and nothing
 * else includes: the object struct and the three functions one calls in
 * the other.  py_topk.c holds the type, its methods and the design essay;
 * py_topk_update.c holds update(), the batch path.
 */
#ifndef BK_PY_TOPK_H
#define BK_PY_TOPK_H

#include "py_common.h"

#include "bk_topk.h"
#include "py_sketch.h"

typedef struct {
    PyObject_HEAD
    PyObject *sketch;   /* a CountMinBase; NULL in a shell made for unpickling */
    bk_topk t;          /* each slot's obj: a strong reference to its key */
    PyObject *weakreflist;
} BKTopK;

/* 0, or -1 with TypeError for a shell made for unpickling (no sketch). */
int bktopk_ready(BKTopK *self);
/* Offer h/est with key object key (borrowed): on insertion the slot takes
 * a reference; an evicted object is returned (a reference to release once
 * nothing reads the candidates any more).  -1 on MemoryError. */
int bktopk_offer(BKTopK *self, uint64_t h, uint64_t est, PyObject *key,
                 PyObject **evicted);
/* update(keys) (py_topk_update.c): count every key. */
PyObject *bktopk_update(BKTopK *self, PyObject *keys);

#endif /* BK_PY_TOPK_H */
