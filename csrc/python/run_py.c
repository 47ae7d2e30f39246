/* run_py.c - boundfit._core.Run: an opened run (reserved arenas) of a model.
 * train / evaluate / predict run chunks of steps with the GIL released; the
 * Python loop calls them repeatedly so Ctrl-C lands at a step boundary. */
#include <string.h>

#include "glue.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL BF_ARRAY_API
#include <numpy/arrayobject.h>

#include "backend_registry.h"
#include "model_py.h"

int bf_model_pull(ModelObject *mo) {
    RunObject *o = bf_weights_root(mo)->owner;
    if (!o || !o->open) return 0;
    bf_status s = bf_run_sync_model(&o->r);
    if (s != BF_OK) {
        bf_raise(bf_state_of_type(Py_TYPE(mo)), s);
        return -1;
    }
    return 0;
}

int bf_model_push(ModelObject *mo) {
    mo = bf_weights_root(mo);
    mo->wver++;
    RunObject *o = mo->owner;
    if (!o || !o->open) return 0;
    bf_status s = bf_run_load_model(&o->r);
    if (s != BF_OK) {
        bf_raise(bf_state_of_type(Py_TYPE(mo)), s);
        return -1;
    }
    o->wver = mo->wver;
    return 0;
}

/* a device run that is not the owner: its weights copy brought to the model's version */
static int refresh(RunObject *self) {
    ModelObject *mo = bf_weights_root(self->model);
    if (!self->r.on_device || mo->owner == self || self->wver == mo->wver) return 0;
    if (bf_model_pull(mo) < 0) return -1;
    bf_status s = bf_run_load_model(&self->r);
    if (s != BF_OK) {
        bf_raise(bf_state_of_type(Py_TYPE(self)), s);
        return -1;
    }
    self->wver = mo->wver;
    return 0;
}

PyObject *bf_run_new(ModelObject *model, bf_mode mode, int rows, const char *device, size_t host_budget,
                     size_t device_budget, unsigned long long seed, int weighted) {
    bf_module_state *st = bf_state_of_type(Py_TYPE(model));
    bf_backend *be;
    bf_status s = bf_backend_get(device, &be);
    if (s != BF_OK) return bf_raise(st, s);
    if (bf_model_pull(model) < 0) return NULL; /* a device run copies the weights as they are now */
    RunObject *self = (RunObject *)st->RunType->tp_alloc(st->RunType, 0);
    if (!self) return NULL;
    s = bf_run_plan(&self->r, &model->m, be, mode, rows, weighted);
    if (s == BF_OK) s = bf_run_open(&self->r, host_budget, device_budget);
    if (s != BF_OK) {
        Py_DECREF(self);
        return bf_raise(st, s);
    }
    self->r.dropout_seed = seed;
    self->model = model;
    Py_INCREF(model);
    model->busy++;
    self->open = 1;
    self->wver = bf_weights_root(model)->wver;
    if (mode == BF_MODE_TRAIN && self->r.on_device) bf_weights_root(model)->owner = self;
    return (PyObject *)self;
}

static void run_close(RunObject *self) {
    if (self->open) {
        bf_run_close(&self->r);
        self->open = 0;
        if (self->model) {
            self->model->busy--;
            if (bf_weights_root(self->model)->owner == self) bf_weights_root(self->model)->owner = NULL;
        }
    }
}

static void Run_dealloc(RunObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    run_close(self);
    bf_run_tables_free(&self->r);
    Py_XDECREF(self->model);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int need_open(RunObject *self) {
    if (!self->open) { PyErr_SetString(PyExc_RuntimeError, "the run is closed"); return -1; }
    return 0;
}

/* after a failure, weights on a device are copied back so the model keeps the
 * last completed step; a NonFiniteError carries step and layer */
static PyObject *run_error(RunObject *self, bf_status s) {
    bf_module_state *st = bf_state_of_type(Py_TYPE(self));
    bf_error saved = *bf_last_error();
    if (s != BF_ERR_DEVICE) bf_run_sync_model(&self->r);
    bf_set_error(&saved);
    bf_raise(st, s);
    if (s == BF_ERR_NONFINITE) {
        PyObject *type, *val, *tb;
        PyErr_Fetch(&type, &val, &tb);
        PyErr_NormalizeException(&type, &val, &tb);
        if (val) {
            bf_run *r = &self->r;
            PyObject *step = PyLong_FromLong(r->bad_step);
            PyObject *layer = r->bad_layer >= 0 ? PyUnicode_FromString(r->m->layers[r->bad_layer].name) : Py_NewRef(Py_None);
            PyObject *what = PyUnicode_FromString(r->bad_what ? r->bad_what : "loss");
            PyObject_SetAttrString(val, "step", step);
            PyObject_SetAttrString(val, "layer", layer);
            PyObject_SetAttrString(val, "what", what);
            Py_XDECREF(step);
            Py_XDECREF(layer);
            Py_XDECREF(what);
        }
        PyErr_Restore(type, val, tb);
    }
    return NULL;
}

static int parse_order(PyObject *order_obj, long n, PyArrayObject **order) {
    *order = NULL;
    if (order_obj == Py_None) return 0;
    *order = (PyArrayObject *)PyArray_FROMANY(order_obj, NPY_INT64, 1, 1, NPY_ARRAY_CARRAY_RO);
    if (!*order) return -1;
    if (PyArray_DIM(*order, 0) < n) {
        PyErr_Format(PyExc_ValueError, "order has %zd entries, needs %ld", (Py_ssize_t)PyArray_DIM(*order, 0), n);
        Py_CLEAR(*order);
        return -1;
    }
    const int64_t *o = PyArray_DATA(*order);
    for (long i = 0; i < n; i++)
        if (o[i] < 0) { PyErr_Format(PyExc_ValueError, "order[%ld] is negative", i); Py_CLEAR(*order); return -1; }
    return 0;
}

/* 1 when an array's bytes are a memory-mapped file's (np.memmap, np.load(mmap_mode=...), a view of one):
 * its base chain ends in an mmap.mmap. The gather then reads it through the kernel (gather.h). */
static int is_mapped(PyObject *obj) {
    for (int depth = 0; obj && depth < 64; depth++) {
        if (strcmp(Py_TYPE(obj)->tp_name, "mmap.mmap") == 0) return 1;
        if (!PyArray_Check(obj)) return 0;
        obj = PyArray_BASE((PyArrayObject *)obj);
    }
    return 0;
}

static int src_from_array(bf_module_state *st, PyObject *obj, const char *what, bf_src *out) {
    if (bf_src_from_array(st, obj, what, out) < 0) return -1;
    out->mapped = is_mapped(obj);
    return 0;
}

/* x or y: one array, or a tuple / list of arrays (one per model input, or per
 * output's labels). *hold keeps a tuple of them alive while the GIL is
 * released (a list could change meanwhile). */
static int parse_srcs(bf_module_state *st, PyObject *obj, const char *what, bf_srcs *out, PyObject **hold) {
    *hold = NULL;
    memset(out, 0, sizeof *out);
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        out->n = 1;
        return src_from_array(st, obj, what, &out->src[0]);
    }
    PyObject *t = PySequence_Tuple(obj);
    if (!t) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n < 1 || n > BF_SRCS_MAX) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "%s: between 1 and %d arrays, got %zd", what, BF_SRCS_MAX, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        char name[32];
        snprintf(name, sizeof name, "%s[%zd]", what, k);
        if (src_from_array(st, PyTuple_GET_ITEM(t, k), name, &out->src[k]) < 0) {
            Py_DECREF(t);
            return -1;
        }
    }
    out->n = (int)n;
    *hold = t;
    return 0;
}

static PyObject *run_steps(RunObject *self, PyObject *args, int train) {
    PyObject *x_obj, *y_obj, *order_obj, *sw_obj = Py_None, *cw_obj = Py_None, *nums[4];
    long n, batch, first, nsteps;
    const char *what = train ? "train" : "evaluate";
    bf_module_state *st = bf_state_of_type(Py_TYPE(self));
    if (!PyArg_ParseTuple(args, "OOOOOOO|OO", &x_obj, &y_obj, &order_obj, &nums[0], &nums[1], &nums[2], &nums[3], &sw_obj,
                          &cw_obj))
        return NULL;
    if (bf_py_long(nums[0], what, "n", 0, LONG_MAX, &n) < 0 || bf_py_long(nums[1], what, "batch_size", 1, INT_MAX, &batch) < 0 ||
        bf_py_long(nums[2], what, "first_step", 0, LONG_MAX, &first) < 0 ||
        bf_py_long(nums[3], what, "steps", 0, LONG_MAX, &nsteps) < 0)
        return NULL;
    if (need_open(self) < 0) return NULL;
    bf_srcs x, y;
    bf_src sw;
    PyObject *xh = NULL, *yh = NULL, *ret = NULL;
    PyArrayObject *order = NULL;
    if (parse_srcs(st, x_obj, "x", &x, &xh) < 0 || parse_srcs(st, y_obj, "y", &y, &yh) < 0) goto done;
    if (bf_srcs_rows(&x) < n || bf_srcs_rows(&y) < n) {
        PyErr_Format(st->DataError, "x and y must hold at least %ld rows", n);
        goto done;
    }
    if (sw_obj != Py_None) {
        if (src_from_array(st, sw_obj, "sample_weight", &sw) < 0) goto done;
        if (sw.shape[0] < n) {
            PyErr_Format(st->DataError, "sample_weight must hold at least %ld rows", n);
            goto done;
        }
    }
    /* class weights: a float32 table by class id, used in place for this call */
    if (cw_obj != Py_None && (!PyArray_Check(cw_obj) || PyArray_TYPE((PyArrayObject *)cw_obj) != NPY_FLOAT32 ||
                              PyArray_NDIM((PyArrayObject *)cw_obj) != 1 ||
                              !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)cw_obj))) {
        PyErr_Format(PyExc_TypeError, "class_weight table must be a 1-D C-contiguous float32 array");
        goto done;
    }
    if ((sw_obj != Py_None || cw_obj != Py_None) && !self->r.weighted) {
        PyErr_Format(PyExc_ValueError, "this run was opened without sample weights (weighted=False)");
        goto done;
    }
    if (parse_order(order_obj, n, &order) < 0) goto done;
    const int64_t rows = bf_srcs_rows(&x) < bf_srcs_rows(&y) ? bf_srcs_rows(&x) : bf_srcs_rows(&y);
    for (long i = 0; order && i < n; i++)
        if (((const int64_t *)PyArray_DATA(order))[i] >= rows) {
            PyErr_Format(PyExc_ValueError, "order[%ld] is out of range", i);
            goto done;
        }
    if (refresh(self) < 0) goto done;
    bf_totals tot = {0};
    bf_status s;
    const int64_t *o = order ? PyArray_DATA(order) : NULL;
    s = bf_run_set_weights(&self->r, sw_obj != Py_None ? &sw : NULL,
                           cw_obj != Py_None ? (const float *)PyArray_DATA((PyArrayObject *)cw_obj) : NULL,
                           cw_obj != Py_None ? (long)PyArray_DIM((PyArrayObject *)cw_obj, 0) : 0);
    if (s != BF_OK) {
        bf_raise(st, s);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    s = train ? bf_run_train(&self->r, &x, &y, o, n, batch, first, nsteps, &tot)
              : bf_run_evaluate(&self->r, &x, &y, o, n, batch, first, nsteps, &tot);
    Py_END_ALLOW_THREADS
    bf_run_set_weights(&self->r, NULL, NULL, 0); /* the arrays are the caller's: not kept past the call */
    if (train) self->wver = ++bf_weights_root(self->model)->wver; /* on the device (owner) or in place (cpu) */
    if (s != BF_OK) {
        run_error(self, s);
        goto done;
    }
    int no = self->model->m.n_outputs;
    PyObject *ol = PyTuple_New(no);
    for (int k = 0; ol && k < no; k++) PyTuple_SET_ITEM(ol, k, PyFloat_FromDouble(tot.out_loss[k]));
    if (ol) ret = Py_BuildValue("(dlldN)", tot.loss_sum, tot.rows, tot.steps, tot.wait_seconds, ol);
done:
    Py_XDECREF(order);
    Py_XDECREF(xh);
    Py_XDECREF(yh);
    return ret;
}

static PyObject *Run_train(RunObject *self, PyObject *args) { return run_steps(self, args, 1); }
static PyObject *Run_evaluate(RunObject *self, PyObject *args) { return run_steps(self, args, 0); }

static PyObject *Run_predict(RunObject *self, PyObject *args) {
    PyObject *x_obj, *out_obj, *nums[3];
    long start, n, out_start;
    bf_module_state *st = bf_state_of_type(Py_TYPE(self));
    if (!PyArg_ParseTuple(args, "OOOOO", &x_obj, &out_obj, &nums[0], &nums[1], &nums[2])) return NULL;
    if (bf_py_long(nums[0], "predict", "start", 0, LONG_MAX, &start) < 0 ||
        bf_py_long(nums[1], "predict", "n", 0, LONG_MAX, &n) < 0 ||
        bf_py_long(nums[2], "predict", "out_start", 0, LONG_MAX, &out_start) < 0)
        return NULL;
    if (need_open(self) < 0) return NULL;
    bf_srcs x;
    PyObject *xh = NULL;
    if (parse_srcs(st, x_obj, "x", &x, &xh) < 0) return NULL;
    if (!PyArray_Check(out_obj) || PyArray_TYPE((PyArrayObject *)out_obj) != NPY_FLOAT32 ||
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)out_obj) || !PyArray_ISWRITEABLE((PyArrayObject *)out_obj)) {
        Py_XDECREF(xh);
        return PyErr_Format(PyExc_TypeError, "out must be a writable C-contiguous float32 array");
    }
    PyArrayObject *out = (PyArrayObject *)out_obj;
    long C = bf_model_out_size(&self->model->m);
    const long out_cap = C > 0 ? (long)(PyArray_SIZE(out) / C) : 0; /* rows out holds (no product that could wrap) */
    if (n > bf_srcs_rows(&x) || start > bf_srcs_rows(&x) - n || n > out_cap || out_start > out_cap - n) {
        Py_XDECREF(xh);
        return PyErr_Format(PyExc_ValueError, "predict: rows [%ld, %ld) out of range", start, start + n);
    }
    float *dst = (float *)PyArray_DATA(out);
    if (refresh(self) < 0) {
        Py_XDECREF(xh);
        return NULL;
    }
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_run_predict(&self->r, dst, out_cap, out_start, &x, start, n);
    Py_END_ALLOW_THREADS
    Py_XDECREF(xh);
    if (s != BF_OK) return run_error(self, s);
    Py_RETURN_NONE;
}

static PyObject *Run_close(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (self->open) {
        bf_status s = bf_run_sync_model(&self->r);
        run_close(self);
        if (s != BF_OK) return bf_raise(bf_state_of_type(Py_TYPE(self)), s);
    }
    Py_RETURN_NONE;
}

/* the device run's weights and optimizer state = rank 0's, over NCCL */
static PyObject *Run_dist_broadcast(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (need_open(self) < 0) return NULL;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_run_dist_bcast(&self->r);
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_type(Py_TYPE(self)), s);
    if (self->r.on_device) self->wver = ++bf_weights_root(self->model)->wver; /* the device copy changed */
    Py_RETURN_NONE;
}

static PyObject *Run_reset_metrics(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (need_open(self) < 0) return NULL;
    bf_run_reset_metrics(&self->r);
    Py_RETURN_NONE;
}

/* [value of each metric over the steps since the last reset] */
static PyObject *Run_metric_results(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (need_open(self) < 0) return NULL;
    double v[BF_MAX_METRICS] = {0};
    int n = self->r.nmv ? self->r.m->nmetrics : 0;
    bf_run_metric_results(&self->r, v);
    PyObject *out = PyList_New(n);
    for (int i = 0; out && i < n; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(v[i]));
    return out;
}

/* the metric statistics summed since the last reset (their raw sums, one
 * float per value): moved from one run to another when a fit changes the
 * batch shape (engine/buckets.py), so that an epoch's metrics span every run */
static PyObject *Run_metric_sums(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (need_open(self) < 0) return NULL;
    PyObject *out = PyList_New(self->r.nmv);
    for (long i = 0; out && i < self->r.nmv; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(self->r.macc[i]));
    return out;
}

/* metric_stats(q): metric q's own statistics since the last reset (its slice of metric_sums), from which
 * python/boundfit/metrics computes a SUMS metric's result as Keras's result() does (F-scores, R2Score, IoU) */
static PyObject *Run_metric_stats(RunObject *self, PyObject *arg) {
    if (need_open(self) < 0) return NULL;
    long q = PyLong_AsLong(arg);
    if (q == -1 && PyErr_Occurred()) return NULL;
    if (!self->r.nmv || q < 0 || q >= self->r.m->nmetrics)
        return PyErr_Format(PyExc_IndexError, "metric_stats: no metric %ld", q);
    const long n = bf_metric_nvalues(&self->r.m->metrics[q]);
    PyObject *out = PyList_New(n);
    for (long i = 0; out && i < n; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(self->r.macc[self->r.moff[q] + i]));
    return out;
}

/* set_metric_sums([sums]): replace the metric statistics (all or nothing) */
static PyObject *Run_set_metric_sums(RunObject *self, PyObject *arg) {
    if (need_open(self) < 0) return NULL;
    PyObject *seq = PySequence_Fast(arg, "set_metric_sums: a list of floats");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != (Py_ssize_t)self->r.nmv) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "set_metric_sums: %zd values, the run's metrics hold %ld", n,
                            (long)self->r.nmv);
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* checked first: all or nothing */
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) self->r.macc[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

/* sync_model(): a device run's weights and optimizer slots back into the
 * model's host arrays (a no-op on the CPU, where they coincide) */
static PyObject *Run_sync_model(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (need_open(self) < 0) return NULL;
    bf_status s = bf_run_sync_model(&self->r);
    if (s != BF_OK) return run_error(self, s);
    Py_RETURN_NONE;
}

/* load_model(): the model's host weights and slots onto the run's device (after set_weights) */
static PyObject *Run_load_model(RunObject *self, PyObject *noargs) {
    (void)noargs;
    if (need_open(self) < 0) return NULL;
    bf_status s = bf_run_load_model(&self->r);
    if (s != BF_OK) return run_error(self, s);
    Py_RETURN_NONE;
}

static PyObject *Run_stats(RunObject *self, PyObject *noargs) {
    (void)noargs;
    bf_run *r = &self->r;
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:s}", "run_reserved", (Py_ssize_t)r->arena.capacity, "run_high_water",
                         (Py_ssize_t)r->arena.high_water, "host_slots_high_water", (Py_ssize_t)r->host_arena.high_water,
                         "optimizer_high_water", (Py_ssize_t)r->m->opt_state.high_water, "where", r->arena.where);
}

static PyMethodDef Run_methods[] = {
    {"train", (PyCFunction)Run_train, METH_VARARGS,
     "train(x, y, order, n, batch, first_step, nsteps[, sample_weight, class_weight_table]) -> (loss_sum, rows, steps, "
     "wait_s, per-output loss sums); x, y: an array or a tuple of arrays (one per input / output), used in place"},
    {"evaluate", (PyCFunction)Run_evaluate, METH_VARARGS,
     "evaluate(x, y, order, n, batch, first_step, nsteps[, sample_weight, class_weight_table])"},
    {"reset_metrics", (PyCFunction)Run_reset_metrics, METH_NOARGS, "zero the metric statistics (epoch start)"},
    {"dist_broadcast", (PyCFunction)Run_dist_broadcast, METH_NOARGS,
     "data parallel on a device: rank 0's weights and optimizer state over NCCL"},
    {"metric_results", (PyCFunction)Run_metric_results, METH_NOARGS, "metric values since the last reset"},
    {"predict", (PyCFunction)Run_predict, METH_VARARGS, "predict(x, out, start, n, out_start)"},
    {"close", (PyCFunction)Run_close, METH_NOARGS, "copy device weights back and release the arenas"},
    {"stats", (PyCFunction)Run_stats, METH_NOARGS, "arena statistics"},
    {"metric_sums", (PyCFunction)Run_metric_sums, METH_NOARGS, "the raw metric statistics since the last reset"},
    {"set_metric_sums", (PyCFunction)Run_set_metric_sums, METH_O, "replace the raw metric statistics"},
    {"metric_stats", (PyCFunction)Run_metric_stats, METH_O, "one metric's raw statistics since the last reset"},
    {"sync_model", (PyCFunction)Run_sync_model, METH_NOARGS, "device weights and slots back to the model's arrays"},
    {"load_model", (PyCFunction)Run_load_model, METH_NOARGS, "the model's weights and slots onto the device"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Run_slots[] = {
    {Py_tp_dealloc, Run_dealloc},
    {Py_tp_methods, Run_methods},
    {Py_tp_doc, "an opened run of a Model (made by Model.open_run)"},
    {0, NULL},
};

static PyType_Spec Run_spec = {"boundfit._core.Run", sizeof(RunObject), 0, Py_TPFLAGS_DEFAULT, Run_slots};

int bf_run_type_init(PyObject *m, bf_module_state *st) {
    st->RunType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Run_spec, NULL);
    if (!st->RunType) return -1;
    /* host bytes of one Run object (a bf_run), for the plan (engine/memory.py); its tables (buffer table, per-node
     * state) are the plan's tables_bytes */
    if (PyModule_AddIntConstant(m, "RUN_OBJECT_BYTES", (long)sizeof(RunObject)) < 0) return -1;
    return PyModule_AddObjectRef(m, "Run", (PyObject *)st->RunType);
}
