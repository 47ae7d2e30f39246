"""keras.ops for boundfit: on arrays they compute eagerly (NumPy, Keras's
semantics); on symbolic tensors (inside a custom layer's call(), a Lambda,
a subclassed model or a functional graph) each becomes a node of the graph
built from the engine's layers, so it is planned and differentiated like
any layer:

- elementwise math (ops_elementwise.py): every unary math function (sqrt,
  sin, erf, round, isnan, log_sigmoid, ...) is the engine's unary map
  (Unary); every binary op (power, mod, arctan2, logaddexp, equal,
  logical_and, maximum, x / y, ...) of a tensor and a number is Unary with
  that number as an operand, of two tensors (or a tensor and a custom
  layer's weight, a Weight node, or an array, a Const) the engine's
  broadcasting binary op (Binary), NumPy's rules; comparisons and logical
  ops give 0 / 1 tensors without gradient; x + y, x - y, x * y, maximum,
  minimum of one shape stay Add / Subtract / Multiply / Maximum / Minimum
  (of size-1 axes of rank <= 2, RepeatVector copies first);
  x + c, x - c, c - x, x * c, x / c, -x (c a Python number): Unary with the number;
  maximum(x, 0): relu; clip: two Unary;
  where(condition, x1, x2) = x2 + condition * (x1 - x2);
- matmul of two batches of matrices (B, M, K) @ (B, K, N), of a tensor and
  a 2-D array: MatMul (a product per sample); layers.Dot likewise;
  tensordot of two symbolic tensors of one shape over all their axes,
  batch included (tensordot(a, b, 2) of two (B, E)): Multiply, then
  BatchReduce, one number without a batch axis (the same in every sample
  of the engine's batch), which broadcasts back onto samples as NumPy
  does; any other tensordot / dot of two symbolic tensors raises; of a
  tensor and a custom weight or array (axes=1): matmul;
- einsum of a tensor and an array, or of two batches of matrices
  (ops_einsum.py): the matrix products above;
- one_hot(ids, n): an Embedding with a frozen identity table; take,
  take_along_axis, cumsum, cumprod, sort, argsort, top_k: the engine's
  index primitives Gather, Scan and ArgSort (ops_index.py);
- min: -max(-x); eye / ones / zeros: arrays (Keras files hold the Unary /
  Binary / MatMul pieces as Keras's operation nodes, a Weight as an
  Embedding of constant ids: saving/keras_ops.py, saving/keras_graph.py);
- concatenate, stack (axis >= 1): Concatenate (and Reshape);
- reshape (batch axis first, -1 or None), expand_dims, squeeze: Reshape;
  transpose with the batch axis first: Permute;
- relu, sigmoid, tanh, softmax (last axis), gelu, silu / swish, elu, selu,
  softplus, softsign, relu6, leaky_relu, hard_sigmoid, exp: Activation;
- sum, mean, max, min, amax, amin, prod, argmax, argmin, any, all,
  logsumexp over any set of axes, keepdims: Reduce (the engine's REDUCE;
  with the batch axis BATCH_REDUCE, whose result without keepdims has no
  batch axis and is the same in every sample of the engine's batch; sum /
  mean with no axis: BatchReduce; in a loss function or a custom layer's
  call() a LossMean, below); argmax / argmin / any / all give float
  positions / 0 / 1 (no gradient); var, std, count_nonzero,
  linalg.norm (vector norms, Frobenius), nn.moments, nn.log_softmax
  (x - logsumexp), softmax over other axes (exp(x - logsumexp)),
  nn.normalize: compositions of them;
- one number per sample (Keras's (B,) tensors: x[:, i] of (B, D), squeeze,
  Input(shape=())) takes arithmetic, activations, Embedding (ids) and
  Reshape; NumPy's broadcasting of it against (B, 1) or (B, E) would line the
  batch axis up with a sample axis and raises naming the op;
- matmul(x, w) with w a custom layer's 2-D weight (add_weight): a bias-free
  Dense whose kernel is w;
- x[:, a:b:s], x[:, i], x[..., j] (the batch axis whole, positive steps):
  Slice (then Reshape for an integer index), which Keras files hold as
  Keras's GetItem operation (saving/keras_graph.py);
- conv / conv_transpose / depthwise_conv / separable_conv with a constant
  or a custom layer's weight as kernel: the convolution layers holding it
  (ops_conv.py); ctc_loss: its recursion unrolled (ops_ctc.py); i0: a
  rational approximation (ops_special.py); rearrange: Reshape and Permute;
  keras.ops.numpy: the NumPy ops' namespace (ops_numpy_names.py);
- cast to a float type: the tensor itself (everything runs in float32);
  shape: the static shape; arange: an array, which a layer called on it
  inside a custom layer's call() reads as a per-sample constant (Const;
  in Keras files the operations zeros_like(x[:, 0, None]) + the values).

While a custom loss function or a regularizer is traced (loss_trace.py),
mean over every axis (the batch's too) or over a sample's only axis gives a
LossMean, which only the loss's last op may give: the engine's mean of the
traced values is that mean (Keras's sum_over_batch_size); sum over every
axis gives one too (an activity regularizer's value). Inside a custom
layer's call() a mean or sum over every axis gives one for add_loss().

Each call that becomes layers of other kinds (mean, clip, where, softmax,
reshape, x + 1.0, x[:, 1], one_hot ...) is recorded as the one operation
node Keras's graph has for it (layers/opnode.py: its class, module, the
call's arguments), which .keras files hold (saving/keras_graph.py).

Any other op on a symbolic tensor raises OpNotSupportedError naming the op
and the layer whose call() used it, never silently computing something else.
"""

import builtins
import functools
import math
import numbers
import sys
import types

import numpy as np

from . import activations, ops_elementwise as _ew, ops_lax as _lx, ops_stacked as _stacked
from .layers.core import Activation, Dense
from .layers.embedding import Embedding
from .layers.emath import Binary, MatMul, Unary
from .layers.merge import Add, Concatenate, Maximum, Minimum, Multiply, Subtract
from .layers.layer import Variable
from .layers.node import KerasTensor, tracing_where
from .layers.opnode import record
from .layers.reduce import BatchReduce, Reduce
from .layers.reshaping import Const, Permute, RepeatVector, Reshape, Slice
from .errors import OpNotSupportedError
from .ops_stacked import Stacked
from .ops_index import argsort, cumprod, cumsum, sort, take, take_along_axis, top_k  # noqa: F401 - keras.ops names
from .ops_einsum import einsum  # noqa: F401 - keras.ops name
from .ops_shape import (  # noqa: F401 - keras.ops names, composed of the engine's primitives
    append, array_split, broadcast_to, depth_to_space, diag, diagflat, diagonal, dsplit, dstack, extract_sequences,
    flip, fliplr, flipud, hsplit, hstack, moveaxis, pad, ravel, repeat, roll, rot90, slice, slice_update,
    space_to_depth, split, swapaxes, tile, trace, tril, triu, unstack, vsplit, vstack)
from .ops_stats import (  # noqa: F401
    average, cdist, diff, digitize, in_top_k, isin, median, nanargmax, nanargmin, nancumprod, nancumsum, nanmax,
    nanmean, nanmin, nanprod, nanstd, nansum, nanvar, percentile, ptp, quantile, searchsorted, trapezoid)
from .ops_create import (  # noqa: F401
    array, bartlett, blackman, convert_to_numpy, dtype, empty, empty_like, full, geomspace, hamming, hanning,
    identity, is_tensor, isreal, kaiser, linspace, logspace, ndim, saturate_cast, size, tri)
from .ops_compose import (  # noqa: F401
    allclose, cross, inner, kron, ldexp, outer, select, unravel_index, vander, vdot)
from .ops_nn import (  # noqa: F401
    average_pool, batch_normalization, binary_crossentropy, categorical_crossentropy, dot_product_attention, glu,
    layer_normalization, max_pool, multi_hot, psnr, rms_normalization, sparse_categorical_crossentropy, sparsemax)
from .ops_image import image  # noqa: F401 - keras.ops.image
from .ops_fft import fft, fft2, ifft2, irfft, istft, rfft, stft  # noqa: F401
from .ops_bitwise import (  # noqa: F401
    bitwise_and, bitwise_invert, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor,
    left_shift, right_shift)
from .ops_windows import adaptive_average_pool, adaptive_max_pool, fold, unfold  # noqa: F401
from .ops_control import (  # noqa: F401
    associative_scan, cond, custom_gradient, fori_loop, jvp, map, scan, switch, vectorize, vectorized_map,
    while_loop)
from .ops_arrays import (  # noqa: F401 - on arrays only
    argpartition, bincount, corrcoef, correlate, gcd, histogram, lcm, meshgrid, nextafter, nonzero, polar, scatter,
    scatter_update, segment_max, segment_min, segment_prod, segment_sum, unique, view, view_as_complex, view_as_real)
from .ops_special import i0, nanmedian, nanpercentile, nanquantile  # noqa: F401
from .ops_rearrange import rearrange  # noqa: F401
from .ops_ctc import ctc_decode, ctc_loss  # noqa: F401 - on arrays only
from .ops_conv import conv, conv_transpose, depthwise_conv, separable_conv  # noqa: F401
from .ops_numpy_names import NAMES as _NUMPY_NAMES
from . import ops_cast as _cast, ops_linalg as _linalg
from .ops_linalg import (  # noqa: F401 - on arrays only
    cholesky, cholesky_inverse, det, eig, eigh, inv, logdet, lstsq, lu_factor, matrix_rank, pinv, qr, slogdet, solve,
    solve_triangular, svd)


# the modules of Keras's operation classes, for the nodes a .keras file holds (layers/opnode.py)
NUMPY, NN, MATH = "keras.src.ops.numpy", "keras.src.ops.nn", "keras.src.ops.math"


def _sym(*xs):
    for x in xs:
        if isinstance(x, LossMean):
            x._refuse()
    return builtins.any(isinstance(x, KerasTensor) for x in xs)


def _unsupported(op, hint=""):
    raise OpNotSupportedError(f"keras.ops.{op} on a symbolic tensor{tracing_where()} is not supported by boundfit's "
                              f"graphs yet{': ' + hint if hint else ''}. Write it with layers (boundfit.layers), "
                              "or compute it on arrays outside the model")


class LossMean:
    """ops.mean (or, total=True, ops.sum) of traced values `x` over every axis
    (over_batch) or over a sample's only axis, in a loss function, an
    add_loss() value or an activity regularizer: the reduction the engine
    takes of x (boundfit.losses MEAN / ADDED). A number may multiply or
    divide it (the factor goes into x); in other math (a ratio of two sums
    over the batch: keras.io's NER loss) it is a tensor: over every axis one
    number for the batch (a BatchReduce, which mixes its samples), else the
    per-sample mean."""

    def __init__(self, x, over_batch, total=False):
        self.x, self.over_batch, self.total = x, bool(over_batch), bool(total)

    def _op(self):
        return f"keras.ops.{'sum' if self.total else 'mean'}{' over every axis' if self.over_batch else ''}"

    def _refuse(self, *args, **kwargs):
        raise OpNotSupportedError(f"{self._op()} on a symbolic tensor{tracing_where()} is supported only as a loss's "
                                  "value (a loss function's last op, what add_loss() is given, an activity "
                                  "regularizer's result) or in arithmetic (+ - * / ** with tensors and numbers); "
                                  "keras.ops functions cannot take it yet, nor can it become a Python number")

    def tensor(self):
        """The value as a tensor of the graph."""
        if self.over_batch:
            return BatchReduce("sum" if self.total else "mean")(self.x)
        return Reduce("sum" if self.total else "mean", (1,), False)(self.x)

    def _scaled(self, c):
        return LossMean(multiply(self.x, _scalar(c)), self.over_batch, self.total)

    def __mul__(self, c):
        return self._scaled(c) if _scalar(c) is not None else self.tensor() * _tensor_of(c)

    def __rmul__(self, c):
        return self._scaled(c) if _scalar(c) is not None else _tensor_of(c) * self.tensor()

    def __truediv__(self, c):
        if _scalar(c) is not None and _scalar(c) != 0:
            return self._scaled(1.0 / _scalar(c))
        return self.tensor() / _tensor_of(c)

    def __add__(self, c):
        return self.tensor() + _tensor_of(c)

    def __radd__(self, c):
        return _tensor_of(c) + self.tensor()

    def __sub__(self, c):
        return self.tensor() - _tensor_of(c)

    def __rsub__(self, c):
        return _tensor_of(c) - self.tensor()

    def __rtruediv__(self, c):
        return _tensor_of(c) / self.tensor()

    def __neg__(self):
        return -self.tensor()

    def __pow__(self, c):
        return self.tensor() ** _tensor_of(c)

    __array__ = __getitem__ = __lt__ = __le__ = __gt__ = __ge__ = __float__ = __bool__ = _refuse
    __array_ufunc__ = None


def _tensor_of(x):
    """A LossMean as its tensor; anything else as it is."""
    return x.tensor() if isinstance(x, LossMean) else x


_LOSS_TRACING = []   # non-empty while loss_trace traces a loss function or a regularizer


def _scalar(c):
    if isinstance(c, numbers.Real) and not isinstance(c, bool):
        return float(c)
    if isinstance(c, np.ndarray) and c.ndim == 0 and c.dtype.kind in "biuf":
        return float(c)
    return None


def _static(x, what):
    if None in x._ps:
        _unsupported(what, f"the tensor's shape {x.shape} has a variable length")
    return x._ps


def _batched(op, *xs):
    """op reads axes counted from the batch axis: refuse a tensor without one (a sum over the batch)."""
    for x in xs:
        if isinstance(x, KerasTensor) and x._nobatch:
            _unsupported(op, f"of a tensor without a batch axis (shape {x.shape}, a sum over the batch such as "
                         "ops.tensordot of two tensors): only arithmetic and activations take it")


def _align(op, x1, x2):
    """Two symbolic tensors at one per-sample rank, as NumPy broadcasts their whole shapes: a tensor without a
    batch axis (shape s) gets leading size-1 axes to the other's per-sample rank (it is the same in every sample);
    two tensors with batch axes must have one rank, else NumPy would line a batch axis up with a sample axis
    ((None,) + (None, 1) is (None, None)), mixing the samples."""
    if len(x1._ps) == len(x2._ps):
        return x1, x2
    if not x1._nobatch and not x2._nobatch:
        _unsupported(op, f"of shapes {x1.shape} and {x2.shape}: NumPy's broadcasting, which Keras follows, lines "
                     "the batch axis of one up with a sample axis of the other ((None,) and (None, 1) give "
                     "(None, None)), mixing the samples; give both the same rank first (keras.ops.expand_dims(x, -1) "
                     "or keras.ops.squeeze(x, -1))")
    short, other = (x1, x2) if len(x1._ps) < len(x2._ps) else (x2, x1)
    if not short._nobatch:
        _unsupported(op, f"of shapes {x1.shape} and {x2.shape}: the tensor without a batch axis has more axes than "
                     "the other's samples")
    pad = Reshape((1,) * (len(other._ps) - len(short._ps)) + _static(short, op))(short)
    return (pad, other) if short is x1 else (other, pad)


# ---- arithmetic ----

def _commutative(op, npfn, cls, on_scalar, x1, x2):
    """add / multiply: of two tensors, the merge layer `cls` (broadcast: Binary); of a tensor and a Python
    number c, on_scalar(c); of a tensor and a custom layer's weight or an array, Binary."""
    if not _sym(x1, x2):
        return npfn(x1, x2)
    if isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
        return _same_shapes(op, cls, x1, x2)
    x, c = (x1, _scalar(x2)) if isinstance(x1, KerasTensor) else (x2, _scalar(x1))
    if c is None:
        return _binary(op, x1, x2)
    return on_scalar(c)(x)


def _keras_node(cls, module=NUMPY):
    """fn(x1, x2, ...) on symbolic tensors recorded as Keras's node `cls` of those arguments (layers/opnode.py)"""
    def wrap(fn):
        @functools.wraps(fn)
        def op(*args):
            y = fn(*args)
            return record(y, cls, module, {}, list(args)) if _sym(*args) else y
        return op
    return wrap


@_keras_node("Add")
def add(x1, x2):
    return _commutative("add", np.add, Add, lambda c: Unary("add", c), x1, x2)


@_keras_node("Subtract")
def subtract(x1, x2):
    if not _sym(x1, x2):
        return np.subtract(x1, x2)
    if isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
        return _same_shapes("subtract", Subtract, x1, x2)
    if isinstance(x1, KerasTensor) and _scalar(x2) is not None:
        return Unary("subtract", _scalar(x2))(x1)
    if isinstance(x2, KerasTensor) and _scalar(x1) is not None:
        return Unary("subtract", _scalar(x1), left=True)(x2)
    return _binary("subtract", x1, x2)


@_keras_node("Multiply")
def multiply(x1, x2):
    return _commutative("multiply", np.multiply, Multiply, lambda c: Unary("multiply", c), x1, x2)


@_keras_node("Divide")
def divide(x1, x2):
    if not _sym(x1, x2):
        return np.true_divide(x1, x2)
    c = _scalar(x2) if isinstance(x1, KerasTensor) else None
    if c is not None:
        if c == 0:
            _unsupported("divide", "by the number 0")
        return Unary("multiply", 1.0 / c)(x1)
    c = _scalar(x1) if isinstance(x2, KerasTensor) else None
    if c is not None:
        return Unary("divide", c, left=True)(x2)
    return _binary("divide", x1, x2)


true_divide = _keras_node("TrueDivide")(divide.__wrapped__)   # x / y: the node Keras writes for it


@_keras_node("Negative")
def negative(x):
    if not _sym(x):
        return np.negative(x)
    return Unary("negative")(x)


def _same_shapes(op, cls, x1, x2):
    """two tensors: the merge layer of one shape; size-1 axes of rank <= 2 by RepeatVector (the layers Keras
    files hold), any other broadcast of one rank by Binary"""
    x1, x2 = _align(op, x1, x2)
    if x1._ps != x2._ps:
        if _repeatable(x1, x2):
            x1, x2 = _broadcast(op, x1, x2)
        else:
            return _binary(op, x1, x2)
    return cls()([x1, x2])


def _repeatable(x1, x2):
    pa, pb = x1._ps, x2._ps
    return len(pa) == len(pb) <= 2 and None not in pa and None not in pb and \
        builtins.all(p == q or 1 in (p, q) for p, q in zip(pa, pb))


def _broadcast(op, x1, x2):
    """Two tensors to one shape by NumPy's rules on their whole shapes (the
    batch axes agree, so the ranks must too), for per-sample shapes of rank
    <= 2 with static sizes: the size-1 axes are copied out with RepeatVector
    (and Reshape / Permute), whose backward sums them back."""
    pa, pb = x1._ps, x2._ps
    want = tuple(p if p != 1 else q for p, q in zip(pa, pb))
    return _expand(x1, pa, want), _expand(x2, pb, want)


def _expand(x, ps, want):
    """x (per-sample shape ps, padded to want's rank) copied out to want."""
    if ps == want:
        return x
    if len(want) == 1:                                   # (1,) -> (D,)
        return Reshape(want)(RepeatVector(want[0])(Reshape((1,))(x)))
    T, D = want
    if ps == (1, D):                                     # a row for every step
        return RepeatVector(T)(Reshape((D,))(x))
    if ps == (T, 1):                                     # a column for every feature
        return Permute((2, 1))(RepeatVector(D)(Reshape((T,))(x)))
    return RepeatVector(T)(Reshape((D,))(RepeatVector(D)(Reshape((1,))(x))))   # (1, 1)


def _operand(op, v, like):
    """v as a tensor of the graph beside the symbolic tensor `like`: itself; a custom layer's weight
    (add_weight) as its Weight node; an array as a constant (Const) - both without a batch axis, their shape
    right-aligned to like's per-sample shape (NumPy's broadcasting) by a Reshape with leading 1s."""
    if isinstance(v, KerasTensor):
        return v
    if isinstance(v, Variable):
        t, shape = _lx.weight(op, v, like), v.shape
    else:
        a = np.asarray(v, dtype=np.float32)
        if a.dtype.kind not in "biuf" and a.dtype != np.float32:
            _unsupported(op, f"an operand of type {type(v).__name__}")
        while a.ndim > len(like._ps) and a.shape[0] == 1:
            a = a[0]
        if a.ndim == 0:
            a = a.reshape(1)
        t, shape = Const(a)(like), a.shape
    if like._ps == () and tuple(shape) == (1,):   # (B,) with (1,): one number per sample
        return Reshape(())(t)
    if len(shape) > len(like._ps):
        _unsupported(op, f"an operand of shape {tuple(shape)} against {like.shape}: a weight or an array has no "
                     "batch axis, so it may not have more axes than a sample")
    if len(shape) < len(like._ps):
        t = Reshape((1,) * (len(like._ps) - len(shape)) + tuple(shape))(t)
    return t


def _binary(op, x1, x2):
    """op of two operands (tensors, custom weights, arrays) with NumPy's broadcasting of size-1 axes: Binary."""
    like = x1 if isinstance(x1, KerasTensor) else x2
    if not isinstance(like, KerasTensor):
        _unsupported(op, "no operand is a symbolic tensor")
    a, b = _align(op, _operand(op, x1, like), _operand(op, x2, like))
    pa, pb = a._ps, b._ps
    if builtins.any(p != q and 1 not in (p, q) or (p is None) != (q is None) for p, q in zip(pa, pb)):
        _unsupported(op, f"shapes {a.shape} and {b.shape} do not broadcast (NumPy's rules with the batch axes "
                     "aligned: each axis equal or 1)")
    return Binary(op)([a, b])


def _elementwise(op):
    """keras.ops.<op>(x1, x2) for a binary op of the engine (ops_elementwise.py): of a tensor and a number
    Unary(op, number, left=<the number is the left operand>), else Binary(op) with NumPy's broadcasting
    (maximum / minimum of two tensors of one shape: the merge layers Maximum / Minimum)"""
    merge = {"maximum": Maximum, "minimum": Minimum}.get(op)

    def fn(x1, x2):
        if not _sym(x1, x2):
            return _ew.EAGER[op](x1, x2)
        if merge and isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
            return _same_shapes(op, merge, x1, x2)
        if isinstance(x1, KerasTensor) and _scalar(x2) is not None:
            return Unary(op, _scalar(x2))(x1)
        if isinstance(x2, KerasTensor) and _scalar(x1) is not None:
            return Unary(op, _scalar(x1), left=True)(x2)
        return _binary(op, x1, x2)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"keras.ops.{op}: elementwise with NumPy's broadcasting (the engine's binary op {op!r})."
    return fn


globals().update({op: _elementwise(op) for op in ("minimum", "greater", "greater_equal", "less", "less_equal",
                                                  *_ew.BINARY_NAMES)})
def _unary(fn):
    """ops_elementwise's unary function, refusing a loss's mean (LossMean) first"""
    @functools.wraps(fn)
    def op(x, *args, **kwargs):
        _sym(x)
        return fn(x, *args, **kwargs)
    return op


globals().update({name: _unary(fn) for name, fn in _ew.UNARY.items()})
absolute = fabs = abs   # noqa: F821
hard_swish = hard_silu   # noqa: F821
real = conj = conjugate = copy = _ew.identity_like("real")
full_like = _ew.full_like


def zeros_like(x, dtype=None):
    """keras.ops.zeros_like: full_like(x, 0)"""
    return record(full_like(x, 0.0, dtype), "ZerosLike", NUMPY, {"dtype": None}, [x]) if _sym(x) else \
        np.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None):
    """keras.ops.ones_like: full_like(x, 1)"""
    return record(full_like(x, 1.0, dtype), "OnesLike", NUMPY, {"dtype": None}, [x]) if _sym(x) else \
        np.ones_like(x, dtype=dtype)


def maximum(x1, x2):
    """keras.ops.maximum: maximum(x, 0) is the relu Activation; otherwise the engine's binary op"""
    if isinstance(x1, KerasTensor) and _scalar(x2) == 0.0 or isinstance(x2, KerasTensor) and _scalar(x1) == 0.0:
        return Activation("relu")(x1 if isinstance(x1, KerasTensor) else x2)
    return _maximum(x1, x2)


_maximum = _elementwise("maximum")


def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """keras.ops.isclose: |x1 - x2| <= atol + rtol * |x2| (a 0 / 1 tensor on symbolic tensors)"""
    if not _sym(x1, x2):
        return np.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if equal_nan:
        _unsupported("isclose", "equal_nan=True")
    close = less_equal(abs(subtract(x1, x2)), add(multiply(abs(x2), float(rtol)), float(atol)))   # noqa: F821
    inf1, inf2 = isinf(x1), isinf(x2)   # noqa: F821 - as jnp.isclose: an infinity is close only to itself
    y = add(multiply(close, logical_not(logical_or(inf1, inf2))),   # noqa: F821
            multiply(logical_and(inf1, inf2), equal(x1, x2)))   # noqa: F821
    return record(y, "Isclose", NUMPY, {"equal_nan": False}, [x1, x2, float(rtol), float(atol)])


def clip(x, x_min, x_max):
    if not _sym(x):
        return np.clip(x, x_min, x_max)
    y = minimum(maximum(x, x_min), x_max)
    return record(y, "Clip", NUMPY, {"x_min": x_min, "x_max": x_max}, [x])


def where(condition, x1=None, x2=None):
    """where(c, x1, x2) = x2 + c * (x1 - x2) for a 0 / 1 condition of the graph (a comparison); the
    condition gets no gradient (comparisons have none)."""
    if not _sym(condition, x1, x2):
        return np.where(condition, x1, x2)
    if x1 is None or x2 is None:
        _unsupported("where", "only where(condition, x1, x2): the indices of where(condition) have no static shape")
    if not isinstance(condition, KerasTensor):
        _unsupported("where", "a condition that is not a symbolic tensor")
    y = multiply(condition, x1) if _scalar(x2) == 0.0 else add(x2, multiply(condition, subtract(x1, x2)))
    return record(y, "Where", NUMPY, {}, [condition, x1, x2])

@_keras_node("Matmul")
def matmul(x1, x2):
    """x @ w for a custom layer's 2-D weight w (add_weight): a bias-free Dense
    whose kernel is w, shared by every use of w."""
    if isinstance(x2, Variable) and isinstance(x1, KerasTensor):
        if x2.holder is not None:
            _unsupported("matmul", f"the weight {x2.name!r} is used elementwise too; boundfit holds a weight in "
                         "one place")
        if len(x2.shape) != 2 or x1._ps[-1] != x2.shape[0]:
            _unsupported("matmul", f"of {x1.shape} and the weight {x2.name!r} of shape {x2.shape}")
        if x2.dense is not None and not isinstance(x2.dense, Dense):
            _unsupported("matmul", f"the weight {x2.name!r} is a convolution's kernel too (ops.conv); boundfit "
                         "holds a weight in one place")
        if x2.dense is None:
            x2.dense = Dense(x2.shape[1], use_bias=False, kernel_initializer=x2.initializer,
                             kernel_regularizer=x2.regularizer, kernel_constraint=x2.constraint,
                             name=f"{x2.layer.name}_{x2.name}")
            x2.dense.trainable = x2.trainable
        return x2.dense(x1)
    if not _sym(x1, x2):
        return np.matmul(x1, x2)
    if isinstance(x1, Variable) or isinstance(x2, Variable):
        _unsupported("matmul", "a custom layer's weight only on the right of a tensor (x @ w)")
    if isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
        if len(x1._ps) != 2 or len(x2._ps) != 2:
            _unsupported("matmul", f"of {x1.shape} and {x2.shape}: two symbolic tensors multiply per sample when "
                         "both are batches of matrices (B, M, K) @ (B, K, N); of rank 2 the product would mix the "
                         "samples of the batch")
        return _per_sample_matmul(x1, x2)
    if isinstance(x1, KerasTensor):                     # x @ A: A (K, N) for every sample
        a = np.asarray(x2, np.float32)
        if a.ndim != 2:
            _unsupported("matmul", f"of {x1.shape} and an array of shape {a.shape}: only a 2-D array")
        return _per_sample_matmul(x1, Const(a)(x1))
    a = np.asarray(x1, np.float32)                      # A @ x: A (M, K), x (B, K, N)
    if a.ndim != 2 or len(x2._ps) != 2:
        _unsupported("matmul", f"of an array of shape {a.shape} and {x2.shape}: only a 2-D array and a batch of "
                     "matrices")
    return _per_sample_matmul(Const(a)(x2), x2)


def _per_sample_matmul(a, b):
    """a @ b per sample ((M, K) @ (K, N), a (K,) as (1, K), b (K,) as (K, 1), that axis dropped after): MatMul"""
    pa, pb = a._ps, b._ps
    if not 1 <= len(pa) <= 2 or not 1 <= len(pb) <= 2 or None in pa or None in pb or \
            pa[-1] != pb[0 if len(pb) == 1 else -2]:
        _unsupported("matmul", f"of per-sample shapes {pa} and {pb}: (M, K) @ (K, N), (K,) @ (K, N) or (M, K) @ (K,) "
                     "of static sizes")
    A = Reshape((1, pa[0]))(a) if len(pa) == 1 else a
    B = Reshape((pb[0], 1))(b) if len(pb) == 1 else b
    y = MatMul()([A, B])
    if len(pa) == 1 or len(pb) == 1:
        keep = tuple(d for d, drop in zip(y._ps, (len(pa) == 1, len(pb) == 1)) if not drop)
        y = Reshape(keep or (1,))(y)
    return y


def _full_contraction(x1, x2, axes):
    """axes of tensordot(x1, x2, axes) that contract every axis of both, batch axes included: ndim, or
    ([0..ndim), [0..ndim))"""
    n = x1.ndim
    if isinstance(axes, numbers.Integral) and not isinstance(axes, bool):
        return int(axes) == n == x2.ndim
    try:
        a, b = ([int(i) % n for i in ax] for ax in axes)
    except (TypeError, ValueError):
        return False
    return n == x2.ndim and a == b == list(range(n))


def batch_reduce(op, x):
    """The sum / mean of a symbolic tensor over the batch and all its axes: one number without a batch axis
    (the engine's BATCH_REDUCE, the same in every sample)."""
    _batched(op, x)
    return BatchReduce(op)(x)


def tensordot(x1, x2, axes=2):
    """Of two symbolic tensors of one shape contracting every axis, batch included (tensordot(a, b, 2) of two
    (B, E) tensors, as keras.io's collaborative filtering writes): sum(a * b) over the whole batch, one number
    without a batch axis (Multiply, then BatchReduce), which mixes the samples of a batch. Every other tensordot
    of two symbolic tensors keeps both batch axes or contracts one, and raises: use layers.Dot or ops.matmul
    for a product per sample. A tensor and a custom weight or array with axes=1: matmul."""
    if not _sym(x1, x2):
        return np.tensordot(x1, x2, axes)
    if isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor):
        _batched("tensordot", x1, x2)
        if _full_contraction(x1, x2, axes) and x1._ps == x2._ps:
            _static(x1, "tensordot")
            return batch_reduce("sum", multiply(x1, x2))
        _unsupported("tensordot", f"of two symbolic tensors {x1.shape} and {x2.shape} (axes={axes!r}): the result "
                     "keeps both batch axes or contracts one with a sample axis, which boundfit does not compute "
                     "(it computes tensordot of two tensors of one shape over all their axes, batch included: one "
                     "number); for a product per sample use layers.Dot(axes=...) or ops.matmul (batched)")
    if axes == 1 or axes in (([-1], [0]), ((-1,), (0,))):
        return record(matmul(x1, x2), "Tensordot", NUMPY, {"axes": axes}, [x1, x2])
    _unsupported("tensordot", f"of a tensor and a weight or array only with axes=1, got axes={axes!r}")


def dot(x1, x2):
    """numpy.dot: of two symbolic tensors it mixes samples (tensordot); of a tensor and a weight: matmul."""
    if not _sym(x1, x2):
        return np.dot(x1, x2)
    return record(tensordot(x1, x2, 1), "Dot", NUMPY, {}, [x1, x2]) if not (
        isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor)) else \
        _unsupported("dot", "of two symbolic tensors: numpy.dot mixes the samples of the batch; use layers.Dot or "
                     "ops.matmul for a product per sample")


def eye(N, M=None, k=0, dtype=None):
    return np.eye(N, M, k, dtype=dtype or np.float32)


def ones(shape, dtype=None):
    return np.ones(shape, dtype=dtype or np.float32)


def zeros(shape, dtype=None):
    return np.zeros(shape, dtype=dtype or np.float32)


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """one_hot of integer ids: an Embedding whose frozen table is the identity (ids out of range raise)."""
    if not _sym(x):
        ids = np.asarray(x).astype(np.int64)
        out = (ids[..., None] == np.arange(num_classes)).astype(dtype or np.float32)
        return np.moveaxis(out, -1, axis) if axis != -1 else out
    if axis != -1 or sparse:
        _unsupported("one_hot", "only axis=-1, dense")
    if len(x._ps) > 2:
        _unsupported("one_hot", f"ids of per-sample shape {x._ps}: (T,) or (T, K)")
    e = Embedding(int(num_classes), int(num_classes), name=None)
    e.set_weights([np.eye(num_classes, dtype=np.float32)])
    e.trainable = False
    return record(e(x), "OneHot", NN, {"num_classes": int(num_classes), "axis": axis, "dtype": "float32",
                                       "sparse": False}, [x])


def power(x1, x2):
    if not _sym(x1, x2):
        return np.power(x1, x2)
    return record(_power(x1, x2), "Power", NUMPY, {}, [x1, x2])


def _power(x1, x2):
    """x ** c, c ** x (a number c) and x1 ** x2 of two tensors: the engine's power (powf: NaN for x < 0 and a
    c that is not an integer, as NumPy; its gradients as jnp.power's)"""
    if isinstance(x1, KerasTensor) and _scalar(x2) == 1.0:
        return x1
    return _power_op(x1, x2)


_power_op = _elementwise("power")


def get_item(x, key):
    """keras.ops.get_item: x[key] (getitem)"""
    return getitem(x, key)


def getitem(x, key):
    """x[...]: basic slicing with the batch axis whole (x[:, 2], x[:, 1:-1], x[..., ::2]): the engine's Slice,
    then a Reshape dropping the axes given by an integer."""
    if not _sym(x):
        return np.asarray(x)[key]
    return record(_getitem(x, key), "GetItem", NUMPY, {}, [x, _keras_key(key)])


def _keras_key(key):
    """x[key]'s key as Keras serializes GetItem's (slices and ... as dicts)"""
    if isinstance(key, tuple):
        return [_keras_key(k) for k in key]
    if isinstance(key, builtins.slice):
        return {"class_name": "__slice__", "config": {"start": key.start, "stop": key.stop, "step": key.step}}
    if key is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    return int(key) if isinstance(key, (int, np.integer)) and not isinstance(key, bool) else key


def _getitem(x, key):
    _batched("slicing (x[...])", x)
    key = key if isinstance(key, tuple) else (key,)
    if len([k for k in key if k is Ellipsis]) > 1:
        _unsupported("slicing (x[...])", "one ... at most")
    if builtins.any(k is None for k in key):   # (ops.sum shadows sum)
        return _new_axes(x, key)
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (builtins.slice(None),) * (x.ndim - len(key) + 1) + key[at + 1:]
    key = key + (builtins.slice(None),) * (x.ndim - len(key))
    if len(key) > x.ndim:
        raise IndexError(f"too many indices for a tensor of shape {x.shape}")
    if key[0] != builtins.slice(None):
        _unsupported("slicing (x[...])", "the batch axis must stay whole (x[:, ...])")
    begin, step, length, drop = [], [], [], []
    for d, (k, n) in enumerate(zip(key[1:], x._ps)):
        if k == builtins.slice(None):
            begin, step, length = begin + [0], step + [1], length + [-1]
            continue
        if n is None:
            _unsupported("slicing (x[...])", f"axis {d + 1} of {x.shape} has a variable length")
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of range for axis {d + 1} of {x.shape}")
            begin, step, length, drop = begin + [int(k) % n], step + [1], length + [1], drop + [d]
        elif isinstance(k, builtins.slice):
            start, stop, s = k.indices(n)
            m = len(range(start, stop, s))
            if s <= 0 or m == 0:
                _unsupported("slicing (x[...])", f"{k} of axis {d + 1} is empty or reversed")
            begin, step, length = begin + [start], step + [s], length + [m]
        else:
            _unsupported("slicing (x[...])", f"index {k!r}: only integers and slices")
    y = Slice(begin, step, length)(x)
    if drop:
        kept = tuple(n for d, n in enumerate(y._ps) if d not in drop)   # (): one number per sample
        y = Reshape(tuple(-1 if n is None else n for n in kept))(y)
    return y


def _new_axes(x, key):
    """x[key] with new axes (None, as mask[:, None, :]): the slicing without them, then a Reshape putting in the
    axes of 1"""
    if key[0] is None:
        _unsupported("slicing (x[...])", "a new axis before the batch axis")
    rest = tuple(k for k in key if k is not None)
    y = _getitem(x, rest)
    full = list(key)
    if Ellipsis in full:
        at = full.index(Ellipsis)
        full[at:at + 1] = [builtins.slice(None)] * (x.ndim - len(rest) + 1)
    full += [builtins.slice(None)] * (x.ndim - builtins.sum(k is not None for k in full))
    axes, shape = iter(y._ps), []
    for k in full[1:]:
        if k is None:
            shape.append(1)
        elif isinstance(k, builtins.slice):
            shape.append(next(axes))
    if builtins.sum(n is None for n in shape) > 1:
        _unsupported("slicing (x[...])", f"a new axis in {x.shape} with more than one variable-length axis")
    return Reshape(tuple(-1 if n is None else n for n in shape))(y)


# ---- activations (keras.ops and keras.ops.nn) ----

def _activation(name, act_fn, keras_class, module=NN, defaults=None):
    """keras.ops.<name>: on a symbolic tensor an Activation, Keras's node `keras_class` in files (its config:
    the keyword options, Keras's defaults for those not given)"""
    def op(x, *args, **kwargs):
        if not _sym(x):
            return act_fn(x, *args, **kwargs)
        act = activations.get_id(_partial(act_fn, kwargs, args, name))
        return record(Activation(act)(x), keras_class, module, {**(defaults or {}), **kwargs}, [x])
    op.__name__ = name
    return op


def _partial(fn, kwargs, args, name):
    if args:
        raise TypeError(f"keras.ops.{name}: pass options by keyword")
    return functools.partial(fn, **kwargs) if kwargs else fn


relu = _activation("relu", activations.relu, "Relu")
sigmoid = _activation("sigmoid", activations.sigmoid, "Sigmoid")
tanh = _activation("tanh", activations.tanh, "Tanh", NUMPY)
silu = swish = _activation("silu", activations.silu, "Silu")
elu = _activation("elu", activations.elu, "Elu", defaults={"alpha": 1.0})
selu = _activation("selu", activations.selu, "Selu")
softplus = _activation("softplus", activations.softplus, "Softplus")
softsign = _activation("softsign", activations.softsign, "Softsign")
relu6 = _activation("relu6", activations.relu6, "Relu6")
leaky_relu = _activation("leaky_relu", activations.leaky_relu, "LeakyRelu", defaults={"negative_slope": 0.2})
hard_sigmoid = _activation("hard_sigmoid", activations.hard_sigmoid, "HardSigmoid")
exp = _activation("exp", activations.exponential, "Exp", NUMPY)


def gelu(x, approximate=True):
    """keras.ops.gelu: approximate=True by default (the layers' 'gelu' activation is exact)."""
    if not _sym(x):
        return activations.gelu(x, approximate=approximate)
    y = Activation(activations.get_id(_partial(activations.gelu, {"approximate": bool(approximate)}, (), "gelu")))(x)
    return record(y, "Gelu", NN, {"approximate": bool(approximate)}, [x])


def softmax(x, axis=-1):
    if isinstance(x, Stacked):
        return _stacked.softmax(_this, x, axis)
    if not _sym(x):
        x = np.asarray(x, dtype=np.float32)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    _batched("softmax", x)
    if axis in (-1, x.ndim - 1):
        return record(Activation("softmax")(x), "Softmax", NN, {"axis": axis}, [x])
    y = exp(subtract(x, logsumexp(x, axis=axis, keepdims=True)))   # over other axes: exp(x - logsumexp(x))
    return record(y, "Softmax", NN, {"axis": _axis_cfg(axis)}, [x])


# ---- shapes ----

def arange(start, stop=None, step=1, dtype=None):
    """An array (as keras.ops.arange on Python numbers); a layer called on it inside a custom layer's
    call() reads it as a per-sample constant (layers.Const)."""
    return np.arange(start, stop, step, dtype=dtype)


def shape(x):
    return x.shape if isinstance(x, KerasTensor) else np.shape(x)


def cast(x, dtype):
    """keras.ops.cast: on a symbolic tensor Keras 3's (JAX) semantics on the engine's float32 (ops_cast.py)."""
    if not _sym(x):
        return np.asarray(x).astype(dtype)
    return _cast.cast(x, dtype)


def convert_to_tensor(x, dtype=None):
    if isinstance(x, KerasTensor):
        return cast(x, dtype) if dtype is not None else x
    if isinstance(x, Variable):   # a custom layer's weight: its value, which the ops taking weights take
        return x
    return np.asarray(x, dtype=dtype)


def _axis(axis, ndim, op):
    if not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise ValueError(f"keras.ops.{op}: axis {axis!r} is out of range for a tensor of rank {ndim}")
    return axis % ndim


def reshape(x, newshape):
    if not _sym(x):
        return np.reshape(x, newshape)
    _batched("reshape", x)
    newshape = tuple(newshape)
    if not newshape or newshape[0] not in (-1, None):
        _unsupported("reshape", f"the new shape {newshape} must keep the batch axis first (-1 or None)")
    rest = newshape[1:]
    unknown = [k for k, d in enumerate(rest) if d is None]   # keras.ops.shape(x) of a variable-length axis
    if unknown and (len(unknown) > 1 or -1 in rest):
        _unsupported("reshape", f"to {newshape}: {len([d for d in rest if d in (None, -1)])} axes of unknown length "
                     "(None from keras.ops.shape of a variable-length axis, or -1); boundfit traces call() once for "
                     "every length (Keras traces it per shape), so at most one axis may be unknown: give the Input "
                     "fixed sizes")
    if unknown:   # the one unknown axis: what the others leave, as -1
        rest = tuple(-1 if d is None else d for d in rest)
        newshape = (newshape[0],) + rest
    if newshape[0] == -1 and -1 not in rest and None not in rest and (None in x._ps or math.prod(x._ps) !=
                                                                        math.prod(rest)):
        _unsupported("reshape", f"to {newshape} of shape {x.shape}: its leading -1 takes in more than the batch "
                     f"axis (Keras's result merges samples: (None,) + {tuple(rest)}), which boundfit's graphs keep "
                     "apart; keep the batch axis alone first and let a sample's axis take the -1, as "
                     f"layers.Reshape((-1,) + {tuple(rest)}) does")
    return record(Reshape(tuple(newshape[1:]))(x), "Reshape", NUMPY, {"newshape": list(newshape)}, [x])


def expand_dims(x, axis):
    if not _sym(x):
        return np.expand_dims(x, axis)
    _batched("expand_dims", x)
    a = _axis(axis, x.ndim + 1, "expand_dims")
    if a == 0:
        _unsupported("expand_dims", "at the batch axis")
    ps = list(_static(x, "expand_dims"))
    ps.insert(a - 1, 1)
    return record(Reshape(tuple(ps))(x), "ExpandDims", NUMPY, {"axis": axis}, [x])


def squeeze(x, axis=None):
    if not _sym(x):
        return np.squeeze(x, axis)
    _batched("squeeze", x)
    ps = _static(x, "squeeze")
    if axis is None:
        keep = [d for d in ps if d != 1]
    else:
        a = _axis(axis, x.ndim, "squeeze")
        if a == 0 or ps[a - 1] != 1:
            raise ValueError(f"keras.ops.squeeze: axis {axis} of shape {x.shape} does not have size 1")
        keep = [d for k, d in enumerate(ps) if k != a - 1]
    return record(Reshape(tuple(keep))(x), "Squeeze", NUMPY, {"axis": axis}, [x])   # (): one number per sample


def transpose(x, axes=None):
    if not _sym(x):
        return np.transpose(x, axes)
    _batched("transpose", x)
    if axes is None or _axis(axes[0], x.ndim, "transpose") != 0:
        _unsupported("transpose", "only with the batch axis kept first, e.g. axes=(0, 2, 1)")
    perm = [_axis(a, x.ndim, "transpose") for a in axes]
    return record(Permute(tuple(perm[1:]))(x), "Transpose", NUMPY, {"axes": list(axes)}, [x])


def concatenate(xs, axis=0):
    if not _sym(*xs):
        return np.concatenate(xs, axis=axis)
    _batched("concatenate", *xs)
    a = _axis(axis, xs[0].ndim, "concatenate")
    if a == 0:
        _unsupported("concatenate", "along the batch axis")
    return record(Concatenate(axis=a)(list(xs)), "Concatenate", NUMPY, {"axis": axis}, [list(xs)])


def stack(xs, axis=0):
    if not _sym(*xs):
        return np.stack(xs, axis=axis)
    _batched("stack", *xs)
    a = _axis(axis, xs[0].ndim + 1, "stack")
    if a == 0:   # Keras's (k, batch, ...): kept as the k tensors (ops_stacked.py)
        if not builtins.all(isinstance(t, KerasTensor) and t.shape == xs[0].shape for t in xs):
            _unsupported("stack", "along the batch axis of tensors of different shapes, or of arrays")
        return Stacked(xs)
    return record(concatenate([expand_dims(t, a) for t in xs], axis=a), "Stack", NUMPY, {"axis": axis}, [list(xs)])


# ---- reductions: the engine's REDUCE over any axes (layers/reduce.py), and what composes them ----

def _axes(x, axis, op):
    """axis of keras.ops (None, an int or several, negative from the end) as sorted axes counted from the batch
    axis 0; None: every axis, the batch's too"""
    if axis is None:
        return tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    return tuple(sorted({_axis(int(a), x.ndim, op) for a in axes}))


def _reduced(op, x, axis, keepdims):
    """op of symbolic x over axis: a Reduce (BATCH_REDUCE with the batch axis: without keepdims Keras's result
    has no batch axis); while a loss or a custom layer's call() is traced, a mean or sum over every axis (or a
    mean over a sample's only axis, in a loss) is the LossMean the engine takes of the loss"""
    _batched(op, x)
    raw = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis) if axis is not None else None
    if op == "mean" and not keepdims and ((_LOSS_TRACING or tracing_where()) and raw is None or _LOSS_TRACING and (
            raw is not None and x.ndim == 2 and len(raw) == 1 and _axis(raw[0], x.ndim, op) == 1)):
        return LossMean(x, over_batch=raw is None)   # a loss's value (a loss function, add_loss in a call())
    if op == "sum" and (_LOSS_TRACING or tracing_where()) and not keepdims and raw is None:
        return LossMean(x, over_batch=True, total=True)
    axes = _axes(x, axis, op)
    if not axes:
        return x                                  # nothing reduced (axis=()), as NumPy
    if op in ("argmax", "argmin") and len(axes) > 1 and axis is not None:
        raise ValueError(f"keras.ops.{op}: axis must be an int or None, got {axis!r}")
    if axis is None and not keepdims and op in BatchReduce.OPS:
        return BatchReduce(op)(x)                 # over the batch too: one number without a batch axis
    return Reduce(op, axes, keepdims)(x)


def _axis_cfg(axis):
    return list(axis) if isinstance(axis, (list, tuple)) else axis


def _reduction_node(cls, y, x, axis, keepdims, module=NUMPY, **extra):
    """y recorded as Keras's node cls(axis, keepdims, extra) of x; a loss's value or a tensor without a batch axis
    (a reduction over the batch: not written to .keras files) as it is"""
    if isinstance(y, LossMean) or y._nobatch:
        return y
    return record(y, cls, module, {"axis": _axis_cfg(axis), "keepdims": bool(keepdims), **extra}, [x])


def _np_logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x, np.float32)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    y = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return y if keepdims else np.squeeze(y, axis=axis)


def _reduce(op, npfn, cls, module=NUMPY, **extra):
    """keras.ops.<op>(x, axis=None, keepdims=False): the engine's REDUCE of that op, Keras's node cls in files"""
    def red(x, axis=None, keepdims=False, **kwargs):
        for k, v in kwargs.items():
            if k not in extra:
                raise TypeError(f"keras.ops.{op}() got an unexpected keyword argument {k!r}")
            if v is not None:
                if not _sym(x):
                    return npfn(x, axis=axis, keepdims=keepdims, **{k: v})
                _unsupported(op, f"{k}={v!r} (only None)")
        if op == "mean" and axis is None and not keepdims and isinstance(x, LossMean) and not x.over_batch and \
                not x.total:   # the batch's mean of a loss's per-sample means (a Keras loss in compute_loss)
            return LossMean(x.x, over_batch=True)
        if isinstance(x, Stacked) and op in ("sum", "mean", "max", "min"):
            return _stacked.reduce(_this, op, x, axis, keepdims)
        if not _sym(x):
            return npfn(x, axis=axis, keepdims=keepdims)
        return _reduction_node(cls, _reduced(op if op not in ("amax", "amin") else op[1:], x, axis, keepdims), x,
                               axis, keepdims, module, **extra)
    red.__name__ = op
    return red


mean = _reduce("mean", np.mean, "Mean")
sum = _reduce("sum", np.sum, "Sum")   # noqa: A001 - keras.ops' name
max = _reduce("max", np.max, "Max", initial=None)   # noqa: A001 - keras.ops' name
min = _reduce("min", np.min, "Min", initial=None)   # noqa: A001 - keras.ops' name
amax = _reduce("amax", np.amax, "Amax")
amin = _reduce("amin", np.amin, "Amin")
prod = _reduce("prod", np.prod, "Prod", dtype=None)
any = _reduce("any", np.any, "Any")   # noqa: A001 - keras.ops' name: a 0 / 1 float tensor on symbolic ones
all = _reduce("all", np.all, "All")   # noqa: A001 - keras.ops' name
logsumexp = _reduce("logsumexp", _np_logsumexp, "Logsumexp", MATH)
_argmax = _reduce("argmax", np.argmax, "Argmax")
_argmin = _reduce("argmin", np.argmin, "Argmin")


def argmax(x, axis=None, keepdims=False):
    """the first maximal position along axis (of the flattened tensor for None, the batch's axis too): a float
    tensor of the positions on symbolic tensors (no gradient; Keras's is int32)"""
    return _argmax(x, axis=axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    """the first minimal position, as argmax"""
    return _argmin(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    """mean(square(x - mean(x, axis, keepdims=True)), axis, keepdims), as jnp.var"""
    if not _sym(x):
        return np.var(x, axis=axis, keepdims=keepdims)
    d = subtract(x, _reduced("mean", x, axis, True))
    return _reduction_node("Var", _reduced("mean", square(d), axis, keepdims), x, axis, keepdims)


def std(x, axis=None, keepdims=False):
    """sqrt(var(x, axis, keepdims))"""
    if not _sym(x):
        return np.std(x, axis=axis, keepdims=keepdims)
    return _reduction_node("Std", sqrt(var(x, axis, keepdims)), x, axis, keepdims)


def count_nonzero(x, axis=None):
    """sum(|x| > 0, axis): a float count on symbolic tensors (Keras's is int32)"""
    if not _sym(x):
        return np.count_nonzero(x, axis=axis)
    y = sum(greater(abs(x), 0.0), axis=axis)
    return y if isinstance(y, LossMean) or y._nobatch else record(y, "CountNonzero", NUMPY, {"axis": _axis_cfg(axis)},
                                                                  [x])


def _vector_norm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return sqrt(sum(square(x), axis=axis, keepdims=keepdims))
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    if ord == float("inf"):
        return max(abs(x), axis=axis, keepdims=keepdims)
    if ord == float("-inf"):
        return min(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return sum(greater(abs(x), 0.0), axis=axis, keepdims=keepdims)
    if isinstance(ord, numbers.Real) and not isinstance(ord, bool):
        return power(sum(power(abs(x), float(ord)), axis=axis, keepdims=keepdims), 1.0 / float(ord))
    _unsupported("linalg.norm", f"ord={ord!r} of a vector")


def norm(x, ord=None, axis=None, keepdims=False):
    """keras.ops.linalg.norm: vector norms (ord None / 2, 1, inf, -inf, 0, p) over one axis, the 2-norm of the
    flattened tensor (axis=None, ord=None) and the Frobenius norm over two axes, by reductions; other matrix norms
    raise naming the op"""
    if not _sym(x):
        return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    _batched("linalg.norm", x)
    two = isinstance(axis, (list, tuple)) and len(axis) == 2
    if axis is None and ord is not None:
        _unsupported("linalg.norm", f"ord={ord!r} with axis=None (a matrix or vector norm of the whole tensor, batch "
                     "included): give the axis")
    if two and ord not in (None, "fro"):
        _unsupported("linalg.norm", f"the matrix norm ord={ord!r} (only 'fro' over two axes)")
    if isinstance(axis, (list, tuple)) and len(axis) > 2:
        raise ValueError(f"keras.ops.linalg.norm: axis {axis!r} names more than 2 axes")
    y = sqrt(sum(square(x), axis=axis, keepdims=keepdims)) if axis is None or two else \
        _vector_norm(x, ord, axis, keepdims)
    if isinstance(y, LossMean) or y._nobatch:
        return y
    return record(y, "Norm", "keras.src.ops.linalg", {"ord": ord, "axis": _axis_cfg(axis), "keepdims": keepdims}, [x])


def moments(x, axes, keepdims=False, synchronized=False):
    """keras.ops.nn.moments: (mean, variance) over axes (jnp.mean and jnp.var)"""
    if synchronized:
        _unsupported("nn.moments", "synchronized=True")
    if not _sym(x):
        return np.mean(x, axis=tuple(axes), keepdims=keepdims), np.var(x, axis=tuple(axes), keepdims=keepdims)
    return mean(x, axis=axes, keepdims=keepdims), var(x, axis=axes, keepdims=keepdims)


def log_softmax(x, axis=-1):
    """x - logsumexp(x, axis, keepdims=True)"""
    if isinstance(x, Stacked):
        return _stacked.softmax(_this, x, axis, log=True)
    if not _sym(x):
        x = np.asarray(x, np.float32)
        return x - _np_logsumexp(x, axis=axis, keepdims=True)
    y = subtract(x, logsumexp(x, axis=axis, keepdims=True))
    return record(y, "LogSoftmax", NN, {"axis": _axis_cfg(axis)}, [x])


def normalize(x, axis=-1, order=2, epsilon=None):
    """keras.ops.nn.normalize: x * min(rsqrt(sum(x**2, axis, keepdims)), 1 / epsilon) for order 2, else
    x / max(norm(x, order, axis, keepdims), epsilon), as Keras computes it"""
    if not isinstance(order, int) or isinstance(order, bool) or order < 1:
        raise ValueError(f"Argument `order` must be an int >= 1. Received: order={order}")
    eps = 1e-7 if epsilon is None else float(epsilon)
    if not _sym(x):
        x = np.asarray(x, np.float32)
        if order == 2:
            return x * np.minimum(1.0 / np.sqrt(np.sum(np.square(x), axis=axis, keepdims=True)), 1.0 / eps)
        return x / np.maximum(np.linalg.norm(x, ord=order, axis=axis, keepdims=True), eps)
    if order == 2:
        y = multiply(x, minimum(rsqrt(sum(square(x), axis=axis, keepdims=True)), 1.0 / eps))
    else:
        y = divide(x, maximum(norm(x, ord=order, axis=axis, keepdims=True), eps))
    return record(y, "Normalize", NN, {"axis": _axis_cfg(axis), "order": order, "epsilon": epsilon}, [x])


_cast.tag_results(globals())   # results report Keras's dtypes (int32, bool, ...)

# keras.ops.nn: the activations under their nn names
nn = types.SimpleNamespace(relu=relu, sigmoid=sigmoid, tanh=tanh, softmax=softmax, gelu=gelu, silu=silu, swish=swish,
                           elu=elu, selu=selu, softplus=softplus, softsign=softsign, relu6=relu6,
                           leaky_relu=leaky_relu, hard_sigmoid=hard_sigmoid, hard_swish=hard_swish,
                           log_softmax=log_softmax, moments=moments, normalize=normalize, one_hot=one_hot,
                           glu=glu, sparsemax=sparsemax, batch_normalization=batch_normalization,
                           layer_normalization=layer_normalization, rms_normalization=rms_normalization,
                           binary_crossentropy=binary_crossentropy, categorical_crossentropy=categorical_crossentropy,
                           sparse_categorical_crossentropy=sparse_categorical_crossentropy, multi_hot=multi_hot,
                           psnr=psnr, dot_product_attention=dot_product_attention, average_pool=average_pool,
                           max_pool=max_pool, depth_to_space=depth_to_space, space_to_depth=space_to_depth,
                           adaptive_average_pool=adaptive_average_pool, adaptive_max_pool=adaptive_max_pool,
                           fold=fold, unfold=unfold, polar=polar, conv=conv, conv_transpose=conv_transpose,
                           depthwise_conv=depthwise_conv, separable_conv=separable_conv, ctc_loss=ctc_loss,
                           ctc_decode=ctc_decode,
                           **{n: globals()[n] for n in ("celu", "hard_shrink", "hard_silu", "hard_tanh", "log_sigmoid",
                                                        "soft_shrink", "sparse_plus", "sparse_sigmoid", "squareplus",
                                                        "tanh_shrink", "threshold")})
# keras.ops.linalg: the vector norms (symbolic), the factorizations and solves (ops_linalg.py: arrays only), jvp
linalg = types.SimpleNamespace(norm=norm, jvp=jvp, **{n: getattr(_linalg, n) for n in _linalg.NAMES if n not in (
    "slogdet", "logdet")})
# keras.ops.numpy: Keras's NumPy ops (ops_numpy_names.py), the same functions as keras.ops'
numpy = types.SimpleNamespace(**{n: globals()[n] for n in _NUMPY_NAMES})

activations.OPS.update({n: globals()[n] for n in (
    "celu", "glu", "hard_shrink", "hard_silu", "hard_tanh", "log_sigmoid", "log_softmax", "soft_shrink", "sparse_plus",
    "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink", "threshold", "multiply", "tanh", "softplus")})
KerasTensor._ops.update(add=add, subtract=subtract, multiply=multiply, divide=true_divide, negative=negative,
                        matmul=matmul, power=power, getitem=getitem, greater=greater, greater_equal=greater_equal,
                        less=less, less_equal=less_equal, mod=mod, floor_divide=floor_divide,   # noqa: F821
                        absolute=absolute, logical_and=logical_and, logical_or=logical_or,   # noqa: F821
                        logical_xor=logical_xor, logical_not=logical_not)   # noqa: F821

_this = sys.modules[__name__]   # (ops_stacked.py composes a Stacked's ops from these)
