"""The engine's primitives as small functions over symbolic tensors, what the
composed keras.ops families (ops_shape.py, ops_nan.py, ops_linalg.py,
ops_nn.py, ops_image.py) are written on, as JAX writes NumPy on lax: Binary
and Unary (elementwise, NumPy's broadcasting), Reduce (any axes), Gather
(take / take_along_axis at constant or symbolic positions), Slice, Reshape,
Permute, Concatenate, Const (an array per sample), MatMul. Axes here are
Keras's (0 the batch axis) unless named `a` (per sample: 0 the first axis
after the batch's). Nothing here is recorded for .keras files: the keras.ops
function that composes them records its own node (layers/opnode.py)."""

import functools
import numbers

import numpy as np

from .errors import OpNotSupportedError
from .layers.emath import Binary, MatMul, Unary, Weight
from .layers.index import Gather
from .layers.merge import Concatenate
from .layers.layer import Variable
from .layers.node import KerasTensor, tracing_anchor, tracing_where
from .layers.reduce import Reduce
from .layers.reshaping import Const, Permute, Reshape, Slice

NUMPY, NN, MATH, CORE = "keras.src.ops.numpy", "keras.src.ops.nn", "keras.src.ops.math", "keras.src.ops.core"


def sym(*xs):
    """any of xs (or of lists in xs) a symbolic tensor; a loss's mean (ops.LossMean) refuses"""
    for x in xs:
        if hasattr(x, "_refuse") and hasattr(x, "over_batch"):
            x._refuse()
        if isinstance(x, (list, tuple)) and sym(*x):
            return True
    return any(isinstance(x, KerasTensor) for x in xs)


def weight(op, v, like=None):
    """A custom layer's weight (add_weight) as a tensor of the graph: its Weight node (made once, so every use
    shares the weight) on `like` or else on an input of the call() being traced, which gives only the batch size:
    per-sample shape v.shape, the same in every sample"""
    if v.dense is not None:
        refuse(op, f"the weight {v.name!r} is used by matmul too; boundfit holds a weight in one place")
    like = like if like is not None else tracing_anchor()
    if like is None:
        refuse(op, f"of the weight {v.name!r} outside a traced call(): use it inside its layer's call()")
    if v.holder is None:
        v.holder = Weight(v.shape, initializer=v.initializer, regularizer=v.regularizer, constraint=v.constraint,
                          name=f"{v.layer.name}_{v.name}")
        v.holder.trainable = v.trainable
    return v.holder(like)


def refuse(op, hint):
    raise OpNotSupportedError(f"keras.ops.{op} on a symbolic tensor{tracing_where()} is not supported by boundfit's "
                              f"graphs: {hint}")


def arrays_only(op, why):
    """keras.ops.<op> computed on arrays (NumPy, Keras's values) and refused by name on a symbolic tensor (any
    argument, in lists too), saying why; marked for tools/keras_coverage.py"""
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if sym(*args, *kwargs.values()):
                refuse(op, why)
            return fn(*args, **kwargs)
        call._boundfit_arrays_only = True
        return call
    return wrap


def batched(op, *xs):
    for x in xs:
        if isinstance(x, KerasTensor) and x._nobatch:
            refuse(op, f"of a tensor without a batch axis (shape {x.shape}, a sum over the batch)")


def axis_of(op, axis, ndim):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise ValueError(f"keras.ops.{op}: axis {axis!r} is out of range for a tensor of rank {ndim}")
    return int(axis) % ndim


def sample_axis(op, x, axis):
    """Keras's axis of symbolic x as a per-sample axis (0 the first after the batch's); None and the batch axis,
    which mix the samples, refused by name"""
    batched(op, x)
    if axis is None:
        refuse(op, "axis=None takes in the batch axis with the others, mixing the samples; give a sample axis")
    a = axis_of(op, axis, x.ndim)
    if a == 0:
        refuse(op, "along the batch axis (axis 0), which mixes the samples; give a sample axis (>= 1)")
    return a - 1


def sample_axes(op, x, axis):
    """several axes as sample_axis: sorted per-sample axes"""
    axes = (axis,) if axis is None or isinstance(axis, numbers.Integral) else tuple(axis)
    return tuple(sorted({sample_axis(op, x, a) for a in axes}))


def static(op, x, a=None):
    """x's per-sample shape (or axis a's length), refusing a variable length"""
    ps = x._ps if a is None else (x._ps[a],)
    if None in ps:
        refuse(op, f"the tensor's shape {x.shape} has a variable length")
    return x._ps if a is None else x._ps[a]


def scalar(c):
    if isinstance(c, numbers.Real) and not isinstance(c, bool):
        return float(c)
    if isinstance(c, np.ndarray) and c.ndim == 0 and c.dtype.kind in "biuf":
        return float(c)
    return None


def const(a, like):
    """an array as a per-sample constant beside symbolic `like` (Const: 1 to 3 axes; more through a Reshape)"""
    a = np.asarray(a, np.float32)
    if 1 <= a.ndim <= 3:
        return Const(a)(like)
    return Reshape(a.shape)(Const(a.reshape(-1))(like))


def reshape(x, ps):
    ps = tuple(int(d) for d in ps)
    return x if tuple(x._ps) == ps else Reshape(ps)(x)


def permute(x, perm):
    """x's sample axes in the order perm (per-sample axes)"""
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else Permute(tuple(p + 1 for p in perm))(x)


def concat(xs, a):
    return xs[0] if len(xs) == 1 else Concatenate(axis=a + 1)(list(xs))


def take(x, idx, a):
    """x at the constant positions idx along per-sample axis a (idx's axes replace it): Gather"""
    idx = np.asarray(idx)
    if idx.ndim == 0:
        y = Gather(a)([x, const(idx.reshape(1), x)])
        return reshape(y, tuple(n for d, n in enumerate(y._ps) if d != a))
    return Gather(a)([x, const(idx, x)])


def along(x, ids, a):
    """take_along_axis of x at symbolic ids (x's rank) along per-sample axis a: Gather"""
    return Gather(a, along=True)([x, ids])


def cut(x, a, start, stop, step=1):
    """x[..., start:stop:step, ...] along per-sample axis a (static, positive step): Slice"""
    n = len(x._ps)
    begin, steps, length = [0] * n, [1] * n, [-1] * n
    begin[a], steps[a], length[a] = start, step, len(range(start, stop, step))
    return Slice(begin, steps, length)(x)


def _operand(v, like):
    if isinstance(v, KerasTensor):
        return v
    a = np.asarray(v, np.float32)
    while a.ndim > len(like._ps) and a.shape[0] == 1:
        a = a[0]
    if a.ndim > len(like._ps):
        refuse("(composed op)", f"an array of shape {a.shape} against {like.shape}: an array has no batch axis")
    return const(a.reshape((1,) * (len(like._ps) - a.ndim) + a.shape) if a.ndim else a.reshape((1,) * max(
        len(like._ps), 1)), like)


def binary(op, x1, x2):
    """op(x1, x2) elementwise, NumPy's broadcasting with the batch axes aligned: a tensor and a number, Unary; two
    operands (tensors, arrays), Binary (an array right-aligned to the tensor's sample axes)"""
    c1, c2 = scalar(x1), scalar(x2)
    if isinstance(x1, KerasTensor) and c2 is not None:
        return Unary(op, c2)(x1)
    if isinstance(x2, KerasTensor) and c1 is not None:
        return Unary(op, c1, left=True)(x2)
    like = x1 if isinstance(x1, KerasTensor) else x2
    a, b = _operand(x1, like), _operand(x2, like)
    if len(a._ps) != len(b._ps):
        short, other = (a, b) if len(a._ps) < len(b._ps) else (b, a)
        if not short._nobatch and not other._nobatch and isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
            refuse(op, f"of shapes {a.shape} and {b.shape}: NumPy's broadcasting would line the batch axis of one up "
                   "with a sample axis of the other; give both the same rank")
        pad = reshape(short, (1,) * (len(other._ps) - len(short._ps)) + static(op, short))
        a, b = (pad, other) if short is a else (other, pad)
    return Binary(op)([a, b])


def add(x1, x2):
    return binary("add", x1, x2)


def sub(x1, x2):
    return binary("subtract", x1, x2)


def mul(x1, x2):
    return binary("multiply", x1, x2)


def div(x1, x2):
    return binary("divide", x1, x2)


def unary(op, x, **params):
    return Unary(op, **params)(x)


def reduce(op, x, axes, keepdims=False):
    """op over per-sample axes `axes` (a tuple): Reduce"""
    return Reduce(op, tuple(a + 1 for a in axes), keepdims)(x) if axes else x


def matmul(a, b):
    """(M, K) @ (K, N) per sample: MatMul"""
    return MatMul()([a, b])


def to_list(op, xs):
    if not isinstance(xs, (list, tuple)) or not xs:
        raise ValueError(f"keras.ops.{op}: expects a non-empty list of tensors")
    return list(xs)
