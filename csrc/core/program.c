/* program.c - compile a model into the buffers of one step and plan them.
 * Timeline of a training step with L layers: forward of layer i at t=i, loss at
 * t=L, backward of layer i at t=2L-i. A buffer lives from its first write to
 * its last read, so activations that backward does not need are reused early.
 * Flatten / Reshape (and Dropout outside training) are views: their output is
 * their input buffer, and the same holds for their gradients. */
#include "program.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static int is_view(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    if (L->kind == BF_L_FLATTEN || L->kind == BF_L_RESHAPE) return 1;
    if (L->kind == BF_L_DROPOUT && (r->mode != BF_MODE_TRAIN || L->rate == 0.0f)) return 1;
    if (L->kind == BF_L_ACTIVATION && (L->act == BF_ACT_LINEAR || (i == r->m->nlayers - 1 && r->fused))) return 1;
    return 0;
}

static int needs_in(const bf_layer *L) {
    return L->kind == BF_L_DENSE || L->kind == BF_L_CONV2D || L->kind == BF_L_MAXPOOL ||
           L->kind == BF_L_BATCHNORM;
}

static int needs_out(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    int last_fused = i == r->m->nlayers - 1 && r->fused;
    if (L->kind == BF_L_DENSE || L->kind == BF_L_CONV2D) return L->act != BF_ACT_LINEAR && !last_fused;
    return L->kind == BF_L_MAXPOOL || (L->kind == BF_L_ACTIVATION && !last_fused);
}

static bf_status newbuf(bf_run *r, int *id, size_t bytes, const char *fmt, const char *a,
                        const char *b) {
    if (r->nbuf >= BF_RUN_MAXBUF) return BF_FAIL(BF_ERR_ARG, "model too large for the planner");
    *id = r->nbuf++;
    bf_plan_buf *p = &r->bufs[*id];
    p->bytes = bytes;
    p->first = INT_MAX;
    p->last = -1;
    p->offset = 0;
    snprintf(r->buf_names[*id], sizeof r->buf_names[0], fmt, a, b);
    return BF_OK;
}

static void use(bf_run *r, int id, int t) {
    if (id < 0) return;
    if (t < r->bufs[id].first) r->bufs[id].first = t;
    if (t > r->bufs[id].last) r->bufs[id].last = t;
}

static void geom(const bf_layer *L, int B, bf_conv_geom *g) {
    g->B = B;
    g->H = L->in_shape[0];
    g->W = L->in_shape[1];
    g->C = L->in_shape[2];
    if (L->kind == BF_L_GAP) {
        g->OH = g->OW = 1;
        g->KH = g->SH = g->H;
        g->KW = g->SW = g->W;
        g->K = g->C;
        g->PT = g->PL = 0;
        return;
    }
    g->OH = L->out_shape[0];
    g->OW = L->out_shape[1];
    g->K = L->out_shape[2];
    g->KH = L->kh;
    g->KW = L->kw;
    g->SH = L->sh;
    g->SW = L->sw;
    int ph = (g->OH - 1) * g->SH + g->KH - g->H, pw = (g->OW - 1) * g->SW + g->KW - g->W;
    g->PT = L->same && ph > 0 ? ph / 2 : 0;
    g->PL = L->same && pw > 0 ? pw / 2 : 0;
}

void bf_layer_geom(const bf_layer *L, int B, bf_conv_geom *g) { geom(L, B, g); }

static void entry(bf_run *r, const char *name, const char *cat, size_t bytes, int on_device) {
    if (r->nentry >= BF_PLAN_MAXENTRY || bytes == 0) return;
    bf_plan_entry *e = &r->entries[r->nentry++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->category = cat;
    e->bytes = bytes;
    e->on_device = on_device;
}

bf_status bf_run_plan(bf_run *r, bf_model *m, bf_backend *be, bf_mode mode, int rows, int weighted) {
    memset(r, 0, sizeof *r);
    r->m = m;
    r->be = be;
    r->mode = mode;
    r->B = rows;
    r->on_device = be != bf_cpu_backend();
    r->fused = mode != BF_MODE_PREDICT && m->compiled && bf_model_loss_fused(m);
    if (rows <= 0) return BF_FAIL(BF_ERR_ARG, "batch_size must be positive, got %d", rows);
    if (mode != BF_MODE_PREDICT && !m->compiled)
        return BF_FAIL(BF_ERR_ARG, "the model must be compiled before fit or evaluate");
    const int L = m->nlayers, train = mode == BF_MODE_TRAIN;
    const size_t fb = sizeof(float), B = (size_t)rows;

    /* every op the model needs must exist on this backend */
    for (int i = 0; i < L; i++) {
        const bf_layer *ly = &m->layers[i];
        int ok = 1;
        switch (ly->kind) {
        case BF_L_CONV2D: ok = be->conv2d_forward && be->conv2d_backward && be->conv2d_workspace_bytes; break;
        case BF_L_MAXPOOL: ok = be->maxpool_forward && be->maxpool_backward; break;
        case BF_L_AVGPOOL: case BF_L_GAP: ok = be->avgpool_forward && be->avgpool_backward; break;
        case BF_L_BATCHNORM: ok = be->batchnorm_forward && be->batchnorm_backward; break;
        case BF_L_DROPOUT: ok = be->dropout_forward && be->dropout_backward; break;
        default: break;
        }
        if (!ok)
            return BF_FAIL(BF_ERR_ARG, "layer '%s' is not implemented on the %s backend in this build", ly->name, be->name);
    }

    /* forward buffers */
    int in_id = BF_X_NONE;
    for (int i = 0; i < L; i++) {
        bf_layer *ly = &m->layers[i];
        r->fws_id[i] = r->bws_id[i] = r->aux_id[i] = -2;
        if (is_view(r, i)) r->out_id[i] = in_id;
        else BF_TRY(newbuf(r, &r->out_id[i], B * ly->out_size * fb, "%s%s output", ly->name, ""));
        use(r, in_id, i);
        use(r, r->out_id[i], i);
        if (ly->kind == BF_L_CONV2D) {
            bf_conv_geom g;
            geom(ly, rows, &g);
            if (!be->conv2d_workspace_bytes) return BF_FAIL(BF_ERR_DEVICE, "backend %s has no Conv2D", be->name);
            size_t w = be->conv2d_workspace_bytes(be, &g, 0);
            if (w) { BF_TRY(newbuf(r, &r->fws_id[i], w, "%s%s forward workspace", ly->name, "")); use(r, r->fws_id[i], i); }
            if (train) {
                w = be->conv2d_workspace_bytes(be, &g, 1);
                if (w) { BF_TRY(newbuf(r, &r->bws_id[i], w, "%s%s backward workspace", ly->name, "")); use(r, r->bws_id[i], 2 * L - i); }
            }
        }
        if (ly->kind == BF_L_DROPOUT && train && ly->rate > 0.0f) {
            BF_TRY(newbuf(r, &r->aux_id[i], B * ly->in_size * fb, "%s%s dropout mask", ly->name, ""));
            use(r, r->aux_id[i], i);
            use(r, r->aux_id[i], 2 * L - i);
        }
        if (ly->kind == BF_L_BATCHNORM) {
            int C = ly->in_shape[ly->in_rank - 1];
            BF_TRY(newbuf(r, &r->aux_id[i], 2 * (size_t)C * fb, "%s%s batch mean / inverse std", ly->name, ""));
            use(r, r->aux_id[i], i);
            if (train) use(r, r->aux_id[i], 2 * L - i);
        }
        in_id = r->out_id[i];
    }
    /* loss, metrics, or the copy-out of predictions at t = L */
    use(r, in_id, L);
    r->loss_id = -2;
    if (mode != BF_MODE_PREDICT) {
        BF_TRY(newbuf(r, &r->loss_id, B * fb, "per-sample loss%s%s", "", ""));
        use(r, r->loss_id, L);
    }
    r->y_row = m->loss.kind == BF_LOSS_SCCE ? 1 : bf_model_out_size(m);

    /* backward buffers: gradient w.r.t. each layer's output */
    for (int i = 0; i < L; i++) r->dout_id[i] = -2;
    if (train) {
        BF_TRY(newbuf(r, &r->dout_id[L - 1], B * m->layers[L - 1].out_size * fb, "%s%s output gradient", m->layers[L - 1].name, ""));
        use(r, r->dout_id[L - 1], L);
        for (int i = L - 1; i >= 0; i--) {
            int t = 2 * L - i;
            const bf_layer *ly = &m->layers[i];
            use(r, r->dout_id[i], t);
            use(r, r->aux_id[i], t);
            if (needs_in(ly)) use(r, i ? r->out_id[i - 1] : BF_X_NONE, t);
            if (needs_out(r, i)) use(r, r->out_id[i], t);
            if (i == 0) break;
            if (is_view(r, i)) r->dout_id[i - 1] = r->dout_id[i];
            else BF_TRY(newbuf(r, &r->dout_id[i - 1], B * m->layers[i - 1].out_size * fb, "%s%s output gradient", m->layers[i - 1].name, ""));
            use(r, r->dout_id[i - 1], t);
        }
    }
    BF_TRY(bf_plan_offsets(r->bufs, r->nbuf, &r->scratch_bytes));
    for (int i = 0; i < r->nbuf; i++) r->naive_scratch_bytes += bf_align_up(r->bufs[i].bytes);

    /* persistent parts */
    r->grad_bytes = train ? bf_align_up(fb * (size_t)m->n_trainable) : 0;
    r->xslot_bytes = bf_align_up(B * (size_t)m->in_size * fb);
    r->yslot_bytes = mode != BF_MODE_PREDICT ? bf_align_up(B * (size_t)r->y_row * fb) : 0;
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
    r->stats_bytes = bf_align_up(sizeof(bf_step_stats) + sizeof(double) * (size_t)r->nmv);
    r->hmet_bytes = r->nmv ? r->stats_bytes + bf_align_up(sizeof(double) * (size_t)r->nmv) : 0;
    if (train && m->opt.clip == BF_CLIP_NORM) {
        int nt = 0;
        for (int i = 0; i < L; i++)
            for (int j = 0; j < m->layers[i].nparam; j++) nt += m->layers[i].params[j].trainable;
        r->norm_bytes = bf_align_up(sizeof(double) * (size_t)(nt ? nt : 1));
    } else {
        r->norm_bytes = train && m->opt.clip == BF_CLIP_GLOBAL_NORM ? bf_align_up(sizeof(double)) : 0;
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
    snprintf(what, sizeof what, "input batches (%d rows x %d slots, prefetch)", rows, BF_PREFETCH_DEPTH);
    entry(r, what, "input batches", slots, d);
    snprintf(what, sizeof what, "activations and temporaries (%d buffers, liveness-planned)", r->nbuf);
    entry(r, what, "activations", bf_align_up(r->scratch_bytes), d);
    entry(r, "backend scratch and library workspace", "workspaces", r->ws_bytes, 1);
    entry(r, "step statistics (loss, metrics, guard bounds)", "workspaces", r->stats_bytes, d);
    entry(r, "gradient norms (clipping)", "workspaces", r->norm_bytes, d);
    entry(r, "metric statistics (read-back copy, epoch sums)", "workspaces", r->hmet_bytes, 0);
    if (d) entry(r, "pinned host batch slots", "input batches", slots, 0);
    r->device_bytes = d ? r->w_bytes + r->slot_bytes + r->grad_bytes + slots + bf_align_up(r->scratch_bytes) +
                          r->ws_bytes + r->stats_bytes + r->norm_bytes : 0;
    r->host_bytes = r->opt_new_bytes + r->hmet_bytes +
                    (d ? slots : r->grad_bytes + slots + bf_align_up(r->scratch_bytes) + r->stats_bytes + r->norm_bytes);
    return BF_OK;
}
