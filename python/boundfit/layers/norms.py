"""UnitNormalization, RMSNormalization and GroupNormalization as Keras 3
writes them in keras.ops, composed from the engine's reductions and
elementwise ops (compose.py); their weights are Weight sublayers, in Keras's
order (RMSNormalization's scale; GroupNormalization's gamma, beta)."""

from .. import constraints, initializers, regularizers
from .args import _size
from .compose import against, axes_of, checked_axis, positive_number, rsqrt_plus, weight
from .emath import Binary, Unary
from .layer import Layer, keras_config
from .normalization import gamma_beta_options
from .reduce import Reduce
from .reshaping import Reshape


class UnitNormalization(Layer):
    """Keras 3's `UnitNormalization(axis=-1)`: x / ||x||_2 over `axis` (Keras's ops.normalize: x * min(rsqrt(sum
    x^2), 1e12))."""
    _base = "unit_normalization"

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = checked_axis("UnitNormalization", axis)

    def call(self, inputs):
        axes = axes_of(self, self.axis, len(inputs._ps))
        inv = Unary("minimum", 1e12)(Unary("rsqrt")(Reduce("sum", axes, keepdims=True)(Unary("square")(inputs))))
        return Binary("multiply")([inputs, inv])


class RMSNormalization(Layer):
    """Keras 3's `RMSNormalization(axis=-1, epsilon=1e-6)`: x * rsqrt(mean(x^2 over axis) + epsilon) * scale, the
    weight `scale` (ones) of the normalized axes' shape; those axes end the input (so the scale broadcasts as in
    Keras)."""
    _base = "rms_normalization"

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis = checked_axis("RMSNormalization", axis)
        self.epsilon = positive_number("RMSNormalization", "epsilon", epsilon)

    def build(self, input_shape):
        rank = len(input_shape) - 1
        axes = axes_of(self, self.axis, rank)
        if axes != tuple(range(rank - len(axes) + 1, rank + 1)) or any(input_shape[a] is None for a in axes):
            raise ValueError(f"RMSNormalization {self.name!r}: axis {self.axis!r} must name the last axes of the "
                             f"input, of known sizes (its scale broadcasts against them), got input shape "
                             f"{tuple(input_shape)}")
        self.scale = weight(self, "scale", tuple(input_shape[a] for a in axes), "ones")
        self._axes = axes

    def call(self, inputs):
        ms = Reduce("mean", self._axes, keepdims=True)(Unary("square")(inputs))
        y = Binary("multiply")([inputs, rsqrt_plus(ms, self.epsilon)])
        return Binary("multiply")([y, against(self.scale(inputs), inputs)])


class GroupNormalization(Layer):
    """Keras 3's `GroupNormalization(groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, ...)`: the
    channels (the last axis) in `groups` groups, each normalized over the other axes of a sample and its
    channels, then gamma * x + beta per channel; groups=-1 is one group per channel (instance normalization)."""
    _base = "group_normalization"

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if groups != -1:
            _size("GroupNormalization", "groups", groups)
        self.groups = int(groups)
        self.axis = checked_axis("GroupNormalization", axis)
        self.epsilon = positive_number("GroupNormalization", "epsilon", epsilon)
        self.center, self.scale = bool(center), bool(scale)
        gamma_beta_options(self, beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
                           beta_constraint, gamma_constraint)

    def build(self, input_shape):
        rank = len(input_shape) - 1
        if axes_of(self, self.axis, rank) != (rank,):
            raise ValueError(f"GroupNormalization {self.name!r}: axis must be the channels axis, the last (-1): "
                             f"boundfit groups channels last only, got axis={self.axis!r}")
        dim = input_shape[-1]
        if dim is None:
            raise ValueError(f"GroupNormalization {self.name!r}: the channels axis needs a known size, got input "
                             f"shape {tuple(input_shape)}")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups or dim % self.groups:
            raise ValueError(f"GroupNormalization {self.name!r}: groups={self.groups} must divide the {dim} "
                             "channels of the input")
        self._gamma = weight(self, "gamma", (dim,), self.gamma_initializer, self.gamma_regularizer,
                            self.gamma_constraint) if self.scale else None
        self._beta = weight(self, "beta", (dim,), self.beta_initializer, self.beta_regularizer,
                           self.beta_constraint) if self.center else None

    def call(self, inputs):
        ps, g = inputs._ps, self.groups
        c = ps[-1]
        x = Reshape((-1, g, c // g))(inputs)               # (positions, groups, channels of a group)
        mean = Reduce("mean", (1, 3), keepdims=True)(x)
        centered = Binary("subtract")([x, mean])
        inv = rsqrt_plus(Reduce("mean", (1, 3), keepdims=True)(Unary("square")(centered)), self.epsilon)
        y = Binary("multiply")([centered, inv])
        if self._gamma is not None:
            y = Binary("multiply")([y, Reshape((1, g, c // g))(self._gamma(inputs))])
        if self._beta is not None:
            y = Binary("add")([y, Reshape((1, g, c // g))(self._beta(inputs))])
        return Reshape(tuple(-1 if d is None else d for d in ps))(y)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(UnitNormalization)
def _unit_normalization_config(l):
    return dict(axis=l.axis)


@keras_config(RMSNormalization)
def _rms_normalization_config(l):
    return dict(axis=l.axis, epsilon=l.epsilon)


@keras_config(GroupNormalization)
def _group_normalization_config(l):
    return dict(groups=l.groups, axis=l.axis, epsilon=l.epsilon, center=l.center, scale=l.scale,
                beta_initializer=initializers.serialize(l.beta_initializer),
                gamma_initializer=initializers.serialize(l.gamma_initializer),
                beta_regularizer=regularizers.serialize(l.beta_regularizer),
                gamma_regularizer=regularizers.serialize(l.gamma_regularizer),
                beta_constraint=constraints.serialize(l.beta_constraint),
                gamma_constraint=constraints.serialize(l.gamma_constraint))
