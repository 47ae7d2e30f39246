/* model_py.c - boundfit._core.Model: a model graph held by the engine.
 * Nodes come in as dicts built by python/boundfit/layers (with "inputs":
 * tensor ids, "share": the node whose weights it uses, "trainable"; without
 * "inputs" the nodes form a chain); weights live in the
 * model's host arena, checked against host_budget before it is mapped;
 * plan() reports a run's memory without allocating;
 * open_run() reserves it. */
#include <limits.h>
#include <string.h>

#include "glue.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL BF_ARRAY_API
#include <numpy/arrayobject.h>

#include "backend_registry.h"
#include "bufs.h"
#include "model_py.h"
#include "spec_py.h"
#include "run.h"
#include "timeline.h"

bf_module_state *bf_state_of_type(PyTypeObject *tp) { return (bf_module_state *)PyType_GetModuleState(tp); }

/* weights_of = (Model, [node of that model per node, -1: none]): self's weights are that model's */
static int borrow_weights(ModelObject *self, PyObject *weights_of) {
    bf_module_state *st = bf_state_of_type(Py_TYPE(self));
    PyObject *src, *nodes;
    if (!PyArg_ParseTuple(weights_of, "O!O;weights_of must be (Model, [node indices])", st->ModelType, &src, &nodes))
        return -1;
    ModelObject *base = bf_weights_root((ModelObject *)src);
    PyObject *seq = PySequence_Fast(nodes, "weights_of: the node indices must be a list");
    if (!seq) return -1;
    int *map = self->m.work; /* (nlayers) of the model's scratch; bf_model_borrow_weights uses the rest */
    if (PySequence_Fast_GET_SIZE(seq) != self->m.nlayers) {
        PyErr_Format(PyExc_ValueError, "weights_of: %d node indices expected, got %zd", self->m.nlayers,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return -1;
    }
    for (int i = 0; i < self->m.nlayers; i++)
        if (bf_py_int(PySequence_Fast_GET_ITEM(seq, i), "weights_of", "a node index", -1, BF_MAX_LAYERS, &map[i]) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    bf_status s = bf_model_borrow_weights(&self->m, &base->m, map);
    if (s != BF_OK) { bf_raise(st, s); return -1; }
    Py_INCREF(base);
    self->base = base;
    return 0;
}

static PyObject *Model_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"layers", "input_shape", "seed", "input_shapes", "outputs", "host_budget", "weights_of",
                             NULL};
    PyObject *layers, *in_shape, *in_shapes = Py_None, *outputs = Py_None, *seed_obj = NULL, *hb_obj = NULL;
    PyObject *weights_of = Py_None; /* (Model, [its node per node, -1: none]): borrow that model's weights */
    unsigned long long seed = 0;
    long long budget = 0; /* host bytes the weights may take; 0: no limit */
    bf_module_state *st = bf_state_of_type(tp);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOOO", kwlist, &layers, &in_shape, &seed_obj, &in_shapes, &outputs,
                                     &hb_obj, &weights_of))
        return NULL;
    if (seed_obj && bf_py_seed(seed_obj, "Model", "seed", &seed) < 0) return NULL;
    if (hb_obj && bf_py_int64(hb_obj, "Model", "host_budget", 0, PY_SSIZE_T_MAX, &budget) < 0) return NULL;
    PyObject *seq = PySequence_Fast(layers, "layers must be a list");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > BF_MAX_LAYERS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError,
                            "layers: %zd layer calls, at most %d are supported (boundfit._core.MAX_LAYERS); give layers "
                            "their activation= instead of separate Activation layers, or split the model",
                            n, BF_MAX_LAYERS);
    }
    long edges = 0; /* the nodes' input ids, as bf_parse_layer will count them (it refuses what is not a sequence) */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i), *ins = PyDict_Check(d) ? PyDict_GetItemString(d, "inputs") : NULL;
        Py_ssize_t k = ins && ins != Py_None ? PyObject_Length(ins) : 1;
        if (k < 0) { PyErr_Clear(); k = BF_MAX_NODE_IN; } /* no length (an iterable): room for the most a node takes */
        edges += k > 1 ? k : 1;
    }
    if (edges > BF_MAX_EDGES) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "layers: the model's nodes take %ld input tensors in all, at most %d "
                            "(boundfit._core.MAX_NODE_INPUTS_TOTAL); split the model", edges, BF_MAX_EDGES);
    }
    ModelObject *self = (ModelObject *)tp->tp_alloc(tp, 0);
    if (!self) { Py_DECREF(seq); return NULL; }
    bf_model *m = &self->m;
    bf_status s = bf_model_tables_reserve(m, (int)n, (int)n + BF_MAX_INPUTS, (int)edges);
    if (s != BF_OK) { bf_raise(st, s); goto fail; }
    m->nlayers = (int)n;
    m->seed = seed;
    for (Py_ssize_t i = 0; i < n; i++) { /* each node's input ids in turn from the model's pool */
        bf_layer *L = &m->layers[i];
        if (bf_parse_layer(PySequence_Fast_GET_ITEM(seq, i), L, m->in_pool + m->n_edges, m->cap_edges - m->n_edges) < 0)
            goto fail;
        m->n_edges += L->nin > 1 ? L->nin : 1;
    }
    Py_DECREF(seq);
    seq = NULL;
    if (in_shapes != Py_None) { /* several inputs */
        PyObject *t = PySequence_Tuple(in_shapes);
        if (!t) goto fail;
        Py_ssize_t ni = PyTuple_GET_SIZE(t);
        if (ni < 1 || ni > BF_MAX_INPUTS) {
            Py_DECREF(t);
            PyErr_Format(PyExc_ValueError, "a model takes 1 to %d inputs (boundfit._core.MAX_INPUTS), got %zd",
                         BF_MAX_INPUTS, ni);
            goto fail;
        }
        for (Py_ssize_t k = 0; k < ni; k++)
            if (bf_parse_shape(PyTuple_GET_ITEM(t, k), "input_shape", &m->in_ranks[k], m->in_shapes[k], 0) < 0) {
                Py_DECREF(t);
                goto fail;
            }
        m->n_inputs = (int)ni;
        Py_DECREF(t);
    } else if (bf_parse_shape(in_shape, "input_shape", &m->in_rank, m->in_shape, 0) < 0) goto fail;
    if (outputs != Py_None) {
        PyObject *t = PySequence_Tuple(outputs);
        if (!t) goto fail;
        Py_ssize_t no = PyTuple_GET_SIZE(t);
        if (no < 1 || no > BF_MAX_OUTPUTS) {
            Py_DECREF(t);
            PyErr_Format(PyExc_ValueError, "a model has 1 to %d outputs (boundfit._core.MAX_OUTPUTS), got %zd",
                         BF_MAX_OUTPUTS, no);
            goto fail;
        }
        for (Py_ssize_t k = 0; k < no; k++)
            if (bf_py_int(PyTuple_GET_ITEM(t, k), "Model", "outputs", 0, INT_MAX, &m->out_t[k]) < 0) {
                Py_DECREF(t);
                goto fail;
            }
        m->n_outputs = (int)no;
        Py_DECREF(t);
    }
    s = bf_model_infer(m);
    if (s != BF_OK) { bf_raise(st, s); goto fail; }
    if (weights_of != Py_None) {
        if (borrow_weights(self, weights_of) < 0) goto fail;
        return (PyObject *)self;
    }
    s = bf_model_alloc_weights(m, (size_t)budget);
    if (s != BF_OK) { /* a budget refusal carries its numbers */
        if (s == BF_ERR_BUDGET) bf_raise_sized(st, s, bf_model_weight_bytes(m), (size_t)budget);
        else bf_raise(st, s);
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_XDECREF(seq);
    Py_DECREF(self);
    return NULL;
}

static void Model_dealloc(ModelObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    bf_run_tables_free(&self->scratch);
    bf_model_free(&self->m);
    Py_CLEAR(self->base);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *shape_tuple(int rank, const int *shape) {
    PyObject *t = PyTuple_New(rank);
    for (int i = 0; t && i < rank; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLong(shape[i]));
    return t;
}

static PyObject *Model_weights_base(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    PyObject *b = self->base ? (PyObject *)self->base : Py_None;
    Py_INCREF(b);
    return b;
}

/* [(node name, output shape, [(param name, shape, trainable)])]; a node that
 * shares another's weights lists none (they are listed at their owner) */
static PyObject *Model_layers_info(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    bf_model *m = &self->m;
    PyObject *out = PyList_New(m->nlayers);
    for (int i = 0; out && i < m->nlayers; i++) {
        bf_layer *L = &m->layers[i];
        int np = L->share >= 0 ? 0 : L->nparam;
        PyObject *ps = PyList_New(np);
        for (int j = 0; ps && j < np; j++)
            PyList_SET_ITEM(ps, j, Py_BuildValue("(sNO)", L->params[j].name, shape_tuple(L->params[j].rank, L->params[j].shape),
                                                 L->params[j].trainable ? Py_True : Py_False));
        PyList_SET_ITEM(out, i, Py_BuildValue("(sNN)", L->name, shape_tuple(L->out_rank, L->out_shape), ps));
    }
    return out;
}

/* copies of the weights lo <= k < hi in get_weights() order (hi < 0: to the end) */
static PyObject *weights_range(ModelObject *self, int lo, int hi) {
    bf_model *m = &self->m;
    if (bf_model_pull(self) < 0) return NULL;
    PyObject *out = PyList_New(0);
    int k = 0;
    for (int i = 0; out && i < m->nlayers; i++)
        for (int j = 0; j < m->layers[i].nparam && m->layers[i].share < 0; j++, k++) {
            if (k < lo || (hi >= 0 && k >= hi)) continue;
            bf_param *p = &m->layers[i].params[j];
            npy_intp dims[BF_MAX_RANK];
            for (int d = 0; d < p->rank; d++) dims[d] = p->shape[d];
            PyObject *a = PyArray_SimpleNew(p->rank, dims, NPY_FLOAT32);
            if (!a) { Py_DECREF(out); return NULL; }
            memcpy(PyArray_DATA((PyArrayObject *)a), m->w + p->offset, sizeof(float) * (size_t)p->n);
            PyList_Append(out, a);
            Py_DECREF(a);
        }
    return out;
}

static PyObject *Model_get_weights(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return weights_range(self, 0, -1);
}

/* get_weights()[lo:hi] without copying the others (a layer's weights of a large model) */
static PyObject *Model_get_weights_range(ModelObject *self, PyObject *args) {
    int lo, hi;
    if (!PyArg_ParseTuple(args, "ii", &lo, &hi)) return NULL;
    if (lo < 0 || hi < lo) {
        PyErr_Format(PyExc_ValueError, "get_weights_range: need 0 <= lo <= hi, got %d, %d", lo, hi);
        return NULL;
    }
    return weights_range(self, lo, hi);
}

/* all-or-nothing: every array is checked before any weight changes */
static PyObject *Model_set_weights(ModelObject *self, PyObject *arg) {
    bf_model *m = &self->m;
    PyObject *seq = PySequence_Fast(arg, "weights must be a list of arrays");
    if (!seq) return NULL;
    int total = 0;
    for (int i = 0; i < m->nlayers; i++) total += m->layers[i].share < 0 ? m->layers[i].nparam : 0;
    if (PySequence_Fast_GET_SIZE(seq) != total) {
        PyErr_Format(PyExc_ValueError, "weights: expected %d arrays, got %zd", total, PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return NULL;
    }
    PyObject *held = PyList_New(total); /* the converted arrays (off the stack: up to BF_MAX_LAYERS * BF_MAX_PARAMS) */
    if (!held) {
        Py_DECREF(seq);
        return NULL;
    }
    int k = 0, ok = 1;
    for (int i = 0; ok && i < m->nlayers; i++)
        for (int j = 0; ok && j < m->layers[i].nparam && m->layers[i].share < 0; j++, k++) {
            bf_param *p = &m->layers[i].params[j];
            PyObject *a = PyArray_FROMANY(PySequence_Fast_GET_ITEM(seq, k), NPY_FLOAT32, 0, 0, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
            if (!a) { ok = 0; break; }
            PyList_SET_ITEM(held, k, a);
            PyArrayObject *aa = (PyArrayObject *)a;
            int same = PyArray_NDIM(aa) == p->rank;
            for (int d = 0; same && d < p->rank; d++) same = PyArray_DIM(aa, d) == p->shape[d];
            if (!same) {
                PyObject *shape = shape_tuple(p->rank, p->shape);
                PyErr_Format(PyExc_ValueError, "weights[%d] (%s): expected shape %R, got an array of %zd elements with %d dims",
                             k, p->name, shape, (Py_ssize_t)PyArray_SIZE(aa), PyArray_NDIM(aa));
                Py_XDECREF(shape);
                ok = 0;
            }
        }
    /* untouched parameters must be current before the host copy goes back */
    if (ok && bf_model_pull(self) < 0) ok = 0;
    if (ok) {
        k = 0;
        for (int i = 0; i < m->nlayers; i++)
            for (int j = 0; j < m->layers[i].nparam && m->layers[i].share < 0; j++, k++) {
                bf_param *p = &m->layers[i].params[j];
                memcpy(m->w + p->offset, PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(held, k)), sizeof(float) * (size_t)p->n);
            }
        if (bf_model_push(self) < 0) ok = 0;
    }
    Py_DECREF(held); /* releases the arrays */
    Py_DECREF(seq);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Model_compile(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"optimizer", "learning_rate", "beta_1", "beta_2", "epsilon", "momentum", "nesterov",
                             "rho", "loss", "from_logits", "amsgrad", "centered", "weight_decay",
                             "initial_accumulator_value", "clip", "clip_value", "label_smoothing", "delta", "outputs",
                             "learning_rate_power", "l1_regularization_strength", "l2_regularization_strength",
                             "l2_shrinkage_regularization_strength", "beta", "loss_scale", "growth_steps", "use_ema",
                             "ema_momentum", "ema_overwrite_frequency", "gradient_accumulation_steps",
                             "loss_scale_factor", "beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold", "muon_a",
                             "muon_b", "muon_c", "adam_lr_ratio", "adam_weight_decay", "rms_rate", "ns_steps",
                             "matrices", NULL};
    bf_optimizer o = {0};
    bf_loss l = {0};
    o.ftrl.lr_power = -0.5f;
    int ok = 0, lk = 0, nesterov = 0, from_logits = 0, amsgrad = 0, centered = 0, clip = 0;
    PyObject *outputs = Py_None, *matrices = Py_None;
    l.delta = 1.0f;
    o.af = (bf_adafactor_args){-0.8f, 1e-30f, 1e-3f, 1.0f};
    o.mu = (bf_muon_args){3.4445f, -4.7750f, 2.0315f, 1.0f, 0.004f, 0.2f, 5};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ifffffpfip|ppffifffOfffffflpfllfffffffffffiO", kwlist, &ok, &o.lr, &o.beta1, &o.beta2,
                                     &o.eps, &o.momentum, &nesterov, &o.rho, &lk, &from_logits, &amsgrad, &centered,
                                     &o.weight_decay, &o.initial_accumulator, &clip, &o.clip_value, &l.label_smoothing,
                                     &l.delta, &outputs, &o.ftrl.lr_power, &o.ftrl.l1, &o.ftrl.l2,
                                     &o.ftrl.l2_shrinkage, &o.ftrl.beta, &o.loss_scale, &o.growth_steps,
                                     &o.use_ema, &o.ema_momentum, &o.ema_overwrite_frequency, &o.acc_steps,
                                     &o.loss_scale_factor, &o.af.beta_2_decay, &o.af.epsilon_1, &o.af.epsilon_2,
                                     &o.af.clip_threshold, &o.mu.a, &o.mu.b, &o.mu.c, &o.mu.adam_lr_ratio,
                                     &o.mu.adam_weight_decay, &o.mu.rms_rate, &o.mu.ns_steps, &matrices))
        return NULL;
    /* matrices: Muon's Newton-Schulz variables, by gradient offset (optimizers/more.py picks them as Keras) */
    long moffs[BF_MAX_MATRICES];
    Py_ssize_t nmat = 0;
    if (matrices != Py_None) {
        PyObject *t = PySequence_Tuple(matrices);
        if (!t) return NULL;
        nmat = PyTuple_GET_SIZE(t);
        if (nmat > BF_MAX_MATRICES) {
            Py_DECREF(t);
            return PyErr_Format(PyExc_ValueError, "Muon: %zd matrices, boundfit takes at most %d", nmat, BF_MAX_MATRICES);
        }
        for (Py_ssize_t k = 0; k < nmat; k++)
            if (bf_py_long(PyTuple_GET_ITEM(t, k), "Muon", "matrix offset", 0, LONG_MAX, &moffs[k]) < 0) {
                Py_DECREF(t);
                return NULL;
            }
        Py_DECREF(t);
    }
    /* outputs: [(loss kind, from_logits, weight[, label_smoothing, delta])] per model output */
    bf_output outs[BF_MAX_OUTPUTS];
    if (outputs != Py_None) {
        PyObject *t = PySequence_Tuple(outputs);
        if (!t) return NULL;
        if (PyTuple_GET_SIZE(t) != self->m.n_outputs) {
            Py_DECREF(t);
            return PyErr_Format(PyExc_ValueError, "loss: the model has %d outputs, got %zd losses", self->m.n_outputs,
                                PyTuple_GET_SIZE(t));
        }
        for (int k = 0; k < self->m.n_outputs; k++) {
            int kind, fl;
            memset(&outs[k], 0, sizeof outs[k]);
            outs[k].loss.delta = 1.0f;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(t, k), "ipf|ff", &kind, &fl, &outs[k].weight,
                                  &outs[k].loss.label_smoothing, &outs[k].loss.delta)) {
                Py_DECREF(t);
                return NULL;
            }
            outs[k].loss.kind = (bf_loss_kind)kind;
            outs[k].loss.from_logits = fl;
        }
        Py_DECREF(t);
    }
    if (self->busy) return PyErr_Format(PyExc_RuntimeError, "compile() cannot run while fit / evaluate / predict has the model");
    o.kind = (bf_opt_kind)ok;
    o.nesterov = nesterov;
    o.amsgrad = amsgrad;
    o.centered = centered;
    o.clip = (bf_clip_mode)clip;
    l.kind = (bf_loss_kind)lk;
    l.from_logits = from_logits;
    bf_status s = bf_model_set_matrices(&self->m, moffs, (int)nmat);
    if (s == BF_OK) s = bf_model_compile(&self->m, &o, &l, outputs != Py_None ? outs : NULL);
    if (s != BF_OK) return bf_raise(bf_state_of_type(Py_TYPE(self)), s);
    Py_RETURN_NONE;
}

/* set_metrics([{kind, weighted, k, num_thresholds, value, threshold, from_logits, output}]); all or nothing */
static PyObject *Model_set_metrics(ModelObject *self, PyObject *arg) {
    bf_metric_spec ms[BF_MAX_METRICS];
    PyObject *seq = PySequence_Fast(arg, "metrics must be a list of dicts");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > BF_MAX_METRICS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "metrics: at most %d metrics, got %zd", BF_MAX_METRICS, n);
    }
    if (self->busy) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_RuntimeError, "compile() cannot run while fit / evaluate / predict has the model");
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bf_parse_metric(PySequence_Fast_GET_ITEM(seq, i), i, &ms[i]) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    bf_status s = bf_model_set_metrics(&self->m, ms, (int)n);
    if (s != BF_OK) return bf_raise(bf_state_of_type(Py_TYPE(self)), s);
    Py_RETURN_NONE;
}

static PyObject *Model_optimizer_state(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    bf_model *m = &self->m;
    if (bf_model_pull(self) < 0) return NULL;
    PyObject *slots = PyList_New(0);
    for (int k = 0; slots && m->slots && k < m->opt.nslots; k++) {
        npy_intp n = m->n_trainable;
        PyObject *a = PyArray_SimpleNew(1, &n, NPY_FLOAT32);
        if (!a) { Py_DECREF(slots); return NULL; }
        memcpy(PyArray_DATA((PyArrayObject *)a), m->slots + (size_t)k * (size_t)n, sizeof(float) * (size_t)n);
        PyList_Append(slots, a);
        Py_DECREF(a);
    }
    return slots ? Py_BuildValue("(lN)", m->opt.iterations, slots) : NULL;
}

static PyObject *Model_set_iterations(ModelObject *self, PyObject *arg) {
    long it;
    if (bf_py_long(arg, NULL, "iterations", 0, LONG_MAX, &it) < 0) return NULL;
    self->m.opt.iterations = it;
    Py_RETURN_NONE;
}

/* raw_steps(): Keras's raw step counter (_iterations): with gradient_accumulation_steps N, updates * N + the
 * steps accumulated since; else the updates */
static PyObject *Model_raw_steps(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return PyLong_FromLong(bf_optimizer_raw_steps(&self->m.opt));
}

/* set_raw_steps(raw): the counters from Keras's _iterations (load_model) */
static PyObject *Model_set_raw_steps(ModelObject *self, PyObject *arg) {
    long raw;
    bf_optimizer *o = &self->m.opt;
    if (bf_py_long(arg, NULL, "iterations", 0, LONG_MAX, &raw) < 0) return NULL;
    o->iterations = o->acc_steps ? raw / o->acc_steps : raw;
    o->acc_count = o->acc_steps ? raw % o->acc_steps : 0;
    Py_RETURN_NONE;
}

/* ema(op): use_ema's moving average and the weights (bf_ema_op: 0 swap, 1 into the weights, 2 from them) */
static PyObject *Model_ema(ModelObject *self, PyObject *arg) {
    long op;
    if (bf_py_long(arg, NULL, "op", 0, BF_EMA_FROM_WEIGHTS, &op) < 0) return NULL;
    if (bf_model_pull(self) < 0) return NULL;
    bf_status s = bf_model_ema(&self->m, (bf_ema_op)op);
    if (s != BF_OK) return bf_raise(bf_state_of_type(Py_TYPE(self)), s);
    if (bf_model_push(self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* loss_scale() -> (scale, counter): LossScaleOptimizer's dynamic_scale and step_counter */
static PyObject *Model_loss_scale(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return Py_BuildValue("(dl)", (double)self->m.opt.loss_scale, self->m.opt.scale_counter);
}

/* set_loss_scale(scale, counter): restored (load_model, another engine of the model) */
static PyObject *Model_set_loss_scale(ModelObject *self, PyObject *args) {
    double scale;
    long counter;
    if (!PyArg_ParseTuple(args, "dl", &scale, &counter)) return NULL;
    if (!(scale > 0.0 && scale < 3.4e38) || counter < 0)
        return PyErr_Format(PyExc_ValueError, "loss scale %g and step counter %ld: the scale must be a finite "
                            "number > 0 and the counter >= 0", scale, counter);
    if (self->busy) return PyErr_Format(PyExc_RuntimeError, "the loss scale cannot change while fit has the model");
    self->m.opt.loss_scale = (float)scale;
    self->m.opt.scale_counter = counter;
    Py_RETURN_NONE;
}

static PyObject *Model_iterations(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return PyLong_FromLong(self->m.opt.iterations);
}

static PyObject *Model_learning_rate(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return PyFloat_FromDouble((double)bf_optimizer_lr(&self->m.opt));
}

/* set_schedule(kind, (5 params), flag, bounds, values): a closed-form learning
 * rate schedule (csrc/core/schedule.h); kind 0 removes it. Checked in full
 * before anything changes. */
static PyObject *Model_set_schedule(ModelObject *self, PyObject *args) {
    bf_schedule s = {0};
    PyObject *bounds = NULL, *values = NULL;
    int kind = 0;
    if (!PyArg_ParseTuple(args, "i(fffff)iOO", &kind, &s.p[0], &s.p[1], &s.p[2], &s.p[3], &s.p[4], &s.flag,
                          &bounds, &values))
        return NULL;
    if (kind < 0 || kind > BF_SCHED_LAST) return PyErr_Format(PyExc_ValueError, "schedule: unknown kind %d", kind);
    if (!self->m.compiled) return PyErr_Format(PyExc_RuntimeError, "set_schedule: the model is not compiled");
    s.kind = (bf_sched_kind)kind;
    if (kind != BF_SCHED_NONE && kind != BF_SCHED_PIECEWISE && !(s.p[1] > 0.0f))
        return PyErr_Format(PyExc_ValueError, "schedule: decay_steps must be > 0, got %g", (double)s.p[1]);
    PyObject *b = PySequence_Fast(bounds, "schedule: boundaries must be a sequence");
    if (!b) return NULL;
    PyObject *v = PySequence_Fast(values, "schedule: values must be a sequence");
    if (!v) { Py_DECREF(b); return NULL; }
    Py_ssize_t nb = PySequence_Fast_GET_SIZE(b), nv = PySequence_Fast_GET_SIZE(v);
    int ok = 1;
    if (kind == BF_SCHED_PIECEWISE && (nb > BF_SCHED_MAX_BOUNDS || nv != nb + 1)) {
        PyErr_Format(PyExc_ValueError, "schedule: %zd boundaries and %zd values (at most %d boundaries, one value "
                     "more than boundaries)", nb, nv, BF_SCHED_MAX_BOUNDS);
        ok = 0;
    }
    for (Py_ssize_t i = 0; ok && kind == BF_SCHED_PIECEWISE && i < nv; i++) {
        if (i < nb) s.bounds[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(b, i));
        s.values[i] = (float)PyFloat_AsDouble(PySequence_Fast_GET_ITEM(v, i));
        if (PyErr_Occurred()) ok = 0;
    }
    s.nbounds = kind == BF_SCHED_PIECEWISE ? (int)nb : 0;
    Py_DECREF(b);
    Py_DECREF(v);
    if (!ok) return NULL;
    self->m.opt.sched = s;
    Py_RETURN_NONE;
}

/* set_learning_rate(lr): the rate the next update uses. Allowed between the
 * chunks of a run (callbacks, schedules); the optimizer state is kept. */
static PyObject *Model_set_learning_rate(ModelObject *self, PyObject *arg) {
    double lr = PyFloat_AsDouble(arg);
    if (lr == -1.0 && PyErr_Occurred()) return NULL;
    if (!(lr >= 0.0) || lr > 3.4e38)
        return PyErr_Format(PyExc_ValueError, "learning_rate must be a finite number >= 0, got %R", arg);
    if (!self->m.compiled) return PyErr_Format(PyExc_RuntimeError, "set_learning_rate: the model is not compiled");
    self->m.opt.lr = (float)lr;
    Py_RETURN_NONE;
}

/* restore_optimizer_state(iterations, [slot arrays]) for load_model; all or nothing */
static PyObject *Model_restore_optimizer_state(ModelObject *self, PyObject *args) {
    long it;
    PyObject *it_obj, *list;
    bf_model *m = &self->m;
    if (!PyArg_ParseTuple(args, "OO", &it_obj, &list)) return NULL;
    if (bf_py_long(it_obj, "optimizer state", "iterations", 0, LONG_MAX, &it) < 0) return NULL;
    PyObject *seq = PySequence_Fast(list, "slots must be a list");
    if (!seq) return NULL;
    if (!m->compiled || PySequence_Fast_GET_SIZE(seq) != m->opt.nslots) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "optimizer state has %zd slots, the compiled optimizer needs %d",
                            PySequence_Fast_GET_SIZE(list), m->opt.nslots);
    }
    PyObject *arrs[BF_MAX_OPT_SLOTS] = {0};
    if (m->opt.nslots > BF_MAX_OPT_SLOTS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "optimizer state: %d slots", m->opt.nslots);
    }
    int ok = 1;
    for (int k = 0; k < m->opt.nslots; k++) {
        arrs[k] = PyArray_FROMANY(PySequence_Fast_GET_ITEM(seq, k), NPY_FLOAT32, 1, 1, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
        if (!arrs[k] || PyArray_DIM((PyArrayObject *)arrs[k], 0) != m->n_trainable) {
            if (arrs[k]) PyErr_Format(PyExc_ValueError, "optimizer slot %d has the wrong size", k);
            ok = 0;
            break;
        }
    }
    if (ok && m->opt.nslots) {
        bf_status s = bf_model_alloc_opt_state(m);
        if (s != BF_OK) { ok = 0; bf_raise(bf_state_of_type(Py_TYPE(self)), s); }
    }
    for (int k = 0; ok && k < m->opt.nslots; k++)
        memcpy(m->slots + (size_t)k * (size_t)m->n_trainable, PyArray_DATA((PyArrayObject *)arrs[k]), sizeof(float) * (size_t)m->n_trainable);
    if (ok) m->opt.iterations = it;
    if (ok && bf_model_push(self) < 0) ok = 0;
    for (int k = 0; k < BF_MAX_OPT_SLOTS; k++) Py_XDECREF(arrs[k]);
    Py_DECREF(seq);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static int parse_mode(const char *s, bf_mode *mode) {
    if (!strcmp(s, "train")) *mode = BF_MODE_TRAIN;
    else if (!strcmp(s, "evaluate")) *mode = BF_MODE_EVAL;
    else if (!strcmp(s, "predict")) *mode = BF_MODE_PREDICT;
    else { PyErr_Format(PyExc_ValueError, "mode must be 'train', 'evaluate' or 'predict', got %s", s); return -1; }
    return 0;
}

static PyObject *plan_dict(bf_run *r) {
    PyObject *entries = PyList_New(r->nentry);
    for (int i = 0; entries && i < r->nentry; i++) {
        bf_plan_entry *e = &r->entries[i];
        PyList_SET_ITEM(entries, i, Py_BuildValue("(ssns)", e->name, e->category, (Py_ssize_t)e->bytes,
                                                  e->on_device ? r->be->name : "host"));
    }
    PyObject *bufs = PyList_New(r->nbuf);
    for (int i = 0; bufs && i < r->nbuf; i++)
        PyList_SET_ITEM(bufs, i, Py_BuildValue("(sniin)", r->buf_names[i], (Py_ssize_t)r->bufs[i].bytes, r->bufs[i].first,
                                               r->bufs[i].last, (Py_ssize_t)r->bufs[i].offset));
    PyObject *kinds = bufs ? PyList_New(r->nbuf) : NULL; /* each buffer's bf_buf_kind by name (bufs.h) */
    for (int i = 0; kinds && i < r->nbuf; i++)
        PyList_SET_ITEM(kinds, i, PyUnicode_FromString(bf_buf_kind_names[r->buf_kind[i]]));
    /* the step as ops: (label, bytes live, top of the planned region in use) per op */
    int nops = bf_run_nops(r);
    PyObject *ops = kinds && entries ? PyList_New(nops) : NULL;
    for (int t = 0; ops && t < nops; t++) {
        char label[BF_NAME_LEN + 16];
        size_t live, top;
        bf_run_op_label(r, t, label, sizeof label);
        bf_plan_live_at(r->bufs, r->nbuf, t, &live, &top);
        PyList_SET_ITEM(ops, t, Py_BuildValue("(snn)", label, (Py_ssize_t)live, (Py_ssize_t)top));
    }
    return Py_BuildValue("{s:N,s:N,s:N,s:N,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:s}", "entries", entries, "buffers", bufs,
                         "buffer_kinds", kinds, "ops", ops,
                         "host_bytes", (Py_ssize_t)r->host_bytes, "device_bytes", (Py_ssize_t)r->device_bytes,
                         "model_bytes", (Py_ssize_t)r->model_bytes, "opt_new_bytes", (Py_ssize_t)r->opt_new_bytes,
                         "scratch_bytes", (Py_ssize_t)r->scratch_bytes, "naive_scratch_bytes",
                         (Py_ssize_t)r->naive_scratch_bytes, "tables_bytes",
                         (Py_ssize_t)bf_host_reserved_bytes(r->tables), "device", r->be->name);
}

static PyObject *Model_plan(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"mode", "rows", "device", "weighted", NULL};
    const char *mode_s, *device = "cpu";
    int rows, weighted = 0;
    PyObject *rows_obj;
    bf_mode mode;
    bf_module_state *st = bf_state_of_type(Py_TYPE(self));
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|sp", kwlist, &mode_s, &rows_obj, &device, &weighted)) return NULL;
    if (bf_py_int(rows_obj, "plan", "rows", 1, INT_MAX, &rows) < 0) return NULL;
    if (parse_mode(mode_s, &mode) < 0) return NULL;
    bf_backend *be;
    bf_status s = bf_backend_get(device, &be);
    if (s != BF_OK) return bf_raise(st, s);
    bf_run *r = &self->scratch; /* planning only: nothing is reserved */
    s = bf_run_plan(r, &self->m, be, mode, rows, weighted);
    return s == BF_OK ? plan_dict(r) : bf_raise(st, s);
}

static PyObject *Model_open_run(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"mode", "rows", "device", "host_budget", "device_budget", "seed", "guard", "weighted", NULL};
    const char *mode_s, *device = "cpu";
    int rows, guard = 1, weighted = 0;
    PyObject *rows_obj, *hb_obj = NULL, *db_obj = NULL, *seed_obj = NULL;
    long long hb = 0, db = 0;
    unsigned long long seed = 0;
    bf_mode mode;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|sOOOpp", kwlist, &mode_s, &rows_obj, &device, &hb_obj, &db_obj,
                                     &seed_obj, &guard, &weighted))
        return NULL;
    if (bf_py_int(rows_obj, "open_run", "rows", 1, INT_MAX, &rows) < 0 ||
        (hb_obj && bf_py_int64(hb_obj, "open_run", "host_budget", 0, PY_SSIZE_T_MAX, &hb) < 0) ||
        (db_obj && bf_py_int64(db_obj, "open_run", "device_budget", 0, PY_SSIZE_T_MAX, &db) < 0) ||
        (seed_obj && bf_py_seed(seed_obj, "open_run", "seed", &seed) < 0))
        return NULL;
    if (parse_mode(mode_s, &mode) < 0) return NULL;
    PyObject *run = bf_run_new(self, mode, rows, device, (size_t)hb, (size_t)db, seed, weighted);
    if (run) ((RunObject *)run)->r.unguarded = !guard;
    return run;
}

static PyObject *Model_get_n_params(ModelObject *self, void *c) { (void)c; return PyLong_FromLong(self->m.n_params); }
static PyObject *Model_get_n_trainable(ModelObject *self, void *c) { (void)c; return PyLong_FromLong(self->m.n_trainable); }
static PyObject *Model_get_out_shape(ModelObject *self, void *c) {
    (void)c;
    int t = self->m.out_t[0];
    return shape_tuple(self->m.t_rank[t], self->m.t_shape[t]);
}
static PyObject *Model_get_out_shapes(ModelObject *self, void *c) {
    (void)c;
    PyObject *l = PyList_New(self->m.n_outputs);
    for (int k = 0; l && k < self->m.n_outputs; k++) {
        int t = self->m.out_t[k];
        PyList_SET_ITEM(l, k, shape_tuple(self->m.t_rank[t], self->m.t_shape[t]));
    }
    return l;
}
static PyObject *Model_get_weight_bytes(ModelObject *self, void *c) { (void)c; return PyLong_FromSize_t(self->m.weights.high_water); }
static PyObject *Model_get_opt_bytes(ModelObject *self, void *c) { /* 0 once compile() released the state */
    (void)c;
    return PyLong_FromSize_t(self->m.slots ? self->m.opt_state.high_water : 0);
}
static PyObject *Model_get_tables_bytes(ModelObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(bf_host_reserved_bytes(self->m.tables));
}
static PyObject *Model_get_run_tables_bytes(ModelObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(bf_run_tables_bytes(&self->m));
}

static PyGetSetDef Model_getset[] = {
    {"n_params", (getter)Model_get_n_params, NULL, "number of parameters", NULL},
    {"n_trainable", (getter)Model_get_n_trainable, NULL, "number of trainable parameters", NULL},
    {"output_shape", (getter)Model_get_out_shape, NULL, "per-sample shape of output 0", NULL},
    {"output_shapes", (getter)Model_get_out_shapes, NULL, "per-sample shapes of every output", NULL},
    {"weight_arena_bytes", (getter)Model_get_weight_bytes, NULL, "high-water mark of the weight arena", NULL},
    {"optimizer_arena_bytes", (getter)Model_get_opt_bytes, NULL, "bytes of the optimizer state the model holds (its arena's high-water mark; 0 before the first training run)", NULL},
    {"tables_bytes", (getter)Model_get_tables_bytes, NULL, "host bytes of the model's per-node tables", NULL},
    {"run_tables_bytes", (getter)Model_get_run_tables_bytes, NULL,
     "host bytes of the per-node tables and buffer table of each of its runs", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Model_methods[] = {
    {"weights_base", (PyCFunction)Model_weights_base, METH_NOARGS, "the Model whose weights these are, or None"},
    {"layers_info", (PyCFunction)Model_layers_info, METH_NOARGS, "[(name, output_shape, [(param, shape, trainable)])]"},
    {"get_weights", (PyCFunction)Model_get_weights, METH_NOARGS, "copies of all weights"},
    {"get_weights_range", (PyCFunction)Model_get_weights_range, METH_VARARGS, "copies of get_weights()[lo:hi]"},
    {"set_weights", (PyCFunction)Model_set_weights, METH_O, "replace all weights (checked first, all or nothing)"},
    {"compile", (PyCFunction)(void (*)(void))Model_compile, METH_VARARGS | METH_KEYWORDS, "set optimizer and loss"},
    {"set_metrics", (PyCFunction)Model_set_metrics, METH_O, "set the engine's metrics (after compile)"},
    {"optimizer_state", (PyCFunction)Model_optimizer_state, METH_NOARGS, "(iterations, [slot arrays])"},
    {"restore_optimizer_state", (PyCFunction)Model_restore_optimizer_state, METH_VARARGS, "restore (iterations, slots)"},
    {"set_iterations", (PyCFunction)Model_set_iterations, METH_O, "set optimizer.iterations"},
    {"ema", (PyCFunction)Model_ema, METH_O, "use_ema: 0 swap the average and the weights, 1 average into weights, 2 back"},
    {"raw_steps", (PyCFunction)Model_raw_steps, METH_NOARGS, "Keras's raw step counter (_iterations)"},
    {"set_raw_steps", (PyCFunction)Model_set_raw_steps, METH_O, "set Keras's raw step counter (_iterations)"},
    {"loss_scale", (PyCFunction)Model_loss_scale, METH_NOARGS, "(dynamic scale, step counter) of loss scaling"},
    {"set_loss_scale", (PyCFunction)Model_set_loss_scale, METH_VARARGS, "set (dynamic scale, step counter)"},
    {"set_learning_rate", (PyCFunction)Model_set_learning_rate, METH_O, "set the learning rate of the next update"},
    {"learning_rate", (PyCFunction)Model_learning_rate, METH_NOARGS, "the learning rate the next update uses"},
    {"set_schedule", (PyCFunction)Model_set_schedule, METH_VARARGS, "set a closed-form learning rate schedule"},
    {"iterations", (PyCFunction)Model_iterations, METH_NOARGS, "completed updates (no copy of the optimizer state)"},
    {"plan", (PyCFunction)(void (*)(void))Model_plan, METH_VARARGS | METH_KEYWORDS, "memory plan of a run, no allocation"},
    {"open_run", (PyCFunction)(void (*)(void))Model_open_run, METH_VARARGS | METH_KEYWORDS, "reserve a run"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Model_slots[] = {
    {Py_tp_new, Model_new},
    {Py_tp_dealloc, Model_dealloc},
    {Py_tp_methods, Model_methods},
    {Py_tp_getset, Model_getset},
    {Py_tp_doc, "Model(layers, input_shape, seed, input_shapes=None, outputs=None): an engine-side model graph"},
    {0, NULL},
};

static PyType_Spec Model_spec = {"boundfit._core.Model", sizeof(ModelObject), 0, Py_TPFLAGS_DEFAULT, Model_slots};

int bf_model_type_init(PyObject *m, bf_module_state *st) {
    st->ModelType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Model_spec, NULL);
    if (!st->ModelType) return -1;
    return PyModule_AddObjectRef(m, "Model", (PyObject *)st->ModelType);
}
