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


def shape_of(sample_weight):
    """The per-sample shape (T,) of temporal weights (batch, T), T > 1; None for per-sample ones or none."""
    if sample_weight is None:
        return None
    s = np.shape(sample_weight)
    return (int(s[1]),) if len(s) == 2 and s[1] > 1 else None


def of_data(x, kwargs):
    """The per-sample shape of the temporal weights fit / evaluate are given (kwargs' sample_weight, or the
    third item of a Sequence's first batch), or None."""
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
