/*
 * py_arrow_hash.c -- the GIL-free loop of the Arrow glue: the hashes of
 * validated rows, one loop per column kind (ints by width, bools, 32- and
 * 64-bit offset strings/binaries, views, fixed-size binaries, dictionary
 * indices through their dictionary's hashes), called on runs of non-null
 * rows (bkarrow_api_run, the chunk loop of every batch method).  Keys are
 * encoded exactly as the numpy path does; every offset and view read is
 * re-checked against the ranges validated at import.
 * The design and the import are in py_arrow.c, rows as values in
 * py_arrow_values.c; what they share is in py_arrow.h.
 */
#include "py_arrow.h"

/* ---- Begin logic for hashing ------------------------------------------- */

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
        /* the offsets read once and kept within [lo, hi] (bkarrow_bin) */
        for (size_t j = 0; j < n; j++) {
            const uint8_t *p;
            size_t len;
            if (ok != NULL && !ok[j])
                continue;
            if (BK_UNLIKELY(!bkarrow_bin(c, i + (int64_t)j, &p, &len))) {
                p = c->values; /* validated: a changed buffer; hash no bytes */
                len = 0;
            }
            h[j] = bk_fastkey_bytes(hs, p, len);
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
