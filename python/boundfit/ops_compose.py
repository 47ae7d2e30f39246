"""keras.ops products and elementwise compositions (re-exported by ops.py):
inner, outer, kron, vdot, cross, vander, ldexp, select, allclose,
unravel_index.

On arrays: NumPy. On symbolic tensors, compositions of the engine's
primitives (ops_lax.py): inner of a tensor and a constant is a broadcast
multiply and a sum over the last axis; cross of 3-vectors per sample is
Slices, products and a Concatenate; vander, ldexp and unravel_index are
elementwise math; select nests where(c, x, y) = y + c * (x - y); allclose
reduces isclose over every axis, the batch's too (one 0 / 1 number without
a batch axis). outer, kron and vdot flatten the batch axis with the others,
and inner of two symbolic tensors pairs every sample with every other:
those raise OpNotSupportedError naming the op. Each is recorded as Keras's
operation node (layers/opnode.py)."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import Unary
from .layers.node import KerasTensor
from .layers.opnode import record
from .layers.reduce import Reduce

NUMPY = lx.NUMPY


def inner(x1, x2):
    """keras.ops.inner of a symbolic tensor (..., N) and a constant array (N,) or (M, N): the sum over the last
    axis of their broadcast product, (...) or (..., M)"""
    if not lx.sym(x1, x2):
        return np.inner(x1, x2)
    if isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
        lx.refuse("inner", "of two symbolic tensors: the result pairs every sample with every other (two batch "
                  "axes); use keras.ops.sum(x1 * x2, axis=-1) for a product per sample")
    x, a = (x1, x2) if isinstance(x1, KerasTensor) else (x2, x1)
    lx.batched("inner", x)
    a = np.asarray(a, np.float32)
    ps = lx.static("inner", x)
    if a.ndim not in (1, 2) or a.shape[-1] != ps[-1] or not isinstance(x1, KerasTensor) and a.ndim != 1:
        lx.refuse("inner", f"of {x.shape} and an array of shape {a.shape}: the tensor first, an array (N,) or "
                  "(M, N) with N its last axis")
    if a.ndim == 1:
        y = lx.reduce("sum", lx.mul(x, a), (len(ps) - 1,))
    else:
        y = lx.reduce("sum", lx.mul(lx.reshape(x, ps[:-1] + (1, ps[-1])), a), (len(ps),))
    return record(y, "Inner", NUMPY, {}, [x1, x2])


def _flattening(name):
    npfn = getattr(np, name)

    def fn(x1, x2):
        if not lx.sym(x1, x2):
            return npfn(x1, x2)
        lx.refuse(name, "it flattens or pairs the batch axis with the others, mixing the samples")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name} (arrays only: on a symbolic tensor it mixes the samples of the batch)"
    return fn


outer, kron, vdot = _flattening("outer"), _flattening("kron"), _flattening("vdot")


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """keras.ops.cross of two symbolic tensors of 3-vectors along the last axis: Slices, products, Concatenate"""
    if not lx.sym(x1, x2):
        return np.cross(x1, x2, axisa, axisb, axisc, axis)
    if not isinstance(x1, KerasTensor) or not isinstance(x2, KerasTensor):
        lx.refuse("cross", "of a tensor and an array (only of two symbolic tensors)")
    if (axisa, axisb, axisc) != (-1, -1, -1) or axis not in (None, -1):
        lx.refuse("cross", "only along the last axis (axisa, axisb, axisc -1, axis None or -1)")
    lx.batched("cross", x1, x2)
    ps = lx.static("cross", x1)
    if ps != lx.static("cross", x2) or ps[-1] != 3:
        lx.refuse("cross", f"of {x1.shape} and {x2.shape}: 3-vectors of one shape")
    a = len(ps) - 1
    u = [lx.cut(x1, a, i, i + 1) for i in range(3)]
    v = [lx.cut(x2, a, i, i + 1) for i in range(3)]
    parts = [lx.sub(lx.mul(u[(i + 1) % 3], v[(i + 2) % 3]), lx.mul(u[(i + 2) % 3], v[(i + 1) % 3])) for i in range(3)]
    return record(lx.concat(parts, a), "Cross", NUMPY, {"axisa": -1, "axisb": -1, "axisc": -1, "axis": axis},
                  [x1, x2])


def vander(x, N=None, increasing=False):
    """keras.ops.vander of one number per sample (B,): its powers (B, N), highest first unless increasing"""
    if not lx.sym(x):
        return np.vander(x, N, increasing)
    lx.batched("vander", x)
    if x.ndim != 1 or N is None:
        lx.refuse("vander", f"of {x.shape} with N={N}: one number per sample (B,) and N given")
    p = np.arange(int(N), dtype=np.float32)
    y = lx.binary("power", lx.reshape(x, (1,)), p if increasing else p[::-1].copy())
    return record(y, "Vander", NUMPY, {"N": int(N), "increasing": bool(increasing)}, [x])


def ldexp(x1, x2):
    """keras.ops.ldexp: x1 * 2 ** x2 (x2 integers: a number, an array or a symbolic tensor of them)"""
    if not lx.sym(x1, x2):
        return np.ldexp(x1, np.asarray(x2).astype(np.int32))
    p = Unary("exp2")(x2) if isinstance(x2, KerasTensor) else np.exp2(np.asarray(x2, np.float32))
    return record(lx.mul(x1, float(p) if np.ndim(p) == 0 and not isinstance(p, KerasTensor) else p), "Ldexp",
                  NUMPY, {}, [x1, x2])


def _where(c, x, y):
    """y + c * (x - y) for a 0 / 1 condition"""
    if lx.scalar(y) == 0.0:
        return lx.mul(c, x)
    d = lx.sub(x, y) if lx.sym(x, y) else np.asarray(x, np.float32) - np.asarray(y, np.float32)
    return lx.add(lx.mul(c, float(d) if lx.scalar(d) is not None else d), y)


def select(condlist, choicelist, default=0):
    """keras.ops.select: the first choice whose condition holds, else default (nested where)"""
    if not lx.sym(*condlist, *choicelist, default):
        return np.select([np.asarray(c, bool) for c in condlist], choicelist, default)
    if len(condlist) != len(choicelist) or not condlist:
        raise ValueError("keras.ops.select: condlist and choicelist must be lists of one length")
    if not all(isinstance(c, KerasTensor) for c in condlist):
        lx.refuse("select", "conditions that are not symbolic tensors")
    y = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        y = _where(c, v, y)
    if not isinstance(y, KerasTensor):
        lx.refuse("select", "no choice or default is a symbolic tensor")
    return record(y, "Select", NUMPY, {}, [list(condlist), list(choicelist), default])


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """keras.ops.allclose: all(|x1 - x2| <= atol + rtol * |x2|) over every axis, the batch's too: one 0 / 1 number
    without a batch axis"""
    if not lx.sym(x1, x2):
        return np.allclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if equal_nan:
        lx.refuse("allclose", "equal_nan=True")
    lx.batched("allclose", x1, x2)
    d = Unary("abs")(lx.sub(x1, x2))
    tol = Unary("add", float(atol))(lx.mul(Unary("abs")(x2), float(rtol))) if isinstance(x2, KerasTensor) else \
        float(atol) + float(rtol) * np.abs(np.asarray(x2, np.float32))
    y = Reduce("all")(lx.binary("less_equal", d, tol))
    return record(y, "AllClose", NUMPY, {"rtol": rtol, "atol": atol, "equal_nan": False}, [x1, x2])


def unravel_index(indices, shape):
    """keras.ops.unravel_index of symbolic flat indices: (indices // stride_d) % shape_d per axis, a tuple"""
    if not lx.sym(indices):
        return tuple(np.asarray(i, np.int32) for i in np.unravel_index(np.asarray(indices, np.int64), shape))
    lx.batched("unravel_index", indices)
    shape = tuple(int(d) for d in shape)
    strides = np.cumprod((1,) + shape[::-1])[:-1][::-1]
    outs = tuple(Unary("mod", float(d))(Unary("floor_divide", float(s))(indices)) for s, d in zip(strides, shape))
    return record(outs, "UnravelIndex", NUMPY, {"shape": list(shape)}, [indices])
