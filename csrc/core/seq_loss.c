/* seq_loss.c - losses and metrics per position of a sequence output, as
 * Keras 3 (see seq_loss.h). Buffers of output k: its loss values (B*S) and
 * one weight buffer (B*S each: loss weights, metric weights with the mask,
 * metric weights without it), planned at
 * the loss time. The loss kernel sees B*S rows of C; a per-position loss
 * l * w sums to rows * S * (batch loss), so its sum and gradient are divided
 * by S. A masked loss normalizes by the kept positions of the whole batch,
 * hence it refuses a batch split into micro-batches. */
#include <math.h>

#include "seq_loss.h"

#include "bufs.h"
#include "masks.h"

#define BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))

int bf_seq_loss_per_position(const bf_model *m, int k) {
    const bf_loss_kind kind = m->outs[k].loss.kind;
    if (m->t_rank[m->out_t[k]] < 2) return 0;
    return m->t_mask[m->out_t[k]] >= 0 || (bf_seq_out_positions(m, k) > 1 && (kind == BF_LOSS_CCE || kind == BF_LOSS_SCCE));
}

int bf_seq_output_per_position(const bf_model *m, int k) {
    return m->t_rank[m->out_t[k]] >= 2 && (bf_seq_out_positions(m, k) > 1 || m->t_mask[m->out_t[k]] >= 0);
}

/* Keras masks the metrics that wrap a function of (y_true, y_pred) (MeanMetricWrapper) */
static int masked_kind(bf_metric_kind k) { return k <= BF_MET_MSE; }
static int per_position_kind(bf_metric_kind k) { return k >= BF_MET_CAT_ACC && k <= BF_MET_SPARSE_TOPK; }

int bf_seq_metric_per_position(const bf_model *m, const bf_metric_spec *q, int fused) {
    const int k = q->output, p = bf_model_producer(m, m->out_t[k]);
    if (m->t_rank[m->out_t[k]] < 2) return 0;
    if (masked_kind(q->kind) && m->t_mask[m->out_t[k]] >= 0) return 1;
    if (bf_seq_out_positions(m, k) <= 1) return 0;
    if (fused && p >= 0 && m->layers[p].act == BF_ACT_SOFTMAX) return 1; /* softmax over the last axis */
    return per_position_kind(q->kind);
}

static int any_metric(const bf_run *r, int k) {
    for (int q = 0; q < r->m->nmetrics; q++)
        if (r->m->metrics[q].output == k && bf_seq_metric_per_position(r->m, &r->m->metrics[q], r->out_fused[k]))
            return 1;
    return 0;
}

bf_status bf_seq_loss_plan(bf_run *r, int k, int t, int weighted) {
    const bf_model *m = r->m;
    const size_t B = (size_t)r->B, S = (size_t)bf_seq_out_positions(m, k), fb = sizeof(float);
    const int masked = m->t_mask[m->out_t[k]] >= 0;
    r->posw_id[k] = -2;
    if (masked) {
        if (S != (size_t)m->layers[m->t_mask[m->out_t[k]]].in_size)
            return BF_FAIL(BF_ERR_ARG, "output '%s' has %zu positions per sample and carries the mask of layer '%s' "
                           "over %ld steps; Keras would mask the loss with it, which boundfit does only when they match",
                           m->layers[bf_model_producer(m, m->out_t[k])].name, S, m->layers[m->t_mask[m->out_t[k]]].name,
                           m->layers[m->t_mask[m->out_t[k]]].in_size);
        bf_seq_use_mask(r, m->out_t[k], t);
    }
    const int loss_w = bf_seq_loss_per_position(m, k) && (masked || weighted);
    const int metric_w = any_metric(r, k) && weighted;
    if (loss_w || metric_w) {
        BF_TRY(bf_run_newbuf(r, &r->posw_id[k], 3 * B * S * fb, BF_BUF_STATE,
                             m->layers[bf_model_producer(m, m->out_t[k])].name,
                             " loss / metric weights per position"));
        bf_run_use(r, r->posw_id[k], t);
    }
    return BF_OK;
}

bf_status bf_seq_loss_and_metrics(bf_run *r, int k, int rows, float scale, float *pred, const float *tgt) {
    bf_backend *be = r->be;
    const bf_model *m = r->m;
    const bf_output *o = &m->outs[k];
    const int t = m->out_t[k], S = bf_seq_out_positions(m, k), C = (int)(m->t_size[t] / S), P = rows * S;
    const int Y = (int)(o->y_row / S); /* targets per position */
    const float *sw = r->weighted ? r->wslot[r->cur] : NULL, *mask = bf_seq_mask(r, t);
    float *lw = r->posw_id[k] >= 0 ? BUF(r, r->posw_id[k]) : NULL;
    if (!be->pos_weights) return BF_FAIL(BF_ERR_ARG, "sequence losses need pos_weights, missing on the %s backend", be->name);
    if ((mask || sw) && !lw && bf_seq_loss_per_position(m, k))
        return BF_FAIL(BF_ERR_INTERNAL, "output %d: per-position weights were not planned", k);
    if (bf_seq_loss_per_position(m, k)) {
        if (mask && lroundf(1.0f / scale) != rows)
            return BF_FAIL(BF_ERR_ARG, "a masked sequence loss is normalized over the whole batch's unmasked steps, "
                           "as Keras does; it cannot be split into micro-batches (micro_batch=%d, batch of %ld rows)",
                           rows, lroundf(1.0f / scale));
        if (mask || sw) BF_TRY(be->pos_weights(be, lw, sw, mask, rows, S, 1));
        float *dpred = r->mode == BF_MODE_TRAIN && r->t_grad[t] >= 0 ? BUF(r, r->t_grad[t]) : NULL;
        BF_TRY(be->loss_forward_backward(be, BUF(r, r->loss_id[k]), dpred, &r->stats->bad_label[k], pred, tgt,
                                         mask || sw ? lw : NULL, &o->loss, r->out_fused[k], P, C,
                                         scale * o->weight / (float)S * bf_optimizer_grad_scale(&m->opt)));
        BF_TRY(be->sum(be, &r->stats->loss[k], BUF(r, r->loss_id[k]), P));
    } else {
        float *dpred = r->mode == BF_MODE_TRAIN && r->t_grad[t] >= 0 ? BUF(r, r->t_grad[t]) : NULL;
        BF_TRY(be->loss_forward_backward(be, BUF(r, r->loss_id[k]), dpred, &r->stats->bad_label[k], pred, tgt, sw,
                                         &o->loss, r->out_fused[k], rows, (int)m->t_size[t],
                                         scale * o->weight * bf_optimizer_grad_scale(&m->opt)));
        BF_TRY(be->sum(be, &r->stats->loss[k], BUF(r, r->loss_id[k]), rows));
    }
    /* the metrics (a fused activation applied by the metric, over the last axis here) */
    const int p = bf_model_producer(m, t);
    const bf_act act = r->out_fused[k] && p >= 0 ? m->layers[p].act : BF_ACT_LINEAR;
    int mw_done[2] = {0, 0};
    for (int q = 0; q < m->nmetrics && r->nmv; q++) {
        const bf_metric_spec *ms = &m->metrics[q];
        if (ms->output != k) continue;
        if (!bf_seq_metric_per_position(m, ms, r->out_fused[k])) {
            BF_TRY(be->metric_update(be, r->mstats + r->moff[q], pred, tgt, sw, ms, act, rows, (int)m->t_size[t],
                                     (int)o->y_row));
            continue;
        }
        bf_metric_spec pos = *ms;
        const float *w = NULL;
        const float *msk = masked_kind(ms->kind) ? mask : NULL;
        if (ms->weighted && sw) {
            /* sw * mask, or sw broadcast; each computed once for the metrics it serves */
            const int j = msk != NULL;
            if (!lw) return BF_FAIL(BF_ERR_INTERNAL, "output %d: per-position metric weights were not planned", k);
            float *mw = lw + (size_t)(2 - j) * r->B * S;
            if (!mw_done[j]) BF_TRY(be->pos_weights(be, mw, sw, msk, rows, S, 0));
            mw_done[j] = 1;
            w = mw;
        } else {
            w = msk;
        }
        pos.weighted = w != NULL;
        BF_TRY(be->metric_update(be, r->mstats + r->moff[q], pred, tgt, w, &pos, act, P, C, Y));
    }
    return BF_OK;
}
