/* run.c - open / step / close of a planned run (see run.h).
 * Nodes run in topological order over tensor buffers (program.c). Forward of
 * a Dense or Conv2D writes the pre-activation into its output and applies the
 * activation in place; backward turns the output gradient into the
 * pre-activation gradient in place, then computes parameter and input
 * gradients (parameter gradients add up, so a layer called twice sums its
 * two contributions). An input's gradient is written by the first of its
 * readers in backward order and added to by the others. A fused output
 * activation is left to the loss. */
#include "run.h"

#include "backend_registry.h"
#include "layer_registry.h"
#include "loss_scale.h"
#include "opt_matrix.h"
#include "mixed.h"
#include "prefetch.h"
#include "run_strategy.h"
#include "seq_loss.h"
#include "step_bufs.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define BUF(r, id) BF_BUF(r, id)

static float *tbuf(bf_run *r, int t) { return bf_step_tensor(r, t); }
static float *out_of(bf_run *r, int i) { return bf_step_out(r, i); }

/* the gradients node i computed into scratch, added into its inputs' gradients */
static bf_status accumulate(bf_run *r, int i, int rows) {
    bf_layer *L = &r->m->layers[i];
    for (int j = 0; j < L->nin; j++) {
        int g = r->gtmp[bf_model_edge(r->m, i, j)];
        if (g < 0) continue;
        int u = L->in_ids[j];
        float *dst = BUF(r, r->t_grad[u]);
        BF_TRY(bf_mixed_accumulate(r, u, dst, BUF(r, g), (long)rows * r->m->t_size[u]));
    }
    return BF_OK;
}

/* several inputs: each one's columns of the packed batch into its own buffer */
static bf_status split_inputs(bf_run *r, int rows) {
    bf_model *m = r->m;
    if (m->n_inputs == 1) return BF_OK;
    for (int k = 0; k < m->n_inputs; k++)
        BF_TRY(r->be->copy2d(r->be, tbuf(r, k), m->in_sizes[k], r->xslot[r->cur] + m->in_offs[k], m->x_row, rows,
                             m->in_sizes[k]));
    return BF_OK;
}

static bf_status carve(bf_arena *a, size_t bytes, float **out) {
    void *p = NULL;
    if (!bytes) { *out = NULL; return BF_OK; }
    BF_TRY(bf_arena_alloc(a, bytes, &p));
    *out = p;
    return BF_OK;
}

/* A Dense / Conv2D layer's gradients are proven finite from max|input| and
 * max|output gradient| (take_bound) where reading those costs less than
 * reading the gradients: small batches into wide layers (an MLP at batch 32).
 * Where it costs more (large batches, convolutions, a Transformer's
 * feed-forward at 4096 positions), the gradients are scanned as any other
 * layer's. Decided per layer from the run's micro-batch rows when it opens
 * (r->bounded); layers that share weights keep their bounds (the owner's
 * bound sums all of theirs). */
static int has_bound(const bf_run *r, const bf_layer *L) {
    const bf_model *m = r->m;
    if (!(bf_layer_ops_of((int)L->kind)->flags & BF_LF_BOUND)) return 0;
    if (L->share >= 0) return 1;
    for (int k = 0; k < m->nlayers; k++)
        if (m->layers[k].share == (int)(L - m->layers)) return 1;
    double grads = 0.0;
    for (int j = 0; j < L->nparam; j++) grads += (double)L->params[j].n;
    return (double)r->B * ((double)L->in_size + (double)L->out_size) < grads;
}

bf_status bf_run_open(bf_run *r, size_t host_budget, size_t device_budget) {
    bf_model *m = r->m;
    bf_status s;
    if (r->mode == BF_MODE_TRAIN) BF_TRY(bf_model_alloc_opt_state(m));
    size_t slots = (r->xslot_bytes + r->yslot_bytes + r->wslot_bytes) * BF_PREFETCH_DEPTH;
    size_t run_bytes = r->on_device ? r->device_bytes : r->host_bytes - r->opt_new_bytes;
    bf_arena_init(&r->arena, r->be, r->on_device ? r->be->name : "host",
                  r->on_device ? device_budget : host_budget);
    bf_arena_init(&r->host_arena, bf_backend_host(), "host", host_budget);
    r->arena.keep = !r->on_device;
    for (int i = 0; i < m->nlayers; i++) r->bounded[i] = (unsigned char)(has_bound(r, &m->layers[i]) && !r->cv[i]);
    BF_TRY(bf_arena_reserve(&r->arena, run_bytes));
    if (r->on_device && (s = bf_arena_reserve(&r->host_arena, slots + r->hmet_bytes)) != BF_OK) goto fail;
    /* first: the reservation's start is aligned as libraries want workspaces (cuBLAS: 256) */
    float *ws;
    if ((s = carve(&r->arena, r->ws_bytes, &ws)) != BF_OK) goto fail;
    r->ws = ws;
    if (r->on_device) {
        if ((s = carve(&r->arena, r->w_bytes, &r->w)) != BF_OK) goto fail;
        if ((s = carve(&r->arena, r->slot_bytes, &r->slots)) != BF_OK) goto fail;
    } else {
        r->w = m->w;
        r->slots = m->slots;
    }
    if ((s = carve(&r->arena, r->grad_bytes, &r->grads)) != BF_OK) goto fail;
    float *wire;
    if ((s = carve(&r->arena, r->wire_bytes, &wire)) != BF_OK) goto fail;
    r->wire = (uint16_t *)(void *)wire;
    for (int k = 0; k < BF_PREFETCH_DEPTH; k++) {
        if ((s = carve(&r->arena, r->xslot_bytes, &r->xslot[k])) != BF_OK) goto fail;
        if ((s = carve(&r->arena, r->yslot_bytes, &r->yslot[k])) != BF_OK) goto fail;
        if ((s = carve(&r->arena, r->wslot_bytes, &r->wslot[k])) != BF_OK) goto fail;
        if (r->on_device) {
            if ((s = carve(&r->host_arena, r->xslot_bytes, &r->hx[k])) != BF_OK) goto fail;
            if ((s = carve(&r->host_arena, r->yslot_bytes, &r->hy[k])) != BF_OK) goto fail;
            if ((s = carve(&r->host_arena, r->wslot_bytes, &r->hw[k])) != BF_OK) goto fail;
        } else {
            r->hx[k] = r->xslot[k];
            r->hy[k] = r->yslot[k];
            r->hw[k] = r->wslot[k];
        }
    }
    float *scratch;
    if ((s = carve(&r->arena, bf_align_up(r->scratch_bytes), &scratch)) != BF_OK) goto fail;
    r->scratch = (char *)scratch;
    if ((s = carve(&r->arena, r->stats_bytes, &scratch)) != BF_OK) goto fail;
    r->stats = (bf_step_stats *)(void *)scratch;
    r->mstats = (double *)(void *)((char *)scratch + bf_step_stats_bytes(r->m->nlayers));
    if ((s = carve(&r->arena, r->norm_bytes, &scratch)) != BF_OK) goto fail;
    r->norms = (double *)(void *)scratch;
    if ((s = carve(r->on_device ? &r->host_arena : &r->arena, r->hmet_bytes, &scratch)) != BF_OK) goto fail;
    r->hmet = (char *)scratch;
    r->macc = r->hmet ? (double *)(void *)(r->hmet + r->stats_bytes) : NULL;
    bf_run_reset_metrics(r);
    if (r->on_device && r->be->host_pin && r->host_arena.base) {
        r->be->host_pin(r->be, r->host_arena.base, r->host_arena.capacity);
        r->pinned = 1;
    }
    if ((s = bf_run_load_model(r)) != BF_OK) goto fail;
    return BF_OK;
fail:
    bf_run_close(r);
    return s;
}

void bf_run_reset_metrics(bf_run *r) {
    if (r->macc) memset(r->macc, 0, sizeof(double) * (size_t)r->nmv);
}

void bf_run_metric_results(const bf_run *r, double *out) {
    for (int k = 0; k < r->m->nmetrics && r->nmv; k++) out[k] = bf_metric_result(&r->m->metrics[k], r->macc + r->moff[k]);
}

bf_status bf_run_sync_model(bf_run *r) {
    if (!r->on_device || !r->arena.base) return BF_OK;
    BF_TRY(r->be->to_host(r->be, r->m->w, r->w, sizeof(float) * (size_t)r->m->n_params));
    if (r->slot_bytes) BF_TRY(r->be->to_host(r->be, r->m->slots, r->slots, r->slot_bytes));
    return BF_OK;
}

bf_status bf_run_load_model(bf_run *r) {
    if (!r->on_device || !r->arena.base) return BF_OK;
    BF_TRY(r->be->to_device(r->be, r->w, r->m->w, sizeof(float) * (size_t)r->m->n_params));
    if (r->slot_bytes && r->m->slots) BF_TRY(r->be->to_device(r->be, r->slots, r->m->slots, r->slot_bytes));
    return BF_OK;
}

/* a device run under data parallel: rank 0's weights and optimizer state, before step one */
bf_status bf_run_dist_bcast(bf_run *r) { return bf_run_strategy()->broadcast(r); }

void bf_run_close(bf_run *r) {
    if (r->pinned && r->host_arena.base) r->be->host_unpin(r->be, r->host_arena.base);
    r->pinned = 0;
    r->ws = NULL;
    r->stats = NULL;
    bf_arena_release(&r->arena);
    bf_arena_release(&r->host_arena);
    r->scratch = NULL;
}

/* a gathered host slot onto the device (no-op on the CPU, where they coincide):
 * queued on the backend's copy stream, so it overlaps the tail of the previous
 * step; the ops queued after it wait for it */
static bf_status to_device(bf_run *r, int k, long n, const bf_srcs *x, const bf_srcs *y) {
    bf_backend *be = r->be;
    if (!r->on_device) return BF_OK;
    size_t xb = sizeof(float) * (size_t)n * (size_t)x->row, yb = y ? sizeof(float) * (size_t)n * (size_t)y->row : 0;
    size_t wb = y && r->weighted ? sizeof(float) * (size_t)n : 0;
    if (!be->upload) {
        BF_TRY(be->to_device(be, r->xslot[k], r->hx[k], xb));
        if (wb) BF_TRY(be->to_device(be, r->wslot[k], r->hw[k], wb));
        return yb ? be->to_device(be, r->yslot[k], r->hy[k], yb) : BF_OK;
    }
    BF_TRY(be->upload(be, k, r->xslot[k], r->hx[k], xb));
    if (wb) BF_TRY(be->upload(be, k, r->wslot[k], r->hw[k], wb));
    return yb ? be->upload(be, k, r->yslot[k], r->hy[k], yb) : BF_OK;
}

/* the ops reading device batch slot k are queued: its next upload waits for them */
static bf_status consumed(bf_run *r, int k) {
    return r->on_device && r->be->batch_consumed ? r->be->batch_consumed(r->be, k) : BF_OK;
}

/* host batch slot k may be refilled once its upload has read it */
static bf_status uploaded(bf_run *r, int k) {
    return r->on_device && r->be->batch_wait ? r->be->batch_wait(r->be, k) : BF_OK;
}

/* lend the run workspace to the backend for a call's ops, or take it back */
static bf_status bind(bf_run *r, int on) {
    r->be->tf32 = r->tf32;
    r->be->half = 0;
    if (!r->on_device || !r->be->bind_workspace) return BF_OK;
    return r->be->bind_workspace(r->be, on ? r->ws : NULL, on ? r->ws_bytes : 0);
}

/* *bad = 1 if any of x (n values of storage half: 0 float32, else bf_layer.half's 16 bits) is NaN or Inf;
 * waits for the device */
static bf_status scan(bf_run *r, const float *x, long n, int half, int *bad) {
    bf_backend *be = r->be;
    int v = 0;
    BF_TRY(be->fill_zero(be, &r->stats->bad, sizeof(int)));
    if (half) BF_TRY(be->bf16_convert(be, &r->stats->bad, x, BF_BF16_SCAN | (half == BF_HALF_F16 ? BF_HALF_F16_BIT : 0), n));
    else BF_TRY(be->nonfinite(be, &r->stats->bad, x, n));
    BF_TRY(be->to_host(be, &v, &r->stats->bad, sizeof v));
    *bad = v != 0;
    return BF_OK;
}

/* forward over `rows`; with `check`, stop at the first non-finite output */
static bf_status forward(bf_run *r, int rows, int check, int *bad_layer) {
    bf_model *m = r->m;
    BF_TRY(split_inputs(r, rows));
    bf_run_augment_begin(r);
    for (int i = 0; i < m->nlayers; i++) {
        bf_layer *L = &m->layers[i];
        const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
        if (r->node_off[i]) continue; /* not part of this run's mode (bf_layer.modes) */
        float *out = out_of(r, i);
        if (!r->node_view[i] && ops->forward)
            BF_TRY(r->cv[i] ? bf_mixed_forward(r, i, rows) : ops->forward(r, i, rows));
        if (check) {
            int bad = 0;
            BF_TRY(scan(r, out, (long)rows * L->out_size, r->t16[m->n_inputs + i], &bad));
            if (bad) { *bad_layer = i; return BF_OK; }
        }
    }
    return BF_OK;
}

/* queue max|inp| and max|dz| of layer i into the step statistics; once read,
 * gbound[i] += count * max(max|inp|, 1) * max|dz| (add_bounds): every dW
 * element is a sum of `count` products inp*dz and every db element a sum of
 * `count` dz */
bf_status bf_run_take_bound(bf_run *r, int i, const float *inp, long n_in, const float *dz, long n_dz, double count) {
    if (r->unguarded || !r->bounded[i]) return BF_OK;
    BF_TRY(r->be->maxabs(r->be, &r->stats->layer[i].bound[0], inp, n_in));
    BF_TRY(r->be->maxabs(r->be, &r->stats->layer[i].bound[1], dz, n_dz));
    r->bcount[i] = count;
    return BF_OK;
}

/* the bounds of the micro-batch just read back; a NaN maximum counts as +Inf */
static void add_bounds(bf_run *r) {
    for (int i = 0; i < r->m->nlayers; i++) {
        if (r->bcount[i] == 0.0) continue;
        float a = r->hstats->layer[i].bound[0], b = r->hstats->layer[i].bound[1];
        double A = isnan(a) ? INFINITY : a > 1.0f ? (double)a : 1.0;
        double Bm = isnan(b) ? INFINITY : (double)b;
        r->gbound[bf_model_owner(r->m, i)] += r->bcount[i] * A * Bm;
        r->bcount[i] = 0.0;
    }
}

static bf_status backward(bf_run *r, int rows) {
    bf_model *m = r->m;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        bf_layer *L = &m->layers[i];
        if (r->node_bw[i]) {
            const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
            float *dout = BUF(r, r->t_grad[m->n_inputs + i]);
            if (!r->node_view[i] && ops->backward)
                BF_TRY(r->cv[i] ? bf_mixed_backward(r, i, rows) : ops->backward(r, i, rows, bf_step_din(r, i, 0), dout));
            BF_TRY(accumulate(r, i, rows));
        }
        BF_TRY(bf_run_strategy()->node_done(r, i)); /* data parallel: its gradients' buckets can be summed */
    }
    return BF_OK;
}

/* loss (and its gradient when training) and the metrics for `rows` rows:
 * their sums, the metrics' statistics and the label check queued into the
 * step statistics */
static bf_status loss_and_metrics(bf_run *r, int rows, float scale) {
    bf_backend *be = r->be;
    bf_model *m = r->m;
    const float *sw = r->weighted ? r->wslot[r->cur] : NULL;
    for (int k = 0; k < m->n_outputs; k++) {
        const bf_output *o = &m->outs[k];
        int t = m->out_t[k];
        float *pred = tbuf(r, t), *tgt = r->yslot[r->cur];
        int C = (int)m->t_size[t];
        if (m->n_outputs > 1) {
            tgt = BUF(r, r->tgt_id[k]);
            BF_TRY(be->copy2d(be, tgt, o->y_row, r->yslot[r->cur] + o->y_off, m->y_row, rows, o->y_row));
        }
        if (bf_seq_output_per_position(m, k)) { /* a sequence output (seq_loss.c) */
            BF_TRY(bf_seq_loss_and_metrics(r, k, rows, scale, pred, tgt));
            continue;
        }
        float *dpred = r->mode == BF_MODE_TRAIN && r->t_grad[t] >= 0 ? BUF(r, r->t_grad[t]) : NULL;
        BF_TRY(be->loss_forward_backward(be, BUF(r, r->loss_id[k]), dpred, &r->stats->bad_label[k], pred, tgt, sw,
                                         &o->loss, r->out_fused[k], rows, C,
                                         scale * o->weight * bf_optimizer_grad_scale(&m->opt)));
        /* the metrics of output k, on its predictions (a fused activation applied by the metric) */
        int p = bf_model_producer(m, t);
        bf_act act = r->out_fused[k] && p >= 0 ? m->layers[p].act : BF_ACT_LINEAR;
        for (int q = 0; q < m->nmetrics && r->nmv; q++) {
            if (m->metrics[q].output != k) continue;
            bf_metric_spec ms = m->metrics[q]; /* (read before metric_update returns, on every backend) */
            ms.row_w = scale;                  /* 1 / the step's rows: a batch_mean metric's row weight */
            BF_TRY(be->metric_update(be, r->mstats + r->moff[q], pred, tgt, sw, &ms, act, rows, C, (int)o->y_row));
        }
        BF_TRY(be->sum(be, &r->stats->loss[k], BUF(r, r->loss_id[k]), rows));
    }
    return BF_OK;
}

static bf_status diagnose_nonfinite(bf_run *r, int rows, long step, int loss_bad) {
    bf_model *m = r->m;
    int bad_layer = -1;
    BF_TRY(forward(r, rows, 1, &bad_layer));
    r->bad_step = step;
    if (bad_layer >= 0) {
        r->bad_layer = bad_layer;
        r->bad_what = "output";
    } else {
        r->bad_what = loss_bad ? "loss" : "gradient";
        r->bad_layer = -1;
        for (int i = m->nlayers - 1; i >= 0 && r->bad_layer < 0 && !loss_bad; i--)
            for (int j = 0; j < m->layers[i].nparam; j++) {
                float *g = bf_step_grad(r, &m->layers[i], j);
                int bad = 0;
                if (g) BF_TRY(scan(r, g, m->layers[i].params[j].n, 0, &bad));
                if (bad) { r->bad_layer = i; break; }
            }
    }
    const char *lname = r->bad_layer >= 0 ? m->layers[r->bad_layer].name : "(loss)";
    return BF_FAIL(BF_ERR_NONFINITE,
                   "non-finite %s at step %ld (first seen in layer '%s'); the update was not applied",
                   r->bad_what, step, lname);
}

/* Keras's clipping of the step's gradients, on the backend (no wait) */
static bf_status clip_gradients(bf_run *r) {
    bf_model *m = r->m;
    bf_backend *be = r->be;
    const bf_optimizer *o = &m->opt;
    if (o->clip == BF_CLIP_VALUE) return be->grad_clip(be, r->grads, NULL, m->n_trainable, BF_CLIP_VALUE, o->clip_value);
    if (o->clip == BF_CLIP_GLOBAL_NORM) {
        BF_TRY(be->fill_zero(be, r->norms, sizeof(double)));
        BF_TRY(be->sumsq(be, r->norms, r->grads, m->n_trainable));
        return be->grad_clip(be, r->grads, r->norms, m->n_trainable, BF_CLIP_GLOBAL_NORM, o->clip_value);
    }
    if (o->clip != BF_CLIP_NORM) return BF_OK;
    BF_TRY(be->fill_zero(be, r->norms, r->norm_bytes));
    int t = 0;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) { /* a shared layer's: its owner's */
            const bf_param *p = &m->layers[i].params[j];
            if (!p->trainable) continue;
            float *g = r->grads + p->grad_offset;
            BF_TRY(be->sumsq(be, r->norms + t, g, p->n));
            BF_TRY(be->grad_clip(be, g, r->norms + t, p->n, BF_CLIP_NORM, o->clip_value));
            t++;
        }
    return BF_OK;
}

/* Keras regularizers: grad 0, the penalty of the weights into the micro-batch's
 * statistics (weighted by its rows when read back); grad 1, the penalty's
 * gradient added once per step into the parameter gradients, before clipping */
static bf_status regularizers(bf_run *r, int grad) {
    bf_model *m = r->m;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) { /* a shared layer's: its owner's */
            const bf_param *p = &m->layers[i].params[j];
            if (!p->trainable || (p->l1 == 0.0f && p->l2 == 0.0f)) continue;
            BF_TRY(r->be->regularize(r->be, grad ? NULL : &r->stats->penalty, grad ? r->grads + p->grad_offset : NULL,
                                     r->w + p->offset, p->n, p->l1, p->l2));
        }
    return BF_OK;
}

/* Keras constraints after the update: w viewed as (A, R, B), R the axes
 * axis_lo..axis_hi of its shape */
static bf_status constraints(bf_run *r) {
    bf_model *m = r->m;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) { /* once per shared parameter */
            const bf_param *p = &m->layers[i].params[j];
            if (!p->trainable || p->con.kind == BF_CON_NONE) continue;
            long A = 1, R = 1, B = 1;
            for (int d = 0; d < p->rank; d++) {
                if (d < p->con.axis_lo) A *= p->shape[d];
                else if (d <= p->con.axis_hi) R *= p->shape[d];
                else B *= p->shape[d];
            }
            BF_TRY(r->be->constrain(r->be, r->w + p->offset, A, R, B, &p->con));
        }
    return BF_OK;
}

/* Nadam's u products as Keras keeps them (float32, one factor per update) */
static void nadam_products(bf_optimizer *o, long t, bf_update_args *a) {
    const float b1 = o->beta1;
    if (o->u_product_it != t - 1) {
        o->u_product = 1.0f;
        for (long k = 1; k < t; k++) o->u_product = o->u_product * b1 * (1.0f - 0.5f * powf(0.96f, (float)k));
    }
    float prod = o->u_product * b1 * (1.0f - 0.5f * powf(0.96f, (float)t));
    a->u_t = b1 * (1.0f - 0.5f * powf(0.96f, (float)t));
    a->u_t1 = b1 * (1.0f - 0.5f * powf(0.96f, (float)(t + 1)));
    a->u_prod = prod;
    a->u_prod1 = prod * a->u_t1;
    o->u_product = prod;
    o->u_product_it = t;
}

/* Lamb, per trainable tensor as Keras (its trust ratio is the tensor's): the
 * weight decay and the moments, the sums of squares of the tensor and of its
 * update into norms (backend memory, no wait), then the step */
static bf_status lamb_update(bf_run *r, bf_update_args *a) {
    bf_model *m = r->m;
    bf_backend *be = r->be;
    const long n = m->n_trainable;
    double *norms = r->norms + r->lamb_norm_off;
    BF_TRY(be->fill_zero(be, norms, r->norm_bytes - sizeof(double) * (size_t)r->lamb_norm_off));
    int t = 0;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) { /* a shared layer's: its owner's */
            const bf_param *p = &m->layers[i].params[j];
            if (!p->trainable) continue;
            const long off = p->grad_offset; /* the slots follow the gradients' layout */
            float *w = r->w + p->offset, *mo = r->slots + off, *v = r->slots + n + off;
            double *nw = norms + 2 * t;
            a->kind = BF_UPD_LAMB_MOMENTS;
            a->norms = NULL;
            BF_TRY(be->opt_update(be, w, mo, v, NULL, r->grads + off, p->n, a));
            BF_TRY(be->sumsq(be, nw, w, p->n));
            BF_TRY(be->lamb_sumsq(be, nw + 1, mo, v, p->n, a));
            a->kind = BF_UPD_LAMB_APPLY;
            a->norms = nw;
            BF_TRY(be->opt_update(be, w, mo, v, NULL, r->grads + off, p->n, a));
            t++;
        }
    return BF_OK;
}

/* use_ema, as Keras's base optimizer after the rule (iterations not yet counted): the average (last slot) moves
 * toward the weights, momentum 0 on the first update; every ema_overwrite_frequency-th update the weights take it */
static bf_status ema_update(bf_run *r, long n) {
    const bf_optimizer *o = &r->m->opt;
    float *avg = r->slots + (size_t)(o->nslots - 1) * (size_t)n;
    bf_update_args a = {0};
    a.kind = BF_UPD_EMA;
    a.momentum = o->iterations != 0 ? o->ema_momentum : 0.0f;
    BF_TRY(r->be->opt_update(r->be, r->w, avg, NULL, NULL, r->grads, n, &a));
    if (o->ema_overwrite_frequency > 0 && (o->iterations + 1) % o->ema_overwrite_frequency == 0) {
        a.kind = BF_UPD_EMA_OVERWRITE;
        BF_TRY(r->be->opt_update(r->be, r->w, avg, NULL, NULL, r->grads, n, &a));
    }
    return BF_OK;
}

/* gradient_accumulation_steps, as Keras 3 on JAX: a step that is not the acc_steps-th adds its gradients to the
 * accumulator (slot before the moving average) and changes nothing else (*apply = 0; the moving average still
 * moves); the acc_steps-th updates with (g + accumulated) / acc_steps and empties the accumulator */
static bf_status accumulate_gradients(bf_run *r, int *apply) {
    bf_model *m = r->m;
    bf_backend *be = r->be;
    bf_optimizer *o = &m->opt;
    const long n = m->n_trainable;
    float *acc = r->slots + (size_t)(o->nslots - 1 - (o->use_ema != 0)) * (size_t)n;
    *apply = o->acc_count + 1 == o->acc_steps;
    if (!*apply) {
        BF_TRY(be->ewise(be, acc, acc, r->grads, NULL, BF_EW_ADD, 1.0f, n));
        o->acc_count++;
        return BF_OK;
    }
    BF_TRY(be->ewise(be, r->grads, r->grads, acc, NULL, BF_EW_ADD, 1.0f / (float)o->acc_steps, n));
    BF_TRY(be->fill_zero(be, acc, sizeof(float) * (size_t)n));
    o->acc_count = 0;
    return BF_OK;
}

static bf_status apply_update(bf_run *r) {
    bf_model *m = r->m;
    bf_backend *be = r->be;
    bf_optimizer *o = &m->opt;
    long n = m->n_trainable;
    float lr = bf_optimizer_lr(o);
    if (n == 0) {
        if (o->acc_steps && ++o->acc_count < o->acc_steps) return BF_OK;
        o->acc_count = 0;
        o->iterations++;
        return BF_OK;
    }
    bf_update_args a = {0};
    a.lr = lr;
    a.beta1 = o->beta1;
    a.beta2 = o->beta2;
    a.eps = o->eps;
    a.momentum = o->momentum;
    a.rho = o->rho;
    a.weight_decay = o->weight_decay;
    a.nesterov = o->nesterov;
    a.amsgrad = o->amsgrad;
    a.centered = o->centered;
    a.t = o->iterations + 1;
    const int ns = o->nslots - (o->use_ema != 0) - (o->acc_steps != 0); /* the rule's (then accumulator, average) */
    float *s0 = ns > 0 ? r->slots : NULL, *s1 = ns > 1 ? r->slots + n : NULL;
    float *s2 = ns > 2 ? r->slots + 2 * n : NULL;
    switch (o->kind) {
    case BF_OPT_SGD: a.kind = BF_UPD_SGD; break;
    case BF_OPT_ADAM: case BF_OPT_ADAMW: a.kind = BF_UPD_ADAM; break;
    case BF_OPT_RMSPROP:
        a.kind = BF_UPD_RMSPROP;
        /* slots: velocity, then momentum (momentum > 0), then the average gradient (centered) */
        s1 = o->momentum > 0.0f ? r->slots + n : NULL;
        s2 = o->centered ? r->slots + (size_t)(o->momentum > 0.0f ? 2 : 1) * (size_t)n : NULL;
        break;
    case BF_OPT_ADAGRAD: a.kind = BF_UPD_ADAGRAD; break;
    case BF_OPT_NADAM: a.kind = BF_UPD_NADAM; nadam_products(o, a.t, &a); break;
    case BF_OPT_ADAMAX: a.kind = BF_UPD_ADAMAX; break;
    case BF_OPT_ADADELTA: a.kind = BF_UPD_ADADELTA; break;
    case BF_OPT_FTRL:
        a.kind = BF_UPD_FTRL;
        a.ftrl = o->ftrl;
        if (!(lr > 0.0f)) /* before anything changes: Ftrl divides by the rate */
            return BF_FAIL(BF_ERR_ARG, "Ftrl needs a learning rate > 0 (it divides by it), got %g at iteration %ld",
                           (double)lr, o->iterations);
        break;
    case BF_OPT_LION: a.kind = BF_UPD_LION; break;
    case BF_OPT_LAMB: a.kind = BF_UPD_LAMB_MOMENTS; break;
    case BF_OPT_ADAFACTOR: a.af = o->af; break;
    case BF_OPT_MUON: a.mu = o->mu; break;
    default:
        return BF_FAIL(BF_ERR_INTERNAL, "optimizer not set");
    }
    BF_TRY(regularizers(r, 1));
    int apply = 1;
    if (o->acc_steps) BF_TRY(accumulate_gradients(r, &apply));
    if (apply) {
        BF_TRY(clip_gradients(r));
        if (o->kind == BF_OPT_LAMB) BF_TRY(lamb_update(r, &a));
        else if (o->kind == BF_OPT_ADAFACTOR || o->kind == BF_OPT_MUON) BF_TRY(bf_opt_matrix_update(r, &a));
        else BF_TRY(be->opt_update(be, r->w, s0, s1, s2, r->grads, n, &a));
    }
    BF_TRY(constraints(r)); /* Keras: after every apply() */
    if (o->use_ema) BF_TRY(ema_update(r, n));
    if (apply) o->iterations++;
    return BF_OK;
}

bf_status bf_run_set_weights(bf_run *r, const bf_src *sw, const float *cw, long ncw) {
    if ((sw || cw) && !r->weighted)
        return BF_FAIL(BF_ERR_INTERNAL, "sample / class weights given to a run planned without weight slots");
    if (cw && r->m->n_outputs > 1)
        return BF_FAIL(BF_ERR_ARG, "class_weight is only supported for models with a single output (this one has %d); "
                       "use sample_weight", r->m->n_outputs);
    if (sw && sw->row_elems != 1)
        return BF_FAIL(BF_ERR_SHAPE, "sample_weight must hold one weight per sample, got %lld values per sample",
                       (long long)sw->row_elems);
    r->sw_src = sw;
    r->cw = cw;
    r->ncw = cw ? ncw : 0;
    return BF_OK;
}

_Static_assert(BF_SRCS_MAX >= BF_MAX_INPUTS && BF_SRCS_MAX >= BF_MAX_OUTPUTS, "an array per input or output");

/* x's arrays placed in the packed input row: one per input (each its input's
 * size), or one array of the whole row (one input, or rows packed already) */
static bf_status layout_x(const bf_model *m, bf_srcs *x) {
    x->row = m->x_row;
    if (x->n == 1 && (m->n_inputs == 1 || x->src[0].row_elems == m->x_row)) {
        x->off[0] = 0;
        if (x->src[0].row_elems != m->x_row)
            return BF_FAIL(BF_ERR_SHAPE, "x has %lld values per sample, the model's input needs %ld",
                           (long long)x->src[0].row_elems, m->x_row);
        return BF_OK;
    }
    if (x->n != m->n_inputs)
        return BF_FAIL(BF_ERR_SHAPE, "x has %d arrays, the model has %d inputs", x->n, m->n_inputs);
    for (int k = 0; k < x->n; k++) {
        if (x->src[k].row_elems != m->in_sizes[k])
            return BF_FAIL(BF_ERR_SHAPE, "x[%d] has %lld values per sample, input %d needs %ld", k,
                           (long long)x->src[k].row_elems, k, m->in_sizes[k]);
        x->off[k] = m->in_offs[k];
    }
    return BF_OK;
}

/* y's arrays placed in the packed label row: one per output (its label
 * width: 1 for class ids), or one array of the whole row */
static bf_status layout_y(const bf_run *r, bf_srcs *y) {
    const bf_model *m = r->m;
    y->row = r->y_row;
    if (y->n == 1 && (m->n_outputs == 1 || y->src[0].row_elems == r->y_row)) {
        y->off[0] = 0;
        if (y->src[0].row_elems != r->y_row)
            return BF_FAIL(BF_ERR_SHAPE, "y has %lld values per sample, the model's loss needs %ld",
                           (long long)y->src[0].row_elems, r->y_row);
        return BF_OK;
    }
    if (y->n != m->n_outputs)
        return BF_FAIL(BF_ERR_SHAPE, "y has %d arrays, the model has %d outputs", y->n, m->n_outputs);
    for (int k = 0; k < y->n; k++) {
        if (y->src[k].row_elems != m->outs[k].y_row)
            return BF_FAIL(BF_ERR_SHAPE, "y[%d] has %lld values per sample, the loss of output %d needs %ld", k,
                           (long long)y->src[k].row_elems, k, m->outs[k].y_row);
        y->off[k] = m->outs[k].y_off;
    }
    return BF_OK;
}

/* queue the non-finite scan of the gradients no bound covers (BatchNorm, ...) */
static bf_status scan_unbounded(bf_run *r) {
    bf_model *m = r->m;
    for (int i = 0; i < m->nlayers; i++) {
        const bf_layer *L = &m->layers[i];
        for (int j = 0; j < L->nparam && !r->bounded[i] && L->share < 0; j++)
            if (L->params[j].trainable)
                BF_TRY(r->be->nonfinite(r->be, &r->stats->bad, r->grads + L->params[j].grad_offset, L->params[j].n));
    }
    return BF_OK;
}

/* One micro-batch, in two halves. queue: forward, loss, backward when
 * training (and, after the last of its step, the scan of unbounded
 * gradients). finish: one read of its statistics, the only wait for the
 * device. A non-finite loss is diagnosed from the batch still in its slot;
 * the update is never applied. */
/* the part of the step statistics this model uses: the record (its nodes only) and the metric statistics */
static size_t stats_used(const bf_run *r) {
    return bf_step_stats_bytes(r->m->nlayers) + sizeof(double) * (size_t)r->nmv;
}

static bf_status queue_micro_step(bf_run *r, int train, int rows, float scale, int last) {
    bf_backend *be = r->be;
    BF_TRY(be->fill_zero(be, r->stats, stats_used(r)));
    BF_TRY(forward(r, rows, 0, NULL));
    BF_TRY(loss_and_metrics(r, rows, scale));
    BF_TRY(regularizers(r, 0));
    int overlap = 0; /* data parallel: the last micro-batch's backward beside the gradients' sum */
    if (train && last) BF_TRY(bf_run_strategy()->begin_backward(r, &overlap));
    if (train) BF_TRY(backward(r, rows));
    /* overlapped: the gradients are being summed; end_step scans them once summed */
    if (train && last && !r->unguarded && !overlap) BF_TRY(scan_unbounded(r));
    return BF_OK;
}

/* " (sample N of the data)" for row `row` of the current micro-batch, where that is known */
static void sample_note(const bf_run *r, long row, char *out, size_t n) {
    out[0] = '\0';
    if (!r->samples_known) return;
    const long at = r->sample_at + row;
    snprintf(out, n, " (sample %lld of the data)", (long long)(r->sample_order ? r->sample_order[at] : at));
}

/* DataError for the lowest row of the micro-batch whose label (of output k) is no class id */
static bf_status bad_label(bf_run *r, int k, int rows, long step) {
    const bf_model *m = r->m;
    const int S = bf_seq_loss_per_position(m, k) ? bf_seq_out_positions(m, k) : 1;
    const int pos = rows * S - r->hstats->bad_label[k], row = pos / S;
    float label = 0.0f;
    BF_TRY(r->be->to_host(r->be, &label, r->yslot[r->cur] + (long)row * m->y_row + m->outs[k].y_off + pos % S,
                          sizeof label));
    char which[BF_NAME_LEN + 16] = "", at[32] = "";
    int p = bf_model_producer(m, m->out_t[k]);
    if (m->n_outputs > 1) snprintf(which, sizeof which, " of output '%s'", p >= 0 ? m->layers[p].name : "input");
    if (S > 1) snprintf(at, sizeof at, ", position %d", pos % S);
    char sample[48];
    sample_note(r, row, sample, sizeof sample);
    return BF_FAIL(BF_ERR_DATA, "batch %ld: label %g in row %d%s%s%s is not a class id in [0, %ld)", step,
                   (double)label, row, sample, at, which, m->t_size[m->out_t[k]] / S);
}

/* DataError for the lowest row holding an id outside an Embedding's table (step < 0: predict) */
static bf_status bad_ids(bf_run *r, int rows, long step) {
    const bf_model *m = r->m;
    for (int i = 0; i < m->nlayers; i++) {
        const bf_layer *L = &m->layers[i];
        long n = (long)rows * L->in_size, k = r->hstats->layer[i].bad_id;
        if (!(bf_layer_ops_of((int)L->kind)->flags & BF_LF_IDS) || k <= 0 || k > n) continue;
        long row = n - k;
        const int rows_of_table = L->params[0].shape[0]; /* input_dim (BF_LF_IDS: ids into parameter 0's rows) */
        char sample[48];
        sample_note(r, row / L->in_size, sample, sizeof sample);
        return BF_FAIL(BF_ERR_DATA, "%s %ld: id %g at row %ld%s, position %ld is not an integer in [0, %d) "
                       "(layer '%s', input_dim=%d)", step >= 0 ? "batch" : "predict batch", step < 0 ? -step - 1 : step,
                       (double)r->hstats->layer[i].bad_id_val, row / L->in_size, sample, row % L->in_size, rows_of_table,
                       L->name, rows_of_table);
    }
    return BF_OK;
}

static int has_embedding(const bf_model *m) {
    for (int i = 0; i < m->nlayers; i++)
        if (bf_layer_ops_of((int)m->layers[i].kind)->flags & BF_LF_IDS) return 1;
    return 0;
}

static bf_status finish_micro_step(bf_run *r, int train, int rows, long step, bf_totals *st) {
    if (r->nmv) {
        /* record and metric statistics in one copy */
        BF_TRY(r->be->to_host(r->be, r->hmet, r->stats, stats_used(r)));
        memcpy(r->hstats, r->hmet, bf_step_stats_bytes(r->m->nlayers));
    } else {
        BF_TRY(r->be->to_host(r->be, r->hstats, r->stats, stats_used(r)));
    }
    BF_TRY(bad_ids(r, rows, step));
    for (int k = 0; k < r->m->n_outputs; k++) {
        const long S = bf_seq_loss_per_position(r->m, k) ? bf_seq_out_positions(r->m, k) : 1;
        if (r->hstats->bad_label[k] > 0 && r->hstats->bad_label[k] <= rows * S) return bad_label(r, k, rows, step);
        /* a loss per position sums rows * S * (batch loss): back to rows * (batch loss) */
        if (S > 1) r->hstats->loss[k] /= (double)S;
    }
    if (r->nmv) {
        const double *v = (const double *)(const void *)(r->hmet + bf_step_stats_bytes(r->m->nlayers));
        for (long k = 0; k < r->nmv; k++) r->macc[k] += v[k];
    }
    for (int k = 0; k < r->m->n_outputs; k++) {
        st->loss_sum += (double)r->m->outs[k].weight * r->hstats->loss[k];
        st->out_loss[k] += r->hstats->loss[k];
    }
    st->loss_sum += r->hstats->penalty * rows; /* Keras: batch loss + sum of penalties */
    st->rows += rows;
    if (!train) return BF_OK;
    if (!isfinite(st->loss_sum)) return diagnose_nonfinite(r, rows, step, 1);
    add_bounds(r);
    r->other_bad |= r->hstats->bad;
    return BF_OK;
}

/* any gradient of the step non-finite: the unbounded ones were scanned with
 * the last micro-batch; a Dense / Conv2D bound too large to prove its
 * gradients finite (rare: huge values) makes them scanned too */
static bf_status grads_nonfinite(bf_run *r, int *bad) {
    bf_model *m = r->m;
    *bad = r->other_bad;
    for (int i = 0; i < m->nlayers && !*bad; i++) {
        const bf_layer *L = &m->layers[i];
        if (!r->bounded[i] || L->share >= 0 || r->gbound[i] < 0.25 * (double)FLT_MAX) continue;
        for (int j = 0; j < L->nparam && !*bad; j++)
            if (L->params[j].trainable) BF_TRY(scan(r, r->grads + L->params[j].grad_offset, L->params[j].n, 0, bad));
    }
    return BF_OK;
}

/* the unbounded gradients' scan, after an overlapped all-reduce summed them
 * (a non-finite value on any rank is non-finite in the sum) */
static bf_status scan_unbounded_now(bf_run *r) {
    bf_model *m = r->m;
    for (int i = 0; i < m->nlayers && !r->other_bad; i++) {
        const bf_layer *L = &m->layers[i];
        for (int j = 0; j < L->nparam && !r->bounded[i] && L->share < 0 && !r->other_bad; j++)
            if (L->params[j].trainable) BF_TRY(scan(r, r->grads + L->params[j].grad_offset, L->params[j].n, 0, &r->other_bad));
    }
    return BF_OK;
}

static bf_status end_step(bf_run *r, int train, long step, int rows, bf_totals *st, bf_totals *tot) {
    if (train) {
        int bad = 0;
        const bf_strategy *strategy = bf_run_strategy();
        BF_TRY(strategy->end_backward(r, &r->overlapped));
        if (r->overlapped && !r->unguarded) BF_TRY(scan_unbounded_now(r));
        if (!r->unguarded) BF_TRY(grads_nonfinite(r, &bad));
        BF_TRY(strategy->reduce(r, &bad)); /* data parallel: summed over the ranks, the verdict agreed */
        if (bad && !r->m->opt.growth_steps) return diagnose_nonfinite(r, rows, step, 0);
        int apply = 1;
        BF_TRY(bf_loss_scale_step(r, bad, &apply)); /* LossScaleOptimizer: skipped, or the gradients unscaled */
        if (apply) BF_TRY(apply_update(r));
    }
    tot->loss_sum += st->loss_sum;
    for (int k = 0; k < BF_MAX_OUTPUTS; k++) tot->out_loss[k] += st->out_loss[k];
    tot->rows += st->rows;
    tot->steps++;
    memset(st, 0, sizeof *st);
    return BF_OK;
}

/* one micro-batch of the job list and the batch slot it is loaded into */
typedef struct {
    long j, start, rows, step, srows;
    int first, k;
} bf_job;

static int next_job(bf_jobs *jobs, long j, bf_job *job) {
    job->j = j;
    return bf_jobs_next(jobs, &job->start, &job->rows, &job->step, &job->srows, &job->first);
}

/* job's rows gathered into a host slot and, on a device, its upload queued */
static bf_status load(bf_run *r, bf_prefetch *pf, bf_job *job, const bf_srcs *x, const bf_srcs *y) {
    BF_TRY(bf_prefetch_acquire(pf, job->j, &job->k));
    return to_device(r, job->k, job->rows, x, y);
}

/* load of the first job of the next step, failing for its data (a memory-mapped
 * file truncated under the run): the error is kept in *late and the job list
 * ends here, so the current step still completes and is applied first */
static bf_status load_next(bf_run *r, bf_prefetch *pf, bf_job *job, const bf_srcs *x, const bf_srcs *y, int *have,
                           bf_error *late) {
    bf_status s = load(r, pf, job, x, y);
    if (s != BF_ERR_DATA || !job->first) return s;
    *late = *bf_last_error();
    *have = 0;
    return BF_OK;
}

/* On a device (ahead), job j+1 is loaded while job j computes: its upload is
 * queued on the copy stream before job j's statistics are read, and a host
 * slot is released as soon as its upload has read it. On the CPU the host
 * slot is the one computed on: it is released when the next is in hand, and
 * the prefetch thread gathers the next batch meanwhile. Device slot of job
 * j - 1 stays as it is through end_step, whose non-finite diagnosis re-reads
 * it. */
static bf_status steps(bf_run *r, int train, bf_srcs *x, bf_srcs *y, const int64_t *order, long n,
                       long batch, long first_step, long nsteps, bf_totals *tot) {
    if (!y || y->n < 1) return BF_FAIL(BF_ERR_ARG, "y is required");
    const int mix = bf_model_batch_node(r->m); /* a node that mixes the samples: whole batches only */
    if (mix >= 0 && r->B < batch)
        return BF_FAIL(BF_ERR_ARG, "layer '%s' mixes the samples of a batch (a sum over the batch), so a batch of %ld "
                       "rows cannot run as micro-batches of %d: use micro_batch=None", r->m->layers[mix].name, batch,
                       r->B);
    const bf_strategy *strategy = bf_run_strategy();
    if (mix >= 0 && train && strategy->ranks() > 1)
        return BF_FAIL(BF_ERR_ARG, "layer '%s' mixes the samples of a batch (a sum over the batch): data-parallel "
                       "training would split each batch across %d ranks; train it on one", r->m->layers[mix].name,
                       strategy->ranks());
    BF_TRY(layout_x(r->m, x));
    BF_TRY(layout_y(r, y));
    if (train) BF_TRY(strategy->plan(r)); /* data parallel on the CPU: the gradient buckets */
    const int ahead = r->on_device && r->be->upload;
    bf_jobs jobs;
    bf_jobs_init(&jobs, n, batch, r->B, first_step, nsteps);
    BF_TRY(bind(r, 1));
    bf_prefetch pf;
    bf_status s = bf_prefetch_start(&pf, r, x, y, order, 0, &jobs);
    if (s != BF_OK) {
        bind(r, 0);
        return s;
    }
    r->sample_order = order;
    r->samples_known = order != NULL || n > batch;
    bf_totals st = {0};
    long cur_step = -1, done = 0;
    int last_rows = 0;
    bf_job cur, nxt;
    bf_error late = {0};
    int have = next_job(&jobs, 0, &cur);
    if (have) s = load(r, &pf, &cur, x, y);
    while (s == BF_OK && have) {
        if (cur.first && cur_step >= 0) s = end_step(r, train, cur_step, last_rows, &st, tot);
        if (s != BF_OK) break;
        if (cur.first && train) {
            s = r->be->fill_zero(r->be, r->grads, r->grad_bytes);
            memset(r->gbound, 0, sizeof(double) * (size_t)r->m->nlayers);
            r->other_bad = 0;
        }
        if (!ahead && cur.j > 0) bf_prefetch_release(&pf, cur.j - 1);
        r->cur = cur.k;
        done = cur.first ? cur.rows : done + cur.rows;
        r->micro_row = done - cur.rows;
        if (s == BF_OK) s = queue_micro_step(r, train, (int)cur.rows, 1.0f / (float)cur.srows, done >= cur.srows);
        have = next_job(&jobs, cur.j + 1, &nxt);
        if (ahead && s == BF_OK) {
            s = uploaded(r, cur.k);
            bf_prefetch_release(&pf, cur.j);
            if (s == BF_OK && have) s = load_next(r, &pf, &nxt, x, y, &have, &late);
        }
        r->sample_at = cur.start;
        if (s == BF_OK) s = finish_micro_step(r, train, (int)cur.rows, cur.step, &st);
        if (s == BF_OK) s = consumed(r, cur.k);
        if (s == BF_OK && have && !ahead) s = load_next(r, &pf, &nxt, x, y, &have, &late);
        cur_step = cur.step;
        last_rows = (int)cur.rows;
        cur = nxt;
    }
    if (s == BF_OK && cur_step >= 0) s = end_step(r, train, cur_step, last_rows, &st, tot);
    bf_run_strategy()->drain(); /* after a failure mid-step: the communication thread idle first */
    bf_prefetch_stop(&pf);
    tot->wait_seconds += pf.wait_seconds;
    if (s == BF_OK) s = r->be->sync(r->be);
    bf_status u = bind(r, 0);
    if (s == BF_OK && late.code != BF_OK) s = bf_set_error(&late); /* the steps before it applied */
    return s != BF_OK ? s : u;
}

bf_status bf_run_train(bf_run *r, bf_srcs *x, bf_srcs *y, const int64_t *order, long n,
                       long batch, long first_step, long nsteps, bf_totals *tot) {
    if (r->mode != BF_MODE_TRAIN) return BF_FAIL(BF_ERR_INTERNAL, "run not opened for training");
    return steps(r, 1, x, y, order, n, batch, first_step, nsteps, tot);
}

bf_status bf_run_evaluate(bf_run *r, bf_srcs *x, bf_srcs *y, const int64_t *order,
                          long n, long batch, long first_step, long nsteps, bf_totals *tot) {
    if (r->mode != BF_MODE_EVAL) return BF_FAIL(BF_ERR_INTERNAL, "evaluate needs an evaluation run");
    return steps(r, 0, x, y, order, n, batch, first_step, nsteps, tot);
}

bf_status bf_run_predict(bf_run *r, float *out_host, long out_rows, long out_start, bf_srcs *x, long start,
                         long n) {
    const bf_model *m = r->m;
    BF_TRY(layout_x(m, x));
    bf_jobs jobs;
    bf_jobs_init(&jobs, n, r->B, r->B, 0, (n + r->B - 1) / r->B);
    BF_TRY(bind(r, 1));
    bf_prefetch pf;
    bf_status s = bf_prefetch_start(&pf, r, x, NULL, NULL, start, &jobs);
    if (s != BF_OK) {
        bind(r, 0);
        return s;
    }
    /* as in steps(): on a device the next batch uploads while this one computes */
    const int ahead = r->on_device && r->be->upload;
    bf_job cur, nxt;
    int have = next_job(&jobs, 0, &cur);
    if (have) s = load(r, &pf, &cur, x, NULL);
    while (s == BF_OK && have) {
        r->cur = cur.k;
        if (has_embedding(m) && s == BF_OK) s = r->be->fill_zero(r->be, r->stats, bf_step_stats_bytes(m->nlayers));
        if (s == BF_OK) s = forward(r, (int)cur.rows, 0, NULL);
        if (s == BF_OK && has_embedding(m)) { /* ids outside the table: a DataError, as in fit */
            s = r->be->to_host(r->be, r->hstats, r->stats, bf_step_stats_bytes(m->nlayers));
            r->sample_order = NULL;
            r->samples_known = start > 0 || n > r->B;
            r->sample_at = start + cur.start;
            if (s == BF_OK) s = bad_ids(r, (int)cur.rows, -1 - cur.step);
        }
        have = next_job(&jobs, cur.j + 1, &nxt);
        if (ahead && s == BF_OK) {
            s = uploaded(r, cur.k);
            bf_prefetch_release(&pf, cur.j);
            if (s == BF_OK && have) s = load(r, &pf, &nxt, x, NULL);
        }
        /* (the output may be a view of the input slot: released after the copy) */
        for (int k = 0; s == BF_OK && k < m->n_outputs; k++) {
            long C = m->t_size[m->out_t[k]];
            s = r->be->to_host(r->be, out_host + out_rows * m->out_offs[k] + (out_start + cur.start) * C,
                               tbuf(r, m->out_t[k]), sizeof(float) * (size_t)cur.rows * (size_t)C);
        }
        if (!ahead) bf_prefetch_release(&pf, cur.j);
        if (s == BF_OK) s = consumed(r, cur.k);
        if (s == BF_OK && have && !ahead) s = load(r, &pf, &nxt, x, NULL);
        cur = nxt;
    }
    bf_prefetch_stop(&pf);
    if (s == BF_OK) s = r->be->sync(r->be);
    bf_status u = bind(r, 0);
    return s != BF_OK ? s : u;
}
