/* act_more.c - Keras 3's other activations on the CPU (formulas in
 * core/act_math.h, shared with CUDA). Elementwise; in place allowed.
 * gelu (exact form) has its own branch-free loops that the compiler
 * vectorizes (built with -fno-trapping-math, CMakeLists.txt): scalar erff
 * made it 0.5x PyTorch (benchmarks/bench_elementwise.py). They compute
 * Phi(x) = 0.5 erfc(-x/sqrt2) with Numerical Recipes' erfc (fractional error
 * < 1.2e-7) and a Cephes exp, so unlike 1 + erff(x/sqrt2) the negative tail
 * keeps its relative accuracy (tests/test_gelu_fast.py). */
#include <stdint.h>

#include "act_math.h"
#include "cpu_ops.h"
#include "vec_exp.h"

/* exp(-z*z + extra), z >= 0, with z = zh + zl, zh rounded to 1/256 so zh*zh
 * is exact for z < 16 (beyond, the result is 0): z*z's rounding stays out */
static inline float gauss(float z, float extra) {
    const float zc = z < 64.0f ? z : 64.0f;
    const float zh = ((zc * 256.0f + 12582912.0f) - 12582912.0f) * (1.0f / 256.0f), zl = zc - zh;
    return bf_exp_neg(-zh * zh) * bf_exp_neg(-zl * (zc + zh) + extra);
}

/* Phi(x) = 0.5 erfc(-x/sqrt2) */
static inline float phi(float x) {
    const float z = fabsf(x) * 0.70710678118654752f, t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    const float c = 0.5f * t * gauss(z, p); /* 0.5 erfc(|x|/sqrt2) */
    union { float f; int32_t i; } xs = {x}, cs = {c}, ds = {1.0f - c}, r;
    const int32_t neg = xs.i >> 31; /* x >= 0 ? 1 - c : c, without a branch */
    r.i = (cs.i & neg) | (ds.i & ~neg);
    return r.f;
}

/* The loops are also built for AVX2 (picked at load time where the CPU has
 * it; no FMA, so both versions give the same bits): 4.5x erff's loop. */
#define GELU_CLONES __attribute__((target_clones("avx2", "default")))

// out (n) = x * Phi(x)
GELU_CLONES static void gelu_forward(float *out, const float *inp, long n) {
    for (long i = 0; i < n; i++) out[i] = inp[i] * phi(inp[i]);
}

// dinp (n) = dout * (Phi(x) + x * exp(-x^2/2) / sqrt(2 pi))
GELU_CLONES static void gelu_backward(float *dinp, const float *dout, const float *inp, long n) {
    for (long i = 0; i < n; i++) {
        const float x = inp[i];
        dinp[i] = dout[i] * (phi(x) + x * 0.39894228040143268f * gauss(fabsf(x) * 0.70710678118654752f, 0.0f));
    }
}

static bf_status check(const char *op, bf_act act, const bf_act_param *p, long n) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    if (!bf_act_is_x(act) || (int)act > BF_ACT_LAST) return BF_FAIL(BF_ERR_ARG, "%s: activation %d is not one of its kinds", op, (int)act);
    if (!p) return BF_FAIL(BF_ERR_ARG, "%s: activation parameters missing", op);
    return BF_OK;
}

// out (n) = act(inp (n))
bf_status bf_cpu_actx_forward_serial(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                                     long n) {
    (void)be;
    BF_TRY(check("actx_forward", act, p, n));
    if (act == BF_ACT_GELU) {
        gelu_forward(out, inp, n);
        return BF_OK;
    }
    const float a = p->alpha, mx = p->max_value, t = p->threshold;
    for (long i = 0; i < n; i++) out[i] = bf_act_value((int)act, inp[i], a, mx, t);
    return BF_OK;
}

// dinp (n) = act'(inp or out) * dout
bf_status bf_cpu_actx_backward_serial(bf_backend *be, float *dinp, const float *dout, const float *inp,
                                      const float *out, bf_act act, const bf_act_param *p, long n) {
    (void)be;
    BF_TRY(check("actx_backward", act, p, n));
    if (!dinp || n == 0) return BF_OK;
    const int x = bf_act_needs_x(act);
    if (!(x ? inp : out)) return BF_FAIL(BF_ERR_ARG, "actx_backward: the activation's %s is required", x ? "input" : "output");
    if (act == BF_ACT_GELU) {
        gelu_backward(dinp, dout, inp, n);
        return BF_OK;
    }
    const float a = p->alpha, mx = p->max_value, t = p->threshold;
    for (long i = 0; i < n; i++)
        dinp[i] = dout[i] * bf_act_grad((int)act, x ? inp[i] : 0.0f, x ? 0.0f : out[i], a, mx, t);
    return BF_OK;
}
