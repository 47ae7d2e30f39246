"""Keras-style layers. Each describes itself as a spec dict for the engine
(ids match csrc/core/model.h); the engine owns shapes, weights and compute."""

from . import activations, constraints, initializers, regularizers

DENSE, CONV2D, MAXPOOL, AVGPOOL, GAP, FLATTEN, RESHAPE, DROPOUT, BATCHNORM, ACTIVATION = range(10)
_counters = {}


def _pair(v, argument):
    t = (v, v) if isinstance(v, int) else tuple(v)
    if len(t) != 2 or not all(isinstance(i, int) and i > 0 for i in t):
        raise ValueError(f"{argument} must be a positive int or a pair of them, got {v!r}")
    return t


def _padding(p):
    p = str(p).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {p!r}")
    return p


def _weight_options(layer, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                    bias_constraint):
    """Dense / Conv2D: Keras regularizers and constraints (regularizers.py, constraints.py)."""
    if activity_regularizer is not None:
        raise ValueError(f"{type(layer).__name__}: activity_regularizer is not supported by boundfit")
    layer.kernel_regularizer = regularizers.get(kernel_regularizer, "kernel_regularizer")
    layer.bias_regularizer = regularizers.get(bias_regularizer, "bias_regularizer")
    layer.activity_regularizer = None
    layer.kernel_constraint = constraints.get(kernel_constraint, "kernel_constraint")
    layer.bias_constraint = constraints.get(bias_constraint, "bias_constraint")


def _weight_specs(layer, kernel_rank):
    return dict(regs=regularizers._engine_specs(layer.kernel_regularizer, layer.bias_regularizer),
                cons=constraints._engine_specs([(layer.kernel_constraint, kernel_rank, "kernel_constraint"),
                                                (layer.bias_constraint, 1, "bias_constraint")]))


class Layer:
    _base = "layer"

    def __init__(self, name=None, input_shape=None, **kwargs):
        kwargs.pop("dtype", None)
        kwargs.pop("trainable", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown arguments {sorted(kwargs)}")
        if name is None:
            n = _counters.get(self._base, 0)
            _counters[self._base] = n + 1
            name = self._base if n == 0 else f"{self._base}_{n}"
        self.name = name
        self.input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._model = None
        self._index = None

    def spec(self):
        raise NotImplementedError

    def get_config(self):
        """Keras 3's config of this layer (keras_config.py)."""
        from .keras_config import layer_config
        return layer_config(self)

    def get_weights(self):
        if self._model is None:
            return []
        return self._model._layer_weights(self._index)

    def set_weights(self, weights):
        if self._model is None:
            raise ValueError(f"layer {self.name!r} is not built; add it to a model with an input shape first")
        self._model._set_layer_weights(self._index, weights)

    @property
    def output_shape(self):
        return self._model._layer_output_shape(self._index) if self._model is not None else None

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class InputLayer:
    """Marks the input shape (Keras `Input(shape=...)` / `InputLayer`)."""

    def __init__(self, shape=None, batch_size=None, name=None, input_shape=None, **kwargs):
        shape = shape if shape is not None else input_shape
        if shape is None:
            raise ValueError("Input: shape is required")
        self.shape = tuple(shape)
        self.name = name or "input"


def Input(shape=None, batch_size=None, name=None, **kwargs):
    return InputLayer(shape=shape, batch_size=batch_size, name=name)


class Dense(Layer):
    _base = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"Dense: units must be a positive int, got {units!r}")
        self.units, self.use_bias = units, bool(use_bias)
        self.activation = activations.get_id(activation)

    def spec(self):
        return dict(kind=DENSE, name=self.name, units=self.units, use_bias=int(self.use_bias), act=self.activation,
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 2))


class Conv2D(Layer):
    _base = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", activation=None, use_bias=True,
                 data_format=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        if data_format not in (None, "channels_last"):
            raise ValueError("Conv2D: only data_format='channels_last' is supported")
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"Conv2D: filters must be a positive int, got {filters!r}")
        self.filters = filters
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.activation = activations.get_id(activation)
        self.use_bias = bool(use_bias)

    def spec(self):
        return dict(kind=CONV2D, name=self.name, filters=self.filters, kh=self.kernel_size[0], kw=self.kernel_size[1],
                    sh=self.strides[0], sw=self.strides[1], same=int(self.padding == "same"), act=self.activation,
                    use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 4))


class _Pool(Layer):
    kind = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{type(self).__name__}: only data_format='channels_last' is supported")
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides, "strides") if strides is not None else self.pool_size
        self.padding = _padding(padding)

    def spec(self):
        return dict(kind=self.kind, name=self.name, kh=self.pool_size[0], kw=self.pool_size[1], sh=self.strides[0],
                    sw=self.strides[1], same=int(self.padding == "same"))


class MaxPooling2D(_Pool):
    _base, kind = "max_pooling2d", MAXPOOL


class AveragePooling2D(_Pool):
    _base, kind = "average_pooling2d", AVGPOOL


class GlobalAveragePooling2D(Layer):
    _base = "global_average_pooling2d"

    def spec(self):
        return dict(kind=GAP, name=self.name)


class Flatten(Layer):
    _base = "flatten"

    def spec(self):
        return dict(kind=FLATTEN, name=self.name)


class Reshape(Layer):
    _base = "reshape"

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)
        if sum(1 for d in self.target_shape if d == -1) > 1 or any(d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape: bad target_shape {target_shape!r}")

    def spec(self):
        return dict(kind=RESHAPE, name=self.name, target_shape=self.target_shape)


class Dropout(Layer):
    _base = "dropout"

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}")
        if noise_shape is not None:
            raise ValueError("Dropout: noise_shape is not supported")
        self.rate, self.seed = float(rate), seed

    def spec(self):
        return dict(kind=DROPOUT, name=self.name, rate=self.rate)


class BatchNormalization(Layer):
    _base = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.beta_regularizer = regularizers.get(beta_regularizer, "beta_regularizer")
        self.gamma_regularizer = regularizers.get(gamma_regularizer, "gamma_regularizer")
        self.beta_constraint = constraints.get(beta_constraint, "beta_constraint")
        self.gamma_constraint = constraints.get(gamma_constraint, "gamma_constraint")
        self.beta_initializer = initializers.get(beta_initializer, "beta_initializer")
        self.gamma_initializer = initializers.get(gamma_initializer, "gamma_initializer")
        self.moving_mean_initializer = initializers.get(moving_mean_initializer, "moving_mean_initializer")
        self.moving_variance_initializer = initializers.get(moving_variance_initializer, "moving_variance_initializer")
        if axis not in (-1,):
            raise ValueError("BatchNormalization: only axis=-1 (channels last) is supported")
        self.momentum, self.epsilon, self.center, self.scale = float(momentum), float(epsilon), bool(center), bool(scale)

    def spec(self):
        return dict(kind=BATCHNORM, name=self.name, momentum=self.momentum, eps=self.epsilon, center=int(self.center),
                    scale=int(self.scale),
                    inits=initializers._engine_specs(self.gamma_initializer, self.beta_initializer,
                                                     self.moving_mean_initializer, self.moving_variance_initializer),
                    regs=regularizers._engine_specs(self.gamma_regularizer, self.beta_regularizer),
                    cons=constraints._engine_specs([(self.gamma_constraint, 1, "gamma_constraint"),
                                                    (self.beta_constraint, 1, "beta_constraint")]))


class Activation(Layer):
    _base = "activation"

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get_id(activation)

    def spec(self):
        return dict(kind=ACTIVATION, name=self.name, act=self.activation)

