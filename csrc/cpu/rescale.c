/* rescale.c - Normalization on the CPU: a per-channel affine map over the
 * last axis, as Keras 3 computes it ((inputs - mean) / maximum(sqrt(variance),
 * epsilon), then * scale + offset: 1 and 0 for Normalization). */
#include <math.h>

#include "cpu_ops.h"

// out (N,C) = (inp - mean[c]) / max(sqrt(var[c]), eps) * scale + offset
bf_status bf_cpu_rescale_forward(bf_backend *be, float *out, const float *inp, const float *mean, const float *var,
                                 float scale, float offset, float eps, long N, int C) {
    (void)be;
    if (N < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "rescale_forward: bad sizes N=%ld C=%d", N, C);
    for (long r = 0; r < N; r++)
        for (int c = 0; c < C; c++) {
            float x = inp[r * C + c];
            if (mean) x -= mean[c];
            if (var) x /= fmaxf(sqrtf(var[c]), eps);
            out[r * C + c] = x * scale + offset;
        }
    return BF_OK;
}

// dinp (N,C) = dout / max(sqrt(var[c]), eps) * scale
bf_status bf_cpu_rescale_backward(bf_backend *be, float *dinp, const float *dout, const float *var, float scale,
                                  float eps, long N, int C) {
    (void)be;
    if (N < 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "rescale_backward: bad sizes N=%ld C=%d", N, C);
    if (!dinp) return BF_OK;
    for (long r = 0; r < N; r++)
        for (int c = 0; c < C; c++) {
            float d = dout[r * C + c];
            if (var) d /= fmaxf(sqrtf(var[c]), eps);
            dinp[r * C + c] = d * scale;
        }
    return BF_OK;
}
