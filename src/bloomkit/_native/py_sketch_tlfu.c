/*
 * py_sketch_tlfu.c -- the CPython type of the TinyLFU frequency sketch
 * (TinyLFUBase, kind 8; the core is bk_sketch_tlfu.c): its constructor,
 * record / record_many / estimate / admit / age / clear, and its type
 * descriptor.  A part of py_sketch.c's glue: the state-level methods
 * (to_bytes, _seal, pickling, equality, ...) are py_common.c's, and what
 * both sketch types share (the common initial sequence BKSk, equality,
 * the constructor's int reader) is declared in py_sketch.h.
 */
#include "py_sketch.h"

#include "bk_sketch.h"

typedef struct {
    PyObject_HEAD
    bkpy_state st;
    PyObject *weakreflist;
    bk_tlfu t;
} BKTlfu;

static PyTypeObject BKTlfu_Type;

BKPY_ATTACH(bksketch_tlfu, BKTlfu, t, bk_sketch_tlfu_attach)

static int bksketch_empty_tlfu(PyObject *self)
{
    bkpy_state *st = &((BKSk *)self)->st;
    uint64_t nb, db, pl = 0;
    const char *reason;
    (void)bk_sketch_tlfu_shape(1, 1, &nb, &db, &pl, &reason);
    if (bkpy_state_alloc(st, BK_TLFU_HEADER_LEN + pl) < 0)
        return -1;
    bk_sketch_tlfu_init_state(st->buf, 1, 1, 0, 0, 0);
    return bksketch_tlfu_attach(self);
}

/* ---- Begin logic for TinyLFU ------------------------------------------ */

/* TinyLFUBase(capacity, *, sample_factor=10, seed=0, secret=None, key=None) */
static PyObject *bksketch_tlfu_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"capacity", "sample_factor", "seed", "secret", "key", NULL};
    PyObject *cobj, *sfobj = NULL;
    uint64_t capacity, sf = 10, nb, db, payload_len = 0;
    bkpy_ctor_args a = BKPY_CTOR_INIT(0);
    const char *reason = NULL;
    bk_rc shape;
    BKTlfu *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOO:TinyLFU", kwlist, &cobj, &sfobj,
                                     &a.seed_obj, &a.secret, &a.key))
        return NULL;
    if (PyBool_Check(cobj) || !PyLong_Check(cobj) ||
        (sfobj != NULL && (PyBool_Check(sfobj) || !PyLong_Check(sfobj)))) {
        PyErr_SetString(PyExc_TypeError, "capacity and sample_factor must be ints");
        return NULL;
    }
    capacity = bksketch_u64_or_0(cobj);
    if (sfobj != NULL)
        sf = bksketch_u64_or_0(sfobj);
    if (sf > BK_TLFU_MAX_SAMPLE_FACTOR)
        sf = 0;
    shape = bk_sketch_tlfu_shape(capacity, (uint32_t)sf, &nb, &db, &payload_len, &reason);
    self = bkpy_obj_new_ctor(type, &a, shape, reason, BK_TLFU_HEADER_LEN + payload_len);
    if (self == NULL)
        return NULL;
    bk_sketch_tlfu_init_state(self->st.buf, capacity, (uint32_t)sf, a.seed, a.keyed,
                              bk_hasher_key_check(&self->st.hasher));
    bk_sketch_tlfu_attach(&self->t, self->st.buf);
    return (PyObject *)self;
}

static PyObject *bksketch_tlfu_record(BKTlfu *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key_w(&self->st, key, &h) < 0)
        return NULL;
    (void)bk_sketch_tlfu_record(&self->t, h);
    Py_RETURN_NONE;
}

static void bksketch_tlfu_record_chunk(void *vctx, const uint64_t *hs, size_t n, size_t offset)
{
    bk_tlfu *t = (bk_tlfu *)vctx;
    (void)offset;
    for (size_t j = 0; j < n; j++)
        (void)bk_sketch_tlfu_record(t, hs[j]);
}

static PyObject *bksketch_tlfu_record_many(BKTlfu *self, PyObject *keys)
{
    bkpy_batch_info info;
    int rc;
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    /* one writer at a time: the GIL is kept */
    rc = bkpy_for_each_chunk(keys, self->st.keyfunc, &self->st.hasher,
                                 bksketch_tlfu_record_chunk, NULL, &self->t, 0, &info);
    bkpy_state_note_keys(&self->st, info.seen);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *bksketch_tlfu_estimate(BKTlfu *self, PyObject *key)
{
    uint64_t h;
    if (bkpy_key(&self->st, key, &h) < 0)
        return NULL;
    return PyLong_FromUnsignedLong(bk_sketch_tlfu_estimate(&self->t, h));
}

static PyObject *bksketch_tlfu_admit(BKTlfu *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t hc, hv;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "admit(candidate, victim) takes 2 arguments");
        return NULL;
    }
    if (bkpy_key(&self->st, args[0], &hc) < 0 ||
        bkpy_key(&self->st, args[1], &hv) < 0)
        return NULL;
    return PyBool_FromLong(bk_sketch_tlfu_estimate(&self->t, hc) > bk_sketch_tlfu_estimate(&self->t, hv));
}

static PyObject *bksketch_tlfu_age(BKTlfu *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bk_sketch_tlfu_age(&self->t);
    Py_RETURN_NONE;
}

static PyObject *bksketch_tlfu_clear(BKTlfu *self, PyObject *Py_UNUSED(ignored))
{
    if (bkpy_state_check_writable(&self->st) < 0)
        return NULL;
    bk_sketch_tlfu_clear(&self->t);
    Py_RETURN_NONE;
}

BKPY_GETTER(bksketch_tlfu, BKTlfu, sample_size, PyLong_FromUnsignedLongLong(self->t.sample_size))
BKPY_GETTER(bksketch_tlfu, BKTlfu, events,
            PyLong_FromUnsignedLongLong(bk_sketch_tlfu_events(&self->t)))
BKPY_GETTER(bksketch_tlfu, BKTlfu, resets,
            PyLong_FromUnsignedLongLong(bk_sketch_tlfu_resets(&self->t)))
BKPY_GETTER(bksketch_tlfu, BKTlfu, num_counters, PyLong_FromUnsignedLongLong(self->t.num_blocks * 128))
BKPY_GETTER(bksketch_tlfu, BKTlfu, doorkeeper_bits, PyLong_FromUnsignedLongLong(self->t.door_blocks * 512))
static PyGetSetDef bksketch_tlfu_getset[] = {
    BKPY_PARAM(u64, "capacity", BK_TLFU_P_CAPACITY, "The cache capacity it is sized for."),
    BKPY_PARAM(u32, "sample_factor", BK_TLFU_P_SAMPLE_FACTOR, "Aging period / capacity."),
    {"sample_size", (getter)bksketch_tlfu_get_sample_size, NULL,
     "Events between agings (sample_factor * capacity).", NULL},
    {"events", (getter)bksketch_tlfu_get_events, NULL, "Events recorded since the last aging (halved "
     "at each aging).", NULL},
    {"resets", (getter)bksketch_tlfu_get_resets, NULL, "Agings so far.", NULL},
    {"num_counters", (getter)bksketch_tlfu_get_num_counters, NULL, "4-bit counters.", NULL},
    {"doorkeeper_bits", (getter)bksketch_tlfu_get_doorkeeper_bits, NULL, "Bits of the doorkeeper.",
     NULL},
    BKSK_COMMON_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bksketch_tlfu_methods[] = {
    {"record", (PyCFunction)bksketch_tlfu_record, METH_O,
     "record($self, key, /)\n--\n\nRecord one access of key."},
    {"record_many", (PyCFunction)bksketch_tlfu_record_many, METH_O,
     "record_many($self, keys, /)\n--\n\nRecord one access of every key, in order."},
    {"estimate", (PyCFunction)bksketch_tlfu_estimate, METH_O,
     "estimate($self, key, /)\n--\n\nEstimated recent frequency of key, in [0, 16]."},
    {"admit", (PyCFunction)(void (*)(void))bksketch_tlfu_admit, METH_FASTCALL,
     "admit($self, candidate, victim, /)\n--\n\nTrue when candidate is estimated more frequent "
     "than victim (the TinyLFU admission rule)."},
    {"age", (PyCFunction)bksketch_tlfu_age, METH_NOARGS,
     "age($self, /)\n--\n\nAge now: halve every counter and clear the doorkeeper."},
    {"clear", (PyCFunction)bksketch_tlfu_clear, METH_NOARGS, "clear($self, /)\n--\n\nForget everything."},
    BKPY_OBJ_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BKTlfu_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._core.TinyLFUBase",
    BKPY_OBJ_SLOTS(bksketch_tlfu, BKTlfu),
    .tp_doc = "TinyLFUBase(capacity, *, sample_factor=10, seed=0, secret=None, key=None)\n--\n\n"
              "C core of TinyLFU.",
};

/* ---- End logic for TinyLFU -------------------------------------------- */

static const bkpy_desc bksketch_tlfu_desc = {
    .type = &BKTlfu_Type,
    .kinds = 1u << BK_KIND_TINYLFU,
    .attach = bksketch_tlfu_attach,
    .empty = bksketch_empty_tlfu,
    .equal = bksketch_equal,
};

int bksketch_tlfu_init(PyObject *m)
{
    return bkpy_register_type(m, "TinyLFUBase", &bksketch_tlfu_desc);
}
