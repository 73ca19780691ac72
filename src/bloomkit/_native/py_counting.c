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
#include "bk_endian.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    bk_counting c;
    PyObject *weakreflist;
} BKCounting;

static PyTypeObject BKCounting_Type;

#define BKC_PARAM(self, off) ((self)->st.buf + BK_OFF_PARAMS + (off))

static uint64_t bkc_u64(const BKCounting *self, size_t off)
{
    return bk_load_u64le(BKC_PARAM(self, off));
}

static void bkc_set_u64(BKCounting *self, size_t off, uint64_t v)
{
    bk_store_u64le(BKC_PARAM(self, off), v);
}

/* count and distinct move by +-n; shared mappings update them atomically. */
static void bkc_bump(BKCounting *self, size_t off, int64_t n)
{
    uint8_t *p = BKC_PARAM(self, off);
    uint64_t v;
    if (n == 0)
        return;
#if !BK_BIG_ENDIAN && (defined(__GNUC__) || defined(__clang__))
    if (self->st.shared) {
        __atomic_fetch_add((uint64_t *)(void *)p, (uint64_t)n, __ATOMIC_RELAXED);
        return;
    }
#endif
    v = bk_load_u64le(p);
    if (n < 0 && v < (uint64_t)(-n))
        v = 0; /* never below zero */
    else
        v += (uint64_t)n;
    bk_store_u64le(p, v);
}

/* CountingBase(num_counters, num_hashes, counter_bits, capacity, error_rate,
 *              *, seed=0, secret=None, key=None) */
static PyObject *bkc_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"num_counters", "num_hashes", "counter_bits", "capacity",
                             "error_rate", "seed", "secret", "key", NULL};
    unsigned long long m, capacity;
    unsigned int k, bits;
    double p;
    PyObject *seed_obj = NULL, *secret = Py_None, *key = Py_None;
    uint64_t payload_len = 0;
    bkpy_ctor_args a;
    const char *reason = NULL;
    BKCounting *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KIIKd|$OOO:CountingBase", kwlist, &m, &k,
                                     &bits, &capacity, &p, &seed_obj, &secret, &key))
        return NULL;
    if (bkpy_parse_ctor(seed_obj, secret, key, &a) < 0)
        return NULL;
    if (bk_counting_shape(m, k, bits, &payload_len, &reason) != BK_OK) {
        PyErr_SetString(PyExc_ValueError, reason);
        return NULL;
    }
    if (capacity == 0 || capacity > (1ULL << 48) || !(p > 0.0 && p < 1.0)) {
        PyErr_SetString(PyExc_ValueError,
                        "capacity must be in [1, 2**48] and error_rate in (0, 1)");
        return NULL;
    }
    self = bkpy_obj_new(type, BK_COUNTING_HEADER_LEN + payload_len, &a, key);
    if (self == NULL)
        return NULL;
    bk_counting_init_state(self->st.buf, m, k, bits, capacity, p, a.seed, a.keyed,
                           bk_hasher_key_check(&self->st.hasher));
    bk_counting_attach(&self->c, self->st.buf);
    return (PyObject *)self;
}

/* ---- Begin logic for per-key operations ------------------------------- */

static PyObject *bkc_add(BKCounting *self, PyObject *key)
{
    uint64_t h;
    int was_new;
    if (BK_UNLIKELY(!self->st.writable) && bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    was_new = bk_counting_add(&self->c, h, self->st.shared);
    bkc_bump(self, BK_COUNTING_P_COUNT, 1);
    if (was_new) {
        bkc_bump(self, BK_COUNTING_P_DISTINCT, 1);
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyObject *bkc_remove(BKCounting *self, PyObject *key)
{
    uint64_t h;
    int zeroed;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    if (bk_counting_remove(&self->c, h, self->st.shared, &zeroed) != BK_OK) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    bkc_bump(self, BK_COUNTING_P_COUNT, -1);
    if (zeroed)
        bkc_bump(self, BK_COUNTING_P_DISTINCT, -1);
    Py_RETURN_NONE;
}

static PyObject *bkc_discard(BKCounting *self, PyObject *key)
{
    uint64_t h;
    int zeroed;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    if (bk_counting_remove(&self->c, h, self->st.shared, &zeroed) != BK_OK)
        Py_RETURN_FALSE;
    bkc_bump(self, BK_COUNTING_P_COUNT, -1);
    if (zeroed)
        bkc_bump(self, BK_COUNTING_P_DISTINCT, -1);
    Py_RETURN_TRUE;
}

static int bkc_contains(BKCounting *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return -1;
    return bk_counting_contains(&self->c, h);
}

static PyObject *bkc_count(BKCounting *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLong(bk_counting_count(&self->c, h));
}

/* ---- End logic for per-key operations --------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

typedef struct {
    bk_counting *c;
    int atomic;
    uint64_t added;
} bkc_add_ctx;

static void bkc_add_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkc_add_ctx *ctx = (bkc_add_ctx *)vctx;
    (void)offset;
    ctx->added += bk_counting_add_many(ctx->c, hs, n, ctx->atomic);
}

static PyObject *bkc_add_many(BKCounting *self, PyObject *keys)
{
    bkc_add_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    ctx.c = &self->c;
    ctx.atomic = self->st.shared;
    ctx.added = 0;
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkc_add_chunk, NULL,
                             &ctx, 0, &info);
    /* info.count keys were hashed; every complete chunk was added. */
    bkc_bump(self, BK_COUNTING_P_DISTINCT, (int64_t)ctx.added);
    if (rc < 0) {
        /* Keys of a partial last chunk are not added: count what was. */
        bkc_bump(self, BK_COUNTING_P_COUNT,
                 (int64_t)(info.count - info.count % BKPY_CHUNK));
        return NULL;
    }
    bkc_bump(self, BK_COUNTING_P_COUNT, (int64_t)info.count);
    return PyLong_FromUnsignedLongLong(ctx.added);
}

typedef struct {
    bkpy_bools out; /* first: bkpy_bools_size receives this context */
    const bk_counting *c;
} bkc_query_ctx;

static void bkc_query_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkc_query_ctx *ctx = (bkc_query_ctx *)vctx;
    bk_counting_contains_many(ctx->c, hs, n, bkpy_bools_reserve(&ctx->out, offset, n));
}

static PyObject *bkc_contains_many(BKCounting *self, PyObject *keys)
{
    bkc_query_ctx ctx;
    bkpy_batch_info info;
    PyObject *res = NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.c = &self->c;
    /* Buffer input runs without the GIL, pinning the state: _detach (an
     * mmap's close) waits for it (py_common.h). */
    if (bkpy_for_each_chunk_pinned(&self->st, keys, bkc_query_chunk, bkpy_bools_size, &ctx, 1,
                                   &info) == 0)
        res = bkpy_bools_finish(&ctx.out, info.from_buffer);
    bkpy_bools_clear(&ctx.out);
    return res;
}

typedef struct {
    bk_counting *c;
    int atomic;
    int failed;
    size_t removed;   /* keys removed before the first absent one */
    uint64_t zeroed;
} bkc_remove_ctx;

static void bkc_remove_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bkc_remove_ctx *ctx = (bkc_remove_ctx *)vctx;
    size_t done;
    (void)offset;
    if (ctx->failed)
        return;
    done = bk_counting_remove_many(ctx->c, hs, n, ctx->atomic, &ctx->zeroed);
    ctx->removed += done;
    if (done < n)
        ctx->failed = 1;
}

static PyObject *bkc_remove_many(BKCounting *self, PyObject *keys)
{
    bkc_remove_ctx ctx;
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.c = &self->c;
    ctx.atomic = self->st.shared;
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher, bkc_remove_chunk, NULL,
                             &ctx, 0, &info);
    bkc_bump(self, BK_COUNTING_P_COUNT, -(int64_t)ctx.removed);
    bkc_bump(self, BK_COUNTING_P_DISTINCT, -(int64_t)ctx.zeroed);
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

static int bkc_check_compatible(BKCounting *a, PyObject *other_obj, const char *op)
{
    BKCounting *b;
    if (!PyObject_TypeCheck(other_obj, &BKCounting_Type)) {
        PyErr_Format(PyExc_TypeError, "%s needs another CountingBloomFilter, not %.50s", op,
                     Py_TYPE(other_obj)->tp_name);
        return -1;
    }
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
    if (a->c.bits != b->c.bits) {
        PyErr_Format(bkpy_IncompatibleFiltersError,
                     "cannot %s filters with different counter_bits: %u vs %u", op, a->c.bits,
                     b->c.bits);
        return -1;
    }
    return bkpy_check_same_hashing(&a->st, &b->st, op, "filters");
}

static BKCounting *bkc_copy_impl(BKCounting *self, PyTypeObject *type)
{
    BKCounting *c = bkpy_obj_copy(type, &self->st);
    if (c != NULL)
        bk_counting_attach(&c->c, c->st.buf);
    return c;
}

static PyObject *bkc_copy(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    return (PyObject *)bkc_copy_impl(self, Py_TYPE(self));
}

/* Swamidass-Baldi estimate of the distinct keys from the nonzero counters,
 * clamped to [0, m]. */
static double bkc_estimate(const BKCounting *self)
{
    double m = (double)self->c.m, x = (double)bk_counting_nonzero(&self->c);
    if (x >= m)
        return INFINITY;
    return -m / (double)self->c.k * log1p(-x / m);
}

/* After a union the number of distinct keys is unknown: store the
 * estimate, clamped to [0, m] (as BloomBase does for its count). */
static void bkc_recount(BKCounting *self)
{
    double est = bkc_estimate(self);
    if (!(est >= 0.0))
        est = 0.0;
    if (est > (double)self->c.m)
        est = (double)self->c.m;
    bkc_set_u64(self, BK_COUNTING_P_DISTINCT, (uint64_t)llround(est));
}

static PyObject *bkc_recount_meth(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bkc_recount(self);
    Py_RETURN_NONE;
}

/* _recount_total(): after a writer was killed in a batch, the stored count
 * (adds minus removes) lags the counters by the keys of that batch.  Each
 * add increments exactly k counters and each remove decrements k, and a
 * counter that saturates stays saturated for ever; so while no counter is
 * saturated the count is exactly sum(counters) / k.  With a saturated
 * counter the sum says nothing and the stored count is kept.  O(m). */
static PyObject *bkc_recount_total_meth(BKCounting *self, PyObject *Py_UNUSED(ignored))
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
    bkc_set_u64(self, BK_COUNTING_P_COUNT, sum / self->c.k);
    Py_RETURN_TRUE;
}

static PyObject *bkc_inplace_union(BKCounting *self, PyObject *other)
{
    BKCounting *o;
    uint64_t a, b, s;
    if (bkc_check_compatible(self, other, "union") < 0 ||
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
    a = bkc_u64(self, BK_COUNTING_P_COUNT);
    b = bkc_u64(o, BK_COUNTING_P_COUNT);
    s = bk_add_overflow(a, b, &s) ? UINT64_MAX : s;
    bkc_set_u64(self, BK_COUNTING_P_COUNT, s);
    bkc_recount(self);
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *bkc_union_meth(BKCounting *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *acc;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (bkc_check_compatible(self, args[i], "union") < 0)
            return NULL;
    acc = (PyObject *)bkc_copy_impl(self, Py_TYPE(self));
    for (Py_ssize_t i = 0; acc != NULL && i < nargs; i++) {
        PyObject *r = bkc_inplace_union((BKCounting *)acc, args[i]);
        Py_DECREF(acc);
        acc = r;
    }
    return acc;
}

static PyObject *bkc_nb_or(PyObject *a, PyObject *b)
{
    PyObject *args[1];
    if (!PyObject_TypeCheck(a, &BKCounting_Type) || !PyObject_TypeCheck(b, &BKCounting_Type))
        Py_RETURN_NOTIMPLEMENTED;
    args[0] = b;
    return bkc_union_meth((BKCounting *)a, args, 1);
}

static PyObject *bkc_nb_ior(PyObject *a, PyObject *b)
{
    if (!PyObject_TypeCheck(a, &BKCounting_Type) || !PyObject_TypeCheck(b, &BKCounting_Type))
        Py_RETURN_NOTIMPLEMENTED;
    return bkc_inplace_union((BKCounting *)a, b);
}

static PyObject *bkc_richcompare(PyObject *a, PyObject *b, int op)
{
    BKCounting *x, *y;
    int eq;
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &BKCounting_Type))
        Py_RETURN_NOTIMPLEMENTED;
    x = (BKCounting *)a;
    y = (BKCounting *)b;
    eq = x->st.len == y->st.len &&
         memcmp(x->st.buf + BK_OFF_HASH, y->st.buf + BK_OFF_HASH, 2) == 0 &&
         memcmp(x->st.buf + BK_OFF_SEED, y->st.buf + BK_OFF_SEED, 8) == 0 &&
         memcmp(x->st.buf + BK_OFF_KEY_CHECK, y->st.buf + BK_OFF_KEY_CHECK, 8) == 0 &&
         x->c.m == y->c.m && x->c.k == y->c.k && x->c.bits == y->c.bits &&
         memcmp(x->c.bytes, y->c.bytes, (size_t)x->c.nbytes) == 0;
    if (op == Py_NE)
        eq = !eq;
    return PyBool_FromLong(eq);
}

/* ---- End logic for set operations ------------------------------------- */

static PyObject *bkc_clear(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    memset(self->c.bytes, 0, (size_t)self->c.nbytes);
    bkc_set_u64(self, BK_COUNTING_P_COUNT, 0);
    bkc_set_u64(self, BK_COUNTING_P_DISTINCT, 0);
    Py_RETURN_NONE;
}

static PyObject *bkc_load(PyTypeObject *type, const bkpy_load_args *a)
{
    BKCounting *self = (BKCounting *)bkpy_obj_load(type, a, 1u << BK_KIND_COUNTING_BLOOM);
    if (self != NULL)
        bk_counting_attach(&self->c, self->st.buf);
    return (PyObject *)self;
}

static PyObject *bkc_from_bytes(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    bkpy_load_args a;
    return bkpy_parse_from_bytes(args, kwargs, &a) < 0 ? NULL : bkc_load(type, &a);
}

/* _from_buffer: works in place on an exporter's memory (an mmap), keeping
 * the exporter alive. */
static PyObject *bkc_from_buffer(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    bkpy_load_args a;
    return bkpy_parse_from_buffer(args, kwargs, &a) < 0 ? NULL : bkc_load(type, &a);
}
static PyObject *bkc_detach(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    if (self->st.view.obj == NULL)
        Py_RETURN_NONE;
    bkpy_state_wait_pins(&self->st); /* no GIL-free batch still reads the map */
    if (self->st.view.obj == NULL)
        Py_RETURN_NONE; /* detached by another thread meanwhile */
    PyBuffer_Release(&self->st.view);
    self->st.buf = NULL;
    self->st.len = 0;
    if (bkpy_state_alloc(&self->st, BK_COUNTING_HEADER_LEN + 8) < 0)
        return NULL;
    bk_counting_init_state(self->st.buf, 1, 1, 4, 1, 0.5, 0, 0, 0);
    bk_counting_attach(&self->c, self->st.buf);
    self->st.writable = 0;
    self->st.shared = 0;
    Py_RETURN_NONE;
}

static PyObject *bkc_counter_positions(BKCounting *self, PyObject *key)
{
    uint64_t h;
    PyObject *list;
    uint32_t i = 0;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
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

static PyObject *bkc_key_hash(BKCounting *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_hash_key(key, self->st.keyfunc, &self->st.hasher, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

/* _to_bloom(cls): a classic Bloom filter of class cls (BloomFilter) with
 * m = num_counters, the same k, seed and hashing, bit i set iff counter i
 * is nonzero, count = distinct: for a sequence of adds, byte-identical to
 * the BloomFilter built from the same adds. */
static PyObject *bkc_to_bloom(BKCounting *self, PyObject *cls)
{
    uint64_t payload_len = 0, len, distinct;
    const char *reason = NULL;
    PyObject *data, *secret = Py_None, *res;
    uint8_t *buf;
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
    bk_bloom_init_state(buf, 0, self->c.m, self->c.k, bkc_u64(self, BK_COUNTING_P_CAPACITY),
                        bk_load_f64le(BKC_PARAM(self, BK_COUNTING_P_ERROR_RATE)),
                        self->st.hasher.seed, self->st.hasher.keyed,
                        bk_hasher_key_check(&self->st.hasher));
    distinct = bkc_u64(self, BK_COUNTING_P_DISTINCT);
    bk_store_u64le(buf + BK_OFF_PARAMS + BK_BLOOM_P_COUNT, distinct);
    bk_counting_to_bits(&self->c, buf + BK_BLOOM_HEADER_LEN);
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

static PyObject *bkc_estimate_count(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(bkc_estimate(self));
}

static PyObject *bkc_estimate_error_rate(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    double fill = (double)bk_counting_nonzero(&self->c) / (double)self->c.m;
    return PyFloat_FromDouble(pow(fill, (double)self->c.k));
}

static PyObject *bkc_sizeof(BKCounting *self, PyObject *Py_UNUSED(ignored))
{
    size_t own = self->st.alloc ? (size_t)self->st.len + BK_ALIGN : 0;
    return PyLong_FromSize_t(sizeof(BKCounting) + own);
}

static Py_ssize_t bkc_len(BKCounting *self)
{
    uint64_t c = bkc_u64(self, BK_COUNTING_P_COUNT);
    return c > (uint64_t)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)c;
}

/* ---- getters ---- */

#define BKC_GETTER(name, expr)                                   \
    static PyObject *name(BKCounting *self, void *closure)       \
    {                                                            \
        (void)closure;                                           \
        return expr;                                             \
    }
BKC_GETTER(bkc_get_num_counters, PyLong_FromUnsignedLongLong(self->c.m))
BKC_GETTER(bkc_get_num_hashes, PyLong_FromUnsignedLong(self->c.k))
BKC_GETTER(bkc_get_counter_bits, PyLong_FromUnsignedLong(self->c.bits))
BKC_GETTER(bkc_get_counter_max, PyLong_FromUnsignedLong(self->c.max))
BKC_GETTER(bkc_get_capacity, PyLong_FromUnsignedLongLong(bkc_u64(self, BK_COUNTING_P_CAPACITY)))
BKC_GETTER(bkc_get_error_rate,
           PyFloat_FromDouble(bk_load_f64le(BKC_PARAM(self, BK_COUNTING_P_ERROR_RATE))))
BKC_GETTER(bkc_get_nbytes, PyLong_FromUnsignedLongLong(self->c.nbytes))
BKC_GETTER(bkc_get_counters_set, PyLong_FromUnsignedLongLong(bk_counting_nonzero(&self->c)))
BKC_GETTER(bkc_get_fill_ratio, PyFloat_FromDouble((double)bk_counting_nonzero(&self->c) /
                                                  (double)self->c.m))

static PyGetSetDef bkc_getset[] = {
    {"num_counters", (getter)bkc_get_num_counters, NULL, "m, the number of counters.", NULL},
    {"num_bits", (getter)bkc_get_num_counters, NULL, "Alias of num_counters (the m of the equivalent BloomFilter).", NULL},
    {"num_hashes", (getter)bkc_get_num_hashes, NULL, "k, probes per key.", NULL},
    {"counter_bits", (getter)bkc_get_counter_bits, NULL, "Bits per counter: 4, 8 or 16.", NULL},
    {"counter_max", (getter)bkc_get_counter_max, NULL, "The saturation value 2**counter_bits - 1.", NULL},
    {"capacity", (getter)bkc_get_capacity, NULL, "The design capacity n.", NULL},
    {"error_rate", (getter)bkc_get_error_rate, NULL, "The design false-positive rate p.", NULL},
    {"seed", (getter)bkpy_obj_get_seed, NULL, "The hash seed.", NULL},
    {"nbytes", (getter)bkc_get_nbytes, NULL, "Bytes of the counter array (payload).", NULL},
    {"state_nbytes", (getter)bkpy_obj_get_state_nbytes, NULL, "Bytes of the whole state (header + payload).", NULL},
    {"counters_set", (getter)bkc_get_counters_set, NULL, "Number of nonzero counters.", NULL},
    {"fill_ratio", (getter)bkc_get_fill_ratio, NULL, "counters_set / num_counters.", NULL},
    {"keyed", (getter)bkpy_obj_get_keyed, NULL, "True when hashed with SipHash under a secret.", NULL},
    {"key", (getter)bkpy_obj_get_key, NULL, "The key= callable, or None.", NULL},
    {"writable", (getter)bkpy_obj_get_writable, NULL, "False for filters opened read-only.", NULL},
    {"mapped", (getter)bkpy_obj_get_mapped, NULL, "True when the state lives in a borrowed buffer (mmap).", NULL},
    {"dirty", (getter)bkpy_obj_get_dirty, NULL, "True when the state is marked open for writing.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bkc_methods[] = {
    /* PEP 585: BloomFilter[str] in annotations; the key type exists only for type
       checkers (see _core.pyi), the C type is the same for every key type. */
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS,
     "See PEP 585: the key type of a typed annotation."},
    {"add", (PyCFunction)bkc_add, METH_O,
     "add($self, key, /)\n--\n\nIncrement the key's counters; return True if it was surely "
     "absent before."},
    {"remove", (PyCFunction)bkc_remove, METH_O,
     "remove($self, key, /)\n--\n\nDecrement the key's counters; KeyError (and no change) if "
     "it is surely absent.  Removing a key that was never added can create false negatives."},
    {"discard", (PyCFunction)bkc_discard, METH_O,
     "discard($self, key, /)\n--\n\nLike remove(), but return False instead of raising."},
    {"count", (PyCFunction)bkc_count, METH_O,
     "count($self, key, /)\n--\n\nThe minimum of the key's counters: an upper bound of its "
     "multiplicity (0: surely absent)."},
    {"add_many", (PyCFunction)bkc_add_many, METH_O,
     "add_many($self, keys, /)\n--\n\nAdd every key; return how many were new."},
    {"contains_many", (PyCFunction)bkc_contains_many, METH_O,
     "contains_many($self, keys, /)\n--\n\nMembership of every key: a list of bools, or a "
     "numpy bool array for array input."},
    {"remove_many", (PyCFunction)bkc_remove_many, METH_O,
     "remove_many($self, keys, /)\n--\n\nRemove keys in order; return how many.  At the first "
     "surely-absent key, stop and raise KeyError (the keys before it stay removed)."},
    {"union", (PyCFunction)(void (*)(void))bkc_union_meth, METH_FASTCALL,
     "union($self, *others)\n--\n\nA new filter whose counters are the saturating sums."},
    {"copy", (PyCFunction)bkc_copy, METH_NOARGS, "copy($self, /)\n--\n\nAn independent in-memory copy."},
    {"__copy__", (PyCFunction)bkc_copy, METH_NOARGS, NULL},
    {"clear", (PyCFunction)bkc_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemove every key."},
    {"to_bytes", (PyCFunction)bkpy_obj_to_bytes, METH_NOARGS,
     "to_bytes($self, /)\n--\n\nThe full state (header, payload, checksum) as bytes."},
    {"from_bytes", (PyCFunction)(void (*)(void))bkc_from_bytes, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_bytes(data, secret=None, key=None, *, verify=True)\n--\n\nRebuild a filter from "
     "to_bytes() output; corrupt input raises FormatError."},
    {"_from_buffer", (PyCFunction)(void (*)(void))bkc_from_buffer, METH_VARARGS | METH_KEYWORDS | METH_CLASS, NULL},
    {"__reduce__", (PyCFunction)bkpy_obj_reduce, METH_NOARGS, NULL},
    {"estimate_count", (PyCFunction)bkc_estimate_count, METH_NOARGS,
     "estimate_count($self, /)\n--\n\nSwamidass-Baldi estimate of the distinct keys held, from "
     "the nonzero counters."},
    {"estimate_error_rate", (PyCFunction)bkc_estimate_error_rate, METH_NOARGS,
     "estimate_error_rate($self, /)\n--\n\nfill_ratio ** num_hashes."},
    {"_seal", (PyCFunction)bkpy_obj_seal, METH_NOARGS, NULL},
    {"_write_state", (PyCFunction)bkpy_obj_write_state, METH_O, NULL},
    {"_set_dirty", (PyCFunction)bkpy_obj_set_dirty, METH_O, NULL},
    {"_detach", (PyCFunction)bkc_detach, METH_NOARGS, NULL},
    {"_counter_positions", (PyCFunction)bkc_counter_positions, METH_O,
     "_counter_positions($self, key, /)\n--\n\nThe counter indices a key probes, in probe order "
     "(the classic Bloom probe sequence over num_counters)."},
    {"_key_hash", (PyCFunction)bkc_key_hash, METH_O, NULL},
    {"_to_bloom", (PyCFunction)bkc_to_bloom, METH_O, NULL},
    {"_recount_total", (PyCFunction)bkc_recount_total_meth, METH_NOARGS,
     "_recount_total($self, /)\n--\n\nStore sum(counters) / k as the count when no counter is "
     "saturated (repair after a killed writer); returns whether it did."},
    {"_recount", (PyCFunction)bkc_recount_meth, METH_NOARGS,
     "_recount($self, /)\n--\n\nSet the distinct-key count to the estimate from the counters "
     "(as a union does), so that it no longer depends on the order of the adds."},
    {"__sizeof__", (PyCFunction)bkc_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods bkc_as_sequence = {
    .sq_length = (lenfunc)bkc_len,
    .sq_contains = (objobjproc)bkc_contains,
};

static PyNumberMethods bkc_as_number = {
    .nb_or = bkc_nb_or,
    .nb_inplace_or = bkc_nb_ior,
};

static PyTypeObject BKCounting_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.CountingBase",
    .tp_basicsize = sizeof(BKCounting),
    .tp_dealloc = (destructor)bkpy_obj_dealloc,
    .tp_as_number = &bkc_as_number,
    .tp_as_sequence = &bkc_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "CountingBase(num_counters, num_hashes, counter_bits, capacity, error_rate, *, "
              "seed=0, secret=None, key=None)\n--\n\nC core of CountingBloomFilter.",
    .tp_traverse = (traverseproc)bkpy_obj_traverse,
    .tp_clear = (inquiry)bkpy_obj_clear,
    .tp_richcompare = bkc_richcompare,
    .tp_weaklistoffset = offsetof(BKCounting, weakreflist),
    .tp_methods = bkc_methods,
    .tp_getset = bkc_getset,
    .tp_new = bkc_new,
};

int bkpy_init_counting(PyObject *m)
{
    if (PyType_Ready(&BKCounting_Type) < 0)
        return -1;
    Py_INCREF(&BKCounting_Type);
    if (PyModule_AddObject(m, "CountingBase", (PyObject *)&BKCounting_Type) < 0) {
        Py_DECREF(&BKCounting_Type);
        return -1;
    }
    return 0;
}
