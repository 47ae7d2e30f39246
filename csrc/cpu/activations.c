/* activations.c - elementwise activations and row softmax on the CPU.
 * Backward uses the forward output only (relu: out>0, sigmoid: out(1-out),
 * tanh: 1-out^2, softmax: out*(dout - sum(dout*out))), so inputs need not be kept. */
#include <math.h>

#include "cpu_ops.h"

// out (N,C) = act(inp (N,C)); in place allowed
bf_status bf_cpu_act_forward_serial(bf_backend *be, float *out, const float *inp, bf_act act, long N,
                                    int C) {
    (void)be;
    long n = N * (long)C;
    switch (act) {
    case BF_ACT_LINEAR:
        if (out != inp)
            for (long i = 0; i < n; i++) out[i] = inp[i];
        return BF_OK;
    case BF_ACT_RELU:
        for (long i = 0; i < n; i++) {
            const float v = inp[i];
            out[i] = v > 0.0f ? v : 0.0f;
        }
        return BF_OK;
    case BF_ACT_SIGMOID:
        for (long i = 0; i < n; i++) {
            float x = inp[i];
            /* stable for large |x| */
            if (x >= 0) out[i] = 1.0f / (1.0f + expf(-x));
            else { float e = expf(x); out[i] = e / (1.0f + e); }
        }
        return BF_OK;
    case BF_ACT_TANH:
        for (long i = 0; i < n; i++) out[i] = tanhf(inp[i]);
        return BF_OK;
    case BF_ACT_SOFTMAX:
        for (long r = 0; r < N; r++) {
            const float *x = inp + r * C;
            float *y = out + r * C;
            float mx = x[0];
            for (int j = 1; j < C; j++) mx = x[j] > mx ? x[j] : mx;
            float s = 0.0f;
            for (int j = 0; j < C; j++) { y[j] = expf(x[j] - mx); s += y[j]; }
            float inv = 1.0f / s;
            for (int j = 0; j < C; j++) y[j] *= inv;
        }
        return BF_OK;
    default: /* the others run through actx_forward (act_more.c) */
        break;
    }
    return BF_FAIL(BF_ERR_ARG, "unknown activation %d", (int)act);
}

// dinp (N,C) = act'(out) * dout; in place on dout allowed
bf_status bf_cpu_act_backward_serial(bf_backend *be, float *dinp, const float *dout, const float *out,
                                     bf_act act, long N, int C) {
    (void)be;
    long n = N * (long)C;
    switch (act) {
    case BF_ACT_LINEAR:
        if (dinp != dout)
            for (long i = 0; i < n; i++) dinp[i] = dout[i];
        return BF_OK;
    case BF_ACT_RELU:
        for (long i = 0; i < n; i++) { /* both read first: a select, no branch (signs are random) */
            const float g = dout[i], y = out[i];
            dinp[i] = y > 0.0f ? g : 0.0f;
        }
        return BF_OK;
    case BF_ACT_SIGMOID:
        for (long i = 0; i < n; i++) dinp[i] = dout[i] * out[i] * (1.0f - out[i]);
        return BF_OK;
    case BF_ACT_TANH:
        for (long i = 0; i < n; i++) dinp[i] = dout[i] * (1.0f - out[i] * out[i]);
        return BF_OK;
    case BF_ACT_SOFTMAX:
        for (long r = 0; r < N; r++) {
            const float *y = out + r * C, *dy = dout + r * C;
            float *dx = dinp + r * C;
            float dot = 0.0f;
            for (int j = 0; j < C; j++) dot += dy[j] * y[j];
            for (int j = 0; j < C; j++) dx[j] = y[j] * (dy[j] - dot);
        }
        return BF_OK;
    default:
        break;
    }
    return BF_FAIL(BF_ERR_ARG, "unknown activation %d", (int)act);
}
