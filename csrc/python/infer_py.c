/* infer_py.c - boundfit._core.output_shape(spec, shapes): a layer's per-sample
 * output shape for its inputs' per-sample shapes, by the engine's own shape
 * inference: the spec read by bf_parse_layer and the shapes as a model's
 * inputs, then bf_model_infer_node on a model of that one node, as when a
 * model is built. Python's Layer.compute_output_shape is this
 * (python/boundfit/layers/layer.py): a kind's shapes are inferred once, in
 * its file under csrc/core/layers/. */
#include <limits.h>
#include <string.h>

#include "glue.h"
#include "spec_py.h"

/* the one-node model: used under the GIL, filled only after every Python call
 * of the parse is done (a conversion calling back into Python cannot reenter it);
 * its tables (one node, up to BF_MAX_NODE_IN inputs) reserved on first use and kept */
static bf_model scratch;

PyObject *bf_py_output_shape(PyObject *self, PyObject *args) {
    PyObject *spec, *shapes;
    if (!PyArg_ParseTuple(args, "OO", &spec, &shapes)) return NULL;
    bf_layer L;
    int ids[BF_MAX_NODE_IN]; /* what the spec names (a one-node model's are 0 .. n-1, set below) */
    if (bf_parse_layer(spec, &L, ids, BF_MAX_NODE_IN) < 0) return NULL;
    PyObject *seq = PySequence_Fast(shapes, "output_shape: shapes must be a list of per-sample shapes");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > BF_MAX_NODE_IN) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "%s: 1 to %d input tensors, got %zd (boundfit._core.MAX_NODE_INPUTS)",
                            L.name, BF_MAX_NODE_IN, n);
    }
    int rank[BF_MAX_NODE_IN], shape[BF_MAX_NODE_IN][BF_MAX_RANK];
    for (Py_ssize_t k = 0; k < n; k++)
        if (bf_parse_shape(PySequence_Fast_GET_ITEM(seq, k), "input_shape", &rank[k], shape[k], 0) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    Py_DECREF(seq);
    bf_model *m = &scratch; /* inputs are tensors 0 .. n-1, the node tensor n */
    if (!m->tables) {
        bf_status s0 = bf_model_tables_reserve(m, 1, BF_MAX_NODE_IN + 1, BF_MAX_NODE_IN);
        if (s0 != BF_OK) return bf_raise(bf_state_of_module(self), s0);
    }
    m->n_inputs = (int)n;
    m->nlayers = 1;
    for (int k = 0; k < (int)n; k++) {
        m->t_rank[k] = rank[k];
        memcpy(m->t_shape[k], shape[k], sizeof shape[k]);
        m->t_size[k] = 1; /* as bf_model_infer's: -1 past INT_MAX elements (check_sizes refuses an output so) */
        for (int d = 0; d < rank[k]; d++)
            if (m->t_size[k] < 0 || __builtin_mul_overflow(m->t_size[k], (long)shape[k][d], &m->t_size[k]) ||
                m->t_size[k] > INT_MAX)
                m->t_size[k] = -1;
        m->t_uses[k] = 0;
        m->t_mask[k] = -1;
        m->in_pool[k] = k;
    }
    m->n_edges = (int)n;
    L.in_ids = m->in_pool;
    L.nin = (int)n;
    L.share = -1;
    m->layers[0] = L;
    bf_status s = bf_model_infer_node(m, 0);
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    const bf_layer *out = &m->layers[0];
    PyObject *t = PyTuple_New(out->out_rank);
    for (int d = 0; t && d < out->out_rank; d++) PyTuple_SET_ITEM(t, d, PyLong_FromLong(out->out_shape[d]));
    return t;
}
