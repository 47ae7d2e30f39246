/* spec_py.c - the layer and metric spec dicts (python/boundfit/layers,
 * metrics.py) into bf_layer / bf_metric_spec. bf_parse_layer reads the
 * fields every kind has (kind, name, act, inputs, share, ...) and hands the
 * rest to the kind's parse hook (layer_registry.h) through a bf_spec reader
 * over the dict, so a family's configuration is read in its own file
 * (csrc/core/layers/). Every integer is read through bf_py_int (ints_py.c)
 * against its field's range, so a spec built by hand never truncates: a value
 * out of range is a ValueError naming the layer, the spec key and the value.
 * The ranges given here and in the families' reads are the cheap ones (sizes
 * >= 0, flags 0 / 1, shape dimensions >= 1); each kind's infer checks the
 * rest. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "layer_registry.h"
#include "spec_py.h"

typedef struct {
    const char *key;
    size_t off; /* of an int in the struct */
    int dflt, lo, hi;
} int_field;

/* the generic ints of every node (a kind's own: its parse hook) */
#define INT_F(k, f, d) {#k, offsetof(bf_layer, f), d, INT_MIN, INT_MAX}
static const int_field layer_ints[] = {
    INT_F(share, share, -1), INT_F(modes, modes, 0), INT_F(train_mode, train_mode, 0),
    {"mask_off", offsetof(bf_layer, mask_off), 0, 0, 1}, {"half", offsetof(bf_layer, half), 0, 0, 2},
};

_Static_assert(sizeof(bf_metric_kind) == sizeof(int), "metric kind read as an int");
#define M_F(k, d, lo, hi) {#k, offsetof(bf_metric_spec, k), d, lo, hi}
static const int_field metric_ints[] = {
    {"kind", offsetof(bf_metric_spec, kind), -1, INT_MIN, INT_MAX}, M_F(weighted, 0, 0, 1), M_F(k, 5, INT_MIN, INT_MAX),
    M_F(num_thresholds, 200, INT_MIN, INT_MAX), M_F(from_logits, 0, 0, 1), M_F(output, 0, 0, BF_MAX_OUTPUTS - 1),
    M_F(has_class_id, 0, 0, 1), M_F(class_id, 0, INT_MIN, INT_MAX), M_F(batch_mean, 0, 0, 1),
    M_F(col0, 0, 0, INT_MAX), M_F(ncols, 0, 0, INT_MAX),
};

/* d[k] (absent or None: dflt) as an int in [lo, hi] */
static int get_int(PyObject *d, const char *owner, const char *k, int dflt, int lo, int hi, int *out) {
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v || v == Py_None) { *out = dflt; return 0; }
    return bf_py_int(v, owner, k, lo, hi, out);
}

static int get_fields(PyObject *d, const char *owner, const int_field *f, int n, void *base) {
    for (int i = 0; i < n; i++)
        if (get_int(d, owner, f[i].key, f[i].dflt, f[i].lo, f[i].hi, (int *)((char *)base + f[i].off)) < 0) return -1;
    return 0;
}

static int get_float(PyObject *d, const char *k, float dflt, float *out) {
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v || v == Py_None) { *out = dflt; return 0; }
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    *out = (float)x;
    return 0;
}

int bf_parse_shape(PyObject *seq, const char *what, int *rank, int *shape, int allow_hole) {
    PyObject *t = PySequence_Tuple(seq);
    if (!t) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n > BF_MAX_RANK) { /* 0: one number per sample */
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "%s must have 0 to %d dimensions (excluding the batch axis; "
                     "boundfit._core.MAX_RANK), got %zd", what, BF_MAX_RANK, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s[%zd]", what, i);
        PyObject *v = PyTuple_GET_ITEM(t, i);
        if (bf_py_int(v, NULL, name, allow_hole ? -1 : 1, INT_MAX, &shape[i]) < 0) { Py_DECREF(t); return -1; }
        if (shape[i] == 0) { /* between the hole and the sizes */
            PyErr_Format(PyExc_ValueError, "%s must be -1 (inferred) or an integer from 1 to %d, got %R", name, INT_MAX, v);
            Py_DECREF(t);
            return -1;
        }
    }
    *rank = (int)n;
    Py_DECREF(t);
    return 0;
}

/* int tuple d[k] of exactly n entries in [lo, hi] into out (absent: left as it is) */
static int get_ints(PyObject *d, const char *owner, const char *k, int n, int lo, int hi, int *out) {
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v || v == Py_None) return 0;
    PyObject *t = PySequence_Tuple(v);
    if (!t) return -1;
    if (PyTuple_GET_SIZE(t) != n) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "%s: %s must have %d entries, got %zd", owner, k, n, PyTuple_GET_SIZE(t));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s[%d]", k, i);
        if (bf_py_int(PyTuple_GET_ITEM(t, i), owner, name, lo, hi, &out[i]) < 0) { Py_DECREF(t); return -1; }
    }
    Py_DECREF(t);
    return 0;
}

/* act_p: (alpha, max_value, threshold) of the activation; alpha's default is the activation's */
static int parse_act_param(PyObject *d, bf_layer *L) {
    float dflt = L->act == BF_ACT_LEAKY_RELU ? 0.2f : L->act == BF_ACT_ELU ? 1.0f : 0.0f;
    PyObject *ap = PyDict_GetItemString(d, "act_p");
    L->actp.alpha = dflt;
    L->actp.max_value = INFINITY;
    L->actp.threshold = 0.0f;
    if (ap && ap != Py_None && !PyArg_ParseTuple(ap, "fff", &L->actp.alpha, &L->actp.max_value, &L->actp.threshold))
        return -1;
    return 0;
}

/* ---- the bf_spec reader over a spec dict: a failure sets the Python exception and returns BF_ERR_ARG ---- */

static bf_status rd_int(const bf_spec *s, const char *k, int dflt, int lo, int hi, int *out) {
    return get_int((PyObject *)s->src, s->owner, k, dflt, lo, hi, out) < 0 ? BF_ERR_ARG : BF_OK;
}

static bf_status rd_float(const bf_spec *s, const char *k, float dflt, float *out) {
    return get_float((PyObject *)s->src, k, dflt, out) < 0 ? BF_ERR_ARG : BF_OK;
}

static bf_status rd_ints(const bf_spec *s, const char *k, int n, int lo, int hi, int *out) {
    return get_ints((PyObject *)s->src, s->owner, k, n, lo, hi, out) < 0 ? BF_ERR_ARG : BF_OK;
}

static bf_status rd_len(const bf_spec *s, const char *k, int *n) {
    PyObject *v = PyDict_GetItemString((PyObject *)s->src, k);
    *n = -1;
    if (!v || v == Py_None) return BF_OK;
    Py_ssize_t len = PySequence_Size(v);
    if (len < 0) return BF_ERR_ARG;
    *n = len > INT_MAX ? INT_MAX : (int)len;
    return BF_OK;
}

static bf_status rd_seed(const bf_spec *s, const char *k, uint64_t *out) {
    PyObject *v = PyDict_GetItemString((PyObject *)s->src, k);
    unsigned long long seed = 0;
    if (v && v != Py_None && bf_py_seed(v, s->owner, k, &seed) < 0) return BF_ERR_ARG;
    *out = (uint64_t)seed;
    return BF_OK;
}

/* the kind's configuration through its parse hook; its own failures (BF_FAIL) become a ValueError */
static int parse_config(PyObject *d, bf_layer *L) {
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    if (!ops || !ops->parse) return 0; /* an unknown kind: bf_model_infer names it */
    const bf_spec spec = {d, L->name, rd_int, rd_float, rd_ints, rd_len, rd_seed};
    bf_status st = ops->parse(L, &spec);
    if (st == BF_OK) return 0;
    if (!PyErr_Occurred()) {
        const bf_error *e = bf_last_error();
        PyErr_SetString(PyExc_ValueError, e->code == st ? e->msg : bf_status_name(st));
    }
    return -1;
}

/* inits: up to BF_MAX_PARAMS entries by role, each None or (kind, a, b, mode); regs: by role, None or
 * (l1, l2); cons: by role, None or (kind, min_value, max_value, rate, axis_lo, axis_hi) */
static int parse_weight_options(PyObject *d, bf_layer *L) {
    PyObject *inits = PyDict_GetItemString(d, "inits");
    if (inits && inits != Py_None) {
        PyObject *seq = PySequence_Fast(inits, "inits must be a sequence");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < n && i < BF_MAX_PARAMS; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            if (e == Py_None) continue;
            int k, mode;
            bf_init_spec *u = &L->inits[i];
            if (!PyArg_ParseTuple(e, "iffi", &k, &u->a, &u->b, &mode)) { Py_DECREF(seq); return -1; }
            if (k < 0 || k > BF_INIT_LAST || mode < BF_FAN_IN || mode > BF_FAN_AVG) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_ValueError, "%s: unknown initializer kind %d / mode %d", L->name, k, mode);
                return -1;
            }
            u->set = 1;
            u->kind = (bf_init)k;
            u->mode = (bf_fan_mode)mode;
        }
        Py_DECREF(seq);
    }
    PyObject *regs = PyDict_GetItemString(d, "regs");
    if (regs && regs != Py_None) {
        PyObject *seq = PySequence_Fast(regs, "regs must be a sequence");
        if (!seq) return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && i < BF_MAX_PARAMS; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            if (e != Py_None && !PyArg_ParseTuple(e, "ff", &L->reg[i][0], &L->reg[i][1])) { Py_DECREF(seq); return -1; }
        }
        Py_DECREF(seq);
    }
    PyObject *cons = PyDict_GetItemString(d, "cons");
    if (cons && cons != Py_None) {
        PyObject *seq = PySequence_Fast(cons, "cons must be a sequence");
        if (!seq) return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && i < BF_MAX_PARAMS; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            if (e == Py_None) continue;
            bf_constraint *c = &L->cons[i];
            int k;
            if (!PyArg_ParseTuple(e, "ifffii", &k, &c->min_value, &c->max_value, &c->rate, &c->axis_lo, &c->axis_hi)) {
                Py_DECREF(seq);
                return -1;
            }
            if (k < 0 || k > BF_CON_LAST) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_ValueError, "%s: unknown constraint kind %d", L->name, k);
                return -1;
            }
            c->kind = (bf_constraint_kind)k;
        }
        Py_DECREF(seq);
    }
    return 0;
}

int bf_parse_layer(PyObject *d, bf_layer *L, int *ids, int cap) {
    memset(L, 0, sizeof *L);
    L->in_ids = ids;
    if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "layer spec must be a dict"); return -1; }
    PyObject *name = PyDict_GetItemString(d, "name");
    const char *s = name ? PyUnicode_AsUTF8(name) : "layer";
    if (!s) return -1;
    strncpy(L->name, s, sizeof L->name - 1);
    int kind, act, trainable;
    if (get_int(d, L->name, "kind", -1, INT_MIN, INT_MAX, &kind) || get_int(d, L->name, "act", 0, 0, BF_ACT_LAST, &act) ||
        get_int(d, L->name, "trainable", 1, 0, 1, &trainable) ||
        get_fields(d, L->name, layer_ints, (int)(sizeof layer_ints / sizeof layer_ints[0]), L))
        return -1;
    L->kind = (bf_layer_kind)kind;
    L->act = (bf_act)act;
    L->frozen = !trainable;
    PyObject *ins = PyDict_GetItemString(d, "inputs");
    Py_ssize_t n = 1; /* without inputs: one, the node before (model.c fills it) */
    PyObject *t = NULL;
    if (ins && ins != Py_None) {
        t = PySequence_Tuple(ins);
        if (!t) return -1;
        n = PyTuple_GET_SIZE(t);
        if (n < 1 || n > BF_MAX_NODE_IN) {
            Py_DECREF(t);
            PyErr_Format(PyExc_ValueError, "%s: 1 to %d input tensors, got %zd (boundfit._core.MAX_NODE_INPUTS)",
                         L->name, BF_MAX_NODE_IN, n);
            return -1;
        }
    }
    if (n > cap) {
        Py_XDECREF(t);
        PyErr_Format(PyExc_ValueError, "%s: the model's nodes take more than %d input tensors in all "
                     "(boundfit._core.MAX_NODE_INPUTS_TOTAL); split the model", L->name, BF_MAX_EDGES);
        return -1;
    }
    if (t) {
        for (Py_ssize_t j = 0; j < n; j++)
            if (bf_py_int(PyTuple_GET_ITEM(t, j), L->name, "inputs", 0, INT_MAX, &L->in_ids[j]) < 0) {
                Py_DECREF(t);
                return -1;
            }
        L->nin = (int)n;
        Py_DECREF(t);
    }
    if (parse_act_param(d, L) < 0 || parse_config(d, L) < 0) return -1;
    PyObject *target = PyDict_GetItemString(d, "target_shape");
    if (target && target != Py_None && bf_parse_shape(target, "target_shape", &L->out_rank, L->out_shape, 1) < 0)
        return -1;
    return parse_weight_options(d, L);
}

int bf_parse_metric(PyObject *d, Py_ssize_t i, bf_metric_spec *ms) {
    char owner[32];
    snprintf(owner, sizeof owner, "metrics[%zd]", i);
    memset(ms, 0, sizeof *ms);
    if (!PyDict_Check(d)) { PyErr_Format(PyExc_TypeError, "%s must be a dict", owner); return -1; }
    if (get_fields(d, owner, metric_ints, (int)(sizeof metric_ints / sizeof metric_ints[0]), ms) ||
        get_float(d, "threshold", 0.5f, &ms->threshold) || get_float(d, "value", 0.0f, &ms->value))
        return -1;
    return 0;
}
