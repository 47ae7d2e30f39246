"""Pooling: MaxPooling2D / AveragePooling2D, their 1D forms (the engine's 2D
pooling of a 1 x T image), GlobalAveragePooling1D / 2D and
GlobalMaxPooling1D / 2D (keepdims)."""

from .args import _channels_last, _out_len, _pair, _padding, _rank, _single, engine_kinds
from .layer import Layer, keras_config

MAXPOOL, AVGPOOL, GAP, GMP = engine_kinds("MAXPOOL AVGPOOL GAP GMP")


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


MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D


GlobalAvgPool1D, GlobalMaxPool1D, GlobalMaxPool2D = GlobalAveragePooling1D, GlobalMaxPooling1D, GlobalMaxPooling2D


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(MaxPooling2D, AveragePooling2D, MaxPooling1D, AveragePooling1D)
def _pool_config(l):
    return dict(pool_size=list(l.pool_size), padding=l.padding, strides=list(l.strides), data_format="channels_last")


@keras_config(GlobalAveragePooling2D)
def _gap2d_config(l):
    return dict(data_format="channels_last", keepdims=False)


@keras_config(GlobalAveragePooling1D, GlobalMaxPooling1D, GlobalMaxPooling2D)
def _global_pool_config(l):
    return dict(data_format="channels_last", keepdims=l.keepdims)
