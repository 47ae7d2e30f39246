"""Keras 3's losses that boundfit computes as compositions of keras.ops
(boundfit.ops): each Keras loss function (kl_divergence, hinge, dice, ...)
written once with Keras's formula and clipping epsilons, which runs eagerly
on arrays (NumPy) and, on symbolic tensors, is traced into the training graph
(loss_trace.py, models/loss_graph.py) like a custom loss; each Loss class
(KLDivergence, Hinge, Dice, ...) with Keras's arguments, defaults and
get_config calls its function, and saves as Keras writes it. Differences
from Keras, each where Keras's own formula cannot be traced per sample:
- hinge / squared_hinge: Keras turns targets 0 / 1 into -1 / 1 when every
  target of the batch is 0 or 1; traced, boundfit turns each 0 into -1 (the
  same for 0 / 1 and -1 / 1 targets; a batch that mixes 0 with other values
  differs); eagerly, as Keras.
- cosine_similarity: l2-normalization as x * rsqrt(max(sum(x ** 2), eps ** 2))
  (Keras: min(rsqrt(sum(x ** 2)), 1 / eps)), the same values with a finite
  gradient at a zero vector.
- dice / tversky with axis=None sum over the whole batch (one number, as
  Keras): a BatchReduce, which refuses micro-batches and data parallelism."""

import numbers

import numpy as np

from .. import ops
from ..layers.node import KerasTensor
from .core import (CALL, BinaryCrossentropy, CategoricalCrossentropy, Huber, LogCosh, Loss, MeanAbsoluteError,
                   MeanSquaredError, SparseCategoricalCrossentropy)

EPSILON = 1e-7   # keras.backend.epsilon()


def _symbolic(*xs):
    return any(isinstance(x, KerasTensor) for x in xs)


def _floats(*xs):
    """As Keras's convert_to_tensor: arrays as float32 (symbolic tensors are float32 already)."""
    out = tuple(x if isinstance(x, KerasTensor) else np.asarray(x, np.float32) for x in xs)
    return out if len(out) > 1 else out[0]


def _total(x, axis):
    """ops.sum(x, axis); axis=None: over the whole batch, one number (a BatchReduce when traced)."""
    axis = tuple(axis) if isinstance(axis, list) else axis
    if axis is None:
        return ops.batch_reduce("sum", x) if _symbolic(x) else np.sum(x)
    return ops.sum(x, axis=axis)


def _bce(target, output):
    """keras.ops.binary_crossentropy(target, output, from_logits=False): output clipped to [eps, 1 - eps]"""
    output = ops.clip(output, EPSILON, 1.0 - EPSILON)
    return -(target * ops.log(output) + (1.0 - target) * ops.log(1.0 - output))


def _power(x, gamma):
    """x ** gamma; a non-integer gamma's base kept off 0 (x >= 0 here), where exp(gamma * log(x)) has a NaN
    gradient and x ** gamma's is 0 (gamma > 1)"""
    if _symbolic(x) and float(gamma) != int(gamma):
        x = ops.maximum(x, 1e-30)
    return ops.power(x, gamma)


def _hinge_labels(y_true):
    """Targets of 0 / 1 as -1 / 1 (Keras's convert_binary_labels_to_hinge)."""
    if not _symbolic(y_true):
        binary = np.all((y_true == 0) | (y_true == 1))
        return 2.0 * y_true - 1.0 if binary else y_true
    return y_true - ops.less_equal(ops.abs(y_true), 0.0)   # per element: 0 -> -1 (see the module's notes)


def _l2_normalize(x, axis):
    return x * ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), EPSILON * EPSILON))


# ---- the loss functions, with Keras 3's names and signatures ----

def kl_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred), axis=-1), both clipped to [eps, 1]."""
    y_true, y_pred = _floats(y_true, y_pred)
    y_true = ops.clip(y_true, EPSILON, 1.0)
    y_pred = ops.clip(y_pred, EPSILON, 1.0)
    return ops.sum(y_true * ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + eps), axis=-1)."""
    y_true, y_pred = _floats(y_true, y_pred)
    return ops.mean(y_pred - y_true * ops.log(y_pred + EPSILON), axis=-1)


def hinge(y_true, y_pred):
    """mean(maximum(1 - y_true * y_pred, 0), axis=-1), targets 0 / 1 taken as -1 / 1."""
    y_true, y_pred = _floats(y_true, y_pred)
    return ops.mean(ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1), targets 0 / 1 taken as -1 / 1."""
    y_true, y_pred = _floats(y_true, y_pred)
    return ops.mean(ops.square(ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis."""
    y_true, y_pred = _floats(y_true, y_pred)
    pos = ops.sum(y_true * y_pred, axis=-1)
    neg = ops.max((1.0 - y_true) * y_pred, axis=-1)
    return ops.maximum(neg - pos + 1.0, 0.0)


def mean_squared_logarithmic_error(y_true, y_pred):
    """mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)), axis=-1)."""
    y_true, y_pred = _floats(y_true, y_pred)
    first = ops.log(ops.maximum(y_pred, EPSILON) + 1.0)
    second = ops.log(ops.maximum(y_true, EPSILON) + 1.0)
    return ops.mean(ops.square(first - second), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(abs((y_true - y_pred) / max(abs(y_true), eps)), axis=-1)."""
    y_true, y_pred = _floats(y_true, y_pred)
    diff = ops.abs((y_true - y_pred) / ops.maximum(ops.abs(y_true), EPSILON))
    return 100.0 * ops.mean(diff, axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)."""
    y_true, y_pred = _floats(y_true, y_pred)
    return -ops.sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False, label_smoothing=0.0, axis=-1):
    """mean((1 - p_t) ** gamma * binary_crossentropy, axis), p_t the probability of the true class; times
    alpha for 1s and 1 - alpha for 0s with apply_class_balancing."""
    y_true, y_pred = _floats(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    bce = _bce(y_true, y_pred)
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal_bce = _power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal_bce = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal_bce
    return ops.mean(focal_bce, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """sum(alpha * (1 - p) ** gamma * -y_true * log(p), axis), p the predictions scaled to sum to 1 and
    clipped to [eps, 1 - eps]."""
    y_true, y_pred = _floats(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / float(y_pred.shape[-1])
    if from_logits:
        y_pred = ops.softmax(y_pred, axis=axis)
    output = y_pred / ops.sum(y_pred, axis=axis, keepdims=True)
    output = ops.clip(output, EPSILON, 1.0 - EPSILON)
    cce = -y_true * ops.log(output)
    return ops.sum(ops.multiply(_power(1.0 - output, gamma), alpha) * cce, axis=axis)


def dice(y_true, y_pred, axis=None):
    """1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + eps), summed over axis (None: the whole
    batch)."""
    y_true, y_pred = _floats(y_true, y_pred)
    intersection = _total(y_true * y_pred, axis)
    return 1.0 - 2.0 * intersection / (_total(y_true, axis) + _total(y_pred, axis) + EPSILON)


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """1 - tp / (tp + alpha * fp + beta * fn + eps), tp, fp, fn summed over axis (None: the whole batch)."""
    y_true, y_pred = _floats(y_true, y_pred)
    intersection = _total(y_true * y_pred, axis)
    fp = _total((1.0 - y_pred) * y_true, axis)
    fn = _total(y_pred * (1.0 - y_true), axis)
    return 1.0 - intersection / (intersection + fp * alpha + fn * beta + EPSILON)


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """(1 - p ** q) / q, p the predicted probability of the target class (y_true: class ids)."""
    y_true, y_pred = _floats(y_true, y_pred)
    classes = int(y_pred.shape[-1])
    if _symbolic(y_true):
        one_hot = ops.one_hot(y_true, classes)
    else:
        one_hot = np.eye(classes, dtype=np.float32)[y_true.astype(np.int64)]
    p = ops.sum(y_pred * one_hot, axis=-1)
    return (1.0 - ops.power(p, q)) / q


categorical_generalized_cross_entropy._y_true_shape = lambda pred_shape: pred_shape[:-1]   # class ids

# the losses the engine computes, as functions of keras.ops too (in a traced compute_loss() or loss function, or
# on arrays); compile(loss=fn) still takes the engine's (their _loss_class)

def mean_squared_error(y_true, y_pred):
    """mean((y_true - y_pred) ** 2, axis=-1)."""
    y_true, y_pred = _floats(y_true, y_pred)
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(|y_true - y_pred|, axis=-1)."""
    y_true, y_pred = _floats(y_true, y_pred)
    return ops.mean(ops.abs(y_true - y_pred), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean(binary cross-entropy, axis): predictions clipped to [eps, 1 - eps], or log_sigmoid of logits."""
    y_true, y_pred = _floats(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        bce = y_true * ops.softplus(-y_pred) + (1.0 - y_true) * ops.softplus(y_pred)   # -log_sigmoid
    else:
        bce = _bce(y_true, y_pred)
    return ops.mean(bce, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log(p), axis), p the predictions scaled to sum to 1 and clipped to [eps, 1 - eps], or
    log_softmax of logits."""
    y_true, y_pred = _floats(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / float(y_pred.shape[-1])
    if from_logits:
        return -ops.sum(y_true * ops.log_softmax(y_pred, axis=axis), axis=axis)
    output = ops.clip(y_pred / ops.sum(y_pred, axis=axis, keepdims=True), EPSILON, 1.0 - EPSILON)
    return -ops.sum(y_true * ops.log(output), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """ops.sparse_categorical_crossentropy of class ids (a last axis of 1 squeezed)."""
    if ignore_class is not None:
        raise ValueError("ignore_class is not supported")
    return ops.sparse_categorical_crossentropy(y_true, _floats(y_pred), from_logits=from_logits, axis=axis)


def huber(y_true, y_pred, delta=1.0):
    """mean(0.5 * e ** 2 where |e| <= delta, else delta * |e| - 0.5 * delta ** 2, axis=-1), e = y_pred - y_true."""
    y_true, y_pred = _floats(y_true, y_pred)
    error = y_pred - y_true
    abs_error = ops.abs(error)
    return ops.mean(ops.where(abs_error <= delta, 0.5 * ops.square(error), delta * abs_error - 0.5 * delta ** 2),
                    axis=-1)


def log_cosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true)), axis=-1), as x + softplus(-2 x) - log(2)."""
    y_true, y_pred = _floats(y_true, y_pred)
    x = y_pred - y_true
    return ops.mean(x + ops.softplus(x * -2.0) - float(np.log(2.0)), axis=-1)


# each engine loss's formula with its object's options: called on arrays or symbolic tensors (Loss.__call__)
FORMULAS = {
    MeanSquaredError: lambda loss, t, p: mean_squared_error(t, p),
    MeanAbsoluteError: lambda loss, t, p: mean_absolute_error(t, p),
    BinaryCrossentropy: lambda loss, t, p: binary_crossentropy(t, p, loss.from_logits, loss.label_smoothing),
    CategoricalCrossentropy: lambda loss, t, p: categorical_crossentropy(t, p, loss.from_logits, loss.label_smoothing),
    SparseCategoricalCrossentropy: lambda loss, t, p: sparse_categorical_crossentropy(t, p, loss.from_logits),
    Huber: lambda loss, t, p: huber(t, p, loss.delta),
    LogCosh: lambda loss, t, p: log_cosh(t, p),
}
for _f, _c in ((mean_squared_error, MeanSquaredError), (mean_absolute_error, MeanAbsoluteError),
               (binary_crossentropy, BinaryCrossentropy), (categorical_crossentropy, CategoricalCrossentropy),
               (sparse_categorical_crossentropy, SparseCategoricalCrossentropy), (huber, Huber), (log_cosh, LogCosh)):
    _f._loss_class = _c
mse = mean_squared_error
mae = mean_absolute_error

def ctc(y_true, y_pred):
    """Keras 3's `ctc`: ops.ctc_loss of labels y_true (batch, N), 0 the blank and the padding, and logits
    y_pred (batch, T, classes), label lengths the count of non-zero labels, every output length T."""
    if len(ops.shape(y_true)) != 2:
        raise ValueError(f"ctc: y_true must be (batch_size, max_length) labels, got shape {ops.shape(y_true)}")
    if len(ops.shape(y_pred)) != 3:
        raise ValueError(f"ctc: y_pred must be (batch_size, max_length, num_classes) logits, got shape "
                         f"{ops.shape(y_pred)}")
    label_length = ops.sum(ops.not_equal(y_true, 0), axis=-1)
    return ops.ctc_loss(y_true, y_pred, label_length, ops.shape(y_pred)[1], mask_index=0)


ctc._y_true_shape = lambda pred_shape: pred_shape[:-1]   # compile(): labels padded with 0 to the output's T


FUNCTIONS = (kl_divergence, poisson, hinge, squared_hinge, categorical_hinge, mean_squared_logarithmic_error,
             mean_absolute_percentage_error, cosine_similarity, binary_focal_crossentropy,
             categorical_focal_crossentropy, dice, tversky, categorical_generalized_cross_entropy, ctc)
for _f in FUNCTIONS:
    _f._keras_builtin = True     # saved as Keras saves its own functions (losses/core.py CustomLoss)

kld = KLD = kl_divergence
msle = MSLE = mean_squared_logarithmic_error
mape = MAPE = mean_absolute_percentage_error


# ---- the Loss classes ----

def _number(name, v, low=None, high=None, open_low=False, open_high=False):
    if not isinstance(v, numbers.Real) or isinstance(v, bool) or not np.isfinite(v):
        raise ValueError(f"{name} must be a number, got {v!r}")
    v = float(v)
    if low is not None and (v < low or open_low and v == low) or high is not None and (v > high or open_high and
                                                                                          v == high):
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        raise ValueError(f"{name} must be in {lo}{low if low is not None else '-inf'}, "
                         f"{high if high is not None else 'inf'}{hi}, got {v!r}")
    return v


def _axis(v, allow_none):
    ok = v is None and allow_none or isinstance(v, int) and not isinstance(v, bool) or (
        isinstance(v, (list, tuple)) and v and all(isinstance(a, int) and not isinstance(a, bool) for a in v))
    if not ok:
        raise ValueError(f"axis must be an integer{', a tuple of integers or None' if allow_none else ''}, "
                         f"got {v!r}")
    return v     # as given: Keras's get_config writes it so


def _squeeze_or_expand(a, b):
    """Keras's squeeze_or_expand_to_same_rank(a, b): a last axis of 1 squeezed, or a rank-1 one expanded."""
    if a.ndim == b.ndim + 1 and a.shape[-1] == 1:
        return (a, b[..., None]) if b.ndim == 1 else (a[..., 0], b)
    if b.ndim == a.ndim + 1 and b.shape[-1] == 1:
        return (a[..., None], b) if a.ndim == 1 else (a, b[..., 0])
    return a, b


def _weighted_symbolic(loss, values, sample_weight):
    """A loss's symbolic values times its sample weights as Keras weighs them (reduce_weighted_values): a
    number, or a tensor of the batch brought to the values' rank (a last axis of 1 squeezed, or one added)"""
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        return ops.multiply(values, float(sample_weight))
    if not isinstance(sample_weight, KerasTensor) or values._nobatch:
        raise ops.OpNotSupportedError(f"{type(loss).__name__}: sample_weight {type(sample_weight).__name__} with "
                                      "symbolic tensors; give a number, or a tensor of the batch (a model input), or "
                                      "pass the loss to compile() and sample_weight to fit()")
    sw = sample_weight
    if sw.ndim == values.ndim + 1 and sw.shape[-1] == 1:
        sw = ops.squeeze(sw, -1)
    elif values.ndim == sw.ndim + 1 and values.shape[-1] == 1:
        values = ops.squeeze(values, -1)
    return ops.multiply(values, sw)


def call_loss(loss, y_true, y_pred, sample_weight=None):
    """A Loss object called: its values (a ComposedLoss's call(), an engine loss's FORMULAS), traced on symbolic
    tensors or Keras's value on arrays (sample weights as Keras), reduced as loss.reduction says (None: the values
    themselves, else their mean over every axis)."""
    formula = FORMULAS.get(type(loss))
    values_of = loss.call if isinstance(loss, ComposedLoss) else (lambda t, p: formula(loss, t, p))
    if not isinstance(loss, ComposedLoss) and formula is None:
        raise TypeError(f"boundfit.losses.{type(loss).__name__} is computed by the engine; pass it to compile()")
    if _symbolic(y_true, y_pred, sample_weight):
        values = values_of(y_true, y_pred)
        if sample_weight is not None:   # (keras.io's endpoint layer: the weights an input of the model)
            values = _weighted_symbolic(loss, values, sample_weight)
        return values if loss.reduction is None or values._nobatch else ops.mean(values)
    y_true, y_pred = _floats(y_true, y_pred)
    y_true, y_pred = _squeeze_or_expand(y_true, y_pred)
    values = np.asarray(values_of(y_true, y_pred), np.float32)
    if sample_weight is not None:
        values, sw = _squeeze_or_expand(values, np.asarray(sample_weight, np.float32))
        values = values * sw
    if loss.reduction is None:
        return values
    return np.float32(values if values.ndim == 0 else values.sum() / values.size)


CALL.append(call_loss)


class ComposedLoss(Loss):
    """A Keras loss class whose call(y_true, y_pred) is its loss function (fn) with the instance's options
    (`options`, in Keras's get_config order): compile() traces it (a CustomLoss), and called on arrays it
    computes Keras's value (sum_over_batch_size, sample weights as Keras)."""
    _keras_builtin = True
    fn = None
    options = ()
    saved = None    # the options Keras's get_config writes (None: all of them)

    def call(self, y_true, y_pred):
        return type(self).fn(y_true, y_pred, **{k: getattr(self, k) for k in self.options})

    def get_config(self):
        saved = self.options if self.saved is None else self.saved
        return {"name": self.name, "reduction": self.reduction, **{k: getattr(self, k) for k in saved}}

    def _y_true_shape(self, pred_shape):
        shape = getattr(type(self).fn, "_y_true_shape", None)
        return pred_shape if shape is None else shape(pred_shape)


class KLDivergence(ComposedLoss):
    """Keras 3's `KLDivergence`: sum(y_true * log(y_true / y_pred), axis=-1), both clipped to [1e-7, 1]."""
    fn, name = staticmethod(kl_divergence), "kl_divergence"

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(name, reduction, dtype)


class Poisson(ComposedLoss):
    """Keras 3's `Poisson`: mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)."""
    fn, name = staticmethod(poisson), "poisson"

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(name, reduction, dtype)


class Hinge(ComposedLoss):
    """Keras 3's `Hinge`: mean(maximum(1 - y_true * y_pred, 0), axis=-1), targets 0 / 1 taken as -1 / 1
    (see the module's notes)."""
    fn, name = staticmethod(hinge), "hinge"

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(name, reduction, dtype)


class SquaredHinge(ComposedLoss):
    """Keras 3's `SquaredHinge`: mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)."""
    fn, name = staticmethod(squared_hinge), "squared_hinge"

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(name, reduction, dtype)


class CategoricalHinge(ComposedLoss):
    """Keras 3's `CategoricalHinge`: maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)."""
    fn, name = staticmethod(categorical_hinge), "categorical_hinge"

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(name, reduction, dtype)


class MeanSquaredLogarithmicError(ComposedLoss):
    """Keras 3's `MeanSquaredLogarithmicError`: mean(square(log(y_true + 1) - log(y_pred + 1)), axis=-1)."""
    fn, name = staticmethod(mean_squared_logarithmic_error), "mean_squared_logarithmic_error"

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(name, reduction, dtype)


class MeanAbsolutePercentageError(ComposedLoss):
    """Keras 3's `MeanAbsolutePercentageError`: 100 * mean(abs((y_true - y_pred) / y_true), axis=-1)."""
    fn, name = staticmethod(mean_absolute_percentage_error), "mean_absolute_percentage_error"

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error", dtype=None):
        super().__init__(name, reduction, dtype)


class CosineSimilarity(ComposedLoss):
    """Keras 3's `CosineSimilarity(axis=-1)`: -sum(l2_normalize(y_true) * l2_normalize(y_pred), axis); Keras's
    get_config does not write axis."""
    fn, name, options, saved = staticmethod(cosine_similarity), "cosine_similarity", ("axis",), ()

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity", dtype=None):
        super().__init__(name, reduction, dtype)
        self.axis = _axis(axis, False)


class BinaryFocalCrossentropy(ComposedLoss):
    """Keras 3's `BinaryFocalCrossentropy(apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
    label_smoothing=0.0, axis=-1)`."""
    fn, name = staticmethod(binary_focal_crossentropy), "binary_focal_crossentropy"
    options = ("from_logits", "label_smoothing", "axis", "apply_class_balancing", "alpha", "gamma")

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                 axis=-1, reduction="sum_over_batch_size", name="binary_focal_crossentropy", dtype=None):
        super().__init__(name, reduction, dtype)
        self.apply_class_balancing, self.from_logits = bool(apply_class_balancing), bool(from_logits)
        self.alpha, self.gamma = _number("alpha", alpha), _number("gamma", gamma, low=0.0)
        self.label_smoothing = _number("label_smoothing", label_smoothing, 0.0, 1.0)
        self.axis = _axis(axis, False)


class CategoricalFocalCrossentropy(ComposedLoss):
    """Keras 3's `CategoricalFocalCrossentropy(alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
    axis=-1)` on one-hot targets."""
    fn, name = staticmethod(categorical_focal_crossentropy), "categorical_focal_crossentropy"
    options = ("from_logits", "label_smoothing", "axis", "alpha", "gamma")

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy", dtype=None):
        super().__init__(name, reduction, dtype)
        self.from_logits = bool(from_logits)
        self.alpha, self.gamma = _number("alpha", alpha), _number("gamma", gamma, low=0.0)
        self.label_smoothing = _number("label_smoothing", label_smoothing, 0.0, 1.0)
        self.axis = _axis(axis, False)


class Dice(ComposedLoss):
    """Keras 3's `Dice(axis=None)`: 1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + 1e-7), summed
    over axis (None: the whole batch, one number)."""
    fn, name, options = staticmethod(dice), "dice", ("axis",)

    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        super().__init__(name, reduction, dtype)
        self.axis = _axis(axis, True)


class Tversky(ComposedLoss):
    """Keras 3's `Tversky(alpha=0.5, beta=0.5, axis=None)`: 1 - tp / (tp + alpha * fp + beta * fn + 1e-7)."""
    fn, name, options = staticmethod(tversky), "tversky", ("alpha", "beta", "axis")

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky", axis=None, dtype=None):
        super().__init__(name, reduction, dtype)
        self.alpha, self.beta = _number("alpha", alpha), _number("beta", beta)
        self.axis = _axis(axis, True)


class CategoricalGeneralizedCrossEntropy(ComposedLoss):
    """Keras 3's `CategoricalGeneralizedCrossEntropy(q=0.5)`: (1 - p ** q) / q, p the predicted probability of
    the target class; targets are class ids, (batch,) or (batch, 1)."""
    fn, name, options = staticmethod(categorical_generalized_cross_entropy), "categorical_generalized_cross_entropy", \
        ("q",)

    def __init__(self, q=0.5, reduction="sum_over_batch_size", name="categorical_generalized_cross_entropy",
                 dtype=None):
        super().__init__(name, reduction, dtype)
        self.q = _number("q", q, 0.0, 1.0, open_low=True, open_high=True)


class CTC(ComposedLoss):
    """Keras 3's `CTC`: ctc (above). In compile() the targets are (batch, T) labels padded with 0 to the
    output's T steps (boundfit plans the targets' shape from the output's before it sees data; the padding
    changes no loss); on arrays any label length."""
    fn, name = staticmethod(ctc), "ctc"

    def __init__(self, reduction="sum_over_batch_size", name="ctc", dtype=None):
        super().__init__(name, reduction, dtype)


CLASSES = (CTC, KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge, MeanSquaredLogarithmicError,
           MeanAbsolutePercentageError, CosineSimilarity, BinaryFocalCrossentropy, CategoricalFocalCrossentropy,
           Dice, Tversky, CategoricalGeneralizedCrossEntropy)

# Keras's names with no per-sample composition here: refused by name (losses/__init__.py)
REFUSED = {
    "Circle": "Circle compares every pair of embeddings in a batch (a (batch, batch) similarity matrix and "
              "log-sum-exp over the batch), which boundfit's per-sample graphs do not compute; train the "
              "embedding model with a per-sample loss (cosine_similarity against class centers, "
              "categorical_crossentropy) or in Keras",
}
REFUSED["circle"] = REFUSED["Circle"]
