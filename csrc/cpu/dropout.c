/* dropout.c - inverted dropout on the CPU.
 * Element i is kept iff u(seed, i) >= rate, where u is the counter-based
 * uniform of bf_dropout_uniform (cpu_conv.h): the top 24 bits of
 * splitmix64(seed ^ i * 0x9E3779B97F4A7C15) times 2^-24, in [0, 1). It depends
 * only on (seed, i), never on threads or call order, so the CUDA kernel draws
 * the same mask bit for bit. Kept elements are scaled by 1 / (1 - rate), the
 * mask (0/1 floats) is stored for backward. rate == 0 is a copy (mask, when
 * given, all ones). In place (out == inp, dinp == dout) is allowed. */
#include <math.h>
#include <string.h>

#include "cpu_conv.h"

static bf_status check_rate(const char *op, long n, float rate) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    if (!(rate >= 0.0f && rate < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: rate must be in [0, 1), got %g", op, (double)rate);
    return BF_OK;
}

// out (n) = inp * mask / (1-rate); mask (n) = [u(seed, i) >= rate]
bf_status bf_cpu_dropout_forward(bf_backend *be, float *out, float *mask, const float *inp,
                                 long n, float rate, uint64_t seed) {
    (void)be;
    BF_TRY(check_rate("dropout_forward", n, rate));
    if (n == 0) return BF_OK;
    if (!out || !inp) return BF_FAIL(BF_ERR_ARG, "dropout_forward: NULL tensor");
    if (rate == 0.0f) {
        if (out != inp) memmove(out, inp, (size_t)n * sizeof(float));
        if (mask)
            for (long i = 0; i < n; i++) mask[i] = 1.0f;
        return BF_OK;
    }
    const float scale = 1.0f / (1.0f - rate);
    /* u = k * 2^-24 with k = top 24 bits of the hash, so u >= rate exactly when
     * k >= ceil(rate * 2^24): an integer test, and a bit mask instead of a
     * branch (an unpredictable one at rate ~ 0.5) */
    const uint32_t thr = (uint32_t)ceil((double)rate * 16777216.0);
    const uint32_t one = 0x3f800000u; /* 1.0f */
    for (long i = 0; i < n; i++) {
        /* keep: all ones or all zeros */
        const uint32_t keep = 0u - (uint32_t)(bf_dropout_bits(seed, (uint64_t)i) >= thr);
        const float v = inp[i] * scale;
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        bits &= keep; /* a dropped Inf gives 0, not NaN */
        memcpy(out + i, &bits, sizeof bits);
        if (mask) {
            bits = one & keep;
            memcpy(mask + i, &bits, sizeof bits);
        }
    }
    return BF_OK;
}

// dinp (n) = dout * mask / (1-rate)
bf_status bf_cpu_dropout_backward(bf_backend *be, float *dinp, const float *dout,
                                  const float *mask, long n, float rate) {
    (void)be;
    BF_TRY(check_rate("dropout_backward", n, rate));
    if (n == 0 || !dinp) return BF_OK;
    if (!dout) return BF_FAIL(BF_ERR_ARG, "dropout_backward: NULL tensor");
    if (rate == 0.0f) {
        if (dinp != dout) memmove(dinp, dout, (size_t)n * sizeof(float));
        return BF_OK;
    }
    if (!mask) return BF_FAIL(BF_ERR_ARG, "dropout_backward: the mask is required when rate > 0");
    const float scale = 1.0f / (1.0f - rate);
    for (long i = 0; i < n; i++) dinp[i] = mask[i] != 0.0f ? dout[i] * scale : 0.0f;
    return BF_OK;
}
