/* program.c - compile a model graph into the buffers of one step and plan them.
 * Timeline of a training step with L nodes (topological order): the split of
 * a packed multi-input batch at t=0, forward of node i at t=i+1, losses at
 * t=L+1, backward of node i at t=2L+1-i. A buffer lives from its first write
 * to its last read, so activations that backward does not need are reused
 * early. A tensor read by several nodes gets one gradient buffer: the first
 * contribution in backward order is written into it, later ones are computed
 * into a scratch buffer and added. Flatten / Reshape (and Dropout outside
 * training, linear or fused activations) are views: their output is their
 * input buffer, and their input's gradient may be their output's. Tensors
 * that no trainable parameter depends on get no gradient at all (a frozen
 * base model costs no backward). */
#include "program.h"

#include "bufs.h"
#include "backend_registry.h"
#include "dist_mpi.h"
#include "layer_registry.h"
#include "masks.h"
#include "mixed.h"
#include "opt_matrix.h"
#include "seq_loss.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* node i's flags in this run (layer_registry.h) */
static unsigned flags_of(const bf_run *r, int i) { return bf_layer_node_flags(r, i); }

/* node i reads its input j in this run: all of them, but a view that selects one (SWITCH) reads that one only */
static int reads_input(const bf_run *r, int i, int j) {
    const bf_layer_ops *ops = bf_layer_ops_of((int)r->m->layers[i].kind);
    return !ops->view_in || ops->view_in(r, i) == j;
}

/* a linear map whose activation's backward needs its input: the pre-activation is kept */
static int keeps_z(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    return (flags_of(r, i) & BF_LF_LINEAR_ACT) && !r->node_fused[i] && bf_act_needs_x(L->act);
}

/* backward reads the inputs */
static int needs_in(const bf_run *r, int i) { return (flags_of(r, i) & (BF_LF_READS_IN | BF_LF_LINEAR_ACT)) != 0; }

/* backward reads the output */
static int needs_out(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    unsigned f = flags_of(r, i);
    if (f & BF_LF_LINEAR_ACT) return L->act != BF_ACT_LINEAR && !r->node_fused[i] && !bf_act_needs_x(L->act);
    return (f & BF_LF_READS_OUT) != 0;
}

static void entry(bf_run *r, const char *name, const char *cat, size_t bytes, int on_device) {
    if (r->nentry >= BF_PLAN_MAXENTRY || bytes == 0) return;
    bf_plan_entry *e = &r->entries[r->nentry++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->category = cat;
    e->bytes = bytes;
    e->on_device = on_device;
}

static int has_trainable(const bf_layer *L) {
    for (int j = 0; j < L->nparam; j++)
        if (L->params[j].trainable) return 1;
    return 0;
}

/* the backward of node i runs at t = 2L+1-i */
static int bw_time(const bf_run *r, int i) { return 2 * r->m->nlayers + 1 - i; }

/* every op the model needs exists on this backend; outputs and copies it can run */
static bf_status check_backend(const bf_run *r) {
    const bf_model *m = r->m;
    const bf_backend *be = r->be;
    for (int i = 0; i < m->nlayers; i++) {
        const bf_layer *ly = &m->layers[i];
        const bf_layer_ops *ops = bf_layer_ops_of((int)ly->kind);
        int ok = ops && (!ops->supported || ops->supported(be, ly));
        if (bf_act_is_x(ly->act) && !(be->actx_forward && be->actx_backward)) ok = 0;
        if (!ok)
            return BF_FAIL(BF_ERR_ARG, "layer '%s' is not implemented on the %s backend in this build", ly->name, be->name);
    }
    if (r->mode != BF_MODE_PREDICT) BF_TRY(bf_seq_check_outputs(m)); /* a masked output: Keras masks its loss */
    if (r->mode == BF_MODE_TRAIN) BF_TRY(bf_opt_matrix_check(m, be)); /* Adafactor, Muon: CPU only */
    if ((m->n_inputs > 1 || m->n_outputs > 1) && !be->copy2d)
        return BF_FAIL(BF_ERR_ARG, "models with several inputs or outputs need copy2d, missing on the %s backend", be->name);
    return BF_OK;
}

/* the nodes of this run (bf_layer.modes: the others get no buffers and no
 * steps), and which tensors need a gradient: those a trainable parameter feeds */
static void plan_nodes(bf_run *r) {
    const bf_model *m = r->m;
    const int L = m->nlayers, NI = m->n_inputs, train = r->mode == BF_MODE_TRAIN;
    for (int i = 0; i < L; i++) r->node_off[i] = !bf_node_on(r, i);
    for (int t = 0; t < NI; t++) r->need_grad[t] = 0;
    for (int i = 0; i < L; i++) {
        const bf_layer *ly = &m->layers[i];
        int ng = train && !r->node_off[i] && has_trainable(ly);
        for (int j = 0; j < ly->nin && !r->node_off[i] && !(flags_of(r, i) & BF_LF_NO_GRAD_IN); j++)
            if (reads_input(r, i, j)) ng |= r->need_grad[ly->in_ids[j]];
        r->need_grad[NI + i] = ng;
    }
    /* ... and that a gradient reaches: an output, or an input of a node that passes its gradient on (not past a
     * stop_gradient or an argsort: BF_LF_NO_GRAD_IN). The consumers come later: backwards, one pass. */
    int *reached = r->work; /* (tensors) */
    memset(reached, 0, sizeof(int) * (size_t)(NI + L));
    for (int k = 0; k < m->n_outputs; k++) reached[m->out_t[k]] = 1;
    for (int i = L - 1; i >= 0; i--) {
        const bf_layer *ly = &m->layers[i];
        if (!reached[NI + i]) r->need_grad[NI + i] = 0;
        if (!r->need_grad[NI + i] || (flags_of(r, i) & BF_LF_NO_GRAD_IN)) continue;
        for (int j = 0; j < ly->nin; j++)
            if (reads_input(r, i, j)) reached[ly->in_ids[j]] = 1;
    }
}

/* forward buffers: the split inputs, each node's output (a view's is its
 * input's), its workspaces and kept statistics, a kept pre-activation */
static bf_status plan_forward(bf_run *r) {
    bf_model *m = r->m;
    const int L = m->nlayers, NI = m->n_inputs, train = r->mode == BF_MODE_TRAIN;
    const size_t fb = sizeof(float), B = (size_t)r->B;
    for (int t = 0; t < NI + L; t++) r->t_buf[t] = r->t_grad[t] = -2;
    if (NI == 1) r->t_buf[0] = BF_X_NONE;
    else
        for (int k = 0; k < NI; k++) {
            char nm[16];
            snprintf(nm, sizeof nm, "%d", k);
            BF_TRY(bf_run_newbuf_fmt(r, &r->t_buf[k], B * (size_t)m->in_sizes[k] * fb, BF_BUF_SAVED,
                                     "input %s%s (split from the batch)", nm, ""));
            bf_run_use(r, r->t_buf[k], 0);
        }
    for (int i = 0; i < L; i++) {
        bf_layer *ly = &m->layers[i];
        int o = NI + i, t = i + 1;
        r->fws_id[i] = r->bws_id[i] = r->aux_id[i] = -2;
        r->node_view[i] = 0;
        if (r->node_off[i]) continue;
        for (int j = 0; j < ly->nin; j++) /* python/boundfit/graph.py gives a node's inputs its modes */
            if (reads_input(r, i, j) && r->t_buf[ly->in_ids[j]] == -2)
                return BF_FAIL(BF_ERR_INTERNAL, "%s reads a tensor that is not computed in this run", ly->name);
        r->node_view[i] = (flags_of(r, i) & BF_LF_VIEW) != 0;
        BF_TRY(bf_mixed_plan_forward(r, i, t)); /* bfloat16 storage, float32 conversions (mixed precision) */
        if (r->cv[i]) r->cv[i] |= (needs_in(r, i) ? BF_CV_READS_IN : 0) | (needs_out(r, i) ? BF_CV_READS_OUT : 0);
        if (r->node_view[i]) {
            const bf_layer_ops *vo = bf_layer_ops_of((int)ly->kind);
            r->t_buf[o] = r->t_buf[ly->in_ids[vo->view_in ? vo->view_in(r, i) : 0]];
        } else {
            BF_TRY(bf_run_newbuf_fmt(r, &r->t_buf[o], B * ly->out_size * bf_mixed_elem(r, o), BF_BUF_SAVED,
                                     "%s%s output", ly->name, ""));
        }
        for (int j = 0; j < ly->nin; j++)
            if (reads_input(r, i, j)) bf_run_use(r, r->t_buf[ly->in_ids[j]], t);
        bf_run_use(r, r->t_buf[o], t);
        int bw = train && r->need_grad[o];
        const bf_layer_ops *ops = bf_layer_ops_of((int)ly->kind);
        if (ops->plan) { /* workspaces, kept statistics; a backend sizes them for the node's compute dtype */
            r->be->half = r->cv[i] ? ly->half : 0;
            bf_status s = ops->plan(r, i, t, bw_time(r, i), bw);
            r->be->half = 0;
            BF_TRY(s);
        }
        if (bw && keeps_z(r, i)) {
            BF_TRY(bf_run_newbuf_fmt(r, &r->aux_id[i], B * ly->out_size * fb, BF_BUF_STATE,
                                     "%s%s pre-activation", ly->name, ""));
            bf_run_use(r, r->aux_id[i], t);
        }
        /* the masks it reads (layer_registry.h: mask_reads) stay alive */
        bf_seq_plan_mask_readers(r, i, t, bw_time(r, i), bw);
    }
    return BF_OK;
}

/* losses, metrics, or the copy-out of predictions at t = L + 1 */
static bf_status plan_outputs(bf_run *r, int weighted) {
    const bf_model *m = r->m;
    const int NO = m->n_outputs, LOSS = m->nlayers + 1;
    const size_t fb = sizeof(float), B = (size_t)r->B;
    for (int k = 0; k < NO; k++) {
        bf_run_use(r, r->t_buf[m->out_t[k]], LOSS);
        r->loss_id[k] = r->tgt_id[k] = -2;
        if (r->mode == BF_MODE_PREDICT) continue;
        const char *on = m->layers[bf_model_producer(m, m->out_t[k]) >= 0 ? bf_model_producer(m, m->out_t[k]) : 0].name;
        if (bf_model_producer(m, m->out_t[k]) < 0) on = "input";
        const size_t S = bf_seq_loss_per_position(m, k) ? (size_t)bf_seq_out_positions(m, k) : 1;
        BF_TRY(bf_run_newbuf_fmt(r, &r->loss_id[k], B * S * fb, S > 1 ? BF_BUF_STATE : BF_BUF_LOSS,
                                 S > 1 ? "per-position loss%s%s" : "per-sample loss%s%s",
                      NO > 1 ? " of " : "", NO > 1 ? on : ""));
        bf_run_use(r, r->loss_id[k], LOSS);
        r->posw_id[k] = -2;
        if (bf_seq_output_per_position(m, k)) BF_TRY(bf_seq_loss_plan(r, k, LOSS, weighted));
        if (NO > 1) {
            BF_TRY(bf_run_newbuf_fmt(r, &r->tgt_id[k], B * (size_t)m->outs[k].y_row * fb, BF_BUF_LOSS,
                                     "per-sample targets of %s%s", on, ""));
            bf_run_use(r, r->tgt_id[k], LOSS);
        }
    }
    r->y_row = r->mode != BF_MODE_PREDICT ? m->y_row : 0;
    for (int k = 0; k < NO; k++) /* a view of a 16-bit tensor (mixed.c stores a node's own output in float32) */
        if (r->t16[m->out_t[k]])
            return BF_FAIL(BF_ERR_ARG, "mixed precision: the model's output '%s' is a view (Flatten, Reshape, ...) of "
                           "a 16-bit tensor; end the model with a computing layer or give the view dtype='float32'"
                           " (not yet)", m->layers[bf_model_producer(m, m->out_t[k])].name);
    return BF_OK;
}

/* backward buffers: the gradient of each tensor, written first by the
 * loss or by its last reader, then added to by the others */
static bf_status plan_backward(bf_run *r) {
    const bf_model *m = r->m;
    const int L = m->nlayers, NI = m->n_inputs, NO = m->n_outputs, LOSS = L + 1;
    const size_t B = (size_t)r->B;
    int *written = r->work; /* (tensors) */
    memset(written, 0, sizeof(int) * (size_t)(NI + L));
    for (int i = 0; i < L; i++) r->node_bw[i] = 0;
    for (int e = 0; e < m->n_edges; e++) r->gtmp[e] = -3;
    if (r->mode != BF_MODE_TRAIN) return BF_OK;
    for (int k = 0; k < NO; k++) {
        int o = m->out_t[k];
        if (!r->need_grad[o]) continue;
        BF_TRY(bf_run_newbuf_fmt(r, &r->t_grad[o], B * (size_t)m->t_size[o] * bf_mixed_elem(r, o), BF_BUF_GRAD,
                                 "%s%s output gradient",
                      m->layers[bf_model_producer(m, o)].name, ""));
        bf_run_use(r, r->t_grad[o], LOSS);
        written[o] = 1;
    }
    for (int i = L - 1; i >= 0; i--) {
        const bf_layer *ly = &m->layers[i];
        int o = NI + i, t = bw_time(r, i);
        if (!r->need_grad[o]) continue;
        if (!written[o]) return BF_FAIL(BF_ERR_INTERNAL, "%s: its output's gradient is never computed", ly->name);
        r->node_bw[i] = 1;
        bf_run_use(r, r->t_grad[o], t);
        const int side = (flags_of(r, i) & BF_LF_SIDE_OUT) != 0;
        if (side) /* a final state's gradient: the recurrent node reads it */
            bf_run_use(r, r->t_grad[o], bw_time(r, bf_model_producer(m, ly->in_ids[0])));
        bf_run_use(r, r->aux_id[i], t);
        if (needs_in(r, i))
            for (int j = 0; j < ly->nin; j++)
                if (reads_input(r, i, j)) bf_run_use(r, r->t_buf[ly->in_ids[j]], t);
        if (needs_out(r, i)) bf_run_use(r, r->t_buf[o], t);
        for (int j = 0; j < ly->nin; j++) {
            int u = ly->in_ids[j], *gt = &r->gtmp[bf_model_edge(m, i, j)];
            if (!r->need_grad[u] || !reads_input(r, i, j) || (flags_of(r, i) & BF_LF_NO_GRAD_IN)) continue;
            if (side && written[u]) continue; /* adds nothing to it */
            if (!written[u]) {
                if (r->node_view[i]) r->t_grad[u] = r->t_grad[o];
                else BF_TRY(bf_run_newbuf_fmt(r, &r->t_grad[u], B * (size_t)m->t_size[u] * bf_mixed_elem(r, u), BF_BUF_GRAD,
                                              "%s%s output gradient",
                                   m->layers[bf_model_producer(m, u)].name, ""));
                *gt = -2;
                written[u] = 1;
            } else if (r->node_view[i]) {
                *gt = r->t_grad[o]; /* the contribution is the output's gradient itself */
            } else {
                BF_TRY(bf_run_newbuf_fmt(r, gt, B * (size_t)m->t_size[u] * bf_mixed_elem(r, u), BF_BUF_GRAD,
                                         "%s%s input gradient (to add)",
                              ly->name, ""));
                bf_run_use(r, *gt, t);
            }
            bf_run_use(r, r->t_grad[u], t);
        }
        if (r->cv[i]) BF_TRY(bf_mixed_plan_backward(r, i, t));
    }
    return BF_OK;
}

static bf_status run_plan(bf_run *r, bf_model *m, bf_backend *be, bf_mode mode, int rows, int weighted,
                          int whole16) {
    bf_run_tables_free(r);
    memset(r, 0, sizeof *r);
    r->whole16 = whole16;
    r->m = m;
    BF_TRY(bf_run_tables_reserve(r)); /* the per-node, per-tensor and buffer tables (tables.c), zeroed */
    r->be = be;
    r->mode = mode;
    r->B = rows;
    r->on_device = be != bf_backend_host();
    r->tf32 = be->tf32 = bf_backend_tf32();
    if (rows <= 0) return BF_FAIL(BF_ERR_ARG, "batch_size must be positive, got %d", rows);
    if (mode != BF_MODE_PREDICT && !m->compiled)
        return BF_FAIL(BF_ERR_ARG, "the model must be compiled before fit or evaluate");
    const int L = m->nlayers, NO = m->n_outputs, train = mode == BF_MODE_TRAIN;
    const size_t fb = sizeof(float), B = (size_t)rows;
    for (int k = 0; k < NO; k++) {
        r->out_fused[k] = mode != BF_MODE_PREDICT && m->compiled && bf_model_loss_fused(m, k);
        int i = bf_model_producer(m, m->out_t[k]);
        if (r->out_fused[k]) { r->node_fused[i] = 1; r->fused = 1; }
    }
    BF_TRY(check_backend(r));
    plan_nodes(r);
    BF_TRY(plan_forward(r));
    BF_TRY(plan_outputs(r, weighted));
    BF_TRY(plan_backward(r));
    BF_TRY(bf_mixed_size(r)); /* the conversion buffers' chunks of rows (mixed precision) */
    BF_TRY(bf_plan_offsets(r->bufs, r->nbuf, &r->scratch_bytes, r->plan_work, r->cap_buf));
    for (int i = 0; i < r->nbuf; i++) r->naive_scratch_bytes += bf_align_up(r->bufs[i].bytes);

    /* persistent parts */
    r->grad_bytes = train ? bf_align_up(fb * (size_t)m->n_trainable) : 0;
    /* data parallel with gradient_compression="bfloat16" (CPU): the gradients' copy that travels, 2 bytes each */
    r->wire_bytes = train && !r->on_device && bf_dist_size() > 1 && bf_dist_wire_bf16()
                        ? bf_align_up(2 * (size_t)m->n_trainable) : 0;
    r->xslot_bytes = bf_align_up(B * (size_t)m->x_row * fb);
    r->yslot_bytes = mode != BF_MODE_PREDICT ? bf_align_up(B * (size_t)r->y_row * fb) : 0;
    if (r->xslot_bytes > BF_MAX_BUF_BYTES || r->yslot_bytes > BF_MAX_BUF_BYTES) /* rows, x_row, y_row < 2**31: exact */
        return BF_FAIL(BF_ERR_BUDGET, "a batch of %d rows of inputs (%ld floats each) and targets (%ld floats each) "
                       "needs more bytes than any machine holds (2**52); use a smaller batch_size", rows, m->x_row,
                       (long)r->y_row);
    r->w_bytes = r->on_device ? bf_align_up(fb * (size_t)(m->n_params ? m->n_params : 1)) : 0;
    r->slot_bytes = r->on_device && train ? bf_align_up(fb * (size_t)m->opt.nslots * (size_t)m->n_trainable) : 0;
    r->model_bytes = bf_align_up(fb * (size_t)(m->n_params ? m->n_params : 1));
    r->opt_new_bytes = train && !m->slots ? bf_model_opt_state_bytes(m) : 0;
    r->ws_bytes = r->on_device && be->run_workspace_bytes ? bf_align_up(be->run_workspace_bytes(be)) : 0;
    r->weighted = weighted && mode != BF_MODE_PREDICT;
    r->wslot_bytes = r->weighted ? bf_align_up(B * fb) : 0;
    r->nmv = 0;
    for (int k = 0; mode != BF_MODE_PREDICT && k < m->nmetrics; k++) {
        r->moff[k] = r->nmv;
        r->nmv += bf_metric_nvalues(&m->metrics[k]);
    }
    r->stats_bytes = bf_align_up(bf_step_stats_bytes(m->nlayers) + sizeof(double) * (size_t)r->nmv);
    r->hmet_bytes = r->nmv ? r->stats_bytes + bf_align_up(sizeof(double) * (size_t)r->nmv) : 0;
    {   /* sums of squares: per trainable tensor (clipnorm), one (global_clipnorm); then Lamb's two per tensor */
        int nt = 0;
        for (int i = 0; i < L; i++) /* each parameter once: a shared layer's belong to its owner */
            for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) nt += m->layers[i].params[j].trainable;
        const long cn = !train ? 0 : m->opt.clip == BF_CLIP_NORM ? (nt ? nt : 1) : m->opt.clip == BF_CLIP_GLOBAL_NORM;
        const long ln = train && m->opt.kind == BF_OPT_LAMB ? 2L * nt : 0;
        r->lamb_norm_off = cn;
        r->norm_bytes = (cn + ln ? bf_align_up(sizeof(double) * (size_t)(cn + ln)) : 0) +
                        (train ? bf_opt_matrix_ws_bytes(m) : 0);
    }

    size_t slots = (r->xslot_bytes + r->yslot_bytes + r->wslot_bytes) * BF_PREFETCH_DEPTH;
    int d = r->on_device;
    char what[96];
    if (d) {
        entry(r, "parameters (device copy)", "parameters", r->w_bytes, 1);
        entry(r, "optimizer state (device copy)", "optimizer state", r->slot_bytes, 1);
    }
    entry(r, "optimizer state (created by this run)", "optimizer state", r->opt_new_bytes, 0);
    entry(r, "gradients", "gradients", r->grad_bytes, d);
    entry(r, "gradients on the wire (bfloat16, data parallel)", "communication", r->wire_bytes, 0);
    snprintf(what, sizeof what, "input batches (%d rows x %d slots, prefetch)", rows, BF_PREFETCH_DEPTH);
    entry(r, what, "input batches", slots, d);
    snprintf(what, sizeof what, "activations and temporaries (%d buffers, liveness-planned)", r->nbuf);
    entry(r, what, "activations", bf_align_up(r->scratch_bytes), d);
    entry(r, "backend scratch and library workspace", "workspaces", r->ws_bytes, 1);
    entry(r, "step statistics (loss, metrics, guard bounds)", "workspaces", r->stats_bytes, d);
    entry(r, m->opt.kind == BF_OPT_LAMB   ? "norms (gradient clipping, Lamb's trust ratios)"
             : bf_opt_matrix_ws_bytes(m)   ? "gradient norms (clipping) and Muon's Newton-Schulz scratch"
                                           : "gradient norms (clipping)",
          "workspaces", r->norm_bytes, d);
    entry(r, "metric statistics (read-back copy, epoch sums)", "workspaces", r->hmet_bytes, 0);
    if (d) entry(r, "pinned host batch slots", "input batches", slots, 0);
    r->device_bytes = d ? r->w_bytes + r->slot_bytes + r->grad_bytes + slots + bf_align_up(r->scratch_bytes) +
                          r->ws_bytes + r->stats_bytes + r->norm_bytes : 0;
    r->host_bytes = r->opt_new_bytes + r->hmet_bytes +
                    (d ? slots
                       : r->grad_bytes + r->wire_bytes + slots + bf_align_up(r->scratch_bytes) + r->stats_bytes +
                             r->norm_bytes);
    return BF_OK;
}

bf_status bf_run_plan(bf_run *r, bf_model *m, bf_backend *be, bf_mode mode, int rows, int weighted) {
    /* 16-bit outputs of whole-batch kinds (BF_LF_WHOLE16) need float32 copies at their steps: kept where the
     * activations' plan is then smaller than without them (mixed precision) */
    BF_TRY(run_plan(r, m, be, mode, rows, weighted, 1));
    if (!r->whole16_used) return BF_OK;
    const size_t with = r->scratch_bytes;
    BF_TRY(run_plan(r, m, be, mode, rows, weighted, 0));
    return r->scratch_bytes <= with ? BF_OK : run_plan(r, m, be, mode, rows, weighted, 1);
}
