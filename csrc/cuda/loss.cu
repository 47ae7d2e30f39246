/* loss.cu - losses with their gradient in one pass, mirroring csrc/cpu/loss.c:
 * per-sample loss is the mean over C (MSE, MAE, Huber, log-cosh, BCE) or the
 * sum over classes (CCE, SCCE), times the sample weight (BF_LOSS_MEAN: the
 * mean of pred itself, gradient 1/C; BF_LOSS_ADDED: the sum of pred, not
 * weighted, gradient 1); label smoothing as
 * Keras (BCE t(1-s) + s/2, CCE t(1-s) + s/C). from_logits uses softplus /
 * log-sum-exp; probabilities are clipped to [eps, 1-eps] (CCE renormalizes
 * rows first) with zero gradient where clipped, and a fused sigmoid / softmax
 * computes its loss the same way from the activation's float output (as
 * Keras) while writing the gradient w.r.t. the logits. dpred = d(sum of
 * weighted losses)/d pred * scale.
 * One warp per row; row sums in double as on the CPU. An SCCE label that is
 * not a class id in [0, C) gets loss and gradient 0 and raises the caller's
 * bad_label flag to B - row (atomicMax: the lowest bad row wins), read back
 * with the step's statistics; without a flag the call waits and fails with
 * BF_ERR_DATA naming the row, as the CPU's does. */

#include "cuda_ops.h"

#define BF_EPS 1e-7f
#define BF_WARP 32
#define BF_ROWS_PER_BLOCK 8

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_sum_f(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max_f(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = u > v ? u : v;
    }
    return v;
}

__device__ __forceinline__ float softplus(float x) {
    return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float sigm(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}

/* elementwise regression losses: value and d/d pred of one element of error e (as the CPU's) */
__device__ __forceinline__ double regression(int kind, float e, float delta, float *de) {
    if (kind == BF_LOSS_MSE) { *de = 2.0f * e; return (double)e * e; }
    if (kind == BF_LOSS_MAE) { *de = e > 0.0f ? 1.0f : e < 0.0f ? -1.0f : 0.0f; return fabs((double)e); }
    if (kind == BF_LOSS_HUBER) {
        const float a = fabsf(e);
        if (a <= delta) { *de = e; return 0.5 * (double)e * e; }
        *de = e > 0.0f ? delta : -delta;
        return (double)delta * a - 0.5 * (double)delta * delta;
    }
    *de = tanhf(e); /* log-cosh: x + softplus(-2x) - log 2 */
    return (double)e + (double)softplus(-2.0f * e) - 0.69314718055994531;
}

// loss_out (B), dpred (B,C) or NULL, from pred (B,C), target (B,C) / (B) class ids (SCCE), sw (B) or NULL;
// bad_label (1) = max over rows i with an invalid SCCE label of B - i (atomicMax)
__global__ void loss_kernel(float *loss_out, float *dpred, const float *pred, const float *target, const float *sw,
                            int kind, int fused, int logits, float ls, float delta, int B, int C, float scale, int *bad_label) {
    const int lane = threadIdx.x % BF_WARP;
    const int warps = gridDim.x * (blockDim.x / BF_WARP);
    for (int i = blockIdx.x * (blockDim.x / BF_WARP) + threadIdx.x / BF_WARP; i < B; i += warps) {
        const float *p = pred + (size_t)i * C;
        float *d = dpred ? dpred + (size_t)i * C : NULL;
        const float w = sw && kind != BF_LOSS_ADDED ? sw[i] : 1.0f, ws = w * scale;
        double l = 0.0;
        if (kind == BF_LOSS_MSE || kind == BF_LOSS_MAE || kind == BF_LOSS_HUBER || kind == BF_LOSS_LOGCOSH) {
            const float *t = target + (size_t)i * C;
            for (int j = lane; j < C; j += BF_WARP) {
                float de;
                l += regression(kind, p[j] - t[j], delta, &de);
                if (d) d[j] = de / C * ws;
            }
            l = warp_sum_d(l) / C;
        } else if (kind == BF_LOSS_MEAN) {
            for (int j = lane; j < C; j += BF_WARP) {
                l += p[j];
                if (d) d[j] = ws / C;
            }
            l = warp_sum_d(l) / C;
        } else if (kind == BF_LOSS_ADDED) {
            for (int j = lane; j < C; j += BF_WARP) {
                l += p[j];
                if (d) d[j] = ws;
            }
            l = warp_sum_d(l);
        } else if (kind == BF_LOSS_BCE) {
            const float *t = target + (size_t)i * C;
            for (int j = lane; j < C; j += BF_WARP) {
                const float tj = ls > 0.0f ? __fmul_rn(t[j], 1.0f - ls) + __fmul_rn(0.5f, ls) : t[j];
                if (fused) {
                    /* Keras computes the loss from the sigmoid's output, clipped */
                    const float q = sigm(p[j]);
                    const float qc = q < BF_EPS ? BF_EPS : q > 1.0f - BF_EPS ? 1.0f - BF_EPS : q;
                    l -= __fadd_rn(__fmul_rn(tj, logf(qc)), __fmul_rn(1.0f - tj, logf(1.0f - qc)));
                    if (d) d[j] = qc != q ? 0.0f : (q - tj) / C * ws;
                } else if (logits) {
                    const float z = p[j];
                    l += softplus(z) - __fmul_rn(z, tj);
                    if (d) d[j] = (sigm(z) - tj) / C * ws;
                } else {
                    float q = p[j];
                    int clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= __fadd_rn(__fmul_rn(tj, logf(q)), __fmul_rn(1.0f - tj, logf(1.0f - q)));
                    if (d) d[j] = clipped ? 0.0f : (-tj / q + (1.0f - tj) / (1.0f - q)) / C * ws;
                }
            }
            l = warp_sum_d(l) / C;
        } else { /* CCE, SCCE */
            const float *t = kind == BF_LOSS_CCE ? target + (size_t)i * C : NULL;
            int cls = -1;
            if (!t) {
                const float tv = target[i];
                const int c = (int)tv;
                if (!(tv >= 0.0f) || (float)c != tv || c >= C) {
                    if (lane == 0) {
                        atomicMax(bad_label, B - i);
                        loss_out[i] = 0.0f;
                    }
                    if (d)
                        for (int j = lane; j < C; j += BF_WARP) d[j] = 0.0f;
                    continue;
                }
                cls = c;
            }
            const float sm_off = t && ls > 0.0f ? ls / (float)C : 0.0f, sm_keep = t ? 1.0f - ls : 1.0f;
#define TJ(j) (t ? __fmul_rn(t[j], sm_keep) + sm_off : ((j) == cls ? 1.0f : 0.0f))
            float tsum = 1.0f;
            if (t) {
                tsum = 0.0f;
                for (int j = lane; j < C; j += BF_WARP) tsum += TJ(j);
                tsum = warp_sum_f(tsum);
            }
            if (fused) {
                /* Keras's graph: softmax in float, renormalized by its sum S, clipped,
                 * log; d/dz_i = q_i tu / S - t_i [i unclipped], tu = targets of the
                 * unclipped classes (as the CPU's) */
                float mx = -INFINITY;
                for (int j = lane; j < C; j += BF_WARP) mx = p[j] > mx ? p[j] : mx;
                mx = warp_max_f(mx);
                float es = 0.0f, S = 0.0f, tu = 0.0f;
                for (int j = lane; j < C; j += BF_WARP) es += expf(p[j] - mx);
                es = warp_sum_f(es);
                for (int j = lane; j < C; j += BF_WARP) S += expf(p[j] - mx) / es;
                S = warp_sum_f(S);
                for (int j = lane; j < C; j += BF_WARP) {
                    const float qn = expf(p[j] - mx) / es / S;
                    if (qn >= BF_EPS && qn <= 1.0f - BF_EPS) tu += TJ(j);
                }
                tu = warp_sum_f(tu);
                for (int j = lane; j < C; j += BF_WARP) {
                    const float q = expf(p[j] - mx) / es, qn = q / S, tj = TJ(j);
                    const int clipped = qn < BF_EPS || qn > 1.0f - BF_EPS;
                    if (tj != 0.0f) l -= __fmul_rn(tj, logf(qn < BF_EPS ? BF_EPS : qn > 1.0f - BF_EPS ? 1.0f - BF_EPS : qn));
                    if (d) d[j] = (__fmul_rn(q, tu) / S - (clipped ? 0.0f : tj)) * ws;
                }
                l = warp_sum_d(l);
            } else if (logits) {
                float mx = -INFINITY;
                for (int j = lane; j < C; j += BF_WARP) mx = p[j] > mx ? p[j] : mx;
                mx = warp_max_f(mx);
                double s = 0.0;
                for (int j = lane; j < C; j += BF_WARP) s += exp((double)(p[j] - mx));
                const double lse = mx + log(warp_sum_d(s));
                if (t) {
                    for (int j = lane; j < C; j += BF_WARP) l -= TJ(j) * (p[j] - lse);
                    l = warp_sum_d(l);
                } else {
                    l = lse - p[cls];
                }
                if (d)
                    for (int j = lane; j < C; j += BF_WARP) {
                        const float sm = (float)exp((double)p[j] - lse);
                        d[j] = (__fmul_rn(sm, tsum) - TJ(j)) * ws;
                    }
            } else {
                double S = 0.0, tu = 0.0; /* tu: targets of the unclipped classes */
                for (int j = lane; j < C; j += BF_WARP) S += p[j];
                S = warp_sum_d(S);
                for (int j = lane; j < C; j += BF_WARP) {
                    const float q = (float)(p[j] / S);
                    if (q >= BF_EPS && q <= 1.0f - BF_EPS) tu += TJ(j);
                }
                tu = warp_sum_d(tu);
                const float ts = (float)(tu / S);
                for (int j = lane; j < C; j += BF_WARP) {
                    const float tj = TJ(j);
                    float q = (float)(p[j] / S);
                    int clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= __fmul_rn(tj, logf(q));
                    /* d/dp_k of -sum_j t_j log(p_j / S) over the unclipped j = -t_k/p_k + tu/S */
                    if (d) d[j] = ((clipped ? 0.0f : -tj / p[j]) + ts) * ws;
                }
                l = warp_sum_d(l);
            }
#undef TJ
        }
        if (lane == 0) loss_out[i] = (float)(l * w);
    }
}

static bf_status check_args(const char *op, const bf_loss_spec *loss, int B, int C) {
    if ((int)loss->kind < BF_LOSS_MSE || (int)loss->kind > BF_LOSS_LAST)
        return BF_FAIL(BF_ERR_ARG, "unknown loss %d", (int)loss->kind);
    if (B < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "%s: bad sizes B=%d C=%d", op, B, C);
    return BF_OK;
}

bf_status bf_cuda_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                        const float *pred, const float *target, const float *sw,
                                        const bf_loss_spec *loss, int fused, int B, int C, float scale) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_args("loss", loss, B, C));
    if (B == 0) return BF_OK;
    const int scce = loss->kind == BF_LOSS_SCCE, wait = scce && !bad_label;
    if (wait) { /* no flag of the caller's: this call checks the labels itself */
        BF_TRY(bf_cuda_need_scratch(st, "loss"));
        bad_label = st->flags;
        BF_CUDA_CHECK(st, cudaMemsetAsync(bad_label, 0, sizeof(int), st->stream));
    }
    loss_kernel<<<bf_cuda_grid(B, BF_ROWS_PER_BLOCK), BF_ROWS_PER_BLOCK * BF_WARP, 0, st->stream>>>(
        loss_out, dpred, pred, target, sw, (int)loss->kind, fused, fused || loss->from_logits,
        loss->label_smoothing, loss->delta, B, C, scale, bad_label);
    BF_CUDA_LAUNCHED(st, loss_kernel);
    if (!wait) return BF_OK;
    int flag = 0;
    BF_CUDA_CHECK(st, cudaMemcpyAsync(&flag, bad_label, sizeof flag, cudaMemcpyDeviceToHost, st->stream));
    BF_CUDA_CHECK(st, cudaStreamSynchronize(st->stream));
    if (!flag) return BF_OK;
    const int row = B - flag;
    float label = 0.0f;
    BF_CUDA_CHECK(st, cudaMemcpyAsync(&label, target + row, sizeof label, cudaMemcpyDeviceToHost, st->stream));
    BF_CUDA_CHECK(st, cudaStreamSynchronize(st->stream));
    return BF_FAIL(BF_ERR_DATA, "label %g in row %d is not a class id in [0, %d)", (double)label, row, C);
}
