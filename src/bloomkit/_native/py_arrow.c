/*
 * py_arrow.c -- Arrow arrays as batches of keys, read through the Arrow C
 * Data Interface: add_many / contains_many / update / estimate_many of every
 * structure (through bkpy_for_each_chunk) take a pyarrow Array or
 * ChunkedArray, a Polars Series, a DuckDB result, a nanoarrow array -- any
 * object with __arrow_c_array__ or __arrow_c_stream__ (the PyCapsule
 * protocol) -- and hash its values without a Python object per key and
 * without the GIL.  No pyarrow header or library: the three structs in
 * py_arrow.h are the interface's ABI, written from its specification
 * (arrow.apache.org/docs/format/CDataInterface.html and .../CStreamInterface).
 *
 * Key encoding: exactly the numpy path's (py_common.h, bkpy_hash_buffer_item),
 * so an Arrow int32 5, a numpy int32 5 and the Python int 5 are one key:
 *
 *   int8/16/32/64 ("c" "s" "i" "l")     the int of that value
 *   uint8/16/32/64 ("C" "S" "I" "L")    the int of that value (>= 2^63: 9 bytes)
 *   bool ("b", bit-packed)              the int 0 or 1
 *   utf8 / binary ("u" "z"),            the value's bytes (a str key is its
 *   large_ ("U" "Z"), view ("vu" "vz")  UTF-8: "abc" == b"abc")
 *   fixed_size_binary ("w:N")           all N bytes (as bloomkit.sources does)
 *   dictionary-encoded any of these     the decoded value
 *   null ("n")                          every row null
 *   struct of one child ("+s")          that child (a one-column table or
 *                                       RecordBatch, a DuckDB result)
 * Anything else (floats, temporals, decimals, lists) is a TypeError, as the
 * same Python objects are.
 *
 * Nulls (as build_from skips null values of a Parquet/CSV column): a null
 * row is no key.  add_many skips it; contains_many answers False for it and
 * estimate_many 0; a count given with it (CountMinSketch.add_many(keys,
 * counts)) is not added.  The chunk callbacks are then called on runs of
 * non-null rows with `offset` still the row's index, and size_fn learns of
 * the gaps (BKPY_BUFFER_GAPS): result buffers start zeroed and the blocked
 * Bloom filter's consecutive-chunk stage stays closed.
 *
 * Validation (with the GIL, before the first key is hashed, so a bad array
 * adds nothing): every length, offset and null count is in range; required
 * buffers are present; string/binary offsets are non-negative and non-
 * decreasing over the rows read; every view's buffer index and range lie
 * within the variadic buffer sizes the producer declared; every dictionary
 * index lies within the dictionary.  A failure is a ValueError naming the
 * field (a TypeError for a type that is no key).  What the interface does
 * not carry cannot be checked: the byte size of a plain buffer.  An array
 * whose offsets point past the end of its data buffer, or whose length
 * exceeds its values buffer, is a producer bug we can only trust not to
 * happen (pyarrow, Polars and DuckDB validate their own arrays).  The
 * GIL-free loop re-checks each offset, view and index it reads against the
 * ranges validated above (two compares a key), so a producer that changes
 * its buffers meanwhile gets wrong keys, never a read out of bounds.
 *
 * Files.  This file holds the C Data Interface: the parsing of format
 * strings, validation, and the import of an array or a stream
 * (bkarrow_api_open / close and the accessors).  Its siblings, sharing the
 * private header py_arrow.h: py_arrow_hash.c hashes validated rows without
 * the GIL (bkarrow_api_run), py_arrow_values.c gives rows as values (the
 * Python key object of a row for TopK, raw values for the Parquet SBBF).
 */
#include "py_arrow.h"

/* ---- Begin logic for the C Data Interface ------------------------------ */

static int bkarrow_bad(const char *what, const char *fmt, long long a, long long b)
{
    char msg[200];
    PyOS_snprintf(msg, sizeof msg, fmt, a, b);
    PyErr_Format(PyExc_ValueError, "invalid Arrow array (%s): %s", what, msg);
    return -1;
}

/* The kind of a format string; -1 with TypeError when it is no key. */
static int bkarrow_parse_format(const char *f, bkarrow_col *c)
{
    static const char ints[] = "cCsSiIlL";
    const char *p;
    if (f == NULL)
        return bkarrow_bad("format", "no format string%.0lld%.0lld", 0, 0);
    if (f[0] != '\0' && f[1] == '\0' && (p = strchr(ints, f[0])) != NULL) {
        int k = (int)(p - ints);
        c->kind = BKARROW_INT;
        c->width = 1 << (k / 2);
        c->is_signed = (k % 2) == 0;
        return 0;
    }
    if (strcmp(f, "n") == 0) {
        c->kind = BKARROW_NULLS;
        return 0;
    }
    if (strcmp(f, "b") == 0) {
        c->kind = BKARROW_BOOL;
        return 0;
    }
    if (strcmp(f, "u") == 0 || strcmp(f, "z") == 0) {
        c->kind = BKARROW_BIN32;
        c->is_text = f[0] == 'u';
        return 0;
    }
    if (strcmp(f, "U") == 0 || strcmp(f, "Z") == 0) {
        c->kind = BKARROW_BIN64;
        c->is_text = f[0] == 'U';
        return 0;
    }
    if (strcmp(f, "vu") == 0 || strcmp(f, "vz") == 0) {
        c->kind = BKARROW_VIEW;
        c->is_text = f[1] == 'u';
        return 0;
    }
    if (f[0] == 'w' && f[1] == ':') {
        char *end;
        long w = strtol(f + 2, &end, 10);
        if (*end != '\0' || w < 1 || w > (1L << 30))
            return bkarrow_bad("format", "fixed_size_binary width out of range%.0lld%.0lld",
                               0, 0);
        c->kind = BKARROW_FIXED;
        c->width = (int)w;
        return 0;
    }
    if (f[0] == 'e' || f[0] == 'f' || f[0] == 'g')
        PyErr_Format(PyExc_TypeError,
                     "an Arrow float column (format '%.20s') is not keys (a Python float is "
                     "not a key either); cast it to an integer or string type", f);
    else if (f[0] == 't' || f[0] == 'd')
        PyErr_Format(PyExc_TypeError,
                     "an Arrow date/time/decimal column (format '%.20s') is not keys; cast it "
                     "to int64 or string", f);
    else
        PyErr_Format(PyExc_TypeError,
                     "an Arrow column of format '%.20s' is not keys (supported: integers, "
                     "bool, string, binary, their large, view and dictionary forms, "
                     "fixed_size_binary)", f);
    return -1;
}

/* Validate the bytes of BIN32/BIN64 offsets over the rows read. */
static int bkarrow_check_offsets(bkarrow_col *c)
{
    int64_t prev = 0;
    for (int64_t i = 0; i <= c->length; i++) {
        int64_t o;
        if (c->kind == BKARROW_BIN32) {
            int32_t x;
            memcpy(&x, c->values + (c->offset + i) * 4, 4);
            o = x;
        } else {
            memcpy(&o, c->values + (c->offset + i) * 8, 8);
        }
        if (o < 0 || (i > 0 && o < prev))
            return bkarrow_bad("offsets", "offsets[%lld] = %lld: string/binary offsets must be "
                               "non-negative and non-decreasing", c->offset + i, o);
        if (i == 0)
            c->lo = o;
        prev = o;
    }
    c->hi = prev;
    if (c->hi > c->lo && c->data == NULL)
        return bkarrow_bad("data", "offsets span %lld bytes but the data buffer is missing%.0lld",
                           c->hi - c->lo, 0);
    return 0;
}

static int bkarrow_check_views(bkarrow_col *c, const bkarrow_array *a)
{
    int64_t nv = a->n_buffers - 3;
    const int64_t *sizes = (const int64_t *)a->buffers[a->n_buffers - 1];
    if (nv > 0 && sizes == NULL)
        return bkarrow_bad("views", "no variadic buffer sizes for %lld buffers%.0lld", nv, 0);
    c->nvbufs = nv;
    c->vbufs = (const uint8_t **)PyMem_Calloc((size_t)(nv > 0 ? nv : 1), sizeof *c->vbufs);
    c->vsizes = (int64_t *)PyMem_Calloc((size_t)(nv > 0 ? nv : 1), sizeof *c->vsizes);
    if (c->vbufs == NULL || c->vsizes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int64_t b = 0; b < nv; b++) {
        int64_t sz;
        memcpy(&sz, &sizes[b], 8);
        c->vbufs[b] = (const uint8_t *)a->buffers[2 + b];
        if (sz < 0 || (sz > 0 && c->vbufs[b] == NULL))
            return bkarrow_bad("views", "variadic buffer %lld: size %lld without data", b, sz);
        c->vsizes[b] = sz;
    }
    for (int64_t i = 0; i < c->length; i++) {
        const uint8_t *p;
        size_t n;
        if (c->valid != NULL && !bkarrow_bit(c->valid, c->offset + i))
            continue;
        if (!bkarrow_view(c, i, &p, &n))
            return bkarrow_bad("views", "row %lld's view points outside the %lld declared "
                               "data buffers (or has a negative length)", c->offset + i, nv);
    }
    return 0;
}

/* Validate array a (of schema format f) as a column of `length` rows
 * starting `extra` rows in (a struct parent's offset). */
static int bkarrow_col_init(bkarrow_col *c, const char *f, const bkarrow_array *a,
                            int64_t extra, int64_t length)
{
    int64_t want;
    memset(c, 0, sizeof *c);
    if (bkarrow_parse_format(f, c) < 0)
        return -1;
    if (a->release == NULL)
        return bkarrow_bad("release", "the array was already released%.0lld%.0lld", 0, 0);
    if (a->length < 0 || a->offset < 0 || a->length > BKARROW_MAX_ROWS ||
        a->offset > BKARROW_MAX_ROWS)
        return bkarrow_bad("length", "length %lld, offset %lld", a->length, a->offset);
    if (a->null_count < -1 || a->null_count > a->length)
        return bkarrow_bad("null_count", "null_count %lld of %lld rows", a->null_count,
                           a->length);
    if (extra + length > a->length)
        return bkarrow_bad("length", "a child of %lld rows under a parent reading %lld",
                           a->length, extra + length);
    c->offset = a->offset + extra;
    c->length = length;
    if (c->kind == BKARROW_NULLS)
        return 0;
    want = (c->kind == BKARROW_VIEW || c->kind == BKARROW_BIN32 || c->kind == BKARROW_BIN64) ? 3 : 2;
    if (c->kind == BKARROW_VIEW ? a->n_buffers < want : a->n_buffers != want)
        return bkarrow_bad("n_buffers", "%lld buffers where the format has %lld", a->n_buffers,
                           want);
    if (a->buffers == NULL)
        return bkarrow_bad("buffers", "no buffer array%.0lld%.0lld", 0, 0);
    if (a->null_count != 0 && a->buffers[0] != NULL)
        c->valid = (const uint8_t *)a->buffers[0];
    else if (a->null_count > 0)
        return bkarrow_bad("validity", "null_count %lld but no validity bitmap%.0lld",
                           a->null_count, 0);
    if (length == 0)
        return 0;
    c->values = (const uint8_t *)a->buffers[1];
    if (c->values == NULL)
        return bkarrow_bad("buffers", "the values buffer is missing for %lld rows%.0lld", length,
                           0);
    {
        /* The bytes the rows span must be addressable (a 32-bit build: a
         * claimed length must not wrap the pointer arithmetic below). */
        int64_t elem = c->kind == BKARROW_INT || c->kind == BKARROW_FIXED ? c->width
                       : c->kind == BKARROW_BIN32 ? 4 : c->kind == BKARROW_BIN64 ? 8
                       : c->kind == BKARROW_VIEW ? 16 : 1;
        if (c->offset + length + 1 > (int64_t)(PY_SSIZE_T_MAX / elem))
            return bkarrow_bad("length", "%lld rows of %lld bytes do not fit the address space",
                               c->offset + length, elem);
    }
    if (c->kind == BKARROW_BIN32 || c->kind == BKARROW_BIN64) {
        c->data = (const uint8_t *)a->buffers[2];
        return bkarrow_check_offsets(c);
    }
    if (c->kind == BKARROW_VIEW)
        return bkarrow_check_views(c, a);
    return 0;
}

static void bkarrow_col_clear(bkarrow_col *c)
{
    PyMem_Free(c->vbufs);
    PyMem_Free(c->vsizes);
    c->vbufs = NULL;
    c->vsizes = NULL;
}

/* ---- End logic for the C Data Interface -------------------------------- */

/* ---- Begin logic for import -------------------------------------------- */

static int bkarrow_part_init(bkarrow_part *p, const bkarrow_schema *s, const bkarrow_array *a)
{
    int64_t extra = 0, length;
    memset(p, 0, sizeof *p);
    if (s->format == NULL || a->release == NULL)
        return bkarrow_bad("schema", "a released schema or array%.0lld%.0lld", 0, 0);
    if (a->length < 0 || a->length > BKARROW_MAX_ROWS)
        return bkarrow_bad("length", "length %lld%.0lld", a->length, 0);
    length = a->length;
    if (strcmp(s->format, "+s") == 0) {
        /* A one-column table / record batch: its column (rows offset ..). */
        if (s->n_children != 1 || a->n_children != 1 || s->children == NULL ||
            a->children == NULL || s->children[0] == NULL || a->children[0] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "Arrow keys must be one column; got a struct/table of %lld columns: "
                         "select the key column first", (long long)s->n_children);
            return -1;
        }
        if (a->null_count != 0 && a->n_buffers >= 1 && a->buffers != NULL &&
            a->buffers[0] != NULL) {
            PyErr_SetString(PyExc_TypeError,
                            "Arrow keys: a struct column with null rows; select its field");
            return -1;
        }
        if (a->offset < 0 || a->offset > BKARROW_MAX_ROWS)
            return bkarrow_bad("offset", "offset %lld%.0lld", a->offset, 0);
        extra = a->offset;
        s = s->children[0];
        a = a->children[0];
    }
    if ((s->dictionary == NULL) != (a->dictionary == NULL))
        return bkarrow_bad("dictionary", "schema and array disagree on a dictionary%.0lld%.0lld",
                           0, 0);
    if (bkarrow_col_init(&p->col, s->format, a, extra, length) < 0)
        return -1;
    p->maybe_null = p->col.valid != NULL || p->col.kind == BKARROW_NULLS;
    if (s->dictionary == NULL)
        return 0;
    p->has_dict = 1;
    if (p->col.kind != BKARROW_INT) {
        PyErr_Format(PyExc_TypeError, "Arrow dictionary indices of format '%.20s'", s->format);
        return -1;
    }
    if (s->dictionary->dictionary != NULL || s->dictionary->format == NULL ||
        s->dictionary->format[0] == '+') {
        PyErr_SetString(PyExc_TypeError, "Arrow keys: a nested dictionary or struct is not keys");
        return -1;
    }
    if (bkarrow_col_init(&p->dict, s->dictionary->format, a->dictionary, 0,
                         a->dictionary->length < 0 ? 0 : a->dictionary->length) < 0)
        return -1;
    if (p->dict.valid != NULL || p->dict.kind == BKARROW_NULLS)
        p->maybe_null = 1; /* a null dictionary value is a null row */
    if (p->dict.length > (int64_t)(PY_SSIZE_T_MAX / 16))
        return bkarrow_bad("dictionary", "%lld values%.0lld", p->dict.length, 0);
    p->dict_hash = (uint64_t *)PyMem_RawMalloc((size_t)(p->dict.length + 1) * 8);
    p->dict_ok = (uint8_t *)PyMem_RawMalloc((size_t)p->dict.length + 1);
    if (p->dict_hash == NULL || p->dict_ok == NULL) {
        bkpy_raise_nomem((uint64_t)p->dict.length * 9, "the hashes of an Arrow dictionary",
                         "decode the column first");
        return -1;
    }
    for (int64_t i = 0; i < p->col.length; i++) {
        uint64_t ix;
        if (p->col.valid != NULL && !bkarrow_bit(p->col.valid, p->col.offset + i))
            continue;
        ix = bkarrow_int_at(&p->col, i);
        if ((p->col.is_signed && (int64_t)ix < 0) || ix >= (uint64_t)p->dict.length)
            return bkarrow_bad("dictionary", "row %lld's index %lld is outside the dictionary",
                               p->col.offset + i, (long long)ix);
    }
    return 0;
}

static void bkarrow_part_clear(bkarrow_part *p)
{
    bkarrow_col_clear(&p->col);
    bkarrow_col_clear(&p->dict);
    PyMem_RawFree(p->dict_hash);
    PyMem_RawFree(p->dict_ok);
}

void bkarrow_api_close(bkarrow_keys *k)
{
    if (k == NULL)
        return;
    for (Py_ssize_t i = 0; i < k->nparts; i++)
        bkarrow_part_clear(&k->parts[i]);
    PyMem_Free(k->parts);
    for (Py_ssize_t i = 0; i < k->nowned; i++)
        if (k->owned[i].release != NULL)
            k->owned[i].release(&k->owned[i]);
    PyMem_Free(k->owned);
    if (k->schema.release != NULL)
        k->schema.release(&k->schema);
    Py_XDECREF(k->hold);
    PyMem_Free(k);
}

static PyObject *bkarrow_name_array, *bkarrow_name_stream; /* interned, immortal enough */

/* Does the type define the method (class attributes only: an instance's
 * __getattr__ is not asked).  A lookup in the MRO through the type cache,
 * not getattr on the type: a miss there builds and clears an
 * AttributeError, and a ChunkedArray, a Polars Series or a DuckDB
 * relation (streams, no __arrow_c_array__) missed twice a call, ~0.5 us
 * of a 2,048-row vector's ~16 (benchmarks/engines.py). */
static int bkarrow_type_has(PyObject *o, PyObject **name, const char *s)
{
    if (*name == NULL && (*name = PyUnicode_InternFromString(s)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    return _PyType_Lookup(Py_TYPE(o), *name) != NULL;
}

int bkarrow_api_check(PyObject *o)
{
    return bkarrow_type_has(o, &bkarrow_name_array, "__arrow_c_array__") ||
           bkarrow_type_has(o, &bkarrow_name_stream, "__arrow_c_stream__");
}

Py_ssize_t bkarrow_api_rows(const bkarrow_keys *k)
{
    return k->rows;
}

Py_ssize_t bkarrow_api_nulls(const bkarrow_keys *k)
{
    return k->nulls;
}

int bkarrow_api_gaps(const bkarrow_keys *k)
{
    for (Py_ssize_t i = 0; i < k->nparts; i++)
        if (k->parts[i].maybe_null)
            return 1;
    return 0;
}

/* Integer and bool columns are ints, string/binary/fixed-width ones bytes
 * (a dictionary column: its values'); an all-null column has no keys. */
unsigned bkarrow_api_seen(const bkarrow_keys *k)
{
    unsigned seen = 0;
    for (Py_ssize_t i = 0; i < k->nparts; i++) {
        const bkarrow_col *c = k->parts[i].has_dict ? &k->parts[i].dict : &k->parts[i].col;
        if (c->kind == BKARROW_INT || c->kind == BKARROW_BOOL)
            seen |= BKPY_SEEN_INT;
        else if (c->kind != BKARROW_NULLS)
            seen |= BKPY_SEEN_TEXT;
    }
    return seen;
}

static void *bkarrow_capsule(PyObject *cap, const char *name)
{
    if (!PyCapsule_IsValid(cap, name)) {
        PyErr_Format(PyExc_TypeError, "expected a PyCapsule named '%s' from the Arrow "
                     "PyCapsule protocol, got %.50s", name, Py_TYPE(cap)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(cap, name);
}

static int bkarrow_add_part(bkarrow_keys *k, const bkarrow_schema *s, const bkarrow_array *a)
{
    bkarrow_part *parts = (bkarrow_part *)PyMem_Realloc(k->parts,
                                                         (size_t)(k->nparts + 1) * sizeof *parts);
    if (parts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    k->parts = parts;
    if (bkarrow_part_init(&parts[k->nparts], s, a) < 0) {
        bkarrow_part_clear(&parts[k->nparts]);
        return -1;
    }
    if (parts[k->nparts].col.length > PY_SSIZE_T_MAX - k->rows) {
        bkarrow_part_clear(&parts[k->nparts]);
        return bkarrow_bad("length", "more than %lld rows in all%.0lld", (long long)PY_SSIZE_T_MAX, 0);
    }
    k->rows += (Py_ssize_t)parts[k->nparts].col.length;
    k->nparts++;
    return 0;
}

static int bkarrow_stream_error(bkarrow_stream *st, int rc, const char *what)
{
    const char *msg = st->get_last_error != NULL ? st->get_last_error(st) : NULL;
    PyErr_Format(PyExc_ValueError, "the Arrow stream failed in %s (errno %d): %.300s", what, rc,
                 msg != NULL ? msg : "no message");
    return -1;
}

/* Read every array of a stream (an ArrowArrayStream capsule). */
static int bkarrow_read_stream(bkarrow_keys *k, PyObject *cap)
{
    bkarrow_stream *st = (bkarrow_stream *)bkarrow_capsule(cap, "arrow_array_stream");
    int rc;
    if (st == NULL)
        return -1;
    if (st->release == NULL || st->get_schema == NULL || st->get_next == NULL)
        return bkarrow_bad("stream", "a released stream%.0lld%.0lld", 0, 0);
    rc = st->get_schema(st, &k->schema);
    if (rc != 0)
        return bkarrow_stream_error(st, rc, "get_schema");
    if (k->schema.format == NULL || k->schema.release == NULL)
        return bkarrow_bad("schema", "the stream's schema has no format%.0lld%.0lld", 0, 0);
    for (;;) {
        bkarrow_array *a;
        if (k->nowned == k->capowned) {
            /* 4 arrays (320 bytes) to start: pymalloc's size, not
             * malloc's; a one-batch stream (a DuckDB vector) uses 2 */
            Py_ssize_t cap2 = k->capowned ? 2 * k->capowned : 4;
            bkarrow_array *o = (bkarrow_array *)PyMem_Realloc(k->owned, (size_t)cap2 * sizeof *o);
            if (o == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            k->owned = o;
            k->capowned = cap2;
        }
        a = &k->owned[k->nowned];
        memset(a, 0, sizeof *a);
        rc = st->get_next(st, a);
        if (rc != 0)
            return bkarrow_stream_error(st, rc, "get_next");
        if (a->release == NULL)
            break;
        k->nowned++;
        if (bkarrow_add_part(k, &k->schema, a) < 0)
            return -1;
    }
    return 0;
}

bkarrow_keys *bkarrow_api_open(PyObject *obj, int *export_failed)
{
    bkarrow_keys *k = (bkarrow_keys *)PyMem_Calloc(1, sizeof *k);
    PyObject *r;
    if (k == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (bkarrow_type_has(obj, &bkarrow_name_array, "__arrow_c_array__")) {
        const bkarrow_schema *s;
        const bkarrow_array *a;
        *export_failed = 1;
        r = PyObject_CallMethodNoArgs(obj, bkarrow_name_array); /* interned by type_has */
        k->hold = r;
        if (r == NULL)
            goto fail;
        *export_failed = 0;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) {
            PyErr_Format(PyExc_TypeError, "%.50s.__arrow_c_array__() must return a 2-tuple of "
                         "capsules", Py_TYPE(obj)->tp_name);
            goto fail;
        }
        s = (const bkarrow_schema *)bkarrow_capsule(PyTuple_GET_ITEM(r, 0), "arrow_schema");
        a = s ? (const bkarrow_array *)bkarrow_capsule(PyTuple_GET_ITEM(r, 1), "arrow_array") : NULL;
        if (a == NULL || bkarrow_add_part(k, s, a) < 0)
            goto fail;
        return k;
    }
    *export_failed = 1;
    if (bkarrow_name_stream == NULL &&
        (bkarrow_name_stream = PyUnicode_InternFromString("__arrow_c_stream__")) == NULL)
        goto fail;
    r = PyObject_CallMethodNoArgs(obj, bkarrow_name_stream);
    k->hold = r;
    if (r == NULL)
        goto fail;
    *export_failed = 0; /* from here on, a failure is the stream's or ours */
    if (bkarrow_read_stream(k, r) < 0)
        goto fail;
    return k;
fail:
    bkarrow_api_close(k);
    return NULL;
}

/* ---- End logic for import ---------------------------------------------- */
