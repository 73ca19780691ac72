/*
 * py_arrow.h -- what the three files of the Arrow glue share, and nothing
 * else includes: the C Data Interface's ABI structs, our validated view of
 * a column (bkarrow_col), of one array (bkarrow_part) and of a whole input
 * (struct bkarrow_keys), and the three readers of a row every file uses.
 *
 *   py_arrow.c         the C Data Interface: format parsing,
 *                      validation with the GIL, import of an array or a
 *                      stream (bkarrow_api_open/close and the accessors);
 *   py_arrow_hash.c    the GIL-free hashing of validated rows, one loop per
 *                      column kind (bkarrow_api_run);
 *   py_arrow_values.c  rows as values: the Python key object of a row
 *                      (TopK's candidates) and the raw values of every row
 *                      (the Parquet SBBF's PLAIN hashing).
 *
 * The public face of all three (bkarrow_api_*) is declared in py_common.h;
 * the design, key encoding and validation rules are in py_arrow.c.
 */
#ifndef BK_PY_ARROW_H
#define BK_PY_ARROW_H

#include "py_common.h"

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

/* ---- Readers of row i (each re-checks what it reads against the ranges
 * validated at import, so a changed buffer never reads out of bounds) --- */

static inline int bkarrow_bit(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
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

/* The bytes of row i of a BIN32/BIN64 column and their length, or 0 when
 * its offsets leave [lo, hi] (the range validated at import). */
static inline int bkarrow_bin(const bkarrow_col *c, int64_t i, const uint8_t **p, size_t *n)
{
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
        return 0;
    *p = c->data + o0;
    *n = (size_t)(o1 - o0);
    return 1;
}

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

#endif /* BK_PY_ARROW_H */
