/*
 * py_sketch.h -- what other glue files (py_topk.c) may use of the
 * count-min sketch's CPython type (py_sketch.c): a type check and the
 * parts of the object TopK drives directly; and what py_sketch.c shares
 * with its part py_sketch_tlfu.c (TinyLFU's type), which nothing else uses.
 */
#ifndef BK_PY_SKETCH_H
#define BK_PY_SKETCH_H

#include "py_common.h"

#include "bk_sketch.h"

/* Is o a CountMinBase (or a subclass such as CountMinSketch)? */
int bksketch_cms_check(PyObject *o);
/* The core and the state of a CountMinBase (o checked by the caller).
 * Pointers into the object: valid while it lives, re-read after anything
 * that may run Python code (a _detach re-attaches both in place). */
bk_cms *bksketch_cms_core(PyObject *o);
bkpy_state *bksketch_cms_state(PyObject *o);
/* total += n (saturating; atomic as the counters are). */
void bksketch_cms_count_total(PyObject *o, uint64_t n, int atomic);
/* A count argument: a non-negative int (>= 2**64 saturates).  what names
 * it in the error.  0 or -1 with an exception set. */
int bksketch_cms_parse_count(PyObject *obj, uint64_t *out, const char *what);

/* ---- What py_sketch.c and py_sketch_tlfu.c share ----------------------- */

/* The common initial sequence of both sketch objects (BKCms in
 * py_sketch.c, BKTlfu in py_sketch_tlfu.c), so the state-level pieces
 * below are written once. */
typedef struct {
    PyObject_HEAD
    bkpy_state st;
    PyObject *weakreflist;
} BKSk;

#define BKSK_COMMON_GETSET                                                                     \
    BKPY_PAYLOAD_NBYTES("Bytes of the payload."),                                             \
    BKPY_OBJ_GETSET

/* Equality of two sketches of one kind (bkpy_desc.equal; py_sketch.c). */
int bksketch_equal(PyObject *a, PyObject *b);
/* A constructor's exact-int argument as u64, 0 when out of range (py_sketch.c). */
uint64_t bksketch_u64_or_0(PyObject *obj);
/* Register TinyLFUBase (py_sketch_tlfu.c); bksketch_init calls it. */
int bksketch_tlfu_init(PyObject *m);

#endif /* BK_PY_SKETCH_H */
