"""keras.ops.cast on symbolic tensors, and the dtypes keras.ops results report.

The engine holds every tensor in float32; an integer or bool tensor is a
float32 tensor of integral (0 / 1) values whose KerasTensor carries Keras's
dtype. cast follows Keras 3 on JAX (x64 off: int64 / uint64 are 32-bit):
- float -> int: NaN to 0, clipped to the type's range, truncated toward zero
  (XLA's saturating convert); int -> a narrower int wraps (two's complement);
- -> bool: x != 0 (NaN is True); bool / int -> float: the values as they are;
- float -> float: the tensor itself (float32 in the engine: a float16 /
  bfloat16 / float64 cast neither rounds nor widens; mixed precision is the
  layers' dtype policy, docs/mixed-precision.md).
Integers beyond 2**24 are not exact in float32 (an int32 holds the nearest
float32). Integer and bool results carry no gradient (as Keras: stop_gradient).

tag_results() wraps keras.ops functions so that their results report Keras's
dtype (backend.result_type of the operands, int32 for argmax...); results of
other ops are float32 as before. Comparisons and the logical ops stay
float32 0 / 1 (Keras: bool), as boundfit writes them in .keras files (the
op, then Cast to float32), so casting them to a float is the tensor itself;
a cast to "bool" gives a bool tensor."""

import functools
import numbers

import numpy as np

from . import backend
from .layers.core import Identity
from .layers.emath import Unary
from .layers.node import KerasTensor
from .layers.opnode import record
from .ops_elementwise import UNARY

_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 32, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 32}
_NARROW = {"int64": "int32", "uint64": "uint32"}   # JAX without x64


def _range(dtype):
    b = _BITS[dtype]
    return (0, 2 ** b - 1) if dtype.startswith("u") else (-2 ** (b - 1), 2 ** (b - 1) - 1)


def _kind(dtype):
    return "b" if dtype == "bool" else "i" if dtype in _BITS else "f"


def _tagged(y, dtype):
    y.dtype = dtype
    return y


def cast(x, dtype):
    """keras.ops.cast of a symbolic tensor x (see the module's note)."""
    to = backend.standardize_dtype(dtype)
    frm = getattr(x, "dtype", "float32") or "float32"
    frm = frm if frm == "bool" or frm in _BITS else "float32"
    if to == frm or _kind(to) == "f" and _kind(frm) == "f":
        return x
    if _kind(to) == "f":                                   # bool / int -> float: the values
        y = Identity()(x)
    elif to == "bool":
        y = Unary("stop_gradient")(Unary("not_equal", 0.0)(x))
    elif _kind(frm) == "f":                                # float -> int: saturate, truncate toward zero
        lo, hi = _range(to)
        y = UNARY["nan_to_num"](x, nan=0.0, posinf=float(hi), neginf=float(lo))
        y = Unary("minimum", float(hi))(Unary("maximum", float(lo))(y))
        y = Unary("stop_gradient")(Unary("add", 0.0)(Unary("trunc")(y)))   # (+ 0: no -0, as an integer)
    else:                                                  # int / bool -> int: wrap where the range is narrower
        lo, hi = _range(to)
        flo, fhi = (0, 1) if frm == "bool" else _range(frm)
        if lo <= flo and fhi <= hi:
            y = Identity()(x)
        else:
            n = float(hi - lo + 1)
            y = Unary("mod", n)(Unary("add", float(-lo))(x))
            y = Unary("stop_gradient")(Unary("add", float(lo))(y))
    return _tagged(record(y, "Cast", "keras.src.ops.core", {"dtype": to}, [x]), to)   # (int64 as Keras reports it)


# ---- the dtypes of keras.ops results ----

def _dtype_of(v):
    """an operand's dtype for Keras's promotion: a tensor's, Python's weak int / float, an array's"""
    if isinstance(v, KerasTensor):
        return v.dtype or "float32"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, numbers.Integral):
        return int
    if isinstance(v, numbers.Real):
        return float
    if isinstance(v, (np.ndarray, np.generic)):
        return _NARROW.get(v.dtype.name, "float32" if v.dtype.kind == "f" else v.dtype.name)
    return None


def _promoted(*args):
    ds = [_dtype_of(a) for a in args]
    if any(d is None for d in ds):
        return "float32"
    try:
        out = backend.result_type(*ds)
    except ValueError:
        return "float32"
    return out if out == "bool" or out in _BITS else "float32"


def _first(x, *args, **kwargs):
    return getattr(x, "dtype", "float32")


def _total(x, *args, **kwargs):
    """sum / prod: small integers accumulate in 32 bits, as Keras's"""
    d = _first(x)
    return {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}.get(d, d)


def _no_bool(x, *args, **kwargs):
    d = _first(x)
    return "int32" if d == "bool" else d


RULES = {
    "promote": (lambda *a, **k: _promoted(*a[:2]),
                "add subtract multiply maximum minimum mod floor_divide fmod power"),
    "where": (lambda c, x1=None, x2=None, **k: _promoted(x1, x2) if x1 is not None else "int32", "where"),
    "int32": (lambda *a, **k: "int32", "argmax argmin argsort count_nonzero"),
    "same": (_first, "abs absolute negative sign reshape expand_dims squeeze transpose getitem get_item flip roll "
                     "tile repeat broadcast_to take take_along_axis sort max min amax amin moveaxis swapaxes"),
    "total": (_total, "sum prod"),
    "no_bool": (_no_bool, "square clip cumsum cumprod"),
    "joined": (lambda xs, *a, **k: _promoted(*xs) if isinstance(xs, (list, tuple)) and xs else "float32",
               "concatenate stack"),
}


def _tag(fn, rule):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, KerasTensor) and out.dtype == "float32" and \
                all(out is not a for a in args) and out._node is not None:
            d = rule(*args, **kwargs)
            if d != "float32":
                out.dtype = d
        return out
    return op


def tag_results(names):
    """Wrap the keras.ops functions in the dict `names` (ops.py's globals) with their results' dtype rules."""
    for rule, ops in RULES.values():
        for n in ops.split():
            if n in names and callable(names[n]):
                names[n] = _tag(names[n], rule)
