/* act_py.c - boundfit._core.activation(act_id, x, alpha, max_value,
 * threshold): an activation evaluated by the CPU kernels on a NumPy array
 * (what bf.activations.gelu(x) etc. return, as Keras's functions do). The
 * input is copied to a new float32 array and transformed in place, so the
 * kernel sees contiguous memory; softmax is over the last axis. */
#include <math.h>

#include "glue.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL BF_ARRAY_API
#include <numpy/arrayobject.h>

#include "cpu_ops.h"

PyObject *bf_py_activation(PyObject *self, PyObject *args) {
    int act;
    PyObject *x;
    bf_act_param p = {0.0f, INFINITY, 0.0f};
    if (!PyArg_ParseTuple(args, "iO|fff", &act, &x, &p.alpha, &p.max_value, &p.threshold)) return NULL;
    if (act < 0 || act > BF_ACT_LAST) return PyErr_Format(PyExc_ValueError, "unknown activation id %d", act);
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(x, NPY_FLOAT32, 0, 0, NPY_ARRAY_ENSURECOPY | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!a) return NULL;
    int nd = PyArray_NDIM(a);
    long n = (long)PyArray_SIZE(a);
    int C = nd ? (int)PyArray_DIM(a, nd - 1) : 1;
    float *v = (float *)PyArray_DATA(a);
    bf_status s = BF_OK;
    if (n > 0) {
        Py_BEGIN_ALLOW_THREADS
        if (bf_act_is_x((bf_act)act)) s = bf_cpu_actx_forward_serial(bf_cpu_backend(), v, v, (bf_act)act, &p, n);
        else s = bf_cpu_act_forward_serial(bf_cpu_backend(), v, v, (bf_act)act, n / (C ? C : 1), C ? C : 1);
        Py_END_ALLOW_THREADS
    }
    if (s != BF_OK) {
        Py_DECREF(a);
        return bf_raise(bf_state_of_module(self), s);
    }
    return (PyObject *)a;
}
