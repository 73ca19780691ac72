/*
 * bk_jvm.c - Spark's BloomFilter (V1, V2) and CountMinSketch and Guava's
 * BloomFilter, in their own serialized bytes.
 *
 * Structures: Bloom (Bloom 1970) with double hashing (Kirsch and
 * Mitzenmacher 2006) in the exact arithmetic each library uses, and the
 * count-min sketch (Cormode and Muthukrishnan 2005) as Spark implements it.
 * Written from the libraries' documented formats and observed behaviour
 * (checked byte for byte against Spark 4.3.0 and Guava 31.1 by
 * tests/test_spark.py and tests/test_guava.py); no code taken from them.
 *
 * Byte layouts (DataOutputStream: every int and long big-endian):
 *   Spark V1   int 1 | int k | int nwords | nwords longs
 *   Spark V2   int 2 | int k | int seed | int nwords | nwords longs
 *   Guava      byte strategy (0 MITZ_32, 1 MITZ_64) | byte k (unsigned) |
 *              int nwords | nwords longs
 *   Spark CMS  int 1 | long total | int depth | int width | depth longs hashA |
 *              depth*width longs (row-major)
 * Bit i of a filter is bit i%64 of long i/64, so in the bytes it is bit i%8
 * of byte 8*(i/64) + 7 - (i%64)/8.  bitSize is nwords*64 (both libraries
 * round up to whole longs and index modulo the rounded size).
 *
 * Probe arithmetic (Java ints/longs wrap; we compute in unsigned types and
 * convert, which is the same two's-complement result without C overflow):
 *   hashes     Spark: h1 = H(key, seed), h2 = H(key, h1), H = Murmur3_x86_32
 *              hashLong for longs, hashUnsafeBytes for bytes (bk_hash_murmur3.c).
 *              Guava: murmur3_128 of the funnelled bytes (a long as 8 LE bytes).
 *   Spark V1   for i in 1..k: c = (int)(h1 + i*h2); if c < 0: c = ~c; bit c % m
 *   Spark V2   c = (long)h1 * INT_MAX; for i in 1..k: c += h2; bit (c<0 ? ~c : c) % m
 *   Guava 32   as Spark V1 with h1, h2 = low, high int of the first 8 hash bytes
 *   Guava 64   c = first 8 bytes (LE long); for k: bit (c & LONG_MAX) % m; c += last 8
 *   CMS long   row i: h = hashA[i]*v; h += h >> 32 (arithmetic); h &= INT_MAX; h % width
 *   CMS bytes  h1 = H(key, 0), h2 = H(key, h1); row i: |(int)(h1 + i*h2) % width|
 *              (Java's %: the sign of the dividend)
 *
 * Invariants: the parsers check the length equals the header plus the
 * payload exactly, nwords in 1..2^31-1, k in 1..BK_JVM_MAX_K, depth and width
 * >= 1; every bit index is < nbits and every bucket < width by the
 * arithmetic above, so no access leaves the buffer.
 *
 * Cost: a 64-bit modulo per probe (~25-40 cycles), as in the JVM; Spark's
 * hashes are two Murmur3 passes per key, Guava's one 128-bit pass.
 */
#include "bk_jvm.h"

#include <string.h>

#include "bk_hash.h"

static uint32_t bk_jvm_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t bk_jvm_be64(const uint8_t *p)
{
    return ((uint64_t)bk_jvm_be32(p) << 32) | bk_jvm_be32(p + 4);
}

static void bk_jvm_put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* Java's (int) of a 32-bit pattern, without implementation-defined casts. */
static int32_t bk_jvm_i32(uint32_t x)
{
    return x < UINT32_C(0x80000000) ? (int32_t)x : -(int32_t)(~x) - 1;
}

static int64_t bk_jvm_i64(uint64_t x)
{
    return x < UINT64_C(0x8000000000000000) ? (int64_t)x : -(int64_t)(~x) - 1;
}

static int bk_jvm_fail(const char **why, const char *reason)
{
    *why = reason;
    return -1;
}

int bk_jvm_bloom_parse(uint8_t *buf, size_t len, int family, bk_jvm_bloom *f, const char **why)
{
    uint64_t nwords, k;
    memset(f, 0, sizeof *f);
    if (family == 0) {
        uint32_t version;
        if (len < 4)
            return bk_jvm_fail(why, "truncated: no version (Spark BloomFilter data starts with a 4-byte version)");
        version = bk_jvm_be32(buf);
        if (version != 1 && version != 2)
            return bk_jvm_fail(why, "unsupported Spark BloomFilter version (this reads versions 1 and 2)");
        f->scheme = version == 1 ? BK_JVM_SPARK_V1 : BK_JVM_SPARK_V2;
        f->header_len = version == 1 ? 12 : 16;
        if (len < f->header_len)
            return bk_jvm_fail(why, "truncated header");
        k = bk_jvm_be32(buf + 4);
        if (version == 2)
            f->seed = bk_jvm_be32(buf + 8);
    } else {
        if (len < 6)
            return bk_jvm_fail(why, "truncated header (Guava's BloomFilter header is 6 bytes)");
        if (buf[0] == 0)
            f->scheme = BK_JVM_GUAVA_M32;
        else if (buf[0] == 1)
            f->scheme = BK_JVM_GUAVA_M64;
        else
            return bk_jvm_fail(why, "unknown Guava strategy ordinal (0 MURMUR128_MITZ_32 and 1 MURMUR128_MITZ_64 exist)");
        f->header_len = 6;
        k = buf[1];
    }
    nwords = bk_jvm_be32(buf + f->header_len - 4);
    if (k == 0 || k > BK_JVM_MAX_K)
        return bk_jvm_fail(why, "number of hash functions out of range (1..65536)");
    if (nwords == 0 || nwords > UINT64_C(0x7fffffff))
        return bk_jvm_fail(why, "number of 64-bit words out of range (1..2^31-1)");
    if ((uint64_t)(len - f->header_len) / 8 < nwords)
        return bk_jvm_fail(why, "truncated bit array (fewer bytes than the header's word count)");
    if ((uint64_t)(len - f->header_len) != nwords * 8)
        return bk_jvm_fail(why, "trailing bytes after the bit array");
    f->bits = buf + f->header_len;
    f->nbits = nwords * 64;
    f->k = (uint32_t)k;
    return 0;
}

/* ---- probes ------------------------------------------------------------- */

/* Set (add) or test bit i: returns the bit's old value. */
static inline int bk_jvm_bit(uint8_t *bits, uint64_t i, int set)
{
    uint8_t *p = bits + 8 * (i >> 6) + 7 - ((i & 63) >> 3);
    uint8_t m = (uint8_t)(1u << (i & 7));
    int old = (*p & m) != 0;
    if (set)
        *p |= m;
    return old;
}

/* add: returns 1 if any bit changed.  test: returns 1 if all set (stops at
 * the first clear bit, as mightContain does). */
static int bk_jvm_probe(const bk_jvm_bloom *f, uint64_t ha, uint64_t hb, int add)
{
    uint8_t *bits = f->bits;
    uint64_t m = f->nbits;
    int changed = 0;
    uint32_t i;
    switch (f->scheme) {
    case BK_JVM_SPARK_V1:
    case BK_JVM_GUAVA_M32:
        for (i = 1; i <= f->k; i++) {
            int32_t c = bk_jvm_i32((uint32_t)ha + i * (uint32_t)hb);
            uint64_t idx = (uint64_t)(c < 0 ? ~c : c) % m;
            if (add)
                changed |= !bk_jvm_bit(bits, idx, 1);
            else if (!bk_jvm_bit(bits, idx, 0))
                return 0;
        }
        break;
    case BK_JVM_SPARK_V2: {
        uint64_t c = (uint64_t)((int64_t)bk_jvm_i32((uint32_t)ha) * INT32_MAX);
        uint64_t step = (uint64_t)(int64_t)bk_jvm_i32((uint32_t)hb);
        for (i = 0; i < f->k; i++) {
            int64_t s;
            uint64_t idx;
            c += step;
            s = bk_jvm_i64(c);
            idx = (uint64_t)(s < 0 ? ~s : s) % m;
            if (add)
                changed |= !bk_jvm_bit(bits, idx, 1);
            else if (!bk_jvm_bit(bits, idx, 0))
                return 0;
        }
        break;
    }
    default: /* BK_JVM_GUAVA_M64 */
        for (i = 0; i < f->k; i++) {
            uint64_t idx = (ha & UINT64_C(0x7fffffffffffffff)) % m;
            if (add)
                changed |= !bk_jvm_bit(bits, idx, 1);
            else if (!bk_jvm_bit(bits, idx, 0))
                return 0;
            ha += hb;
        }
        break;
    }
    return add ? changed : 1;
}

/* The two hashes of a key under a filter's scheme. */
static void bk_jvm_hashes(const bk_jvm_bloom *f, int key_kind, int64_t v, const void *data,
                          size_t len, uint64_t *ha, uint64_t *hb)
{
    if (f->scheme == BK_JVM_SPARK_V1 || f->scheme == BK_JVM_SPARK_V2) {
        uint32_t h1, h2;
        if (key_kind == BK_JVM_KEY_LONG) {
            h1 = bk_hash_murmur3_spark_long((uint64_t)v, f->seed);
            h2 = bk_hash_murmur3_spark_long((uint64_t)v, h1);
        } else {
            h1 = bk_hash_murmur3_spark_bytes(data, len, f->seed);
            h2 = bk_hash_murmur3_spark_bytes(data, len, h1);
        }
        *ha = h1;
        *hb = h2;
    } else {
        uint64_t h[2];
        if (key_kind == BK_JVM_KEY_LONG) {
            uint8_t le[8];
            for (int i = 0; i < 8; i++)
                le[i] = (uint8_t)((uint64_t)v >> (8 * i));
            bk_hash_murmur3_128(le, 8, 0, h);
        } else {
            bk_hash_murmur3_128(data, len, 0, h);
        }
        if (f->scheme == BK_JVM_GUAVA_M32) {
            *ha = (uint32_t)h[0];
            *hb = (uint32_t)(h[0] >> 32);
        } else {
            *ha = h[0];
            *hb = h[1];
        }
    }
}

int bk_jvm_bloom_add(bk_jvm_bloom *f, int key_kind, int64_t v, const void *data, size_t len)
{
    uint64_t ha, hb;
    bk_jvm_hashes(f, key_kind, v, data, len, &ha, &hb);
    return bk_jvm_probe(f, ha, hb, 1);
}

int bk_jvm_bloom_contains(const bk_jvm_bloom *f, int key_kind, int64_t v, const void *data,
                          size_t len)
{
    uint64_t ha, hb;
    bk_jvm_hashes(f, key_kind, v, data, len, &ha, &hb);
    return bk_jvm_probe(f, ha, hb, 0);
}

static inline int bk_jvm_valid(const uint8_t *valid, size_t bit)
{
    return valid == NULL || ((valid[bit >> 3] >> (bit & 7)) & 1);
}

static inline int64_t bk_jvm_load_i64(const void *vals, size_t i)
{
    int64_t v;
    memcpy(&v, (const uint8_t *)vals + 8 * i, 8);
    return v;
}

static inline uint64_t bk_jvm_offset(const void *offsets, int owidth, size_t i)
{
    if (owidth == 4) {
        int32_t o;
        memcpy(&o, (const uint8_t *)offsets + 4 * i, 4);
        return (uint64_t)(uint32_t)o;
    } else {
        int64_t o;
        memcpy(&o, (const uint8_t *)offsets + 8 * i, 8);
        return (uint64_t)o;
    }
}

int bk_jvm_check_offsets(const void *offsets, int owidth, size_t n, size_t data_len)
{
    uint64_t prev;
    size_t i;
    if (owidth == 4) {
        for (i = 0; i <= n; i++) {
            int32_t o;
            memcpy(&o, (const uint8_t *)offsets + 4 * i, 4);
            if (o < 0)
                return -1;
        }
    } else {
        for (i = 0; i <= n; i++) {
            int64_t o;
            memcpy(&o, (const uint8_t *)offsets + 8 * i, 8);
            if (o < 0)
                return -1;
        }
    }
    prev = bk_jvm_offset(offsets, owidth, 0);
    for (i = 1; i <= n; i++) {
        uint64_t o = bk_jvm_offset(offsets, owidth, i);
        if (o < prev)
            return -1;
        prev = o;
    }
    return prev <= data_len ? 0 : -1;
}

void bk_jvm_bloom_longs(bk_jvm_bloom *f, int key_kind, const void *vals, size_t n,
                        const uint8_t *valid, size_t vbit, uint8_t *out)
{
    (void)key_kind;
    for (size_t i = 0; i < n; i++) {
        int ok = bk_jvm_valid(valid, vbit + i);
        if (out != NULL)
            out[i] = (uint8_t)(ok && bk_jvm_bloom_contains(f, BK_JVM_KEY_LONG, bk_jvm_load_i64(vals, i), NULL, 0));
        else if (ok)
            (void)bk_jvm_bloom_add(f, BK_JVM_KEY_LONG, bk_jvm_load_i64(vals, i), NULL, 0);
    }
}

void bk_jvm_bloom_binary(bk_jvm_bloom *f, const void *offsets, int owidth, const uint8_t *data,
                         size_t n, const uint8_t *valid, size_t vbit, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t a = bk_jvm_offset(offsets, owidth, i), b = bk_jvm_offset(offsets, owidth, i + 1);
        int ok = bk_jvm_valid(valid, vbit + i);
        const uint8_t *p = data == NULL ? NULL : data + a;
        if (out != NULL)
            out[i] = (uint8_t)(ok && bk_jvm_bloom_contains(f, BK_JVM_KEY_BYTES, 0, p, (size_t)(b - a)));
        else if (ok)
            (void)bk_jvm_bloom_add(f, BK_JVM_KEY_BYTES, 0, p, (size_t)(b - a));
    }
}

void bk_jvm_bloom_combine(bk_jvm_bloom *a, const bk_jvm_bloom *b, int intersect)
{
    size_t n = (size_t)(a->nbits / 8), i;
    if (intersect)
        for (i = 0; i < n; i++)
            a->bits[i] &= b->bits[i];
    else
        for (i = 0; i < n; i++)
            a->bits[i] |= b->bits[i];
}

uint64_t bk_jvm_bloom_cardinality(const bk_jvm_bloom *f)
{
    uint64_t c = 0;
    size_t n = (size_t)(f->nbits / 8), i;
    for (i = 0; i < n; i++) {
        unsigned x = f->bits[i];
        while (x) {
            x &= x - 1;
            c++;
        }
    }
    return c;
}

/* ---- Spark's count-min sketch -------------------------------------------- */

int bk_jvm_cms_parse(uint8_t *buf, size_t len, bk_jvm_cms *s, const char **why)
{
    uint64_t depth, width, need;
    memset(s, 0, sizeof *s);
    if (len < 4)
        return bk_jvm_fail(why, "truncated: no version (Spark CountMinSketch data starts with a 4-byte version)");
    if (bk_jvm_be32(buf) != 1)
        return bk_jvm_fail(why, "unsupported Spark CountMinSketch version (this reads version 1)");
    if (len < BK_JVM_CMS_HEADER)
        return bk_jvm_fail(why, "truncated header");
    depth = bk_jvm_be32(buf + 12);
    width = bk_jvm_be32(buf + 16);
    if (depth == 0 || depth > 0x7fffffff || width == 0 || width > 0x7fffffff)
        return bk_jvm_fail(why, "depth or width out of range (1..2^31-1)");
    /* depth*(width+1) < 2^62: no overflow in 64 bits */
    need = depth * (width + 1);
    if ((uint64_t)(len - BK_JVM_CMS_HEADER) / 8 < need)
        return bk_jvm_fail(why, "truncated table (fewer bytes than depth and width need)");
    if ((uint64_t)(len - BK_JVM_CMS_HEADER) != need * 8)
        return bk_jvm_fail(why, "trailing bytes after the table");
    s->buf = buf;
    s->depth = (uint32_t)depth;
    s->width = (uint32_t)width;
    return 0;
}

static inline uint8_t *bk_jvm_cms_cell(const bk_jvm_cms *s, uint32_t row, uint32_t col)
{
    return s->buf + BK_JVM_CMS_HEADER + 8 * ((uint64_t)s->depth + (uint64_t)row * s->width + col);
}

static inline uint32_t bk_jvm_cms_col_long(const bk_jvm_cms *s, uint32_t row, int64_t v)
{
    uint64_t a = bk_jvm_be64(s->buf + BK_JVM_CMS_HEADER + 8 * (uint64_t)row);
    uint64_t h = a * (uint64_t)v;
    h += (uint64_t)(bk_jvm_i64(h) >> 32); /* Java's >> on a long: arithmetic */
    h &= UINT64_C(0x7fffffff);
    return (uint32_t)(h % s->width);
}

static inline uint32_t bk_jvm_cms_col_bytes(const bk_jvm_cms *s, uint32_t row, uint32_t h1,
                                            uint32_t h2)
{
    int32_t c = bk_jvm_i32(h1 + row * h2);
    int32_t r = c % (int32_t)s->width; /* width >= 1: no INT_MIN % -1 */
    return (uint32_t)(r < 0 ? -r : r);
}

/* est == NULL: add count; else *est = the minimum over the rows. */
static void bk_jvm_cms_key(bk_jvm_cms *s, int key_kind, int64_t v, const void *data, size_t len,
                           int64_t count, int64_t *est)
{
    uint32_t h1 = 0, h2 = 0, row;
    int64_t best = INT64_MAX;
    if (key_kind == BK_JVM_KEY_BYTES) {
        h1 = bk_hash_murmur3_spark_bytes(data, len, 0);
        h2 = bk_hash_murmur3_spark_bytes(data, len, h1);
    }
    for (row = 0; row < s->depth; row++) {
        uint32_t col = key_kind == BK_JVM_KEY_LONG ? bk_jvm_cms_col_long(s, row, v)
                                                   : bk_jvm_cms_col_bytes(s, row, h1, h2);
        uint8_t *cell = bk_jvm_cms_cell(s, row, col);
        if (est == NULL) {
            bk_jvm_put64(cell, bk_jvm_be64(cell) + (uint64_t)count);
        } else {
            int64_t x = bk_jvm_i64(bk_jvm_be64(cell));
            if (x < best)
                best = x;
        }
    }
    if (est == NULL)
        bk_jvm_put64(s->buf + 4, bk_jvm_be64(s->buf + 4) + (uint64_t)count);
    else
        *est = best;
}

void bk_jvm_cms_add(bk_jvm_cms *s, int key_kind, int64_t v, const void *data, size_t len,
                    int64_t count)
{
    bk_jvm_cms_key(s, key_kind, v, data, len, count, NULL);
}

int64_t bk_jvm_cms_estimate(const bk_jvm_cms *s, int key_kind, int64_t v, const void *data,
                            size_t len)
{
    int64_t est;
    bk_jvm_cms_key((bk_jvm_cms *)s, key_kind, v, data, len, 0, &est);
    return est;
}

void bk_jvm_cms_longs(bk_jvm_cms *s, const void *vals, size_t n, const void *counts,
                      const uint8_t *valid, size_t vbit, int64_t *est)
{
    for (size_t i = 0; i < n; i++) {
        if (!bk_jvm_valid(valid, vbit + i)) {
            if (est != NULL)
                est[i] = 0;
            continue;
        }
        bk_jvm_cms_key(s, BK_JVM_KEY_LONG, bk_jvm_load_i64(vals, i), NULL, 0,
                       counts == NULL ? 1 : bk_jvm_load_i64(counts, i),
                       est == NULL ? NULL : &est[i]);
    }
}

void bk_jvm_cms_binary(bk_jvm_cms *s, const void *offsets, int owidth, const uint8_t *data,
                       size_t n, const void *counts, const uint8_t *valid, size_t vbit,
                       int64_t *est)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t a = bk_jvm_offset(offsets, owidth, i), b = bk_jvm_offset(offsets, owidth, i + 1);
        if (!bk_jvm_valid(valid, vbit + i)) {
            if (est != NULL)
                est[i] = 0;
            continue;
        }
        bk_jvm_cms_key(s, BK_JVM_KEY_BYTES, 0, data == NULL ? NULL : data + a, (size_t)(b - a),
                       counts == NULL ? 1 : bk_jvm_load_i64(counts, i),
                       est == NULL ? NULL : &est[i]);
    }
}

void bk_jvm_cms_merge(bk_jvm_cms *a, const bk_jvm_cms *b)
{
    uint64_t cells = (uint64_t)a->depth * a->width, i;
    uint8_t *pa = bk_jvm_cms_cell(a, 0, 0);
    const uint8_t *pb = bk_jvm_cms_cell(b, 0, 0);
    for (i = 0; i < cells; i++)
        bk_jvm_put64(pa + 8 * i, bk_jvm_be64(pa + 8 * i) + bk_jvm_be64(pb + 8 * i));
    bk_jvm_put64(a->buf + 4, bk_jvm_be64(a->buf + 4) + bk_jvm_be64(b->buf + 4));
}
