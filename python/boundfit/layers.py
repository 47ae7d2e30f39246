"""Keras-style layers. Each describes itself as a spec dict for the engine
(kind ids from the engine, _core.LAYER_KINDS); the engine owns weights and compute. Calling a
layer on symbolic tensors (boundfit.Input) records a node of a graph and
returns a symbolic tensor (functional.py); shapes are inferred here so a bad
graph fails at the call, as in Keras."""

from . import activations, constraints, initializers, regularizers
from ._core import LAYER_KINDS


def engine_kinds(names):
    """The engine's layer kind numbers for space-separated names (csrc/core/model.c bf_layer_kind_names)."""
    return [LAYER_KINDS[n] for n in names.split()]


(DENSE, CONV2D, MAXPOOL, AVGPOOL, GAP, FLATTEN, RESHAPE, DROPOUT, BATCHNORM, ACTIVATION,
 ADD, SUBTRACT, MULTIPLY, AVERAGE, MAXIMUM, MINIMUM, CONCAT) = engine_kinds(
    "DENSE CONV2D MAXPOOL AVGPOOL GAP FLATTEN RESHAPE DROPOUT BATCHNORM ACTIVATION "
    "ADD SUBTRACT MULTIPLY AVERAGE MAXIMUM MINIMUM CONCAT")
_counters = {}


def _out_len(n, k, s, same):
    return -(-n // s) if same else (n - k) // s + 1


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

    def __init__(self, name=None, input_shape=None, trainable=True, **kwargs):
        kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown arguments {sorted(kwargs)}")
        if name is None:
            n = _counters.get(self._base, 0)
            _counters[self._base] = n + 1
            name = self._base if n == 0 else f"{self._base}_{n}"
        self.name = name
        self.input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._trainable = bool(trainable)
        self._model = None      # the model whose engine holds this layer's newest weights
        self._inbound = []      # nodes: one per call on symbolic tensors
        self._weight_dim = None  # last input dimension the weights were made for

    def spec(self):
        raise NotImplementedError

    def get_config(self):
        """Keras 3's config of this layer (keras_config.py)."""
        from .keras_config import layer_config
        return layer_config(self)

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)

    # ---- graphs ----
    _n_inputs = 1  # merge layers: "many"
    _has_weights = False

    def compute_output_shape(self, shape):
        """Per-sample output shape (no batch axis) for a per-sample input shape."""
        return tuple(shape)

    def __call__(self, inputs, training=None, **kwargs):
        from .functional import call_layer
        return call_layer(self, inputs, training=training, **kwargs)

    def _check_call_shape(self, shape):
        if self._has_weights:
            if self._weight_dim is not None and shape[-1] != self._weight_dim:
                raise ValueError(f"layer {self.name!r} was built for inputs with last dimension {self._weight_dim} "
                                 f"and is called on shape {(None,) + tuple(shape)}; a layer called twice shares its "
                                 "weights, so its inputs must agree")
            self._weight_dim = shape[-1]

    # ---- weights (held by the engine of the model that last used the layer) ----
    def get_weights(self):
        if self._model is None:
            return []
        return self._model._layer_weights(self)

    def set_weights(self, weights):
        if self._model is None:
            raise ValueError(f"layer {self.name!r} is not built; add it to a model with an input shape first")
        self._model._set_layer_weights(self, weights)

    @property
    def weights(self):
        return self.get_weights()

    def count_params(self):
        return sum(int(w.size) for w in self.get_weights())

    @property
    def output_shape(self):
        return self._model._layer_output_shape(self) if self._model is not None else None

    @property
    def output(self):
        if not self._inbound:
            raise AttributeError(f"layer {self.name!r} has never been called on a symbolic tensor")
        outs = self._inbound[0].outputs
        return outs[0] if len(outs) == 1 else list(outs)  # several (return_state): a list, as Keras

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class InputLayer:
    """Marks the input shape (Keras `InputLayer`); `Input(...)` returns its symbolic tensor."""

    def __init__(self, shape=None, batch_size=None, name=None, input_shape=None, dtype=None, **kwargs):
        shape = shape if shape is not None else input_shape
        if shape is None:
            raise ValueError("Input: shape is required")
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(shape)
        if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
            raise ValueError(f"Input: shape must be a tuple of positive ints (without the batch axis), got {shape!r}")
        self.shape = shape
        if name is None:
            n = _counters.get("input_layer", 0)
            _counters["input_layer"] = n + 1
            name = "input_layer" if n == 0 else f"input_layer_{n}"
        self.name = name
        self.dtype = dtype or "float32"
        self.trainable = False
        self._inbound = []

    def get_weights(self):
        return []

    def count_params(self):
        return 0

    @property
    def output(self):
        from .functional import KerasTensor
        if not hasattr(self, "_tensor"):
            self._tensor = KerasTensor(self.shape, self.dtype, self.name, input_layer=self)
        return self._tensor


def Input(shape=None, batch_size=None, dtype=None, name=None, **kwargs):
    """A symbolic input tensor (Keras `keras.Input`): call layers on it and pass
    it to `Model(inputs, outputs)`, or put it first in a Sequential."""
    return InputLayer(shape=shape, batch_size=batch_size, name=name, dtype=dtype).output


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

    _has_weights = True

    def compute_output_shape(self, shape):
        return tuple(shape[:-1]) + (self.units,)

    def spec(self):
        return dict(kind=DENSE, name=self.name, units=self.units, use_bias=int(self.use_bias), act=int(self.activation),
                    act_p=activations.params_of(self.activation),
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

    _has_weights = True

    def compute_output_shape(self, shape):
        if len(shape) != 3:
            raise ValueError(f"{self.name}: expects input of rank 3 (H, W, C) per sample, got shape {(None,) + tuple(shape)}")
        same = self.padding == "same"
        oh = _out_len(shape[0], self.kernel_size[0], self.strides[0], same)
        ow = _out_len(shape[1], self.kernel_size[1], self.strides[1], same)
        if oh <= 0 or ow <= 0:
            raise ValueError(f"{self.name}: kernel {self.kernel_size} does not fit input {shape[:2]} with padding='valid'")
        return (oh, ow, self.filters)

    def spec(self):
        return dict(kind=CONV2D, name=self.name, filters=self.filters, kh=self.kernel_size[0], kw=self.kernel_size[1],
                    sh=self.strides[0], sw=self.strides[1], same=int(self.padding == "same"), act=int(self.activation),
                    act_p=activations.params_of(self.activation),
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

    def compute_output_shape(self, shape):
        if len(shape) != 3:
            raise ValueError(f"{self.name}: expects input of rank 3 (H, W, C) per sample, got shape {(None,) + tuple(shape)}")
        same = self.padding == "same"
        oh = _out_len(shape[0], self.pool_size[0], self.strides[0], same)
        ow = _out_len(shape[1], self.pool_size[1], self.strides[1], same)
        if oh <= 0 or ow <= 0:
            raise ValueError(f"{self.name}: pool {self.pool_size} does not fit input {shape[:2]} with padding='valid'")
        return (oh, ow, shape[2])

    def spec(self):
        return dict(kind=self.kind, name=self.name, kh=self.pool_size[0], kw=self.pool_size[1], sh=self.strides[0],
                    sw=self.strides[1], same=int(self.padding == "same"))


class MaxPooling2D(_Pool):
    _base, kind = "max_pooling2d", MAXPOOL


class AveragePooling2D(_Pool):
    _base, kind = "average_pooling2d", AVGPOOL


class GlobalAveragePooling2D(Layer):
    _base = "global_average_pooling2d"

    def compute_output_shape(self, shape):
        if len(shape) != 3:
            raise ValueError(f"{self.name}: expects input of rank 3 (H, W, C) per sample, got shape {(None,) + tuple(shape)}")
        return (shape[2],)

    def spec(self):
        return dict(kind=GAP, name=self.name)


class Flatten(Layer):
    _base = "flatten"

    def compute_output_shape(self, shape):
        n = 1
        for d in shape:
            n *= d
        return (n,)

    def spec(self):
        return dict(kind=FLATTEN, name=self.name)


class Reshape(Layer):
    _base = "reshape"

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)
        if sum(1 for d in self.target_shape if d == -1) > 1 or any(d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape: bad target_shape {target_shape!r}")

    def compute_output_shape(self, shape):
        n = 1
        for d in shape:
            n *= d
        known = 1
        for d in self.target_shape:
            known *= d if d != -1 else 1
        out = tuple(n // known if d == -1 else d for d in self.target_shape)
        m = 1
        for d in out:
            m *= d
        if m != n:
            raise ValueError(f"{self.name}: cannot reshape {shape} ({n} values) into {self.target_shape}")
        return out

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

    _has_weights = True

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
        return dict(kind=ACTIVATION, name=self.name, act=int(self.activation),
                    act_p=activations.params_of(self.activation))



class _Merge(Layer):
    """Merge layers: called on a list of tensors of one shape."""
    kind = None
    _n_inputs = "many"

    def _merge_shape(self, shapes):
        first = tuple(shapes[0])
        for i, sh in enumerate(shapes[1:], 1):
            if tuple(sh) != first:
                raise ValueError(f"{self.name}: inputs must have the same shape; input 0 has shape {(None,) + first}, "
                                 f"input {i} has shape {(None,) + tuple(sh)}")
        return first

    def compute_output_shape(self, shapes):
        if len(shapes) < 2:
            raise ValueError(f"{self.name}: a merge layer needs at least 2 inputs, got {len(shapes)}")
        return self._merge_shape(shapes)

    def spec(self):
        return dict(kind=self.kind, name=self.name)


class Add(_Merge):
    _base, kind = "add", ADD


class Subtract(_Merge):
    _base, kind = "subtract", SUBTRACT

    def compute_output_shape(self, shapes):
        if len(shapes) != 2:
            raise ValueError(f"{self.name}: Subtract needs exactly 2 inputs, got {len(shapes)}")
        return self._merge_shape(shapes)


class Multiply(_Merge):
    _base, kind = "multiply", MULTIPLY


class Average(_Merge):
    _base, kind = "average", AVERAGE


class Maximum(_Merge):
    _base, kind = "maximum", MAXIMUM


class Minimum(_Merge):
    _base, kind = "minimum", MINIMUM


class Concatenate(_Merge):
    _base, kind = "concatenate", CONCAT

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, int) or axis == 0:
            raise ValueError(f"Concatenate: axis must be a non-zero int (axis 0 is the batch axis), got {axis!r}")
        self.axis = axis
        self._axis = None

    def compute_output_shape(self, shapes):
        if len(shapes) < 2:
            raise ValueError(f"{self.name}: Concatenate needs at least 2 inputs, got {len(shapes)}")
        r = len(shapes[0])
        a = self.axis - 1 if self.axis > 0 else r + self.axis
        if not 0 <= a < r or any(len(s) != r for s in shapes):
            raise ValueError(f"{self.name}: axis {self.axis} does not fit inputs of shapes "
                             f"{[(None,) + tuple(s) for s in shapes]}")
        for i, sh in enumerate(shapes[1:], 1):
            if any(sh[d] != shapes[0][d] for d in range(r) if d != a):
                raise ValueError(f"{self.name}: inputs must have the same shape except on the concatenation axis "
                                 f"{self.axis}; input 0 has shape {(None,) + tuple(shapes[0])}, input {i} has "
                                 f"shape {(None,) + tuple(sh)}")
        if self._axis is not None and self._axis != a:
            raise ValueError(f"{self.name}: called again on inputs of another rank")
        self._axis = a
        out = list(shapes[0])
        out[a] = sum(s[a] for s in shapes)
        return tuple(out)

    def spec(self):
        return dict(kind=CONCAT, name=self.name, axis=self._axis if self._axis is not None else 0)


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


# activations with parameters, layout and preprocessing layers (layers_more.py)
from .layers_more import (ELU, LeakyReLU, Normalization, Permute, RandomCrop, RandomFlip, RandomTranslation,  # noqa: E402,F401
                          ReLU, RepeatVector, Rescaling, Softmax, UpSampling2D, ZeroPadding2D)
# sequence convolution / pooling, transposed convolution, global max pooling (conv_layers.py)
from .conv_layers import (AveragePooling1D, AvgPool1D, Conv1D, Conv2DTranspose, Convolution1D,  # noqa: E402,F401
                          Convolution2DTranspose, GlobalAveragePooling1D, GlobalAvgPool1D, GlobalMaxPool1D,
                          GlobalMaxPool2D, GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPool1D, MaxPooling1D)
from .attention import LayerNormalization, MultiHeadAttention  # noqa: E402  (part D; it imports Layer from here)
# sequence layers (recurrent.py)
from .recurrent import Embedding, SimpleRNN, LSTM, GRU, Bidirectional  # noqa: E402
