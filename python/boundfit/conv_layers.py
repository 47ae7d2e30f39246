"""Sequence convolution and pooling, transposed convolution and global max
pooling, with Keras 3's names, arguments, defaults and weight layouts:
Conv1D (kernel (k, C, filters); padding 'valid' / 'same' / 'causal';
dilation_rate), MaxPooling1D, AveragePooling1D, GlobalAveragePooling1D,
GlobalMaxPooling1D, GlobalMaxPooling2D (keepdims) and Conv2DTranspose
(kernel (kh, kw, filters, C); output_padding=None). Each describes itself as
an engine spec (kinds of csrc/core/model.h); 1D pooling is the engine's 2D
pooling of a 1 x T image. Re-exported from `boundfit.layers`."""

from . import activations, initializers
from .layers import GAP, MAXPOOL, AVGPOOL, Layer, _out_len, _pair, _padding, _weight_options, _weight_specs, engine_kinds

CONV1D, CONV2DT, GMP = engine_kinds("CONV1D CONV2DT GMP")


def _single(v, argument):
    t = (v,) if isinstance(v, int) else tuple(v) if isinstance(v, (list, tuple)) else None
    if t is None or len(t) != 1 or not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in t):
        raise ValueError(f"{argument} must be a positive int or a tuple of one, got {v!r}")
    return t


def _channels_last(cls, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{cls}: only data_format='channels_last' is supported, got {data_format!r}")


def _filters(cls, filters):
    if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
        raise ValueError(f"{cls}: filters must be a positive int, got {filters!r}")
    return filters


def _rank(layer, shape, rank, what):
    if len(shape) != rank:
        raise ValueError(f"{layer.name}: expects input of rank {rank} {what} per sample, got shape "
                         f"{(None,) + tuple(shape)}")


class Conv1D(Layer):
    _base = "conv1d"
    _has_weights = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1, groups=1,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("Conv1D", data_format)
        self.filters = _filters("Conv1D", filters)
        self.kernel_size = _single(kernel_size, "kernel_size")
        self.strides = _single(strides, "strides")
        self.dilation_rate = _single(dilation_rate, "dilation_rate")
        if self.strides[0] > 1 and self.dilation_rate[0] > 1:
            raise ValueError(f"Conv1D: strides > 1 is not supported together with dilation_rate > 1 (as in Keras), "
                             f"got strides={strides!r} and dilation_rate={dilation_rate!r}")
        if groups != 1:
            raise ValueError(f"Conv1D: groups must be 1 (grouped convolution is not supported), got {groups!r}")
        p = str(padding).lower()
        if p not in ("valid", "same", "causal"):
            raise ValueError(f"padding must be 'valid', 'same' or 'causal', got {padding!r}")
        self.padding = p
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.activation = activations.get_id(activation)
        self.use_bias = bool(use_bias)

    def compute_output_shape(self, shape):
        _rank(self, shape, 2, "(steps, channels)")
        k, s, d = self.kernel_size[0], self.strides[0], self.dilation_rate[0]
        span = (k - 1) * d + 1
        ot = -(-shape[0] // s) if self.padding != "valid" else (shape[0] - span) // s + 1
        if ot <= 0:
            raise ValueError(f"{self.name}: kernel_size {k} with dilation_rate {d} does not fit {shape[0]} steps "
                             "with padding='valid'")
        return (ot, self.filters)

    def spec(self):
        return dict(kind=CONV1D, name=self.name, filters=self.filters, kw=self.kernel_size[0], sw=self.strides[0],
                    dil=self.dilation_rate[0], same=int(self.padding == "same"),
                    causal=int(self.padding == "causal"), act=int(self.activation),
                    act_p=activations.params_of(self.activation), use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 3))


class Conv2DTranspose(Layer):
    _base = "conv2d_transpose"
    _has_weights = True

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("Conv2DTranspose", data_format)
        self.filters = _filters("Conv2DTranspose", filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        if output_padding is not None:
            raise ValueError(f"Conv2DTranspose: output_padding must be None (Keras's default), got {output_padding!r}")
        self.output_padding = None
        if _pair(dilation_rate, "dilation_rate") != (1, 1):
            raise ValueError(f"Conv2DTranspose: dilation_rate must be 1, got {dilation_rate!r}")
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.activation = activations.get_id(activation)
        self.use_bias = bool(use_bias)

    def compute_output_shape(self, shape):
        _rank(self, shape, 3, "(H, W, C)")
        out = []
        for n, k, s in zip(shape[:2], self.kernel_size, self.strides):
            out.append(n * s if self.padding == "same" else (n - 1) * s + max(k, s))
        return (out[0], out[1], self.filters)

    def spec(self):
        return dict(kind=CONV2DT, name=self.name, filters=self.filters, kh=self.kernel_size[0], kw=self.kernel_size[1],
                    sh=self.strides[0], sw=self.strides[1], same=int(self.padding == "same"), act=int(self.activation),
                    act_p=activations.params_of(self.activation), use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 4))


class _Pool1D(Layer):
    kind = None

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        _channels_last(type(self).__name__, data_format)
        self.pool_size = _single(pool_size, "pool_size")
        self.strides = _single(strides, "strides") if strides is not None else self.pool_size
        self.padding = _padding(padding)

    def compute_output_shape(self, shape):
        _rank(self, shape, 2, "(steps, channels)")
        ot = _out_len(shape[0], self.pool_size[0], self.strides[0], self.padding == "same")
        if ot <= 0:
            raise ValueError(f"{self.name}: pool_size {self.pool_size[0]} does not fit {shape[0]} steps with "
                             "padding='valid'")
        return (ot, shape[1])

    def spec(self):
        return dict(kind=self.kind, name=self.name, kh=1, sh=1, kw=self.pool_size[0], sw=self.strides[0],
                    same=int(self.padding == "same"))


class MaxPooling1D(_Pool1D):
    _base, kind = "max_pooling1d", MAXPOOL

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(pool_size, strides=strides, padding=padding, data_format=data_format, name=name, **kwargs)


class AveragePooling1D(_Pool1D):
    _base, kind = "average_pooling1d", AVGPOOL


class _GlobalPool(Layer):
    kind, rank = None, None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        _channels_last(type(self).__name__, data_format)
        if not isinstance(keepdims, bool):
            raise ValueError(f"{type(self).__name__}: keepdims must be a bool, got {keepdims!r}")
        self.keepdims = keepdims

    def compute_output_shape(self, shape):
        _rank(self, shape, self.rank, "(steps, channels)" if self.rank == 2 else "(H, W, C)")
        return (1,) * (self.rank - 1) + (shape[-1],) if self.keepdims else (shape[-1],)

    def spec(self):
        return dict(kind=self.kind, name=self.name, keepdims=int(self.keepdims))


class GlobalAveragePooling1D(_GlobalPool):
    _base, kind, rank = "global_average_pooling1d", GAP, 2


class GlobalMaxPooling1D(_GlobalPool):
    _base, kind, rank = "global_max_pooling1d", GMP, 2


class GlobalMaxPooling2D(_GlobalPool):
    _base, kind, rank = "global_max_pooling2d", GMP, 3


# Keras's aliases
Convolution1D, Convolution2DTranspose = Conv1D, Conv2DTranspose
MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D
GlobalAvgPool1D, GlobalMaxPool1D, GlobalMaxPool2D = GlobalAveragePooling1D, GlobalMaxPooling1D, GlobalMaxPooling2D
