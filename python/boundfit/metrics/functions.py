"""Keras 3's metric functions of (y_true, y_pred) that are not among boundfit's composed losses, written in
keras.ops with Keras's formulas and epsilons: they run eagerly on arrays and trace on symbolic tensors (the
metrics of reduction.py wrap them). The cross-entropies here are Keras's functions (keras.metrics.
binary_crossentropy is keras.losses.binary_crossentropy); compile(loss=...) takes the engine's own."""

import numpy as np

from .. import ops
from ..layers.node import KerasTensor

EPSILON = 1e-7   # keras.backend.epsilon()


def _floats(*xs):
    return tuple(x if isinstance(x, KerasTensor) else np.asarray(x, np.float32) for x in xs)


def _rank(x):
    return len(x._ps) + 1 if isinstance(x, KerasTensor) else x.ndim


def _last(x):
    return x._ps[-1] if isinstance(x, KerasTensor) else x.shape[-1]


def same_rank(y_true, y_pred):
    """Keras's squeeze_or_expand_to_same_rank: a trailing axis of 1 squeezed (or one added) so the ranks match."""
    rt, rp = _rank(y_true), _rank(y_pred)
    if rt == rp + 1 and _last(y_true) == 1:
        y_true = ops.squeeze(y_true, axis=-1)
    elif rp == rt + 1 and _last(y_pred) == 1:
        y_pred = ops.squeeze(y_pred, axis=-1)
    return y_true, y_pred


def _float(x):
    return ops.cast(x, "float32")


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean(-(t log p + (1 - t) log(1 - p)), axis): p clipped to [eps, 1 - eps], or from logits by log_sigmoid."""
    y_true, y_pred = _floats(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        bce = -(y_true * ops.log_sigmoid(y_pred) + (1.0 - y_true) * ops.log_sigmoid(-y_pred))
    else:
        p = ops.clip(y_pred, EPSILON, 1.0 - EPSILON)
        bce = -(y_true * ops.log(p) + (1.0 - y_true) * ops.log(1.0 - p))
    return ops.mean(bce, axis=axis)


def _cce(y_true, y_pred, from_logits, axis):
    if from_logits:
        return -ops.sum(y_true * ops.log_softmax(y_pred, axis=axis), axis=axis)
    p = y_pred / ops.sum(y_pred, axis=axis, keepdims=True)
    return -ops.sum(y_true * ops.log(ops.clip(p, EPSILON, 1.0 - EPSILON)), axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(t log p, axis): p normalized to sum 1 and clipped to [eps, 1 - eps], or log_softmax of logits."""
    y_true, y_pred = _floats(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / _last(y_pred)
    return _cce(y_true, y_pred, from_logits, axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """categorical_crossentropy of one_hot(y_true): y_true class ids (a trailing axis of 1 allowed)."""
    if ignore_class is not None:
        raise ValueError("sparse_categorical_crossentropy: ignore_class is not supported as a metric; mask the "
                         "targets instead")
    if axis != -1:
        raise ValueError(f"sparse_categorical_crossentropy: axis must be -1, got {axis!r}")
    y_true, y_pred = _floats(y_true, y_pred)
    if _rank(y_true) == _rank(y_pred) and _last(y_true) == 1:
        y_true = ops.squeeze(y_true, axis=-1)
    return _cce(ops.one_hot(y_true, _last(y_pred)), y_pred, from_logits, -1)


_sparse_shape = lambda ps: tuple(ps[:-1]) + (1,)   # noqa: E731 - class ids, one per position
sparse_categorical_crossentropy._y_true_shape = _sparse_shape


def log_cosh(y_true, y_pred):
    """mean(x + softplus(-2 x) - log 2, axis=-1) of x = y_pred - y_true."""
    y_true, y_pred = _floats(y_true, y_pred)
    x = y_pred - y_true
    return ops.mean(x + ops.softplus(-2.0 * x) - float(np.log(2.0)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """mean(0.5 e^2 where |e| <= delta, else delta |e| - 0.5 delta^2, axis=-1)."""
    y_true, y_pred = _floats(y_true, y_pred)
    e = y_pred - y_true
    a = ops.abs(e)
    return ops.mean(ops.where(ops.less_equal(a, delta), 0.5 * ops.square(e), delta * a - 0.5 * delta * delta),
                    axis=-1)


def accuracy(y_true, y_pred):
    """1.0 where y_true == y_pred, else 0.0, elementwise (Keras's exact-match accuracy)."""
    y_true, y_pred = same_rank(*_floats(y_true, y_pred))
    return _float(ops.equal(y_true, y_pred))


def cosine_similarity(y_true, y_pred, axis=-1):
    """sum(l2_normalize(y_true) * l2_normalize(y_pred), axis) (keras.metrics': no minus sign, unlike the loss)."""
    y_true, y_pred = same_rank(*_floats(y_true, y_pred))
    return ops.sum(ops.normalize(y_true, axis=axis) * ops.normalize(y_pred, axis=axis), axis=axis)


def pearson_correlation(y_true, y_pred, axis=-1):
    """mean(z(y_true) * z(y_pred), axis), z: centred and divided by its standard deviation along axis."""
    y_true, y_pred = same_rank(*_floats(y_true, y_pred))
    t = y_true - ops.mean(y_true, axis=axis, keepdims=True)
    p = y_pred - ops.mean(y_pred, axis=axis, keepdims=True)
    t = t / ops.std(t, axis=axis, keepdims=True)
    p = p / ops.std(p, axis=axis, keepdims=True)
    return ops.mean(t * p, axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    """mean(2 (y_true - mean(y_pred)) (y_pred - mean(y_pred)) / (var(y_true) + var(y_pred) + (mean(y_true) -
    mean(y_pred))^2 + eps), axis), as Keras 3 writes it."""
    y_true, y_pred = same_rank(*_floats(y_true, y_pred))
    mt = ops.mean(y_true, axis=axis, keepdims=True)
    mp = ops.mean(y_pred, axis=axis, keepdims=True)
    vt = ops.var(y_true - mt, axis=axis, keepdims=True)
    vp = ops.var(y_pred - mp, axis=axis, keepdims=True)
    covar = (y_true - mp) * (y_pred - mp)
    norm = vt + vp + ops.square(mt - mp)
    return ops.mean(2.0 * covar / (norm + EPSILON), axis=axis)
