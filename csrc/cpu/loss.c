/* loss.c - losses with their gradient in one pass, and Keras "accuracy".
 * Per-sample loss is the mean over the last axis C (MSE, BCE) or the sum over
 * classes (CCE, SCCE), as Keras. `logits` mode (fused sigmoid/softmax, or
 * from_logits=True) uses the stable log-sum-exp / softplus forms and writes the
 * gradient w.r.t. the logits. Probability mode follows Keras: clip to
 * [eps, 1-eps] (CCE first renormalizes rows), gradient zero where clipped.
 * dpred = d(sum of per-sample losses)/d pred * scale. An SCCE label that is
 * not a class id raises *bad_label to B - row (loss and gradient 0 there). */
#include <math.h>

#include "cpu_ops.h"

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

// loss_out (B), dpred (B,C), bad_label (1) from pred (B,C) and target (B,C) or (B) for SCCE
bf_status bf_cpu_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                       const float *pred, const float *target, bf_loss_kind kind,
                                       int fused, int from_logits, int B, int C, float scale) {
    (void)be;
    int logits = fused || from_logits;
    for (int i = 0; i < B; i++) {
        const float *p = pred + (size_t)i * C;
        float *d = dpred ? dpred + (size_t)i * C : NULL;
        double l = 0.0;
        switch (kind) {
        case BF_LOSS_MSE: {
            const float *t = target + (size_t)i * C;
            for (int j = 0; j < C; j++) {
                float e = p[j] - t[j];
                l += (double)e * e;
                if (d) d[j] = 2.0f * e / C * scale;
            }
            l /= C;
            break;
        }
        case BF_LOSS_BCE: {
            const float *t = target + (size_t)i * C;
            for (int j = 0; j < C; j++) {
                if (logits) {
                    float z = p[j];
                    l += softplus(z) - z * t[j];
                    if (d) d[j] = (sigm(z) - t[j]) / C * scale;
                } else {
                    float q = p[j], clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= t[j] * logf(q) + (1.0f - t[j]) * logf(1.0f - q);
                    if (d) d[j] = clipped ? 0.0f : (-t[j] / q + (1.0f - t[j]) / (1.0f - q)) / C * scale;
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
            float tsum = t ? 0.0f : 1.0f;
            if (t)
                for (int j = 0; j < C; j++) tsum += t[j];
            if (logits) {
                float mx = p[0];
                for (int j = 1; j < C; j++) mx = p[j] > mx ? p[j] : mx;
                double s = 0.0;
                for (int j = 0; j < C; j++) s += exp((double)(p[j] - mx));
                double lse = mx + log(s);
                if (t) {
                    for (int j = 0; j < C; j++) l -= t[j] * (p[j] - lse);
                } else {
                    l = lse - p[cls];
                }
                if (d)
                    for (int j = 0; j < C; j++) {
                        float sm = (float)(exp((double)p[j] - lse));
                        float tj = t ? t[j] : (j == cls ? 1.0f : 0.0f);
                        d[j] = (sm * tsum - tj) * scale;
                    }
            } else {
                double S = 0.0;
                for (int j = 0; j < C; j++) S += p[j];
                for (int j = 0; j < C; j++) {
                    float tj = t ? t[j] : (j == cls ? 1.0f : 0.0f);
                    float q = (float)(p[j] / S), clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= tj * logf(q);
                    /* d/dp_k of -sum_j t_j log(p_j / S) = -t_k/p_k + tsum/S */
                    if (d) d[j] = ((clipped ? 0.0f : -tj / p[j]) + (float)(tsum / S)) * scale;
                }
            }
            break;
        }
        default:
            return BF_FAIL(BF_ERR_ARG, "unknown loss %d", (int)kind);
        }
        loss_out[i] = (float)l;
    }
    return BF_OK;
}

static int argmax(const float *x, int C) {
    int k = 0;
    for (int j = 1; j < C; j++)
        if (x[j] > x[k]) k = j;
    return k;
}

// correct_out (B) from pred (B,C) and target (B,C) or (B)
bf_status bf_cpu_accuracy(bf_backend *be, float *correct_out, const float *pred,
                          const float *target, bf_loss_kind kind, int from_logits, int B, int C) {
    (void)be;
    for (int i = 0; i < B; i++) {
        const float *p = pred + (size_t)i * C;
        float acc = 0.0f;
        switch (kind) {
        case BF_LOSS_SCCE: acc = (float)argmax(p, C) == target[i] ? 1.0f : 0.0f; break;
        case BF_LOSS_CCE: acc = argmax(p, C) == argmax(target + (size_t)i * C, C) ? 1.0f : 0.0f; break;
        case BF_LOSS_BCE: {
            const float *t = target + (size_t)i * C;
            /* Keras binary_accuracy: threshold 0.5 on the output; a fused
             * sigmoid output is held as logits here, so threshold those at 0 */
            for (int j = 0; j < C; j++) {
                float yhat = from_logits ? (p[j] > 0.0f) : (p[j] > 0.5f);
                acc += yhat == t[j] ? 1.0f : 0.0f;
            }
            acc /= C;
            break;
        }
        default: {
            const float *t = target + (size_t)i * C;
            for (int j = 0; j < C; j++) acc += p[j] == t[j] ? 1.0f : 0.0f;
            acc /= C;
        }
        }
        correct_out[i] = acc;
    }
    return BF_OK;
}
