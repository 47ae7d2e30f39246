/* recurrent.c - the vtables of Embedding, SimpleRNN, LSTM, GRU,
 * Bidirectional and RNN_PART (a recurrent node's other outputs: its final
 * states, or a direction's half of a Bidirectional(merge_mode=None)). Their
 * shapes and mask propagation are in seq_layers.c, their plan and steps in
 * seq_run.c. */
#include "layer.h"
#include "../seq_layers.h"
#include "../seq_run.h"

static bf_status seq_infer(bf_layer *L, int rank, const int *shape) { return bf_seq_infer(L, rank, shape); }

static bf_status part_infer(bf_layer *L, int rank, const int *shape) {
    (void)L;
    (void)rank;
    (void)shape;
    return BF_OK; /* its shape from the recurrent node: bf_seq_check_node */
}

static bf_status embedding_mask(const bf_model *m, int i, int *mask) {
    *mask = m->layers[i].mask_zero ? i : -1;
    return BF_OK;
}

static bf_status rnn_mask(const bf_model *m, int i, int *mask) {
    const bf_layer *L = &m->layers[i];
    *mask = L->return_sequences ? m->t_mask[L->in_ids[0]] : -1;
    return BF_OK;
}

/* a half of a sequence keeps its mask; a final state has none */
static bf_status part_mask(const bf_model *m, int i, int *mask) {
    const bf_layer *L = &m->layers[i];
    *mask = L->part < 0 ? m->t_mask[L->in_ids[0]] : -1;
    return BF_OK;
}

static int embedding_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->embedding_forward && be->embedding_backward;
}

static int rnn_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->rnn_forward && be->rnn_backward && be->rnn_workspace_bytes && be->ewise;
}

static int part_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->copy2d && be->fill_zero;
}

static unsigned part_flags(const bf_run *r, int i) { return r->m->layers[i].part >= 0 ? BF_LF_SIDE_OUT : 0; }

static bf_status seq_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    return bf_seq_backward(r, i, rows, dout, din);
}

const bf_layer_ops bf_ops_EMBEDDING = {
    .name = "EMBEDDING",
    .flags = BF_LF_READS_IN,
    .infer = seq_infer,
    .mask = embedding_mask,
    .supported = embedding_supported,
    .plan = bf_seq_plan,
    .forward = bf_seq_forward,
    .backward = seq_backward,
};

#define RNN_OPS(KIND)                                                                                              \
    const bf_layer_ops bf_ops_##KIND = {                                                                           \
        .name = #KIND, .flags = BF_LF_MULTI_IN | BF_LF_READS_IN | BF_LF_READS_OUT, .infer = seq_infer,             \
        .check = bf_seq_check_node, .mask = rnn_mask, .supported = rnn_supported, .plan = bf_seq_plan,             \
        .forward = bf_seq_forward, .backward = seq_backward,                                                       \
    };
RNN_OPS(SIMPLE_RNN)
RNN_OPS(LSTM)
RNN_OPS(GRU)
RNN_OPS(BIDIR)
#undef RNN_OPS

const bf_layer_ops bf_ops_RNN_PART = {
    .name = "RNN_PART",
    .infer = part_infer,
    .check = bf_seq_check_node,
    .mask = part_mask,
    .supported = part_supported,
    .node_flags = part_flags,
    .plan = bf_seq_plan,
    .forward = bf_seq_forward,
    .backward = seq_backward,
};
