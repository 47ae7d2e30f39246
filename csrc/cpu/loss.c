/* loss.c - losses with their gradient in one pass, Keras 3 definitions.
 * Per-sample loss is the mean over the last axis C (MSE, MAE, Huber, log-cosh,
 * BCE) or the sum over classes (CCE, SCCE), as Keras; BF_LOSS_MEAN is the
 * mean of pred itself (a custom loss's traced values; Keras's
 * sum_over_batch_size of them), its gradient 1/C; BF_LOSS_ADDED the sum of
 * pred over C, sample weights not applied (an added loss), gradient 1. Label smoothing: BCE
 * t(1-s) + s/2, CCE t(1-s) + s/C. `logits` mode (fused sigmoid/softmax, or
 * from_logits=True) uses the stable log-sum-exp / softplus forms and writes the
 * gradient w.r.t. the logits. Probabilities follow Keras (on JAX): clip to
 * [eps, 1-eps] (CCE first renormalizes rows), gradient zero where clipped.
 * A fused sigmoid / softmax computes its loss as Keras does from the
 * activation's float output (clipped, so capped at -log(eps)) and writes the
 * gradient w.r.t. the logits in one step; from_logits=True uses log-sum-exp /
 * softplus and is not clipped.
 * loss_out (B) = w_i * loss_i; dpred = d(sum of weighted losses)/d pred * scale.
 * An SCCE label that is not a class id raises *bad_label to B - row (loss and
 * gradient 0 there). The fused softmax takes vec_exp.h's exp (its arguments
 * are <= 0): libm's expf call per class was a third of a tagger's step. */
#include <math.h>

#include "cpu_ops.h"
#include "vec_exp.h"

#define BF_EPS 1e-7f

static inline float softplus(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
static inline float sigm(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* the class of SCCE label t, or -1 when t is not a class id in [0, C) */
static int class_of(float t, int C) {
    int c = (int)t;
    return !(t >= 0.0f) || (float)c != t || c >= C ? -1 : c;
}

/* elementwise regression losses: value and d/d pred of one element of error e */
static inline double regression(bf_loss_kind kind, float e, float delta, float *de) {
    switch (kind) {
    case BF_LOSS_MSE: *de = 2.0f * e; return (double)e * e;
    case BF_LOSS_MAE: *de = e > 0.0f ? 1.0f : e < 0.0f ? -1.0f : 0.0f; return fabs((double)e);
    case BF_LOSS_HUBER: {
        float a = fabsf(e);
        if (a <= delta) { *de = e; return 0.5 * (double)e * e; }
        *de = e > 0.0f ? delta : -delta;
        return (double)delta * a - 0.5 * (double)delta * delta;
    }
    default: /* log-cosh: x + softplus(-2x) - log 2 */
        *de = tanhf(e);
        return (double)e + (double)softplus(-2.0f * e) - 0.69314718055994531;
    }
}

// loss_out (B), dpred (B,C), bad_label (1) from pred (B,C), target (B,C) or (B) for SCCE, sw (B) or NULL
bf_status bf_cpu_loss_forward_backward_serial(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                              const float *pred, const float *target, const float *sw,
                                              const bf_loss_spec *loss, int fused, int B, int C, float scale) {
    (void)be;
    const bf_loss_kind kind = loss->kind;
    const int logits = fused || loss->from_logits;
    const float ls = loss->label_smoothing;
    for (int i = 0; i < B; i++) {
        const float *p = pred + (size_t)i * C;
        float *d = dpred ? dpred + (size_t)i * C : NULL;
        const float w = sw && kind != BF_LOSS_ADDED ? sw[i] : 1.0f, ws = w * scale;
        double l = 0.0;
        switch (kind) {
        case BF_LOSS_MSE:
        case BF_LOSS_MAE:
        case BF_LOSS_HUBER:
        case BF_LOSS_LOGCOSH: {
            const float *t = target + (size_t)i * C;
            for (int j = 0; j < C; j++) {
                float de;
                l += regression(kind, p[j] - t[j], loss->delta, &de);
                if (d) d[j] = de / C * ws;
            }
            l /= C;
            break;
        }
        case BF_LOSS_MEAN:
            for (int j = 0; j < C; j++) {
                l += p[j];
                if (d) d[j] = ws / C;
            }
            l /= C;
            break;
        case BF_LOSS_ADDED:
            for (int j = 0; j < C; j++) {
                l += p[j];
                if (d) d[j] = ws;
            }
            break;
        case BF_LOSS_BCE: {
            const float *t = target + (size_t)i * C;
            for (int j = 0; j < C; j++) {
                const float tj = ls > 0.0f ? t[j] * (1.0f - ls) + 0.5f * ls : t[j];
                if (fused) {
                    /* Keras computes the loss from the sigmoid's output, clipped */
                    float q = sigm(p[j]), qc = q < BF_EPS ? BF_EPS : q > 1.0f - BF_EPS ? 1.0f - BF_EPS : q;
                    l -= tj * logf(qc) + (1.0f - tj) * logf(1.0f - qc);
                    if (d) d[j] = qc != q ? 0.0f : (q - tj) / C * ws;
                } else if (logits) {
                    float z = p[j];
                    l += softplus(z) - z * tj;
                    if (d) d[j] = (sigm(z) - tj) / C * ws;
                } else {
                    float q = p[j], clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= tj * logf(q) + (1.0f - tj) * logf(1.0f - q);
                    if (d) d[j] = clipped ? 0.0f : (-tj / q + (1.0f - tj) / (1.0f - q)) / C * ws;
                }
            }
            l /= C;
            break;
        }
        case BF_LOSS_CCE:
        case BF_LOSS_SCCE: {
            const float *t = kind == BF_LOSS_CCE ? target + (size_t)i * C : NULL;
            int cls = -1;
            if (!t && (cls = class_of(target[i], C)) < 0) {
                if (!bad_label)
                    return BF_FAIL(BF_ERR_DATA, "label %g in row %d is not a class id in [0, %d)",
                                   (double)target[i], i, C);
                if (B - i > *bad_label) *bad_label = B - i;
                for (int j = 0; d && j < C; j++) d[j] = 0.0f;
                break; /* loss 0 */
            }
            const float sm_off = t && ls > 0.0f ? ls / (float)C : 0.0f, sm_keep = t ? 1.0f - ls : 1.0f;
#define TJ(j) (t ? t[j] * sm_keep + sm_off : ((j) == cls ? 1.0f : 0.0f))
            float tsum = 0.0f;
            for (int j = 0; j < C; j++) tsum += TJ(j);
            if (fused) {
                /* Keras's graph: softmax in float, renormalized by its sum S, clipped
                 * to [eps, 1-eps], log. d/dz_i = q_i tu / S - t_i [i unclipped], tu =
                 * targets of the unclipped classes. d (when given) holds q meanwhile. */
                float mx = p[0];
                for (int j = 1; j < C; j++) mx = p[j] > mx ? p[j] : mx;
                float es = 0.0f, S = 0.0f, tu = 0.0f;
                if (d) { /* the exps and quotients in loops of their own (they vectorize), summed in order */
                    for (int j = 0; j < C; j++) d[j] = bf_exp_neg(p[j] - mx);
                    for (int j = 0; j < C; j++) es += d[j];
                    for (int j = 0; j < C; j++) d[j] /= es;
                    for (int j = 0; j < C; j++) S += d[j];
                } else {
                    for (int j = 0; j < C; j++) es += bf_exp_neg(p[j] - mx);
                    for (int j = 0; j < C; j++) S += bf_exp_neg(p[j] - mx) / es;
                }
                if (!t && d) { /* SCCE: only the label's class has a target (1): the loops below, term for term */
                    const float q = d[cls], qn = q / S;
                    const int clipped = qn < BF_EPS || qn > 1.0f - BF_EPS;
                    tu = clipped ? 0.0f : 1.0f;
                    l -= logf(qn < BF_EPS ? BF_EPS : qn > 1.0f - BF_EPS ? 1.0f - BF_EPS : qn);
                    for (int j = 0; j < C; j++) d[j] = d[j] * tu / S * ws;
                    d[cls] = (q * tu / S - (clipped ? 0.0f : 1.0f)) * ws;
                    break;
                }
                for (int j = 0; j < C; j++) {
                    float qn = (d ? d[j] : bf_exp_neg(p[j] - mx) / es) / S;
                    if (qn >= BF_EPS && qn <= 1.0f - BF_EPS) tu += TJ(j);
                }
                for (int j = 0; j < C; j++) {
                    float q = d ? d[j] : bf_exp_neg(p[j] - mx) / es, qn = q / S, tj = TJ(j);
                    int clipped = qn < BF_EPS || qn > 1.0f - BF_EPS;
                    if (tj != 0.0f) l -= tj * logf(qn < BF_EPS ? BF_EPS : qn > 1.0f - BF_EPS ? 1.0f - BF_EPS : qn);
                    if (d) d[j] = (q * tu / S - (clipped ? 0.0f : tj)) * ws;
                }
            } else if (logits) {
                float mx = p[0];
                for (int j = 1; j < C; j++) mx = p[j] > mx ? p[j] : mx;
                double s = 0.0;
                for (int j = 0; j < C; j++) s += exp((double)(p[j] - mx));
                double lse = mx + log(s);
                if (t) {
                    for (int j = 0; j < C; j++) l -= TJ(j) * (p[j] - lse);
                } else {
                    l = lse - p[cls];
                }
                if (d)
                    for (int j = 0; j < C; j++) {
                        float sm = (float)(exp((double)p[j] - lse));
                        d[j] = (sm * tsum - TJ(j)) * ws;
                    }
            } else {
                double S = 0.0, tu = 0.0; /* tu: targets of the unclipped classes */
                for (int j = 0; j < C; j++) S += p[j];
                for (int j = 0; j < C; j++) {
                    float q = (float)(p[j] / S);
                    if (q >= BF_EPS && q <= 1.0f - BF_EPS) tu += TJ(j);
                }
                for (int j = 0; j < C; j++) {
                    float tj = TJ(j);
                    float q = (float)(p[j] / S), clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= tj * logf(q);
                    /* d/dp_k of -sum_j t_j log(p_j / S) over the unclipped j = -t_k/p_k + tu/S */
                    if (d) d[j] = ((clipped ? 0.0f : -tj / p[j]) + (float)(tu / S)) * ws;
                }
            }
#undef TJ
            break;
        }
        default:
            return BF_FAIL(BF_ERR_ARG, "unknown loss %d", (int)kind);
        }
        loss_out[i] = (float)(l * w);
    }
    return BF_OK;
}
