/* loss.cu - losses with their gradient in one pass, and Keras "accuracy",
 * mirroring csrc/cpu/loss.c: per-sample loss is the mean over C (MSE, BCE) or
 * the sum over classes (CCE, SCCE). Logits mode (fused sigmoid / softmax, or
 * from_logits) uses softplus / log-sum-exp and writes the gradient w.r.t. the
 * logits; probability mode clips to [eps, 1-eps] (CCE renormalizes rows
 * first) with zero gradient where clipped. dpred = d(sum loss)/d pred * scale.
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

/* index of the row maximum with the CPU's sequential semantics (k = 0; k = j
 * when x[j] > x[k]): the first maximum among the non-NaN values, 0 when x[0]
 * is NaN or every value is NaN. Every lane of the warp gets the result. */
__device__ int warp_argmax(const float *x, int C, int lane) {
    float bv = 0.0f;
    int bi = -1;
    for (int j = lane; j < C; j += BF_WARP) {
        const float v = x[j];
        if (v != v) continue;
        if (bi < 0 || v > bv) {
            bv = v;
            bi = j;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi >= 0 && (bi < 0 || ov > bv || (ov == bv && oi < bi))) {
            bv = ov;
            bi = oi;
        }
    }
    const float x0 = x[0];
    return (bi < 0 || x0 != x0) ? 0 : bi;
}

__device__ __forceinline__ float softplus(float x) {
    return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float sigm(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}

// loss_out (B), dpred (B,C) or NULL, from pred (B,C) and target (B,C) / (B) class ids (SCCE);
// bad_label (1) = max over rows i with an invalid SCCE label of B - i (atomicMax)
__global__ void loss_kernel(float *loss_out, float *dpred, const float *pred, const float *target,
                            int kind, int logits, int B, int C, float scale, int *bad_label) {
    const int lane = threadIdx.x % BF_WARP;
    const int warps = gridDim.x * (blockDim.x / BF_WARP);
    for (int i = blockIdx.x * (blockDim.x / BF_WARP) + threadIdx.x / BF_WARP; i < B; i += warps) {
        const float *p = pred + (size_t)i * C;
        float *d = dpred ? dpred + (size_t)i * C : NULL;
        double l = 0.0;
        if (kind == BF_LOSS_MSE) {
            const float *t = target + (size_t)i * C;
            for (int j = lane; j < C; j += BF_WARP) {
                const float e = p[j] - t[j];
                l += (double)e * e;
                if (d) d[j] = 2.0f * e / C * scale;
            }
            l = warp_sum_d(l) / C;
        } else if (kind == BF_LOSS_BCE) {
            const float *t = target + (size_t)i * C;
            for (int j = lane; j < C; j += BF_WARP) {
                if (logits) {
                    const float z = p[j];
                    l += softplus(z) - __fmul_rn(z, t[j]);
                    if (d) d[j] = (sigm(z) - t[j]) / C * scale;
                } else {
                    float q = p[j];
                    int clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= __fadd_rn(__fmul_rn(t[j], logf(q)), __fmul_rn(1.0f - t[j], logf(1.0f - q)));
                    if (d) d[j] = clipped ? 0.0f : (-t[j] / q + (1.0f - t[j]) / (1.0f - q)) / C * scale;
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
            float tsum = 1.0f;
            if (t) {
                tsum = 0.0f;
                for (int j = lane; j < C; j += BF_WARP) tsum += t[j];
                tsum = warp_sum_f(tsum);
            }
            if (logits) {
                float mx = -INFINITY;
                for (int j = lane; j < C; j += BF_WARP) mx = p[j] > mx ? p[j] : mx;
                mx = warp_max_f(mx);
                double s = 0.0;
                for (int j = lane; j < C; j += BF_WARP) s += exp((double)(p[j] - mx));
                const double lse = mx + log(warp_sum_d(s));
                if (t) {
                    for (int j = lane; j < C; j += BF_WARP) l -= t[j] * (p[j] - lse);
                    l = warp_sum_d(l);
                } else {
                    l = lse - p[cls];
                }
                if (d)
                    for (int j = lane; j < C; j += BF_WARP) {
                        const float sm = (float)exp((double)p[j] - lse);
                        const float tj = t ? t[j] : (j == cls ? 1.0f : 0.0f);
                        d[j] = (__fmul_rn(sm, tsum) - tj) * scale;
                    }
            } else {
                double S = 0.0;
                for (int j = lane; j < C; j += BF_WARP) S += p[j];
                S = warp_sum_d(S);
                const float ts = (float)(tsum / S);
                for (int j = lane; j < C; j += BF_WARP) {
                    const float tj = t ? t[j] : (j == cls ? 1.0f : 0.0f);
                    float q = (float)(p[j] / S);
                    int clipped = 0;
                    if (q < BF_EPS) { q = BF_EPS; clipped = 1; }
                    if (q > 1.0f - BF_EPS) { q = 1.0f - BF_EPS; clipped = 1; }
                    l -= __fmul_rn(tj, logf(q));
                    /* d/dp_k of -sum_j t_j log(p_j / S) = -t_k/p_k + tsum/S */
                    if (d) d[j] = ((clipped ? 0.0f : -tj / p[j]) + ts) * scale;
                }
                l = warp_sum_d(l);
            }
        }
        if (lane == 0) loss_out[i] = (float)l;
    }
}

// correct_out (B) from pred (B,C) and target (B,C) / (B) class ids (SCCE); one warp per row
__global__ void accuracy_kernel(float *correct_out, const float *pred, const float *target, int kind,
                                int from_logits, int B, int C) {
    const int lane = threadIdx.x % BF_WARP;
    const int warps = gridDim.x * (blockDim.x / BF_WARP);
    for (int i = blockIdx.x * (blockDim.x / BF_WARP) + threadIdx.x / BF_WARP; i < B; i += warps) {
        const float *p = pred + (size_t)i * C;
        float acc;
        if (kind == BF_LOSS_SCCE) {
            acc = (float)warp_argmax(p, C, lane) == target[i] ? 1.0f : 0.0f;
        } else if (kind == BF_LOSS_CCE) {
            const int a = warp_argmax(p, C, lane), b = warp_argmax(target + (size_t)i * C, C, lane);
            acc = a == b ? 1.0f : 0.0f;
        } else {
            /* Keras binary_accuracy: threshold 0.5 on the output; a fused sigmoid
             * output is held as logits, so threshold those at 0. MSE: equality. */
            const float *t = target + (size_t)i * C;
            float n = 0.0f;
            for (int j = lane; j < C; j += BF_WARP) {
                float yhat = p[j];
                if (kind == BF_LOSS_BCE) yhat = from_logits ? (p[j] > 0.0f) : (p[j] > 0.5f);
                n += yhat == t[j] ? 1.0f : 0.0f;
            }
            acc = warp_sum_f(n) / C;
        }
        if (lane == 0) correct_out[i] = acc;
    }
}

static bf_status check_args(const char *op, bf_loss_kind kind, int B, int C) {
    if ((int)kind < BF_LOSS_MSE || (int)kind > BF_LOSS_SCCE)
        return BF_FAIL(BF_ERR_ARG, "unknown loss %d", (int)kind);
    if (B < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "%s: bad sizes B=%d C=%d", op, B, C);
    return BF_OK;
}

bf_status bf_cuda_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                        const float *pred, const float *target,
                                        bf_loss_kind kind, int fused, int from_logits, int B,
                                        int C, float scale) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_args("loss", kind, B, C));
    if (B == 0) return BF_OK;
    const int scce = kind == BF_LOSS_SCCE, wait = scce && !bad_label;
    if (wait) { /* no flag of the caller's: this call checks the labels itself */
        BF_TRY(bf_cuda_need_scratch(st, "loss"));
        bad_label = st->flags;
        BF_CUDA_CHECK(st, cudaMemsetAsync(bad_label, 0, sizeof(int), st->stream));
    }
    loss_kernel<<<bf_cuda_grid(B, BF_ROWS_PER_BLOCK), BF_ROWS_PER_BLOCK * BF_WARP, 0, st->stream>>>(
        loss_out, dpred, pred, target, (int)kind, fused || from_logits, B, C, scale, bad_label);
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

bf_status bf_cuda_accuracy(bf_backend *be, float *correct_out, const float *pred,
                           const float *target, bf_loss_kind kind, int from_logits, int B, int C) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check_args("accuracy", kind, B, C));
    if (B == 0) return BF_OK;
    accuracy_kernel<<<bf_cuda_grid(B, BF_ROWS_PER_BLOCK), BF_ROWS_PER_BLOCK * BF_WARP, 0, st->stream>>>(
        correct_out, pred, target, (int)kind, from_logits, B, C);
    BF_CUDA_LAUNCHED(st, accuracy_kernel);
    return BF_OK;
}
