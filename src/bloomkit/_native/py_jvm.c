/*
 * py_jvm.c -- CPython glue for the JVM engines' formats (bloomkit.spark,
 * bloomkit.guava): Spark's and Guava's MurmurHash3 variants (bk_hash.c),
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
 */
#include "py_common.h"

#include "bk_hash.h"

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
        return bkjvm_java_int(bk_hash_spark_long((uint64_t)x, seed));
    } else {
        uint32_t x;
        if (bkjvm_int32(v, &x) < 0)
            return NULL;
        return bkjvm_java_int(bk_hash_spark_int(x, seed));
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
        res = bkjvm_java_int(variant ? bk_hash_spark_bytes2(b.buf, (size_t)b.len, seed)
                                     : bk_hash_spark_bytes(b.buf, (size_t)b.len, seed));
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
    {NULL, NULL, 0, NULL},
};

int bkjvm_init(PyObject *m)
{
    return PyModule_AddFunctions(m, bkjvm_methods);
}
