/* emap_math.h - the value and the derivative of every op of emap_ops.h, one
 * element at a time, shared by the CPU (csrc/cpu/emap.c) and CUDA
 * (csrc/cuda/emap.cu) kernels so both compute the same numbers. Formulas and
 * derivatives are JAX's (Keras 3's JAX backend calls jnp / jax.nn): 0 for
 * step functions (floor, sign, round, comparisons, logical ops, isnan ...)
 * and stop_gradient; at a tie, maximum / minimum give half the gradient to
 * each side (lax.max's balanced rule); round is half to even (rintf) at
 * 10^decimals; mod / floor_divide as jnp.remainder / jnp.floor_divide (the
 * divisor's sign); power's d/db is 0 where a = 0 and its d/da 0 where b = 0;
 * divide_no_nan and hypot give 0 where they divide by 0; fmax / fmin pass a tie's
 * gradient to b, as jnp.fmax's select does. */
#ifndef BF_EMAP_MATH_H
#define BF_EMAP_MATH_H

#include <math.h>

#include "act_math.h" /* BF_HD, bf_sigmoidf */
#include "emap_ops.h"

#define BF_PI_F 3.14159265358979323846f
#define BF_LN2_F 0.69314718055994531f
#define BF_LN10_F 2.30258509299404568f

/* erfinv: Giles' single-precision polynomial, then one Newton step on erff */
BF_HD float bf_erfinvf(float x) {
    if (!(x > -1.0f && x < 1.0f)) return x == 1.0f ? INFINITY : x == -1.0f ? -INFINITY : NAN;
    float w = -logf((1.0f - x) * (1.0f + x)), p;
    if (w < 5.0f) {
        w = w - 2.5f;
        p = 2.81022636e-08f;
        p = 3.43273939e-07f + p * w;
        p = -3.5233877e-06f + p * w;
        p = -4.39150654e-06f + p * w;
        p = 0.00021858087f + p * w;
        p = -0.00125372503f + p * w;
        p = -0.00417768164f + p * w;
        p = 0.246640727f + p * w;
        p = 1.50140941f + p * w;
    } else {
        w = sqrtf(w) - 3.0f;
        p = -0.000200214257f;
        p = 0.000100950558f + p * w;
        p = 0.00134934322f + p * w;
        p = -0.00367342844f + p * w;
        p = 0.00573950773f + p * w;
        p = -0.0076224613f + p * w;
        p = 0.00943887047f + p * w;
        p = 1.00167406f + p * w;
        p = 2.83297682f + p * w;
    }
    float y = p * x;
    const float d = 1.12837916709551257f * expf(-y * y); /* erf'(y) */
    return d > 0.0f ? y - (erff(y) - x) / d : y;
}

BF_HD float bf_sincf(float x) {
    if (x == 0.0f) return 1.0f;
    const float t = BF_PI_F * x;
    return sinf(t) / t;
}

BF_HD float bf_roundf(float x, float decimals) {
    if (decimals == 0.0f) return rintf(x);
    const float f = powf(10.0f, decimals);
    return rintf(x * f) / f;
}

/* jnp.remainder: the result takes the divisor's sign */
BF_HD float bf_modf(float a, float b) {
    float m = fmodf(a, b);
    if (m != 0.0f && ((m < 0.0f) != (b < 0.0f))) m += b;
    return m;
}

/* lax.sign: -1, 1, or x itself (0, -0, NaN) */
BF_HD float bf_signf(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; }

/* jnp.floor_divide of floats (_float_divmod): (a - fmod(a, b)) / b (a / b where b = 0), one less where fmod is
 * not 0 and its sign is not b's, rounded */
BF_HD float bf_floordivf(float a, float b) {
    const float m = fmodf(a, b);
    float d = (b == 0.0f ? a : a - m) / b;
    if (m != 0.0f && bf_signf(b) != bf_signf(m)) d -= 1.0f;
    return roundf(d);
}

/* logaddexp (base2 = 0) or logaddexp2 (base2 = 1): max + log(1 + base^-|a - b|) */
BF_HD float bf_logaddexpf(float a, float b, int base2) {
    if (a == b) return a + (base2 ? 1.0f : BF_LN2_F); /* also +-inf, where a - b is NaN */
    const float m = a > b ? a : b, d = -fabsf(a - b);
    return base2 ? m + log1pf(exp2f(d)) / BF_LN2_F : m + log1pf(expf(d));
}

BF_HD float bf_relu6f(float x) { return x < 0.0f ? 0.0f : x > 6.0f ? 6.0f : x; }

/* jnp.maximum / jnp.minimum: NaN if either is NaN */
BF_HD float bf_maxf(float a, float b) { return a > b || a != a ? a : b; }
BF_HD float bf_minf(float a, float b) { return a < b || a != a ? a : b; }

// y = op(x) with the parameters p, q, r (emap_ops.h)
BF_HD float bf_unary_value(int op, float x, float p, float q, float r) {
    switch (op) {
    case BF_UN_SQRT: return sqrtf(x);
    case BF_UN_SQUARE: return x * x;
    case BF_UN_ABS: return fabsf(x);
    case BF_UN_EXP: return expf(x);
    case BF_UN_LOG: return logf(x);
    case BF_UN_NEGATIVE: return -x;
    case BF_UN_RECIPROCAL: return 1.0f / x;
    case BF_UN_RSQRT: return 1.0f / sqrtf(x);
    case BF_UN_SIN: return sinf(x);
    case BF_UN_COS: return cosf(x);
    case BF_UN_TAN: return tanf(x);
    case BF_UN_ARCSIN: return asinf(x);
    case BF_UN_ARCCOS: return acosf(x);
    case BF_UN_ARCTAN: return atanf(x);
    case BF_UN_SINH: return sinhf(x);
    case BF_UN_COSH: return coshf(x);
    case BF_UN_TANH: return tanhf(x);
    case BF_UN_ARCSINH: return asinhf(x);
    case BF_UN_ARCCOSH: return acoshf(x);
    case BF_UN_ARCTANH: return atanhf(x);
    case BF_UN_EXP2: return exp2f(x);
    case BF_UN_EXPM1: return expm1f(x);
    case BF_UN_LOG1P: return log1pf(x);
    case BF_UN_LOG2: return log2f(x);
    case BF_UN_LOG10: return log10f(x);
    case BF_UN_CBRT: return cbrtf(x);
    case BF_UN_SIGN: return bf_signf(x);
    case BF_UN_FLOOR: return floorf(x);
    case BF_UN_CEIL: return ceilf(x);
    case BF_UN_TRUNC: return truncf(x);
    case BF_UN_ROUND: return bf_roundf(x, p);
    case BF_UN_DEG2RAD: return x * (BF_PI_F / 180.0f);
    case BF_UN_RAD2DEG: return x * (180.0f / BF_PI_F);
    case BF_UN_ERF: return erff(x);
    case BF_UN_ERFC: return erfcf(x);
    case BF_UN_ERFINV: return bf_erfinvf(x);
    case BF_UN_SINC: return bf_sincf(x);
    case BF_UN_SIGNBIT: return signbit(x) ? 1.0f : 0.0f;
    case BF_UN_ISNAN: return isnan(x) ? 1.0f : 0.0f;
    case BF_UN_ISINF: return isinf(x) ? 1.0f : 0.0f;
    case BF_UN_ISFINITE: return isfinite(x) ? 1.0f : 0.0f;
    case BF_UN_ISNEGINF: return isinf(x) && x < 0.0f ? 1.0f : 0.0f;
    case BF_UN_ISPOSINF: return isinf(x) && x > 0.0f ? 1.0f : 0.0f;
    case BF_UN_LOGICAL_NOT: return x == 0.0f ? 1.0f : 0.0f;
    case BF_UN_NAN_TO_NUM: return isnan(x) ? p : isinf(x) ? (x > 0.0f ? q : r) : x;
    case BF_UN_ANGLE: return atan2f(0.0f, x);
    case BF_UN_IMAG: return 0.0f;
    case BF_UN_STOP_GRADIENT: return x;
    case BF_UN_FULL_LIKE: return p;
    case BF_UN_THRESHOLD: return x > p ? x : q;
    case BF_UN_CELU: return bf_maxf(x, 0.0f) + p * expm1f(bf_minf(x, 0.0f) / p);
    case BF_UN_HARD_TANH: return x > 1.0f ? 1.0f : x < -1.0f ? -1.0f : x;
    case BF_UN_HARD_SHRINK: return fabsf(x) > p ? x : 0.0f;
    case BF_UN_SOFT_SHRINK: return x > p ? x - p : x < -p ? x + p : 0.0f;
    case BF_UN_TANH_SHRINK: return x - tanhf(x);
    case BF_UN_LOG_SIGMOID: return (x < 0.0f ? x : 0.0f) - log1pf(expf(-fabsf(x)));
    case BF_UN_SQUAREPLUS: return 0.5f * (x + sqrtf(x * x + p));
    case BF_UN_SPARSE_PLUS: return x <= -1.0f ? 0.0f : x >= 1.0f ? x : 0.25f * (x + 1.0f) * (x + 1.0f);
    case BF_UN_SPARSE_SIGMOID: {
        const float t = x + 1.0f;
        return 0.5f * (t < 0.0f ? 0.0f : t > 2.0f ? 2.0f : t);
    }
    default: return x * (bf_relu6f(x + 3.0f) / 6.0f); /* BF_UN_HARD_SILU */
    }
}

/* the derivative of max(x, 0) / min(x, 0) as lax.max / lax.min: 1, 0, or 0.5 at the tie */
BF_HD float bf_tie(float a, float b) { return a > b ? 1.0f : a == b ? 0.5f : 0.0f; }

// dy/dx at x with y = op(x)
BF_HD float bf_unary_grad(int op, float x, float y, float p, float q, float r) {
    (void)q;
    (void)r;
    switch (op) {
    case BF_UN_SQRT: return 0.5f / y;
    case BF_UN_SQUARE: return 2.0f * x;
    case BF_UN_ABS: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
    case BF_UN_EXP: return y;
    case BF_UN_LOG: return 1.0f / x;
    case BF_UN_NEGATIVE: return -1.0f;
    case BF_UN_RECIPROCAL: return -y * y;
    case BF_UN_RSQRT: return -0.5f * y / x;
    case BF_UN_SIN: return cosf(x);
    case BF_UN_COS: return -sinf(x);
    case BF_UN_TAN: return 1.0f + y * y;
    case BF_UN_ARCSIN: return 1.0f / sqrtf(1.0f - x * x);
    case BF_UN_ARCCOS: return -1.0f / sqrtf(1.0f - x * x);
    case BF_UN_ARCTAN: return 1.0f / (1.0f + x * x);
    case BF_UN_SINH: return coshf(x);
    case BF_UN_COSH: return sinhf(x);
    case BF_UN_TANH: return 1.0f - y * y;
    case BF_UN_ARCSINH: return 1.0f / sqrtf(x * x + 1.0f);
    case BF_UN_ARCCOSH: return 1.0f / sqrtf(x * x - 1.0f);
    case BF_UN_ARCTANH: return 1.0f / (1.0f - x * x);
    case BF_UN_EXP2: return y * BF_LN2_F;
    case BF_UN_EXPM1: return y + 1.0f;
    case BF_UN_LOG1P: return 1.0f / (1.0f + x);
    case BF_UN_LOG2: return 1.0f / (x * BF_LN2_F);
    case BF_UN_LOG10: return 1.0f / (x * BF_LN10_F);
    case BF_UN_CBRT: return 1.0f / (3.0f * y * y);
    case BF_UN_DEG2RAD: return BF_PI_F / 180.0f;
    case BF_UN_RAD2DEG: return 180.0f / BF_PI_F;
    case BF_UN_ERF: return 1.12837916709551257f * expf(-x * x);
    case BF_UN_ERFC: return -1.12837916709551257f * expf(-x * x);
    case BF_UN_ERFINV: return 0.88622692545275801f * expf(y * y);
    case BF_UN_SINC: return x == 0.0f ? 0.0f : (cosf(BF_PI_F * x) - y) / x;
    case BF_UN_NAN_TO_NUM: return isfinite(x) ? 1.0f : 0.0f;
    case BF_UN_THRESHOLD: return x > p ? 1.0f : 0.0f;
    case BF_UN_CELU: return bf_tie(x, 0.0f) + (1.0f - bf_tie(x, 0.0f)) * expf((x < 0.0f ? x : 0.0f) / p);
    case BF_UN_HARD_TANH: return x > 1.0f || x < -1.0f ? 0.0f : 1.0f;
    case BF_UN_HARD_SHRINK: return fabsf(x) > p ? 1.0f : 0.0f;
    case BF_UN_SOFT_SHRINK: return x > p || x < -p ? 1.0f : 0.0f;
    case BF_UN_TANH_SHRINK: {
        const float t = tanhf(x);
        return t * t;
    }
    case BF_UN_LOG_SIGMOID: return bf_sigmoidf(-x);
    case BF_UN_SQUAREPLUS: return 0.5f * (1.0f + x / sqrtf(x * x + p));
    case BF_UN_SPARSE_PLUS: return x <= -1.0f ? 0.0f : x >= 1.0f ? 1.0f : 0.5f * (x + 1.0f);
    case BF_UN_SPARSE_SIGMOID: return x < -1.0f || x > 1.0f ? 0.0f : x == -1.0f || x == 1.0f ? 0.25f : 0.5f;
    case BF_UN_HARD_SILU:
        return bf_relu6f(x + 3.0f) / 6.0f + (x > -3.0f && x < 3.0f ? x / 6.0f : 0.0f);
    default: return 0.0f; /* step functions, comparisons, isnan ..., imag, full_like, stop_gradient */
    }
}

// y = op(a, b)
BF_HD float bf_binary_value(int op, float a, float b) {
    switch (op) {
    case BF_BIN_ADD: return a + b;
    case BF_BIN_SUBTRACT: return a - b;
    case BF_BIN_MULTIPLY: return a * b;
    case BF_BIN_DIVIDE: return a / b;
    case BF_BIN_MAXIMUM: return bf_maxf(a, b);
    case BF_BIN_MINIMUM: return bf_minf(a, b);
    case BF_BIN_GREATER: return a > b ? 1.0f : 0.0f;
    case BF_BIN_GREATER_EQUAL: return a >= b ? 1.0f : 0.0f;
    case BF_BIN_LESS: return a < b ? 1.0f : 0.0f;
    case BF_BIN_LESS_EQUAL: return a <= b ? 1.0f : 0.0f;
    case BF_BIN_EQUAL: return a == b ? 1.0f : 0.0f;
    case BF_BIN_NOT_EQUAL: return a != b ? 1.0f : 0.0f;
    case BF_BIN_POWER: return powf(a, b);
    case BF_BIN_ARCTAN2: return atan2f(a, b);
    case BF_BIN_MOD: return bf_modf(a, b);
    case BF_BIN_FMOD: return fmodf(a, b);
    case BF_BIN_FLOOR_DIVIDE: return bf_floordivf(a, b);
    case BF_BIN_HYPOT: return hypotf(a, b);
    case BF_BIN_LOGADDEXP: return bf_logaddexpf(a, b, 0);
    case BF_BIN_LOGADDEXP2: return bf_logaddexpf(a, b, 1);
    case BF_BIN_LOGICAL_AND: return a != 0.0f && b != 0.0f ? 1.0f : 0.0f;
    case BF_BIN_LOGICAL_OR: return a != 0.0f || b != 0.0f ? 1.0f : 0.0f;
    case BF_BIN_LOGICAL_XOR: return (a != 0.0f) != (b != 0.0f) ? 1.0f : 0.0f;
    case BF_BIN_DIVIDE_NO_NAN: return b == 0.0f ? 0.0f : a / b;
    case BF_BIN_FMAX: return a > b || b != b ? a : b; /* the other where one is NaN */
    case BF_BIN_FMIN: return a < b || b != b ? a : b;
    default: return a < 0.0f ? 0.0f : a > 0.0f ? 1.0f : a == 0.0f ? b : a; /* BF_BIN_HEAVISIDE (NaN stays) */
    }
}

// dy/da (j = 0) or dy/db (j = 1) at a, b with y = op(a, b)
BF_HD float bf_binary_grad(int op, int j, float a, float b, float y) {
    switch (op) {
    case BF_BIN_ADD: return 1.0f;
    case BF_BIN_SUBTRACT: return j ? -1.0f : 1.0f;
    case BF_BIN_MULTIPLY: return j ? a : b;
    case BF_BIN_DIVIDE: return j ? -y / b : 1.0f / b;
    case BF_BIN_MAXIMUM: return j ? bf_tie(b, a) : bf_tie(a, b);
    case BF_BIN_MINIMUM: return j ? bf_tie(a, b) : bf_tie(b, a);
    case BF_BIN_POWER:
        if (j) return a == 0.0f ? 0.0f : logf(a) * y;
        return b == 0.0f ? 0.0f : b * powf(a, b - 1.0f);
    case BF_BIN_ARCTAN2: {
        const float d = a * a + b * b;
        return j ? -a / d : b / d;
    }
    case BF_BIN_MOD: { /* lax.rem's -trunc(a / b), plus 1 where the divisor was added */
        if (!j) return 1.0f;
        const float m = fmodf(a, b);
        return -truncf(a / b) + (m != 0.0f && ((m < 0.0f) != (b < 0.0f)) ? 1.0f : 0.0f);
    }
    case BF_BIN_FMOD: return j ? -truncf(a / b) : 1.0f;
    case BF_BIN_HYPOT: return y == 0.0f ? 0.0f : (j ? b : a) / y;
    case BF_BIN_LOGADDEXP: return expf((j ? b : a) - y);
    case BF_BIN_LOGADDEXP2: return exp2f((j ? b : a) - y);
    case BF_BIN_DIVIDE_NO_NAN: return b == 0.0f ? 0.0f : j ? -y / b : 1.0f / b;
    case BF_BIN_HEAVISIDE: return j && a == 0.0f ? 1.0f : 0.0f;
    case BF_BIN_FMAX: return (a > b || b != b) == !j ? 1.0f : 0.0f; /* jnp.fmax's select: a tie's to b */
    case BF_BIN_FMIN: return (a < b || b != b) == !j ? 1.0f : 0.0f;
    default: return 0.0f; /* comparisons, logical ops, floor_divide */
    }
}

// the unary map's op (a unary op, or a binary one with the number m->p as an operand): value and dy/dx
BF_HD float bf_map_value(int op, int left, float x, float p, float q, float r) {
    if (op < BF_UN_COUNT) return bf_unary_value(op, x, p, q, r);
    return left ? bf_binary_value(op - BF_UN_COUNT, p, x) : bf_binary_value(op - BF_UN_COUNT, x, p);
}

BF_HD float bf_map_grad(int op, int left, float x, float y, float p, float q, float r) {
    if (op < BF_UN_COUNT) return bf_unary_grad(op, x, y, p, q, r);
    return left ? bf_binary_grad(op - BF_UN_COUNT, 1, p, x, y) : bf_binary_grad(op - BF_UN_COUNT, 0, x, p, y);
}

/* the elements of a broadcast output */
static inline long bf_bcast_size(const bf_bcast *g) {
    long n = 1;
    for (int d = 0; d < g->nd; d++) n *= g->n[d];
    return n;
}

/* binary_grad's geometry of operand j (host side, both backends): its kept axes, in its own contiguous
 * order (size elements), and the axes it broadcasts along (summed, rsize elements each), with the strides
 * of a, b and the full output (o) along each */
typedef struct {
    int nk, nr;
    long kn[BF_BCAST_MAXD], ka[BF_BCAST_MAXD], kb[BF_BCAST_MAXD], ko[BF_BCAST_MAXD];
    long rn[BF_BCAST_MAXD], ra[BF_BCAST_MAXD], rb[BF_BCAST_MAXD], ro[BF_BCAST_MAXD];
    long size, rsize;
} bf_grad_geom;

static inline void bf_grad_geometry(const bf_bcast *g, int j, bf_grad_geom *q) {
    long os = 1, fs[BF_BCAST_MAXD];
    for (int d = g->nd - 1; d >= 0; d--) {
        fs[d] = os;
        os *= g->n[d];
    }
    q->nk = q->nr = 0;
    q->size = q->rsize = 1;
    for (int d = 0; d < g->nd; d++) {
        if (g->n[d] > 1 && g->s[j][d] == 0) {
            q->rn[q->nr] = g->n[d], q->ra[q->nr] = g->s[0][d], q->rb[q->nr] = g->s[1][d], q->ro[q->nr++] = fs[d];
            q->rsize *= g->n[d];
        } else {
            q->kn[q->nk] = g->n[d], q->ka[q->nk] = g->s[0][d], q->kb[q->nk] = g->s[1][d], q->ko[q->nk++] = fs[d];
            q->size *= g->n[d];
        }
    }
}

/* element e of binary_grad's output (operand j, geometry q): its terms summed in double, in one order */
BF_HD float bf_binary_grad_elem(const bf_grad_geom *q, long e, int op, int j, const float *a, const float *b,
                                const float *y, const float *dout) {
    long rest = e, oa = 0, ob = 0, oo = 0;
    for (int d = q->nk - 1; d >= 0; d--) {
        const long i = rest % q->kn[d];
        rest /= q->kn[d];
        oa += i * q->ka[d], ob += i * q->kb[d], oo += i * q->ko[d];
    }
    if (q->nr == 0) return dout[oo] * bf_binary_grad(op, j, a[oa], b[ob], y[oo]);
    double s = 0.0;
    for (long r = 0; r < q->rsize; r++) {
        long rr = r, ra = oa, rb = ob, ro = oo;
        for (int d = q->nr - 1; d >= 0; d--) {
            const long i = rr % q->rn[d];
            rr /= q->rn[d];
            ra += i * q->ra[d], rb += i * q->rb[d], ro += i * q->ro[d];
        }
        s += (double)(dout[ro] * bf_binary_grad(op, j, a[ra], b[rb], y[ro]));
    }
    return (float)s;
}

#endif
