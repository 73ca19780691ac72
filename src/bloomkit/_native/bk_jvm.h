/*
 * bk_jvm.h - Spark's and Guava's Bloom filters and Spark's count-min sketch,
 * read, queried and updated in their own serialized bytes (bk_jvm.c).
 *
 * C11, no Python.h.  Every function works on the bytes exactly as the JVM
 * writes them (DataOutputStream: big-endian ints and longs); nothing is
 * converted, so to_bytes() is a copy and a Python-built filter loads in Spark
 * or Guava as is.  The parsers are the one validator: every other function
 * takes the struct they filled.
 */
#ifndef BK_JVM_H
#define BK_JVM_H

#include <stddef.h>
#include <stdint.h>

/* How a filter turns a key's hash into bit positions. */
enum {
    BK_JVM_SPARK_V1 = 1,   /* BloomFilterImpl: h1 + i*h2 in 32 bits, i = 1..k */
    BK_JVM_SPARK_V2 = 2,   /* BloomFilterImplV2: h1*INT_MAX + i*h2 in 64 bits */
    BK_JVM_GUAVA_M32 = 10, /* Guava MURMUR128_MITZ_32 (strategy ordinal 0) */
    BK_JVM_GUAVA_M64 = 11  /* Guava MURMUR128_MITZ_64 (ordinal 1, the default) */
};

/* How a key's bytes are hashed (Spark per Java type, Guava per funnel). */
enum {
    BK_JVM_KEY_LONG = 1,   /* a long: Spark hashLong, Guava putLong (8 LE bytes) */
    BK_JVM_KEY_BYTES = 2   /* bytes (a string's UTF-8, or binary) */
};

typedef struct {
    uint8_t *bits;         /* nwords big-endian 64-bit words: bit i is bit i%64 of word i/64 */
    uint64_t nbits;        /* nwords * 64 */
    uint32_t k;            /* hash functions, 1..BK_JVM_MAX_K */
    uint32_t seed;         /* Spark V2's seed (a Java int); 0 otherwise */
    int scheme;            /* BK_JVM_* */
    size_t header_len;     /* 12 (Spark V1), 16 (Spark V2), 6 (Guava) */
} bk_jvm_bloom;

/* Upper bound on k read from bytes: a loop of k probes per key is the one
 * cost an attacker controls.  Spark and Guava derive k = round(m/n ln 2) and
 * Guava stores it in a byte (<= 255); 2^16 is far above any real filter. */
#define BK_JVM_MAX_K 65536u

/* Parse Spark's BloomFilter.writeTo (family 0) or Guava's writeTo (family 1).
 * Returns 0, or -1 with *why set to a static reason.  The length must be
 * exactly the header plus the words: nothing is allocated, so a hostile
 * word count can only fail here. */
int bk_jvm_bloom_parse(uint8_t *buf, size_t len, int family, bk_jvm_bloom *f, const char **why);

/* One key.  add returns 1 if a bit changed; contains returns 1 or 0. */
int bk_jvm_bloom_add(bk_jvm_bloom *f, int key_kind, int64_t v, const void *data, size_t len);
int bk_jvm_bloom_contains(const bk_jvm_bloom *f, int key_kind, int64_t v, const void *data,
                          size_t len);

/* Batches, GIL-free in the glue.  vals: n longs (native int64, any
 * alignment).  Variable-length keys come as Arrow does: offsets (n+1 of
 * 32- or 64-bit, owidth 4 or 8, native order) into data.  valid: an Arrow
 * validity bitmap (bit vbit+i) or NULL; an invalid key is skipped on add and
 * answers 0.  out: n bytes 0/1, or NULL to add.  The offsets were checked by
 * the caller (bk_jvm_check_offsets). */
void bk_jvm_bloom_longs(bk_jvm_bloom *f, int key_kind, const void *vals, size_t n,
                        const uint8_t *valid, size_t vbit, uint8_t *out);
void bk_jvm_bloom_binary(bk_jvm_bloom *f, const void *offsets, int owidth, const uint8_t *data,
                         size_t n, const uint8_t *valid, size_t vbit, uint8_t *out);

/* Arrow offsets: non-decreasing, non-negative, last <= data_len.  0 or -1. */
int bk_jvm_check_offsets(const void *offsets, int owidth, size_t n, size_t data_len);

/* Bitwise OR (merge) or AND of b into a; equal parameters checked by the caller. */
void bk_jvm_bloom_combine(bk_jvm_bloom *a, const bk_jvm_bloom *b, int intersect);
uint64_t bk_jvm_bloom_cardinality(const bk_jvm_bloom *f);

/* Spark's CountMinSketch (CountMinSketchImpl.writeTo, version 1):
 *   int version (1) | long totalCount | int depth | int width |
 *   depth longs hashA | depth*width longs table (row by row). */
typedef struct {
    uint8_t *buf;          /* the whole serialized sketch */
    uint32_t depth, width; /* both >= 1, width <= INT_MAX */
} bk_jvm_cms;

#define BK_JVM_CMS_HEADER 20u

int bk_jvm_cms_parse(uint8_t *buf, size_t len, bk_jvm_cms *s, const char **why);
/* add count (>= 0) to a key; Java's long arithmetic wraps, so does ours. */
void bk_jvm_cms_add(bk_jvm_cms *s, int key_kind, int64_t v, const void *data, size_t len,
                    int64_t count);
int64_t bk_jvm_cms_estimate(const bk_jvm_cms *s, int key_kind, int64_t v, const void *data,
                            size_t len);
/* Batches: counts NULL means 1 each; est NULL means add, else estimates out. */
void bk_jvm_cms_longs(bk_jvm_cms *s, const void *vals, size_t n, const void *counts,
                      const uint8_t *valid, size_t vbit, int64_t *est);
void bk_jvm_cms_binary(bk_jvm_cms *s, const void *offsets, int owidth, const uint8_t *data,
                       size_t n, const void *counts, const uint8_t *valid, size_t vbit,
                       int64_t *est);
void bk_jvm_cms_merge(bk_jvm_cms *a, const bk_jvm_cms *b);

#endif /* BK_JVM_H */
