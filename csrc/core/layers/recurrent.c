/* recurrent.c - Embedding, SimpleRNN, LSTM, GRU, Bidirectional and RNN_PART:
 * shapes, parameters, masks, plan and steps, and their vtables.
 *
 * Shapes, parameters (Keras 3 layouts) and masks of the
 * sequence layers. Embedding (T,) -> (T,D), table (input_dim, D) uniform
 * +-0.05. A recurrent layer (T,D) -> (T,U) or (U,): kernel (D,G*U) glorot,
 * recurrent_kernel (U,G*U) orthogonal, bias (G*U,) or GRU (2,G*U) zeros
 * (LSTM: forget gate 1). Bidirectional: the same twice, forward then
 * backward (roles 0-2, 3-5), output 2U with merge_mode concat.
 *
 * In a run, a recurrent node keeps per direction, for backward (one planned "saved" buffer, carved below):
 * gates (B,T,G*U), LSTM cells / GRU recurrent part cs (B,T,U) and the states
 * hs (B,T,U), which are the output itself when the output holds them in
 * input order (return_sequences, not go_backwards, or Bidirectional's
 * flipped backward direction in a concatenated output). Bidirectional with
 * sum / mul / ave computes both directions' outputs apart and merges them
 * (mul keeps them for backward). Initial states are the node's inputs 1..;
 * an RNN_PART node copies a final state out of the kept states (or a half
 * out of the output), and the recurrent node's backward reads that node's
 * output gradient as the final state's (planned to live until then).
 * Dropout (training only): the node draws a seed per training forward from
 * the run's stream (as Dropout / MultiHeadAttention do), each direction its
 * own masks from it (bf_rnn_geom); backward draws them again from the same
 * seed, so only the workspaces grow (by the masks and masked copies). */
#include "layer.h"

#include <stdio.h>
#include <string.h>

static inline int bf_is_seq_kind(bf_layer_kind k) { return k >= BF_L_EMBEDDING && k <= BF_L_BIDIR; }
static inline int bf_is_rnn_kind(bf_layer_kind k) { return k >= BF_L_SIMPLE_RNN && k <= BF_L_BIDIR; }

/* Several outputs (Keras return_state, Bidirectional merge_mode=None): the
 * recurrent node's output is the first, an RNN_PART node reading it gives
 * each other one. part >= 0: final state number `part` in Keras's order
 * (per direction h then, for an LSTM, c; forward then backward), shape
 * (U,); part -1 / -2: the forward / backward half of a Bidirectional whose
 * node computes merge_mode "concat". Initial states are the recurrent
 * node's inputs 1.. in the same order. */
static inline int bf_seq_nstates(const bf_layer *L) { return L->cell == BF_L_LSTM ? 2 : 1; }

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

static bf_status bf_seq_infer(bf_layer *L, int rank, const int *shape) {
    if (L->units <= 0) return BF_FAIL(BF_ERR_ARG, "%s: units must be positive, got %d", L->name, L->units);
    if (L->kind == BF_L_EMBEDDING) {
        if (L->input_dim <= 0) return BF_FAIL(BF_ERR_ARG, "%s: input_dim must be positive, got %d", L->name, L->input_dim);
        if (rank > 2)
            return BF_FAIL(BF_ERR_SHAPE, "%s expects ids of rank 1 or 2 per sample, got rank %d", L->name, rank);
        if (L->mask_zero && rank != 1) /* (a mask of one id per sample would be Keras's (B,) mask) */
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
    if ((long long)G * U > INT_MAX || (L->kind == BF_L_BIDIR && 2LL * U > INT_MAX))
        return BF_FAIL(BF_ERR_ARG, "%s: units must be at most %d for this cell (its %d gates side by side), got %d",
                       L->name, INT_MAX / (L->kind == BF_L_BIDIR && G < 2 ? 2 : G), G, U);
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

/* after initialization: LSTM unit_forget_bias sets the forget gate's bias to 1 */
static void rnn_post_init(bf_model *m, int i) {
    const bf_layer *L = &m->layers[i];
    if (L->cell != BF_L_LSTM || !L->use_bias || !L->unit_forget_bias) return;
    for (int d = 0; d < (L->kind == BF_L_BIDIR ? 2 : 1); d++) {
        const bf_param *b = &L->params[3 * d + 2];
        for (int j = 0; j < L->units; j++) m->w[b->offset + (size_t)L->units + j] = 1.0f;
    }
}

static bf_status bf_seq_check_node(bf_model *m, int i) {
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

/* ---- in a run ---- */

#define BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))

typedef struct {
    bf_rnn_geom g[2];
    int ndir, G, Uo, alias[2]; /* alias: hs is the output */
    size_t gates[2], cs[2], hs[2], o[2]; /* float offsets: saved (gates, cs, hs, o when mul), fws (o otherwise) */
    int o_saved;
    size_t saved, fws, bws; /* floats */
} seq_layout;

/* the step mask a recurrent call reads (NULL: none, or mask_off) */
static const float *rnn_mask(bf_run *r, const bf_layer *L) {
    return L->mask_off ? NULL : bf_seq_mask(r, L->in_ids[0]);
}

static int masked(const bf_run *r, const bf_layer *L) { return !L->mask_off && r->m->t_mask[L->in_ids[0]] >= 0; }

static void layout(const bf_run *r, const bf_layer *L, int B, seq_layout *s) {
    memset(s, 0, sizeof *s);
    const int bidir = L->kind == BF_L_BIDIR, concat = !bidir || L->merge_mode == 0;
    const int T = L->in_shape[0], D = L->in_shape[1], U = L->units;
    const bf_cell_kind cell = (bf_cell_kind)(L->cell - BF_L_SIMPLE_RNN);
    s->ndir = bidir ? 2 : 1;
    s->G = bf_rnn_gates(cell);
    s->Uo = bidir && concat ? 2 * U : U;
    size_t sv = 0, fw = 0;
    for (int d = 0; d < s->ndir; d++) {
        bf_rnn_geom *g = &s->g[d];
        g->cell = cell;
        g->act = L->act;
        g->ract = (bf_act)L->ract;
        g->B = B; g->T = T; g->D = D; g->U = U;
        g->go_backwards = d ? !L->go_backwards : L->go_backwards;
        g->return_sequences = L->return_sequences;
        g->reverse_out = d == 1 && L->return_sequences;
        g->zero_masked = bidir && L->return_sequences && masked(r, L);
        g->ldo = concat ? s->Uo : U;
        s->alias[d] = concat && g->return_sequences && !g->zero_masked && g->reverse_out == g->go_backwards;
        g->ldh = s->alias[d] ? g->ldo : U;
        if (bf_node_training(r, (int)(L - r->m->layers))) { /* Keras: one mask per gate once recurrent_dropout > 0 (implementation 1) */
            const int per_gate = L->rec_rate > 0.0f && cell != BF_CELL_SIMPLE ? s->G : 1;
            g->rate_x = L->rate;
            g->rate_h = L->rec_rate;
            g->nmx = L->rate > 0.0f ? per_gate : 0;
            g->nmh = L->rec_rate > 0.0f ? per_gate : 0;
            g->seed_x = bf_splitmix64(r->rnn_seed[L - r->m->layers] ^ (uint64_t)(2 * d + 1));
            g->seed_h = bf_splitmix64(r->rnn_seed[L - r->m->layers] ^ (uint64_t)(2 * d + 2));
        }
        s->gates[d] = sv; sv += (size_t)B * T * s->G * U;
        if (cell != BF_CELL_SIMPLE) { s->cs[d] = sv; sv += (size_t)B * T * U; }
        if (!s->alias[d]) { s->hs[d] = sv; sv += (size_t)B * T * U; }
        size_t w = r->be->rnn_workspace_bytes ? r->be->rnn_workspace_bytes(r->be, g, 0) / sizeof(float) : 0;
        if (w > fw) fw = w;
        w = r->be->rnn_workspace_bytes ? r->be->rnn_workspace_bytes(r->be, g, 1) / sizeof(float) : 0;
        if (w > s->bws) s->bws = w;
    }
    if (!concat) {
        size_t n = (size_t)B * L->out_size;
        s->o_saved = L->merge_mode == 2;
        for (int d = 0; d < 2; d++) {
            if (s->o_saved) { s->o[d] = sv; sv += n; }
            else { s->o[d] = fw; fw += n; }
        }
        s->bws += 2 * n; /* the directions' output gradients */
    }
    s->saved = sv;
    s->fws = fw;
}

static bf_status bf_seq_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    const size_t fb = sizeof(float), B = (size_t)r->B;
    if (L->kind == BF_L_RNN_PART) { /* reads the recurrent node's kept states */
        bf_run_use(r, r->aux_id[bf_model_producer(r->m, L->in_ids[0])], t);
        return BF_OK;
    }
    if (L->kind == BF_L_EMBEDDING) {
        if (L->mask_zero) {
            BF_TRY(bf_run_newbuf(r, &r->aux_id[i], B * L->in_size * fb, BF_BUF_STATE, L->name, " mask"));
            bf_run_use(r, r->aux_id[i], t);
        }
        return BF_OK;
    }
    seq_layout s;
    layout(r, L, r->B, &s);
    BF_TRY(bf_run_newbuf(r, &r->aux_id[i], s.saved * fb, BF_BUF_SAVED,
                         L->name, " gates and states (kept for backward)"));
    bf_run_use(r, r->aux_id[i], t);
    if (s.fws) {
        BF_TRY(bf_run_newbuf(r, &r->fws_id[i], s.fws * fb, BF_BUF_WORKSPACE, L->name, " forward workspace"));
        bf_run_use(r, r->fws_id[i], t);
    }
    if (!L->mask_off) bf_seq_use_mask(r, L->in_ids[0], t);
    if (bw) {
        if (s.bws) {
            BF_TRY(bf_run_newbuf(r, &r->bws_id[i], s.bws * fb, BF_BUF_WORKSPACE, L->name, " backward workspace"));
            bf_run_use(r, r->bws_id[i], tb);
        }
        if (!L->mask_off) bf_seq_use_mask(r, L->in_ids[0], tb);
    }
    return BF_OK;
}

static float *tbuf(bf_run *r, int t) { return r->t_buf[t] == BF_X_NONE ? r->xslot[r->cur] : BUF(r, r->t_buf[t]); }
static float *param(bf_run *r, const bf_layer *L, int j) { return r->w + L->params[j].offset; }
static float *grad(bf_run *r, const bf_layer *L, int j) {
    return L->params[j].trainable && r->grads ? r->grads + L->params[j].grad_offset : NULL;
}

/* node i's gradient for its input j (run.c din_of), NULL: not needed */
static float *din_of(bf_run *r, int i, int j) {
    int g = r->gtmp[i][j];
    return g == -3 ? NULL : BUF(r, g == -2 ? r->t_grad[r->m->layers[i].in_ids[j]] : g);
}

/* states in and out of direction d of node i: initial states from its inputs,
 * their gradients (backward), the gradients of the final states that
 * RNN_PART nodes read (backward) */
static void bind_states(bf_run *r, int i, int d, int back, bf_rnn_geom *g) {
    const bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const int ns = bf_seq_nstates(L);
    if (L->nin > 1) {
        g->h0 = tbuf(r, L->in_ids[1 + d * ns]);
        g->c0 = ns > 1 ? tbuf(r, L->in_ids[2 + d * ns]) : NULL;
        if (back) {
            g->dh0 = din_of(r, i, 1 + d * ns);
            g->dc0 = ns > 1 ? din_of(r, i, 2 + d * ns) : NULL;
        }
    }
    for (int j = i + 1; back && j < m->nlayers; j++) {
        const bf_layer *P = &m->layers[j];
        if (P->kind != BF_L_RNN_PART || P->in_ids[0] != m->n_inputs + i || P->part < 0 || P->part / ns != d ||
            !r->node_bw[j])
            continue;
        const float *dg = BUF(r, r->t_grad[m->n_inputs + j]);
        if (P->part % ns) g->dc_last = dg;
        else g->dh_last = dg;
    }
}

/* RNN_PART: a final state (from the kept states, or the output where it holds
 * them) or a half of the output; backward: a half's gradient into its columns */
static bf_status part_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i], *S = &r->m->layers[bf_model_producer(r->m, L->in_ids[0])];
    float *src = tbuf(r, L->in_ids[0]), *out = tbuf(r, r->m->n_inputs + i);
    const int U = S->units, T = S->in_shape[0];
    if (L->part < 0)
        return be->copy2d(be, out, U, src + (size_t)(-L->part - 1) * U, 2 * U,
                          (long)rows * (S->return_sequences ? T : 1), U);
    seq_layout s;
    layout(r, S, rows, &s);
    const int ns = bf_seq_nstates(S), d = L->part / ns;
    const bf_rnn_geom *g = &s.g[d];
    const int p = g->go_backwards ? 0 : T - 1; /* the position the last step read */
    float *sv = BUF(r, r->aux_id[bf_model_producer(r->m, L->in_ids[0])]);
    if (L->part % ns) return be->copy2d(be, out, U, sv + s.cs[d] + (size_t)p * U, (long)T * U, rows, U);
    const float *hs = s.alias[d] ? src + (size_t)d * U : sv + s.hs[d];
    return be->copy2d(be, out, U, hs + (size_t)p * g->ldh, (long)T * g->ldh, rows, U);
}

static bf_status part_backward(bf_run *r, int i, int rows, const float *dout, float *din) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i], *S = &r->m->layers[bf_model_producer(r->m, L->in_ids[0])];
    if (!din) return BF_OK;
    BF_TRY(be->fill_zero(be, din, sizeof(float) * (size_t)rows * S->out_size)); /* a state adds nothing here */
    if (L->part >= 0) return BF_OK;
    const int U = S->units;
    return be->copy2d(be, din + (size_t)(-L->part - 1) * U, 2 * U, dout, U,
                      (long)rows * (S->return_sequences ? S->in_shape[0] : 1), U);
}

static bf_status bf_seq_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    bf_layer *L = &r->m->layers[i];
    if (L->kind == BF_L_RNN_PART) return part_forward(r, i, rows);
    float *in = tbuf(r, L->in_ids[0]), *out = tbuf(r, r->m->n_inputs + i);
    if (L->kind == BF_L_EMBEDDING)
        return be->embedding_forward(be, out, L->mask_zero ? BUF(r, r->aux_id[i]) : NULL, &r->stats->layer[i].bad_id,
                                     &r->stats->layer[i].bad_id_val, in, param(r, L, 0), (long)rows * L->in_size,
                                     L->units, L->input_dim);
    if (bf_node_training(r, i) && (L->rate > 0.0f || L->rec_rate > 0.0f)) { /* fresh masks, kept for backward */
        r->rnn_seed[i] = bf_splitmix64(r->dropout_seed ^ ((uint64_t)(i + 1) << 44));
        r->dropout_seed = bf_splitmix64(r->dropout_seed + 1);
    }
    seq_layout s;
    layout(r, L, rows, &s);
    float *sv = BUF(r, r->aux_id[i]), *fw = r->fws_id[i] >= 0 ? BUF(r, r->fws_id[i]) : NULL;
    const float *mask = rnn_mask(r, L);
    const int np = L->use_bias ? 3 : 2, concat = !(L->kind == BF_L_BIDIR && L->merge_mode);
    for (int d = 0; d < s.ndir; d++) {
        float *o = concat ? out + (size_t)d * L->units : (s.o_saved ? sv : fw) + s.o[d];
        float *hs = s.alias[d] ? o : sv + s.hs[d];
        bind_states(r, i, d, 0, &s.g[d]);
        BF_TRY(be->rnn_forward(be, &s.g[d], o, hs, sv + s.gates[d], s.g[d].cell != BF_CELL_SIMPLE ? sv + s.cs[d] : NULL,
                               fw, in, param(r, L, np * d), param(r, L, np * d + 1),
                               L->use_bias ? param(r, L, np * d + 2) : NULL, mask));
    }
    if (concat) return BF_OK;
    float *base = s.o_saved ? sv : fw;
    long n = (long)rows * L->out_size;
    bf_ewise_op op = L->merge_mode == 2 ? BF_EW_MUL : BF_EW_ADD;
    return be->ewise(be, out, base + s.o[0], base + s.o[1], NULL, op, L->merge_mode == 3 ? 0.5f : 1.0f, n);
}

static bf_status bf_seq_backward(bf_run *r, int i, int rows, const float *dout, float *din) {
    bf_backend *be = r->be;
    bf_layer *L = &r->m->layers[i];
    if (L->kind == BF_L_RNN_PART) return part_backward(r, i, rows, dout, din);
    float *in = tbuf(r, L->in_ids[0]);
    if (L->kind == BF_L_EMBEDDING) {
        if (din) BF_TRY(be->fill_zero(be, din, sizeof(float) * (size_t)rows * L->in_size));
        float *dt = grad(r, L, 0);
        return dt ? be->embedding_backward(be, dt, dout, in, (long)rows * L->in_size, L->units, L->input_dim) : BF_OK;
    }
    seq_layout s;
    layout(r, L, rows, &s);
    float *sv = BUF(r, r->aux_id[i]), *bw = r->bws_id[i] >= 0 ? BUF(r, r->bws_id[i]) : NULL;
    const float *mask = rnn_mask(r, L);
    const int np = L->use_bias ? 3 : 2, concat = !(L->kind == BF_L_BIDIR && L->merge_mode);
    const float *dd[2] = {dout, dout};
    if (!concat) {
        long n = (long)rows * L->out_size;
        float *d0 = bw + s.bws - 2 * (size_t)rows * L->out_size, *d1 = d0 + n;
        if (L->merge_mode == 2) { /* mul: each direction's gradient is dout times the other's output */
            BF_TRY(be->ewise(be, d0, dout, sv + s.o[1], NULL, BF_EW_MUL, 1.0f, n));
            BF_TRY(be->ewise(be, d1, dout, sv + s.o[0], NULL, BF_EW_MUL, 1.0f, n));
            dd[0] = d0; dd[1] = d1;
        } else if (L->merge_mode == 3) {
            BF_TRY(be->ewise(be, d0, dout, NULL, NULL, BF_EW_SCALE, 0.5f, n));
            dd[0] = dd[1] = d0;
        }
    }
    float *out = tbuf(r, r->m->n_inputs + i);
    for (int d = 0; d < s.ndir; d++) {
        const float *hs = s.alias[d] ? out + (size_t)d * L->units : sv + s.hs[d];
        const float *o = concat ? dd[d] + (size_t)d * L->units : dd[d];
        bind_states(r, i, d, 1, &s.g[d]);
        BF_TRY(be->rnn_backward(be, &s.g[d], din, grad(r, L, np * d), grad(r, L, np * d + 1),
                                L->use_bias ? grad(r, L, np * d + 2) : NULL, sv + s.gates[d], bw, o, hs,
                                s.g[d].cell != BF_CELL_SIMPLE ? sv + s.cs[d] : NULL, in, param(r, L, np * d),
                                param(r, L, np * d + 1), mask, d > 0));
    }
    return BF_OK;
}

/* ---- vtables ---- */

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

static bf_status rnn_mask_of(const bf_model *m, int i, int *mask) {
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
    .flags = BF_LF_READS_IN | BF_LF_IDS | BF_LF_SCALAR,
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
        .check = bf_seq_check_node, .mask = rnn_mask_of, .supported = rnn_supported, .plan = bf_seq_plan,             \
        .forward = bf_seq_forward, .backward = seq_backward, .post_init = rnn_post_init,                           \
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
