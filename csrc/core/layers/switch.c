/* switch.c - SWITCH: where a custom layer's (or a subclassed model's) call()
 * traced differently with training=True and training=False
 * (python/boundfit/layers/node.py), its output: the training trace's (input
 * 0) in training runs, the inference trace's (input 1) in evaluate and
 * predict. A view of that input; the other is not read, and the nodes only
 * it needs are not part of the run (bf_layer.modes, set by
 * python/boundfit/graph.py), so the branch a run does not take is never
 * computed nor planned. */
#include "layer.h"

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    if (L->nin != 2) return BF_FAIL(BF_ERR_ARG, "%s: a switch takes 2 inputs, got %d", L->name, L->nin);
    return BF_OK;
}

static bf_status check(bf_model *m, int i) {
    const bf_layer *L = &m->layers[i];
    const int a = L->in_ids[0], b = L->in_ids[1];
    int same = m->t_rank[a] == m->t_rank[b];
    for (int d = 0; same && d < m->t_rank[a]; d++) same = m->t_shape[a][d] == m->t_shape[b][d];
    if (!same) {
        char sa[48], sb[48];
        bf_shape_str(sa, sizeof sa, m->t_rank[a], m->t_shape[a]);
        bf_shape_str(sb, sizeof sb, m->t_rank[b], m->t_shape[b]);
        return BF_FAIL(BF_ERR_SHAPE, "%s: call() returns shape %s with training=True and %s with training=False; "
                       "both must agree", L->name, sa, sb);
    }
    return BF_OK;
}

static int view_in(const bf_run *r, int i) {
    (void)i;
    return r->mode == BF_MODE_TRAIN ? 0 : 1;
}

/* the mask both inputs carry, else none */
static bf_status mask(const bf_model *m, int i, int *out) {
    const bf_layer *L = &m->layers[i];
    *out = m->t_mask[L->in_ids[0]] == m->t_mask[L->in_ids[1]] ? m->t_mask[L->in_ids[0]] : -1;
    return BF_OK;
}

const bf_layer_ops bf_ops_SWITCH = {
    .name = "SWITCH", .flags = BF_LF_MULTI_IN | BF_LF_VIEW | BF_LF_ANY_RANK, .infer = infer, .check = check, .mask = mask,
    .view_in = view_in,
};
