/* vec_exp.h - branch-free float exp, sigmoid and tanh that the compiler
 * vectorizes (loops over them build with -fno-trapping-math, CMakeLists.txt).
 * exp is Cephes expf (range reduction by ln2, degree-6 polynomial, 2^n by
 * exponent bits); tanh is Cephes tanhf (odd polynomial below |x| 0.625,
 * (1-e)/(1+e), e = exp(-2|x|), above). Both within a few float ulps of
 * the C library's; scalar expf / tanhf calls kept the LSTM's loops scalar and
 * took half of its step (benchmarks/bench_lstm.py). Shared by act_more.c
 * (gelu) and rnn.c (the recurrent cells). */
#ifndef BF_VEC_EXP_H
#define BF_VEC_EXP_H

#include <math.h>
#include <stdint.h>

/* exp(a) for a <= 0 (below -87 it returns exp(-87)) */
static inline float bf_exp_neg(float a) {
    const float x = a > -87.0f ? a : -87.0f;
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    union { int32_t i; float f; } sc = {((int32_t)n + 127) << 23};
    return y * sc.f;
}

/* 1 / (1 + exp(-x)): e = exp(-|x|), 1/(1+e) for x >= 0, e/(1+e) below */
static inline float bf_vsigmoid(float x) {
    const float e = bf_exp_neg(-fabsf(x)), s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s;
}

static inline float bf_vtanh(float x) {
    const float a = fabsf(x), z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * a + a;
    const float e = bf_exp_neg(-2.0f * a), big = (1.0f - e) / (1.0f + e);
    return copysignf(a < 0.625f ? small : big, x);
}

#endif
