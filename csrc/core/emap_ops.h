/* emap_ops.h - the one list of the elementwise primitives' op codes and their
 * keras.ops names (X-macros): BF_UNARY_OPS for the unary map (layers/emath.c's
 * UNARY, the backends' unary_map / unary_grad), BF_BINARY_OPS for the
 * broadcasting binary op (BINARY, binary_map / binary_grad) and for a binary
 * op with a number as one operand (UNARY with bf_map_op.op = BF_UN_COUNT +
 * the binary code: x - 2, 2 ** x, mod(x, 3)). Python reads the names from
 * _core.UNARY_OPS / _core.BINARY_OPS, so a code is its index here. The value
 * and derivative of each op: emap_math.h. New ops go at the end (codes are
 * stored in nothing but a running engine; files hold the names). */
#ifndef BF_EMAP_OPS_H
#define BF_EMAP_OPS_H

/* X(NAME, "keras.ops name"); the parameters p, q, r of bf_map_op where an op reads them */
#define BF_UNARY_OPS(X)                                                                                      \
    X(SQRT, "sqrt") X(SQUARE, "square") X(ABS, "abs") X(EXP, "exp") X(LOG, "log") X(NEGATIVE, "negative")     \
    X(RECIPROCAL, "reciprocal") X(RSQRT, "rsqrt") X(SIN, "sin") X(COS, "cos") X(TAN, "tan")                   \
    X(ARCSIN, "arcsin") X(ARCCOS, "arccos") X(ARCTAN, "arctan") X(SINH, "sinh") X(COSH, "cosh")               \
    X(TANH, "tanh") X(ARCSINH, "arcsinh") X(ARCCOSH, "arccosh") X(ARCTANH, "arctanh") X(EXP2, "exp2")         \
    X(EXPM1, "expm1") X(LOG1P, "log1p") X(LOG2, "log2") X(LOG10, "log10") X(CBRT, "cbrt") X(SIGN, "sign")     \
    X(FLOOR, "floor") X(CEIL, "ceil") X(TRUNC, "trunc") X(ROUND, "round") /* p: decimals */                    \
    X(DEG2RAD, "deg2rad") X(RAD2DEG, "rad2deg") X(ERF, "erf") X(ERFC, "erfc") X(ERFINV, "erfinv")             \
    X(SINC, "sinc") X(SIGNBIT, "signbit") X(ISNAN, "isnan") X(ISINF, "isinf") X(ISFINITE, "isfinite")         \
    X(ISNEGINF, "isneginf") X(ISPOSINF, "isposinf") X(LOGICAL_NOT, "logical_not")                             \
    X(NAN_TO_NUM, "nan_to_num") /* p nan, q posinf, r neginf */ X(ANGLE, "angle") X(IMAG, "imag")             \
    X(STOP_GRADIENT, "stop_gradient") X(FULL_LIKE, "full_like") /* p */                                       \
    X(THRESHOLD, "threshold") /* p threshold, q default_value */ X(CELU, "celu") /* p alpha */                \
    X(HARD_TANH, "hard_tanh") X(HARD_SHRINK, "hard_shrink") /* p */ X(SOFT_SHRINK, "soft_shrink") /* p */     \
    X(TANH_SHRINK, "tanh_shrink") X(LOG_SIGMOID, "log_sigmoid") X(SQUAREPLUS, "squareplus") /* p: b */       \
    X(SPARSE_PLUS, "sparse_plus") X(SPARSE_SIGMOID, "sparse_sigmoid") X(HARD_SILU, "hard_silu")

/* X(NAME, "keras.ops name") of op(a, b) */
#define BF_BINARY_OPS(X)                                                                                     \
    X(ADD, "add") X(SUBTRACT, "subtract") X(MULTIPLY, "multiply") X(DIVIDE, "divide") X(MAXIMUM, "maximum")  \
    X(MINIMUM, "minimum") X(GREATER, "greater") X(GREATER_EQUAL, "greater_equal") X(LESS, "less")            \
    X(LESS_EQUAL, "less_equal") X(EQUAL, "equal") X(NOT_EQUAL, "not_equal") X(POWER, "power")                 \
    X(ARCTAN2, "arctan2") X(MOD, "mod") X(FMOD, "fmod") X(FLOOR_DIVIDE, "floor_divide") X(HYPOT, "hypot")     \
    X(LOGADDEXP, "logaddexp") X(LOGADDEXP2, "logaddexp2") X(LOGICAL_AND, "logical_and")                       \
    X(LOGICAL_OR, "logical_or") X(LOGICAL_XOR, "logical_xor") X(DIVIDE_NO_NAN, "divide_no_nan")               \
    X(HEAVISIDE, "heaviside") X(FMAX, "fmax") X(FMIN, "fmin")

#define BF_EMAP_X_ENUM_UN(NAME, name) BF_UN_##NAME,
#define BF_EMAP_X_ENUM_BIN(NAME, name) BF_BIN_##NAME,
enum { BF_UNARY_OPS(BF_EMAP_X_ENUM_UN) BF_UN_COUNT };
enum { BF_BINARY_OPS(BF_EMAP_X_ENUM_BIN) BF_BIN_COUNT };

#endif
