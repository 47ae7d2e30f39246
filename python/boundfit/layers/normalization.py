"""BatchNormalization and LayerNormalization (Keras 3 names, arguments,
defaults and weight layouts). The engine computes them (LayerNormalization:
csrc/core/run_attn.c with the backends' layernorm_* ops)."""

from .. import constraints, initializers, regularizers
from .args import engine_kinds
from .layer import Layer, keras_config

BATCHNORM, LAYERNORM = engine_kinds("BATCHNORM LAYERNORM")


def gamma_beta_options(layer, beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
                       beta_constraint, gamma_constraint):
    """A normalization's gamma / beta initializers, regularizers and constraints, each checked by name (Keras's
    arguments of BatchNormalization, LayerNormalization, GroupNormalization)"""
    layer.beta_regularizer = regularizers.get(beta_regularizer, "beta_regularizer")
    layer.gamma_regularizer = regularizers.get(gamma_regularizer, "gamma_regularizer")
    layer.beta_constraint = constraints.get(beta_constraint, "beta_constraint")
    layer.gamma_constraint = constraints.get(gamma_constraint, "gamma_constraint")
    layer.beta_initializer = initializers.get(beta_initializer, "beta_initializer")
    layer.gamma_initializer = initializers.get(gamma_initializer, "gamma_initializer")


def _one_axis(cls, axis):
    """a normalization's axis: an int, or a list of one (Keras's form); which axis it is, the input decides"""
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise ValueError(f"{cls}: only the last axis is supported, got axis={list(axis)!r}")
        axis = axis[0]
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{cls}: axis must be an int or a list of ints, got {axis!r}")
    return axis


def _check_last_axis(layer, shape):
    r = len(shape) + 1  # with the batch axis
    if not (layer.axis == -1 or layer.axis == r - 1):
        raise ValueError(f"{layer.name}: only the last axis is supported (axis=-1 or {r - 1} for inputs of shape "
                         f"{(None,) + tuple(shape)}), got axis={layer.axis}")


class BatchNormalization(Layer):
    """Keras 3's `BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001, ...)`: batch statistics in fit, the moving
    mean and variance otherwise; a frozen one runs in inference mode."""
    _base = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        gamma_beta_options(self, beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
                           beta_constraint, gamma_constraint)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer, "moving_mean_initializer")
        self.moving_variance_initializer = initializers.get(moving_variance_initializer, "moving_variance_initializer")
        self.axis = _one_axis("BatchNormalization", axis)
        self.momentum, self.epsilon, self.center, self.scale = float(momentum), float(epsilon), bool(center), bool(scale)

    _has_weights = True
    _mode_dependent = True

    def _before_infer(self, shapes):
        _check_last_axis(self, shapes[0])

    def _check_train_mode(self, train_mode, compiling=False):
        """(training=False on a trainable layer fails fit in the engine, csrc/core/layers/batchnorm.c: a frozen
        one, or evaluate / predict, run it)"""
        if train_mode == 1:
            raise ValueError(f"layer {self.name!r} (BatchNormalization) is called with training=True: boundfit "
                             "updates moving statistics in fit only, so it cannot run in training mode in evaluate / "
                             "predict; call it without training=")

    def spec(self):
        return dict(kind=BATCHNORM, name=self.name, momentum=self.momentum, eps=self.epsilon, center=int(self.center),
                    scale=int(self.scale),
                    inits=initializers._engine_specs(self.gamma_initializer, self.beta_initializer,
                                                     self.moving_mean_initializer, self.moving_variance_initializer),
                    regs=regularizers._engine_specs(self.gamma_regularizer, self.beta_regularizer),
                    cons=constraints._engine_specs([(self.gamma_constraint, 1, "gamma_constraint"),
                                                    (self.beta_constraint, 1, "beta_constraint")]))


class LayerNormalization(Layer):
    """Normalizes each sample over its last axis: (x - mean) / sqrt(var + epsilon) * gamma + beta."""
    _base = "layer_normalization"
    _has_weights = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, rms_scaling=False, **kwargs):
        super().__init__(**kwargs)
        axis = _one_axis("LayerNormalization", axis)
        if rms_scaling:
            raise ValueError("LayerNormalization: rms_scaling=True is not supported by boundfit")
        if not float(epsilon) > 0.0:
            raise ValueError(f"LayerNormalization: epsilon must be > 0, got {epsilon!r}")
        self.axis, self.epsilon, self.center, self.scale = axis, float(epsilon), bool(center), bool(scale)
        self.rms_scaling = False
        gamma_beta_options(self, beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
                           beta_constraint, gamma_constraint)

    def _before_infer(self, shapes):
        _check_last_axis(self, shapes[0])

    def spec(self):
        return dict(kind=LAYERNORM, name=self.name, eps=self.epsilon, center=int(self.center), scale=int(self.scale),
                    inits=initializers._engine_specs(self.gamma_initializer, self.beta_initializer),
                    regs=regularizers._engine_specs(self.gamma_regularizer, self.beta_regularizer),
                    cons=constraints._engine_specs([(self.gamma_constraint, 1, "gamma_constraint"),
                                                    (self.beta_constraint, 1, "beta_constraint")]))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(BatchNormalization)
def _batchnorm_config(l):
    return dict(axis=l.axis, momentum=l.momentum, epsilon=l.epsilon, center=l.center, scale=l.scale,
                beta_initializer=initializers.serialize(l.beta_initializer),
                gamma_initializer=initializers.serialize(l.gamma_initializer),
                moving_mean_initializer=initializers.serialize(l.moving_mean_initializer),
                moving_variance_initializer=initializers.serialize(l.moving_variance_initializer),
                beta_regularizer=regularizers.serialize(l.beta_regularizer),
                gamma_regularizer=regularizers.serialize(l.gamma_regularizer),
                beta_constraint=constraints.serialize(l.beta_constraint),
                gamma_constraint=constraints.serialize(l.gamma_constraint))


@keras_config(LayerNormalization)
def _layernorm_config(l):
    return dict(axis=-1, epsilon=l.epsilon, center=l.center, scale=l.scale, rms_scaling=False,
                beta_initializer=initializers.serialize(l.beta_initializer),
                gamma_initializer=initializers.serialize(l.gamma_initializer),
                beta_regularizer=regularizers.serialize(l.beta_regularizer),
                gamma_regularizer=regularizers.serialize(l.gamma_regularizer),
                beta_constraint=constraints.serialize(l.beta_constraint),
                gamma_constraint=constraints.serialize(l.gamma_constraint))
