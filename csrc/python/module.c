/* module.c - boundfit._core: multi-phase init, module state (exception
 * classes from boundfit.errors), and module-level functions (fault injection,
 * BLAS threads, build information). */
#include <limits.h>

#include "glue.h"

#define PY_ARRAY_UNIQUE_SYMBOL BF_ARRAY_API
#include <numpy/arrayobject.h>

#include "arena.h"
#include "backend_registry.h"
#include "blas.h"
#include "blas_probe.h"
#include "cpu_ops.h"
#include "par.h"
#include "model.h"
#include "emap_ops.h"
#include "layer_registry.h"

bf_module_state *bf_state_of_module(PyObject *m) { return (bf_module_state *)PyModule_GetState(m); }

static PyObject *fault_inject(PyObject *self, PyObject *args) {
    (void)self;
    long n;
    PyObject *n_obj;
    if (!PyArg_ParseTuple(args, "O", &n_obj) || bf_py_long(n_obj, "fault_inject", "n", 0, LONG_MAX, &n) < 0) return NULL;
    bf_fault_set(n);
    Py_RETURN_NONE;
}

/* a counter of the core, no arguments: name() -> conv(fn()) */
#define GETTER(name, conv, fn)                                 \
    static PyObject *name(PyObject *self, PyObject *noargs) { \
        (void)self;                                            \
        (void)noargs;                                          \
        return conv(fn());                                     \
    }

GETTER(fault_count, PyLong_FromLong, bf_fault_count)
GETTER(live_reservations, PyLong_FromLong, bf_arena_live)
GETTER(kept_bytes, PyLong_FromSize_t, bf_host_kept_bytes)
GETTER(kept_taken, PyLong_FromSize_t, bf_host_kept_taken)

static PyObject *drop_kept(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    bf_host_drop_kept();
    Py_RETURN_NONE;
}

static PyObject *poison_kept(PyObject *self, PyObject *args) {
    (void)self;
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    bf_host_poison_kept(on);
    Py_RETURN_NONE;
}

GETTER(emu_waits, PyLong_FromLong, bf_emu_waits)

static PyObject *set_num_threads(PyObject *self, PyObject *args) {
    (void)self;
    int n;
    PyObject *n_obj;
    if (!PyArg_ParseTuple(args, "O", &n_obj) || bf_py_int(n_obj, "set_num_threads", "num_threads", 1, INT_MAX, &n) < 0)
        return NULL;
    bf_par_set_threads(n);
    Py_RETURN_NONE;
}

static PyObject *blas_probe(PyObject *self, PyObject *args) {
    int M, N, K;
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2]) || bf_py_int(o[0], "blas_probe", "M", 1, INT_MAX, &M) < 0 ||
        bf_py_int(o[1], "blas_probe", "N", 1, INT_MAX, &N) < 0 || bf_py_int(o[2], "blas_probe", "K", 1, INT_MAX, &K) < 0)
        return NULL;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_cpu_blas_probe(M, N, K);
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

static PyObject *build_info(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return Py_BuildValue("{s:s,s:i,s:i,s:s}", "blas", bf_openblas_get_config(), "blas_threads",
                         bf_par_threads(), "cuda_built", BF_BUILT_WITH_CUDA,
                         "compiler", __VERSION__);
}

static PyObject *set_module_dir(PyObject *self, PyObject *args) {
    (void)self;
    const char *dir, *preload = "";
    if (!PyArg_ParseTuple(args, "s|s", &dir, &preload)) return NULL;
    bf_backend_set_module_dir(dir);
    bf_backend_set_cuda_preload(preload);
    Py_RETURN_NONE;
}

static PyObject *device_mem_info(PyObject *self, PyObject *args) {
    const char *device;
    if (!PyArg_ParseTuple(args, "s", &device)) return NULL;
    bf_backend *be;
    size_t free_b = 0, total_b = 0;
    bf_status s = bf_backend_get(device, &be);
    if (s == BF_OK) s = bf_backend_mem_info(be, &free_b, &total_b);
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    return Py_BuildValue("(nn)", (Py_ssize_t)free_b, (Py_ssize_t)total_b);
}

static PyObject *set_tf32(PyObject *self, PyObject *args) {
    (void)self;
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    bf_backend_set_tf32(on);
    Py_RETURN_NONE;
}

static PyObject *get_tf32(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return PyBool_FromLong(bf_backend_tf32());
}

static PyObject *cuda_report(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    static char buf[16384];
    bf_backend_cuda_report(buf, sizeof buf);
    return PyUnicode_FromString(buf);
}

PyObject *bf_py_bench_sgemm(PyObject *self, PyObject *args);
PyObject *bf_py_bench_adam(PyObject *self, PyObject *args);

PyObject *bf_py_activation(PyObject *self, PyObject *args); /* act_py.c */
PyObject *bf_py_image_resize(PyObject *self, PyObject *args); /* image_py.c */
PyObject *bf_py_output_shape(PyObject *self, PyObject *args); /* infer_py.c */

static PyMethodDef module_methods[] = {
    {"activation", bf_py_activation, METH_VARARGS,
     "activation(act_id, x, alpha=0, max_value=inf, threshold=0) -> float32 array (the CPU kernel)"},
    {"image_resize", bf_py_image_resize, METH_VARARGS,
     "image_resize(src, dst, method): uint8 (H, W, C) src resized into float32 (th, tw, C) dst, tf.image.resize's 'bilinear' or 'nearest'"},
    {"output_shape", bf_py_output_shape, METH_VARARGS,
     "output_shape(spec, shapes) -> a layer's per-sample output shape for its inputs' per-sample shapes"},
    {"bench_sgemm", bf_py_bench_sgemm, METH_VARARGS, "bench_sgemm(M, N, K, iters) -> seconds per sgemm"},
    {"bench_adam", bf_py_bench_adam, METH_VARARGS, "bench_adam(n, iters) -> seconds per Adam update"},
    {"set_module_dir", set_module_dir, METH_VARARGS, "set_module_dir(dir, preload=''): the package directory (where _cuda.so is) and the ':'-separated CUDA wheel libraries to load before it"},
    {"device_mem_info", device_mem_info, METH_VARARGS, "device_mem_info(device) -> (free, total) bytes"},
    {"set_tf32", set_tf32, METH_VARARGS, "set_tf32(on): float32 GEMMs / convolutions of later runs may use TF32"},
    {"get_tf32", get_tf32, METH_NOARGS, "whether float32 GEMMs / convolutions may use TF32"},
    {"cuda_report", cuda_report, METH_NOARGS, "the CUDA driver / runtime / cuDNN / GPU report"},
    {"fault_inject", fault_inject, METH_VARARGS,
     "fault_inject(n): make the n-th engine allocation from now fail (0 = off); resets the count"},
    {"fault_count", fault_count, METH_NOARGS, "allocation attempts since the last fault_inject()"},
    {"live_reservations", live_reservations, METH_NOARGS, "arena reservations currently held (leak checks)"},
    {"kept_bytes", kept_bytes, METH_NOARGS, "bytes of the kept host run arenas (0 when none)"},
    {"kept_taken", kept_taken, METH_NOARGS, "bytes reused from kept run arenas, resident when taken, so far (a counter)"},
    {"drop_kept", drop_kept, METH_NOARGS, "unmap the kept host run arenas"},
    {"poison_kept", poison_kept, METH_VARARGS, "tests: fill a kept run arena with NaN when it is reused"},
    {"emu_waits", emu_waits, METH_NOARGS, "calls on device 'emu' so far that make the host wait for a GPU"},
    {"set_num_threads", set_num_threads, METH_VARARGS, "set the number of BLAS threads"},
    {"blas_probe", blas_probe, METH_VARARGS,
     "blas_probe(M, N, K): one GEMM over zero pages (brings OpenBLAS's per-thread buffers up)"},
    {"build_info", build_info, METH_NOARGS, "build configuration: BLAS, CUDA"},
    {NULL, NULL, 0, NULL},
};

int bf_dist_py_init(PyObject *m); /* dist_py.c */


/* UNARY_OPS / BINARY_OPS: the elementwise primitives' keras.ops names, a code's index (core/emap_ops.h) */
#define BF_EMAP_X_NAME(NAME, name) name,
static const char *const unary_names[] = {BF_UNARY_OPS(BF_EMAP_X_NAME)};
static const char *const binary_names[] = {BF_BINARY_OPS(BF_EMAP_X_NAME)};

static int add_names(PyObject *m, const char *key, const char *const *names, int n) {
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t && k < n; k++) {
        PyObject *v = PyUnicode_FromString(names[k]);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    if (!t) return -1;
    if (PyModule_AddObject(m, key, t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

static int add_emap_ops(PyObject *m) {
    if (add_names(m, "UNARY_OPS", unary_names, BF_UN_COUNT) < 0) return -1;
    return add_names(m, "BINARY_OPS", binary_names, BF_BIN_COUNT);
}

static int module_exec(PyObject *m) {
    if (PyArray_ImportNumPyAPI() < 0) return -1;
    bf_module_state *st = bf_state_of_module(m);
    PyObject *errors = PyImport_ImportModule("boundfit.errors");
    if (!errors) return -1;
    st->BoundfitError = PyObject_GetAttrString(errors, "BoundfitError");
    st->MemoryBudgetError = PyObject_GetAttrString(errors, "MemoryBudgetError");
    st->DeviceError = PyObject_GetAttrString(errors, "DeviceError");
    st->NonFiniteError = PyObject_GetAttrString(errors, "NonFiniteError");
    st->DataError = PyObject_GetAttrString(errors, "DataError");
    Py_DECREF(errors);
    if (!st->BoundfitError || !st->MemoryBudgetError || !st->DeviceError || !st->NonFiniteError || !st->DataError)
        return -1;
    PyObject *kinds = PyDict_New();  /* LAYER_KINDS: name -> bf_layer_kind */
    if (!kinds) return -1;
    for (int k = 0; k < bf_layer_kind_count; k++) {
        PyObject *v = bf_layer_kind_names[k] ? PyLong_FromLong(k) : NULL;
        if (bf_layer_kind_names[k] && (!v || PyDict_SetItemString(kinds, bf_layer_kind_names[k], v) < 0)) {
            Py_XDECREF(v);
            Py_DECREF(kinds);
            return -1;
        }
        Py_XDECREF(v);
    }
    if (PyModule_AddObject(m, "LAYER_KINDS", kinds) < 0) {
        Py_DECREF(kinds);
        return -1;
    }
    if (add_emap_ops(m) < 0) return -1;
    if (PyModule_AddIntConstant(m, "MAX_LAYERS", BF_MAX_LAYERS) < 0) return -1; /* layer calls per model */
    /* the other fixed limits of a model (model.h) */
    if (PyModule_AddIntConstant(m, "MAX_INPUTS", BF_MAX_INPUTS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_OUTPUTS", BF_MAX_OUTPUTS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_NODE_INPUTS", BF_MAX_NODE_IN) < 0 ||
        PyModule_AddIntConstant(m, "MAX_NODE_INPUTS_TOTAL", BF_MAX_EDGES) < 0 ||
        PyModule_AddIntConstant(m, "MAX_RANK", BF_MAX_RANK) < 0)
        return -1;
    if (bf_model_type_init(m, st) < 0) return -1;
    if (bf_run_type_init(m, st) < 0) return -1;
    if (bf_dist_py_init(m) < 0) return -1; /* [dist hook] dist_py.c: distributed collectives */
    return 0;
}

static int module_traverse(PyObject *m, visitproc visit, void *arg) {
    bf_module_state *st = bf_state_of_module(m);
    Py_VISIT(st->BoundfitError);
    Py_VISIT(st->MemoryBudgetError);
    Py_VISIT(st->DeviceError);
    Py_VISIT(st->NonFiniteError);
    Py_VISIT(st->DataError);
    Py_VISIT(st->ModelType);
    Py_VISIT(st->RunType);
    return 0;
}

static int module_clear(PyObject *m) {
    bf_module_state *st = bf_state_of_module(m);
    Py_CLEAR(st->BoundfitError);
    Py_CLEAR(st->MemoryBudgetError);
    Py_CLEAR(st->DeviceError);
    Py_CLEAR(st->NonFiniteError);
    Py_CLEAR(st->DataError);
    Py_CLEAR(st->ModelType);
    Py_CLEAR(st->RunType);
    return 0;
}

static void module_free(void *m) { module_clear((PyObject *)m); }

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "boundfit._core",
    .m_doc = "boundfit's C engine: models, memory plans, arenas, training steps",
    .m_size = sizeof(bf_module_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&module_def); }
