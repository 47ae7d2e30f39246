/* recurrent.c - SimpleRNN, LSTM, GRU, Bidirectional and RNN_PART: their
 * configuration (bf_rnn_cfg, bf_rnn_part_cfg), shapes, parameters, masks,
 * plan and steps, and their vtables.
 *
 * Shapes and parameters (Keras 3 layouts): a recurrent layer (T,D) ->
 * (T,U) or (U,): kernel (D,G*U) glorot, recurrent_kernel (U,G*U)
 * orthogonal, bias (G*U,) or GRU (2,G*U) zeros
 * (LSTM: forget gate 1). Bidirectional: the same twice, forward then
 * backward (roles 0-2, 3-5), output 2U with merge_mode concat.
 *
 * In a run, a recurrent node keeps per direction, for backward (one planned
 * "saved" buffer, carved below): gates (B,T,G*U), LSTM cells / GRU recurrent part cs (B,T,U) and the states
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

static inline int bf_is_rnn_kind(bf_layer_kind k) { return k >= BF_L_SIMPLE_RNN && k <= BF_L_BIDIR; }

/* Several outputs (Keras return_state, Bidirectional merge_mode=None): the
 * recurrent node's output is the first, an RNN_PART node reading it gives
 * each other one. part >= 0: final state number `part` in Keras's order
 * (per direction h then, for an LSTM, c; forward then backward), shape
 * (U,); part -1 / -2: the forward / backward half of a Bidirectional whose
 * node computes merge_mode "concat". Initial states are the recurrent
 * node's inputs 1.. in the same order. */
static inline int bf_seq_nstates(const bf_layer *L) { return L->cfg.rnn.cell == BF_L_LSTM ? 2 : 1; }

static void rnn_params(bf_layer *L, int role, const char *dir, int D, int U, int G) {
    const bf_rnn_cfg *c = &L->cfg.rnn;
    char nm[48];
    int ks[2] = {D, G * U}, rs[2] = {U, G * U}, bs[2] = {2, G * U};
    snprintf(nm, sizeof nm, "%skernel", dir);
    bf_add_param(L, role, nm, 2, ks, 1, BF_INIT_GLOROT_UNIFORM, (float)D, (float)(G * U));
    snprintf(nm, sizeof nm, "%srecurrent_kernel", dir);
    bf_add_param(L, role + 1, nm, 2, rs, 1, BF_INIT_ORTHOGONAL, (float)U, (float)(G * U));
    if (!L->inits[role + 1].set) L->params[L->nparam - 1].init_a = 1.0f; /* gain */
    if (!c->use_bias) return;
    snprintf(nm, sizeof nm, "%sbias", dir);
    if (c->cell == BF_L_GRU) bf_add_param(L, role + 2, nm, 2, bs, 1, BF_INIT_ZEROS, 2.0f, (float)(G * U));
    else bf_add_param(L, role + 2, nm, 1, bs + 1, 1, BF_INIT_ZEROS, 0, 0);
}

static bf_status rnn_parse(bf_layer *L, const bf_spec *s) {
    bf_rnn_cfg *c = &L->cfg.rnn;
    BF_TRY(bf_spec_size(s, "units", 0, &c->units));
    BF_TRY(bf_spec_flag(s, "use_bias", 1, &c->use_bias));
    BF_TRY(bf_spec_int(s, "cell", 0, &c->cell));
    BF_TRY(bf_spec_flag(s, "return_sequences", 0, &c->return_sequences));
    BF_TRY(bf_spec_flag(s, "go_backwards", 0, &c->go_backwards));
    BF_TRY(bf_spec_flag(s, "unit_forget_bias", 1, &c->unit_forget_bias));
    BF_TRY(bf_spec_int(s, "merge_mode", 0, &c->merge_mode));
    BF_TRY(bf_spec_int(s, "ract", BF_ACT_SIGMOID, &c->ract));
    BF_TRY(bf_spec_flag(s, "zero_output", 0, &c->zero_output));
    BF_TRY(bf_spec_flag(s, "in_order", 0, &c->in_order));
    BF_TRY(bf_spec_float(s, "rate", 0.0f, &c->rate));
    return bf_spec_float(s, "rec_rate", 0.0f, &c->rec_rate);
}

static bf_status rnn_infer(bf_layer *L, int rank, const int *shape) {
    bf_rnn_cfg *c = &L->cfg.rnn;
    if (c->units <= 0) return BF_FAIL(BF_ERR_ARG, "%s: units must be positive, got %d", L->name, c->units);
    if (rank != 2)
        return BF_FAIL(BF_ERR_SHAPE, "%s expects input of rank 2 (timesteps, features) per sample, got rank %d", L->name,
                       rank);
    if (L->kind != BF_L_BIDIR) c->cell = L->kind;
    if (c->cell < BF_L_SIMPLE_RNN || c->cell > BF_L_GRU)
        return BF_FAIL(BF_ERR_ARG, "%s: unknown recurrent cell %d", L->name, c->cell);
    if (!(c->rate >= 0.0f && c->rate < 1.0f) || !(c->rec_rate >= 0.0f && c->rec_rate < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: dropout and recurrent_dropout must be in [0, 1), got %g and %g", L->name,
                       (double)c->rate, (double)c->rec_rate);
    if (L->kind == BF_L_BIDIR && (c->merge_mode < 0 || c->merge_mode > 3))
        return BF_FAIL(BF_ERR_ARG, "%s: unknown merge_mode %d", L->name, c->merge_mode);
    int T = shape[0], D = shape[1], U = c->units;
    int G = bf_rnn_gates((bf_cell_kind)(c->cell - BF_L_SIMPLE_RNN));
    if ((long long)G * U > INT_MAX || (L->kind == BF_L_BIDIR && 2LL * U > INT_MAX))
        return BF_FAIL(BF_ERR_ARG, "%s: units must be at most %d for this cell (its %d gates side by side), got %d",
                       L->name, INT_MAX / (L->kind == BF_L_BIDIR && G < 2 ? 2 : G), G, U);
    if (L->kind == BF_L_BIDIR) {
        rnn_params(L, 0, "forward_", D, U, G);
        rnn_params(L, 3, "backward_", D, U, G);
    } else {
        rnn_params(L, 0, "", D, U, G);
    }
    int Uo = L->kind == BF_L_BIDIR && c->merge_mode == 0 ? 2 * U : U;
    L->out_rank = c->return_sequences ? 2 : 1;
    L->out_shape[0] = c->return_sequences ? T : Uo;
    L->out_shape[1] = Uo;
    return BF_OK;
}

/* after initialization: LSTM unit_forget_bias sets the forget gate's bias to 1 */
static void rnn_post_init(bf_model *m, int i) {
    const bf_layer *L = &m->layers[i];
    const bf_rnn_cfg *c = &L->cfg.rnn;
    if (c->cell != BF_L_LSTM || !c->use_bias || !c->unit_forget_bias) return;
    for (int d = 0; d < (L->kind == BF_L_BIDIR ? 2 : 1); d++) {
        const bf_param *b = &L->params[3 * d + 2];
        for (int j = 0; j < c->units; j++) m->w[b->offset + (size_t)c->units + j] = 1.0f;
    }
}

/* initial states: none, or every state of every direction, each (units,) */
static bf_status rnn_check(bf_model *m, int i) {
    const bf_layer *L = &m->layers[i];
    const int U = L->cfg.rnn.units, ns = bf_seq_nstates(L) * (L->kind == BF_L_BIDIR ? 2 : 1), n = L->nin - 1;
    if (n != 0 && n != ns)
        return BF_FAIL(BF_ERR_ARG, "%s: initial_state must be a list of %d tensors, got %d", L->name, ns, n);
    for (int j = 1; j < L->nin; j++) {
        const int t = L->in_ids[j];
        if (m->t_rank[t] != 1 || m->t_shape[t][0] != U)
            return BF_FAIL(BF_ERR_SHAPE, "%s: initial_state[%d] must have shape (batch, %d), got rank %d per "
                           "sample with last dimension %d", L->name, j - 1, U, m->t_rank[t],
                           m->t_shape[t][m->t_rank[t] - 1]);
    }
    return BF_OK;
}

/* RNN_PART: its recurrent node has the part; its shape from that node's */
static bf_status part_check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    const int part = L->cfg.rnn_part.part, src = bf_model_producer(m, L->in_ids[0]);
    const bf_layer *S = src >= 0 ? &m->layers[src] : NULL;
    if (!S || !bf_is_rnn_kind(S->kind))
        return BF_FAIL(BF_ERR_ARG, "%s: reads the output of a recurrent layer, got another tensor", L->name);
    const bf_rnn_cfg *c = &S->cfg.rnn;
    const int bidir = S->kind == BF_L_BIDIR, ns = bf_seq_nstates(S) * (bidir ? 2 : 1);
    if (part >= ns || part < (bidir && c->merge_mode == 0 ? -2 : 0))
        return BF_FAIL(BF_ERR_ARG, "%s: %s has no output part %d", L->name, S->name, part);
    if (part >= 0) {
        L->out_rank = 1;
        L->out_shape[0] = c->units;
    } else {
        L->out_rank = S->out_rank;
        L->out_shape[0] = S->out_shape[0];
        L->out_shape[L->out_rank - 1] = c->units;
    }
    return BF_OK;
}

/* ---- in a run ---- */

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
    const bf_rnn_cfg *c = &L->cfg.rnn;
    memset(s, 0, sizeof *s);
    const int bidir = L->kind == BF_L_BIDIR, concat = !bidir || c->merge_mode == 0;
    const int T = L->in_shape[0], D = L->in_shape[1], U = c->units;
    const bf_cell_kind cell = (bf_cell_kind)(c->cell - BF_L_SIMPLE_RNN);
    s->ndir = bidir ? 2 : 1;
    s->G = bf_rnn_gates(cell);
    s->Uo = bidir && concat ? 2 * U : U;
    size_t sv = 0, fw = 0;
    for (int d = 0; d < s->ndir; d++) {
        bf_rnn_geom *g = &s->g[d];
        g->cell = cell;
        g->act = L->act;
        g->ract = (bf_act)c->ract;
        g->B = B; g->T = T; g->D = D; g->U = U;
        g->go_backwards = d ? !c->go_backwards : c->go_backwards;
        g->return_sequences = c->return_sequences;
        g->reverse_out = (d == 1 || (c->in_order && c->go_backwards)) && c->return_sequences;
        g->zero_masked = (bidir || c->zero_output) && c->return_sequences && masked(r, L);
        g->ldo = concat ? s->Uo : U;
        s->alias[d] = concat && g->return_sequences && !g->zero_masked && g->reverse_out == g->go_backwards;
        g->ldh = s->alias[d] ? g->ldo : U;
        if (bf_node_training(r, (int)(L - r->m->layers))) { /* Keras: one mask per gate once recurrent_dropout > 0 (implementation 1) */
            const int per_gate = c->rec_rate > 0.0f && cell != BF_CELL_SIMPLE ? s->G : 1;
            g->rate_x = c->rate;
            g->rate_h = c->rec_rate;
            g->nmx = c->rate > 0.0f ? per_gate : 0;
            g->nmh = c->rec_rate > 0.0f ? per_gate : 0;
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
        s->o_saved = c->merge_mode == 2;
        for (int d = 0; d < 2; d++) {
            if (s->o_saved) { s->o[d] = sv; sv += n; }
            else { s->o[d] = fw; fw += n; }
        }
        s->bws += 2 * n; /* the directions' output gradients */
    }
    s->saved = sv;
    s->fws = fw;
}

/* RNN_PART reads the recurrent node's kept states */
static bf_status part_plan(bf_run *r, int i, int t, int tb, int bw) {
    (void)tb;
    (void)bw;
    bf_run_use(r, r->aux_id[bf_model_producer(r->m, r->m->layers[i].in_ids[0])], t);
    return BF_OK;
}

static bf_status rnn_plan(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    const size_t fb = sizeof(float);
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

/* states in and out of direction d of node i: initial states from its inputs,
 * their gradients (backward), the gradients of the final states that
 * RNN_PART nodes read (backward) */
static void bind_states(bf_run *r, int i, int d, int back, bf_rnn_geom *g) {
    const bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const int ns = bf_seq_nstates(L);
    if (L->nin > 1) {
        g->h0 = bf_step_tensor(r, L->in_ids[1 + d * ns]);
        g->c0 = ns > 1 ? bf_step_tensor(r, L->in_ids[2 + d * ns]) : NULL;
        if (back) {
            g->dh0 = bf_step_din(r, i, 1 + d * ns);
            g->dc0 = ns > 1 ? bf_step_din(r, i, 2 + d * ns) : NULL;
        }
    }
    for (int j = i + 1; back && j < m->nlayers; j++) {
        const bf_layer *P = &m->layers[j];
        if (P->kind != BF_L_RNN_PART) continue;
        const int part = P->cfg.rnn_part.part;
        if (P->in_ids[0] != m->n_inputs + i || part < 0 || part / ns != d || !r->node_bw[j]) continue;
        const float *dg = BF_BUF(r, r->t_grad[m->n_inputs + j]);
        if (part % ns) g->dc_last = dg;
        else g->dh_last = dg;
    }
}

/* RNN_PART: a final state (from the kept states, or the output where it holds
 * them) or a half of the output; backward: a half's gradient into its columns */
static bf_status part_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const int src_node = bf_model_producer(r->m, r->m->layers[i].in_ids[0]);
    const bf_layer *S = &r->m->layers[src_node];
    const bf_rnn_cfg *c = &S->cfg.rnn;
    const int part = r->m->layers[i].cfg.rnn_part.part;
    float *src = bf_step_in(r, i), *out = bf_step_out(r, i);
    const int U = c->units, T = S->in_shape[0];
    if (part < 0)
        return be->copy2d(be, out, U, src + (size_t)(-part - 1) * U, 2 * U, (long)rows * (c->return_sequences ? T : 1),
                          U);
    seq_layout s;
    layout(r, S, rows, &s);
    const int ns = bf_seq_nstates(S), d = part / ns;
    const bf_rnn_geom *g = &s.g[d];
    const int p = g->go_backwards ? 0 : T - 1; /* the position the last step read */
    float *sv = BF_BUF(r, r->aux_id[src_node]);
    if (part % ns) return be->copy2d(be, out, U, sv + s.cs[d] + (size_t)p * U, (long)T * U, rows, U);
    const float *hs = s.alias[d] ? src + (size_t)d * U : sv + s.hs[d];
    return be->copy2d(be, out, U, hs + (size_t)p * g->ldh, (long)T * g->ldh, rows, U);
}

static bf_status part_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i], *S = &r->m->layers[bf_model_producer(r->m, L->in_ids[0])];
    const int part = L->cfg.rnn_part.part, U = S->cfg.rnn.units;
    if (!din) return BF_OK;
    BF_TRY(be->fill_zero(be, din, sizeof(float) * (size_t)rows * S->out_size)); /* a state adds nothing here */
    if (part >= 0) return BF_OK;
    return be->copy2d(be, din + (size_t)(-part - 1) * U, 2 * U, dout, U,
                      (long)rows * (S->cfg.rnn.return_sequences ? S->in_shape[0] : 1), U);
}

static bf_status rnn_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_rnn_cfg *c = &L->cfg.rnn;
    float *in = bf_step_in(r, i), *out = bf_step_out(r, i);
    if (bf_node_training(r, i) && (c->rate > 0.0f || c->rec_rate > 0.0f)) { /* fresh masks, kept for backward */
        r->rnn_seed[i] = bf_splitmix64(r->dropout_seed ^ ((uint64_t)(i + 1) << 44));
        r->dropout_seed = bf_splitmix64(r->dropout_seed + 1);
    }
    seq_layout s;
    layout(r, L, rows, &s);
    float *sv = BF_BUF(r, r->aux_id[i]), *fw = bf_step_buf(r, r->fws_id[i]);
    const float *mask = rnn_mask(r, L);
    const int np = c->use_bias ? 3 : 2, concat = !(L->kind == BF_L_BIDIR && c->merge_mode);
    for (int d = 0; d < s.ndir; d++) {
        float *o = concat ? out + (size_t)d * c->units : (s.o_saved ? sv : fw) + s.o[d];
        float *hs = s.alias[d] ? o : sv + s.hs[d];
        bind_states(r, i, d, 0, &s.g[d]);
        BF_TRY(be->rnn_forward(be, &s.g[d], o, hs, sv + s.gates[d], s.g[d].cell != BF_CELL_SIMPLE ? sv + s.cs[d] : NULL,
                               fw, in, bf_step_param(r, L, np * d), bf_step_param(r, L, np * d + 1),
                               c->use_bias ? bf_step_param(r, L, np * d + 2) : NULL, mask));
    }
    if (concat) return BF_OK;
    float *base = s.o_saved ? sv : fw;
    long n = (long)rows * L->out_size;
    bf_ewise_op op = c->merge_mode == 2 ? BF_EW_MUL : BF_EW_ADD;
    return be->ewise(be, out, base + s.o[0], base + s.o[1], NULL, op, c->merge_mode == 3 ? 0.5f : 1.0f, n);
}

static bf_status rnn_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    const bf_rnn_cfg *c = &L->cfg.rnn;
    float *in = bf_step_in(r, i);
    seq_layout s;
    layout(r, L, rows, &s);
    float *sv = BF_BUF(r, r->aux_id[i]), *bw = bf_step_buf(r, r->bws_id[i]);
    const float *mask = rnn_mask(r, L);
    const int np = c->use_bias ? 3 : 2, concat = !(L->kind == BF_L_BIDIR && c->merge_mode);
    const float *dd[2] = {dout, dout};
    if (!concat) {
        long n = (long)rows * L->out_size;
        float *d0 = bw + s.bws - 2 * (size_t)rows * L->out_size, *d1 = d0 + n;
        if (c->merge_mode == 2) { /* mul: each direction's gradient is dout times the other's output */
            BF_TRY(be->ewise(be, d0, dout, sv + s.o[1], NULL, BF_EW_MUL, 1.0f, n));
            BF_TRY(be->ewise(be, d1, dout, sv + s.o[0], NULL, BF_EW_MUL, 1.0f, n));
            dd[0] = d0; dd[1] = d1;
        } else if (c->merge_mode == 3) {
            BF_TRY(be->ewise(be, d0, dout, NULL, NULL, BF_EW_SCALE, 0.5f, n));
            dd[0] = dd[1] = d0;
        }
    }
    float *out = bf_step_out(r, i);
    for (int d = 0; d < s.ndir; d++) {
        const float *hs = s.alias[d] ? out + (size_t)d * c->units : sv + s.hs[d];
        const float *o = concat ? dd[d] + (size_t)d * c->units : dd[d];
        bind_states(r, i, d, 1, &s.g[d]);
        BF_TRY(be->rnn_backward(be, &s.g[d], din, bf_step_grad(r, L, np * d), bf_step_grad(r, L, np * d + 1),
                                c->use_bias ? bf_step_grad(r, L, np * d + 2) : NULL, sv + s.gates[d], bw, o, hs,
                                s.g[d].cell != BF_CELL_SIMPLE ? sv + s.cs[d] : NULL, in, bf_step_param(r, L, np * d),
                                bf_step_param(r, L, np * d + 1), mask, d > 0));
    }
    return BF_OK;
}

/* ---- vtables ---- */

static bf_status part_parse(bf_layer *L, const bf_spec *s) { return bf_spec_int(s, "part", 0, &L->cfg.rnn_part.part); }

static bf_status part_infer(bf_layer *L, int rank, const int *shape) {
    (void)L;
    (void)rank;
    (void)shape;
    return BF_OK; /* its shape from the recurrent node: part_check */
}

static bf_status rnn_mask_of(const bf_model *m, int i, int *mask) {
    const bf_layer *L = &m->layers[i];
    *mask = L->cfg.rnn.return_sequences ? m->t_mask[L->in_ids[0]] : -1;
    return BF_OK;
}

/* a half of a sequence keeps its mask; a final state has none */
static bf_status part_mask(const bf_model *m, int i, int *mask) {
    const bf_layer *L = &m->layers[i];
    *mask = L->cfg.rnn_part.part < 0 ? m->t_mask[L->in_ids[0]] : -1;
    return BF_OK;
}

static int rnn_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->rnn_forward && be->rnn_backward && be->rnn_workspace_bytes && be->ewise;
}

static int part_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->copy2d && be->fill_zero;
}

static unsigned part_flags(const bf_run *r, int i) {
    return r->m->layers[i].cfg.rnn_part.part >= 0 ? BF_LF_SIDE_OUT : 0;
}

#define RNN_OPS(KIND)                                                                                              \
    const bf_layer_ops bf_ops_##KIND = {                                                                           \
        .name = #KIND, .flags = BF_LF_MULTI_IN | BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_WHOLE16,                \
        .parse = rnn_parse,                                                                                        \
        .infer = rnn_infer, .check = rnn_check, .mask = rnn_mask_of, .supported = rnn_supported, .plan = rnn_plan, \
        .forward = rnn_forward, .backward = rnn_backward, .post_init = rnn_post_init,                              \
    };
RNN_OPS(SIMPLE_RNN)
RNN_OPS(LSTM)
RNN_OPS(GRU)
RNN_OPS(BIDIR)
#undef RNN_OPS

const bf_layer_ops bf_ops_RNN_PART = {
    .name = "RNN_PART",
    .parse = part_parse,
    .infer = part_infer,
    .check = part_check,
    .mask = part_mask,
    .supported = part_supported,
    .node_flags = part_flags,
    .plan = part_plan,
    .forward = part_forward,
    .backward = part_backward,
};
