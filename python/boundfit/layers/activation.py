"""Activation layers with parameters: ReLU, LeakyReLU, ELU, Softmax (the
engine's ACTIVATION kind with the activation's parameters)."""

from .. import activations
from .args import _number, engine_kinds
from .layer import Layer, keras_config

ACTIVATION, = engine_kinds("ACTIVATION")


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
