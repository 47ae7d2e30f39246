/* glue.h - shared pieces of the CPython / NumPy layer: module state with the
 * exception classes, status -> exception, array -> bf_src views. */
#ifndef BF_GLUE_H
#define BF_GLUE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gather.h"
#include "status.h"

typedef struct {
    PyObject *BoundfitError, *MemoryBudgetError, *DeviceError, *NonFiniteError, *DataError;
    PyTypeObject *ModelType, *RunType;
} bf_module_state;

bf_module_state *bf_state_of_type(PyTypeObject *tp);
bf_module_state *bf_state_of_module(PyObject *m);

/* Raise the Python exception for this thread's recorded error; returns NULL. */
PyObject *bf_raise(bf_module_state *st, bf_status s);
/* bf_raise; a BF_ERR_BUDGET / BF_ERR_NOMEM exception also gets .needed_bytes / .available_bytes (when needed > 0) */
PyObject *bf_raise_sized(bf_module_state *st, bf_status s, size_t needed, size_t available);

/* A zero-copy view of a NumPy array (any real dtype, any strides) for gathers.
 * `what` names the argument in errors. Returns 0 on success, -1 with an
 * exception set. Keeps no reference: the caller holds the array. */
int bf_src_from_array(bf_module_state *st, PyObject *arr, const char *what, bf_src *out);

/* Integers from Python (ints_py.c): v into *out when it is an integer in
 * [lo, hi] (seeds: [0, 2**64 - 1]); else -1 with a ValueError naming owner
 * (a layer, a function; may be NULL), what (the argument) and the value. */
int bf_py_int64(PyObject *v, const char *owner, const char *what, long long lo, long long hi, long long *out);
int bf_py_long(PyObject *v, const char *owner, const char *what, long lo, long hi, long *out);
int bf_py_int(PyObject *v, const char *owner, const char *what, int lo, int hi, int *out);
int bf_py_seed(PyObject *v, const char *owner, const char *what, unsigned long long *out);

int bf_model_type_init(PyObject *m, bf_module_state *st);
int bf_run_type_init(PyObject *m, bf_module_state *st);

#endif
