"""Custom losses traced into loss subgraphs of engine layers: a loss function
fn(y_true, y_pred) written in keras.ops (trace), a layer's activity
regularizer (regularizer_values) and a value given to add_loss()
(added_values). fn's per-sample values are averaged by the engine's MEAN
loss (Keras's sum_over_batch_size); a final ops.mean over every axis or over
a sample's only axis is that same mean (ops.LossMean); over every axis it
mixes the batch, so Keras weights it by the batch's mean sample weight, not
per sample (over_batch). A value of one number for the whole batch (a
BatchReduce: Dice / Tversky with axis=None), which Keras returns as it is,
is put on every target element, whose (weighted) mean is that number times
the batch's mean sample weight, as Keras weighs it. Regularizers and added losses become per-sample
values the engine's ADDED loss sums per sample and averages over the batch,
unweighted, as Keras adds them: activity_regularizer(y) / batch size, and
add_loss(ops.mean(v)); a sum over the batch (add_loss(ops.sum(v))) or a term
that mixes the samples of the batch raises naming the layer."""

from . import ops, regularizers
from .layers.emath import Unary
from .layers.input_layer import Input
from .layers.node import KerasTensor
from .layers.reduce import BatchReduce


def loss_name(fn):
    return getattr(fn, "__name__", type(fn).__name__)


def trace(fn, y_pred, name=None, y_true_shape=None):
    """(y_true, values, over_batch): y_true a symbolic input shaped as y_pred
    (its targets; y_true_shape: its per-sample shape where the loss takes
    others, as class ids), values the tensor fn computes from both,
    over_batch True when fn's last op is a mean over every axis. An op
    boundfit cannot trace raises OpNotSupportedError naming the loss and the
    op."""
    name = name or loss_name(fn)
    if not isinstance(y_pred, KerasTensor):
        raise TypeError(f"loss function {name!r}: y_pred must be a symbolic tensor, got {type(y_pred).__name__}")
    if None in y_pred._ps:
        raise ValueError(f"loss function {name!r}: the output's shape {y_pred.shape} has a variable length")
    y_true = Input(shape=tuple(y_pred._ps if y_true_shape is None else y_true_shape))
    ops._LOSS_TRACING.append(name)
    try:
        v = fn(y_true, y_pred)
    except ops.OpNotSupportedError as e:
        raise ops.OpNotSupportedError(f"loss function {name!r}: {e}") from None
    finally:
        ops._LOSS_TRACING.pop()
    over_batch = False
    if isinstance(v, ops.LossMean):
        if v.total:
            raise ops.OpNotSupportedError(
                f"loss function {name!r} returns keras.ops.sum over every axis: a sum over the batch, which Keras "
                "does not divide by the batch size; boundfit averages a loss over the batch: return per-sample "
                "values or ops.mean(...)")
        v, over_batch = v.x, v.over_batch
    if not isinstance(v, KerasTensor):
        raise TypeError(f"loss function {name!r} returned {type(v).__name__}, not a tensor computed from y_true and "
                        "y_pred with keras.ops")
    if v._nobatch:   # one number for the whole batch (a BatchReduce: Dice over axis=None), which Keras takes as it
        v = ops.add(ops.multiply(y_true, 0.0), v)   # is: on every target, whose mean (and weighted mean) it is
    return y_true, v, over_batch


def _engine_values(reg, x):
    """A built-in L1 / L2 / L1L2: l1 * |x| + l2 * x^2 elementwise (summed by the engine)"""
    l1, l2 = reg._engine()
    terms = ([ops.multiply(ops.abs(x), l1)] if l1 else []) + ([ops.multiply(ops.square(x), l2)] if l2 else [])
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else ops.add(terms[0], terms[1])


def regularizer_values(reg, x, where):
    """Per-sample values whose ADDED loss (sum per sample, mean over the
    batch) is Keras's activity_regularizer(x) / batch size, or None for a
    regularizer of zero factors. where: 'layer 'name'' for messages."""
    what = f"activity_regularizer {type(reg).__name__} of {where}"
    if type(reg) in (regularizers.L1, regularizers.L2, regularizers.L1L2):
        return _engine_values(reg, x)
    ops._LOSS_TRACING.append(what)
    try:
        v = reg(x)
    except (ops.OpNotSupportedError, TypeError) as e:
        raise ops.OpNotSupportedError(f"{what}: {e}") from None
    finally:
        ops._LOSS_TRACING.pop()
    if isinstance(v, ops.LossMean) and v.total and v.over_batch:
        return v.x          # sum over the batch, / batch size: the mean of the per-sample sums
    raise ops.OpNotSupportedError(
        f"{what} returns {v._op() if isinstance(v, ops.LossMean) else type(v).__name__}; boundfit supports an "
        "activity regularizer whose value is keras.ops.sum over every axis of per-sample math on its input "
        "(Keras divides it by the batch size), as l1 / l2 are")


def _batch_mean(v):
    """(x, c) where v is c * ops.mean(x) over every axis as a subclassed model's call() computes it (a
    BatchReduce mean, then numbers times it: Unary multiply, or negative), else None"""
    c = 1.0
    while isinstance(v, KerasTensor) and v._node is not None and len(v._node.inputs) == 1:
        layer = v._node.layer
        if isinstance(layer, Unary) and (layer.op, layer.left) in (("multiply", False), ("negative", False)):
            c, v = c * (layer.param if layer.op == "multiply" else -1.0), v._node.inputs[0]
        elif isinstance(layer, BatchReduce) and layer.op == "mean":
            return v._node.inputs[0], c
        else:
            return None
    return None


def added_values(v, where):
    """(values, weight) whose ADDED loss times weight is Keras's add_loss(v):
    ops.mean over every axis of per-sample values (weight 1 / values per
    sample), at most times numbers; in a custom layer's call() that mean is a
    LossMean, in a subclassed model's call() a BatchReduce (_batch_mean).
    where: 'layer 'name'' for messages."""
    mean = _batch_mean(v)
    if mean is not None:
        v = ops.LossMean(mean[0], over_batch=True)
    if isinstance(v, ops.LossMean) and not v.total and v.over_batch:
        x, size = v.x, 1
        if None in x._ps:   # a variable length: each sample's mean, whose mean over the batch is the same mean
            x = ops.mean(x, axis=tuple(range(1, len(x._ps) + 1)), keepdims=True)
        for d in x._ps:
            size *= d
        c = (1.0 if mean is None else mean[1]) / size
        return (x, c) if c >= 0 else (ops.negative(x), -c)   # (loss weights are >= 0)
    got = v._op() if isinstance(v, ops.LossMean) else f"a {type(v).__name__}"
    raise ops.OpNotSupportedError(
        f"add_loss() in {where} was given {got}; boundfit adds a mean over the batch (keras.ops.mean over every "
        "axis of per-sample values, at most times a number): Keras adds the value as it is, so a sum over the "
        "batch or a per-sample tensor would grow with the batch size, which boundfit does not plan")
