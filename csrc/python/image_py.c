/* image_py.c - boundfit._core.image_resize(src, dst, method): a uint8
 * (H, W, C) NumPy array resized into a float32 (th, tw, C) array the caller
 * owns (a row of a batch, a window of it, a transposed view: any strides),
 * as tf.image.resize does for 'bilinear' and 'nearest'; the GIL is released
 * while it runs, so the image folder data sets' worker threads resize in
 * parallel. Bad arguments are TypeError / ValueError naming the argument. */
#include <string.h>

#include "glue.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL BF_ARRAY_API
#include <numpy/arrayobject.h>

#include "image_resize.h"

/* arr's three strides in elements of `size` bytes; -1 with an exception when one is not a multiple. */
static int element_strides(PyArrayObject *arr, const char *what, ptrdiff_t size, ptrdiff_t out[3]) {
    for (int k = 0; k < 3; k++) {
        ptrdiff_t s = (ptrdiff_t)PyArray_STRIDE(arr, k);
        if (s % size) {
            PyErr_Format(PyExc_ValueError, "image_resize: %s is not aligned (stride %zd bytes on axis %d)", what,
                         (Py_ssize_t)s, k);
            return -1;
        }
        out[k] = s / size;
    }
    return 0;
}

static PyArrayObject *image_array(PyObject *obj, const char *what, int typenum, const char *dtype) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "image_resize: %s must be a NumPy array, got %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_TYPE(a) != typenum) {
        PyErr_Format(PyExc_TypeError, "image_resize: %s must be %s, got dtype %S", what, dtype,
                     (PyObject *)PyArray_DESCR(a));
        return NULL;
    }
    if (PyArray_NDIM(a) != 3) {
        PyErr_Format(PyExc_ValueError, "image_resize: %s must be (height, width, channels), got %d dimensions", what,
                     PyArray_NDIM(a));
        return NULL;
    }
    return a;
}

PyObject *bf_py_image_resize(PyObject *self, PyObject *args) {
    PyObject *src_obj, *dst_obj;
    const char *method;
    if (!PyArg_ParseTuple(args, "OOs", &src_obj, &dst_obj, &method)) return NULL;
    bf_resize_mode mode;
    if (!strcmp(method, "bilinear")) mode = BF_RESIZE_BILINEAR;
    else if (!strcmp(method, "nearest")) mode = BF_RESIZE_NEAREST;
    else return PyErr_Format(PyExc_ValueError, "image_resize: method must be 'bilinear' or 'nearest', got %R",
                             PyTuple_GET_ITEM(args, 2));
    PyArrayObject *src = image_array(src_obj, "src", NPY_UINT8, "uint8");
    if (!src) return NULL;
    PyArrayObject *dst = image_array(dst_obj, "dst", NPY_FLOAT32, "float32");
    if (!dst) return NULL;
    if (!PyArray_ISWRITEABLE(dst)) return PyErr_Format(PyExc_ValueError, "image_resize: dst is read-only");
    npy_intp *sd = PyArray_DIMS(src), *dd = PyArray_DIMS(dst);
    if (sd[2] != dd[2])
        return PyErr_Format(PyExc_ValueError, "image_resize: src has %zd channels, dst %zd", (Py_ssize_t)sd[2],
                            (Py_ssize_t)dd[2]);
    ptrdiff_t is[3], os[3];
    if (element_strides(src, "src", 1, is) || element_strides(dst, "dst", (ptrdiff_t)sizeof(float), os)) return NULL;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_cpu_image_resize((float *)PyArray_DATA(dst), (const unsigned char *)PyArray_DATA(src), (long)sd[0],
                            (long)sd[1], (long)sd[2], is, (long)dd[0], (long)dd[1], os, mode);
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}
