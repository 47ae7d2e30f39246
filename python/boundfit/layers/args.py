"""What the layer families share: the engine's layer kind numbers and the
checks and conversions of common arguments (sizes, padding, seeds, weight
options). A size is a positive int (a numpy integer too; not a bool, not a
float) below 2**31, the engine's range: checked here, when the layer is made,
so the engine never sees a size it would refuse."""

import math
import numbers

import numpy as np

from .. import constraints, regularizers
from .._core import LAYER_KINDS


def engine_kinds(names):
    """The engine's layer kind numbers for space-separated names (csrc/core/model.c bf_layer_kind_names)."""
    return [LAYER_KINDS[n] for n in names.split()]


SIZE_LIMIT = 2**31  # the engine's sizes are C ints (csrc/python/spec_py.c)


def _is_size(v, low=1):
    return (isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
            and low <= v < SIZE_LIMIT)


def _size(cls, argument, v, allow_none=False):
    """v as a size: a positive int below 2**31, else a ValueError naming the class, the argument and the value."""
    if v is None and allow_none:
        return None
    if not _is_size(v):
        raise ValueError(f"{cls}: {argument} must be a positive integer below 2**31"
                         f"{' or None' if allow_none else ''}, got {v!r}")
    return int(v)


def _sizes(cls, argument, v, n):
    """a size or n of them (a tuple / list) as a tuple of n ints"""
    t = (v,) * n if _is_size(v) else tuple(v) if isinstance(v, (list, tuple)) else None
    if t is None or len(t) != n or not all(_is_size(i) for i in t):
        what = "a pair of them" if n == 2 else f"a tuple of {n}"
        raise ValueError(f"{cls}: {argument} must be a positive integer below 2**31 or {what}, got {v!r}")
    return tuple(int(i) for i in t)


def _pair(v, argument, cls="layer"):
    return _sizes(cls, argument, v, 2)


def _padding(p):
    p = str(p).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {p!r}")
    return p


def _weight_options(layer, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                    bias_constraint):
    """Dense / Conv2D: Keras regularizers and constraints (regularizers.py, constraints.py);
    the activity regularizer is added to the loss by models/loss_graph.py."""
    layer.activity_regularizer = regularizers.get(activity_regularizer, "activity_regularizer")
    layer.kernel_regularizer = regularizers.get(kernel_regularizer, "kernel_regularizer")
    layer.bias_regularizer = regularizers.get(bias_regularizer, "bias_regularizer")
    layer.kernel_constraint = constraints.get(kernel_constraint, "kernel_constraint")
    layer.bias_constraint = constraints.get(bias_constraint, "bias_constraint")


def _weight_specs(layer, kernel_rank):
    return dict(regs=regularizers._engine_specs(layer.kernel_regularizer, layer.bias_regularizer),
                cons=constraints._engine_specs([(layer.kernel_constraint, kernel_rank, "kernel_constraint"),
                                                (layer.bias_constraint, 1, "bias_constraint")]))


def _number(v, argument, cls="layer"):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
        raise ValueError(f"{cls}: {argument} must be a finite number, got {v!r}")
    return float(v)


def _data_format(cls, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{cls}: only data_format='channels_last' is supported, got {data_format!r}")


def _seed(cls, seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise ValueError(f"{cls}: seed must be None or an int from 0 to 2**64 - 1, got {seed!r}")
    return int(seed)


def _single(v, argument, cls="layer"):
    return _sizes(cls, argument, v, 1)


def _channels_last(cls, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{cls}: only data_format='channels_last' is supported, got {data_format!r}")


def _filters(cls, filters):
    return _size(cls, "filters", filters)


def _rank(layer, shape, rank, what):
    """A class's input rank where its engine kind takes several (a 1D pooling is the 2D one on a 1 x T image)."""
    if len(shape) != rank:
        raise ValueError(f"{layer.name}: expects input of rank {rank} {what} per sample, got shape "
                         f"{(None,) + tuple(shape)}")


def _positive_int(v, argument, allow_none=False):
    return _size("MultiHeadAttention", argument, v, allow_none)


def _listed(v):
    """a number, tuple or array as JSON has it (Keras configs)"""
    if v is None or isinstance(v, (int, float)):
        return v
    a = np.asarray(v)
    return a.item() if a.ndim == 0 else a.tolist()
