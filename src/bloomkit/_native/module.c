/*
 * module.c -- bloomkit._core: registration only.
 *
 * Each structure's CPython type lives in py_<structure>.c and exposes
 * bk<structure>_init(module), listed in bk_kinds.def (BK_GLUE).  setup.py
 * defines BK_HAVE_<STRUCTURE> for every py_<structure>.c present, so adding
 * a structure needs no edit here.
 *
 * Module-level helpers: the hash functions (for tests against independent
 * implementations and for tools that must agree with the filters), the
 * key encoding, the container header parser and validator, and the header
 * writers (init_header, set_dirty, seal) that bloomkit/persist and bloomkit/redis use.
 */
#include "py_common.h"

#include "bk_endian.h"
#include "bk_hash.h"

/* Every glue file's registration, bk<prefix>_init(module), in the order of
 * bk_kinds.def (the one list of kinds and glue). */
#define BK_GLUE(prefix) int bk##prefix##_init(PyObject *m);
#include "bk_kinds.def"

typedef int (*bkfn_init)(PyObject *m);

static const bkfn_init bkpy_inits[] = {
#define BK_GLUE(prefix) bk##prefix##_init,
#include "bk_kinds.def"
};

static int bkmod_get_bytes(PyObject *obj, Py_buffer *view)
{
    if (PyUnicode_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected bytes-like data, not str");
        return -1;
    }
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
}

static int bkmod_seed(PyObject *obj, uint64_t *seed)
{
    if (obj == NULL) {
        *seed = 0;
        return 0;
    }
    *seed = PyLong_AsUnsignedLongLongMask(obj);
    return (*seed == (uint64_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *bkmod_xxh3_64(PyObject *mod, PyObject *args)
{
    PyObject *data, *seed_obj = NULL;
    Py_buffer v;
    uint64_t seed, h;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O|O:xxh3_64", &data, &seed_obj) || bkmod_seed(seed_obj, &seed) < 0)
        return NULL;
    if (bkmod_get_bytes(data, &v) < 0)
        return NULL;
    h = bk_hash_xxh3_64(v.buf, (size_t)v.len, seed);
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong(h);
}

/* xxh3_64_pieces(pieces, seed=0): XXH3-64 of the concatenation of the
 * bytes-like pieces, through the streaming state (bk_hash_xxh3_stream_*) that
 * save() uses for its checksum; equal to xxh3_64(b"".join(pieces), seed). */
static PyObject *bkmod_xxh3_64_pieces(PyObject *mod, PyObject *args)
{
    PyObject *pieces, *seed_obj = NULL, *iter, *item;
    bk_hash_xxh3_stream st;
    uint64_t seed;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O|O:xxh3_64_pieces", &pieces, &seed_obj) ||
        bkmod_seed(seed_obj, &seed) < 0)
        return NULL;
    iter = PyObject_GetIter(pieces);
    if (iter == NULL)
        return NULL;
    bk_hash_xxh3_stream_init(&st, seed);
    while ((item = PyIter_Next(iter)) != NULL) {
        Py_buffer v;
        int rc = bkmod_get_bytes(item, &v);
        Py_DECREF(item);
        if (rc < 0) {
            Py_DECREF(iter);
            return NULL;
        }
        bk_hash_xxh3_stream_update(&st, v.buf, (size_t)v.len);
        PyBuffer_Release(&v);
    }
    Py_DECREF(iter);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromUnsignedLongLong(bk_hash_xxh3_stream_digest(&st));
}

static PyObject *bkmod_xxh64(PyObject *mod, PyObject *args)
{
    PyObject *data, *seed_obj = NULL;
    Py_buffer v;
    uint64_t seed, h;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O|O:xxh64", &data, &seed_obj) || bkmod_seed(seed_obj, &seed) < 0)
        return NULL;
    if (bkmod_get_bytes(data, &v) < 0)
        return NULL;
    h = bk_hash_xxh64(v.buf, (size_t)v.len, seed);
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *bkmod_siphash24(PyObject *mod, PyObject *args)
{
    PyObject *data, *key;
    Py_buffer v, k;
    uint64_t h;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO:siphash24", &data, &key))
        return NULL;
    if (bkmod_get_bytes(key, &k) < 0)
        return NULL;
    if (k.len != 16) {
        PyBuffer_Release(&k);
        PyErr_SetString(PyExc_ValueError, "SipHash key must be 16 bytes");
        return NULL;
    }
    if (bkmod_get_bytes(data, &v) < 0) {
        PyBuffer_Release(&k);
        return NULL;
    }
    h = bk_hash_siphash24(v.buf, (size_t)v.len, bk_load_u64le(k.buf), bk_load_u64le((char *)k.buf + 8));
    PyBuffer_Release(&v);
    PyBuffer_Release(&k);
    return PyLong_FromUnsignedLongLong(h);
}

/* key_hash(key, seed=0, secret=None): the 64-bit hash every structure
 * derives its probes from (the documented key encoding). */
static PyObject *bkmod_key_hash(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"key", "seed", "secret", NULL};
    PyObject *key, *seed_obj = NULL, *secret = Py_None;
    uint64_t seed, h;
    uint8_t k16[16];
    int has;
    bk_hasher hs;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:key_hash", kwlist, &key, &seed_obj, &secret))
        return NULL;
    if (bkmod_seed(seed_obj, &seed) < 0 || bkpy_parse_secret(secret, k16, &has) < 0)
        return NULL;
    bk_hasher_init(&hs, seed, has ? k16 : NULL);
    if (bkpy_hash_key(key, NULL, &hs, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *bkmod_header_dict(const bk_header *h)
{
    const char *name = bk_format_kind_name(h->kind);
    return Py_BuildValue(
        "{s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:K,s:K,s:K,s:K}", "version_major",
        (unsigned)h->version_major, "version_minor", (unsigned)h->version_minor, "kind",
        (unsigned)h->kind, "kind_name", name ? name : "unknown", "flags", (unsigned)h->flags,
        "hash_alg", (unsigned)h->hash_alg, "header_len", (unsigned)h->header_len,
        "params_len", (unsigned)h->params_len, "seed", (unsigned long long)h->seed,
        "payload_len", (unsigned long long)h->payload_len, "checksum",
        (unsigned long long)h->checksum, "key_check", (unsigned long long)h->key_check);
}

/* peek_header(data): the fixed header as a dict, after the length checks
 * only (no kind, checksum or payload validation).  `data` may be just the
 * beginning of a file when `total_len` gives the real size. */
static PyObject *bkmod_peek_header(PyObject *mod, PyObject *args)
{
    PyObject *data, *res;
    long long total = -1;
    Py_buffer v;
    bk_header h;
    const char *reason = "invalid";
    bk_rc rc;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O|L:peek_header", &data, &total))
        return NULL;
    if (bkmod_get_bytes(data, &v) < 0)
        return NULL;
    if (total < 0)
        total = (long long)v.len;
    if (v.len < BK_FIXED_HEADER && total >= BK_FIXED_HEADER) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "peek_header needs at least the first 64 bytes");
        return NULL;
    }
    /* Parse against the declared total size: the fixed header only reads
     * the first 64 bytes. */
    rc = bk_format_parse((const uint8_t *)v.buf, (uint64_t)total, &h, &reason);
    PyBuffer_Release(&v);
    if (rc != BK_OK) {
        bkpy_raise_rc(rc, reason, &h);
        return NULL;
    }
    res = bkmod_header_dict(&h);
    return res;
}

/* validate(data, checksum=True, allow_dirty=False): run the one validator;
 * returns the header dict or raises FormatError (or a subclass). */
static PyObject *bkmod_validate(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "checksum", "allow_dirty", "deep", NULL};
    PyObject *data;
    int checksum = 1, allow_dirty = 0, deep = 1;
    Py_buffer v;
    bk_header h;
    const char *reason = "invalid";
    bk_rc rc;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ppp:validate", kwlist, &data, &checksum,
                                     &allow_dirty, &deep))
        return NULL;
    if (bkmod_get_bytes(data, &v) < 0)
        return NULL;
    rc = bk_format_validate((const uint8_t *)v.buf, (uint64_t)v.len,
                            (deep ? BK_CHECK_DEEP : 0) | (checksum ? BK_CHECK_CHECKSUM : 0) |
                                (allow_dirty ? BK_ALLOW_DIRTY : 0),
                            &h, &reason);
    PyBuffer_Release(&v);
    if (rc != BK_OK) {
        bkpy_raise_rc(rc, reason, &h);
        return NULL;
    }
    return bkmod_header_dict(&h);
}

/* checksum(data): the container checksum of a full state buffer. */
static PyObject *bkmod_checksum(PyObject *mod, PyObject *data)
{
    Py_buffer v;
    bk_header h;
    const char *reason = "invalid";
    bk_rc rc;
    uint64_t c;
    (void)mod;
    if (bkmod_get_bytes(data, &v) < 0)
        return NULL;
    rc = bk_format_parse((const uint8_t *)v.buf, (uint64_t)v.len, &h, &reason);
    if (rc != BK_OK) {
        PyBuffer_Release(&v);
        bkpy_raise_rc(rc, reason, &h);
        return NULL;
    }
    c = bk_format_checksum((const uint8_t *)v.buf, (uint64_t)v.len);
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong(c);
}

/* ---- Begin header writers (issue #24: one home for the header) -----------
 * bloomkit/persist and bloomkit/redis write the container header through these three,
 * never with struct: the offsets, the flag bits and the checksum rule live
 * in bk_format.c only. */

static int bkmod_writable(PyObject *obj, Py_buffer *view, Py_ssize_t min_len)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE) < 0)
        return -1;
    if (view->len < min_len) {
        PyErr_Format(PyExc_ValueError, "buffer of %zd bytes is shorter than the %zd-byte header",
                     view->len, min_len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* set_dirty(buf, dirty): set or clear DIRTY in place; returns the old bit. */
static PyObject *bkmod_set_dirty(PyObject *mod, PyObject *args)
{
    PyObject *obj;
    int dirty, was;
    Py_buffer v;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Op:set_dirty", &obj, &dirty))
        return NULL;
    if (bkmod_writable(obj, &v, BK_FIXED_HEADER) < 0)
        return NULL;
    was = bk_format_set_dirty((uint8_t *)v.buf, dirty);
    PyBuffer_Release(&v);
    return PyBool_FromLong(was);
}

/* seal(buf, checksum=None): store the checksum of a whole state in its
 * header; with `checksum` (computed while the state was streamed to a file,
 * bk_format_checksum_begin) buf may be the header alone. */
static PyObject *bkmod_seal(PyObject *mod, PyObject *args)
{
    PyObject *obj, *given = Py_None;
    Py_buffer v;
    bk_header h;
    const char *reason = "invalid";
    bk_rc rc;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O|O:seal", &obj, &given))
        return NULL;
    if (given != Py_None) {
        unsigned long long c = PyLong_AsUnsignedLongLong(given);
        if (c == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
        if (bkmod_writable(obj, &v, BK_FIXED_HEADER) < 0)
            return NULL;
        bk_store_u64le((uint8_t *)v.buf + BK_OFF_CHECKSUM, c);
        PyBuffer_Release(&v);
        Py_RETURN_NONE;
    }
    if (bkmod_writable(obj, &v, 0) < 0)
        return NULL;
    rc = bk_format_parse((const uint8_t *)v.buf, (uint64_t)v.len, &h, &reason);
    if (rc != BK_OK) {
        PyBuffer_Release(&v);
        bkpy_raise_rc(rc, reason, &h);
        return NULL;
    }
    bk_format_seal((uint8_t *)v.buf, (uint64_t)v.len);
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

/* key_domains arguments: -1 (unknown) or a mask of BKPY_SEEN_INT and
 * BKPY_SEEN_TEXT (recorded). */
static int bkmod_check_domains(int domains)
{
    if (domains < -1 || domains > (int)(BKPY_SEEN_INT | BKPY_SEEN_TEXT)) {
        PyErr_SetString(PyExc_ValueError, "key_domains must be -1 (unknown) or a mask of 1 "
                                          "(int) and 2 (text)");
        return -1;
    }
    return 0;
}

static void bkmod_store_domains(uint8_t *buf, int domains)
{
    buf[BK_OFF_KEY_FLAGS] = (uint8_t)(
        (buf[BK_OFF_KEY_FLAGS] & ~(BK_FLAG_KEYS_MASK >> 8)) |
        (domains < 0 ? 0 : (unsigned)domains | (BK_FLAG_KEYS_RECORDED >> 8)));
}

/* init_header(buf, kind, header_len, params_len, payload_len, seed=0,
 * key_check=None, key_domains=-1): bk_format_init_header into
 * buf[0..header_len), then the key domains (set_key_domains). */
static PyObject *bkmod_init_header(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "kind", "header_len", "params_len", "payload_len", "seed",
                             "key_check", "key_domains", NULL};
    PyObject *obj, *key_check_obj = Py_None;
    int domains = -1;
    unsigned int kind, header_len, params_len;
    unsigned long long payload_len, seed = 0, key_check = 0;
    Py_buffer v;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OIIIK|KOi:init_header", kwlist, &obj, &kind,
                                     &header_len, &params_len, &payload_len, &seed,
                                     &key_check_obj, &domains))
        return NULL;
    if (bkmod_check_domains(domains) < 0)
        return NULL;
    if (kind == 0 || kind >= BK_KIND_MAX_) {
        PyErr_Format(PyExc_ValueError, "unknown kind %u", kind);
        return NULL;
    }
    if (header_len < BK_FIXED_HEADER || header_len > BK_MAX_HEADER || header_len % BK_ALIGN ||
        params_len > header_len - BK_FIXED_HEADER) {
        PyErr_SetString(PyExc_ValueError, "header_len must be a multiple of 64 in [64, 4096] "
                                          "with room for params_len");
        return NULL;
    }
    if (key_check_obj != Py_None) {
        key_check = PyLong_AsUnsignedLongLong(key_check_obj);
        if (key_check == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
    }
    if (bkmod_writable(obj, &v, (Py_ssize_t)header_len) < 0)
        return NULL;
    bk_format_init_header((uint8_t *)v.buf, kind, header_len, params_len, payload_len, seed,
                          key_check_obj != Py_None, key_check);
    bkmod_store_domains((uint8_t *)v.buf, domains);
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

/* set_key_domains(buf, key_domains): the key-domain bits of a header in
 * place (bk_format.h, BK_FLAG_KEYS_*): -1 unknown (none recorded: what a
 * state assembled from Redis says, whose server-side adds never see a key's
 * type), or a mask of 1 (int) and 2 (text), recorded. */
static PyObject *bkmod_set_key_domains(PyObject *mod, PyObject *args)
{
    PyObject *obj;
    int domains;
    Py_buffer v;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Oi:set_key_domains", &obj, &domains))
        return NULL;
    if (bkmod_check_domains(domains) < 0 || bkmod_writable(obj, &v, BK_FIXED_HEADER) < 0)
        return NULL;
    bkmod_store_domains((uint8_t *)v.buf, domains);
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

/* ---- End header writers --------------------------------------------------- */

/* ---- Begin logic for per-class method descriptors (issue #21) ------------
 *
 * `f.add(k)` on a Python subclass of a C type (every public class:
 * `class BloomFilter(Persistent, _core.BloomBase)`) cost 7-13 ns more than
 * on the C type itself (measured 28 vs 21 ns quiet, 58 vs 44 ns loaded).
 * The attribute lookup specialises fine (LOAD_METHOD_NO_DICT: the classes
 * have __slots__ = ()); the call does not.  CPython's specialised call of a
 * C method (3.11 PRECALL_NO_KW_METHOD_DESCRIPTOR_O/_FAST/_NOARGS, 3.12
 * CALL_NO_KW_METHOD_DESCRIPTOR_*, 3.13 CALL_METHOD_DESCRIPTOR_*) checks
 * that the type of `self` IS the descriptor's d_type, not a subclass of it:
 * for a subclass instance it deoptimises on every call and takes the
 * generic vectorcall path (argument tuple checks, descr_check's subtype
 * walk).  dis.get_instructions(fn, adaptive=True) shows PRECALL_ADAPTIVE
 * where the C type gets PRECALL_NO_KW_METHOD_DESCRIPTOR_O.
 *
 * own_methods(cls) gives a Python class its own method descriptors, made
 * from the same PyMethodDef as its C base's, with d_type = cls: the same C
 * function, the same signature and docstring, and the exact-type check
 * passes for cls's instances.  Persistent.__init_subclass__ calls it for
 * every bloomkit class and every user subclass of one.  Only public
 * instance methods (no leading underscore, not METH_CLASS/METH_STATIC)
 * that cls still inherits unchanged from the C base are replaced: a Python
 * override (BinaryFuseFilter.add) stays.  Slots (`key in f` through
 * sq_contains, len) are inherited as C function pointers and need nothing.
 * Trade-off: `BloomFilter.add(x, k)` called unbound now requires x to be a
 * BloomFilter (as for any method of a class), not any BloomBase. */

static PyObject *bkmod_own_methods(PyObject *mod, PyObject *cls)
{
    PyTypeObject *type, *base;
    long done = 0;
    (void)mod;
    if (!PyType_Check(cls) || !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError, "own_methods() takes a class defined in Python");
        return NULL;
    }
    type = (PyTypeObject *)cls;
    /* the C base: the first static type on the tp_base chain (the solid base
     * whose layout the instances have) */
    base = type;
    while (base != NULL && (base->tp_flags & Py_TPFLAGS_HEAPTYPE))
        base = base->tp_base;
    if (base == NULL || base == &PyBaseObject_Type || base->tp_methods == NULL)
        return PyLong_FromLong(0);
    for (PyMethodDef *def = base->tp_methods; def->ml_name != NULL; def++) {
        PyObject *name, *found, *own;
        int inherited, rc;
        if (def->ml_name[0] == '_' || (def->ml_flags & (METH_CLASS | METH_STATIC)))
            continue;
        name = PyUnicode_InternFromString(def->ml_name);
        if (name == NULL)
            return NULL;
        /* type.__getattribute__ returns a method descriptor itself (its
         * __get__ with no instance) and a Python function as it is */
        found = PyObject_GetAttr(cls, name);
        if (found == NULL) {
            Py_DECREF(name);
            return NULL;
        }
        inherited = Py_IS_TYPE(found, &PyMethodDescr_Type) &&
                    ((PyMethodDescrObject *)found)->d_method == def &&
                    PyDescr_TYPE(found) != type;
        Py_DECREF(found);
        if (!inherited) {
            Py_DECREF(name);
            continue;
        }
        own = PyDescr_NewMethod(type, def);
        if (own == NULL) {
            Py_DECREF(name);
            return NULL;
        }
        rc = PyObject_SetAttr(cls, name, own); /* type_setattro: PyType_Modified */
        Py_DECREF(own);
        Py_DECREF(name);
        if (rc < 0)
            return NULL;
        done++;
    }
    return PyLong_FromLong(done);
}

/* ---- End logic for per-class method descriptors --------------------------- */

static PyMethodDef bkmod_methods[] = {
    {"xxh3_64", bkmod_xxh3_64, METH_VARARGS, "xxh3_64(data, seed=0, /)\n--\n\nXXH3-64 of bytes-like data."},
    {"xxh3_64_pieces", bkmod_xxh3_64_pieces, METH_VARARGS,
     "xxh3_64_pieces(pieces, seed=0, /)\n--\n\nXXH3-64 of the concatenated pieces, streamed."},
    {"xxh64", bkmod_xxh64, METH_VARARGS, "xxh64(data, seed=0, /)\n--\n\nXXH64 of bytes-like data."},
    {"siphash24", bkmod_siphash24, METH_VARARGS, "siphash24(data, key, /)\n--\n\nSipHash-2-4 (64-bit) under a 16-byte key."},
    {"key_hash", (PyCFunction)(void (*)(void))bkmod_key_hash, METH_VARARGS | METH_KEYWORDS,
     "key_hash(key, seed=0, secret=None)\n--\n\nThe 64-bit hash of a key under bloomkit's key encoding."},
    {"peek_header", bkmod_peek_header, METH_VARARGS,
     "peek_header(data, total_len=-1, /)\n--\n\nThe fixed container header as a dict."},
    {"validate", (PyCFunction)(void (*)(void))bkmod_validate, METH_VARARGS | METH_KEYWORDS,
     "validate(data, checksum=True, allow_dirty=False, deep=True)\n--\n\nRun the container "
     "validator (deep=False: the O(1) checks only)."},
    {"checksum", bkmod_checksum, METH_O, "checksum(data, /)\n--\n\nThe container checksum of a state buffer."},
    {"set_dirty", bkmod_set_dirty, METH_VARARGS,
     "set_dirty(buf, dirty, /)\n--\n\nSet or clear the DIRTY flag of a writable state in place; "
     "returns whether it was set."},
    {"seal", bkmod_seal, METH_VARARGS,
     "seal(buf, checksum=None, /)\n--\n\nStore the checksum of a whole writable state in its "
     "header (or the given checksum into a header alone)."},
    {"init_header", (PyCFunction)(void (*)(void))bkmod_init_header, METH_VARARGS | METH_KEYWORDS,
     "init_header(buf, kind, header_len, params_len, payload_len, seed=0, key_check=None, "
     "key_domains=-1)\n--\n\n"
     "Zero buf[:header_len] and write a fresh fixed header (keyed when key_check is given; "
     "key domains unknown unless key_domains is a mask of 1 int, 2 text)."},
    {"set_key_domains", (PyCFunction)bkmod_set_key_domains, METH_VARARGS,
     "set_key_domains(buf, key_domains, /)\n--\n\n"
     "Store a header's key domains in place: -1 unknown, or a mask of 1 (int) and 2 (text)."},
    {"load_fd", (PyCFunction)(void (*)(void))bkpy_load_fd, METH_VARARGS | METH_KEYWORDS,
     "load_fd(fd, size, class_for, secret=None, key=None, *, verify=True)\n--\n\nRead a saved "
     "state from a file descriptor into its structure (bloomkit.load)."},
    {"load_bytes", (PyCFunction)(void (*)(void))bkpy_load_bytes, METH_VARARGS | METH_KEYWORDS,
     "load_bytes(data, class_for, secret=None, key=None, *, verify=True)\n--\n\nRebuild a "
     "state of any kind from bytes-like data (bloomkit.loads)."},
    {"contains_bits", (PyCFunction)(void (*)(void))bkpy_mod_contains_bits, METH_FASTCALL,
     "contains_bits(filt, keys, out, /)\n--\n\nfilt.contains_many(keys) bit-packed into the "
     "writable buffer out of ceil(rows / 8) bytes, LSB first (an Arrow boolean bitmap). "
     "True when written; False, nothing done, when filt's contains_many is not one it can "
     "run (then call it and pack its answers)."},
    {"own_methods", bkmod_own_methods, METH_O,
     "own_methods(cls, /)\n--\n\nGive a Python subclass of a bloomkit C type its own descriptors "
     "for the C type's public methods (same C functions), so that CPython's specialised call "
     "applies to its instances; returns how many were attached."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef bkmod_def = {
    PyModuleDef_HEAD_INIT, "bloomkit._core", "bloomkit's C core.", -1, bkmod_methods,
    NULL, NULL, NULL, NULL,
};

/* _core.KINDS: {class name: Kind} for every kind this build holds, from
 * the one table (bk_kinds.c) of descriptors (bk_kind.h) -- read-only (a
 * mappingproxy of read-only struct sequences).  Everything in Python that
 * needs a kind's id, traits, limits or header layout reads it here:
 * bloomkit/__init__.py registers every exported class it names, the CLI,
 * Dask, the data-file builders, Redis and the tests derive their lists and
 * flags from it.  A kind id reserved without a descriptor (9) is absent. */
#define BKMOD_KIND_FIELDS 24
static PyStructSequence_Field bkmod_kind_fields[] = {
    {"id", "kind id in the header (fixed forever)"},
    {"name", "the facade's class name"},
    {"params", "header parameter names, in offset order"},
    {"param_layout", "(name, offset from byte 64, width, struct format) per parameter"},
    {"params_len", "parameter bytes every state of the kind has"},
    {"header_len", "header_len of format 1.0 (0: it varies, the kind checks it)"},
    {"capacity_param", "name of the design-capacity parameter, or None"},
    {"capacity_max", "capacity range is [1, capacity_max] (None: no capacity)"},
    {"error_rate_param", "name of the design-error-rate parameter, or None"},
    {"error_rate_min", "smallest error rate a constructor accepts (None: no rate)"},
    {"error_rate_max", "error rates are below this (or at most it: error_rate_max_closed)"},
    {"error_rate_max_closed", "whether error_rate_max itself is accepted"},
    {"layout_param", "name of the layout-version parameter, or None"},
    {"layout_max", "highest layout version this build reads"},
    {"static", "built once from all its keys: no add, no merge"},
    {"mergeable", "equal parameters union"},
    {"intersectable", "equal parameters intersect"},
    {"removable", "remove(key)"},
    {"counts", "answers how often a key was added"},
    {"writer_lock", "'shared' (atomic updates) or 'exclusive': writers of one mapped file"},
    {"window", "forgets keys older than its window"},
    {"keyed", "may be keyed (secret=)"},
    {"grows", "its state grows with its keys: never mapped for writing"},
    {"bitwise", "union and intersection are the payloads' OR and AND (files merge by chunks)"},
    {NULL, NULL},
};

static PyStructSequence_Desc bkmod_kind_desc = {
    "bloomkit._core.Kind",
    "A structure kind's descriptor (bk_kind.h): one per kind, defined in its C core.",
    bkmod_kind_fields, BKMOD_KIND_FIELDS,
};

static PyTypeObject *bkmod_kind_type;

static PyObject *bkmod_param_name(const bk_kind_desc *d, int index)
{
    if (index < 0)
        Py_RETURN_NONE;
    return PyUnicode_FromString(d->params[index].name);
}

static PyObject *bkmod_param_layout(const bk_kind_desc *d)
{
    static const char *const fmt[] = {"", "H", "I", "Q", "q", "d", "s"};
    PyObject *t = PyTuple_New((Py_ssize_t)d->num_params);
    for (uint32_t i = 0; t != NULL && i < d->num_params; i++) {
        const bk_kind_param *p = &d->params[i];
        PyObject *f = p->type == BK_PARAM_BYTES ? PyUnicode_FromFormat("%us", (unsigned)p->width)
                                                : PyUnicode_FromString(fmt[p->type]);
        PyObject *row = f == NULL ? NULL
                                  : Py_BuildValue("(sIIN)", p->name, (unsigned)p->offset,
                                                  (unsigned)p->width, f);
        if (row == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, row);
    }
    return t;
}

static PyObject *bkmod_kind(const bk_kind_desc *d)
{
    PyObject *k = PyStructSequence_New(bkmod_kind_type), *names;
    PyObject *v[BKMOD_KIND_FIELDS];
    int has_rate = d->error_rate_param >= 0 && d->error_rate_max > 0.0;
    if (k == NULL)
        return NULL;
    names = PyTuple_New((Py_ssize_t)d->num_params);
    for (uint32_t i = 0; names != NULL && i < d->num_params; i++) {
        PyObject *n = PyUnicode_FromString(d->params[i].name);
        if (n == NULL) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, (Py_ssize_t)i, n);
    }
    v[0] = PyLong_FromUnsignedLong(d->id);
    v[1] = PyUnicode_FromString(d->name);
    v[2] = names;
    v[3] = bkmod_param_layout(d);
    v[4] = PyLong_FromUnsignedLong(d->params_len);
    v[5] = PyLong_FromUnsignedLong(d->header_len);
    v[6] = bkmod_param_name(d, d->capacity_param);
    v[7] = d->capacity_param >= 0 ? PyLong_FromUnsignedLongLong(d->capacity_max) : Py_NewRef(Py_None);
    v[8] = bkmod_param_name(d, d->error_rate_param);
    v[9] = has_rate ? PyFloat_FromDouble(d->error_rate_min) : Py_NewRef(Py_None);
    v[10] = has_rate ? PyFloat_FromDouble(d->error_rate_max) : Py_NewRef(Py_None);
    v[11] = PyBool_FromLong(d->error_rate_max_closed);
    v[12] = bkmod_param_name(d, d->layout_param);
    v[13] = PyLong_FromUnsignedLong(d->layout_max);
    v[14] = PyBool_FromLong((d->traits & BK_TRAIT_STATIC) != 0);
    v[15] = PyBool_FromLong((d->traits & BK_TRAIT_MERGEABLE) != 0);
    v[16] = PyBool_FromLong((d->traits & BK_TRAIT_INTERSECTABLE) != 0);
    v[17] = PyBool_FromLong((d->traits & BK_TRAIT_REMOVABLE) != 0);
    v[18] = PyBool_FromLong((d->traits & BK_TRAIT_COUNTS) != 0);
    v[19] = PyUnicode_FromString(d->traits & BK_TRAIT_SHARED_WRITERS ? "shared" : "exclusive");
    v[20] = PyBool_FromLong((d->traits & BK_TRAIT_WINDOW) != 0);
    v[21] = PyBool_FromLong((d->traits & BK_TRAIT_KEYED) != 0);
    v[22] = PyBool_FromLong((d->traits & BK_TRAIT_GROWS) != 0);
    v[23] = PyBool_FromLong((d->traits & BK_TRAIT_BITWISE) != 0);
    for (int i = 0; i < BKMOD_KIND_FIELDS; i++) {
        if (v[i] == NULL) {
            for (int j = i; j < BKMOD_KIND_FIELDS; j++)
                Py_XDECREF(v[j]);
            Py_DECREF(k);
            return NULL;
        }
        PyStructSequence_SET_ITEM(k, i, v[i]);
    }
    return k;
}

static int bkmod_add_kinds(PyObject *m)
{
    PyObject *kinds, *proxy;
    bkmod_kind_type = PyStructSequence_NewType(&bkmod_kind_desc);
    if (bkmod_kind_type == NULL)
        return -1;
    if (PyModule_AddObject(m, "Kind", (PyObject *)bkmod_kind_type) < 0) {
        Py_DECREF(bkmod_kind_type);
        return -1;
    }
    Py_INCREF(bkmod_kind_type);  /* the module holds one reference, this file one */
    kinds = PyDict_New();
    if (kinds == NULL)
        return -1;
    for (unsigned id = 1; id < BK_KIND_MAX_; id++) {
        const bk_kind_desc *d = bk_kinds_get(id);
        PyObject *k;
        if (d == NULL)
            continue;
        k = bkmod_kind(d);
        if (k == NULL || PyDict_SetItemString(kinds, d->name, k) < 0) {
            Py_XDECREF(k);
            Py_DECREF(kinds);
            return -1;
        }
        Py_DECREF(k);
    }
    proxy = PyDictProxy_New(kinds);
    Py_DECREF(kinds);
    if (proxy == NULL || PyModule_AddObject(m, "KINDS", proxy) < 0) {
        Py_XDECREF(proxy);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&bkmod_def);
    if (m == NULL)
        return NULL;
    if (bkpy_common_init(m) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof bkpy_inits / sizeof bkpy_inits[0]; i++)
        if (bkpy_inits[i](m) < 0)
            goto fail;
    if (PyModule_AddIntConstant(m, "FORMAT_VERSION_MAJOR", BK_VERSION_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "FORMAT_VERSION_MINOR", BK_VERSION_MINOR) < 0 ||
        bkmod_add_kinds(m) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
