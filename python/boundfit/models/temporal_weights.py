"""Temporal sample weights: fit / evaluate's `sample_weight` of shape
(batch, T) for a loss with one value per step (Keras 3 multiplies them into
the loss's values, keras/src/losses/loss.py reduce_weighted_values). The
engine weighs whole samples, so such weights go through the training graph
(models/loss_graph.py): the loss is traced there (a built-in loss as its
keras.ops formula, unreduced, which Keras's is too), its values multiplied
by the weights, which the graph takes as one more input; the engine sees no
sample weights then."""

import copy

import numpy as np

from .. import losses
from ..engine import data as data_mod
from ..errors import DataError
from ..layers.input_layer import Input


def shape_of(sample_weight):
    """The per-sample shape (T,) of temporal weights (batch, T), T > 1; None for per-sample ones, per-output ones
    (a list or dict: engine/data.py says what it takes of them) or none."""
    if sample_weight is None or isinstance(sample_weight, (list, tuple, dict)):
        return None
    s = np.shape(sample_weight)
    return (int(s[1]),) if len(s) == 2 and s[1] > 1 else None


def of_data(model, x, kwargs):
    """The per-sample shape of the temporal weights fit / evaluate are given (kwargs' sample_weight, or the
    third item of a Sequence's first batch), or None; None for a model with no output of steps (its (batch, k)
    weights are refused as per-sample ones by engine/data.py), whose Sequence is not read here."""
    if not model._functional or not any(len(t._ps) >= 2 for t in model._outputs or ()):
        return None
    sw = kwargs.get("sample_weight")
    if sw is None and data_mod._is_sequence(x) and hasattr(x, "__getitem__") and hasattr(x, "__len__") and len(x):
        first = x[0]
        sw = first[2] if isinstance(first, (tuple, list)) and len(first) == 3 else None
    return shape_of(sw)


def traced_losses(model, out_losses):
    """The losses as the training graph traces them under temporal weights: a built-in loss as a custom one
    (its keras.ops formula, unreduced); refused by name where the weights cannot follow Keras's."""
    with_loss = [l for l in out_losses if not isinstance(l, losses._NoLoss)]
    if len(with_loss) != 1:
        raise ValueError(f"{model.name}: sample_weight of shape (batch, T) (temporal weights) is taken for a model "
                         f"with one loss; this one has {len(with_loss)} outputs with a loss: give per-sample "
                         "weights (batch,)")
    if any(weighted for _, _, weighted in model._metric_raw):
        raise ValueError(f"{model.name}: weighted_metrics with sample_weight of shape (batch, T) are not computed "
                         "by boundfit (Keras weighs each step of them); give them as metrics=, or per-sample "
                         "weights (batch,)")
    return [_traced(l) for l in out_losses]


def _traced(loss):
    if isinstance(loss, (losses.CustomLoss, losses._NoLoss)):
        return loss
    values = copy.copy(loss)
    values.reduction = None   # (losses/composed.py: the keras.ops formula's values, one per step)
    return losses.CustomLoss(lambda y_true, y_pred: values(y_true, y_pred), loss.name, loss)


def weights_input(values, loss, name, t):
    """The training graph's input of the weights of a loss's values (one per step), refused by name for others."""
    if len(values._ps) != 1:
        raise ValueError(f"loss {loss.name!r} of output {name!r} {t.shape} gives values of shape {values.shape}; "
                         "sample_weight of shape (batch, T) (temporal weights) multiplies one value per step, "
                         "(batch, T), as Keras's (other shapes do not broadcast, in Keras either): return "
                         "one value per step, or give per-sample weights (batch,)")
    return Input(shape=tuple(values._ps))


def step_weights(sw, n, shape, what):
    """sample weights as (n,) + shape per step: (n, T) as given, (n,) / (n, 1) broadcast over the steps, None ones"""
    if sw is None:
        return np.broadcast_to(np.ones((1,) * (len(shape) + 1), np.float32), (n,) + tuple(shape))
    a = np.asarray(sw, np.float32)
    if a.ndim == 2 and a.shape[1] == 1 or a.ndim == 1:
        a = a.reshape(-1, *([1] * len(shape)))
    if a.shape[0] != n or a.shape[1:] not in (tuple(shape), (1,) * len(shape)):
        raise DataError(f"{what} has shape {a.shape}; the loss's values have shape {(n,) + tuple(shape)} for this "
                        "batch: give one weight per sample (batch,) or per step (batch, T)")
    return np.broadcast_to(a, (n,) + tuple(shape))
