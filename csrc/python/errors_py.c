/* errors_py.c - the one place a bf_status becomes a Python exception, and
 * NumPy arrays become bf_src views. */
#include <string.h>

#include "glue.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL BF_ARRAY_API
#include <numpy/arrayobject.h>

PyObject *bf_raise(bf_module_state *st, bf_status s) { return bf_raise_sized(st, s, 0, 0); }

/* a budget error given its numbers (needed > 0) carries them as .needed_bytes / .available_bytes */
static void set_sizes(PyObject *exc, size_t needed, size_t available) {
    const char *names[2] = {"needed_bytes", "available_bytes"};
    const size_t vals[2] = {needed, available};
    for (int k = 0; k < 2; k++) {
        PyObject *v = PyLong_FromSize_t(vals[k]);
        if (v && PyObject_SetAttrString(exc, names[k], v) < 0) PyErr_Clear();
        Py_XDECREF(v);
    }
}

PyObject *bf_raise_sized(bf_module_state *st, bf_status s, size_t needed, size_t available) {
    const bf_error *e = bf_last_error();
    const char *msg = e->code == s ? e->msg : bf_status_name(s);
    PyObject *cls;
    switch (s) {
    case BF_ERR_BUDGET:
    case BF_ERR_NOMEM: {
        PyObject *exc = PyObject_CallFunction(st->MemoryBudgetError, "s", msg);
        if (exc) {
            /* where: the device named in the message ("cuda:N ..."), else the host */
            const char *c = strstr(msg, "cuda:");
            PyObject *where = c ? PyUnicode_FromStringAndSize(c, (Py_ssize_t)strspn(c + 5, "0123456789") + 5)
                                : PyUnicode_FromString("host");
            if (where) {
                PyObject_SetAttrString(exc, "where", where);
                Py_DECREF(where);
            }
            if (needed) set_sizes(exc, needed, available);
            PyErr_SetObject(st->MemoryBudgetError, exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    case BF_ERR_SHAPE:
    case BF_ERR_DATA: cls = st->DataError; break;
    case BF_ERR_ARG: cls = PyExc_ValueError; break;
    case BF_ERR_DEVICE: cls = st->DeviceError; break;
    case BF_ERR_NONFINITE: cls = st->NonFiniteError; break;
    case BF_ERR_INTERRUPTED: cls = PyExc_KeyboardInterrupt; break;
    default: cls = st->BoundfitError; break;
    }
    if (s == BF_ERR_INTERNAL)
        PyErr_Format(cls, "internal error at %s:%d: %s", e->file ? e->file : "?", e->line, msg);
    else
        PyErr_SetString(cls, msg);
    return NULL;
}

static int dtype_of(int typenum, bf_dtype *out) {
    switch (typenum) {
    case NPY_FLOAT32: *out = BF_DT_F32; return 0;
    case NPY_FLOAT64: *out = BF_DT_F64; return 0;
    case NPY_FLOAT16: *out = BF_DT_F16; return 0;
    case NPY_INT8: *out = BF_DT_I8; return 0;
    case NPY_INT16: *out = BF_DT_I16; return 0;
    case NPY_INT32: *out = BF_DT_I32; return 0;
    case NPY_INT64: *out = BF_DT_I64; return 0;
    case NPY_UINT8: *out = BF_DT_U8; return 0;
    case NPY_UINT16: *out = BF_DT_U16; return 0;
    case NPY_UINT32: *out = BF_DT_U32; return 0;
    case NPY_UINT64: *out = BF_DT_U64; return 0;
    case NPY_BOOL: *out = BF_DT_BOOL; return 0;
    }
    /* long / longlong alias int32/int64 on some platforms */
    if (typenum == NPY_LONGLONG) { *out = BF_DT_I64; return 0; }
    if (typenum == NPY_ULONGLONG) { *out = BF_DT_U64; return 0; }
    return -1;
}

int bf_src_from_array(bf_module_state *st, PyObject *obj, const char *what, bf_src *out) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy array, got %s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    PyArray_Descr *d = PyArray_DESCR(a);
    if (dtype_of(d->type_num, &out->dtype) != 0) {
        PyErr_Format(st->DataError, "%s has dtype %S, which is not a real number type boundfit can convert", what, (PyObject *)d);
        return -1;
    }
    if (PyArray_ISBYTESWAPPED(a)) {
        PyErr_Format(st->DataError, "%s has non-native byte order; convert it with .astype(native dtype)", what);
        return -1;
    }
    int nd = PyArray_NDIM(a);
    if (nd < 1 || nd > BF_SRC_MAXDIM) {
        PyErr_Format(st->DataError, "%s must have between 1 and %d dimensions, got %d", what, BF_SRC_MAXDIM, nd);
        return -1;
    }
    out->data = PyArray_BYTES(a);
    out->ndim = nd;
    out->row_elems = 1;
    for (int i = 0; i < nd; i++) {
        out->shape[i] = PyArray_DIM(a, i);
        out->strides[i] = PyArray_STRIDE(a, i);
        if (i) out->row_elems *= out->shape[i];
    }
    return 0;
}
