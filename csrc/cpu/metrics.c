/* metrics.c - Keras 3 metrics accumulated per micro-batch (see backend.h
 * metric_update): accuracy family, mean errors, AUC buckets, precision /
 * recall counts, per-column sums, in blocks of rows fixed by the batch (the same sums on the
 * pool, par_ops.c). Values are added into the step statistics (doubles); the
 * host turns the epoch's sums into results (csrc/core/metric_results.c).
 * A fused activation is applied here first, so metrics see what Keras's
 * model outputs. */
#include <math.h>

#include "cpu_ops.h"
#include "vec_exp.h"

static inline float sigm(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* the row's output as Keras sees it: act applied to logits (softmax: row max mx, sum s) */
static inline float q_of(const float *p, int j, bf_act act, float mx, float s) {
    if (act == BF_ACT_SIGMOID) return sigm(p[j]);
    if (act == BF_ACT_SOFTMAX) return bf_exp_neg(p[j] - mx) / s;
    return p[j];
}

/* first maximum, as argmax in Keras / NumPy; e: the row's softmax exps when kept (q_j = e_j / s), else NULL */
static int argmax_q(const float *p, const float *e, int C, bf_act act, float mx, float s) {
    int k = 0;
    float best = e ? e[0] / s : q_of(p, 0, act, mx, s);
    for (int j = 1; j < C; j++) {
        float v = e ? e[j] / s : q_of(p, j, act, mx, s);
        if (v > best) { best = v; k = j; }
    }
    return k;
}

#define QBUF 1024 /* classes whose softmax a row keeps on the stack */

static int argmax_f(const float *x, int C) {
    int k = 0;
    for (int j = 1; j < C; j++)
        if (x[j] > x[k]) k = j;
    return k;
}

// acc (bf_metric_nvalues) += statistics of rows [lo, hi) of pred (B,C) against target (B,T), sw (B) or NULL
void bf_cpu_metric_rows(double *acc, const float *pred, const float *target, const float *sw, const bf_metric_spec *m,
                        bf_act act, int lo, int hi, int C, int T) {
    const int T1 = m->num_thresholds - 1;
    int j0, j1; /* the columns read by the confusion and bucketed metrics (class_id) */
    bf_metric_cols(m, C, &j0, &j1);
    for (int i = lo; i < hi; i++) {
        const float *p = pred + (size_t)i * C, *t = target + (size_t)i * T;
        const float w = m->weighted && sw ? sw[i] : m->batch_mean ? m->row_w : 1.0f;
        float mx = 0.0f, s = 1.0f;
        const int keep_e = act == BF_ACT_SOFTMAX && C <= QBUF &&
                           (m->kind == BF_MET_CAT_ACC || m->kind == BF_MET_SPARSE_CAT_ACC);
        float e[QBUF];
        if (act == BF_ACT_SOFTMAX) {
            mx = p[0];
            for (int j = 1; j < C; j++) mx = p[j] > mx ? p[j] : mx;
            s = 0.0f;
            if (keep_e) {
                for (int j = 0; j < C; j++) e[j] = bf_exp_neg(p[j] - mx); /* each exp once; vectorizes */
                for (int j = 0; j < C; j++) s += e[j];
            } else {
                for (int j = 0; j < C; j++) s += bf_exp_neg(p[j] - mx);
            }
        }
        const float *ev = keep_e ? e : NULL;
        double v = 0.0;
        switch (m->kind) {
        case BF_MET_BINARY_ACC:
            for (int j = 0; j < C; j++) v += (q_of(p, j, act, mx, s) > m->threshold ? 1.0f : 0.0f) == t[j % T];
            v /= C;
            break;
        case BF_MET_CAT_ACC: v = argmax_q(p, ev, C, act, mx, s) == argmax_f(t, T); break;
        case BF_MET_SPARSE_CAT_ACC: v = (float)argmax_q(p, ev, C, act, mx, s) == t[0]; break;
        case BF_MET_TOPK:
        case BF_MET_SPARSE_TOPK: {
            /* Keras in_top_k: rank = 1 + #{j: q_j > q_label} <= k; NaN at the label ranks last */
            int cls = m->kind == BF_MET_TOPK ? argmax_f(t, T) : (int)t[0];
            if (cls < 0 || cls >= C || (float)cls != (m->kind == BF_MET_TOPK ? (float)cls : t[0])) break;
            float ql = q_of(p, cls, act, mx, s);
            if (isnan(ql)) ql = -INFINITY;
            int rank = 1;
            for (int j = 0; j < C; j++) rank += q_of(p, j, act, mx, s) > ql;
            v = rank <= m->k;
            break;
        }
        case BF_MET_MAE:
        case BF_MET_MSE:
        case BF_MET_RMSE:
            for (int j = 0; j < C; j++) {
                float e = q_of(p, j, act, mx, s) - t[j % T];
                v += m->kind == BF_MET_MAE ? fabsf(e) : e * e;
            }
            v /= C;
            break;
        case BF_MET_AUC:
        case BF_MET_PREC_AT_REC:
        case BF_MET_REC_AT_PREC:
        case BF_MET_SENS_AT_SPEC:
        case BF_MET_SPEC_AT_SENS:
            /* Keras's evenly spaced thresholds: bucket ceil(q (T-1)) - 1, at least 0 */
            for (int j = j0; j < j1; j++) {
                float q = q_of(p, j, act, mx, s);
                if (m->from_logits) q = sigm(q);
                q = q < 0.0f ? 0.0f : q > 1.0f ? 1.0f : q;
                int b = (int)ceilf(q * (float)T1) - 1;
                if (b < 0) b = 0;
                float tj = t[j % T];
                acc[b] += (double)(tj * w);
                acc[m->num_thresholds + b] += (double)((1.0f - tj) * w);
            }
            continue;
        case BF_MET_PRECISION:
        case BF_MET_RECALL:
        case BF_MET_TP:
        case BF_MET_FP:
        case BF_MET_TN:
        case BF_MET_FN: {
            /* confusion counts (tp, fp, fn[, tn]) at the threshold: prediction > threshold */
            const int tn = m->kind >= BF_MET_TP;
            for (int j = j0; j < j1; j++) {
                int pp = q_of(p, j, act, mx, s) > m->threshold, lp = t[j % T] != 0.0f;
                if (pp && lp) acc[0] += w;
                else if (pp) acc[1] += w;
                else if (lp) acc[2] += w;
                else if (tn) acc[3] += w;
            }
            continue;
        }
        case BF_MET_SUMS:
            for (int j = 0; j < m->ncols; j++) acc[j] += (double)(q_of(p, m->col0 + j, act, mx, s) * w);
            acc[m->ncols] += w;
            acc[m->ncols + 1] += 1.0;
            continue;
        }
        acc[0] += v * w;
        acc[1] += w;
    }
}

int bf_metric_block_rows(int B) {
    const int r = (B + BF_METRIC_BLOCKS - 1) / BF_METRIC_BLOCKS;
    return r < 256 ? 256 : r;
}

/* Rows in blocks fixed by B (bf_metric_block_rows), each summed on its own and
 * added in block order: the parallel update (par_ops.c) adds the same sums in
 * the same order. AUC's buckets (hundreds of values) go straight in. */
bf_status bf_cpu_metric_update_serial(bf_backend *be, double *acc, const float *pred, const float *target,
                                      const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T) {
    (void)be;
    const long nv = bf_metric_nvalues(m);
    if (nv > BF_METRIC_SMALL) {
        bf_cpu_metric_rows(acc, pred, target, sw, m, act, 0, B, C, T);
        return BF_OK;
    }
    const int R = bf_metric_block_rows(B);
    for (int lo = 0; lo < B; lo += R) {
        double part[BF_METRIC_SMALL] = {0};
        bf_cpu_metric_rows(part, pred, target, sw, m, act, lo, B - lo < R ? B : lo + R, C, T);
        for (long k = 0; k < nv; k++) acc[k] += part[k];
    }
    return BF_OK;
}
