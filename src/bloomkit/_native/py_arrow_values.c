/*
 * py_arrow_values.c -- Arrow rows as values, for the structures that need
 * more than a row's hash: the Python object of a row as pyarrow's
 * to_pylist() gives it (bkarrow_api_key: TopK's candidates hold it), whether
 * that object would take a list batch's slow path (bkarrow_api_slow_key),
 * and every row's raw value for an encoding of its own (bkarrow_api_values:
 * the Parquet SBBF's PLAIN hashing, py_sbbf.c).
 * The design and the import are in py_arrow.c, the hashing loop in
 * py_arrow_hash.c; what they share is in py_arrow.h.
 */
#include "py_arrow.h"

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
    case BKARROW_BIN64:
        if (!bkarrow_bin(c, i, &p, &n)) {
            p = c->values; /* a changed buffer: no bytes */
            n = 0;
        }
        break;
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
        } else if (!bkarrow_bin(c, at, &b, &n)) {
            return 0;
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
            default: /* BIN32, BIN64 */
                v.kind = BKARROW_V_BYTES;
                v.is_text = c->is_text;
                if (!bkarrow_bin(c, at, &v.p, &v.n)) {
                    v.p = c->values;
                    v.n = 0;
                }
                break;
            }
            fn(ctx, row, &v);
        }
    }
}

/* ---- End logic for key objects ----------------------------------------- */
