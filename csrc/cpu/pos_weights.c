/* pos_weights.c - per-position weights of a loss or metric on a sequence
 * output, as Keras 3 merges sample_weight and a mask (losses/loss.py
 * apply_mask): w (B,S) = sw[b] * m[b,s] * f, f = divide_no_nan(B*S, sum m)
 * when `normalize` (the loss's "sum_over_batch_size"), else 1 (metrics).
 * sw or mask may be NULL (1). Float32 as Keras computes it. */
#include "cpu_ops.h"

// w (B,S) <- sw (B), mask (B,S)
bf_status bf_cpu_pos_weights(bf_backend *be, float *w, const float *sw, const float *mask, int B, int S,
                             int normalize) {
    (void)be;
    if (B < 0 || S <= 0) return BF_FAIL(BF_ERR_SHAPE, "position weights: bad sizes B=%d S=%d", B, S);
    const long n = (long)B * S;
    float f = 1.0f;
    if (mask && normalize) {
        long valid = 0;
        for (long e = 0; e < n; e++) valid += mask[e] > 0.5f;
        f = valid > 0 ? (float)n / (float)valid : 0.0f;
    }
    for (long e = 0; e < n; e++) {
        float m = mask ? (mask[e] > 0.5f ? f : 0.0f) : 1.0f;
        w[e] = (sw ? sw[e / S] : 1.0f) * m;
    }
    return BF_OK;
}
