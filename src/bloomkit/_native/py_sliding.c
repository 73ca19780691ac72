/*
 * py_sliding.c -- CPython type for the age-partitioned (sliding-window)
 * Bloom filter.
 *
 * bloomkit._core.SlidingBase works on its state buffer (owned, or borrowed
 * from an mmap) through the bkpy_desc contract of py_common.c; this file
 * holds only what is particular to the structure: the constructor, the
 * per-key and batch paths, the clock, statistics and getters.  The facade
 * bloomkit.SlidingBloomFilter (sliding.py) does the sizing.
 *
 * The clock.  In time mode every operation needs "now": the object holds
 * its clock (the `clock` attribute; NULL means time.time, injectable for
 * tests, kept by copy(), not by pickling or files); the C methods call it
 * with the GIL held, before touching the state (R31: no Python code
 * between reading the state and using it), and convert its seconds to
 * integer microseconds, floor(t * 10^6).  Count mode never calls it.
 *
 * The early-shift warning.  When an add or add_many of a time-mode filter
 * forces an early shift (more than G adds in one generation), the object
 * warns once with bloomkit.SlidingWindowWarning (errors.py), from here: the
 * public class then needs no Python-level writer (issue #21 item 1: a
 * Python add cost a frame on every call; tests/test_percall.py).  The
 * warning is issued after the state is updated (a filter "error" makes the
 * call raise, the keys stay added, as before).
 *
 * Writers: add and add_many shift generations (clear a slice, move the
 * generation counter), so writes use plain stores; a GIL-free add_many over
 * a numpy array holds the state's batch lock and per-key writers wait for
 * it, as in py_bloom.c.  Files are shared by one writer at a time
 * (its descriptor's writer lock is exclusive, bk_sliding.c).
 */
#include "py_common.h"

#include <math.h>

#include "bk_endian.h"
#include "bk_sliding.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_sliding sl;
    PyObject *weakreflist;
    PyObject *clock;   /* time mode's clock; NULL: time.time */
    int warned_early;  /* SlidingWindowWarning issued once per object */
} BKSliding;

static PyTypeObject BKSliding_Type;
static PyObject *bksliding_time_time;    /* time.time, the default clock */
static PyObject *bksliding_Warning;      /* bloomkit.errors.SlidingWindowWarning */

#define BKSLIDING_PARAM64(self, off) bk_load_u64le((self)->sl.params + (off))
#define BKSLIDING_TIMED(self) (BKSLIDING_PARAM64(self, BK_SLIDING_P_WINDOW_US) != 0)

/* ---- Begin logic for the clock ---------------------------------------- */

/* Seconds (int or float) -> microseconds; -1 with ValueError/TypeError. */
static int bksliding_seconds_to_us(PyObject *t, int64_t *out)
{
    const double lim = 4.0e12; /* |t| < 2^62 microseconds, with margin */
    double d;
    if (PyLong_Check(t)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(t, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow || v > (long long)lim || v < -(long long)lim)
            goto range;
        *out = (int64_t)v * 1000000;
        return 0;
    }
    d = PyFloat_AsDouble(t);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "the clock must return seconds as a float or int, not %.50s",
                     Py_TYPE(t)->tp_name);
        return -1;
    }
    if (!(d > -lim && d < lim))
        goto range;
    *out = (int64_t)floor(d * 1e6);
    return 0;
range:
    PyErr_SetString(PyExc_ValueError,
                    "the clock returned a time out of range (|t| must be below 4e12 seconds; "
                    "it must be seconds since the epoch, like time.time())");
    return -1;
}

/* now in microseconds (time mode) or 0 (count mode).  GIL held; may run
 * Python code (the clock): call before reading the state. */
static int bksliding_now(BKSliding *self, int64_t *now)
{
    PyObject *clock, *t;
    int rc;
    *now = 0;
    if (!BKSLIDING_TIMED(self))
        return 0;
    /* a strong reference for the call: the clock may replace itself */
    clock = Py_NewRef(self->clock != NULL ? self->clock : bksliding_time_time);
    t = PyObject_CallNoArgs(clock);
    Py_DECREF(clock);
    if (t == NULL)
        return -1;
    rc = bksliding_seconds_to_us(t, now);
    Py_DECREF(t);
    return rc;
}

static PyObject *bksliding_get_clock(BKSliding *self, void *c)
{
    (void)c;
    return Py_NewRef(self->clock != NULL ? self->clock : bksliding_time_time);
}

static int bksliding_set_clock(BKSliding *self, PyObject *value, void *c)
{
    (void)c;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the clock cannot be deleted (set time.time)");
        return -1;
    }
    if (!PyCallable_Check(value)) {
        PyErr_Format(PyExc_TypeError, "clock must be a callable, not %.50s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    Py_XSETREF(self->clock, Py_NewRef(value));
    return 0;
}

/* ---- End logic for the clock ------------------------------------------ */

/* ---- Begin logic for the early-shift warning -------------------------- */

/* Format x as Python's f"{x:g}" does (the same routine). */
static PyObject *bksliding_fmt_g(double x)
{
    char *s = PyOS_double_to_string(x, 'g', 6, 0, NULL);
    PyObject *o;
    if (s == NULL)
        return NULL;
    o = PyUnicode_FromString(s);
    PyMem_Free(s);
    return o;
}

/* After an add or add_many at now: warn once per object if it shifted
 * early (early_shifts moved past `before`).  0, or -1 when the warning
 * was turned into an exception (or formatting failed). */
static int bksliding_warn_early(BKSliding *self, uint64_t before, int64_t now)
{
    uint64_t early = BKSLIDING_PARAM64(self, BK_SLIDING_P_EARLY_SHIFTS);
    uint64_t window_us = BKSLIDING_PARAM64(self, BK_SLIDING_P_WINDOW_US);
    double window, guaranteed;
    PyObject *gen_s, *kept_s, *win_s, *msg;
    int rc;
    if (BK_LIKELY(early == before) || window_us == 0 || early < before || self->warned_early)
        return 0;
    self->warned_early = 1;
    /* stats()["guaranteed_window"]: the adds since the birth of the slice
     * of age l are all present */
    window = (double)window_us / 1e6;
    guaranteed = (double)bk_sliding_lookback_us(&self->sl, now) / 1e6;
    if (guaranteed > window)
        guaranteed = window;
    gen_s = bksliding_fmt_g((double)window_us / (double)self->sl.l / 1e6);
    kept_s = bksliding_fmt_g(guaranteed);
    win_s = bksliding_fmt_g(window);
    msg = gen_s && kept_s && win_s
              ? PyUnicode_FromFormat(
                    "SlidingBloomFilter shifted early: more than %llu adds (capacity / l) arrived "
                    "within %U s (window / l); keys are now kept for %U s instead of %U s.  Fix: "
                    "a larger capacity (at least the adds of one window at the peak rate).",
                    (unsigned long long)BKSLIDING_PARAM64(self, BK_SLIDING_P_GEN_LENGTH), gen_s,
                    kept_s, win_s)
              : NULL;
    Py_XDECREF(gen_s);
    Py_XDECREF(kept_s);
    Py_XDECREF(win_s);
    if (msg == NULL)
        return -1;
    rc = PyErr_WarnEx(bksliding_Warning, PyUnicode_AsUTF8(msg), 1);
    Py_DECREF(msg);
    return rc;
}

/* ---- End logic for the early-shift warning ---------------------------- */

/* SlidingBase(k, l, slice_bits, capacity, error_rate, window_us=0, now=None,
 *             *, seed=0, secret=None, key=None, layout=0) */
static PyObject *bksliding_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"k", "l", "slice_bits", "capacity", "error_rate", "window_us",
                             "now", "seed", "secret", "key", "layout", NULL};
    unsigned int k, l, layout = BK_SLIDING_LAYOUT_SLICED;
    unsigned long long m, window_us = 0;
    PyObject *now_obj = Py_None;
    uint64_t payload_len = 0;
    int64_t now = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(BK_KIND_SLIDING_BLOOM); /* its descriptor's limits */
    const char *reason = NULL;
    bk_rc shape;
    BKSliding *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "IIKKd|KO$OOOI:SlidingBase", kwlist, &k, &l,
                                     &m, &a.capacity, &a.error_rate, &window_us, &now_obj,
                                     &a.seed_obj, &a.secret, &a.key, &layout))
        return NULL;
    /* shape first: its reason is read after the call sets it (as one call's
     * two arguments the order was unspecified: a NULL reason, a crash on
     * every bad shape) */
    shape = bk_sliding_shape_v(k, l, m, layout, &payload_len, &reason);
    if (bkpy_ctor_check(&a, shape, reason) < 0)
        return NULL;
    if (window_us > (unsigned long long)BK_SLIDING_MAX_WINDOW_US) {
        PyErr_SetString(PyExc_ValueError, "window must be below 2**62 microseconds");
        return NULL;
    }
    if (window_us != 0 && now_obj != Py_None && bksliding_seconds_to_us(now_obj, &now) < 0)
        return NULL;
    self = bkpy_obj_new(type, BK_SLIDING_HEADER_LEN + payload_len, &a);
    if (self == NULL)
        return NULL;
    bk_sliding_init_state_v(self->st.buf, k, l, m, layout, a.capacity, a.error_rate, window_us,
                            now, a.seed, a.keyed, bk_hasher_key_check(&self->st.hasher));
    bk_sliding_attach(&self->sl, self->st.buf);
    return (PyObject *)self;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static PyObject *bksliding_add(BKSliding *self, PyObject *key)
{
    uint64_t h, early;
    int64_t now;
    int was_absent;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    if (bksliding_now(self, &now) < 0)
        return NULL;
    bkpy_state_wait_batches(&self->st); /* a GIL-free add_many holds the filter */
    early = BKSLIDING_PARAM64(self, BK_SLIDING_P_EARLY_SHIFTS);
    was_absent = bk_sliding_add(&self->sl, h, now);
    if (BK_UNLIKELY(BKSLIDING_PARAM64(self, BK_SLIDING_P_EARLY_SHIFTS) != early) &&
        bksliding_warn_early(self, early, now) < 0)
        return NULL;
    return PyBool_FromLong(was_absent);
}

static int bksliding_contains(BKSliding *self, PyObject *key)
{
    uint64_t h;
    int64_t now;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return -1;
    if (bksliding_now(self, &now) < 0)
        return -1;
    return bk_sliding_contains(&self->sl, h, now);
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

typedef struct {
    bkpy_writer w; /* first: the shared writer batch (py_common.h) */
    bk_sliding *sl;
    int64_t now;
    uint64_t added;
} bksliding_add_ctx;

static void bksliding_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bksliding_add_ctx *ctx = (bksliding_add_ctx *)vctx;
    (void)offset;
    bkpy_writer_chunk(&ctx->w);
    ctx->added += bk_sliding_add_many(ctx->sl, hs, n, ctx->now);
}

static PyObject *bksliding_add_many(BKSliding *self, PyObject *keys)
{
    bksliding_add_ctx ctx = {{&self->st, 0}, &self->sl, 0, 0};
    bkpy_batch_info info;
    uint64_t early;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (bksliding_now(self, &ctx.now) < 0) /* one "now" for the whole batch */
        return NULL;
    early = BKSLIDING_PARAM64(self, BK_SLIDING_P_EARLY_SHIFTS);
    /* a failing key: its exception, no warning (the next add warns) */
    if (bkpy_for_each_chunk_writer(&ctx.w, keys, bksliding_add_chunk, NULL, &info) < 0 ||
        bksliding_warn_early(self, early, ctx.now) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(ctx.added);
}

/* contains_many's view: the filter and one clock reading for the batch. */
typedef struct {
    const bk_sliding *sl;
    int64_t now;
} bksliding_view;

static void bksliding_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    const bksliding_view *v = (const bksliding_view *)view;
    bk_sliding_contains_many(v->sl, hs, n, v->now, out);
}

/* contains_many's answers: a list / numpy array, or bits into pk. */
static PyObject *bksliding_query(BKSliding *self, PyObject *keys, bkpy_packed *pk)
{
    bksliding_view v = {&self->sl, 0};
    if (bksliding_now(self, &v.now) < 0)
        return NULL;
    /* Readers need no lock: a concurrent per-key writer holds the GIL, and
     * a GIL-free add_many of another thread at worst moves the ring under
     * the reader (a momentary extra false positive, never a lost key of
     * the window: bk_sliding.c); the pin keeps the buffer alive. */
    return bkpy_contains_bits(&self->st, keys, bksliding_probe, &v, BKPY_QUERY_PINNED, pk);
}

static PyObject *bksliding_contains_many(BKSliding *self, PyObject *keys)
{
    return bksliding_query(self, keys, NULL);
}

static PyObject *bksliding_contains_bits(PyObject *self, PyObject *keys, bkpy_packed *pk)
{
    return bksliding_query((BKSliding *)self, keys, pk);
}

/* ---- End logic for batches -------------------------------------------- */

static PyObject *bksliding_clear(BKSliding *self, PyObject *Py_UNUSED(ignored))
{
    int64_t now;
    if (bkpy_state_check_writable(&self->st) < 0 || bksliding_now(self, &now) < 0)
        return NULL;
    bkpy_state_wait_batches(&self->st);
    bk_sliding_clear(&self->sl, now);
    Py_RETURN_NONE;
}

/* _advance(): apply the pending time shifts now (adds do it themselves). */
static PyObject *bksliding_advance(BKSliding *self, PyObject *Py_UNUSED(ignored))
{
    int64_t now;
    if (bkpy_state_check_writable(&self->st) < 0 || bksliding_now(self, &now) < 0)
        return NULL;
    bkpy_state_wait_batches(&self->st);
    bk_sliding_advance(&self->sl, now);
    Py_RETURN_NONE;
}

static Py_ssize_t bksliding_len(BKSliding *self)
{
    int64_t now;
    uint64_t c;
    if (bksliding_now(self, &now) < 0)
        return -1;
    c = bk_sliding_window_count(&self->sl, now);
    return c > (uint64_t)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)c;
}

static PyObject *bksliding_estimate_error_rate(BKSliding *self, PyObject *Py_UNUSED(ignored))
{
    int64_t now;
    if (bksliding_now(self, &now) < 0)
        return NULL;
    return PyFloat_FromDouble(bk_sliding_estimate_error_rate(&self->sl, now));
}

/* _raw_stats() -> dict of the counters at the clock's now. */
static PyObject *bksliding_raw_stats(BKSliding *self, PyObject *Py_UNUSED(ignored))
{
    int64_t now;
    const uint8_t *p = self->sl.params;
    if (bksliding_now(self, &now) < 0)
        return NULL;
    return Py_BuildValue(
        "{sIsIsKsKsKsKsIsKsKsKsLsKsLsKsKsL}", "k", self->sl.k, "l", self->sl.l, "slice_bits",
        (unsigned long long)self->sl.m, "generation_length",
        (unsigned long long)bk_load_u64le(p + BK_SLIDING_P_GEN_LENGTH), "generation",
        (unsigned long long)bk_load_u64le(p + BK_SLIDING_P_GENERATION), "count",
        (unsigned long long)bk_load_u64le(p + BK_SLIDING_P_COUNT), "ring",
        (unsigned int)bk_load_u32le(p + BK_SLIDING_P_RING), "inserted",
        (unsigned long long)bk_load_u64le(p + BK_SLIDING_P_INSERTED), "window_us",
        (unsigned long long)bk_load_u64le(p + BK_SLIDING_P_WINDOW_US), "early_shifts",
        (unsigned long long)bk_load_u64le(p + BK_SLIDING_P_EARLY_SHIFTS), "start_us",
        (long long)(int64_t)bk_load_u64le(p + BK_SLIDING_P_START_US), "pending",
        (unsigned long long)bk_sliding_pending(&self->sl, now), "now_us", (long long)now,
        "window_count", (unsigned long long)bk_sliding_window_count(&self->sl, now),
        "popcount_youngest",
        (unsigned long long)bk_sliding_popcount(
            &self->sl, bk_sliding_phys(bk_sliding_generation(&self->sl), 0, self->sl.S)),
        "lookback_us", (long long)bk_sliding_lookback_us(&self->sl, now));
}

static PyObject *bksliding_key_hash(BKSliding *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

/* _slice_positions(key) -> list of the key's bit in each physical slice. */
static PyObject *bksliding_slice_positions(BKSliding *self, PyObject *key)
{
    uint64_t h, pos[BK_SLIDING_MAX_SLICES];
    PyObject *out;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    bk_sliding_positions(&self->sl, h, pos);
    out = PyList_New(self->sl.S);
    if (out == NULL)
        return NULL;
    for (uint32_t i = 0; i < self->sl.S; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(pos[i]);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* _design(error_rate, max_l) -> (k, l, m_over_g): the sizing of bk_sliding.c. */
static PyObject *bksliding_design(PyObject *cls, PyObject *args)
{
    double p, r = 0.0;
    unsigned int max_l;
    uint32_t k = 0, l = 0;
    const char *reason = NULL;
    (void)cls;
    if (!PyArg_ParseTuple(args, "dI:_design", &p, &max_l))
        return NULL;
    if (bk_sliding_model_size(p, max_l, &k, &l, &r, &reason) != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason);
        return NULL;
    }
    return Py_BuildValue("(IId)", k, l, r);
}

/* _design_blocked(error_rate) -> (k, l, lam): the blocked layout's sizing
 * (bk_sliding_blocked.c). */
static PyObject *bksliding_design_blocked(PyObject *cls, PyObject *args)
{
    double p, lam = 0.0;
    uint32_t k = 0, l = 0;
    const char *reason = NULL;
    bk_rc rc;
    (void)cls;
    if (!PyArg_ParseTuple(args, "d:_design_blocked", &p))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = bk_sliding_blocked_size(p, &k, &l, &lam, &reason);
    Py_END_ALLOW_THREADS
    if (rc != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason);
        return NULL;
    }
    return Py_BuildValue("(IId)", k, l, lam);
}

/* _model_rate_blocked(k, l, lam) -> (rate, standard error) of the blocked model. */
static PyObject *bksliding_model_rate_blocked(PyObject *cls, PyObject *args)
{
    unsigned int k, l;
    double lam, se = 0.0, rate;
    (void)cls;
    if (!PyArg_ParseTuple(args, "IId:_model_rate_blocked", &k, &l, &lam))
        return NULL;
    rate = bk_sliding_blocked_model_rate(k, l, lam, &se);
    return Py_BuildValue("(dd)", rate, se);
}

/* _model_rate(k, l, m_over_g) -> the sizing model's worst-moment rate. */
static PyObject *bksliding_model_rate(PyObject *cls, PyObject *args)
{
    unsigned int k, l;
    double r;
    (void)cls;
    if (!PyArg_ParseTuple(args, "IId:_model_rate", &k, &l, &r))
        return NULL;
    if (!(r > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "m_over_g must be positive");
        return NULL;
    }
    return PyFloat_FromDouble(bk_sliding_model_rate(k, l, r));
}

/* copy() keeps the clock (the warning flag starts afresh). */
static int bksliding_copied(PyObject *copy, PyObject *self)
{
    Py_XSETREF(((BKSliding *)copy)->clock, Py_XNewRef(((BKSliding *)self)->clock));
    return 0;
}

static int bksliding_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((BKSliding *)self)->clock);
    return bkpy_obj_traverse(self, visit, arg);
}

static int bksliding_clear_refs(PyObject *self)
{
    Py_CLEAR(((BKSliding *)self)->clock);
    return bkpy_obj_clear(self);
}

static void bksliding_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((BKSliding *)self)->clock);
    bkpy_obj_dealloc(self);
}

BKPY_ATTACH(bksliding, BKSliding, sl, bk_sliding_attach)

/* What a closed mapped filter keeps: k = l = 1, one 512-bit slice each. */
static int bksliding_empty(PyObject *self_obj)
{
    BKSliding *self = (BKSliding *)self_obj;
    uint64_t payload_len = 0;
    const char *reason = NULL;
    (void)bk_sliding_shape(1, 1, BK_SLIDING_SLICE_ALIGN, &payload_len, &reason);
    if (bkpy_state_alloc(&self->st, BK_SLIDING_HEADER_LEN + payload_len) < 0)
        return -1;
    bk_sliding_init_state(self->st.buf, 1, 1, BK_SLIDING_SLICE_ALIGN, 1, 0.5, 0, 0, 0, 0, 0);
    return bksliding_attach(self_obj);
}

/* Beyond the header's identity: every parameter and the whole payload. */
static int bksliding_equal(PyObject *a, PyObject *b)
{
    BKSliding *x = (BKSliding *)a, *y = (BKSliding *)b;
    uint64_t lx = x->st.len - BK_SLIDING_HEADER_LEN;
    return memcmp(x->sl.params, y->sl.params, BK_SLIDING_PARAMS_LEN) == 0 &&
           x->st.len == y->st.len && memcmp(x->sl.births, y->sl.births, (size_t)lx) == 0;
}

/* ---- getters ---- */

BKPY_GETTER(bksliding, BKSliding, num_hashes, PyLong_FromUnsignedLong(self->sl.k))
BKPY_GETTER(bksliding, BKSliding, generations, PyLong_FromUnsignedLong(self->sl.l))
BKPY_GETTER(bksliding, BKSliding, num_slices, PyLong_FromUnsignedLong(self->sl.S))
BKPY_GETTER(bksliding, BKSliding, slice_bits, PyLong_FromUnsignedLongLong(self->sl.m))
BKPY_GETTER(bksliding, BKSliding, layout,
            PyUnicode_FromString(self->sl.layout == BK_SLIDING_LAYOUT_BLOCKED ? "blocked"
                                                                               : "sliced"))
BKPY_GETTER(bksliding, BKSliding, layout_version, PyLong_FromUnsignedLong(self->sl.layout))

static PyGetSetDef bksliding_getset[] = {
    {"num_hashes", (getter)bksliding_get_num_hashes, NULL, "k, slices (bits) per key.", NULL},
    {"generations", (getter)bksliding_get_generations, NULL,
     "l, generations in the window.", NULL},
    {"num_slices", (getter)bksliding_get_num_slices, NULL, "k + l slices in the ring.", NULL},
    {"slice_bits", (getter)bksliding_get_slice_bits, NULL, "m, bits per slice.", NULL},
    {"layout", (getter)bksliding_get_layout, NULL,
     "\"blocked\" (layout 1: a key's bits of every slice in one 128-byte block) or "
     "\"sliced\" (layout 0: one bit array a slice).", NULL},
    {"layout_version", (getter)bksliding_get_layout_version, NULL,
     "The header's layout_version: 0 sliced, 1 blocked.", NULL},
    BKPY_PARAM(u64, "capacity", BK_SLIDING_P_CAPACITY, "The design window capacity."),
    BKPY_PARAM(f64, "error_rate", BK_SLIDING_P_ERROR_RATE, "The design false-positive rate."),
    BKPY_PARAM(u64, "generation_length", BK_SLIDING_P_GEN_LENGTH,
               "G = ceil(capacity / l), insertions per generation."),
    BKPY_PARAM(u64, "generation", BK_SLIDING_P_GENERATION, "Shifts since creation."),
    BKPY_PARAM(u64, "early_shifts", BK_SLIDING_P_EARLY_SHIFTS,
               "Time mode: shifts forced by a full generation."),
    BKPY_PARAM(u64, "window_us", BK_SLIDING_P_WINDOW_US,
               "Time mode: the window in microseconds (0 in count mode)."),
    BKPY_PAYLOAD_NBYTES("Bytes of the payload."),
    {"clock", (getter)bksliding_get_clock, (setter)bksliding_set_clock,
     "The clock of time mode: a callable returning seconds since the epoch (default "
     "time.time); settable, kept by copy().", NULL},
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bksliding_methods[] = {
    {"add", (PyCFunction)bksliding_add, METH_O,
     "add($self, key, /)\n--\n\nInsert the key in the current generation; return True if it "
     "was absent from the window before.  A repeat refreshes the key."},
    {"add_many", (PyCFunction)bksliding_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key (one clock reading for the batch); return "
     "how many were absent before."},
    BKPY_UPDATE_METHOD,
    {"contains_many", (PyCFunction)bksliding_contains_many, METH_O,
     "contains_many($self, keys, /)\n--\n\nMembership of every key: a list of bools, or a "
     "numpy bool array for array input."},
    {"clear", (PyCFunction)bksliding_clear, METH_NOARGS,
     "clear($self, /)\n--\n\nForget every key (time mode: the window restarts now)."},
    {"estimate_error_rate", (PyCFunction)bksliding_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\nThe false-positive rate of a random absent key "
     "given the slices' fill now."},
    {"_advance", (PyCFunction)bksliding_advance, METH_NOARGS, NULL},
    {"_raw_stats", (PyCFunction)bksliding_raw_stats, METH_NOARGS, NULL},
    {"_key_hash", (PyCFunction)bksliding_key_hash, METH_O, NULL},
    {"_slice_positions", (PyCFunction)bksliding_slice_positions, METH_O,
     "_slice_positions($self, key, /)\n--\n\nThe key's bit in each physical slice "
     "(docs/sliding.md)."},
    {"_design", (PyCFunction)bksliding_design, METH_VARARGS | METH_CLASS, NULL},
    {"_design_blocked", (PyCFunction)bksliding_design_blocked, METH_VARARGS | METH_CLASS, NULL},
    {"_model_rate_blocked", (PyCFunction)bksliding_model_rate_blocked,
     METH_VARARGS | METH_CLASS, NULL},
    {"_model_rate", (PyCFunction)bksliding_model_rate, METH_VARARGS | METH_CLASS, NULL},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bksliding);

static PyTypeObject BKSliding_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.SlidingBase",
    /* BKPY_OBJ_SLOTS, with the clock in the GC slots */
    .tp_methods = bksliding_methods,
    .tp_getset = bksliding_getset,
    .tp_new = bksliding_new,
    .tp_basicsize = sizeof(BKSliding),
    .tp_dealloc = (destructor)bksliding_dealloc,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)bksliding_traverse,
    .tp_clear = (inquiry)bksliding_clear_refs,
    .tp_richcompare = bkpy_obj_richcompare,
    .tp_weaklistoffset = offsetof(BKSliding, weakreflist),
    .tp_as_sequence = &bksliding_as_sequence,
    .tp_doc = "SlidingBase(k, l, slice_bits, capacity, error_rate, window_us=0, now=None, *, "
              "seed=0, secret=None, key=None, layout=0)\n--\n\nC core of SlidingBloomFilter.",
};

static const bkpy_desc bksliding_desc = {
    .type = &BKSliding_Type,
    .noun = "SlidingBloomFilter",
    .kinds = 1u << BK_KIND_SLIDING_BLOOM,
    .attach = bksliding_attach,
    .empty = bksliding_empty,
    .equal = bksliding_equal,
    .add_many = (PyObject *(*)(PyObject *, PyObject *))bksliding_add_many,
    .copied = bksliding_copied,
    .contains_bits = bksliding_contains_bits,
};

int bksliding_init(PyObject *m)
{
    PyObject *time_mod, *errors;
    if (bksliding_Warning == NULL) {
        errors = PyImport_ImportModule("bloomkit.errors");
        if (errors == NULL)
            return -1;
        bksliding_Warning = PyObject_GetAttrString(errors, "SlidingWindowWarning");
        Py_DECREF(errors);
        if (bksliding_Warning == NULL)
            return -1;
    }
    if (bksliding_time_time == NULL) {
        time_mod = PyImport_ImportModule("time");
        if (time_mod == NULL)
            return -1;
        bksliding_time_time = PyObject_GetAttrString(time_mod, "time");
        Py_DECREF(time_mod);
        if (bksliding_time_time == NULL)
            return -1;
    }
    return bkpy_register_type(m, "SlidingBase", &bksliding_desc);
}
