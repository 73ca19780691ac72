/*
 * py_counting.c -- CPython type for the counting Bloom filter
 * (bloomkit._core.CountingBase; facade bloomkit/counting.py).
 *
 * Modelled on py_bloom.c: the object works directly on its one state
 * buffer (owned, or borrowed from an mmap), `x in f` is sq_contains and
 * add/remove are METH_O.  Batches that write (add_many, remove_many) hold
 * the GIL, so that per-item and batch writers in one process never need
 * atomic counter updates; only a shared mapping (other processes) pays for
 * CAS loops.  contains_many over a buffer runs without the GIL.
 */
#include "py_common.h"

#include <math.h>

#include "bk_bloom.h"
#include "bk_counting.h"
#include "bk_atomic.h"
#include "bk_endian.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_counting c;
    PyObject *weakreflist;
} BKCounting;

static PyTypeObject BKCounting_Type;

#define BKC_PARAM(self, off) ((self)->st.buf + BK_OFF_PARAMS + (off))

static uint64_t bkcounting_u64(const BKCounting *self, size_t off)
{
    return bk_load_u64le(BKC_PARAM(self, off));
}

static void bkcounting_set_u64(BKCounting *self, size_t off, uint64_t v)
{
    bk_store_u64le(BKC_PARAM(self, off), v);
}

/* count and distinct move by +-n; shared mappings update them atomically. */
static void bkcounting_bump(BKCounting *self, size_t off, int64_t n)
{
    uint8_t *p = BKC_PARAM(self, off);
    uint64_t v;
    if (n == 0)
        return;
    if (BK_HAS_ATOMICS && self->st.shared) {
        bk_atomic_add_u64le(p, (uint64_t)n);
        return;
    }
    v = bk_load_u64le(p);
    if (n < 0 && v < (uint64_t)(-n))
        v = 0; /* never below zero */
    else
        v += (uint64_t)n;
    bk_store_u64le(p, v);
}

/* CountingBase(num_counters, num_hashes, counter_bits, capacity, error_rate,
 *              *, seed=0, secret=None, key=None, layout=0): layout is a
 *              BK_COUNTING_LAYOUT_* value (0 classic, 1 blocked). */
static PyObject *bkcounting_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"num_counters", "num_hashes", "counter_bits", "capacity",
                             "error_rate", "seed", "secret", "key", "layout", NULL};
    unsigned long long m;
    unsigned int k, bits, layout = BK_COUNTING_LAYOUT_CLASSIC;
    uint64_t payload_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(BK_KIND_COUNTING_BLOOM);
    const char *reason = NULL;
    bk_rc shape;
    BKCounting *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KIIKd|$OOOI:CountingBase", kwlist, &m, &k,
                                     &bits, &a.capacity, &a.error_rate, &a.seed_obj, &a.secret,
                                     &a.key, &layout))
        return NULL;
    shape = bk_counting_shape(layout, m, k, bits, &payload_len, &reason);
    self = bkpy_obj_new_ctor(type, &a, shape, reason, BK_COUNTING_HEADER_LEN + payload_len);
    if (self == NULL)
        return NULL;
    bk_counting_init_state(self->st.buf, layout, m, k, bits, a.capacity, a.error_rate, a.seed,
                           a.keyed, bk_hasher_key_check(&self->st.hasher));
    bk_counting_attach(&self->c, self->st.buf);
    return (PyObject *)self;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static PyObject *bkcounting_add(BKCounting *self, PyObject *key)
{
    uint64_t h;
    int was_new;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    was_new = bk_counting_add(&self->c, h, self->st.shared);
    bkcounting_bump(self, BK_COUNTING_P_COUNT, 1);
    if (was_new) {
        bkcounting_bump(self, BK_COUNTING_P_DISTINCT, 1);
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

/* 1 removed, 0 absent (surely never added), -1 error. */
static int bkcounting_remove_impl(PyObject *self_obj, PyObject *key)
{
    BKCounting *self = (BKCounting *)self_obj;
    uint64_t h;
    int zeroed;
    if (bkpy_state_check_writable(&self->st) < 0 || bkpy_key(&self->st, key, &h) < 0)
        return -1;
    if (bk_counting_remove(&self->c, h, self->st.shared, &zeroed) != BK_OK)
        return 0;
    bkcounting_bump(self, BK_COUNTING_P_COUNT, -1);
    if (zeroed)
        bkcounting_bump(self, BK_COUNTING_P_DISTINCT, -1);
    return 1;
}

static int bkcounting_contains(BKCounting *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return -1;
    return bk_counting_contains(&self->c, h);
}

static PyObject *bkcounting_count(BKCounting *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLong(bk_counting_count(&self->c, h));
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

typedef struct {
    bk_counting *c;
    int atomic;
    uint64_t added;
} bkcounting_add_ctx;

static void bkcounting_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkcounting_add_ctx *ctx = (bkcounting_add_ctx *)vctx;
    (void)offset;
    ctx->added += bk_counting_add_many(ctx->c, hs, n, ctx->atomic);
}

static PyObject *bkcounting_add_many(BKCounting *self, PyObject *keys)
{
    bkcounting_add_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    ctx.c = &self->c;
    ctx.atomic = self->st.shared;
    ctx.added = 0;
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkcounting_add_chunk, NULL,
                             &ctx, 0, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    /* info.count keys were hashed; every complete chunk was added. */
    bkcounting_bump(self, BK_COUNTING_P_DISTINCT, (int64_t)ctx.added);
    if (rc < 0) {
        /* Keys of a partial last chunk are not added: count what was. */
        bkcounting_bump(self, BK_COUNTING_P_COUNT,
                 (int64_t)(info.count - info.count % BKPY_CHUNK));
        return NULL;
    }
    bkcounting_bump(self, BK_COUNTING_P_COUNT, (int64_t)info.count);
    return PyLong_FromUnsignedLongLong(ctx.added);
}

static void bkcounting_probe(const void *view, const uint64_t *hs, size_t n, uint8_t *out)
{
    bk_counting_contains_many((const bk_counting *)view, hs, n, out);
}

typedef struct {
    bk_counting *c;
    int atomic;
    int failed;
    size_t removed;   /* keys removed before the first absent one */
    uint64_t zeroed;
} bkcounting_remove_ctx;

static void bkcounting_remove_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkcounting_remove_ctx *ctx = (bkcounting_remove_ctx *)vctx;
    size_t done;
    (void)offset;
    if (ctx->failed)
        return;
    done = bk_counting_remove_many(ctx->c, hs, n, ctx->atomic, &ctx->zeroed);
    ctx->removed += done;
    if (done < n)
        ctx->failed = 1;
}

static PyObject *bkcounting_remove_many(BKCounting *self, PyObject *keys)
{
    bkcounting_remove_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.c = &self->c;
    ctx.atomic = self->st.shared;
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkcounting_remove_chunk, NULL,
                             &ctx, 0, &info);
    bkcounting_bump(self, BK_COUNTING_P_COUNT, -(int64_t)ctx.removed);
    bkcounting_bump(self, BK_COUNTING_P_DISTINCT, -(int64_t)ctx.zeroed);
    if (rc < 0)
        return NULL;
    if (ctx.failed) {
        PyErr_Format(PyExc_KeyError,
                     "key at index %zu is surely absent; the %zu keys before it were removed",
                     ctx.removed, ctx.removed);
        return NULL;
    }
    return PyLong_FromSize_t(ctx.removed);
}

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for set operations ----------------------------------- */

static int bkcounting_check_compatible(PyObject *a_obj, PyObject *other_obj, const char *op)
{
    BKCounting *a = (BKCounting *)a_obj, *b;
    b = (BKCounting *)other_obj;
    if (a->c.m != b->c.m) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters of different sizes: num_counters %llu vs %llu", op,
                     (unsigned long long)a->c.m, (unsigned long long)b->c.m);
        return -1;
    }
    if (a->c.k != b->c.k) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters with different num_hashes: %u vs %u", op, a->c.k,
                     b->c.k);
        return -1;
    }
    if (a->c.layout != b->c.layout) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters of different layouts: %s vs %s", op,
                     a->c.layout ? "blocked" : "classic", b->c.layout ? "blocked" : "classic");
        return -1;
    }
    if (a->c.bits != b->c.bits) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters with different counter_bits: %u vs %u", op, a->c.bits,
                     b->c.bits);
        return -1;
    }
    return bkpy_check_same_hashing(&a->st, &b->st, op, "filters");
}

/* After a union the number of distinct keys is unknown: store the
 * estimate from the nonzero counters (the layout's model), clamped to
 * [0, m] (as BloomBase does for its count). */
static void bkcounting_recount(BKCounting *self)
{
    bkcounting_set_u64(self, BK_COUNTING_P_DISTINCT,
                       bkpy_count_of_estimate(bk_counting_estimate_count(&self->c), self->c.m));
}

static PyObject *bkcounting_recount_meth(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bkcounting_recount(self);
    Py_RETURN_NONE;
}

/* _recount_total(): after a writer was killed in a batch, the stored count
 * (adds minus removes) lags the counters by the keys of that batch.  Each
 * add increments exactly k counters and each remove decrements k, and a
 * counter that saturates stays saturated for ever; so while no counter is
 * saturated the count is exactly sum(counters) / k.  With a saturated
 * counter the sum says nothing and the stored count is kept.  O(m). */
static PyObject *bkcounting_recount_total_meth(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    uint64_t sum = 0;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    for (uint64_t i = 0; i < self->c.m; i++) {
        uint32_t v = bk_counting_get(&self->c, i);
        if (v == self->c.max)
            Py_RETURN_FALSE;
        sum += v;
    }
    bkcounting_set_u64(self, BK_COUNTING_P_COUNT, sum / self->c.k);
    Py_RETURN_TRUE;
}

/* |=: counters added, saturating (counting filters have no intersection:
 * is_union is always 1). */
static PyObject *bkcounting_inplace_union(PyObject *self_obj, PyObject *other, int is_union)
{
    BKCounting *self = (BKCounting *)self_obj, *o;
    uint64_t a, b, s;
    (void)is_union;
    if (bkcounting_check_compatible(self_obj, other, "union") < 0 ||
        bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (self->st.shared) {
        PyErr_SetString(PyExc_TypeError,
                        "union into a filter mapped shared ('r+' across processes) is not "
                        "supported: union into an in-memory copy");
        return NULL;
    }
    o = (BKCounting *)other;
    bk_counting_union(&self->c, &o->c);
    a = bkcounting_u64(self, BK_COUNTING_P_COUNT);
    b = bkcounting_u64(o, BK_COUNTING_P_COUNT);
    s = bk_add_overflow(a, b, &s) ? UINT64_MAX : s;
    bkcounting_set_u64(self, BK_COUNTING_P_COUNT, s);
    bkcounting_recount(self);
    Py_INCREF(self);
    return (PyObject *)self;
}

/* Beyond the header's identity: the shape and the counters. */
static int bkcounting_equal(PyObject *a, PyObject *b)
{
    BKCounting *x = (BKCounting *)a, *y = (BKCounting *)b;
    return x->c.m == y->c.m && x->c.k == y->c.k && x->c.bits == y->c.bits &&
           x->c.layout == y->c.layout &&
           memcmp(x->c.bytes, y->c.bytes, (size_t)x->c.nbytes) == 0;
}

/* ---- End logic for set operations ------------------------------------- */

static PyObject *bkcounting_clear(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(self->c.bytes, 0, (size_t)self->c.nbytes);
    bkcounting_set_u64(self, BK_COUNTING_P_COUNT, 0);
    bkcounting_set_u64(self, BK_COUNTING_P_DISTINCT, 0);
    Py_RETURN_NONE;
}

BKPY_ATTACH(bkcounting, BKCounting, c, bk_counting_attach)

/* What a closed mapped filter keeps: one 4-bit counter. */
static int bkcounting_empty(PyObject *self)
{
    bkpy_state *st = &((BKCounting *)self)->st;
    if (bkpy_state_alloc(st, BK_COUNTING_HEADER_LEN + 8) < 0)
        return -1;
    bk_counting_init_state(st->buf, BK_COUNTING_LAYOUT_CLASSIC, 1, 1, 4, 1, 0.5, 0, 0, 0);
    return bkcounting_attach(self);
}

static PyObject *bkcounting_counter_positions(BKCounting *self, PyObject *key)
{
    uint64_t h;
    PyObject *list;
    uint32_t i = 0;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    list = PyList_New(self->c.k);
    if (list == NULL)
        return NULL;
    BK_COUNTING_PROBES(&self->c, h, pos, {
        PyObject *v = PyLong_FromUnsignedLongLong(pos);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
        i++;
    });
    return list;
}

/* _to_bloom(cls): a classic Bloom filter of class cls (BloomFilter) with
 * m = num_counters, the same k, seed and hashing, bit i set iff counter i
 * is nonzero, count = distinct: for a sequence of adds, byte-identical to
 * the BloomFilter built from the same adds. */
static PyObject *bkcounting_to_bloom(BKCounting *self, PyObject *cls)
{
    uint64_t payload_len = 0, len, distinct;
    const char *reason = NULL;
    PyObject *data, *secret = Py_None, *res;
    uint8_t *buf;
    if (self->c.layout != BK_COUNTING_LAYOUT_CLASSIC) {
        PyErr_SetString(PyExc_TypeError,
                        "to_bloom() needs the classic layout: a blocked counting filter's "
                        "probes are not those of any BloomFilter (build it with "
                        "layout='classic')");
        return NULL;
    }
    if (self->c.k > BK_BLOOM_MAX_K_CLASSIC ||
        bk_bloom_shape(0, self->c.m, self->c.k, &payload_len, &reason) != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason ? reason : "shape not representable");
        return NULL;
    }
    len = BK_BLOOM_HEADER_LEN + payload_len;
    data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (data == NULL)
        return NULL;
    buf = (uint8_t *)PyBytes_AS_STRING(data);
    memset(buf, 0, (size_t)len);
    bk_bloom_init_state(buf, 0, self->c.m, self->c.k, bkcounting_u64(self, BK_COUNTING_P_CAPACITY),
                        bk_load_f64le(BKC_PARAM(self, BK_COUNTING_P_ERROR_RATE)),
                        self->st.hasher.seed, self->st.hasher.keyed,
                        bk_hasher_key_check(&self->st.hasher));
    distinct = bkcounting_u64(self, BK_COUNTING_P_DISTINCT);
    bk_store_u64le(buf + BK_OFF_PARAMS + BK_BLOOM_P_COUNT, distinct);
    bk_counting_to_bits(&self->c, buf + BK_BLOOM_HEADER_LEN);
    buf[BK_OFF_KEY_FLAGS] = self->st.buf[BK_OFF_KEY_FLAGS]; /* the same keys' domains */
    bk_format_seal(buf, len);
    if (self->st.hasher.keyed) {
        /* Rebuild the 16-byte secret from the hasher (k0 = secret_lo ^ seed,
         * k1 = secret_hi) so that cls.from_bytes can check it. */
        uint8_t s16[16];
        bk_store_u64le(s16, self->st.hasher.k0 ^ self->st.hasher.seed);
        bk_store_u64le(s16 + 8, self->st.hasher.k1);
        secret = PyBytes_FromStringAndSize((const char *)s16, 16);
        memset(s16, 0, sizeof s16);
        if (secret == NULL) {
            Py_DECREF(data);
            return NULL;
        }
    } else {
        Py_INCREF(secret);
    }
    res = PyObject_CallMethod(cls, "from_bytes", "OOO", data, secret,
                              self->st.keyfunc ? self->st.keyfunc : Py_None);
    Py_DECREF(data);
    Py_DECREF(secret);
    return res;
}

static PyObject *bkcounting_estimate_count(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_counting_estimate_count(&self->c));
}

static PyObject *bkcounting_estimate_error_rate(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bk_counting_estimate_error_rate(&self->c));
}

static Py_ssize_t bkcounting_len(BKCounting *self)
{
    uint64_t c = bkcounting_u64(self, BK_COUNTING_P_COUNT);
    return bkpy_len_of(c);
}

/* ---- getters ---- */

BKPY_GETTER(bkcounting, BKCounting, num_counters, PyLong_FromUnsignedLongLong(self->c.m))
BKPY_GETTER(bkcounting, BKCounting, num_hashes, PyLong_FromUnsignedLong(self->c.k))
BKPY_GETTER(bkcounting, BKCounting, counter_bits, PyLong_FromUnsignedLong(self->c.bits))
BKPY_GETTER(bkcounting, BKCounting, counter_max, PyLong_FromUnsignedLong(self->c.max))
BKPY_GETTER(bkcounting, BKCounting, layout,
            PyUnicode_FromString(self->c.layout == BK_COUNTING_LAYOUT_BLOCKED ? "blocked"
                                                                              : "classic"))
BKPY_GETTER(bkcounting, BKCounting, num_blocks, PyLong_FromUnsignedLongLong(self->c.num_blocks))
BKPY_GETTER(bkcounting, BKCounting, nbytes, PyLong_FromUnsignedLongLong(self->c.nbytes))
BKPY_GETTER(bkcounting, BKCounting, counters_set, PyLong_FromUnsignedLongLong(bk_counting_nonzero(&self->c)))
BKPY_GETTER(bkcounting, BKCounting, fill_ratio, PyFloat_FromDouble((double)bk_counting_nonzero(&self->c) /
                                                  (double)self->c.m))

static PyGetSetDef bkcounting_getset[] = {
    {"num_counters", (getter)bkcounting_get_num_counters, NULL, "m, the number of counters.", NULL},
    {"num_bits", (getter)bkcounting_get_num_counters, NULL, "Alias of num_counters (the m of the equivalent BloomFilter).", NULL},
    {"num_hashes", (getter)bkcounting_get_num_hashes, NULL, "k, probes per key.", NULL},
    {"counter_bits", (getter)bkcounting_get_counter_bits, NULL, "Bits per counter: 4, 8 or 16.", NULL},
    {"counter_max", (getter)bkcounting_get_counter_max, NULL, "The saturation value 2**counter_bits - 1.", NULL},
    {"layout", (getter)bkcounting_get_layout, NULL, "'classic' or 'blocked' (a key's counters in one 64-byte line).", NULL},
    {"num_blocks", (getter)bkcounting_get_num_blocks, NULL, "Blocked: 64-byte blocks of 512 // counter_bits counters; classic: 0.", NULL},
    BKPY_DESIGN_GETSET(BK_COUNTING_P_CAPACITY, BK_COUNTING_P_ERROR_RATE),
    {"nbytes", (getter)bkcounting_get_nbytes, NULL, "Bytes of the counter array (payload).", NULL},
    {"counters_set", (getter)bkcounting_get_counters_set, NULL, "Number of nonzero counters.", NULL},
    {"fill_ratio", (getter)bkcounting_get_fill_ratio, NULL, "counters_set / num_counters.", NULL},
    BKPY_OBJ_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkcounting_methods[] = {
    {"add", (PyCFunction)bkcounting_add, METH_O,
     "add($self, key, /)\n--\n\nIncrement the key's counters; return True if it was surely "
     "absent before."},
    BKPY_REMOVE_METHODS("Decrement the key's counters; KeyError (and no change) if it is "
                        "surely absent.  Removing a key that was never added can create "
                        "false negatives.",
                        "Like remove(), but return False instead of raising."),
    {"count", (PyCFunction)bkcounting_count, METH_O,
     "count($self, key, /)\n--\n\nThe minimum of the key's counters: an upper bound of its "
     "multiplicity (0: surely absent)."},
    {"add_many", (PyCFunction)bkcounting_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key; return how many were new."},
    BKPY_CONTAINS_MANY_METHOD,
    {"remove_many", (PyCFunction)bkcounting_remove_many, METH_O,
     "remove_many($self, keys, /)\n--\n\nRemove keys in order; return how many.  At the first "
     "surely-absent key, stop and raise KeyError (the keys before it stay removed)."},
    {"union", (PyCFunction)(void (*)(void))bkpy_obj_union, METH_FASTCALL,
     "union($self, *others)\n--\n\nA new filter whose counters are the saturating sums."},
    {"clear", (PyCFunction)bkcounting_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemove every key."},
    {"estimate_count", (PyCFunction)bkcounting_estimate_count, METH_NOARGS,
     "estimate_count($self, /)\n--\n\nEstimate of the distinct keys held, from the nonzero "
     "counters (Swamidass-Baldi for the classic layout, the blocked fill model otherwise)."},
    {"estimate_error_rate", (PyCFunction)bkcounting_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\nThe rate of a random query given the counters: "
     "fill_ratio ** num_hashes (classic), the mean over blocks of the block's fill ** "
     "num_hashes (blocked)."},
    {"_counter_positions", (PyCFunction)bkcounting_counter_positions, METH_O,
     "_counter_positions($self, key, /)\n--\n\nThe counter indices a key probes, in probe order "
     "(classic: the classic Bloom probe sequence over num_counters; blocked: in the key's "
     "block)."},
    {"_to_bloom", (PyCFunction)bkcounting_to_bloom, METH_O, NULL},
    {"_recount_total", (PyCFunction)bkcounting_recount_total_meth, METH_NOARGS,
     "_recount_total($self, /)\n--\n\nStore sum(counters) / k as the count when no counter is "
     "saturated (repair after a killed writer); returns whether it did."},
    {"_recount", (PyCFunction)bkcounting_recount_meth, METH_NOARGS,
     "_recount($self, /)\n--\n\nSet the distinct-key count to the estimate from the counters "
     "(as a union does), so that it no longer depends on the order of the adds."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

BKPY_SEQUENCE(bkcounting);

static PyTypeObject BKCounting_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.CountingBase",
    BKPY_OBJ_SLOTS(bkcounting, BKCounting),
    .tp_as_number = &bkpy_obj_as_number_union,
    .tp_as_sequence = &bkcounting_as_sequence,
    .tp_doc = "CountingBase(num_counters, num_hashes, counter_bits, capacity, error_rate, *, "
              "seed=0, secret=None, key=None)\n--\n\nC core of CountingBloomFilter.",
};

static const bkpy_desc bkcounting_desc = {
    .type = &BKCounting_Type,
    .noun = "CountingBloomFilter",
    .kinds = 1u << BK_KIND_COUNTING_BLOOM,
    .attach = bkcounting_attach,
    .empty = bkcounting_empty,
    .equal = bkcounting_equal,
    .compatible = bkcounting_check_compatible,
    .inplace = bkcounting_inplace_union,
    /* Buffer input runs without the GIL, pinning the state: _detach (an
     * mmap's close) waits for it (py_common.h). */
    .probe = bkcounting_probe,
    .view_off = offsetof(BKCounting, c),
    .query = BKPY_QUERY_PINNED,
    .remove = bkcounting_remove_impl,
};

int bkcounting_init(PyObject *m)
{
    return bkpy_register_type(m, "CountingBase", &bkcounting_desc);
}
