/*
 * bk_kind.h -- the kind descriptor: every fact about a structure kind that
 * more than one place needs, written once, in the kind's own bk_<kind>.c.
 *
 * A descriptor names the kind (id, the facade's class name, the word its
 * messages use), lays out its header parameters (name, offset, width,
 * type: what `bloomkit info` prints and what Python reads them by), states
 * its limits (capacity range, the error-rate range a constructor accepts)
 * and its traits, and points at its validator.  bk_kinds.c lists every
 * descriptor, indexed by id (the one list of kinds); bk_format.c looks a
 * kind up there and runs the prologue every kind shares -- parameters long
 * enough, format 1.0's fixed header_len, capacity and stored error rate in
 * range -- before the kind's own validator, so no validator repeats them.
 * module.c exports the table to Python as _core.KINDS.
 *
 * A descriptor also points at the kind's state operations (bk_kind_ops,
 * below): attach a view, answer, add, remove, empty, estimate.  They are
 * the C API for C readers and tests (tests/fuzz/fuzz_validate.c and
 * tests/native/test_portable.c drive every kind through them, naming
 * none); the CPython glue calls the cores' functions directly.
 *
 * Invariants: ids are fixed forever (bk_format.h, enum bk_kind); params
 * lie inside [0, params_len); capacity_param / error_rate_param index the
 * params array or are -1; a descriptor is a constant (no state).
 */
#ifndef BK_KIND_H
#define BK_KIND_H

#include "bk_format.h"

/* The one capacity limit: 2^48 keys (a 48-bit count of keys, far past any
 * memory; the sizing models stay exact in a double up to 2^53).  A kind
 * whose math needs less says so in its descriptor (TinyLFU: 2^40). */
#define BK_CAPACITY_MAX (1ULL << 48)
#define BK_CAPACITY_MAX_TEXT "2**48"

/* The one error-rate range a constructor accepts: [1e-12, 1), the
 * documented floor (design.py): at 1e-12 a classic filter already takes
 * k = 40 probes and 57.5 bits a key.  A stored state's rate is only required to lie in (0, 1):
 * derived rates (a scalable chain's tightened links) go below the floor. */
#define BK_ERROR_RATE_MIN 1e-12
#define BK_ERROR_RATE_MAX 1.0

/* Parameter types (little-endian in the params area). */
typedef enum {
    BK_PARAM_U16 = 1,
    BK_PARAM_U32 = 2,
    BK_PARAM_U64 = 3,
    BK_PARAM_I64 = 4,
    BK_PARAM_F64 = 5,
    BK_PARAM_BYTES = 6   /* an opaque area (a cuckoo filter's stash) */
} bk_param_type;

typedef struct {
    const char *name;    /* as Python and `bloomkit info` call it */
    uint16_t offset;     /* from the params area (byte 64) */
    uint16_t width;      /* bytes */
    uint8_t type;        /* bk_param_type */
} bk_kind_param;

/* Traits. */
#define BK_TRAIT_STATIC 0x0001u        /* built once from all its keys: no add, no merge */
#define BK_TRAIT_MERGEABLE 0x0002u     /* equal parameters union (|, union or merge) */
#define BK_TRAIT_INTERSECTABLE 0x0004u /* equal parameters intersect (&) */
#define BK_TRAIT_REMOVABLE 0x0008u     /* remove(key) */
#define BK_TRAIT_COUNTS 0x0010u        /* answers how often a key was added */
#define BK_TRAIT_SHARED_WRITERS 0x0020u /* writers of one mapped file share a lock
                                          (atomic updates); else exclusive */
#define BK_TRAIT_WINDOW 0x0040u        /* forgets keys older than its window */
#define BK_TRAIT_KEYED 0x0080u         /* may be keyed (SipHash under a secret) */
#define BK_TRAIT_GROWS 0x0100u         /* its state grows as keys arrive: never
                                          mapped for writing (add rewrites it) */
#define BK_TRAIT_BITWISE 0x0200u       /* union and intersection are the payloads'
                                          OR and AND: files merge chunk by chunk */

/* The state operations any C program may call on a state that
 * bk_format_validate accepted, by the kind's descriptor: attach a view to
 * it, answer a hashed key (bk_keys.h hashes keys as docs/keys.md says),
 * write by hashed key, empty it.  Each core defines its table next to its
 * descriptor, in its own bk_<kind>.c, as adapters over its own functions.
 *
 * Contract, every member:
 *   - A view is view_size bytes the caller allocates, aligned as
 *     max_align_t (malloc's); attach fills it; the view points into the
 *     state, which must outlive it and must not move.  A view is not
 *     copied: attach again for another state.
 *   - Writes are plain stores for one writer (no atomics: not for a file
 *     mapped by several writers; the glue has those paths).  add and
 *     remove keep every counter of the params area the way the Python type
 *     keeps it (a Bloom filter's count of new adds, a counting filter's
 *     count and distinct keys, a count-min sketch's total, ...), so a state
 *     written through this table is, byte for byte, the state the Python
 *     type writes from the same keys (test_portable.c rebuilds the golden
 *     files this way and compares whole files).  The checksum is not
 *     updated: bk_format_seal after writing.  A state that passed the deep
 *     check (BK_CHECK_DEEP) before a write passes it after it; a cleared
 *     state passes whatever it held.  (A state that passed only the
 *     shallow checks may carry counters or a table the deep check refuses,
 *     which writes carry on: memory-safe, no more; tests/fuzz.)
 *   - now is the clock in microseconds since the epoch; only WINDOW-trait
 *     kinds read it (count-mode sliding filters ignore it too); INT64_MAX
 *     answers "after every key has expired", as saved files are read.
 *   - NULL members: the kind has no such operation (see each). */
typedef struct bk_kind_ops {
    size_t view_size; /* bytes of the kind's view */
    /* View a validated state.  A GROWS-trait state never grows here: its
     * add answers BK_ERR_CAPACITY where the Python type would grow. */
    void (*attach)(void *view, uint8_t *state);
    /* 1 if the key of hash h may be present, 0 if surely absent (sketches:
     * its estimate is not 0). */
    int (*contains)(const void *view, uint64_t h, int64_t now);
    /* out[i] = contains(hs[i]) for i < n, by the kind's batch path (the
     * one the Python type's contains_many takes: prefetching ahead), or
     * NULL when it has none (loop on contains). */
    void (*contains_many)(const void *view, const uint64_t *hs, size_t n, int64_t now,
                          uint8_t *out);
    /* COUNTS-trait kinds (else NULL): how often h was added, as the kind
     * estimates it (the Python type's count() or estimate()): a sketch's
     * estimate, a counting filter's smallest counter, the copies of h's
     * fingerprint in a cuckoo or quotient filter. */
    uint64_t (*count)(const void *view, uint64_t h);
    /* Add the key of hash h, count times (count-min; every other kind
     * takes count == 1 and refuses another with BK_ERR_ARG).  BK_OK, also
     * when the key was present already; BK_ERR_CAPACITY when the state is
     * full (membership unchanged).  NULL for STATIC kinds. */
    bk_rc (*add)(void *view, uint64_t h, uint64_t count, int64_t now);
    /* add(hs[i], 1) for i < n by the kind's batch path (the Python type's
     * add_many), or NULL when it has none (loop on add).  Stops at the
     * first error and returns it (the keys before it stay added). */
    bk_rc (*add_many)(void *view, const uint64_t *hs, size_t n, int64_t now);
    /* REMOVABLE kinds (else NULL): remove one copy of a key that was
     * added; BK_ERR_NOTFOUND (nothing changed) when surely absent. */
    bk_rc (*remove)(void *view, uint64_t h);
    /* Empty of keys, same shape (the Python type's clear() may also shrink
     * a GROWS state; this never moves it): the payload and every counter
     * add changes zeroed (a cuckoo filter's stash too); a timed sliding
     * filter's window restarts at now.  NULL for STATIC kinds. */
    void (*clear)(void *view, int64_t now);
    /* The kind's own estimate of its current false-positive rate from its
     * state (its estimate_error_rate()), or NULL when it has none. */
    double (*estimate_error_rate)(const void *view, int64_t now);
} bk_kind_ops;

typedef struct bk_kind_desc {
    unsigned id;                 /* bk_kind */
    const char *name;            /* the facade's class name */
    const char *label;           /* in messages: "Bloom", "cuckoo", ... */
    uint32_t params_len;         /* parameter bytes every state has (prologue) */
    uint32_t header_len;         /* header_len fixed by format 1.0; 0: the
                                    kind checks its own (a variable header) */
    const bk_kind_param *params; /* its header parameters, by offset */
    uint32_t num_params;
    int capacity_param;          /* index in params of the design capacity, or -1 */
    uint64_t capacity_max;       /* capacity range [1, capacity_max] */
    const char *capacity_reason; /* the prologue's reason when out of range */
    int error_rate_param;        /* index in params of the design rate, or -1 */
    double error_rate_min;       /* what a constructor accepts: [min, max) */
    double error_rate_max;       /*   or [min, max] with error_rate_max_closed */
    int error_rate_max_closed;
    int layout_param;            /* index in params of the layout version, or -1 */
    uint32_t layout_max;         /* the highest layout version this build reads */
    uint32_t traits;             /* BK_TRAIT_* */
    bk_kind_validator validate;  /* the kind's own checks, after the prologue */
    const bk_kind_ops *ops;      /* its state operations, or NULL: a kind
                                    with no per-key C operations (the
                                    Parquet index, kind 12: its answers need
                                    Python's value encoding) */
} bk_kind_desc;

/* Shorthands for a descriptor's common rows. */
#define BK_KIND_PARAMS(a) (a), (uint32_t)(sizeof(a) / sizeof((a)[0]))
#define BK_KIND_CAPACITY_DEFAULT                                                   \
    BK_CAPACITY_MAX, "capacity must be in [1, " BK_CAPACITY_MAX_TEXT "]"
#define BK_KIND_ERROR_RATE_DEFAULT BK_ERROR_RATE_MIN, BK_ERROR_RATE_MAX, 0
#define BK_KIND_NO_ERROR_RATE 0.0, 0.0, 0

/* The descriptor of kind id, or NULL when id names no kind this build
 * holds (unknown, reserved, or not compiled in).  bk_kinds.c. */
const bk_kind_desc *bk_kinds_get(unsigned id);

/* Whether id is a kind id of the format (1 .. BK_KIND_MAX_ - 1), built or not. */
int bk_kinds_known(unsigned id);

/* The prologue every kind's validation starts with (bk_format.c runs it
 * before desc->validate): params_len, format 1.0's header_len, capacity
 * and the stored error rate. */
bk_rc bk_format_check_kind(const bk_kind_desc *desc, const bk_header *h,
                           const uint8_t *params, const char **reason);

#endif /* BK_KIND_H */
