"""Custom loss functions, fn(y_true, y_pred) written in keras.ops: fn traced
on symbolic tensors (ops.py) into a loss subgraph of engine layers, its
per-sample values averaged by the engine's MEAN loss (Keras's
sum_over_batch_size). A final ops.mean over every axis or over a sample's
only axis is that same mean (ops.LossMean); over every axis it mixes the
batch, so Keras weights it by the batch's mean sample weight, not per sample
(over_batch)."""

from . import ops
from .layers.input_layer import Input
from .layers.node import KerasTensor


def loss_name(fn):
    return getattr(fn, "__name__", type(fn).__name__)


def trace(fn, y_pred):
    """(y_true, values, over_batch): y_true a symbolic input shaped as y_pred
    (its targets), values the tensor fn computes from both, over_batch True
    when fn's last op is a mean over every axis. An op boundfit cannot trace
    raises OpNotSupportedError naming the loss and the op."""
    name = loss_name(fn)
    if not isinstance(y_pred, KerasTensor):
        raise TypeError(f"loss function {name!r}: y_pred must be a symbolic tensor, got {type(y_pred).__name__}")
    if None in y_pred._ps:
        raise ValueError(f"loss function {name!r}: the output's shape {y_pred.shape} has a variable length")
    y_true = Input(shape=y_pred._ps)
    ops._LOSS_TRACING.append(name)
    try:
        v = fn(y_true, y_pred)
    except ops.OpNotSupportedError as e:
        raise ops.OpNotSupportedError(f"loss function {name!r}: {e}") from None
    finally:
        ops._LOSS_TRACING.pop()
    over_batch = False
    if isinstance(v, ops.LossMean):
        v, over_batch = v.x, v.over_batch
    if not isinstance(v, KerasTensor):
        raise TypeError(f"loss function {name!r} returned {type(v).__name__}, not a tensor computed from y_true and "
                        "y_pred with keras.ops")
    return y_true, v, over_batch
