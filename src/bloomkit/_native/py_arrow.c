/*
 * py_arrow.c -- Arrow arrays as batches of keys, read through the Arrow C
 * Data Interface: add_many / contains_many / update / estimate_many of every
 * structure (through bkpy_for_each_chunk) take a pyarrow Array or
 * ChunkedArray, a Polars Series, a DuckDB result, a nanoarrow array -- any
 * object with __arrow_c_array__ or __arrow_c_stream__ (the PyCapsule
 * protocol) -- and hash its values without a Python object per key and
 * without the GIL.  No pyarrow header or library: the three structs below
 * are the interface's ABI, written from its specification
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
 */
#include "py_common.h"

/* ---- Begin logic for the C Data Interface ------------------------------ */

/* The ABI (the specification's ArrowSchema, ArrowArray, ArrowArrayStream). */
typedef struct bkarrow_schema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct bkarrow_schema **children;
    struct bkarrow_schema *dictionary;
    void (*release)(struct bkarrow_schema *);
    void *private_data;
} bkarrow_schema;

typedef struct bkarrow_array {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct bkarrow_array **children;
    struct bkarrow_array *dictionary;
    void (*release)(struct bkarrow_array *);
    void *private_data;
} bkarrow_array;

typedef struct bkarrow_stream {
    int (*get_schema)(struct bkarrow_stream *, bkarrow_schema *out);
    int (*get_next)(struct bkarrow_stream *, bkarrow_array *out);
    const char *(*get_last_error)(struct bkarrow_stream *);
    void (*release)(struct bkarrow_stream *);
    void *private_data;
} bkarrow_stream;

/* Lengths and offsets above 2^56 are refused: no real array comes close,
 * and (offset + length) * 16 (a view) then cannot overflow int64. */
#define BKARROW_MAX_ROWS ((int64_t)1 << 56)

typedef enum {
    BKARROW_NULLS, BKARROW_INT, BKARROW_BOOL, BKARROW_BIN32, BKARROW_BIN64, BKARROW_VIEW,
    BKARROW_FIXED
} bkarrow_kind;

/* One column of one array, validated. */
typedef struct {
    bkarrow_kind kind;
    int width;              /* INT: 1, 2, 4 or 8 bytes; FIXED: bytes per value */
    int is_signed;
    int is_text;            /* utf8 / large_utf8 / string_view: str objects */
    int64_t offset, length; /* rows offset .. offset + length - 1 of the buffers */
    const uint8_t *valid;   /* validity bitmap, or NULL: no nulls */
    const uint8_t *values;  /* ints, bools, offsets, views or fixed-width data */
    const uint8_t *data;    /* BIN32/BIN64: the bytes */
    int64_t lo, hi;         /* BIN32/BIN64: the data range the offsets span */
    const uint8_t **vbufs;  /* VIEW: the variadic buffers (owned copy of the pointers) */
    int64_t *vsizes;        /* VIEW: their declared sizes (owned copy) */
    int64_t nvbufs;
} bkarrow_col;

/* One array of the input: its column, and the dictionary when encoded. */
typedef struct {
    bkarrow_col col;        /* the values, or a dictionary's int indices */
    int has_dict;
    bkarrow_col dict;
    uint64_t *dict_hash;    /* the dictionary's hashes (owned) */
    uint8_t *dict_ok;       /* 1 for a non-null dictionary value (owned) */
    int maybe_null;         /* some row may be null: run the gap loop */
} bkarrow_part;

struct bkarrow_keys {
    PyObject *hold;          /* the capsule tuple or the stream capsule */
    bkarrow_schema schema;   /* a stream's schema (ours to release) */
    bkarrow_array *owned;    /* a stream's arrays (ours to release) */
    Py_ssize_t nowned, capowned;
    bkarrow_part *parts;
    Py_ssize_t nparts;
    Py_ssize_t rows;
    Py_ssize_t nulls;        /* counted by the run */
};

static int bkarrow_bad(const char *what, const char *fmt, long long a, long long b)
{
    char msg[200];
    PyOS_snprintf(msg, sizeof msg, fmt, a, b);
    PyErr_Format(PyExc_ValueError, "invalid Arrow array (%s): %s", what, msg);
    return -1;
}

static inline int bkarrow_bit(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
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

/* The view of row i (16 bytes): its bytes and length, or 0 when it points
 * outside the declared buffers. */
static inline int bkarrow_view(const bkarrow_col *c, int64_t i, const uint8_t **p, size_t *n)
{
    const uint8_t *v = c->values + (c->offset + i) * 16;
    int32_t len, bi, off;
    memcpy(&len, v, 4);
    if (len >= 0 && len <= 12) {
        *p = v + 4;
        *n = (size_t)len;
        return 1;
    }
    memcpy(&bi, v + 8, 4);
    memcpy(&off, v + 12, 4);
    if (len < 0 || bi < 0 || (int64_t)bi >= c->nvbufs || off < 0 ||
        (int64_t)off + len > c->vsizes[bi])
        return 0;
    *p = c->vbufs[bi] + off;
    *n = (size_t)len;
    return 1;
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

/* ---- Begin logic for hashing ------------------------------------------- */

/* An int column's value at row i, as the key's 64 bits (sign-extended for
 * signed widths) -- the numpy path's reading of the same width. */
static inline uint64_t bkarrow_int_at(const bkarrow_col *c, int64_t i)
{
    const uint8_t *p = c->values + (c->offset + i) * c->width;
    switch (c->width) {
    case 1: return c->is_signed ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
    case 2: { uint16_t x; memcpy(&x, p, 2); return c->is_signed ? (uint64_t)(int64_t)(int16_t)x : x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return c->is_signed ? (uint64_t)(int64_t)(int32_t)x : x; }
    default: { uint64_t x; memcpy(&x, p, 8); return x; }
    }
}

/* Typed loops for the common widths: the general reader re-dispatches per key. */
#define BKARROW_INT_LOOP(T, fast, V)                                                        \
    do {                                                                                    \
        const uint8_t *b_ = c->values + (c->offset + i) * (int64_t)sizeof(T);               \
        for (size_t j = 0; j < n; j++) {                                                    \
            T x_;                                                                           \
            memcpy(&x_, b_ + j * sizeof(T), sizeof(T));                                     \
            h[j] = fast(hs, (V)x_);                                                         \
        }                                                                                   \
    } while (0)

/* Hashes of rows i .. i + n - 1 of column c into h; ok[j] (when ok is not
 * NULL) is 0 for a null row, whose h[j] is then unset. */
static void bkarrow_hash_col(const bkarrow_col *c, int64_t i, size_t n, const bk_hasher *hs,
                             uint64_t *h, uint8_t *ok)
{
    if (ok != NULL) {
        for (size_t j = 0; j < n; j++)
            ok[j] = c->kind != BKARROW_NULLS &&
                    (c->valid == NULL || bkarrow_bit(c->valid, c->offset + i + (int64_t)j));
    }
    switch (c->kind) {
    case BKARROW_NULLS:
        return;
    case BKARROW_INT:
        if (c->is_signed && c->width == 8)
            BKARROW_INT_LOOP(int64_t, bk_fastkey_int64, int64_t);
        else if (c->is_signed && c->width == 4)
            BKARROW_INT_LOOP(int32_t, bk_fastkey_int64, int64_t);
        else if (!c->is_signed && c->width == 8)
            BKARROW_INT_LOOP(uint64_t, bk_fastkey_uint64, uint64_t);
        else if (!c->is_signed && c->width == 4)
            BKARROW_INT_LOOP(uint32_t, bk_fastkey_int64, int64_t);
        else /* 1 and 2 bytes: sign- or zero-extended by bkarrow_int_at */
            for (size_t j = 0; j < n; j++)
                h[j] = bk_fastkey_int64(hs, (int64_t)bkarrow_int_at(c, i + (int64_t)j));
        return;
    case BKARROW_BOOL:
        for (size_t j = 0; j < n; j++)
            h[j] = bk_fastkey_int64(hs, bkarrow_bit(c->values, c->offset + i + (int64_t)j));
        return;
    case BKARROW_FIXED: {
        const uint8_t *b = c->values + (c->offset + i) * c->width;
        for (size_t j = 0; j < n; j++)
            h[j] = bk_fastkey_bytes(hs, b + j * (size_t)c->width, (size_t)c->width);
        return;
    }
    case BKARROW_BIN32:
    case BKARROW_BIN64: {
        /* o0/o1 read once into locals and kept within [lo, hi] (see top). */
        int64_t o0, o1;
        for (size_t j = 0; j < n; j++) {
            int64_t r = c->offset + i + (int64_t)j;
            if (ok != NULL && !ok[j])
                continue;
            if (c->kind == BKARROW_BIN32) {
                int32_t a, b;
                memcpy(&a, c->values + r * 4, 4);
                memcpy(&b, c->values + r * 4 + 4, 4);
                o0 = a;
                o1 = b;
            } else {
                memcpy(&o0, c->values + r * 8, 8);
                memcpy(&o1, c->values + r * 8 + 8, 8);
            }
            if (BK_UNLIKELY(o0 < c->lo || o1 < o0 || o1 > c->hi))
                o1 = o0 = c->lo;
            h[j] = bk_fastkey_bytes(hs, c->data + o0, (size_t)(o1 - o0));
        }
        return;
    }
    case BKARROW_VIEW:
        for (size_t j = 0; j < n; j++) {
            const uint8_t *p;
            size_t len;
            if (ok != NULL && !ok[j])
                continue;
            if (BK_UNLIKELY(!bkarrow_view(c, i + (int64_t)j, &p, &len))) {
                p = c->values; /* validated: a changed buffer; hash no bytes */
                len = 0;
            }
            h[j] = bk_fastkey_bytes(hs, p, len);
        }
        return;
    }
}

/* Rows i .. i + n - 1 of part p: hashes, and ok when p may have nulls. */
static void bkarrow_hash_part(const bkarrow_part *p, int64_t i, size_t n, const bk_hasher *hs,
                              uint64_t *h, uint8_t *ok)
{
    if (!p->has_dict) {
        bkarrow_hash_col(&p->col, i, n, hs, h, ok);
        return;
    }
    if (ok != NULL) {
        for (size_t j = 0; j < n; j++)
            ok[j] = p->col.valid == NULL || bkarrow_bit(p->col.valid, p->col.offset + i + (int64_t)j);
    }
    for (size_t j = 0; j < n; j++) {
        uint64_t ix;
        if (ok != NULL && !ok[j])
            continue;
        ix = bkarrow_int_at(&p->col, i + (int64_t)j);
        if (BK_UNLIKELY(ix >= (uint64_t)p->dict.length)) { /* validated: a changed buffer */
            if (ok != NULL)
                ok[j] = 0;
            h[j] = 0;
            continue;
        }
        h[j] = p->dict_hash[ix];
        if (ok != NULL && !p->dict_ok[ix])
            ok[j] = 0;
    }
}

void bkarrow_api_run(bkarrow_keys *k, const bk_hasher *hs, bkpy_chunk_fn fn, void *ctx)
{
    uint64_t h[BKPY_CHUNK];
    uint8_t ok[BKPY_CHUNK];
    size_t row = 0;
    k->nulls = 0;
    for (Py_ssize_t q = 0; q < k->nparts; q++) {
        bkarrow_part *p = &k->parts[q];
        if (p->has_dict) {
            for (int64_t i = 0; i < p->dict.length; i += BKPY_CHUNK) {
                size_t n = (size_t)(p->dict.length - i < BKPY_CHUNK ? p->dict.length - i : BKPY_CHUNK);
                bkarrow_hash_col(&p->dict, i, n, hs, p->dict_hash + i, p->dict_ok + i);
            }
        }
        for (int64_t i = 0; i < p->col.length; i += BKPY_CHUNK) {
            size_t n = (size_t)(p->col.length - i < BKPY_CHUNK ? p->col.length - i : BKPY_CHUNK);
            size_t j = 0;
            bkarrow_hash_part(p, i, n, hs, h, p->maybe_null ? ok : NULL);
            if (!p->maybe_null) {
                fn(ctx, h, n, row + (size_t)i);
                continue;
            }
            /* Runs of non-null rows, each at its own rows' offset. */
            while (j < n) {
                size_t a;
                while (j < n && !ok[j]) {
                    k->nulls++;
                    j++;
                }
                a = j;
                while (j < n && ok[j])
                    j++;
                if (j > a)
                    fn(ctx, h + a, j - a, row + (size_t)i + a);
            }
        }
        row += (size_t)p->col.length;
    }
}

/* ---- End logic for hashing --------------------------------------------- */

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
 * __getattr__ is not asked). */
static int bkarrow_type_has(PyObject *o, PyObject **name, const char *s)
{
    PyObject *v;
    if (*name == NULL && (*name = PyUnicode_InternFromString(s)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    v = PyObject_GetAttr((PyObject *)Py_TYPE(o), *name);
    if (v == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(v);
    return 1;
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
            Py_ssize_t cap2 = k->capowned ? 2 * k->capowned : 8;
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
        r = PyObject_CallMethod(obj, "__arrow_c_array__", NULL);
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
    r = PyObject_CallMethod(obj, "__arrow_c_stream__", NULL);
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

/* ---- Begin logic for key objects --------------------------------------- */

/* Row i's value of column c as the Python object pyarrow's to_pylist()
 * gives (int, bool, str for utf8 columns, bytes for binary ones; None for
 * a null): the key object a structure that keeps keys (TopK's candidates)
 * holds for an Arrow row.  Offsets and views are re-checked as the hashing
 * loop does. */
static PyObject *bkarrow_col_object(const bkarrow_col *c, int64_t i)
{
    const uint8_t *p = NULL;
    size_t n = 0;
    if (c->kind == BKARROW_NULLS || (c->valid != NULL && !bkarrow_bit(c->valid, c->offset + i)))
        Py_RETURN_NONE;
    switch (c->kind) {
    case BKARROW_NULLS:
        Py_RETURN_NONE;
    case BKARROW_INT: {
        uint64_t x = bkarrow_int_at(c, i);
        return c->is_signed ? PyLong_FromLongLong((long long)(int64_t)x)
                            : PyLong_FromUnsignedLongLong(x);
    }
    case BKARROW_BOOL:
        return PyBool_FromLong(bkarrow_bit(c->values, c->offset + i));
    case BKARROW_FIXED:
        p = c->values + (c->offset + i) * c->width;
        n = (size_t)c->width;
        break;
    case BKARROW_BIN32:
    case BKARROW_BIN64: {
        int64_t r = c->offset + i, o0, o1;
        if (c->kind == BKARROW_BIN32) {
            int32_t a, b;
            memcpy(&a, c->values + r * 4, 4);
            memcpy(&b, c->values + r * 4 + 4, 4);
            o0 = a;
            o1 = b;
        } else {
            memcpy(&o0, c->values + r * 8, 8);
            memcpy(&o1, c->values + r * 8 + 8, 8);
        }
        if (o0 < c->lo || o1 < o0 || o1 > c->hi)
            o1 = o0 = c->lo;
        p = c->data + o0;
        n = (size_t)(o1 - o0);
        break;
    }
    case BKARROW_VIEW:
        if (!bkarrow_view(c, i, &p, &n)) {
            p = c->values;
            n = 0;
        }
        break;
    }
    if (c->is_text)
        return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
}

/* Part and row within it of overall row `row`; cur (zeroed by the caller)
 * remembers the last part, so rows asked in order cost O(1) each. */
static const bkarrow_part *bkarrow_locate(const bkarrow_keys *k, size_t row, size_t cur[2],
                                          int64_t *local)
{
    if (row < cur[1])
        cur[0] = cur[1] = 0;
    for (; (Py_ssize_t)cur[0] < k->nparts; cur[0]++) {
        const bkarrow_part *p = &k->parts[cur[0]];
        if (row - cur[1] < (size_t)p->col.length) {
            *local = (int64_t)(row - cur[1]);
            return p;
        }
        cur[1] += (size_t)p->col.length;
    }
    cur[0] = cur[1] = 0;
    return NULL;
}

/* The column and row holding a part's value at `local` (the dictionary
 * value of an encoded row); NULL for a null row. */
static const bkarrow_col *bkarrow_value_col(const bkarrow_part *p, int64_t local, int64_t *at)
{
    uint64_t ix;
    *at = local;
    if (!p->has_dict)
        return &p->col;
    if (p->col.valid != NULL && !bkarrow_bit(p->col.valid, p->col.offset + local))
        return NULL;
    ix = bkarrow_int_at(&p->col, local);
    if (ix >= (uint64_t)p->dict.length) /* validated: a changed buffer */
        return NULL;
    *at = (int64_t)ix;
    return &p->dict;
}

PyObject *bkarrow_api_key(const bkarrow_keys *k, size_t row)
{
    size_t cur[2] = {0, 0};
    int64_t local, at;
    const bkarrow_part *p = bkarrow_locate(k, row, cur, &local);
    const bkarrow_col *c;
    if (p == NULL) {
        PyErr_SetString(PyExc_IndexError, "Arrow row out of range");
        return NULL;
    }
    c = bkarrow_value_col(p, local, &at);
    if (c == NULL)
        Py_RETURN_NONE;
    return bkarrow_col_object(c, at);
}

int bkarrow_api_slow_key(const bkarrow_keys *k, size_t row, size_t cur[2])
{
    int64_t local, at;
    const bkarrow_part *p = bkarrow_locate(k, row, cur, &local);
    const bkarrow_col *c = p != NULL ? bkarrow_value_col(p, local, &at) : NULL;
    if (c == NULL || c->kind == BKARROW_NULLS ||
        (c->valid != NULL && !bkarrow_bit(c->valid, c->offset + at)))
        return 0;
    switch (c->kind) {
    case BKARROW_INT: /* an int beyond int64 */
        return !c->is_signed && c->width == 8 && (bkarrow_int_at(c, at) >> 63) != 0;
    case BKARROW_BOOL: /* True and False are no exact int */
        return 1;
    case BKARROW_BIN32:
    case BKARROW_BIN64:
    case BKARROW_VIEW: { /* a str that is not ASCII */
        const uint8_t *b;
        size_t n, i;
        uint8_t any = 0;
        if (!c->is_text)
            return 0;
        if (c->kind == BKARROW_VIEW) {
            if (!bkarrow_view(c, at, &b, &n))
                return 0;
        } else {
            int64_t r = c->offset + at, o0, o1;
            if (c->kind == BKARROW_BIN32) {
                int32_t x, y;
                memcpy(&x, c->values + r * 4, 4);
                memcpy(&y, c->values + r * 4 + 4, 4);
                o0 = x;
                o1 = y;
            } else {
                memcpy(&o0, c->values + r * 8, 8);
                memcpy(&o1, c->values + r * 8 + 8, 8);
            }
            if (o0 < c->lo || o1 < o0 || o1 > c->hi)
                return 0;
            b = c->data + o0;
            n = (size_t)(o1 - o0);
        }
        for (i = 0; i < n; i++)
            any |= b[i];
        return (any & 0x80) != 0;
    }
    default:
        return 0;
    }
}

/* Every row's value, in order, for consumers with an encoding of their own
 * (Parquet's PLAIN hashing, py_sbbf.c): no Python API, so it may run
 * without the GIL.  Offsets and views are re-checked as the hashing loop
 * does (a changed buffer reads as an empty value). */
void bkarrow_api_values(const bkarrow_keys *k, bkarrow_value_fn fn, void *ctx)
{
    size_t row = 0;
    for (Py_ssize_t q = 0; q < k->nparts; q++) {
        const bkarrow_part *p = &k->parts[q];
        for (int64_t i = 0; i < p->col.length; i++, row++) {
            bkarrow_value v;
            int64_t at;
            const bkarrow_col *c = bkarrow_value_col(p, i, &at);
            memset(&v, 0, sizeof v);
            if (c == NULL || c->kind == BKARROW_NULLS ||
                (c->valid != NULL && !bkarrow_bit(c->valid, c->offset + at))) {
                fn(ctx, row, &v); /* BKARROW_V_NULL */
                continue;
            }
            switch (c->kind) {
            case BKARROW_INT:
                v.kind = BKARROW_V_INT;
                v.is_signed = c->is_signed;
                v.bits = bkarrow_int_at(c, at);
                break;
            case BKARROW_BOOL:
                v.kind = BKARROW_V_INT;
                v.is_bool = 1;
                v.bits = (uint64_t)bkarrow_bit(c->values, c->offset + at);
                break;
            case BKARROW_FIXED:
                v.kind = BKARROW_V_BYTES;
                v.p = c->values + (c->offset + at) * c->width;
                v.n = (size_t)c->width;
                break;
            case BKARROW_VIEW:
                v.kind = BKARROW_V_BYTES;
                v.is_text = c->is_text;
                if (!bkarrow_view(c, at, &v.p, &v.n)) {
                    v.p = c->values;
                    v.n = 0;
                }
                break;
            default: { /* BIN32, BIN64 */
                int64_t r = c->offset + at, o0, o1;
                if (c->kind == BKARROW_BIN32) {
                    int32_t x, y;
                    memcpy(&x, c->values + r * 4, 4);
                    memcpy(&y, c->values + r * 4 + 4, 4);
                    o0 = x;
                    o1 = y;
                } else {
                    memcpy(&o0, c->values + r * 8, 8);
                    memcpy(&o1, c->values + r * 8 + 8, 8);
                }
                if (o0 < c->lo || o1 < o0 || o1 > c->hi)
                    o1 = o0 = c->lo;
                v.kind = BKARROW_V_BYTES;
                v.is_text = c->is_text;
                v.p = c->data + o0;
                v.n = (size_t)(o1 - o0);
                break;
            }
            }
            fn(ctx, row, &v);
        }
    }
}

/* ---- End logic for key objects ----------------------------------------- */
