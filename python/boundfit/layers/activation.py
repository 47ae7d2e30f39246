"""Activation layers with parameters: ReLU, LeakyReLU, ELU, Softmax (the
engine's ACTIVATION kind with the activation's parameters), and PReLU, whose
slope is a weight (the engine's PRELU kind, csrc/core/layers/prelu.c)."""

import numbers

import numpy as np

from .. import activations, constraints, initializers, regularizers
from .args import _number, engine_kinds
from .layer import Layer, keras_config

ACTIVATION, PRELU = engine_kinds("ACTIVATION PRELU")


# ---- activation layers ----

class _ActLayer(Layer):
    _scalar_ok = True

    def spec(self):
        return dict(kind=ACTIVATION, name=self.name, act=int(self.activation), act_p=self.activation.params())


class ReLU(_ActLayer):
    """Keras 3's `ReLU(max_value=None, negative_slope=0.0, threshold=0.0)`: the relu activation as a layer."""
    _base = "re_lu"

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold
        self.activation = activations.relu_act(negative_slope, max_value, threshold, "ReLU")


class LeakyReLU(_ActLayer):
    """Keras 3's `LeakyReLU(negative_slope=0.3)`: max(x, negative_slope * x) as a layer."""
    _base = "leaky_re_lu"

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _number(negative_slope, "negative_slope", "LeakyReLU")
        if self.negative_slope < 0:
            raise ValueError(f"LeakyReLU: negative_slope must be >= 0, got {negative_slope!r}")
        self.activation = activations.Act(activations.LEAKY_RELU, self.negative_slope)


class ELU(_ActLayer):
    """Keras 3's `ELU(alpha=1.0)`: the exponential linear unit as a layer."""
    _base = "elu"

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = _number(alpha, "alpha", "ELU")
        if self.alpha < 0:
            raise ValueError(f"ELU: alpha must be >= 0, got {alpha!r}")
        self.activation = activations.Act(activations.ELU, self.alpha)


class Softmax(_ActLayer):
    """Keras 3's `Softmax`: softmax over the last axis as a layer."""
    _base = "softmax"

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if axis not in (-1, [-1], (-1,)):
            raise ValueError(f"Softmax: only axis=-1 is supported, got axis={axis!r}")
        self.axis = -1
        self.activation = activations.Act(activations.SOFTMAX)


def _shared_axes(v):
    """Keras's shared_axes: None, an axis or a list of axes, 1-based over the per-sample axes (the batch axis is
    0); a list of ints here, each checked against the input's rank by the engine."""
    axes = None if v is None else [v] if not isinstance(v, (list, tuple)) else list(v)
    if axes is not None and not all(isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_)) and a >= 1
                                    for a in axes):
        raise ValueError(f"PReLU: shared_axes must be None, an axis or a list of axes, each at least 1 (1-based "
                         f"over the per-sample axes: the batch axis 0 is always shared), got {v!r}")
    return None if axes is None else [int(a) for a in axes]


class PReLU(Layer):
    """Keras 3's `PReLU(alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None,
    shared_axes=None)`: max(x, 0) + alpha * min(x, 0), with the weight alpha of the input's per-sample shape, size 1
    along `shared_axes`."""
    _base = "p_re_lu"
    _has_weights = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer, "alpha_initializer")
        self.alpha_regularizer = regularizers.get(alpha_regularizer, "alpha_regularizer")
        self.alpha_constraint = constraints.get(alpha_constraint, "alpha_constraint")
        self.shared_axes = _shared_axes(shared_axes)
        self._rank = None   # alpha's rank (its input's per sample), for the constraint's axes

    def _check_call_shape(self, shape):
        """alpha spans the axes not in shared_axes: their sizes must be known, and the same at every call."""
        shared = set(self.shared_axes or ())
        alpha = tuple(1 if d + 1 in shared else n for d, n in enumerate(shape))
        if None in alpha:
            raise ValueError(f"layer {self.name!r} (PReLU) needs known sizes on the axes its alpha spans (those not "
                             f"in shared_axes={self.shared_axes}), got input shape {(None,) + tuple(shape)}")
        if self._weight_dim is not None and alpha != self._weight_dim:
            raise ValueError(f"layer {self.name!r} was built for an alpha of shape {self._weight_dim} and is called "
                             f"on shape {(None,) + tuple(shape)}; a layer called twice shares its weights")
        self._weight_dim = alpha

    def _before_infer(self, shapes):
        self._rank = len(shapes[0])

    def spec(self):
        return dict(kind=PRELU, name=self.name, shared_axes=self.shared_axes,
                    inits=initializers._engine_specs(self.alpha_initializer),
                    regs=regularizers._engine_specs(self.alpha_regularizer),
                    cons=constraints._engine_specs([(self.alpha_constraint, self._rank or 1, "alpha_constraint")]))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(ReLU)
def _relu_config(l):
    return dict(max_value=l.max_value, negative_slope=l.negative_slope, threshold=l.threshold)


@keras_config(LeakyReLU)
def _leaky_relu_config(l):
    return dict(negative_slope=l.negative_slope)


@keras_config(ELU)
def _elu_config(l):
    return dict(alpha=l.alpha)


@keras_config(Softmax)
def _softmax_config(l):
    return dict(axis=-1)


@keras_config(PReLU)
def _prelu_config(l):
    return dict(alpha_initializer=initializers.serialize(l.alpha_initializer),
                alpha_regularizer=regularizers.serialize(l.alpha_regularizer),
                alpha_constraint=constraints.serialize(l.alpha_constraint),
                shared_axes=None if l.shared_axes is None else list(l.shared_axes))
