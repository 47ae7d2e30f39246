/* act_math.h - Keras 3's other activations (gelu, silu, elu, selu,
 * leaky_relu, softplus, softsign, hard_sigmoid, exponential, relu6, relu with
 * options) and their derivatives, one element at a time, shared by the CPU
 * (csrc/cpu/act_more.c) and CUDA (csrc/cuda/act_more.cu) kernels so both
 * compute the same numbers. Formulas as jax.nn, which Keras 3 calls:
 * gelu 0.5x(1+erf(x/sqrt2)) (tanh form when approximate), silu x*sigmoid(x),
 * elu where(x>0, x, alpha*expm1(x)), selu scale*elu(x, 1.67326...),
 * leaky_relu where(x>=0, x, slope*x), softplus logaddexp(x, 0), softsign
 * x/(1+|x|), hard_sigmoid relu6(x+3)/6, relu with options as Keras's
 * activations.relu (threshold, then clip to max_value, minus slope*relu(t-x)).
 * Derivatives read x when bf_act_needs_x, else the output y. */
#ifndef BF_ACT_MATH_H
#define BF_ACT_MATH_H

#include <math.h>

#include "backend.h"

#ifdef __CUDACC__
#define BF_HD __host__ __device__ __forceinline__
#else
#define BF_HD static inline
#endif

#define BF_SELU_ALPHA 1.6732632423543772f
#define BF_SELU_SCALE 1.0507009873554805f

BF_HD float bf_sigmoidf(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

BF_HD float bf_gelu_tanh_inner(float x) { return 0.7978845608028654f * (x + 0.044715f * x * x * x); }

BF_HD float bf_act_value(int act, float x, float alpha, float max_value, float threshold) {
    switch (act) {
    case BF_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case BF_ACT_GELU_TANH: return x * (0.5f * (1.0f + tanhf(bf_gelu_tanh_inner(x))));
    case BF_ACT_SILU: return x * bf_sigmoidf(x);
    case BF_ACT_ELU: return x > 0.0f ? x : alpha * expm1f(x);
    case BF_ACT_SELU: return BF_SELU_SCALE * (x > 0.0f ? x : BF_SELU_ALPHA * expm1f(x));
    case BF_ACT_LEAKY_RELU: return x >= 0.0f ? x : alpha * x;
    case BF_ACT_SOFTPLUS: return (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x)));
    case BF_ACT_SOFTSIGN: return x / (fabsf(x) + 1.0f);
    case BF_ACT_HARD_SIGMOID: {
        float v = x + 3.0f;
        v = v > 0.0f ? v : 0.0f;
        return (v < 6.0f ? v : 6.0f) / 6.0f;
    }
    case BF_ACT_EXPONENTIAL: return expf(x);
    case BF_ACT_RELU6: {
        float v = x > 0.0f ? x : 0.0f;
        return v < 6.0f ? v : 6.0f;
    }
    default: { /* BF_ACT_RELU_X */
        float v = threshold != 0.0f ? (x > threshold ? x : 0.0f) : (x > 0.0f ? x : 0.0f);
        if (v > max_value) v = max_value;
        if (v < 0.0f && max_value < INFINITY) v = 0.0f;
        if (alpha != 0.0f) v -= alpha * (threshold - x > 0.0f ? threshold - x : 0.0f);
        return v;
    }
    }
}

/* d act / d x at input x with output y (only the one bf_act_needs_x names is read) */
BF_HD float bf_act_grad(int act, float x, float y, float alpha, float max_value, float threshold) {
    switch (act) {
    case BF_ACT_GELU:
        return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
    case BF_ACT_GELU_TANH: {
        float t = tanhf(bf_gelu_tanh_inner(x));
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
    }
    case BF_ACT_SILU: {
        float s = bf_sigmoidf(x);
        return s * (1.0f + x * (1.0f - s));
    }
    case BF_ACT_ELU: return y > 0.0f ? 1.0f : y + alpha;
    case BF_ACT_SELU: return y > 0.0f ? BF_SELU_SCALE : y + BF_SELU_SCALE * BF_SELU_ALPHA;
    case BF_ACT_LEAKY_RELU: return y > 0.0f ? 1.0f : alpha;
    case BF_ACT_SOFTPLUS: return -expm1f(-y);
    case BF_ACT_SOFTSIGN: {
        float d = 1.0f + fabsf(x);
        return 1.0f / (d * d);
    }
    case BF_ACT_HARD_SIGMOID: return y > 0.0f && y < 1.0f ? 1.0f / 6.0f : 0.0f;
    case BF_ACT_EXPONENTIAL: return y;
    case BF_ACT_RELU6: return y > 0.0f && y < 6.0f ? 1.0f : 0.0f;
    default: { /* BF_ACT_RELU_X */
        float d = threshold != 0.0f ? (x > threshold ? 1.0f : 0.0f) : (x > 0.0f ? 1.0f : 0.0f);
        if (d != 0.0f && (x >= max_value || (x < 0.0f && max_value < INFINITY))) d = 0.0f;
        if (alpha != 0.0f && threshold - x > 0.0f) d += alpha;
        return d;
    }
    }
}

/* the recurrent cells' activations (linear, relu, sigmoid, tanh,
 * hard_sigmoid), and their derivative from the output y (csrc/cpu/rnn.c,
 * csrc/cuda/rnn.cu): every one of them can be differentiated from y */
BF_HD float bf_cell_act(int act, float x) {
    switch (act) {
    case BF_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case BF_ACT_SIGMOID: return bf_sigmoidf(x);
    case BF_ACT_TANH: return tanhf(x);
    case BF_ACT_HARD_SIGMOID: return bf_act_value(BF_ACT_HARD_SIGMOID, x, 0.0f, 0.0f, 0.0f);
    default: return x;
    }
}

BF_HD float bf_cell_act_grad(int act, float y) {
    switch (act) {
    case BF_ACT_RELU: return y > 0.0f ? 1.0f : 0.0f;
    case BF_ACT_SIGMOID: return y * (1.0f - y);
    case BF_ACT_TANH: return 1.0f - y * y;
    case BF_ACT_HARD_SIGMOID: return y > 0.0f && y < 1.0f ? 1.0f / 6.0f : 0.0f;
    default: return 1.0f;
    }
}

#endif
