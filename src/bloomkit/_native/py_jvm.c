/*
 * py_jvm.c -- CPython glue for the JVM engines' formats (bloomkit.spark,
 * bloomkit.guava): Spark's and Guava's MurmurHash3 variants (bk_hash_murmur3.c),
 * exposed so that tests and tools can check them against the real jars.
 *
 *   spark_hash_long(v, seed=0)   Murmur3_x86_32.hashLong   (Java ints in and out)
 *   spark_hash_int(v, seed=0)    Murmur3_x86_32.hashInt
 *   spark_hash_bytes(b, seed=0)  Murmur3_x86_32.hashUnsafeBytes  (per-byte tail)
 *   spark_hash_bytes2(b, seed=0) Murmur3_x86_32.hashUnsafeBytes2 (reference tail)
 *   guava_murmur3_128(b, seed=0) Hashing.murmur3_128(seed).hashBytes(b).asBytes()
 *
 * Values cross as Java sees them: signed 32-bit ints, a signed 64-bit long,
 * the 16 HashCode bytes.
 *
 * The filters and the sketch (bk_jvm.c) live in a bytearray the Python
 * facades own, in the JVM's own bytes; every call here re-parses it with the
 * one validator (O(1)) before touching it, so a facade cannot hand C a
 * buffer that does not match its header.  Key rules and batches: below.
 */
#include "py_common.h"

#include "bk_hash.h"
#include "bk_jvm.h"

#include <string.h>

/* A Java int from a Python int in [-2^31, 2^32): both the signed value and
 * its unsigned bit pattern are accepted. */
static int bkjvm_int32(PyObject *o, uint32_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT32_MIN || v > (long long)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a Java int must be in [-2**31, 2**32)");
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static PyObject *bkjvm_java_int(uint32_t h)
{
    return PyLong_FromLong(h >= UINT32_C(0x80000000) ? -(long)(~h) - 1 : (long)h);
}

static PyObject *bkjvm_hash_num(PyObject *args, int is_long)
{
    PyObject *v, *seed_obj = NULL;
    uint32_t seed = 0;
    if (!PyArg_ParseTuple(args, is_long ? "O|O:spark_hash_long" : "O|O:spark_hash_int", &v,
                          &seed_obj))
        return NULL;
    if (seed_obj != NULL && bkjvm_int32(seed_obj, &seed) < 0)
        return NULL;
    if (is_long) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        return bkjvm_java_int(bk_hash_murmur3_spark_long((uint64_t)x, seed));
    } else {
        uint32_t x;
        if (bkjvm_int32(v, &x) < 0)
            return NULL;
        return bkjvm_java_int(bk_hash_murmur3_spark_int(x, seed));
    }
}

static PyObject *bkjvm_spark_hash_long(PyObject *mod, PyObject *args)
{
    (void)mod;
    return bkjvm_hash_num(args, 1);
}

static PyObject *bkjvm_spark_hash_int(PyObject *mod, PyObject *args)
{
    (void)mod;
    return bkjvm_hash_num(args, 0);
}

static PyObject *bkjvm_hash_bytes(PyObject *args, int variant)
{
    Py_buffer b;
    PyObject *seed_obj = NULL, *res;
    uint32_t seed = 0;
    if (!PyArg_ParseTuple(args, "y*|O", &b, &seed_obj))
        return NULL;
    if (seed_obj != NULL && bkjvm_int32(seed_obj, &seed) < 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    if (variant == 2) {
        uint64_t h[2];
        uint8_t out[16];
        bk_hash_murmur3_128(b.buf, (size_t)b.len, seed, h);
        for (int i = 0; i < 8; i++) {
            out[i] = (uint8_t)(h[0] >> (8 * i));
            out[8 + i] = (uint8_t)(h[1] >> (8 * i));
        }
        res = PyBytes_FromStringAndSize((const char *)out, 16);
    } else {
        res = bkjvm_java_int(variant ? bk_hash_murmur3_spark_bytes2(b.buf, (size_t)b.len, seed)
                                     : bk_hash_murmur3_spark_bytes(b.buf, (size_t)b.len, seed));
    }
    PyBuffer_Release(&b);
    return res;
}

static PyObject *bkjvm_spark_hash_bytes(PyObject *mod, PyObject *args)
{
    (void)mod;
    return bkjvm_hash_bytes(args, 0);
}

static PyObject *bkjvm_spark_hash_bytes2(PyObject *mod, PyObject *args)
{
    (void)mod;
    return bkjvm_hash_bytes(args, 1);
}

static PyObject *bkjvm_guava_murmur3_128(PyObject *mod, PyObject *args)
{
    (void)mod;
    return bkjvm_hash_bytes(args, 2);
}


/* ---- Begin logic for the filters and the sketch ---------------------------- */

/* Families: 0 Spark BloomFilter, 1 Guava BloomFilter, 2 Spark CountMinSketch. */
#define BKJVM_SPARK 0
#define BKJVM_GUAVA 1
#define BKJVM_CMS 2

/* Key rules: 0 Spark's mightContain(Object) (int -> long, str -> UTF-8,
 * bytes-like -> binary); 1, 2, 3: Guava's long, UTF-8 string and byte-array
 * funnels, each taking only its own type. */
static const char *const bkjvm_rule_names[] = {"Spark", "long funnel", "string funnel",
                                               "byte-array funnel"};

typedef struct {
    int kind;          /* BK_JVM_KEY_* */
    int64_t v;
    const void *data;
    size_t len;
    Py_buffer view;    /* held when has_view */
    int has_view;
} bkjvm_key;

static int bkjvm_key_get(PyObject *key, int rule, bkjvm_key *k)
{
    k->has_view = 0;
    k->data = NULL;
    k->len = 0;
    k->v = 0;
    if (PyUnicode_Check(key)) {
        Py_ssize_t n;
        const char *u;
        if (rule != 0 && rule != 2)
            goto wrong;
        u = PyUnicode_AsUTF8AndSize(key, &n);
        if (u == NULL)
            return -1;
        k->kind = BK_JVM_KEY_BYTES;
        k->data = u;
        k->len = (size_t)n;
        return 0;
    }
    if (PyBool_Check(key))
        goto wrong; /* Spark's integralToLong refuses Boolean too */
    if (PyLong_Check(key) || PyIndex_Check(key)) { /* numpy integer scalars too (they are also buffers) */
        long long x;
        PyObject *idx;
        if (rule != 0 && rule != 1)
            goto wrong;
        idx = PyNumber_Index(key);
        if (idx == NULL)
            return -1;
        x = PyLong_AsLongLong(idx);
        Py_DECREF(idx);
        if (x == -1 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_OverflowError,
                                "an int key must fit a Java long (-2**63 .. 2**63-1)");
            }
            return -1;
        }
        k->kind = BK_JVM_KEY_LONG;
        k->v = (int64_t)x;
        return 0;
    }
    if (PyObject_CheckBuffer(key)) {
        if (rule != 0 && rule != 3)
            goto wrong;
        if (PyObject_GetBuffer(key, &k->view, PyBUF_SIMPLE) < 0)
            return -1;
        k->has_view = 1;
        k->kind = BK_JVM_KEY_BYTES;
        k->data = k->view.buf;
        k->len = (size_t)k->view.len;
        return 0;
    }
wrong:
    if (rule == 0)
        PyErr_Format(PyExc_TypeError,
                     "Spark's sketches take int (as a Java long), str (UTF-8) or bytes-like keys, "
                     "not %.100s", Py_TYPE(key)->tp_name);
    else
        PyErr_Format(PyExc_TypeError, "this Guava filter's %s takes %s keys, not %.100s",
                     bkjvm_rule_names[rule], rule == 1 ? "int" : rule == 2 ? "str" : "bytes-like",
                     Py_TYPE(key)->tp_name);
    return -1;
}

static void bkjvm_key_release(bkjvm_key *k)
{
    if (k->has_view)
        PyBuffer_Release(&k->view);
}

/* A writable (or, for queries, any) buffer holding a filter of a family. */
typedef struct {
    Py_buffer view;
    bk_jvm_bloom f;
    bk_jvm_cms s;
} bkjvm_state;

static int bkjvm_state_get(PyObject *obj, int family, int writable, bkjvm_state *st)
{
    const char *why = NULL;
    int rc;
    if (PyObject_GetBuffer(obj, &st->view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    if (family == BKJVM_CMS)
        rc = bk_jvm_cms_parse((uint8_t *)st->view.buf, (size_t)st->view.len, &st->s, &why);
    else
        rc = bk_jvm_bloom_parse((uint8_t *)st->view.buf, (size_t)st->view.len, family, &st->f, &why);
    if (rc < 0) {
        PyErr_Format(bkpy_FormatError, "not a valid %s: %s",
                     family == BKJVM_SPARK   ? "Spark BloomFilter"
                     : family == BKJVM_GUAVA ? "Guava BloomFilter"
                                             : "Spark CountMinSketch",
                     why);
        PyBuffer_Release(&st->view);
        return -1;
    }
    return 0;
}

/* jvm_parse(data, family) -> tuple of the parsed fields, or FormatError. */
static PyObject *bkjvm_parse(PyObject *mod, PyObject *args)
{
    PyObject *data, *res;
    int family;
    bkjvm_state st;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Oi:jvm_parse", &data, &family))
        return NULL;
    if (family < 0 || family > 2)
        return PyErr_Format(PyExc_ValueError, "unknown family %d", family);
    if (bkjvm_state_get(data, family, 0, &st) < 0)
        return NULL;
    if (family == BKJVM_CMS)
        res = Py_BuildValue("(II)", st.s.depth, st.s.width);
    else
        res = Py_BuildValue("(iIIKn)", st.f.scheme, st.f.k, st.f.seed,
                            (unsigned long long)st.f.nbits, (Py_ssize_t)st.f.header_len);
    PyBuffer_Release(&st.view);
    return res;
}

/* jvm_bloom_key(buf, family, rule, key, add) -> bool */
static PyObject *bkjvm_bloom_key(PyObject *mod, PyObject *args)
{
    PyObject *buf, *key;
    int family, rule, add, r;
    bkjvm_state st;
    bkjvm_key k;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OiiOp:jvm_bloom_key", &buf, &family, &rule, &key, &add))
        return NULL;
    if (bkjvm_key_get(key, rule, &k) < 0)
        return NULL;
    if (bkjvm_state_get(buf, family, add, &st) < 0) {
        bkjvm_key_release(&k);
        return NULL;
    }
    r = add ? bk_jvm_bloom_add(&st.f, k.kind, k.v, k.data, k.len)
            : bk_jvm_bloom_contains(&st.f, k.kind, k.v, k.data, k.len);
    PyBuffer_Release(&st.view);
    bkjvm_key_release(&k);
    return PyBool_FromLong(r);
}

/* jvm_bloom_keys(buf, family, rule, keys, add) -> bytes of 0/1 answers (add: None) */
static PyObject *bkjvm_bloom_keys(PyObject *mod, PyObject *args)
{
    PyObject *buf, *keys, *seq, *out = NULL;
    int family, rule, add;
    Py_ssize_t n, i;
    bkjvm_state st;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OiiOp:jvm_bloom_keys", &buf, &family, &rule, &keys, &add))
        return NULL;
    seq = PySequence_Fast(keys, "keys must be iterable");
    if (seq == NULL)
        return NULL;
    if (bkjvm_state_get(buf, family, add, &st) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if (!add && (out = PyBytes_FromStringAndSize(NULL, n)) == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        bkjvm_key k;
        if (bkjvm_key_get(PySequence_Fast_GET_ITEM(seq, i), rule, &k) < 0) {
            Py_CLEAR(out);
            goto done;
        }
        if (add)
            (void)bk_jvm_bloom_add(&st.f, k.kind, k.v, k.data, k.len);
        else
            PyBytes_AS_STRING(out)[i] = (char)bk_jvm_bloom_contains(&st.f, k.kind, k.v, k.data, k.len);
        bkjvm_key_release(&k);
    }
    if (add)
        out = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&st.view);
    Py_DECREF(seq);
    return out;
}

/* The column buffers of a batch: values (n int64) or Arrow offsets + data,
 * an optional validity bitmap, an optional output. */
typedef struct {
    Py_buffer vals, offsets, data, valid, out, counts;
    int has_vals, has_offsets, has_data, has_valid, has_out, has_counts;
} bkjvm_cols;

static void bkjvm_cols_release(bkjvm_cols *c)
{
    if (c->has_vals)
        PyBuffer_Release(&c->vals);
    if (c->has_offsets)
        PyBuffer_Release(&c->offsets);
    if (c->has_data)
        PyBuffer_Release(&c->data);
    if (c->has_valid)
        PyBuffer_Release(&c->valid);
    if (c->has_out)
        PyBuffer_Release(&c->out);
    if (c->has_counts)
        PyBuffer_Release(&c->counts);
}

static int bkjvm_opt_buffer(PyObject *o, Py_buffer *v, int *has, int writable)
{
    *has = 0;
    if (o == Py_None)
        return 0;
    if (PyObject_GetBuffer(o, v, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    *has = 1;
    return 0;
}

/* Check the sizes of a batch: n keys from a values buffer (owidth 0) or
 * Arrow offsets (owidth 4 or 8); validity bits vbit..vbit+n; out of n
 * elements of outsize bytes; counts of n int64. */
static int bkjvm_cols_check(bkjvm_cols *c, int owidth, Py_ssize_t n, Py_ssize_t vbit,
                            Py_ssize_t outsize)
{
    if (n < 0 || vbit < 0) {
        PyErr_SetString(PyExc_ValueError, "negative length or offset");
        return -1;
    }
    if (owidth == 0) {
        if (c->vals.len / 8 < n) {
            PyErr_SetString(PyExc_ValueError, "the values buffer holds fewer than n int64s");
            return -1;
        }
    } else {
        if ((owidth != 4 && owidth != 8) || c->offsets.len / owidth < n + 1) {
            PyErr_SetString(PyExc_ValueError, "the offsets buffer holds fewer than n+1 offsets");
            return -1;
        }
        if (bk_jvm_check_offsets(c->offsets.buf, owidth, (size_t)n,
                                 c->has_data ? (size_t)c->data.len : 0) < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "offsets out of order or past the end of the data buffer");
            return -1;
        }
    }
    if (c->has_valid && (c->valid.len * 8 - vbit) < n) {
        PyErr_SetString(PyExc_ValueError, "the validity bitmap is shorter than the batch");
        return -1;
    }
    if (c->has_out && c->out.len / outsize < n) {
        PyErr_SetString(PyExc_ValueError, "the output buffer is shorter than the batch");
        return -1;
    }
    if (c->has_counts && c->counts.len / 8 < n) {
        PyErr_SetString(PyExc_ValueError, "the counts buffer holds fewer than n int64s");
        return -1;
    }
    return 0;
}

/* jvm_batch(buf, family, vals, offsets, owidth, data, n, valid, vbit, out, counts)
 * One call for every columnar batch: vals (n int64, owidth 0) or Arrow
 * offsets + data; out None adds (counts: CMS increments or None for 1);
 * out given answers (Bloom: n bytes 0/1; CMS: n int64 estimates).  Runs
 * without the GIL; the buffers are held (a bytearray cannot resize). */
static PyObject *bkjvm_batch(PyObject *mod, PyObject *args)
{
    PyObject *buf, *vals, *offsets, *data, *valid, *out, *counts;
    int family, owidth;
    Py_ssize_t n, vbit;
    bkjvm_state st;
    bkjvm_cols c;
    (void)mod;
    memset(&c, 0, sizeof c);
    if (!PyArg_ParseTuple(args, "OiOOiOnOnOO:jvm_batch", &buf, &family, &vals, &offsets, &owidth,
                          &data, &n, &valid, &vbit, &out, &counts))
        return NULL;
    if (family < 0 || family > 2)
        return PyErr_Format(PyExc_ValueError, "unknown family %d", family);
    if (bkjvm_opt_buffer(owidth ? Py_None : vals, &c.vals, &c.has_vals, 0) < 0 ||
        bkjvm_opt_buffer(owidth ? offsets : Py_None, &c.offsets, &c.has_offsets, 0) < 0 ||
        bkjvm_opt_buffer(owidth ? data : Py_None, &c.data, &c.has_data, 0) < 0 ||
        bkjvm_opt_buffer(valid, &c.valid, &c.has_valid, 0) < 0 ||
        bkjvm_opt_buffer(out, &c.out, &c.has_out, 1) < 0 ||
        bkjvm_opt_buffer(counts, &c.counts, &c.has_counts, 0) < 0)
        goto fail;
    if ((owidth == 0 && !c.has_vals) || (owidth != 0 && !c.has_offsets)) {
        PyErr_SetString(PyExc_ValueError, "a batch needs values or offsets");
        goto fail;
    }
    if (bkjvm_cols_check(&c, owidth, n, vbit, family == BKJVM_CMS ? 8 : 1) < 0)
        goto fail;
    if (bkjvm_state_get(buf, family, !c.has_out, &st) < 0)
        goto fail;
    {
        const uint8_t *vb = c.has_valid ? (const uint8_t *)c.valid.buf : NULL;
        const uint8_t *db = c.has_data ? (const uint8_t *)c.data.buf : NULL;
        const void *cb = c.has_counts ? c.counts.buf : NULL;
        Py_BEGIN_ALLOW_THREADS
        if (family == BKJVM_CMS) {
            int64_t *est = c.has_out ? (int64_t *)c.out.buf : NULL;
            if (owidth == 0)
                bk_jvm_cms_longs(&st.s, c.vals.buf, (size_t)n, cb, vb, (size_t)vbit, est);
            else
                bk_jvm_cms_binary(&st.s, c.offsets.buf, owidth, db, (size_t)n, cb, vb,
                                  (size_t)vbit, est);
        } else {
            uint8_t *o = c.has_out ? (uint8_t *)c.out.buf : NULL;
            if (owidth == 0)
                bk_jvm_bloom_longs(&st.f, BK_JVM_KEY_LONG, c.vals.buf, (size_t)n, vb,
                                   (size_t)vbit, o);
            else
                bk_jvm_bloom_binary(&st.f, c.offsets.buf, owidth, db, (size_t)n, vb,
                                    (size_t)vbit, o);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&st.view);
    bkjvm_cols_release(&c);
    Py_RETURN_NONE;
fail:
    bkjvm_cols_release(&c);
    return NULL;
}

/* jvm_cms_key(buf, key, count, estimate) -> the estimate, or None after an add */
static PyObject *bkjvm_cms_key(PyObject *mod, PyObject *args)
{
    PyObject *buf, *key;
    long long count;
    int estimate;
    int64_t est = 0;
    bkjvm_state st;
    bkjvm_key k;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OOLp:jvm_cms_key", &buf, &key, &count, &estimate))
        return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "Spark's CountMinSketch takes no negative increments");
        return NULL;
    }
    if (bkjvm_key_get(key, 0, &k) < 0)
        return NULL;
    if (bkjvm_state_get(buf, BKJVM_CMS, !estimate, &st) < 0) {
        bkjvm_key_release(&k);
        return NULL;
    }
    if (estimate)
        est = bk_jvm_cms_estimate(&st.s, k.kind, k.v, k.data, k.len);
    else
        bk_jvm_cms_add(&st.s, k.kind, k.v, k.data, k.len, (int64_t)count);
    PyBuffer_Release(&st.view);
    bkjvm_key_release(&k);
    if (estimate)
        return PyLong_FromLongLong(est);
    Py_RETURN_NONE;
}

/* jvm_combine(a, b, family, how): how 0 OR (merge), 1 AND (intersect); the
 * CMS adds.  Parameters must be equal (checked here too). */
static PyObject *bkjvm_combine(PyObject *mod, PyObject *args)
{
    PyObject *a, *b;
    int family, how, same;
    bkjvm_state sa, sb;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OOii:jvm_combine", &a, &b, &family, &how))
        return NULL;
    if (bkjvm_state_get(a, family, 1, &sa) < 0)
        return NULL;
    if (bkjvm_state_get(b, family, 0, &sb) < 0) {
        PyBuffer_Release(&sa.view);
        return NULL;
    }
    if (family == BKJVM_CMS)
        same = sa.s.depth == sb.s.depth && sa.s.width == sb.s.width &&
               memcmp((uint8_t *)sa.view.buf + BK_JVM_CMS_HEADER,
                      (uint8_t *)sb.view.buf + BK_JVM_CMS_HEADER, 8 * (size_t)sa.s.depth) == 0;
    else
        same = sa.f.scheme == sb.f.scheme && sa.f.k == sb.f.k && sa.f.seed == sb.f.seed &&
               sa.f.nbits == sb.f.nbits;
    if (!same) {
        PyBuffer_Release(&sa.view);
        PyBuffer_Release(&sb.view);
        PyErr_SetString(bkpy_IncompatibleFiltersError,
                        family == BKJVM_CMS
                            ? "cannot merge count-min sketches of different depth, width or seed"
                            : "cannot combine filters of different version/strategy, bit size, "
                              "hash function count or seed");
        return NULL;
    }
    if (family == BKJVM_CMS)
        bk_jvm_cms_merge(&sa.s, &sb.s);
    else
        bk_jvm_bloom_combine(&sa.f, &sb.f, how);
    PyBuffer_Release(&sa.view);
    PyBuffer_Release(&sb.view);
    Py_RETURN_NONE;
}

static PyObject *bkjvm_cardinality(PyObject *mod, PyObject *args)
{
    PyObject *a;
    int family;
    uint64_t c;
    bkjvm_state st;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Oi:jvm_cardinality", &a, &family))
        return NULL;
    if (family == BKJVM_CMS) {
        PyErr_SetString(PyExc_ValueError, "a count-min sketch has no cardinality");
        return NULL;
    }
    if (bkjvm_state_get(a, family, 0, &st) < 0)
        return NULL;
    c = bk_jvm_bloom_cardinality(&st.f);
    PyBuffer_Release(&st.view);
    return PyLong_FromUnsignedLongLong(c);
}

/* ---- End logic for the filters and the sketch ------------------------------ */

static PyMethodDef bkjvm_methods[] = {
    {"spark_hash_long", bkjvm_spark_hash_long, METH_VARARGS,
     "spark_hash_long(v, seed=0, /)\n--\n\nSpark's Murmur3_x86_32.hashLong (a Java int)."},
    {"spark_hash_int", bkjvm_spark_hash_int, METH_VARARGS,
     "spark_hash_int(v, seed=0, /)\n--\n\nSpark's Murmur3_x86_32.hashInt (a Java int)."},
    {"spark_hash_bytes", bkjvm_spark_hash_bytes, METH_VARARGS,
     "spark_hash_bytes(data, seed=0, /)\n--\n\nSpark's Murmur3_x86_32.hashUnsafeBytes."},
    {"spark_hash_bytes2", bkjvm_spark_hash_bytes2, METH_VARARGS,
     "spark_hash_bytes2(data, seed=0, /)\n--\n\nSpark's Murmur3_x86_32.hashUnsafeBytes2."},
    {"guava_murmur3_128", bkjvm_guava_murmur3_128, METH_VARARGS,
     "guava_murmur3_128(data, seed=0, /)\n--\n\nGuava's murmur3_128(seed) HashCode bytes."},
    {"jvm_parse", bkjvm_parse, METH_VARARGS,
     "jvm_parse(data, family, /)\n--\n\nValidate Spark/Guava bytes (family 0 Spark BloomFilter, "
     "1 Guava, 2 Spark CountMinSketch): the parsed fields, or FormatError naming the reason."},
    {"jvm_bloom_key", bkjvm_bloom_key, METH_VARARGS,
     "jvm_bloom_key(buf, family, rule, key, add, /)\n--\n\nAdd or test one key."},
    {"jvm_bloom_keys", bkjvm_bloom_keys, METH_VARARGS,
     "jvm_bloom_keys(buf, family, rule, keys, add, /)\n--\n\nAdd or test a sequence of keys."},
    {"jvm_batch", bkjvm_batch, METH_VARARGS,
     "jvm_batch(buf, family, vals, offsets, owidth, data, n, valid, vbit, out, counts, /)\n--\n\n"
     "Add or query a columnar batch (int64 values or Arrow offsets+data) without the GIL."},
    {"jvm_cms_key", bkjvm_cms_key, METH_VARARGS,
     "jvm_cms_key(buf, key, count, estimate, /)\n--\n\nAdd to or estimate one key."},
    {"jvm_combine", bkjvm_combine, METH_VARARGS,
     "jvm_combine(a, b, family, how, /)\n--\n\nOR (0) or AND (1) b into a; a sketch adds."},
    {"jvm_cardinality", bkjvm_cardinality, METH_VARARGS,
     "jvm_cardinality(buf, family, /)\n--\n\nSet bits of a filter."},
    {NULL, NULL, 0, NULL},
};

int bkjvm_init(PyObject *m)
{
    return PyModule_AddFunctions(m, bkjvm_methods);
}
