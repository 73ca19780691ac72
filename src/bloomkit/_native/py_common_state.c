/*
 * py_common_state.c -- shared CPython glue: state buffers (owned or borrowed), the batch
 * lock, gate and pins, the one loader through bk_format_validate.
 * See py_common.h; the object contract is in py_common.c.
 */
#include "py_common.h"

#if defined(__linux__)
#include <stdlib.h>
#include <sys/mman.h>
#endif

#include <errno.h>
#if defined(__linux__)
#include <fcntl.h>
#include <sys/syscall.h>
#endif
#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif

#include "bk_atomic.h"
#include "bk_endian.h"

/* ---- Begin logic for state buffers ------------------------------------ */

/* What a failed state allocation tells the user. */
static const char bkpy_state_nomem_advice[] =
    "use a smaller capacity or a larger error rate, free memory, or build it in a "
    "memory-mapped file with bloomkit.create(path, capacity, error_rate, kind=...), "
    "which needs no memory of that size";

/* Transparent huge pages for large states (issue #19).  A probe of a large
 * filter is one random line read, and with 4 KiB pages it is also a TLB
 * miss: benchmarks/line_probe.c measured independent random reads of a
 * 1.2 GB set at 37 ns with 4 KiB pages and 12 ns with 2 MiB pages on the
 * 2-core test machine (loaded), 16 against 14 ns at 124 MB.  Most kernels
 * ship THP as "madvise", so the state asks for it.  Only the 2 MiB-aligned
 * interior of the calloc'd block can be backed by huge pages (the edges,
 * under 4 MiB, keep 4 KiB pages); pages are still allocated on first
 * touch, so an untouched state costs nothing (a huge page is 2 MiB of it
 * at once).  Below BKPY_THP_MIN the TLB covers the state anyway: the
 * threshold was 32 MiB until a 12 MiB filter (10^7 keys at 1%) measured
 * 11.3-13.1 ns a batch query with 4 KiB pages against 10.0-11.0 with huge
 * pages (four alternated rounds, idle, AMD guest: its 2,048-entry L2 TLB
 * covers 8 MiB of 4 KiB pages).
 * BLOOMKIT_NO_THP=1 in the environment turns it off (for measurement). */
#define BKPY_THP_MIN ((uint64_t)4 << 20)
#define BKPY_THP_PAGE ((uintptr_t)2 << 20)

static void bkpy_state_advise(void *raw, uint64_t len)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const char *env;
    uintptr_t lo, hi;
    if (len < BKPY_THP_MIN)
        return;
    env = getenv("BLOOMKIT_NO_THP");
    if (env != NULL && env[0] != '\0' && !(env[0] == '0' && env[1] == '\0'))
        return;
    lo = ((uintptr_t)raw + BKPY_THP_PAGE - 1) & ~(BKPY_THP_PAGE - 1);
    hi = ((uintptr_t)raw + (uintptr_t)len) & ~(BKPY_THP_PAGE - 1);
    if (hi > lo)
        (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE); /* a hint: errors ignored */
#else
    (void)raw;
    (void)len;
#endif
}

int bkpy_state_alloc(bkpy_state *st, uint64_t len)
{
    void *raw;
    if (len > (uint64_t)PY_SSIZE_T_MAX - BK_ALIGN) {
        bkpy_raise_nomem(len, "the structure's state (more than this platform can address)",
                         bkpy_state_nomem_advice);
        return -1;
    }
    /* calloc (PyMem_RawCalloc is calloc, seen by tracemalloc): untouched
     * zero pages cost nothing until written. */
    raw = PyMem_RawCalloc(1, (size_t)len + BK_ALIGN);
    if (raw == NULL) {
        bkpy_raise_nomem(len, "the structure's state", bkpy_state_nomem_advice);
        return -1;
    }
    bkpy_state_advise(raw, len);
    st->alloc = raw;
    st->buf = (uint8_t *)raw + (BK_ALIGN - ((uintptr_t)raw % BK_ALIGN)) % BK_ALIGN;
    st->len = len;
    st->writable = 1;
    return 0;
}

void bkpy_state_free(void *alloc)
{
    PyMem_RawFree(alloc);
}

/* Lazily allocate *lock; -1 with MemoryError. */
static int bkpy_lock_ready(PyThread_type_lock *lock)
{
    if (*lock == NULL && (*lock = PyThread_allocate_lock()) == NULL) {
        bkpy_raise_nomem(sizeof(void *), "a lock", "free memory");
        return -1;
    }
    return 0;
}

/* Take lock (GIL held): at once if it is free, else wait for it with the
 * GIL released. */
static void bkpy_lock_take(PyThread_type_lock lock)
{
    if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

/* Pass a gate (GIL held): wait while a waiter holds it. */
static void bkpy_gate_pass(PyThread_type_lock gate)
{
    bkpy_lock_take(gate);
    PyThread_release_lock(gate);
}

int bkpy_state_begin_batch(bkpy_state *st)
{
    if (bkpy_lock_ready(&st->batch_lock) < 0 || bkpy_lock_ready(&st->batch_gate) < 0)
        return -1;
    /* A thread that runs add_many in a loop would otherwise retake
     * batch_lock before a waiter wakes up (a union waited minutes). */
    bkpy_gate_pass(st->batch_gate);
    bkpy_lock_take(st->batch_lock);
    st->nogil_writers++;
    return 0;
}

void bkpy_state_end_batch(bkpy_state *st)
{
    st->nogil_writers--;
    PyThread_release_lock(st->batch_lock);
}

void bkpy_state_wait_batches_slow(bkpy_state *st)
{
    /* nogil_writers > 0: both locks exist (bkpy_state_begin_batch).  Loop:
     * with the GIL back, a batch that passed the gate before us may run. */
    bkpy_lock_take(st->batch_gate);
    while (st->nogil_writers > 0) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(st->batch_lock, WAIT_LOCK);
        PyThread_release_lock(st->batch_lock);
        Py_END_ALLOW_THREADS
    }
    PyThread_release_lock(st->batch_gate);
}

/* Pins (py_common.h).  pin_lock is held exactly while pins > 0: the first
 * pin takes it and the last unpin gives it back (a PyThread lock may be
 * released by another thread than the one that took it, like
 * threading.Lock), so a waiter sleeps on it instead of polling.  pin_gate
 * is held by a waiter for the whole of its wait: a new pin passes through
 * it first, so batches that keep overlapping in other threads cannot hold
 * pins above zero forever. */
int bkpy_state_pin(bkpy_state *st)
{
    if (bkpy_lock_ready(&st->pin_lock) < 0 || bkpy_lock_ready(&st->pin_gate) < 0)
        return -1;
    bkpy_gate_pass(st->pin_gate);
    /* With the GIL held nobody else pins or unpins now.  pins == 0 means
     * pin_lock is free: a waiter takes it only while it holds pin_gate,
     * and releases it before the gate. */
    if (st->pins++ == 0)
        bkpy_lock_take(st->pin_lock);
    return 0;
}

void bkpy_state_unpin(bkpy_state *st)
{
    if (--st->pins == 0)
        PyThread_release_lock(st->pin_lock);
}

void bkpy_state_wait_pins_slow(bkpy_state *st)
{
    /* pins > 0: both locks exist (bkpy_state_pin allocated them). */
    bkpy_lock_take(st->pin_gate);
    while (st->pins > 0) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(st->pin_lock, WAIT_LOCK);
        PyThread_release_lock(st->pin_lock);
        Py_END_ALLOW_THREADS
    }
    PyThread_release_lock(st->pin_gate);
}

/* ---- Begin logic for batches that hold a shared file alone ----------- */

/* The lock bytes of bloomkit/_locking.py. */
#define BKPY_LOCK_WRITERS 1
#define BKPY_LOCK_WAITING 2

#if defined(__linux__) && defined(F_OFD_SETLK)
/* The fcntl system call itself: glibc 2.28 versioned its fcntl wrapper
 * (fcntl64@GLIBC_2.28), and calling it would raise the wheel's floor from
 * manylinux_2_17 to manylinux_2_28 (auditwheel, .ci/wheel.sh).  Where the
 * kernel has fcntl64 (32-bit ABIs) it is the one that takes a struct flock
 * with 64-bit offsets, which Python's _FILE_OFFSET_BITS=64 gives us. */
#if defined(SYS_fcntl64)
#define BKPY_SYS_FCNTL SYS_fcntl64
#else
#define BKPY_SYS_FCNTL SYS_fcntl
#endif

static int bkpy_ofd(int fd, int cmd, short type, off_t at, short *held)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);   /* l_pid must be 0 for OFD locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = at;
    fl.l_len = 1;
    if (syscall(BKPY_SYS_FCNTL, fd, cmd, &fl) != 0)
        return -1;
    if (held != NULL)
        *held = fl.l_type;
    return 0;
}

int bkpy_state_file_wanted(const bkpy_state *st)
{
    short held = F_UNLCK;
    if (st->lock_fd1 == 0)
        return 0;
    if (st->lock_fd1 < 0)
        return 1;   /* forgotten (a fork): hand the file back */
    /* an error counts as "wanted": the batch then stays atomic */
    if (bkpy_ofd(st->lock_fd1 - 1, F_OFD_GETLK, F_WRLCK, BKPY_LOCK_WAITING, &held) != 0)
        return 1;
    return held != F_UNLCK;
}

int bkpy_state_hold_file(bkpy_state *st)
{
    if (!st->shared || st->lock_fd1 <= 0 || bkpy_state_file_wanted(st))
        return 0;
    /* granted only when no other open file description holds WRITERS */
    return bkpy_ofd(st->lock_fd1 - 1, F_OFD_SETLK, F_WRLCK, BKPY_LOCK_WRITERS, NULL) == 0;
}

void bkpy_state_share_file(bkpy_state *st)
{
    /* converting our own exclusive lock to shared is always granted */
    int fd1 = st->lock_fd1 < 0 ? -st->lock_fd1 : st->lock_fd1;
    if (fd1 > 0)
        (void)bkpy_ofd(fd1 - 1, F_OFD_SETLK, F_RDLCK, BKPY_LOCK_WRITERS, NULL);
}
#else
int bkpy_state_file_wanted(const bkpy_state *st)
{
    (void)st;
    return 1;
}

int bkpy_state_hold_file(bkpy_state *st)
{
    (void)st;
    return 0;
}

void bkpy_state_share_file(bkpy_state *st)
{
    (void)st;
}
#endif

/* ---- End logic for batches that hold a shared file alone ------------- */

void bkpy_state_release(bkpy_state *st)
{
    PyThread_type_lock *locks[4] = {&st->batch_lock, &st->batch_gate, &st->pin_lock,
                                    &st->pin_gate};
    for (int i = 0; i < 4; i++)
        if (*locks[i] != NULL) {
            PyThread_free_lock(*locks[i]);
            *locks[i] = NULL;
        }
    bkpy_state_free(st->alloc);
    st->alloc = NULL;
    if (st->view.obj != NULL)
        PyBuffer_Release(&st->view);
    st->buf = NULL;
    st->len = 0;
    Py_CLEAR(st->keyfunc);
}

int bkpy_parse_secret(PyObject *secret, uint8_t out16[16], int *has)
{
    Py_buffer v;
    *has = 0;
    if (secret == NULL || secret == Py_None)
        return 0;
    if (PyUnicode_Check(secret) || PyObject_GetBuffer(secret, &v, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "secret must be 16 bytes (bytes-like), e.g. os.urandom(16)");
        return -1;
    }
    if (v.len != 16) {
        PyBuffer_Release(&v);
        PyErr_Format(PyExc_ValueError, "secret must be exactly 16 bytes, got %zd", v.len);
        return -1;
    }
    memcpy(out16, v.buf, 16);
    PyBuffer_Release(&v);
    *has = 1;
    return 0;
}

int bkpy_state_set_hasher(bkpy_state *st, const bk_header *h, PyObject *secret)
{
    uint8_t key[16];
    int has;
    if (bkpy_parse_secret(secret, key, &has) < 0)
        return -1;
    if ((h->flags & BK_FLAG_KEYED) && !has) {
        PyErr_SetString(PyExc_ValueError,
                        "this filter is keyed (SipHash): pass the secret it was built with "
                        "(secret=...); the secret is never stored in the file");
        return -1;
    }
    if (!(h->flags & BK_FLAG_KEYED) && has) {
        PyErr_SetString(PyExc_ValueError, "secret given, but this filter is not keyed");
        return -1;
    }
    bk_hasher_init(&st->hasher, h->seed, has ? key : NULL);
    if (has && bk_hasher_key_check(&st->hasher) != h->key_check) {
        PyErr_SetString(PyExc_ValueError, "wrong secret for this keyed filter");
        return -1;
    }
    return 0;
}

int bkpy_state_load(bkpy_state *st, PyObject *data, int copy, int writable, int checks,
                    unsigned kind_mask, PyObject *secret, bk_header *h)
{
    Py_buffer v;
    const char *reason = "invalid";
    bk_rc rc;

    if (PyUnicode_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "state must be bytes-like, not str");
        return -1;
    }
    if (PyObject_GetBuffer(data, &v, (writable && !copy) ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    rc = bk_format_validate((const uint8_t *)v.buf, (uint64_t)v.len, checks, h, &reason);
    if (rc != BK_OK) {
        bkpy_raise_rc(rc, reason, h);
        PyBuffer_Release(&v);
        return -1;
    }
    if (!(kind_mask & (1u << h->kind))) {
        PyErr_Format(bkpy_FormatError, "this data holds a %s, not the expected structure "
                     "(use bloomkit.loads() to load any kind)", bk_format_kind_name(h->kind));
        PyBuffer_Release(&v);
        return -1;
    }
    if (bkpy_state_set_hasher(st, h, secret) < 0) {
        PyBuffer_Release(&v);
        return -1;
    }
    st->kind = h->kind;
    if (copy) {
        if (bkpy_state_alloc(st, (uint64_t)v.len) < 0) {
            PyBuffer_Release(&v);
            return -1;
        }
        memcpy(st->buf, v.buf, (size_t)v.len);
        bkpy_state_own(st);
        PyBuffer_Release(&v);
    } else {
        if (((uintptr_t)v.buf % 8) != 0) {
            PyErr_SetString(PyExc_ValueError, "a borrowed state buffer must be 8-byte aligned");
            PyBuffer_Release(&v);
            return -1;
        }
        st->view = v;
        st->buf = (uint8_t *)v.buf;
        st->len = (uint64_t)v.len;
        st->writable = writable;
    }
    return 0;
}

/* The DIRTY rule, in one place.  DIRTY marks a state that a writer has
 * open in place (a file mapped "r+"): it travels with the mapping only.  A
 * state that becomes an owned, in-memory object (from_bytes, load, copy)
 * or leaves as a copy (to_bytes, save) is clean: the flag is cleared.  A
 * DIRTY input is refused before that (bk_format_validate without
 * BK_ALLOW_DIRTY: UncleanFileError), except where the caller allows it
 * (_from_buffer of a map, repair). */
void bkpy_state_own(bkpy_state *st)
{
    (void)bk_format_set_dirty(st->buf, 0);
}

int bkpy_io_failed(void)
{
    if (errno == EINTR)
        return PyErr_CheckSignals() < 0 ? -1 : 0;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

int bkpy_state_read_fd(bkpy_state *st, int fd, uint64_t len)
{
    uint64_t off = 0;
    if (bkpy_state_alloc(st, len) < 0)
        return -1;
    while (off < len) {
        size_t want = (size_t)(len - off < ((uint64_t)1 << 30) ? len - off : (uint64_t)1 << 30);
        Py_ssize_t got;
        /* the buffer is private to this call: the GIL is not needed */
        Py_BEGIN_ALLOW_THREADS
#ifdef _WIN32
        got = _read(fd, st->buf + off, (unsigned)want);
#else
        got = read(fd, st->buf + off, want);
#endif
        Py_END_ALLOW_THREADS
        if (got < 0) {
            if (bkpy_io_failed() < 0)
                return -1;
            continue; /* EINTR */
        }
        if (got == 0) {
            PyErr_Format(bkpy_FormatError, "the file shrank while it was read (%llu of %llu "
                         "bytes)", (unsigned long long)off, (unsigned long long)len);
            return -1;
        }
        off += (uint64_t)got;
    }
    return 0;
}

PyObject *bkpy_state_to_bytes(const bkpy_state *st)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)st->len);
    uint8_t *p;
    if (out == NULL) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
            bkpy_raise_nomem(st->len, "a copy of the state (to_bytes)",
                             "save it to a file with bloomkit.save(obj, path) or obj.save(path), "
                             "which writes it through a small buffer instead of a copy");
        }
        return NULL;
    }
    p = (uint8_t *)PyBytes_AS_STRING(out);
    memcpy(p, st->buf, (size_t)st->len);
    (void)bk_format_set_dirty(p, 0); /* a copy is sealed and clean */
    bk_format_seal(p, st->len);
    return out;
}

int bkpy_state_check_writable(const bkpy_state *st)
{
    if (!st->writable) {
        PyErr_SetString(PyExc_TypeError, "this filter is read-only (opened with mode='r')");
        return -1;
    }
    return 0;
}

/* ---- Begin logic for the key domains (bk_format.h, BK_FLAG_KEYS_*) --------
 *
 * Header byte 15 records which key domains were ever added.  Writers OR a
 * bit the first time they add a key of a domain (bkpy_state_note_keys, an
 * inline load and compare otherwise: tests/test_percall.py holds the per-add
 * cost).  On a map other processes write, the OR is a byte CAS loop, so
 * two writers that add their first int and first str at once both stay
 * recorded; DIRTY lives in byte 14 and is written alone
 * (bk_format_set_dirty).  Nothing clears a bit but a fresh state. */
void bkpy_state_note_keys_slow(bkpy_state *st, unsigned seen)
{
    uint8_t *p = st->buf + BK_OFF_KEY_FLAGS;
    uint8_t bits = (uint8_t)(seen & ((BK_FLAG_KEYS_INT | BK_FLAG_KEYS_TEXT) >> 8));
    if (st->shared) {
        uint8_t old = bk_atomic_load8(p);
        while ((old | bits) != old && !bk_atomic_cas8(p, &old, (uint8_t)(old | bits))) {
        }
    } else {
        *p = (uint8_t)(*p | bits);
    }
}

void bkpy_state_merge_keys(bkpy_state *dst, const bkpy_state *src)
{
    uint8_t rec = BK_FLAG_KEYS_RECORDED >> 8;
    uint8_t theirs = src->buf[BK_OFF_KEY_FLAGS];
    uint8_t mine = dst->buf[BK_OFF_KEY_FLAGS];
    uint8_t want = (uint8_t)(mine | (theirs & ((BK_FLAG_KEYS_INT | BK_FLAG_KEYS_TEXT) >> 8)));
    if (!(theirs & rec))
        want = (uint8_t)(want & ~rec);
    if (want == mine)
        return;
    if (dst->shared) {
        /* another process may OR a domain meanwhile: keep its bits */
        uint8_t old = bk_atomic_load8(dst->buf + BK_OFF_KEY_FLAGS);
        uint8_t next;
        do {
            next = (uint8_t)(old | (want & ~rec));
            if (!(want & rec))
                next = (uint8_t)(next & ~rec);
        } while (next != old && !bk_atomic_cas8(dst->buf + BK_OFF_KEY_FLAGS, &old, next));
    } else {
        dst->buf[BK_OFF_KEY_FLAGS] = want;
    }
}

/* ---- End logic for the key domains ------------------------------------ */

/* ---- End logic for state buffers -------------------------------------- */
