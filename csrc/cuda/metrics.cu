/* metrics.cu - Keras 3 metrics accumulated per micro-batch, as
 * csrc/cpu/metrics.c: one thread per row adds the row's statistics into the
 * step statistics (doubles in device memory) with atomicAdd, so nothing
 * waits. A fused activation (sigmoid / softmax) is applied first, so metrics
 * see what Keras's model outputs. Sums of non-integer sample weights may
 * round differently from the CPU's sequential order (last bits). */
#include <math.h>

#include "cuda_ops.h"

__device__ __forceinline__ float msigm(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}

__device__ __forceinline__ float q_of(const float *p, int j, int act, float mx, float s) {
    if (act == BF_ACT_SIGMOID) return msigm(p[j]);
    if (act == BF_ACT_SOFTMAX) return expf(p[j] - mx) / s;
    return p[j];
}

__device__ int argmax_q(const float *p, int C, int act, float mx, float s) {
    int k = 0;
    float best = q_of(p, 0, act, mx, s);
    for (int j = 1; j < C; j++) {
        const float v = q_of(p, j, act, mx, s);
        if (v > best) { best = v; k = j; }
    }
    return k;
}

__device__ int argmax_f(const float *x, int C) {
    int k = 0;
    for (int j = 1; j < C; j++)
        if (x[j] > x[k]) k = j;
    return k;
}

// acc (nvalues) += statistics of pred (B,C) against target (B,T), sw (B) or NULL; one thread per row
__global__ void metric_kernel(double *acc, const float *pred, const float *target, const float *sw, bf_metric_spec m,
                              int act, int B, int C, int T) {
    const int T1 = m.num_thresholds - 1;
    /* the columns read by the confusion and bucketed metrics: class_id's alone, or all (bf_metric_cols) */
    const int j0 = m.has_class_id ? m.class_id : 0, j1 = m.has_class_id ? m.class_id + 1 : C;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < B; i += gridDim.x * blockDim.x) {
        const float *p = pred + (size_t)i * C, *t = target + (size_t)i * T;
        const float w = m.weighted && sw ? sw[i] : m.batch_mean ? m.row_w : 1.0f;
        float mx = 0.0f, s = 1.0f;
        if (act == BF_ACT_SOFTMAX) {
            mx = p[0];
            for (int j = 1; j < C; j++) mx = p[j] > mx ? p[j] : mx;
            s = 0.0f;
            for (int j = 0; j < C; j++) s += expf(p[j] - mx);
        }
        double v = 0.0;
        switch (m.kind) {
        case BF_MET_BINARY_ACC:
            for (int j = 0; j < C; j++) v += (q_of(p, j, act, mx, s) > m.threshold ? 1.0f : 0.0f) == t[j % T];
            v /= C;
            break;
        case BF_MET_CAT_ACC: v = argmax_q(p, C, act, mx, s) == argmax_f(t, T); break;
        case BF_MET_SPARSE_CAT_ACC: v = (float)argmax_q(p, C, act, mx, s) == t[0]; break;
        case BF_MET_TOPK:
        case BF_MET_SPARSE_TOPK: {
            const int cls = m.kind == BF_MET_TOPK ? argmax_f(t, T) : (int)t[0];
            if (cls < 0 || cls >= C || (m.kind == BF_MET_SPARSE_TOPK && (float)cls != t[0])) break;
            float ql = q_of(p, cls, act, mx, s);
            if (ql != ql) ql = -INFINITY;
            int rank = 1;
            for (int j = 0; j < C; j++) rank += q_of(p, j, act, mx, s) > ql;
            v = rank <= m.k;
            break;
        }
        case BF_MET_MAE:
        case BF_MET_MSE:
        case BF_MET_RMSE:
            for (int j = 0; j < C; j++) {
                const float e = q_of(p, j, act, mx, s) - t[j % T];
                v += m.kind == BF_MET_MAE ? fabsf(e) : __fmul_rn(e, e);
            }
            v /= C;
            break;
        case BF_MET_AUC:
        case BF_MET_PREC_AT_REC:
        case BF_MET_REC_AT_PREC:
        case BF_MET_SENS_AT_SPEC:
        case BF_MET_SPEC_AT_SENS:
            for (int j = j0; j < j1; j++) {
                float q = q_of(p, j, act, mx, s);
                if (m.from_logits) q = msigm(q);
                q = q < 0.0f ? 0.0f : q > 1.0f ? 1.0f : q;
                int b = (int)ceilf(__fmul_rn(q, (float)T1)) - 1;
                if (b < 0) b = 0;
                const float tj = t[j % T];
                atomicAdd(&acc[b], (double)__fmul_rn(tj, w));
                atomicAdd(&acc[m.num_thresholds + b], (double)__fmul_rn(1.0f - tj, w));
            }
            continue;
        case BF_MET_PRECISION:
        case BF_MET_RECALL:
        case BF_MET_TP:
        case BF_MET_FP:
        case BF_MET_TN:
        case BF_MET_FN: {
            const int tn = m.kind >= BF_MET_TP;
            for (int j = j0; j < j1; j++) {
                const int pp = q_of(p, j, act, mx, s) > m.threshold, lp = t[j % T] != 0.0f;
                if (pp && lp) atomicAdd(&acc[0], (double)w);
                else if (pp) atomicAdd(&acc[1], (double)w);
                else if (lp) atomicAdd(&acc[2], (double)w);
                else if (tn) atomicAdd(&acc[3], (double)w);
            }
            continue;
        }
        case BF_MET_SUMS:
            for (int j = 0; j < m.ncols; j++) atomicAdd(&acc[j], (double)__fmul_rn(q_of(p, m.col0 + j, act, mx, s), w));
            atomicAdd(&acc[m.ncols], (double)w);
            atomicAdd(&acc[m.ncols + 1], 1.0);
            continue;
        default:
            continue;
        }
        atomicAdd(&acc[0], v * w);
        atomicAdd(&acc[1], (double)w);
    }
}

bf_status bf_cuda_metric_update(bf_backend *be, double *acc, const float *pred, const float *target,
                                const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T) {
    BF_CUDA_ENTER(st, be);
    if (B == 0) return BF_OK; /* m and the sizes: checked by the core (backend_ops.h) */
    metric_kernel<<<bf_cuda_grid(B, 128), 128, 0, st->stream>>>(acc, pred, target, sw, *m, (int)act, B, C, T);
    BF_CUDA_LAUNCHED(st, metric_kernel);
    return BF_OK;
}
