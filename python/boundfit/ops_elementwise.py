"""keras.ops' elementwise math as thin calls of the engine's two elementwise
primitives (csrc/core/layers/emath.c; the ops, formulas and derivatives:
csrc/core/emap_ops.h, emap_math.h):

- a unary op (sin, erf, round, isnan, log_sigmoid, ...) on a symbolic
  tensor is layers.Unary(op, options); a binary op (power, mod, arctan2,
  logaddexp, equal, logical_and, ...) of a tensor and a Python number is
  Unary(op, number, left=<the number is the left operand>);
- a binary op of two symbolic tensors, or of a tensor and an array or a
  custom layer's weight, is layers.Binary(op) with NumPy's broadcasting
  (ops.py's _elementwise, which makes the functions of BINARY_NAMES);
- on arrays each computes eagerly in NumPy, as Keras does.

Keras files hold each as Keras's own operation (saving/keras_ops.py: the
class and the options of KERAS below; an op whose Keras result is a bool
tensor is that class then Cast to float32, boundfit's 0 / 1 values), and
read them back through these functions.

add, subtract, multiply, divide, maximum, minimum, the four order
comparisons, power, exp, tanh and negative keep ops.py's definitions (merge
layers of one shape, Unary with a number, the Activation exp and tanh),
which use the same primitives for the rest."""

import math

import numpy as np

from .layers.emath import BINARY_OPS, UNARY_OPS, Unary
from .layers.node import KerasTensor

NUMPY, NN, MATH, CORE = "keras.src.ops.numpy", "keras.src.ops.nn", "keras.src.ops.math", "keras.src.ops.core"

# keras.ops name -> (Keras's operation class, its module, its options in the order of Unary's param, param2,
# param3). Ops whose Keras result is a bool tensor: BOOL.
KERAS = {
    "sqrt": ("Sqrt", NUMPY, ()), "square": ("Square", NUMPY, ()), "abs": ("Absolute", NUMPY, ()),
    "exp": ("Exp", NUMPY, ()), "log": ("Log", NUMPY, ()), "negative": ("Negative", NUMPY, ()),
    "reciprocal": ("Reciprocal", NUMPY, ()), "rsqrt": ("Rsqrt", MATH, ()), "sin": ("Sin", NUMPY, ()),
    "cos": ("Cos", NUMPY, ()), "tan": ("Tan", NUMPY, ()), "arcsin": ("Arcsin", NUMPY, ()),
    "arccos": ("Arccos", NUMPY, ()), "arctan": ("Arctan", NUMPY, ()), "sinh": ("Sinh", NUMPY, ()),
    "cosh": ("Cosh", NUMPY, ()), "tanh": ("Tanh", NUMPY, ()), "arcsinh": ("Arcsinh", NUMPY, ()),
    "arccosh": ("Arccosh", NUMPY, ()), "arctanh": ("Arctanh", NUMPY, ()), "exp2": ("Exp2", NUMPY, ()),
    "expm1": ("Expm1", NUMPY, ()), "log1p": ("Log1p", NUMPY, ()), "log2": ("Log2", NUMPY, ()),
    "log10": ("Log10", NUMPY, ()), "cbrt": ("Cbrt", NUMPY, ()), "sign": ("Sign", NUMPY, ()),
    "floor": ("Floor", NUMPY, ()), "ceil": ("Ceil", NUMPY, ()), "trunc": ("Trunc", NUMPY, ()),
    "round": ("Round", NUMPY, ("decimals",)), "deg2rad": ("Deg2rad", NUMPY, ()), "rad2deg": ("Rad2deg", NUMPY, ()),
    "erf": ("Erf", MATH, ()), "erfc": ("Erfc", MATH, ()), "erfinv": ("Erfinv", MATH, ()),
    "sinc": ("Sinc", NUMPY, ()), "signbit": ("Signbit", NUMPY, ()), "isnan": ("Isnan", NUMPY, ()),
    "isinf": ("Isinf", NUMPY, ()), "isfinite": ("Isfinite", NUMPY, ()), "isneginf": ("Isneginf", NUMPY, ()),
    "isposinf": ("Isposinf", NUMPY, ()), "logical_not": ("LogicalNot", NUMPY, ()),
    "nan_to_num": ("NanToNum", NUMPY, ("nan", "posinf", "neginf")), "angle": ("Angle", NUMPY, ()),
    "imag": ("Imag", NUMPY, ()), "stop_gradient": ("StopGradient", CORE, ()),
    "full_like": ("FullLike", NUMPY, ("fill_value",)),
    "threshold": ("Threshold", NN, ("threshold", "default_value")), "celu": ("Celu", NN, ("alpha",)),
    "hard_tanh": ("HardTanh", NN, ()), "hard_shrink": ("HardShrink", NN, ("threshold",)),
    "soft_shrink": ("SoftShrink", NN, ("threshold",)), "tanh_shrink": ("TanhShrink", NN, ()),
    "log_sigmoid": ("LogSigmoid", NN, ()), "squareplus": ("Squareplus", NN, ("b",)),
    "sparse_plus": ("SparsePlus", NN, ()), "sparse_sigmoid": ("SparseSigmoid", NN, ()),
    "hard_silu": ("HardSilu", NN, ()),
    "add": ("Add", NUMPY, ()), "subtract": ("Subtract", NUMPY, ()), "multiply": ("Multiply", NUMPY, ()),
    "divide": ("Divide", NUMPY, ()), "maximum": ("Maximum", NUMPY, ()), "minimum": ("Minimum", NUMPY, ()),
    "greater": ("Greater", NUMPY, ()), "greater_equal": ("GreaterEqual", NUMPY, ()), "less": ("Less", NUMPY, ()),
    "less_equal": ("LessEqual", NUMPY, ()), "equal": ("Equal", NUMPY, ()), "not_equal": ("NotEqual", NUMPY, ()),
    "power": ("Power", NUMPY, ()), "arctan2": ("Arctan2", NUMPY, ()), "mod": ("Mod", NUMPY, ()),
    "fmod": ("Fmod", NUMPY, ()), "floor_divide": ("FloorDivide", NUMPY, ()), "hypot": ("Hypot", NUMPY, ()),
    "logaddexp": ("Logaddexp", NUMPY, ()), "logaddexp2": ("Logaddexp2", NUMPY, ()),
    "logical_and": ("LogicalAnd", NUMPY, ()), "logical_or": ("LogicalOr", NUMPY, ()),
    "logical_xor": ("LogicalXor", NUMPY, ()), "divide_no_nan": ("DivideNoNan", NUMPY, ()),
    "heaviside": ("Heaviside", NUMPY, ()), "fmax": ("Fmax", NUMPY, ()), "fmin": ("Fmin", NUMPY, ()),
}
BOOL = {"signbit", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_not", "greater", "greater_equal",
        "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor"}
assert set(KERAS) == set(UNARY_OPS) | set(BINARY_OPS), "every op of csrc/core/emap_ops.h has its Keras class"

_F32_MAX = float(np.finfo(np.float32).max)


def _erfinv(y):
    """erfinv in float64: Newton's steps on math.erf from Winitzki's approximation"""
    y = np.asarray(y, np.float64)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    w = -np.log(np.clip((1.0 - y) * (1.0 + y), 1e-300, None))
    t = 2 / (np.pi * 0.147) - w / 2                      # Winitzki's approximation
    x = np.sign(y) * np.sqrt(np.sqrt(t * t + w / 0.147) - t)
    with np.errstate(all="ignore"):
        for _ in range(4):
            x = x - (erf(x) - y) / (2 / np.sqrt(np.pi) * np.exp(-x * x))
    return np.where(np.abs(y) < 1, x, np.where(y == 1, np.inf, np.where(y == -1, -np.inf, np.nan)))


def _f(x):
    return np.asarray(x, dtype=np.result_type(np.asarray(x).dtype, np.float32))


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


# NumPy's forms of the ops (eager calls on arrays, Keras's semantics)
EAGER = {
    "sqrt": np.sqrt, "square": np.square, "abs": np.abs, "exp": np.exp, "log": np.log, "negative": np.negative,
    "reciprocal": lambda x: 1.0 / _f(x), "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh, "exp2": np.exp2,
    "expm1": np.expm1, "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "cbrt": np.cbrt, "sign": np.sign,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": lambda x, decimals=0: np.round(x, decimals),
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg,
    "erf": lambda x: np.vectorize(math.erf, otypes=[np.float64])(x).astype(_f(x).dtype),
    "erfc": lambda x: np.vectorize(math.erfc, otypes=[np.float64])(x).astype(_f(x).dtype),
    "erfinv": lambda x: _erfinv(x).astype(_f(x).dtype), "sinc": np.sinc, "signbit": np.signbit,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "isneginf": np.isneginf,
    "isposinf": np.isposinf, "logical_not": np.logical_not,
    "nan_to_num": lambda x, nan=0.0, posinf=None, neginf=None: np.nan_to_num(_f(x), nan=nan, posinf=posinf,
                                                                             neginf=neginf),
    "angle": np.angle, "imag": np.imag, "stop_gradient": lambda x: x,
    "full_like": lambda x, fill_value: np.full_like(_f(x), fill_value),
    "threshold": lambda x, threshold, default_value: np.where(_f(x) > threshold, x, default_value),
    "celu": lambda x, alpha=1.0: np.maximum(x, 0.0) + alpha * np.expm1(np.minimum(x, 0.0) / alpha),
    "hard_tanh": lambda x: np.clip(x, -1.0, 1.0),
    "hard_shrink": lambda x, threshold=0.5: np.where(np.abs(x) > threshold, x, 0.0),
    "soft_shrink": lambda x, threshold=0.5: np.where(_f(x) > threshold, _f(x) - threshold,
                                                      np.where(_f(x) < -threshold, _f(x) + threshold, 0.0)),
    "tanh_shrink": lambda x: x - np.tanh(x), "log_sigmoid": lambda x: -np.logaddexp(0.0, -_f(x)),
    "squareplus": lambda x, b=4: (_f(x) + np.sqrt(np.square(_f(x)) + b)) / 2,
    "sparse_plus": lambda x: np.where(_f(x) <= -1, 0.0, np.where(_f(x) >= 1, x, (_f(x) + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: 0.5 * np.clip(_f(x) + 1.0, 0.0, 2.0),
    "hard_silu": lambda x: _f(x) * np.clip(_f(x) + 3.0, 0.0, 6.0) / 6.0,
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "greater": np.greater, "greater_equal": np.greater_equal,
    "less": np.less, "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal,
    "power": np.power, "arctan2": np.arctan2, "mod": np.mod, "fmod": np.fmod, "floor_divide": np.floor_divide,
    "hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "heaviside": np.heaviside,
    "fmax": np.fmax, "fmin": np.fmin,
    "divide_no_nan": lambda a, b: np.where(np.asarray(b) == 0, 0.0, np.true_divide(a, np.where(
        np.asarray(b) == 0, 1, b))),
}


def _params(name, opts):
    """Unary's param, param2, param3 from the op's options (KERAS's order); nan_to_num's None: float32's extremes"""
    if name == "nan_to_num":
        opts = {"nan": opts.get("nan", 0.0), "posinf": _F32_MAX if opts.get("posinf") is None else opts["posinf"],
                "neginf": -_F32_MAX if opts.get("neginf") is None else opts["neginf"]}
    vals = [float(opts[k]) for k in KERAS[name][2] if k in opts]
    return dict(zip(("param", "param2", "param3"), vals))


def unary(name, **defaults):
    """keras.ops.<name>(x, **options) for a unary op of csrc/core/emap_ops.h: Unary(name) on a symbolic tensor"""
    keys = KERAS[name][2]

    def op(x, *args, **kwargs):
        opts = dict(defaults, **dict(zip(keys, args)), **kwargs)
        bad = set(opts) - set(keys)
        if bad:
            raise TypeError(f"keras.ops.{name}: unexpected argument {sorted(bad)[0]!r}")
        if not isinstance(x, KerasTensor):
            return EAGER[name](x, **opts)
        if name == "round" and int(opts["decimals"]) != opts["decimals"]:
            raise ValueError(f"keras.ops.round: decimals must be an integer, got {opts['decimals']!r}")
        return Unary(name, **_params(name, opts))(x)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"keras.ops.{name}: elementwise; on a symbolic tensor the engine's unary map ({name!r})."
    return op


UNARY_NAMES = ("sqrt square abs log reciprocal rsqrt sin cos tan arcsin arccos arctan sinh cosh arcsinh arccosh "
               "arctanh exp2 expm1 log1p log2 log10 cbrt "
               "sign floor ceil trunc round deg2rad rad2deg erf erfc erfinv sinc signbit isnan isinf isfinite isneginf "
               "isposinf logical_not nan_to_num angle imag stop_gradient threshold celu hard_tanh hard_shrink "
               "soft_shrink tanh_shrink log_sigmoid squareplus sparse_plus sparse_sigmoid hard_silu").split()
BINARY_NAMES = ("equal not_equal arctan2 mod fmod floor_divide hypot logaddexp logaddexp2 logical_and logical_or "
                "logical_xor divide_no_nan heaviside fmax fmin").split()
_DEFAULTS = {"round": {"decimals": 0}, "nan_to_num": {"nan": 0.0}, "celu": {"alpha": 1.0},
             "hard_shrink": {"threshold": 0.5}, "soft_shrink": {"threshold": 0.5}, "squareplus": {"b": 4}}

UNARY = {n: unary(n, **_DEFAULTS.get(n, {})) for n in UNARY_NAMES}


def full_like(x, fill_value, dtype=None):
    """keras.ops.full_like: fill_value everywhere (the unary map full_like: no gradient)"""
    if dtype is not None and np.dtype(dtype).kind != "f" and isinstance(x, KerasTensor):
        raise TypeError(f"keras.ops.full_like: dtype {dtype} on a symbolic tensor: boundfit's tensors are float32")
    if not isinstance(x, KerasTensor):
        return np.full_like(x, fill_value, dtype=dtype)
    return Unary("full_like", float(fill_value))(x)


def identity_like(name):
    """keras.ops.<name>(x) that is x itself for the real float tensors boundfit has (real, conj, copy)"""
    def op(x):
        return x if isinstance(x, KerasTensor) else getattr(np, name)(x)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"keras.ops.{name}: x itself for real tensors."
    return op
