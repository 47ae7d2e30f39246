"""Pooling: MaxPooling2D / AveragePooling2D, their 1D forms (the engine's 2D
pooling of a 1 x T image), MaxPooling3D / AveragePooling3D (the engine's
MAXPOOL3D / AVGPOOL3D: the 2D pooling of each depth plane, then along the
depth), GlobalAveragePooling1D / 2D / 3D and GlobalMaxPooling1D / 2D / 3D
(keepdims); channels_last or channels_first (the engine pools each channel
of a (C, H, W) sample as a one-channel image)."""

from .args import _pair, _padding, _rank, _single, _sizes, engine_kinds
from .layer import Layer, keras_config

MAXPOOL, AVGPOOL, GAP, GMP, MAXPOOL3D, AVGPOOL3D = engine_kinds("MAXPOOL AVGPOOL GAP GMP MAXPOOL3D AVGPOOL3D")


def _format(cls, data_format):
    """Keras's data_format: None (Keras's default, channels_last), channels_last or channels_first"""
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"{cls}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    return data_format or "channels_last"


class _Pool(Layer):
    kind = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _format(type(self).__name__, data_format)
        self.pool_size = _pair(pool_size, "pool_size", type(self).__name__)
        self.strides = _pair(strides, "strides", type(self).__name__) if strides is not None else self.pool_size
        self.padding = _padding(padding)

    def _before_infer(self, shapes):
        _rank(self, shapes[0], 3, "(C, H, W)" if self.data_format == "channels_first" else "(H, W, C)")

    def spec(self):
        return dict(kind=self.kind, name=self.name, kh=self.pool_size[0], kw=self.pool_size[1], sh=self.strides[0],
                    sw=self.strides[1], same=int(self.padding == "same"),
                    chan_first=int(self.data_format == "channels_first"))


class MaxPooling2D(_Pool):
    """Keras 3's `MaxPooling2D(pool_size=(2, 2), strides=None, padding='valid', data_format=None)`: the maximum over
    each window."""
    _base, kind = "max_pooling2d", MAXPOOL


class AveragePooling2D(_Pool):
    """Keras 3's `AveragePooling2D(pool_size=(2, 2), strides=None, padding='valid', data_format=None)`: the mean over
    each window."""
    _base, kind = "average_pooling2d", AVGPOOL


class _Pool1D(Layer):
    kind = None

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _format(type(self).__name__, data_format)
        self.pool_size = _single(pool_size, "pool_size", type(self).__name__)
        self.strides = _single(strides, "strides", type(self).__name__) if strides is not None else self.pool_size
        self.padding = _padding(padding)

    def _before_infer(self, shapes):
        _rank(self, shapes[0], 2, "(channels, steps)" if self.data_format == "channels_first" else "(steps, channels)")

    def spec(self):
        return dict(kind=self.kind, name=self.name, kh=1, sh=1, kw=self.pool_size[0], sw=self.strides[0],
                    same=int(self.padding == "same"), chan_first=int(self.data_format == "channels_first"))


class MaxPooling1D(_Pool1D):
    """Keras 3's `MaxPooling1D(pool_size=2, strides=None, padding='valid', data_format=None)`: the maximum over
    windows of steps."""
    _base, kind = "max_pooling1d", MAXPOOL

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(pool_size, strides=strides, padding=padding, data_format=data_format, name=name, **kwargs)


class AveragePooling1D(_Pool1D):
    """Keras 3's `AveragePooling1D(pool_size, strides=None, padding='valid', data_format=None)`: the mean over windows
    of steps."""
    _base, kind = "average_pooling1d", AVGPOOL


class _Pool3D(Layer):
    kind = None

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        cls = type(self).__name__
        self.data_format = _format(cls, data_format)
        self.pool_size = _sizes(cls, "pool_size", pool_size, 3)
        self.strides = _sizes(cls, "strides", strides, 3) if strides is not None else self.pool_size
        self.padding = _padding(padding)

    def spec(self):
        (kd, kh, kw), (sd, sh, sw) = self.pool_size, self.strides
        return dict(kind=self.kind, name=self.name, kd=kd, kh=kh, kw=kw, sd=sd, sh=sh, sw=sw,
                    same=int(self.padding == "same"), chan_first=int(self.data_format == "channels_first"))


class MaxPooling3D(_Pool3D):
    """Keras 3's `MaxPooling3D(pool_size=(2, 2, 2), strides=None, padding='valid', data_format=None)`: the maximum
    over each window of (D, H, W, C) samples."""
    _base, kind = "max_pooling3d", MAXPOOL3D


class AveragePooling3D(_Pool3D):
    """Keras 3's `AveragePooling3D(pool_size, strides=None, padding='valid', data_format=None)`: the mean over each
    window of (D, H, W, C) samples (over its valid cells with padding='same')."""
    _base, kind = "average_pooling3d", AVGPOOL3D

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(pool_size, strides=strides, padding=padding, data_format=data_format, name=name, **kwargs)


class _GlobalPool(Layer):
    kind, rank = None, None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _format(type(self).__name__, data_format)
        if not isinstance(keepdims, bool):
            raise ValueError(f"{type(self).__name__}: keepdims must be a bool, got {keepdims!r}")
        self.keepdims = keepdims

    def _before_infer(self, shapes):
        dims = {(2, False): "(steps, channels)", (2, True): "(channels, steps)", (3, False): "(H, W, C)",
                (3, True): "(C, H, W)", (4, False): "(D, H, W, C)",
                (4, True): "(C, D, H, W)"}[self.rank, self.data_format == "channels_first"]
        _rank(self, shapes[0], self.rank, dims)

    def spec(self):
        return dict(kind=self.kind, name=self.name, keepdims=int(self.keepdims),
                    chan_first=int(self.data_format == "channels_first"))


class GlobalAveragePooling1D(_GlobalPool):
    """Keras 3's `GlobalAveragePooling1D`: the mean over the steps (over the unmasked steps when an Embedding mask
    reaches it)."""
    _base, kind, rank = "global_average_pooling1d", GAP, 2


class GlobalAveragePooling2D(_GlobalPool):
    """Keras 3's `GlobalAveragePooling2D`: the mean over the pixels of each channel."""
    _base, kind, rank = "global_average_pooling2d", GAP, 3


class GlobalMaxPooling1D(_GlobalPool):
    """Keras 3's `GlobalMaxPooling1D`: the maximum over the steps."""
    _base, kind, rank = "global_max_pooling1d", GMP, 2


class GlobalMaxPooling2D(_GlobalPool):
    """Keras 3's `GlobalMaxPooling2D`: the maximum over the pixels of each channel."""
    _base, kind, rank = "global_max_pooling2d", GMP, 3


class GlobalAveragePooling3D(_GlobalPool):
    """Keras 3's `GlobalAveragePooling3D`: the mean over the voxels of each channel."""
    _base, kind, rank = "global_average_pooling3d", GAP, 4


class GlobalMaxPooling3D(_GlobalPool):
    """Keras 3's `GlobalMaxPooling3D`: the maximum over the voxels of each channel."""
    _base, kind, rank = "global_max_pooling3d", GMP, 4


# Keras's aliases
MaxPool1D, AvgPool1D, MaxPool2D, AvgPool2D = MaxPooling1D, AveragePooling1D, MaxPooling2D, AveragePooling2D
MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(MaxPooling2D, AveragePooling2D, MaxPooling1D, AveragePooling1D, MaxPooling3D, AveragePooling3D)
def _pool_config(l):
    return dict(pool_size=list(l.pool_size), padding=l.padding, strides=list(l.strides), data_format=l.data_format)


@keras_config(GlobalAveragePooling2D, GlobalAveragePooling1D, GlobalMaxPooling1D, GlobalMaxPooling2D,
              GlobalAveragePooling3D, GlobalMaxPooling3D)
def _global_pool_config(l):
    return dict(data_format=l.data_format, keepdims=l.keepdims)
