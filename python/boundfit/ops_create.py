"""keras.ops that make arrays or tell about tensors (re-exported by ops.py):
full, empty, identity, tri, linspace, logspace, geomspace and the windows
bartlett, blackman, hamming, hanning, kaiser make arrays from numbers (as
ops.eye / ones / zeros: a layer called on one inside a custom layer's
call() reads it as a per-sample constant); empty_like, isreal, array,
saturate_cast on a symbolic tensor are full_like or the tensor itself;
ndim, size, dtype, is_tensor, convert_to_numpy read a tensor's facts.
Symbolic tensors are float32 in the engine: a cast to another type, the
size of a batch not yet known, a symbolic tensor's values raise
OpNotSupportedError naming the op."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import Unary
from .layers.node import KerasTensor
from .layers.opnode import record


def _f32(dtype):
    return dtype or np.float32


def _no_tensor(op, *xs):
    if lx.sym(*xs):
        lx.refuse(op, "its arguments must be numbers or arrays (it makes a constant array)")


def full(shape, fill_value, dtype=None):
    """keras.ops.full: an array of fill_value"""
    _no_tensor("full", fill_value)
    return np.full(shape, fill_value, dtype=dtype or np.result_type(np.asarray(fill_value).dtype, np.float32))


def empty(shape, dtype=None):
    """keras.ops.empty: zeros (Keras's JAX backend gives zeros too)"""
    return np.zeros(shape, dtype=_f32(dtype))


def identity(n, dtype=None):
    """keras.ops.identity: the n x n identity array"""
    return np.identity(n, dtype=_f32(dtype))


def tri(N, M=None, k=0, dtype=None):
    """keras.ops.tri: ones at and below diagonal k"""
    return np.tri(N, M, k, dtype=_f32(dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """keras.ops.linspace of numbers or arrays"""
    _no_tensor("linspace", start, stop)
    out = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, axis=axis)
    if retstep:
        return out[0].astype(_f32(dtype)), out[1]
    return out.astype(_f32(dtype))


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """keras.ops.logspace of numbers or arrays"""
    _no_tensor("logspace", start, stop)
    return np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis).astype(_f32(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """keras.ops.geomspace of numbers or arrays"""
    _no_tensor("geomspace", start, stop)
    return np.geomspace(start, stop, num, endpoint=endpoint, axis=axis).astype(_f32(dtype))


def _window(name):
    npfn = getattr(np, name)

    def fn(x):
        _no_tensor(name, x)
        return npfn(int(x)).astype(np.float32)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name}: the {name} window of x points (an array)"
    return fn


bartlett, blackman, hamming, hanning = (_window(n) for n in ("bartlett", "blackman", "hamming", "hanning"))


def kaiser(x, beta):
    """keras.ops.kaiser: the Kaiser window of x points (an array)"""
    _no_tensor("kaiser", x, beta)
    return np.kaiser(int(x), float(beta)).astype(np.float32)


def _float_only(op, dtype):
    if dtype is not None and np.dtype(dtype) != np.float32:
        lx.refuse(op, f"dtype={dtype}: symbolic tensors are float32 in the engine")


def empty_like(x, dtype=None):
    """keras.ops.empty_like: zeros of x's shape (full_like 0 on a symbolic tensor)"""
    if not lx.sym(x):
        return np.zeros_like(x, dtype=dtype)
    _float_only("empty_like", dtype)
    return record(Unary("full_like", 0.0)(x), "EmptyLike", lx.NUMPY, {"dtype": dtype}, [x])


def isreal(x):
    """keras.ops.isreal: ones for the real tensors boundfit holds (full_like 1, no gradient)"""
    if not lx.sym(x):
        return np.isreal(x)
    return record(Unary("full_like", 1.0)(x), "Isreal", lx.NUMPY, {}, [x])


def array(x, dtype=None):
    """keras.ops.array: an array of x; a symbolic float32 tensor itself"""
    if not lx.sym(x):
        return np.array(x, dtype=dtype)
    _float_only("array", dtype)
    return x


def saturate_cast(x, dtype):
    """keras.ops.saturate_cast: on arrays clipped to dtype's range then cast; a symbolic tensor to float32 is
    itself (other types raise)"""
    if not lx.sym(x):
        x, d = np.asarray(x), np.dtype(dtype)
        info = np.iinfo(d) if d.kind in "iu" else np.finfo(d)
        return np.clip(x, info.min, info.max).astype(d)
    _float_only("saturate_cast", dtype)
    return x


def ndim(x):
    """keras.ops.ndim: the number of axes (the batch axis counted on symbolic tensors)"""
    return x.ndim if isinstance(x, KerasTensor) else np.ndim(x)


def size(x):
    """keras.ops.size: the number of elements (a symbolic tensor's batch size is not known: refused)"""
    if isinstance(x, KerasTensor):
        lx.refuse("size", f"the batch size of {x.shape} is not known while the graph is built; use "
                  "keras.ops.shape(x)[1:] for a sample's")
    return np.size(x)


def dtype(x):
    """keras.ops.dtype: the dtype's name (a symbolic tensor's as Keras reports it: ops_cast.py)"""
    return (x.dtype or "float32") if isinstance(x, KerasTensor) else str(np.asarray(x).dtype)


def is_tensor(x):
    """keras.ops.is_tensor: True for what boundfit's ops compute on (NumPy arrays) and symbolic tensors"""
    return isinstance(x, (np.ndarray, np.generic, KerasTensor))


def convert_to_numpy(x):
    """keras.ops.convert_to_numpy: an array of x; a symbolic tensor has no values yet (refused)"""
    if isinstance(x, KerasTensor):
        lx.refuse("convert_to_numpy", "a symbolic tensor has no values while the graph is built; call the model "
                  "(model.predict) or the layer on arrays")
    return np.asarray(x)
