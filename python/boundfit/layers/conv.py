"""Convolutions with Keras 3's names, arguments, defaults and weight layouts:
Conv2D, Conv1D (kernel (k, C, filters); padding 'valid' / 'same' / 'causal';
dilation_rate), Conv2DTranspose (kernel (kh, kw, filters, C);
output_padding=None), Conv3D / Conv3DTranspose over (D, H, W, C) samples
(the engine's CPU kinds CONV3D / CONV3DT), the depthwise and separable ones
(1D: the 2D kinds on a 1 x T image). Each describes itself as an engine spec
(kinds of csrc/core/layer_kinds.h)."""

from .. import activations, constraints, initializers, regularizers
from .args import (_channels_last, _filters, _pair, _padding, _rank, _single, _size, _sizes, _weight_options,
                   _weight_specs, engine_kinds)
from .layer import Layer, keras_config

CONV2D, CONV1D, CONV2DT, DEPTHWISE2D, CONV3D, CONV3DT = engine_kinds("CONV2D CONV1D CONV2DT DEPTHWISE2D CONV3D CONV3DT")


class Conv2D(Layer):
    """Keras 3's `Conv2D(filters, kernel_size, strides=(1, 1), padding='valid', ...)`: a 2-D convolution with Keras's
    kernel layout (kh, kw, C, filters). groups=C on C input channels (ConvNeXt's depthwise Conv2D) is the engine's
    depthwise kind with Conv2D's kernel (kh, kw, 1, filters); other groups > 1 are refused naming groups."""
    _base = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", activation=None, use_bias=True,
                 data_format=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, groups=1, **kwargs):
        super().__init__(**kwargs)
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        if data_format not in (None, "channels_last"):
            raise ValueError("Conv2D: only data_format='channels_last' is supported")
        self.filters = _filters(type(self).__name__, filters)
        self.kernel_size = _pair(kernel_size, "kernel_size", type(self).__name__)
        self.strides = _pair(strides, "strides", type(self).__name__)
        self.padding = _padding(padding)
        self.activation = activations.layer_activation(self, activation)
        self.use_bias = bool(use_bias)
        self.groups = _size("Conv2D", "groups", groups)
        if self.filters % self.groups:
            raise ValueError(f"Conv2D: the number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={groups}, filters={filters}")

    _has_weights = True

    def spec(self):
        if self.groups > 1:   # depthwise.c: groups must equal the input's channels
            return dict(self._spec(DEPTHWISE2D), filters=self.filters // self.groups, groups=self.groups)
        return self._spec(CONV2D)

    def _spec(self, kind):
        return dict(kind=kind, name=self.name, filters=self.filters, kh=self.kernel_size[0], kw=self.kernel_size[1],
                    sh=self.strides[0], sw=self.strides[1], same=int(self.padding == "same"), act=int(self.activation),
                    act_p=activations.params_of(self.activation),
                    use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 4))


class DepthwiseConv2D(Layer):
    """Keras's DepthwiseConv2D: each input channel c convolved with its own
    depth_multiplier (M) kernels; output channel c*M + m; depthwise_kernel
    (kh, kw, C, M) and bias (C*M) (csrc/core/layers/depthwise.c)."""
    _base = "depthwise_conv2d"
    _keras_var_names = {"depthwise_kernel": "kernel"}   # Keras's DepthwiseConv2D (SeparableConv's piece: as named)
    _has_weights = True

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("DepthwiseConv2D", data_format)
        if _pair(dilation_rate, "dilation_rate", type(self).__name__) != (1, 1):
            raise ValueError(f"DepthwiseConv2D: only dilation_rate=1 is supported, got {dilation_rate!r}")
        _weight_options(self, depthwise_regularizer, bias_regularizer, activity_regularizer, depthwise_constraint,
                        bias_constraint)
        self.depth_multiplier = _size("DepthwiseConv2D", "depth_multiplier", depth_multiplier)
        self.kernel_size = _pair(kernel_size, "kernel_size", type(self).__name__)
        self.strides = _pair(strides, "strides", type(self).__name__)
        self.padding = _padding(padding)
        self.activation = activations.layer_activation(self, activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = initializers.get(depthwise_initializer, "depthwise_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")

    def spec(self):
        return dict(kind=DEPTHWISE2D, name=self.name, filters=self.depth_multiplier, kh=self.kernel_size[0],
                    kw=self.kernel_size[1], sh=self.strides[0], sw=self.strides[1],
                    same=int(self.padding == "same"), act=int(self.activation),
                    act_p=activations.params_of(self.activation), use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.depthwise_initializer, self.bias_initializer),
                    **_weight_specs(self, 4))


class SeparableConv2D(Layer):
    """Keras's SeparableConv2D: a DepthwiseConv2D (no bias) then a 1x1 Conv2D
    with the bias and the activation, its weights (depthwise_kernel (kh, kw, C,
    M), pointwise_kernel (1, 1, C*M, filters), bias (filters)) in Keras's
    order. Its call() is traced into those two layers; Keras files hold it as
    one SeparableConv2D (saving/keras_graph.py: a composite layer), both ways."""
    _base = "separable_conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1),
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.filters = _filters("SeparableConv2D", filters)
        self.depthwise = DepthwiseConv2D(kernel_size, strides=strides, padding=padding, data_format=data_format,
                                         dilation_rate=dilation_rate, depth_multiplier=depth_multiplier,
                                         use_bias=False, depthwise_initializer=depthwise_initializer,
                                         depthwise_regularizer=depthwise_regularizer,
                                         activity_regularizer=activity_regularizer,
                                         depthwise_constraint=depthwise_constraint, name=f"{self.name}_depthwise")
        self.depthwise._keras_var_names = {}
        self.pointwise = Conv2D(filters, 1, activation=activation, use_bias=use_bias,
                                kernel_initializer=pointwise_initializer, bias_initializer=bias_initializer,
                                kernel_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
                                kernel_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                                name=f"{self.name}_pointwise")
        self.pointwise._keras_var_names = {"kernel": "pointwise_kernel"}

    def call(self, inputs):
        return self.pointwise(self.depthwise(inputs))



class Conv1D(Layer):
    """Keras 3's `Conv1D(filters, kernel_size, strides=1, padding='valid', dilation_rate=1, ...)`: a convolution over
    the steps of (T, C) inputs; padding 'valid', 'same' or 'causal'."""
    _base = "conv1d"
    _has_weights = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1, groups=1,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("Conv1D", data_format)
        self.filters = _filters("Conv1D", filters)
        self.kernel_size = _single(kernel_size, "kernel_size", type(self).__name__)
        self.strides = _single(strides, "strides", type(self).__name__)
        self.dilation_rate = _single(dilation_rate, "dilation_rate", type(self).__name__)
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
        self.activation = activations.layer_activation(self, activation)
        self.use_bias = bool(use_bias)

    def spec(self):
        return dict(kind=CONV1D, name=self.name, filters=self.filters, kw=self.kernel_size[0], sw=self.strides[0],
                    dil=self.dilation_rate[0], same=int(self.padding == "same"),
                    causal=int(self.padding == "causal"), act=int(self.activation),
                    act_p=activations.params_of(self.activation), use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 3))


class Conv2DTranspose(Layer):
    """Keras 3's `Conv2DTranspose(filters, kernel_size, strides=(1, 1), padding='valid', ...)`: the adjoint of a
    Conv2D, kernel (kh, kw, filters, C)."""
    _base = "conv2d_transpose"
    _has_weights = True

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("Conv2DTranspose", data_format)
        self.filters = _filters("Conv2DTranspose", filters)
        self.kernel_size = _pair(kernel_size, "kernel_size", type(self).__name__)
        self.strides = _pair(strides, "strides", type(self).__name__)
        self.padding = _padding(padding)
        if output_padding is not None:
            raise ValueError(f"Conv2DTranspose: output_padding must be None (Keras's default), got {output_padding!r}")
        self.output_padding = None
        if _pair(dilation_rate, "dilation_rate", type(self).__name__) != (1, 1):
            raise ValueError(f"Conv2DTranspose: dilation_rate must be 1, got {dilation_rate!r}")
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.activation = activations.layer_activation(self, activation)
        self.use_bias = bool(use_bias)

    def spec(self):
        return dict(kind=CONV2DT, name=self.name, filters=self.filters, kh=self.kernel_size[0], kw=self.kernel_size[1],
                    sh=self.strides[0], sw=self.strides[1], same=int(self.padding == "same"), act=int(self.activation),
                    act_p=activations.params_of(self.activation), use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 4))


class Conv1DTranspose(Conv2DTranspose):
    """Keras's Conv1DTranspose: kernel (k, filters, C) on (T, C) samples; the
    engine's Conv2DTranspose on a 1 x T image (csrc/core/layers/conv.c)."""
    _base = "conv1d_transpose"

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        k, s, d = (_single(v, name, type(self).__name__)[0] for v, name in ((kernel_size, "kernel_size"), (strides, "strides"),
                                                       (dilation_rate, "dilation_rate")))
        super().__init__(filters, (1, k), strides=(1, s), padding=padding, output_padding=output_padding,
                         data_format=data_format, dilation_rate=(1, d), activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                         bias_constraint=bias_constraint, **kwargs)

    def _before_infer(self, shapes):
        _rank(self, shapes[0], 2, "(T, C)")   # the engine's kind takes (H, W, C) too: Conv2DTranspose

    def spec(self):
        return dict(super().spec(), **_weight_specs(self, 3))


class DepthwiseConv1D(DepthwiseConv2D):
    """Keras's DepthwiseConv1D: depthwise_kernel (k, C, M) on (T, C) samples, output channel c*M + m; the engine's
    DepthwiseConv2D on a 1 x T image (csrc/core/layers/depthwise.c)."""
    _base = "depthwise_conv1d"

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        k, s, d = (_single(v, name, type(self).__name__)[0] for v, name in ((kernel_size, "kernel_size"),
                                                                          (strides, "strides"),
                                                                          (dilation_rate, "dilation_rate")))
        _channels_last("DepthwiseConv1D", data_format)
        if d != 1:
            raise ValueError(f"DepthwiseConv1D: only dilation_rate=1 is supported, got {dilation_rate!r}")
        super().__init__((1, k), strides=(1, s), padding=padding, depth_multiplier=depth_multiplier,
                         activation=activation, use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, depthwise_regularizer=depthwise_regularizer,
                         bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                         depthwise_constraint=depthwise_constraint, bias_constraint=bias_constraint, **kwargs)

    def _before_infer(self, shapes):
        _rank(self, shapes[0], 2, "(T, C)")   # the engine's kind takes (H, W, C) too: DepthwiseConv2D

    def spec(self):
        return dict(super().spec(), **_weight_specs(self, 3))


class SeparableConv1D(Layer):
    """Keras's SeparableConv1D: a DepthwiseConv1D (no bias) then a kernel-1 Conv1D with the bias and the
    activation; weights depthwise_kernel (k, C, M), pointwise_kernel (1, C*M, filters), bias (filters) in Keras's
    order; one SeparableConv1D in Keras files (a composite, as SeparableConv2D)."""
    _base = "separable_conv1d"

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.filters = _filters("SeparableConv1D", filters)
        self.depthwise = DepthwiseConv1D(kernel_size, strides=strides, padding=padding, data_format=data_format,
                                         dilation_rate=dilation_rate, depth_multiplier=depth_multiplier,
                                         use_bias=False, depthwise_initializer=depthwise_initializer,
                                         depthwise_regularizer=depthwise_regularizer,
                                         activity_regularizer=activity_regularizer,
                                         depthwise_constraint=depthwise_constraint, name=f"{self.name}_depthwise")
        self.depthwise._keras_var_names = {}
        self.pointwise = Conv1D(filters, 1, activation=activation, use_bias=use_bias,
                                kernel_initializer=pointwise_initializer, bias_initializer=bias_initializer,
                                kernel_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
                                kernel_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                                name=f"{self.name}_pointwise")
        self.pointwise._keras_var_names = {"kernel": "pointwise_kernel"}

    def call(self, inputs):
        return self.pointwise(self.depthwise(inputs))


class Conv3D(Layer):
    """Keras 3's `Conv3D(filters, kernel_size, strides=(1, 1, 1), padding='valid', ...)`: a convolution over
    (D, H, W, C) samples, kernel (kd, kh, kw, C, filters) (the engine's CONV3D, on the CPU)."""
    _base, _kind, _transposed = "conv3d", CONV3D, False
    _has_weights = True

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        _channels_last(cls, data_format)
        self.filters = _filters(cls, filters)
        self.kernel_size = _sizes(cls, "kernel_size", kernel_size, 3)
        self.strides = _sizes(cls, "strides", strides, 3)
        self.padding = _padding(padding)
        if _sizes(cls, "dilation_rate", dilation_rate, 3) != (1, 1, 1):
            raise ValueError(f"{cls}: only dilation_rate=1 is supported, got {dilation_rate!r}")
        if groups != 1:
            raise ValueError(f"{cls}: groups must be 1 (grouped convolution is not supported), got {groups!r}")
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.activation = activations.layer_activation(self, activation)
        self.use_bias = bool(use_bias)

    def spec(self):
        (kd, kh, kw), (sd, sh, sw) = self.kernel_size, self.strides
        return dict(kind=self._kind, name=self.name, filters=self.filters, kd=kd, kh=kh, kw=kw, sd=sd, sh=sh, sw=sw,
                    same=int(self.padding == "same"), act=int(self.activation),
                    act_p=activations.params_of(self.activation), use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 5))


class Conv3DTranspose(Conv3D):
    """Keras 3's `Conv3DTranspose(filters, kernel_size, strides=(1, 1, 1), padding='valid', ...)`: the adjoint of
    a Conv3D, kernel (kd, kh, kw, filters, C); output_padding=None (the engine's CONV3DT, on the CPU)."""
    _base, _kind, _transposed = "conv3d_transpose", CONV3DT, True

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        if output_padding is not None:
            raise ValueError(f"Conv3DTranspose: output_padding must be None (Keras's default), got {output_padding!r}")
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                         bias_constraint=bias_constraint, **kwargs)
        self.output_padding = None


# Keras's aliases
Convolution1D, Convolution2DTranspose, Convolution1DTranspose = Conv1D, Conv2DTranspose, Conv1DTranspose
Convolution2D, Convolution3D, Convolution3DTranspose = Conv2D, Conv3D, Conv3DTranspose
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Conv2D)
def _conv_config(l):
    return dict(filters=l.filters, kernel_size=list(l.kernel_size), strides=list(l.strides), padding=l.padding,
                data_format="channels_last", dilation_rate=[1, 1], groups=getattr(l, "groups", 1),
                activation=activations.layer_config_name(l), use_bias=l.use_bias,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer), activity_regularizer=None,
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint))


@keras_config(DepthwiseConv2D)
def _depthwise_config(l):
    return dict(kernel_size=list(l.kernel_size), strides=list(l.strides), padding=l.padding,
                data_format="channels_last", dilation_rate=[1, 1], depth_multiplier=l.depth_multiplier,
                activation=activations.layer_config_name(l), use_bias=l.use_bias,
                depthwise_initializer=initializers.serialize(l.depthwise_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                depthwise_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer), activity_regularizer=None,
                depthwise_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint))


@keras_config(SeparableConv2D)
def _separable_config(l):
    d, p = l.depthwise, l.pointwise
    return dict(filters=l.filters, kernel_size=list(d.kernel_size), strides=list(d.strides), padding=d.padding,
                data_format="channels_last", dilation_rate=[1, 1], depth_multiplier=d.depth_multiplier,
                activation=activations.layer_config_name(p), use_bias=p.use_bias,
                depthwise_initializer=initializers.serialize(d.depthwise_initializer),
                pointwise_initializer=initializers.serialize(p.kernel_initializer),
                bias_initializer=initializers.serialize(p.bias_initializer),
                depthwise_regularizer=regularizers.serialize(d.kernel_regularizer),
                pointwise_regularizer=regularizers.serialize(p.kernel_regularizer),
                bias_regularizer=regularizers.serialize(p.bias_regularizer), activity_regularizer=None,
                depthwise_constraint=constraints.serialize(d.kernel_constraint),
                pointwise_constraint=constraints.serialize(p.kernel_constraint),
                bias_constraint=constraints.serialize(p.bias_constraint))


@keras_config(Conv1D)
def _conv1d_config(l):
    return dict(_conv_config(l), kernel_size=list(l.kernel_size), strides=list(l.strides),
                dilation_rate=list(l.dilation_rate))


@keras_config(Conv2DTranspose)
def _conv2d_transpose_config(l):
    d = _conv_config(l)
    del d["groups"]
    return dict(d, output_padding=None)


@keras_config(Conv1DTranspose)
def _conv1d_transpose_config(l):
    return dict(_conv2d_transpose_config(l), kernel_size=[l.kernel_size[1]], strides=[l.strides[1]],
                dilation_rate=[1])


@keras_config(DepthwiseConv1D)
def _depthwise1d_config(l):
    return dict(_depthwise_config(l), kernel_size=[l.kernel_size[1]], strides=[l.strides[1]], dilation_rate=[1])


@keras_config(SeparableConv1D)
def _separable1d_config(l):
    d = l.depthwise
    return dict(_separable_config(l), kernel_size=[d.kernel_size[1]], strides=[d.strides[1]], dilation_rate=[1])


@keras_config(Conv3D)
def _conv3d_config(l):
    return dict(_conv_config(l), dilation_rate=[1, 1, 1])


@keras_config(Conv3DTranspose)
def _conv3d_transpose_config(l):
    d = _conv3d_config(l)
    del d["groups"]
    return dict(d, output_padding=None)
