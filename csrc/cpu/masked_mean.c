/* masked_mean.c - GlobalAveragePooling1D over the steps a mask keeps (an
 * Embedding(mask_zero=True) mask reaching it), as Keras 3: the sum of the
 * kept steps over their count; a row with no step kept is 0/0 = NaN, as in
 * Keras. Backward overwrites dinp. */
#include "cpu_ops.h"

// out (B,C) <- inp (B,T,C), mask (B,T)
bf_status bf_cpu_masked_mean_forward(bf_backend *be, float *out, const float *inp, const float *mask, int B, int T,
                                     int C) {
    (void)be;
    if (B < 0 || T <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "masked mean: bad sizes B=%d T=%d C=%d", B, T, C);
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * C;
        const float *m = mask + (size_t)b * T;
        float n = 0.0f;
        for (int c = 0; c < C; c++) o[c] = 0.0f;
        for (int t = 0; t < T; t++) {
            if (!(m[t] > 0.5f)) continue;
            const float *x = inp + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) o[c] += x[c];
            n += 1.0f;
        }
        for (int c = 0; c < C; c++) o[c] /= n;
    }
    return BF_OK;
}

// dinp (B,T,C) <- dout (B,C), mask (B,T)
bf_status bf_cpu_masked_mean_backward(bf_backend *be, float *dinp, const float *dout, const float *mask, int B, int T,
                                      int C) {
    (void)be;
    if (B < 0 || T <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "masked mean: bad sizes B=%d T=%d C=%d", B, T, C);
    for (int b = 0; b < B; b++) {
        const float *m = mask + (size_t)b * T, *d = dout + (size_t)b * C;
        float n = 0.0f;
        for (int t = 0; t < T; t++) n += m[t] > 0.5f ? 1.0f : 0.0f;
        for (int t = 0; t < T; t++) {
            float *x = dinp + ((size_t)b * T + t) * C;
            const int keep = m[t] > 0.5f;
            for (int c = 0; c < C; c++) x[c] = keep ? d[c] / n : 0.0f;
        }
    }
    return BF_OK;
}
