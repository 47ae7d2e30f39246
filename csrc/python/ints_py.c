/* ints_py.c - every integer the engine reads from Python goes through here:
 * a Python int (or anything with __index__: numpy integers, bool) inside
 * [lo, hi] is stored; anything else is a ValueError naming its owner, the
 * argument and the value as given. Nothing is ever truncated or wrapped. */
#include "glue.h"

static int refuse(PyObject *v, const char *owner, const char *what, long long lo, long long hi) {
    if (owner && *owner)
        PyErr_Format(PyExc_ValueError, "%s: %s must be an integer from %lld to %lld, got %R", owner, what, lo, hi, v);
    else
        PyErr_Format(PyExc_ValueError, "%s must be an integer from %lld to %lld, got %R", what, lo, hi, v);
    return -1;
}

int bf_py_int64(PyObject *v, const char *owner, const char *what, long long lo, long long hi, long long *out) {
    PyObject *ix = PyNumber_Index(v); /* a float is refused, not rounded */
    if (!ix) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
        return refuse(v, owner, what, lo, hi);
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(ix, &overflow);
    Py_DECREF(ix);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (overflow || x < lo || x > hi) return refuse(v, owner, what, lo, hi);
    *out = x;
    return 0;
}

int bf_py_int(PyObject *v, const char *owner, const char *what, int lo, int hi, int *out) {
    long long x;
    if (bf_py_int64(v, owner, what, lo, hi, &x) < 0) return -1;
    *out = (int)x;
    return 0;
}

int bf_py_long(PyObject *v, const char *owner, const char *what, long lo, long hi, long *out) {
    long long x;
    if (bf_py_int64(v, owner, what, lo, hi, &x) < 0) return -1;
    *out = (long)x;
    return 0;
}

int bf_py_seed(PyObject *v, const char *owner, const char *what, unsigned long long *out) {
    PyObject *ix = PyNumber_Index(v);
    unsigned long long x = 0;
    if (ix) {
        x = PyLong_AsUnsignedLongLong(ix); /* OverflowError for a negative or too large value */
        Py_DECREF(ix);
    }
    if (!ix || (x == (unsigned long long)-1 && PyErr_Occurred())) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        if (owner && *owner)
            PyErr_Format(PyExc_ValueError, "%s: %s must be an integer from 0 to 2**64 - 1, got %R", owner, what, v);
        else
            PyErr_Format(PyExc_ValueError, "%s must be an integer from 0 to 2**64 - 1, got %R", what, v);
        return -1;
    }
    *out = x;
    return 0;
}
