/* seq_layers.c - shapes, parameters (Keras 3 layouts) and masks of the
 * sequence layers. Embedding (T,) -> (T,D), table (input_dim, D) uniform
 * +-0.05. A recurrent layer (T,D) -> (T,U) or (U,): kernel (D,G*U) glorot,
 * recurrent_kernel (U,G*U) orthogonal, bias (G*U,) or GRU (2,G*U) zeros
 * (LSTM: forget gate 1). Bidirectional: the same twice, forward then
 * backward (roles 0-2, 3-5), output 2U with merge_mode concat. */
#include "seq_layers.h"

#include <stdio.h>

static long prod(const int *s, int r) {
    long n = 1;
    for (int i = 0; i < r; i++) n *= s[i];
    return n;
}

static void rnn_params(bf_layer *L, int role, const char *dir, int D, int U, int G) {
    char nm[48];
    int ks[2] = {D, G * U}, rs[2] = {U, G * U}, bs[2] = {2, G * U};
    snprintf(nm, sizeof nm, "%skernel", dir);
    bf_add_param(L, role, nm, 2, ks, 1, BF_INIT_GLOROT_UNIFORM, (float)D, (float)(G * U));
    snprintf(nm, sizeof nm, "%srecurrent_kernel", dir);
    bf_add_param(L, role + 1, nm, 2, rs, 1, BF_INIT_ORTHOGONAL, (float)U, (float)(G * U));
    if (!L->inits[role + 1].set) L->params[L->nparam - 1].init_a = 1.0f; /* gain */
    if (!L->use_bias) return;
    snprintf(nm, sizeof nm, "%sbias", dir);
    if (L->cell == BF_L_GRU) bf_add_param(L, role + 2, nm, 2, bs, 1, BF_INIT_ZEROS, 2.0f, (float)(G * U));
    else bf_add_param(L, role + 2, nm, 1, bs + 1, 1, BF_INIT_ZEROS, 0, 0);
}

bf_status bf_seq_infer(bf_layer *L, int rank, const int *shape) {
    if (L->units <= 0) return BF_FAIL(BF_ERR_ARG, "%s: units must be positive, got %d", L->name, L->units);
    if (L->kind == BF_L_EMBEDDING) {
        if (L->input_dim <= 0) return BF_FAIL(BF_ERR_ARG, "%s: input_dim must be positive, got %d", L->name, L->input_dim);
        if (rank > 2)
            return BF_FAIL(BF_ERR_SHAPE, "%s expects ids of rank 1 or 2 per sample, got rank %d", L->name, rank);
        if (L->mask_zero && rank != 1)
            return BF_FAIL(BF_ERR_SHAPE, "%s: mask_zero needs ids of shape (T,) per sample, got rank %d", L->name, rank);
        L->out_rank = rank + 1;
        L->out_shape[rank] = L->units;
        int ts[2] = {L->input_dim, L->units};
        bf_add_param(L, 0, "embeddings", 2, ts, 1, BF_INIT_RANDOM_UNIFORM, (float)L->input_dim, (float)L->units);
        if (!L->inits[0].set) {
            L->params[0].init_a = -0.05f;
            L->params[0].init_b = 0.05f;
        }
        L->out_size = prod(L->out_shape, L->out_rank);
        return BF_OK;
    }
    if (rank != 2)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 2 (timesteps, features) per sample, got rank %d", L->name,
                       rank);
    if (L->kind != BF_L_BIDIR) L->cell = L->kind;
    if (L->cell < BF_L_SIMPLE_RNN || L->cell > BF_L_GRU)
        return BF_FAIL(BF_ERR_ARG, "%s: unknown recurrent cell %d", L->name, L->cell);
    if (!(L->rate >= 0.0f && L->rate < 1.0f) || !(L->rec_rate >= 0.0f && L->rec_rate < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: dropout and recurrent_dropout must be in [0, 1), got %g and %g", L->name,
                       (double)L->rate, (double)L->rec_rate);
    if (L->kind == BF_L_BIDIR && (L->merge_mode < 0 || L->merge_mode > 3))
        return BF_FAIL(BF_ERR_ARG, "%s: unknown merge_mode %d", L->name, L->merge_mode);
    int T = shape[0], D = shape[1], U = L->units;
    int G = bf_rnn_gates((bf_cell_kind)(L->cell - BF_L_SIMPLE_RNN));
    if (L->kind == BF_L_BIDIR) {
        rnn_params(L, 0, "forward_", D, U, G);
        rnn_params(L, 3, "backward_", D, U, G);
    } else {
        rnn_params(L, 0, "", D, U, G);
    }
    int Uo = L->kind == BF_L_BIDIR && L->merge_mode == 0 ? 2 * U : U;
    L->out_rank = L->return_sequences ? 2 : 1;
    L->out_shape[0] = L->return_sequences ? T : Uo;
    L->out_shape[1] = Uo;
    L->out_size = prod(L->out_shape, L->out_rank);
    return BF_OK;
}

bf_status bf_seq_check_outputs(const bf_model *m) {
    for (int k = 0; k < m->n_outputs; k++) {
        int t = m->out_t[k], e = m->t_mask[t];
        if (e < 0 || m->t_rank[t] >= 2) continue; /* masked per position (seq_loss.c) */
        int p = bf_model_producer(m, t);
        return BF_FAIL(BF_ERR_ARG, "output '%s' carries the mask of layer '%s' (mask_zero=True); Keras would mask "
                       "the loss with it, which boundfit does not do: end the masked sequence with a layer that "
                       "drops the mask (a recurrent layer without return_sequences, a pooling layer)",
                       p >= 0 ? m->layers[p].name : "input", m->layers[e].name);
    }
    return BF_OK;
}

void bf_seq_post_init(bf_model *m) {
    for (int i = 0; i < m->nlayers; i++) {
        const bf_layer *L = &m->layers[i];
        if (L->share >= 0 || !bf_is_rnn_kind(L->kind) || L->cell != BF_L_LSTM || !L->use_bias ||
            !L->unit_forget_bias)
            continue;
        for (int d = 0; d < (L->kind == BF_L_BIDIR ? 2 : 1); d++) {
            const bf_param *b = &L->params[3 * d + 2];
            for (int j = 0; j < L->units; j++) m->w[b->offset + (size_t)L->units + j] = 1.0f;
        }
    }
}

bf_status bf_seq_check_node(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    if (L->kind != BF_L_RNN_PART) { /* initial states: none, or every state of every direction */
        const int ns = bf_seq_nstates(L) * (L->kind == BF_L_BIDIR ? 2 : 1), n = L->nin - 1;
        if (n != 0 && n != ns)
            return BF_FAIL(BF_ERR_ARG, "%s: initial_state must be a list of %d tensors, got %d", L->name, ns, n);
        for (int j = 1; j < L->nin; j++) {
            const int t = L->in_ids[j];
            if (m->t_rank[t] != 1 || m->t_shape[t][0] != L->units)
                return BF_FAIL(BF_ERR_SHAPE, "%s: initial_state[%d] must have shape (batch, %d), got rank %d per "
                               "sample with last dimension %d", L->name, j - 1, L->units, m->t_rank[t],
                               m->t_shape[t][m->t_rank[t] - 1]);
        }
        return BF_OK;
    }
    const int src = bf_model_producer(m, L->in_ids[0]);
    const bf_layer *S = src >= 0 ? &m->layers[src] : NULL;
    if (!S || !bf_is_rnn_kind(S->kind))
        return BF_FAIL(BF_ERR_ARG, "%s: reads the output of a recurrent layer, got another tensor", L->name);
    const int bidir = S->kind == BF_L_BIDIR, ns = bf_seq_nstates(S) * (bidir ? 2 : 1);
    if (L->part >= ns || L->part < (bidir && S->merge_mode == 0 ? -2 : 0))
        return BF_FAIL(BF_ERR_ARG, "%s: %s has no output part %d", L->name, S->name, L->part);
    if (L->part >= 0) {
        L->out_rank = 1;
        L->out_shape[0] = S->units;
    } else {
        L->out_rank = S->out_rank;
        L->out_shape[0] = S->out_shape[0];
        L->out_shape[L->out_rank - 1] = S->units;
    }
    return BF_OK;
}
