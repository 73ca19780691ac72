/*
 * py_common_errors.c -- shared CPython glue: the exceptions of bloomkit/errors.py and the
 * raisers that map a bk_rc and an allocation failure onto them.
 * See py_common.h; the object contract is in py_common.c.
 */
#include "py_common.h"

PyObject *bkpy_FormatError;
PyObject *bkpy_UnsupportedFormatError;
PyObject *bkpy_ChecksumError;
PyObject *bkpy_UncleanFileError;
PyObject *bkpy_IncompatibleFiltersError;
PyObject *bkpy_CapacityError;

static int bkpy_import_error(PyObject *errors, const char *name, PyObject **slot)
{
    *slot = PyObject_GetAttrString(errors, name);
    return *slot == NULL ? -1 : 0;
}

int bkpy_common_init(PyObject *module)
{
    PyObject *errors = PyImport_ImportModule("bloomkit.errors");
    int rc = 0;
    (void)module;
    if (errors == NULL)
        return -1;
    if (bkpy_import_error(errors, "FormatError", &bkpy_FormatError) < 0 ||
        bkpy_import_error(errors, "UnsupportedFormatError", &bkpy_UnsupportedFormatError) < 0 ||
        bkpy_import_error(errors, "ChecksumError", &bkpy_ChecksumError) < 0 ||
        bkpy_import_error(errors, "UncleanFileError", &bkpy_UncleanFileError) < 0 ||
        bkpy_import_error(errors, "IncompatibleFiltersError", &bkpy_IncompatibleFiltersError) < 0 ||
        bkpy_import_error(errors, "CapacityError", &bkpy_CapacityError) < 0)
        rc = -1;
    Py_DECREF(errors);
    return rc;
}

void bkpy_raise_nomem(uint64_t nbytes, const char *what, const char *advice)
{
    /* PyErr_Format has no %f: format the size here. */
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    char human[32], msg[512];
    double size = (double)nbytes;
    int u = -1;
    while (size >= 1024.0 && u < 5) {
        size /= 1024.0;
        u++;
    }
    if (u < 0)
        snprintf(human, sizeof human, "%llu B", (unsigned long long)nbytes);
    else
        snprintf(human, sizeof human, "%.1f %s", size, units[u]);
    snprintf(msg, sizeof msg, "cannot allocate %llu bytes (%s) for %s; %s",
             (unsigned long long)nbytes, human, what, advice);
    PyErr_SetString(PyExc_MemoryError, msg);
}

void bkpy_raise_rc(bk_rc rc, const char *reason, const bk_header *h)
{
    switch (rc) {
    case BK_ERR_UNSUPPORTED:
        if (h != NULL && h->version_major != BK_VERSION_MAJOR)
            PyErr_Format(bkpy_UnsupportedFormatError,
                         "unsupported bloomkit format version %u.%u (this version reads %d.x)",
                         (unsigned)h->version_major, (unsigned)h->version_minor,
                         BK_VERSION_MAJOR);
        else if (h != NULL)
            PyErr_Format(bkpy_UnsupportedFormatError, "%s (kind %u, flags 0x%04x, hash %u)",
                         reason, (unsigned)h->kind, (unsigned)h->flags, (unsigned)h->hash_alg);
        else
            PyErr_SetString(bkpy_UnsupportedFormatError, reason);
        break;
    case BK_ERR_CHECKSUM:
        PyErr_SetString(bkpy_ChecksumError, reason);
        break;
    case BK_ERR_UNCLEAN:
        PyErr_SetString(bkpy_UncleanFileError, reason);
        break;
    case BK_ERR_NOMEM:
        PyErr_Format(PyExc_MemoryError, "out of memory: %s; free memory or use a smaller "
                     "structure", reason != NULL ? reason : "allocation failed");
        break;
    case BK_ERR_CAPACITY:
        PyErr_SetString(bkpy_CapacityError, reason);
        break;
    case BK_ERR_INCOMPATIBLE:
        PyErr_SetString(bkpy_IncompatibleFiltersError, reason);
        break;
    case BK_ERR_ARG:
        PyErr_SetString(PyExc_ValueError, reason);
        break;
    case BK_ERR_NOTFOUND:
        PyErr_SetString(PyExc_KeyError, reason);
        break;
    default:
        PyErr_Format(bkpy_FormatError, "invalid bloomkit data: %s", reason);
        break;
    }
}
