/*
 * py_common.h -- CPython glue shared by every bloomkit type.
 *
 *   - the exceptions (defined in bloomkit/errors.py, imported at init)
 *   - key extraction: PyObject -> encoded key -> 64-bit hash (bk_keys.h),
 *     with zero-copy fast paths for exact str (compact ASCII), int and
 *     bytes, and one slow path for everything else (subclasses, bytearray,
 *     numpy scalars as the array elements they came from, 1-d byte
 *     buffers, __index__; docs/keys.md)
 *   - batch key iteration in chunks: lists and tuples by index, other
 *     iterables by PyIter_Next, 1-d buffers (numpy int/uint/bool/'S'
 *     arrays, array.array, memoryview) and ByteKeys (Arrow string/binary
 *     columns, py_bytekeys.c) element by element without the GIL
 *   - the state buffer: owned (64-byte aligned allocation) or borrowed from
 *     an exporter such as mmap, validated by bk_format_validate on the way in
 */
#ifndef BK_PY_COMMON_H
#define BK_PY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include "bk_common.h"
#include "bk_format.h"
#include "bk_kind.h"
#include "bk_keys.h"
#include "bk_keys_fast.h"

/* Exceptions, owned by the module (borrowed pointers valid while loaded). */
extern PyObject *bkpy_FormatError;
extern PyObject *bkpy_UnsupportedFormatError;
extern PyObject *bkpy_ChecksumError;
extern PyObject *bkpy_UncleanFileError;
extern PyObject *bkpy_IncompatibleFiltersError;
extern PyObject *bkpy_CapacityError;

int bkpy_common_init(PyObject *module);

/* MemoryError that says how much was asked for, for what, and what to do:
 * "cannot allocate <n> bytes (<human>) for <what>; <advice>". */
void bkpy_raise_nomem(uint64_t nbytes, const char *what, const char *advice);

/* Raise the exception matching rc with "<what>: <reason>". */
void bkpy_raise_rc(bk_rc rc, const char *reason, const bk_header *h);

/* ---- Begin logic for key hashing -------------------------------------- */

int bkpy_hash_key_slow(PyObject *key, PyObject *keyfunc, const bk_hasher *hs, uint64_t *out);
/* The same, ORing into *seen the key domain hashed (BKPY_SEEN_INT or
 * BKPY_SEEN_TEXT: the key= result's, when key= is set). */
int bkpy_hash_key_slow_seen(PyObject *key, PyObject *keyfunc, const bk_hasher *hs,
                            uint64_t *out, unsigned *seen);

/* Key domains as the bits of header byte 15 (BK_FLAG_KEYS_* >> 8): what
 * the hashing paths report in their `seen` out-parameters. */
#define BKPY_SEEN_INT (BK_FLAG_KEYS_INT >> 8)
#define BKPY_SEEN_TEXT (BK_FLAG_KEYS_TEXT >> 8)

/* The value of an exact int that fits a machine word without a call into
 * libpython (PyLong_AsLongLongAndOverflow was ~20 instructions and a call
 * per key).  Returns 1 and sets *v, or 0: use the general path. */
static inline int bkpy_small_long(PyObject *key, int64_t *v)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)key)) {
        *v = (int64_t)PyUnstable_Long_CompactValue((PyLongObject *)key);
        return 1;
    }
    return 0;
#else
    /* 3.11: 1..3 digits of 30 bits without a branch on the digit count
     * (random 62-bit ids are 2 or 3 digits at random, and a switch
     * mispredicted on a quarter of them).  Every load is in bounds: d[0]
     * and d[a - 1] always exist, d[1] is read only as d[a >= 2].  INT64_MIN,
     * magnitudes of 2^63 and up and wider values take the general path,
     * which gives the same value. */
    Py_ssize_t s = Py_SIZE(key);
    uint64_t a = (uint64_t)(s < 0 ? -s : s);
    if (BK_LIKELY(a - 1 < 3)) {
        const digit *d = ((PyLongObject *)key)->ob_digit;
        uint64_t top = d[a - 1], mid = d[a >= 2], m;
        uint64_t two = (uint64_t)0 - (uint64_t)(a >= 2), three = (uint64_t)0 - (uint64_t)(a == 3);
        uint64_t neg = (uint64_t)0 - (uint64_t)(s < 0);
        if (BK_UNLIKELY((top & three) >> (63 - 2 * PyLong_SHIFT)))
            return 0;
        m = (uint64_t)d[0] | ((mid << PyLong_SHIFT) & two) | ((top << (2 * PyLong_SHIFT)) & three);
        *v = (int64_t)((m ^ neg) - neg);
        return 1;
    }
    if (s == 0) {
        *v = 0;
        return 1;
    }
    return 0;
#endif
}

/* The keys hashed without a call: exact str (compact ASCII), exact int of
 * up to 63 bits and exact bytes (bk_keys_fast.h: the same values as
 * bk_keys.h).  Returns 1 and sets *out, or 0 (nothing raised, no Python
 * code run): use bkpy_hash_key_slow. */
static inline int bkpy_hash_key_fast_seen(PyObject *key, const bk_hasher *hs, uint64_t *out,
                                          unsigned *seen)
{
    if (PyUnicode_CheckExact(key) && PyUnicode_IS_COMPACT_ASCII(key)) {
        *out = bk_fastkey_bytes(hs, PyUnicode_DATA(key), (size_t)PyUnicode_GET_LENGTH(key));
        *seen |= BKPY_SEEN_TEXT;
        return 1;
    }
    if (PyLong_CheckExact(key)) {
        int64_t v;
        long long ll;
        int overflow;
        if (BK_LIKELY(bkpy_small_long(key, &v))) {
            *out = bk_fastkey_int64(hs, v);
            *seen |= BKPY_SEEN_INT;
            return 1;
        }
        /* Exact ints: no Python code runs, and nothing is raised but on
         * overflow, which only sets the flag. */
        ll = PyLong_AsLongLongAndOverflow(key, &overflow);
        if (BK_LIKELY(!overflow)) {
            *out = bk_fastkey_int64(hs, (int64_t)ll);
            *seen |= BKPY_SEEN_INT;
            return 1;
        }
        return 0;
    }
    if (PyBytes_CheckExact(key)) {
        *out = bk_fastkey_bytes(hs, PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key));
        *seen |= BKPY_SEEN_TEXT;
        return 1;
    }
    return 0;
}

/* The fast path for readers, which need no domain (the unused OR folds
 * away inline). */
static inline int bkpy_hash_key_fast(PyObject *key, const bk_hasher *hs, uint64_t *out)
{
    unsigned seen = 0;
    return bkpy_hash_key_fast_seen(key, hs, out, &seen);
}

/* Hash one key.  Returns 0, or -1 with an exception set.  The exact str,
 * int and bytes cases are inline (bkpy_hash_key_fast); everything else,
 * and every key when a key= function is set, goes through the slow path. */
static inline int bkpy_hash_key(PyObject *key, PyObject *keyfunc, const bk_hasher *hs,
                                uint64_t *out)
{
    if (BK_LIKELY(keyfunc == NULL) && bkpy_hash_key_fast(key, hs, out))
        return 0;
    return bkpy_hash_key_slow(key, keyfunc, hs, out);
}

/* bkpy_hash_key for writers: ORs the key's domain into *seen. */
static inline int bkpy_hash_key_seen(PyObject *key, PyObject *keyfunc, const bk_hasher *hs,
                                     uint64_t *out, unsigned *seen)
{
    if (BK_LIKELY(keyfunc == NULL) && bkpy_hash_key_fast_seen(key, hs, out, seen))
        return 0;
    return bkpy_hash_key_slow_seen(key, keyfunc, hs, out, seen);
}

/* One element of a 1-d buffer as a key (py_common_keys.c, R34): the batch
 * path and a numpy scalar's 0-d view go through the same code, so an
 * element and the array it came from never take different key domains. */
typedef enum { BKPY_BUF_SIGNED, BKPY_BUF_UNSIGNED, BKPY_BUF_BOOL, BKPY_BUF_BYTES } bkpy_buf_kind;

typedef struct {
    const char *base;
    Py_ssize_t n, stride, itemsize;
    bkpy_buf_kind kind;
} bkpy_buf_iter;

/* The element kind of a buffer's format; -1 with TypeError if unsupported. */
int bkpy_buffer_kind(const Py_buffer *v, bkpy_buf_kind *kind);
/* Inline: the batch loop over a numpy array calls it per element. */
static inline uint64_t bkpy_hash_buffer_item(const bkpy_buf_iter *it, Py_ssize_t i,
                                             const bk_hasher *hs)
{
    const char *p = it->base + i * it->stride;
    switch (it->kind) {
    case BKPY_BUF_SIGNED: {
        int64_t v;
        switch (it->itemsize) {
        case 1: { int8_t x; memcpy(&x, p, 1); v = x; break; }
        case 2: { int16_t x; memcpy(&x, p, 2); v = x; break; }
        case 4: { int32_t x; memcpy(&x, p, 4); v = x; break; }
        default: { int64_t x; memcpy(&x, p, 8); v = x; break; }
        }
        return bk_fastkey_int64(hs, v);
    }
    case BKPY_BUF_UNSIGNED: {
        uint64_t v;
        switch (it->itemsize) {
        case 1: { uint8_t x; memcpy(&x, p, 1); v = x; break; }
        case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
        case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
        default: { uint64_t x; memcpy(&x, p, 8); v = x; break; }
        }
        return bk_fastkey_uint64(hs, v);
    }
    case BKPY_BUF_BOOL:
        /* A bool array viewed from uint8 may hold 2..255; numpy reads every
         * non-zero byte as True, and True is the int 1. */
        return bk_fastkey_int64(hs, *p != 0);
    default: {
        /* numpy's bytes_ drops trailing NULs: so do we, so that arr[i] and
         * the array itself give the same keys. */
        Py_ssize_t n = it->itemsize;
        while (n > 0 && p[n - 1] == '\0')
            n--;
        return bk_fastkey_bytes(hs, p, (size_t)n);
    }
    }
}

/* ---- End logic for key hashing ---------------------------------------- */

/* ---- Begin logic for batches ------------------------------------------ */

/* Keys hashed per chunk before the structure probes them (8 KiB of hash
 * values on the stack).  The prefetching probe loops start cold at every
 * chunk, so larger chunks amortise that: 1024 against 256 measured 4-6%
 * faster on list-of-int add_many/contains_many at 10^6 keys (min of 7,
 * interleaved builds), same for str. */
#define BKPY_CHUNK 1024

/* Called with up to BKPY_CHUNK hashes; `offset` is the index of hs[0] in
 * the whole input.  May run without the GIL (see bkpy_for_each_chunk). */
typedef void (*bkpy_chunk_fn)(void *ctx, const uint64_t *hs, size_t n, size_t offset);

typedef struct {
    Py_ssize_t count;  /* keys seen */
    int from_buffer;   /* input was a 1-d buffer (numpy array, ...) */
    Py_ssize_t nulls;  /* Arrow input: null rows skipped (count + nulls = rows) */
    unsigned seen;     /* key domains hashed (BKPY_SEEN_*): a writer passes them to
                        * bkpy_state_note_keys, even when the batch failed part way */
} bkpy_batch_info;

/* size_fn's from_buffer for Arrow input with null rows (py_arrow.c): fn is
 * called on runs of non-null rows, `offset` still the row index, so chunks
 * are not consecutive; results of the null rows must read as 0 (False), and
 * nothing may rely on consecutive chunks (py_bloom.c's stage). */
#define BKPY_BUFFER_GAPS 2

/* Hash `keys` chunk by chunk and call fn on each chunk.  For buffer input
 * the hashing and fn run with the GIL released when nogil is set (fn must
 * then not touch Python objects).  size_fn receives the length n >= 0
 * before the first call when it is known up front; for an iterator it
 * receives -(keys so far) before each chunk's call instead (never before
 * the first key), so callers can size outputs.  Returns 0 or -1. */
typedef int (*bkpy_size_fn)(void *ctx, Py_ssize_t n, int from_buffer);
/* The one message family of a batch given no batch (issue #31 item 11),
 * ``one`` naming the one-key call: TypeError (-1) for a single str/bytes
 * (check_keys) or a non-iterable (check_iterable, after the buffer and Arrow
 * paths have had their look). */
int bkpy_check_keys(PyObject *keys, const char *one);
int bkpy_check_iterable(PyObject *keys, const char *one);

int bkpy_for_each_chunk(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                        bkpy_chunk_fn fn, bkpy_size_fn size_fn, void *ctx, int nogil,
                        bkpy_batch_info *info);

/* For a caller that borrows the keys of a list or tuple by index (TopK,
 * py_topk.c: its chunk function keeps `offset + j` instead of a reference
 * to the key of hs[j]).  Called, with the GIL and the hashes so far
 * already handed to fn, just before a key that takes the slow path is
 * hashed: that may run Python code that changes the list, so the caller
 * takes references to what it borrowed now.  `key` is items[index], held
 * by the loop until its hash is done (take a reference to keep it).
 * Returns 0, or -1 with an exception set (the batch stops). */
typedef int (*bkpy_hold_fn)(void *ctx, PyObject *key, size_t index);

/* bkpy_for_each_chunk with the GIL held throughout, calling hold before
 * each slow-path key of a list or tuple (see bkpy_hold_fn).  Between two
 * such calls no Python code runs in the loop itself (fn may run some: the
 * loop reads the list again after every fn). */
int bkpy_for_each_chunk_hold(PyObject *keys, PyObject *keyfunc, const bk_hasher *hs,
                             bkpy_chunk_fn fn, bkpy_hold_fn hold, void *ctx,
                             bkpy_batch_info *info);

/* bloomkit._core.ByteKeys (py_bytekeys.c): variable-length byte keys in
 * Arrow's offsets + data layout, hashed like bytes objects.  check: is
 * `o` one; len: its number of keys; hash: keys start..start+n-1 into out,
 * with no Python API (may run without the GIL; the caller holds `o`). */
int bkbytekeys_api_check(PyObject *o);
Py_ssize_t bkbytekeys_api_len(PyObject *o);
void bkbytekeys_api_hash(PyObject *o, Py_ssize_t start, size_t n, const bk_hasher *hs,
                        uint64_t *out);

/* Arrow arrays (py_arrow.c): any object whose type has __arrow_c_array__
 * or __arrow_c_stream__.  open (GIL) imports and validates every array
 * (NULL with an exception); run (no Python API: may run without the GIL)
 * hashes every non-null row, calling fn on runs of them; close (GIL)
 * releases everything; *export_failed is set when open failed because
 * the object's own export raised (pandas cannot export a column of mixed
 * objects: the caller then iterates it as before).  rows: all rows; gaps:
 * some row may be null;
 * nulls: null rows the last run skipped. */
typedef struct bkarrow_keys bkarrow_keys;
int bkarrow_api_check(PyObject *o);
bkarrow_keys *bkarrow_api_open(PyObject *o, int *export_failed);
Py_ssize_t bkarrow_api_rows(const bkarrow_keys *k);
int bkarrow_api_gaps(const bkarrow_keys *k);
Py_ssize_t bkarrow_api_nulls(const bkarrow_keys *k);
void bkarrow_api_run(bkarrow_keys *k, const bk_hasher *hs, bkpy_chunk_fn fn, void *ctx);
/* key: row's value as the Python object to_pylist() gives (GIL). */
PyObject *bkarrow_api_key(const bkarrow_keys *k, size_t row);
/* slow_key: would the row's value as a Python object take a list batch's
 * slow path (bkpy_hash_key_fast: a non-ASCII str, an int beyond int64, a
 * bool)?  cur: two zeroed words, for rows asked in increasing order. */
int bkarrow_api_slow_key(const bkarrow_keys *k, size_t row, size_t cur[2]);
/* values: every row's value in order, as Arrow holds it (no Python API). */
enum { BKARROW_V_NULL, BKARROW_V_INT, BKARROW_V_BYTES };
typedef struct {
    int kind;           /* BKARROW_V_* */
    int is_signed;      /* INT: bits is an int64 (else a uint64) */
    int is_bool;        /* INT: from a bool column (0 or 1) */
    int is_text;        /* BYTES: from a utf8 column */
    uint64_t bits;      /* INT */
    const uint8_t *p;   /* BYTES */
    size_t n;
} bkarrow_value;
typedef void (*bkarrow_value_fn)(void *ctx, size_t row, const bkarrow_value *v);
void bkarrow_api_values(const bkarrow_keys *k, bkarrow_value_fn fn, void *ctx);
/* The key domains of its rows (BKPY_SEEN_*): integer or byte columns. */
unsigned bkarrow_api_seen(const bkarrow_keys *k);
void bkarrow_api_close(bkarrow_keys *k);

/* A bit-packed destination for a contains_many's answers (contains_bits
 * below): row i's answer is bit i % 8 of bits[i / 8] (LSB first, Arrow's
 * bitmap order), the bits past the last row of the last byte are zeroed.
 * The answers are written a byte each first, into `scratch` (scratch_cap
 * bytes of the caller's stack) while they fit, else into PyMem storage. */
typedef struct {
    uint8_t *bits;
    Py_ssize_t nbytes;      /* the destination's size: must be ceil(rows / 8) */
    uint8_t *scratch;
    Py_ssize_t scratch_cap;
} bkpy_packed;

/* Results of a batch query: for a contains_many a list of bools, or for
 * buffer input a numpy bool array (a bytearray of 0/1 when numpy cannot be
 * imported); with u64 set (a count-min estimate_many) 64-bit counts, as a
 * list of ints or a numpy uint64 array; with `packed` set, bits in the
 * caller's buffer (finish returns None).  out holds len results of
 * 1 or 8 bytes. */
typedef struct {
    uint8_t *out;
    Py_ssize_t len, cap;
    PyObject *bytearray;  /* buffer input: the output storage */
    int u64;              /* results are uint64 counts, not bools */
    bkpy_packed *packed;  /* or NULL */
} bkpy_bools;

/* size_fn for contexts whose first member is a bkpy_bools. */
int bkpy_bools_size(void *ctx, Py_ssize_t n, int from_buffer);
uint8_t *bkpy_bools_reserve(bkpy_bools *b, size_t offset, size_t n);
PyObject *bkpy_bools_finish(bkpy_bools *b, int from_buffer);
void bkpy_bools_clear(bkpy_bools *b);

/* ---- End logic for batches -------------------------------------------- */

/* ---- Begin logic for state buffers ------------------------------------ */

typedef struct {
    uint8_t *buf;         /* header + payload, 64-byte aligned when owned */
    uint64_t len;
    void *alloc;          /* our allocation; NULL when borrowed */
    Py_buffer view;       /* borrowed: view.obj is the exporter (mmap) */
    int writable;
    int shared;           /* other processes may write: always atomic */
    int nogil_writers;    /* exclusive batch writers running without the GIL (0 or 1) */
    int pins;             /* batches of any kind running without the GIL */
    PyThread_type_lock batch_lock; /* held by a GIL-free exclusive batch writer (lazy) */
    PyThread_type_lock batch_gate; /* held by a thread waiting for batch_lock (lazy) */
    PyThread_type_lock pin_lock;   /* held while pins > 0 (lazy) */
    PyThread_type_lock pin_gate;   /* held by a thread waiting for pins to drain (lazy) */
    PyObject *keyfunc;    /* key= callable or NULL */
    bk_hasher hasher;
    unsigned kind;        /* the kind validated at load (0: built here) */
    int lock_fd1;         /* shared map: its writer-lock descriptor + 1 (0: none; negated:
                           * forgotten after a fork); see bkpy_state_hold_file */
} bkpy_state;

/* True when writes must be atomic: the buffer is shared with other
 * processes, or GIL-free batches run on it (a count-min add_many adds with
 * atomics while per-item adds hold the GIL; see the pins below). */
static inline int bkpy_state_atomic(const bkpy_state *st)
{
    return st->shared || st->pins > 0;
}

/* ---- Begin logic for GIL-free batches (R31) ---------------------------
 *
 * The only place the glue releases the GIL with a state in use is the
 * loop of bkpy_for_each_chunk over a 1-d buffer (numpy arrays) or a
 * ByteKeys (Arrow columns).
 * Everything else holds the GIL from the moment it reads a state until it
 * is done with it, with one rule: no call into Python (a method, a key=
 * function, __index__ or __eq__ of a key, an allocation that may run the
 * garbage collector's finalizers) between reading shared state and using
 * it, because Python code lets other threads run.  Code that must call
 * Python (growth of a scalable chain sizes its link with design.py) calls
 * it first and re-reads the state after (py_scalable.c, bkscalable_add_full).
 *
 * GIL-free batches come in two kinds:
 *   - every one PINS the state (bkpy_for_each_chunk_pinned): a count of
 *     running batches.  Whatever frees, reallocates or replaces the buffer
 *     (_detach of a mapped object, scalable growth, clear and union, _seal
 *     of a mapping, count-min merge and clear, which are not atomic) calls
 *     bkpy_state_wait_pins first: it waits, with the GIL released, until
 *     no batch runs, and a gate stops new batches from starting meanwhile
 *     (so that overlapping readers in several threads cannot starve it).
 *     On return the GIL is held and pins == 0; nothing can pin the state
 *     again until the caller releases the GIL, so it must re-read the
 *     state after the wait and not release the GIL until it is done.
 *     Readers pin too: they share the state with each other and with
 *     writers that hold the GIL (a Bloom bit only goes from 0 to 1, and a
 *     reader sees each word before or after an update), but not with a
 *     free().
 *   - a batch that WRITES with plain stores (a Bloom add_many) also takes
 *     batch_lock for its duration (bkpy_state_begin_batch / _end_batch,
 *     both with the GIL held): writers that hold the GIL call
 *     bkpy_state_wait_batches first.  So such a batch never races another
 *     writer of the same state; atomics remain for buffers shared across
 *     processes.  (Per-item writers pay one predictable branch.)  That wait
 *     has its own gate (batch_gate), passed before batch_lock is taken: a
 *     thread that holds batch_lock may then wait at the pin gate, and the
 *     pin waiter never needs batch_lock, so there is no cycle.
 *
 * Free-threaded CPython (3.13t) has no GIL to lean on: every method would
 * need the object's critical section (Py_BEGIN_CRITICAL_SECTION), pins
 * would become atomic counters, and readers would need the state kept
 * alive across a concurrent free (a critical section on reads too, or
 * reference-counted state buffers).  The module does not declare
 * Py_mod_gil, so 3.13t re-enables the GIL when it imports bloomkit._core:
 * correct, and serial.  See docs/threads.md. */
int bkpy_state_begin_batch(bkpy_state *st);
void bkpy_state_end_batch(bkpy_state *st);
void bkpy_state_wait_batches_slow(bkpy_state *st);

static inline void bkpy_state_wait_batches(bkpy_state *st)
{
    if (BK_UNLIKELY(st->nogil_writers > 0))
        bkpy_state_wait_batches_slow(st);
}

/* Pin / unpin (GIL held; pin may release it while a waiter is at the
 * gate).  -1 with MemoryError when a lock cannot be allocated. */
int bkpy_state_pin(bkpy_state *st);
void bkpy_state_unpin(bkpy_state *st);
void bkpy_state_wait_pins_slow(bkpy_state *st);

static inline void bkpy_state_wait_pins(bkpy_state *st)
{
    if (BK_UNLIKELY(st->pins > 0))
        bkpy_state_wait_pins_slow(st);
}

/* bkpy_for_each_chunk over st's keys (st->keyfunc, st->hasher) that pins
 * st for the GIL-free part (buffer input with nogil set): the pin is taken
 * after size_fn and dropped as soon as the last chunk is done, before the
 * caller builds its result (which may run Python code). */
int bkpy_for_each_chunk_pinned(bkpy_state *st, PyObject *keys, bkpy_chunk_fn fn,
                               bkpy_size_fn size_fn, void *ctx, int nogil,
                               bkpy_batch_info *info);

/* A writer batch with plain stores (Bloom and sliding add_many): its
 * context starts with a bkpy_writer {st}.  Buffer input runs without the
 * GIL holding the batch lock, from before the first chunk to after the
 * last (bkpy_state_begin_batch); every chunk first calls
 * bkpy_writer_chunk, which makes a chunk run with the GIL wait out any
 * GIL-free batch (a key= callback may have let one start). */
typedef struct {
    bkpy_state *st;
    int nogil; /* buffer input: the chunks run without the GIL */
} bkpy_writer;

int bkpy_for_each_chunk_writer(bkpy_writer *w, PyObject *keys, bkpy_chunk_fn fn,
                               bkpy_size_fn size_fn, bkpy_batch_info *info);
/* The writer's size_fn (size_fn NULL above); a type's own size_fn (Bloom:
 * it opens its partition stage) calls it first. */
int bkpy_writer_size(void *ctx, Py_ssize_t n, int from_buffer);

static inline void bkpy_writer_chunk(bkpy_writer *w)
{
    if (!w->nogil)
        bkpy_state_wait_batches(w->st);
}

/* ---- End logic for GIL-free batches ----------------------------------- */

/* ---- Begin logic for batches that hold a shared file alone -----------
 *
 * A shared map ("r+", create()) takes atomic ORs so that writers in other
 * processes never lose bits; a locked OR costs a 10^8-key build into a
 * file about twice the in-memory build (docs/scale.md).  When no other
 * process writes the file, a large batch need not pay it: it converts its
 * WRITERS lock (docs/FORMAT.md "Writers and the DIRTY flag") to exclusive
 * without waiting, ORs with plain stores, and converts back to shared when
 * it ends.  A process that wants to join meanwhile holds WAITING (byte 2)
 * shared while it polls; the batch looks for it every
 * BKPY_HOLD_CHECK_KEYS keys and hands the file back at once (the rest of
 * the batch is atomic).  Within the process the batch lock already keeps
 * every other writer of the object out, and another object of the same
 * file has its own lock, so it shares WRITERS and the conversion fails.
 * Linux (OFD locks) only; elsewhere every shared batch is atomic.  The
 * descriptor is the object's (bloomkit/persist sets it with _hold_file after
 * joining, _detach forgets it).  A fork shares the open file description,
 * lock included, with the child, so neither side could tell the other
 * apart: persist/registry.py's fork hook makes both forget the descriptor for good
 * (lock_fd1 negated: every later batch is atomic, and a batch running in
 * another thread of the parent hands the file back at its next check). */
#define BKPY_HOLD_CHECK_KEYS ((size_t)1 << 18)

/* 1 when this batch now holds the file alone (plain stores are safe),
 * 0 otherwise (no descriptor, another writer in, a joiner waiting). */
int bkpy_state_hold_file(bkpy_state *st);
/* 1 when a process waits to join the file (holds WAITING). */
int bkpy_state_file_wanted(const bkpy_state *st);
/* Back to shared after bkpy_state_hold_file returned 1. */
void bkpy_state_share_file(bkpy_state *st);

/* ---- End logic for batches that hold a shared file alone ------------- */

/* Allocate len zeroed bytes, 64-byte aligned.  MemoryError on failure.
 * bkpy_state_free frees an st->alloc (PyMem_RawCalloc'ed: seen by
 * tracemalloc). */
int bkpy_state_alloc(bkpy_state *st, uint64_t len);
void bkpy_state_free(void *alloc);
void bkpy_state_release(bkpy_state *st);

/* Read len bytes of file descriptor fd (from its current position) straight
 * into a fresh owned state buffer: the one copy of a load.  -1 with an
 * exception set (st->alloc may then be set: bkpy_state_release frees it). */
int bkpy_state_read_fd(bkpy_state *st, int fd, uint64_t len);

/* After a failed read() or write() of a state (errno set): 0 to retry
 * (EINTR, and no signal handler raised), or -1 with an exception set. */
int bkpy_io_failed(void);

/* The DIRTY rule (py_common_state.c): a state that becomes owned is clean. */
void bkpy_state_own(bkpy_state *st);

/* Parse `secret` (None or 16 bytes-like) into out16; *has set to 0/1. */
int bkpy_parse_secret(PyObject *secret, uint8_t out16[16], int *has);

/* Set st->hasher from seed/secret and check the header's key_check. */
int bkpy_state_set_hasher(bkpy_state *st, const bk_header *h, PyObject *secret);

/* Load a state from a bytes-like object: validate (checks: BK_CHECK_*),
 * require one of the kinds in kind_mask (bit per kind), then copy (owned)
 * or borrow (copy == 0: keep the buffer, writable if asked). */
int bkpy_state_load(bkpy_state *st, PyObject *data, int copy, int writable, int checks,
                    unsigned kind_mask, PyObject *secret, bk_header *h);

/* A sealed copy of the state (checksum current, DIRTY clear). */
PyObject *bkpy_state_to_bytes(const bkpy_state *st);

/* Refuse writes to a read-only mapping. */
int bkpy_state_check_writable(const bkpy_state *st);

/* Record key domains (BKPY_SEEN_* bits) in the state's header byte 15
 * (BK_FLAG_KEYS_*): one load and a predicted branch per call; the store
 * happens the first time a domain appears (atomic on a shared map).  The
 * caller has checked that the state is writable. */
void bkpy_state_note_keys_slow(bkpy_state *st, unsigned seen);

static inline void bkpy_state_note_keys(bkpy_state *st, unsigned seen)
{
    if (BK_UNLIKELY(seen & ~(unsigned)st->buf[BK_OFF_KEY_FLAGS]))
        bkpy_state_note_keys_slow(st, seen);
}

/* After a union or intersection of `dst` with `src` (of the same kind):
 * dst's domains become both sides', and dst stays "recorded" only when src
 * is (a state of unknown domains makes the result unknown). */
void bkpy_state_merge_keys(bkpy_state *dst, const bkpy_state *src);

/* Hash a key with the state's key= function and hasher (bkpy_hash_key);
 * the _w form, for the methods that add the key, first refuses a read-only
 * state and records the key's domain.  0, or -1 with an exception set.
 * Inline: every per-key method starts with one of them. */
static inline int bkpy_key(const bkpy_state *st, PyObject *key, uint64_t *h)
{
    return bkpy_hash_key(key, st->keyfunc, &st->hasher, h);
}

static inline int bkpy_key_w(bkpy_state *st, PyObject *key, uint64_t *h)
{
    unsigned seen = 0;
    if (BK_UNLIKELY(!st->writable) && bkpy_state_check_writable(st) < 0)
        return -1;
    if (bkpy_hash_key_seen(key, st->keyfunc, &st->hasher, h, &seen) < 0)
        return -1;
    bkpy_state_note_keys(st, seen);
    return 0;
}

/* A count for __len__: saturated at PY_SSIZE_T_MAX. */
static inline Py_ssize_t bkpy_len_of(uint64_t count)
{
    return count > (uint64_t)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)count;
}

/* ---- Begin logic for shared method bodies -----------------------------
 *
 * The per-key methods of the structures differ only in the call into the
 * core; what surrounds it is here, once. */

/* The count a union (or _recount) stores: an estimate from the bits or
 * counters (INFINITY when every one is set, NaN never expected) rounded
 * and clamped to [0, max], max being the number of bits or counters. */
uint64_t bkpy_count_of_estimate(double est, uint64_t max);

/* The design a sized structure of kind `kind` records, as its descriptor
 * bounds a state (bk_format_check_kind): capacity in [1, capacity_max],
 * error_rate in (0, 1).  0, or -1 with ValueError. */
int bkpy_check_design(unsigned kind, unsigned long long capacity, double error_rate);

/* remove() and discard() from one outcome r (1 removed, 0 absent, -1 an
 * exception is set): remove returns None or raises KeyError(key) (raise
 * set), discard returns True or False. */
PyObject *bkpy_remove_result(int r, PyObject *key, int raise);

/* update(*iterables): add_many(self, it) for each, results dropped. */
PyObject *bkpy_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *(*add_many)(PyObject *, PyObject *));

/* contains_many(keys) of every structure: probe answers n hashes into
 * out[0..n) (1 present, 0 absent) from the structure's view.  The mode
 * says how buffer input may run: GIL (a writer holding the GIL must not
 * move entries under the probe: quotient, cuckoo), NOGIL (an immutable
 * structure), PINNED (without the GIL, the state pinned: see the GIL-free
 * batches above). */
typedef void (*bkpy_probe_fn)(const void *view, const uint64_t *hs, size_t n, uint8_t *out);
typedef enum { BKPY_QUERY_GIL, BKPY_QUERY_NOGIL, BKPY_QUERY_PINNED } bkpy_query_mode;

PyObject *bkpy_contains_many(bkpy_state *st, PyObject *keys, bkpy_probe_fn probe,
                             const void *view, bkpy_query_mode mode);
/* The same answers bit-packed into pk (bkpy_packed): None, or NULL with an
 * exception (a ValueError when pk's size is not ceil(rows / 8) bytes). */
PyObject *bkpy_contains_bits(bkpy_state *st, PyObject *keys, bkpy_probe_fn probe,
                             const void *view, bkpy_query_mode mode, bkpy_packed *pk);

/* ---- End logic for shared method bodies ------------------------------- */

/* ---- End logic for state buffers -------------------------------------- */

/* ---- Begin logic for the common object contract ----------------------- */

/* Every bloomkit object begins with this prefix: PyObject_HEAD, then its
 * state buffer.  The helpers below implement the parts of the contract
 * that only need the state (every type points its slots and its method and
 * getter tables at them), so that each py_<structure>.c holds only what is
 * particular to its structure. */
typedef struct {
    PyObject_HEAD
    bkpy_state st;
} bkpy_obj;

/* An int in [0, 2**64) (a seed, a hash): 0, or -1 with TypeError / ValueError
 * "<what> must be an int in [0, 2**64)".  key: None or a callable. */
int bkpy_parse_u64(PyObject *obj, const char *what, uint64_t *out);
int bkpy_check_keyfunc(PyObject *key);

/* The options every constructor takes, parsed once: seed= (NULL: 0),
 * secret= (None or 16 bytes-like: keyed SipHash mode), key= (None or a
 * callable), and the design (capacity, error_rate) of the structures that
 * record one.  A constructor starts from BKPY_CTOR_INIT, lets
 * PyArg_ParseTupleAndKeywords fill the "O" options (and capacity "K" and
 * error_rate "d"), then calls bkpy_obj_new_ctor. */
typedef struct {
    PyObject *seed_obj, *secret, *key; /* as given */
    unsigned long long capacity;       /* checked when `design` is set */
    double error_rate;
    unsigned design;                   /* the kind whose design range applies, or 0 */
    uint64_t seed;                     /* parsed by bkpy_parse_ctor */
    uint8_t secret16[16];
    int keyed;
} bkpy_ctor_args;

/* design: the bk_kind (BK_KIND_*) whose descriptor bounds capacity and
 * error_rate, or 0 for a structure without that design. */
#define BKPY_CTOR_INIT(design) {NULL, Py_None, Py_None, 0, 0.0, (design), 0, {0}, 0}

/* Parse seed_obj, secret and key into seed, secret16 and keyed.  -1 with an
 * exception set when one is invalid. */
int bkpy_parse_ctor(bkpy_ctor_args *a);

/* The checks every constructor runs, in this order: the options
 * (bkpy_parse_ctor), the core's shape verdict (shape != BK_OK: ValueError
 * with `reason`), the design of kind a->design when set (bkpy_check_design).  0, or -1
 * with an exception set. */
int bkpy_ctor_check(bkpy_ctor_args *a, bk_rc shape, const char *reason);

/* bkpy_ctor_check, then bkpy_obj_new(type, len, a): the whole common part
 * of a sized constructor.  The caller then writes the header (a->seed,
 * a->keyed, bk_hasher_key_check(&obj->st.hasher)) and attaches its view. */
void *bkpy_obj_new_ctor(PyTypeObject *type, bkpy_ctor_args *a, bk_rc shape, const char *reason,
                        uint64_t len);

/* A new object of `type` (tp_alloc zero-fills it) with an owned, zeroed
 * state buffer of len bytes, its hasher set up from `a`, and a->key (None
 * or a callable, already checked) as its key function.  The caller writes
 * the header with bk_hasher_key_check(&obj->st.hasher) and attaches its
 * view.  NULL with an exception set on failure. */
void *bkpy_obj_new(PyTypeObject *type, uint64_t len, const bkpy_ctor_args *a);

/* A new object of `type` holding a private copy of src's state (the dirty
 * flag cleared), its hasher and its key function; the caller attaches its
 * view.  NULL with an exception set on failure. */
void *bkpy_obj_copy(PyTypeObject *type, const bkpy_state *src);

/* 0 if the states a and b hash keys alike (same seed, hash algorithm and
 * secret check); else -1 with IncompatibleFiltersError "cannot <op> <noun>
 * with different seeds: ..." or "... with different hashing (...)". */
int bkpy_check_same_hashing(const bkpy_state *a, const bkpy_state *b, const char *op,
                            const char *noun);

/* Slots: dealloc (weak references through tp_weaklistoffset), GC. */
void bkpy_obj_dealloc(PyObject *self);
int bkpy_obj_traverse(PyObject *self, visitproc visit, void *arg);
int bkpy_obj_clear(PyObject *self);

/* _write_state(fd): write the sealed state (DIRTY clear) to the file
 * descriptor at its current position through a bounded buffer, computing
 * the checksum as it goes; the header is written with checksum 0 and the
 * method returns the checksum for the caller to store at offset 40 (see
 * persist.save).  Memory: one BKPY_WRITE_CHUNK buffer, whatever the size. */
PyObject *bkpy_obj_write_state(PyObject *self, PyObject *fd);

/* Methods: to_bytes(), _seal(), _set_dirty(on), and __reduce__ (pickling
 * goes through type(self).from_bytes and so through the one validator;
 * keyed structures refuse, as their secret is never serialized). */
PyObject *bkpy_obj_to_bytes(PyObject *self, PyObject *unused);
PyObject *bkpy_obj_reduce(PyObject *self, PyObject *unused);
PyObject *bkpy_obj_seal(PyObject *self, PyObject *unused);
PyObject *bkpy_obj_set_dirty(PyObject *self, PyObject *arg);
/* _key_hash(key): the 64-bit hash the structure uses for key (tests,
 * bloomkit/redis). */
PyObject *bkpy_obj_key_hash(PyObject *self, PyObject *key);

/* Getters: seed, keyed, key, writable, mapped, dirty, state_nbytes. */
PyObject *bkpy_obj_get_seed(PyObject *self, void *closure);
PyObject *bkpy_obj_get_keyed(PyObject *self, void *closure);
PyObject *bkpy_obj_get_key_types(PyObject *self, void *closure);
PyObject *bkpy_obj_get_key(PyObject *self, void *closure);
PyObject *bkpy_obj_get_writable(PyObject *self, void *closure);
PyObject *bkpy_obj_get_mapped(PyObject *self, void *closure);
PyObject *bkpy_obj_get_dirty(PyObject *self, void *closure);
PyObject *bkpy_obj_get_state_nbytes(PyObject *self, void *closure);

/* from_bytes(data, secret=None, key=None, *, verify=True) and
 * _from_buffer(buf, secret=None, key=None, *, writable=False, shared=False,
 * allow_dirty=False, verify=False): the arguments, parsed once for all. */
typedef struct {
    PyObject *data, *secret, *key;
    int copy;      /* from_bytes: an owned copy; _from_buffer: in place */
    int writable, shared, checks;
} bkpy_load_args;

int bkpy_parse_from_bytes(PyObject *args, PyObject *kwargs, bkpy_load_args *a);
int bkpy_parse_from_buffer(PyObject *args, PyObject *kwargs, bkpy_load_args *a);

/* A new object of `type` whose state went through the one validator
 * (bkpy_state_load, kinds in kind_mask), with its shared flag and key=
 * set; the caller attaches its structure's view of the state. */
PyObject *bkpy_obj_load(PyTypeObject *type, const bkpy_load_args *a, unsigned kind_mask);

/* _core.load_fd(fd, size, class_for, secret=None, key=None, *, verify=True):
 * bloomkit.load's reader.  The file is read once, straight into the
 * aligned state buffer; the one validator parses its header once; the kind
 * it reads picks the class through class_for(kind) (persist's kind
 * registry, which raises for a kind it cannot load) and the structure
 * attaches to the buffer in place. */
PyObject *bkpy_load_fd(PyObject *mod, PyObject *args, PyObject *kwargs);

/* _core.load_bytes(data, class_for, secret=None, key=None, *, verify=True):
 * bloomkit.loads' loader, the same path as load_fd over a bytes-like
 * object: the header parsed once, the kind decided once, one copy into
 * the aligned state buffer after the validator. */
PyObject *bkpy_load_bytes(PyObject *mod, PyObject *args, PyObject *kwargs);

/* ---- The type descriptor: what the generic contract needs to know ---- */

/* One per structure type (py_<structure>.c), registered at init with
 * bkpy_register_type.  The generic cold methods below find it from the
 * object's type (or a facade subclass of it) and call back for the few
 * things that differ; the per-key and batch hot paths stay in the
 * structure files with their inline fast paths. */
typedef struct bkpy_desc {
    PyTypeObject *type;       /* the base type (facades subclass it) */
    const char *noun;         /* in "<op> needs another <noun>, not <type>" */
    unsigned kinds;           /* bit per kind from_bytes accepts */
    /* The kinds a (sub)type accepts, when that depends on the type
     * (bloom: a facade's _bk_kind); NULL: `kinds`. */
    unsigned (*kind_mask)(PyTypeObject *type);
    /* Point the structure's view at st.buf (after a load, copy, detach);
     * 0 or -1 with an exception set. */
    int (*attach)(PyObject *self);
    /* Give a detached object (st.buf NULL) a small owned empty state and
     * attach it: what stays behind when a mapped file is closed. */
    int (*empty)(PyObject *self);
    /* Equality beyond the identity fields of the header (kind, hash, seed,
     * key check, state length), which the generic compare checks first. */
    int (*equal)(PyObject *a, PyObject *b);
    /* Set operations (NULL: the type has none).  compatible raises
     * IncompatibleFiltersError/TypeError for `op` ("union"/"intersect"),
     * `other` being of the type (bkpy_check_other ran first);
     * inplace is the type's own |= (is_union 1) or &= (0), which returns a
     * new reference to self or NULL. */
    int (*compatible)(PyObject *self, PyObject *other, const char *op);
    PyObject *(*inplace)(PyObject *self, PyObject *other, int is_union);
    /* Optional.  check_load refuses load arguments the type cannot honour
     * (a scalable chain cannot be mapped writable: growth reallocates it);
     * 0 or -1 with an exception set.  detach replaces the generic _detach
     * step (release the view, then `empty`): called with the view held and
     * no GIL-free batch running, it must release the view and leave an
     * owned, attached state. */
    int (*check_load)(const bkpy_load_args *a);
    int (*detach)(PyObject *self);
    /* Optional: the type's own contains_many (not bkpy_obj_contains_many)
     * writing bit-packed answers into pk, for _core.contains_bits (NULL: a
     * type with its own contains_many has none; the caller packs). */
    PyObject *(*contains_bits)(PyObject *self, PyObject *keys, bkpy_packed *pk);
    /* The batch and removal methods most types share (NULL / unused when
     * the type has none or its own): contains_many probes chunks of hashes
     * with `probe` on the view `view_off` bytes into the object, run as
     * `query` says (bkpy_contains_many); update(*iterables) calls
     * add_many on each; remove() and discard() call remove (1 removed,
     * 0 absent, -1 an exception is set; bkpy_remove_result). */
    bkpy_probe_fn probe;
    size_t view_off;
    bkpy_query_mode query;
    PyObject *(*add_many)(PyObject *self, PyObject *keys);
    int (*remove)(PyObject *self, PyObject *key);
    /* Optional: after copy() made `copy` of `self` (state copied and
     * attached), carry over per-object fields that are not state (the
     * sliding filter's clock); 0 or -1 with an exception set. */
    int (*copied)(PyObject *copy, PyObject *self);
} bkpy_desc;

int bkpy_register_type(PyObject *module, const char *name, const bkpy_desc *d);
/* The descriptor of `type` or of the registered base it derives from, or
 * NULL (nothing raised).  Cold paths: a walk of a few bases. */
const bkpy_desc *bkpy_desc_of(PyTypeObject *type);
/* _core.contains_bits(filt, keys, out) (py_common_batch.c). */
PyObject *bkpy_mod_contains_bits(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);

/* 0 if `other` is of self's registered type; else -1 with TypeError
 * "<op> needs another <noun>, not <type>".  The generic set operations
 * check it before the descriptor's `compatible`. */
int bkpy_check_other(PyObject *self, PyObject *other, const char *op);

/* The generic methods (shared by every registered type). */
PyObject *bkpy_obj_from_bytes(PyTypeObject *type, PyObject *args, PyObject *kwargs);
PyObject *bkpy_obj_from_buffer(PyTypeObject *type, PyObject *args, PyObject *kwargs);
PyObject *bkpy_obj_detach(PyObject *self, PyObject *unused);
PyObject *bkpy_obj_copy_meth(PyObject *self, PyObject *unused);
PyObject *bkpy_obj_sizeof(PyObject *self, PyObject *unused);
PyObject *bkpy_obj_richcompare(PyObject *a, PyObject *b, int op);
PyObject *bkpy_obj_union(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *bkpy_obj_intersection(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *bkpy_obj_contains_many(PyObject *self, PyObject *keys);
PyObject *bkpy_obj_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *bkpy_obj_remove(PyObject *self, PyObject *key);
PyObject *bkpy_obj_discard(PyObject *self, PyObject *key);
PyObject *bkpy_obj_nb_or(PyObject *a, PyObject *b);
PyObject *bkpy_obj_nb_and(PyObject *a, PyObject *b);
PyObject *bkpy_obj_nb_ior(PyObject *a, PyObject *b);
PyObject *bkpy_obj_nb_iand(PyObject *a, PyObject *b);
extern PyNumberMethods bkpy_obj_as_number_union;   /* | and |= */
extern PyNumberMethods bkpy_obj_as_number_setops;  /* | |= & &= */

/* A private copy of self (same type), attached; NULL with an exception. */
PyObject *bkpy_obj_copy_of(PyObject *self);

/* The method and getter entries every type shares: put them at the end of
 * its tables, before the sentinel. */
#define BKPY_OBJ_METHODS                                                                    \
    /* PEP 585: BloomFilter[str] in annotations; the key type exists only for type       */ \
    /* checkers (see _core.pyi), the C type is the same for every key type.              */ \
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS,                             \
     "See PEP 585: the key type of a typed annotation."},                                   \
    {"copy", (PyCFunction)bkpy_obj_copy_meth, METH_NOARGS,                                  \
     "copy($self, /)\n--\n\nAn independent in-memory copy."},                               \
    {"__copy__", (PyCFunction)bkpy_obj_copy_meth, METH_NOARGS, NULL},                       \
    {"to_bytes", (PyCFunction)bkpy_obj_to_bytes, METH_NOARGS,                               \
     "to_bytes($self, /)\n--\n\nThe full state (header, payload, checksum) as bytes."},     \
    {"from_bytes", (PyCFunction)(void (*)(void))bkpy_obj_from_bytes,                        \
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,                                             \
     "from_bytes(data, secret=None, key=None, *, verify=True)\n--\n\nRebuild from "         \
     "to_bytes() output; corrupt input raises FormatError."},                               \
    {"_from_buffer", (PyCFunction)(void (*)(void))bkpy_obj_from_buffer,                     \
     METH_VARARGS | METH_KEYWORDS | METH_CLASS, NULL},                                      \
    {"__reduce__", (PyCFunction)bkpy_obj_reduce, METH_NOARGS, NULL},                        \
    {"_seal", (PyCFunction)bkpy_obj_seal, METH_NOARGS, NULL},                               \
    {"_write_state", (PyCFunction)bkpy_obj_write_state, METH_O, NULL},                      \
    {"_set_dirty", (PyCFunction)bkpy_obj_set_dirty, METH_O, NULL},                          \
    {"_detach", (PyCFunction)bkpy_obj_detach, METH_NOARGS, NULL},                           \
    {"_key_hash", (PyCFunction)bkpy_obj_key_hash, METH_O, NULL},                            \
    {"__sizeof__", (PyCFunction)bkpy_obj_sizeof, METH_NOARGS, NULL}

/* Method entries for the descriptor's contains_many / update / remove /
 * discard (the docstrings say what each type's add_many and remove do). */
#define BKPY_CONTAINS_MANY_METHOD                                                           \
    {"contains_many", (PyCFunction)bkpy_obj_contains_many, METH_O,                          \
     "contains_many($self, keys, /)\n--\n\nMembership of every key: a list of bools, or a "  \
     "numpy bool array for array input."}
#define BKPY_UPDATE_METHOD                                                                  \
    {"update", (PyCFunction)(void (*)(void))bkpy_obj_update, METH_FASTCALL,                 \
     "update($self, *iterables)\n--\n\nSet-style alias of add_many for one or more "        \
     "iterables."}
#define BKPY_REMOVE_METHODS(remove_doc, discard_doc)                                        \
    {"remove", (PyCFunction)bkpy_obj_remove, METH_O, "remove($self, key, /)\n--\n\n" remove_doc}, \
    {"discard", (PyCFunction)bkpy_obj_discard, METH_O, "discard($self, key, /)\n--\n\n" discard_doc}

#define BKPY_OBJ_GETSET                                                                     \
    {"seed", (getter)bkpy_obj_get_seed, NULL, "The hash seed.", NULL},                      \
    {"state_nbytes", (getter)bkpy_obj_get_state_nbytes, NULL,                               \
     "Bytes of the whole state (header + payload), the serialized size.", NULL},            \
    {"keyed", (getter)bkpy_obj_get_keyed, NULL,                                             \
     "True when hashed with SipHash under a secret.", NULL},                                \
    {"key_types", (getter)bkpy_obj_get_key_types, NULL,                                     \
     "The key domains ever added: a frozenset of 'int' and 'text' (str and bytes), or "     \
     "None when the state does not record them (docs/keys.md).", NULL},                    \
    {"key", (getter)bkpy_obj_get_key, NULL, "The key= callable, or None.", NULL},           \
    {"writable", (getter)bkpy_obj_get_writable, NULL,                                       \
     "False for structures opened read-only.", NULL},                                       \
    {"mapped", (getter)bkpy_obj_get_mapped, NULL,                                           \
     "True when the state lives in a borrowed buffer (mmap).", NULL},                       \
    {"dirty", (getter)bkpy_obj_get_dirty, NULL,                                             \
     "True when the state is marked open for writing.", NULL}

/* Getters of one header parameter read as stored (little-endian u64, u32
 * or f64 at BK_OFF_PARAMS + off, the offset passed as the closure), and of
 * the payload's size (state length - header_len): an entry of a type's
 * getter table, no getter function of its own. */
PyObject *bkpy_obj_get_u64(PyObject *self, void *closure);
PyObject *bkpy_obj_get_u32(PyObject *self, void *closure);
PyObject *bkpy_obj_get_f64(PyObject *self, void *closure);
PyObject *bkpy_obj_get_payload_nbytes(PyObject *self, void *closure);

#define BKPY_PARAM(kind, name, off, doc)                                                    \
    {name, bkpy_obj_get_##kind, NULL, doc, (void *)(uintptr_t)(BK_OFF_PARAMS + (off))}
#define BKPY_DESIGN_GETSET(cap_off, rate_off)                                               \
    BKPY_PARAM(u64, "capacity", cap_off, "The design capacity n."),                         \
    BKPY_PARAM(f64, "error_rate", rate_off, "The design false-positive rate p.")
#define BKPY_PAYLOAD_NBYTES(doc) {"nbytes", bkpy_obj_get_payload_nbytes, NULL, doc, NULL}

/* A getter `<prefix>_get_<name>` of Struct returning expr (self in scope). */
#define BKPY_GETTER(prefix, Struct, name, expr)                                             \
    static PyObject *prefix##_get_##name(Struct *self, void *closure)                       \
    {                                                                                       \
        (void)closure;                                                                      \
        return expr;                                                                        \
    }

/* The descriptor's attach, `<prefix>_attach`, of a type whose view is one
 * core struct (Struct.field) that core_attach points at st.buf. */
#define BKPY_ATTACH(prefix, Struct, field, core_attach)                                     \
    static int prefix##_attach(PyObject *self)                                              \
    {                                                                                       \
        core_attach(&((Struct *)self)->field, ((Struct *)self)->st.buf);                    \
        return 0;                                                                           \
    }

/* The sequence slots of a type with <prefix>_len and <prefix>_contains:
 * len() and `in` (`<prefix>_as_sequence`). */
#define BKPY_SEQUENCE(prefix)                                                               \
    static PySequenceMethods prefix##_as_sequence = {                                       \
        .sq_length = (lenfunc)prefix##_len,                                                 \
        .sq_contains = (objobjproc)prefix##_contains,                                       \
    }

/* The slots every type shares, for its PyTypeObject initializer, with its
 * tables and constructor named after its prefix: <prefix>_methods,
 * <prefix>_getset, <prefix>_new. */
#define BKPY_OBJ_SLOTS(prefix, Struct)                                                      \
    .tp_methods = prefix##_methods, .tp_getset = prefix##_getset, .tp_new = prefix##_new,  \
    .tp_basicsize = sizeof(Struct), .tp_dealloc = (destructor)bkpy_obj_dealloc,             \
    .tp_hash = PyObject_HashNotImplemented,                                                 \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,              \
    .tp_traverse = (traverseproc)bkpy_obj_traverse, .tp_clear = (inquiry)bkpy_obj_clear,   \
    .tp_richcompare = bkpy_obj_richcompare,                                                 \
    .tp_weaklistoffset = offsetof(Struct, weakreflist)

/* ---- End logic for the common object contract ------------------------- */

#endif /* BK_PY_COMMON_H */
