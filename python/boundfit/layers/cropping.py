"""Cropping1D / 2D / 3D, CenterCrop, ZeroPadding1D / 3D and UpSampling1D / 3D
as Keras 3 defines them, composed from the engine's slicing (Slice) and the
2D layout kinds (ZeroPadding2D, UpSampling2D) on views: a (T, 1, C) view of
a sequence, and a volume (D, H, W, C) as (D, H, W*C) for its depth and
height, then as (D*H, W, C) for its width; Resizing as per-axis products with
constant matrices (layers/resize.py, which keras.ops.image.resize shares)."""

import numbers

import numpy as np

from . import resize as rz
from .args import _data_format, _is_size, _size, _sizes
from .eager import is_array_call
from .layer import Layer, keras_config
from .reshaping import Permute, Reshape, Slice, UpSampling2D, ZeroPadding2D


def _pair(cls, argument, v):
    """an int >= 0 or a pair of them as a pair (Keras's standardize_tuple(v, 2, allow_zero=True))"""
    t = (v, v) if _is_size(v, low=0) else tuple(v) if isinstance(v, (list, tuple)) else None
    if t is None or len(t) != 2 or not all(_is_size(i, low=0) for i in t):
        raise ValueError(f"{cls}: {argument} must be an int >= 0 or a pair of them, got {v!r}")
    return tuple(int(i) for i in t)


def _known(layer, inputs, rank, what):
    ps = inputs._ps
    if len(ps) != rank:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: expects inputs of {rank + 1} axes {what}, got "
                         f"shape {inputs.shape}")
    return ps


def _crop(layer, inputs, starts, lengths):
    """inputs[:, s0:s0 + n0, s1:s1 + n1, ...] over the leading sample axes (the rest whole)"""
    ps = inputs._ps
    if any(ps[i] is None for i in range(len(starts))):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: the cropped axes need known sizes, got input shape "
                         f"{inputs.shape}")
    if any(n < 1 for n in lengths):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: cropping={layer.cropping!r} leaves nothing of "
                         f"input shape {inputs.shape}" if hasattr(layer, "cropping") else
                         f"{type(layer).__name__} {layer.name!r}: the crop does not fit input shape {inputs.shape}")
    k = len(starts)
    return Slice(tuple(starts) + (0,) * (len(ps) - k), (1,) * len(ps), tuple(lengths) + tuple(ps[k:]))(inputs)


class Cropping1D(Layer):
    """Keras 3's `Cropping1D(cropping=(1, 1))`: steps cut from the start and the end of (steps, features)."""
    _base = "cropping1d"

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pair("Cropping1D", "cropping", cropping)

    def call(self, inputs):
        t, _ = _known(self, inputs, 2, "(batch, steps, features)")
        a, b = self.cropping
        return _crop(self, inputs, (a,), (t - a - b,) if t is not None else (0,))


class Cropping2D(Layer):
    """Keras 3's `Cropping2D(cropping=((0, 0), (0, 0)))`: rows and columns cut from (H, W, C) images; cropping an
    int, a pair (symmetric height, width) or ((top, bottom), (left, right))."""
    _base = "cropping2d"

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("Cropping2D", data_format)
        if _is_size(cropping, low=0):
            cropping = (cropping, cropping)
        if not isinstance(cropping, (list, tuple)) or len(cropping) != 2:
            raise ValueError(f"Cropping2D: cropping must be an int, a pair of ints or a pair of pairs ((top, bottom), "
                             f"(left, right)), got {cropping!r}")
        self.cropping = tuple(_pair("Cropping2D", "cropping", c) for c in cropping)

    def call(self, inputs):
        h, w, _ = _known(self, inputs, 3, "(batch, H, W, C)")
        (t, b), (l, r) = self.cropping
        return _crop(self, inputs, (t, l), (h - t - b, w - l - r) if None not in (h, w) else (0, 0))


class CenterCrop(Layer):
    """Keras 3's `CenterCrop(height, width)`: the central height x width window of (H, W, C) images (its start
    (H - height) // 2, (W - width) // 2). An image smaller than the window, which Keras resizes instead
    (smart_resize), is refused: crop to a window that fits."""
    _base = "center_crop"
    _keras_records_training = True

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("CenterCrop", data_format)
        self.height, self.width = _size("CenterCrop", "height", height), _size("CenterCrop", "width", width)

    def call(self, inputs):
        h, w, _ = _known(self, inputs, 3, "(batch, H, W, C)")
        if h is not None and w is not None and (h < self.height or w < self.width):
            raise ValueError(f"CenterCrop {self.name!r}: height={self.height}, width={self.width} is larger than the "
                             f"images ({h} x {w}); Keras resizes such images (smart_resize), which boundfit does not: "
                             "use a window that fits")
        return _crop(self, inputs, ((h - self.height) // 2 if h else 0, (w - self.width) // 2 if w else 0),
                     (self.height, self.width))


class ZeroPadding1D(Layer):
    """Keras 3's `ZeroPadding1D(padding=1)`: zero steps before and after (steps, features); padding an int or a
    pair (before, after)."""
    _base = "zero_padding1d"

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("ZeroPadding1D", data_format)
        self.padding = _pair("ZeroPadding1D", "padding", padding)

    def call(self, inputs):
        _, c = _known(self, inputs, 2, "(batch, steps, features)")
        y = ZeroPadding2D((self.padding, (0, 0)))(Reshape((-1, 1, c))(inputs))
        return Reshape((-1, c))(y)


class UpSampling1D(Layer):
    """Keras 3's `UpSampling1D(size=2)`: each step of (steps, features) repeated `size` times."""
    _base = "up_sampling1d"

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = _size("UpSampling1D", "size", size)

    def call(self, inputs):
        _, c = _known(self, inputs, 2, "(batch, steps, features)")
        return Reshape((-1, c))(UpSampling2D((self.size, 1))(Reshape((-1, 1, c))(inputs)))


def _triple(cls, argument, v):
    """an int >= 0, a triple of them, or a triple of pairs as ((a, b), (c, d), (e, f)) (Keras's 3D layers)"""
    if _is_size(v, low=0):
        v = (v, v, v)
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        raise ValueError(f"{cls}: {argument} must be an int, a tuple of 3 ints or a tuple of 3 pairs, got {v!r}")
    return tuple(_pair(cls, argument, p) for p in v)


def _volume(layer, inputs):
    return _known(layer, inputs, 4, "(batch, D, H, W, C)")


def _by_planes(inputs, depth_height, width):
    """a (D, H, W, C) volume through depth_height on its (D, H, W*C) view, then width on the (D'*H', W, C) one"""
    d, h, w, c = inputs._ps
    y = depth_height(Reshape((d, h, w * c))(inputs))
    d2, h2 = y._ps[0], y._ps[1]
    y = width(Reshape((d2 * h2, w, c))(y))
    return Reshape((d2, h2, y._ps[1], c))(y)


class Cropping3D(Layer):
    """Keras 3's `Cropping3D(cropping=((1, 1), (1, 1), (1, 1)))`: planes, rows and columns cut from (D, H, W, C)
    volumes; cropping an int, a triple or a triple of pairs."""
    _base = "cropping3d"

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("Cropping3D", data_format)
        self.cropping = _triple("Cropping3D", "cropping", cropping)

    def call(self, inputs):
        dims = _volume(self, inputs)[:3]
        keep = tuple(n - a - b for n, (a, b) in zip(dims, self.cropping)) if None not in dims else (0, 0, 0)
        return _crop(self, inputs, tuple(a for a, _ in self.cropping), keep)


class ZeroPadding3D(Layer):
    """Keras 3's `ZeroPadding3D(padding=((1, 1), (1, 1), (1, 1)))`: zero planes, rows and columns around (D, H, W, C)
    volumes; padding an int, a triple or a triple of pairs."""
    _base = "zero_padding3d"

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("ZeroPadding3D", data_format)
        self.padding = _triple("ZeroPadding3D", "padding", padding)

    def call(self, inputs):
        _volume(self, inputs)
        pd, ph, pw = self.padding
        return _by_planes(inputs, ZeroPadding2D((pd, ph)), ZeroPadding2D(((0, 0), pw)))


class UpSampling3D(Layer):
    """Keras 3's `UpSampling3D(size=(2, 2, 2))`: each voxel of (D, H, W, C) volumes repeated size times per axis."""
    _base = "up_sampling3d"

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("UpSampling3D", data_format)
        self.size = _sizes("UpSampling3D", "size", size, 3)

    def call(self, inputs):
        _volume(self, inputs)
        sd, sh, sw = self.size
        return _by_planes(inputs, UpSampling2D((sd, sh)), UpSampling2D((1, sw)))


class Resizing(Layer):
    """Keras 3's `Resizing(height, width, interpolation='bilinear', crop_to_aspect_ratio=False,
    pad_to_aspect_ratio=False, fill_mode='constant', fill_value=0.0, antialias=False)`: images resized to height x
    width in every mode, as Keras's JAX backend resizes them: per axis a product with a constant matrix
    (layers/resize.py; 'bilinear', 'nearest', 'bicubic', 'lanczos3', 'lanczos5', and 'area' as Keras's TensorFlow
    backend computes it), differentiable; channels_last or channels_first."""
    _base = "resizing"
    _keras_records_training = True

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                 fill_mode="constant", fill_value=0.0, antialias=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = _size("Resizing", "height", height), _size("Resizing", "width", width)
        rz.check("Resizing", interpolation, fill_mode, crop_to_aspect_ratio, pad_to_aspect_ratio)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"Resizing: data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
        if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Real):
            raise ValueError(f"Resizing: fill_value must be a number, got {fill_value!r}")
        self.interpolation, self.fill_mode, self.fill_value = interpolation, fill_mode, float(fill_value)
        self.crop_to_aspect_ratio, self.pad_to_aspect_ratio = bool(crop_to_aspect_ratio), bool(pad_to_aspect_ratio)
        self.antialias, self.data_format = bool(antialias), data_format or "channels_last"

    def __call__(self, inputs, *args, **kwargs):
        if not args and is_array_call(inputs) and np.ndim(inputs) == 3:   # one image, as Keras takes it
            return super().__call__(np.asarray(inputs)[None], **kwargs)[0]
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        _known(self, inputs, 3, "(batch, H, W, C)")
        first = self.data_format == "channels_first"
        x = Permute((2, 3, 1))(inputs) if first else inputs
        h, w, _ = x._ps
        if h is None or w is None:
            raise ValueError(f"Resizing {self.name!r}: needs images of known height and width, got {inputs.shape}")
        mh, mw, padded = rz.matrices(h, w, (self.height, self.width), self.interpolation, self.antialias,
                                     self.crop_to_aspect_ratio, self.pad_to_aspect_ratio)
        y = rz.resize_symbolic(x, mh, mw, self.fill_value if padded else 0.0)
        if mh is None and mw is None:
            y = Reshape(y._ps)(y)   # (a node of its own: the same size)
        return Permute((3, 1, 2))(y) if first else y


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Cropping1D)
def _cropping1d_config(l):
    return dict(cropping=list(l.cropping))


@keras_config(Cropping2D)
def _cropping2d_config(l):
    return dict(cropping=[list(p) for p in l.cropping], data_format="channels_last")


@keras_config(CenterCrop)
def _center_crop_config(l):
    return dict(height=l.height, width=l.width, data_format="channels_last")


@keras_config(ZeroPadding1D)
def _zero_padding1d_config(l):
    return dict(padding=list(l.padding), data_format="channels_last")


@keras_config(UpSampling1D)
def _up_sampling1d_config(l):
    return dict(size=l.size)


@keras_config(Cropping3D)
def _cropping3d_config(l):
    return dict(cropping=[list(p) for p in l.cropping], data_format="channels_last")


@keras_config(ZeroPadding3D)
def _zero_padding3d_config(l):
    return dict(padding=[list(p) for p in l.padding], data_format="channels_last")


@keras_config(UpSampling3D)
def _up_sampling3d_config(l):
    return dict(size=list(l.size), data_format="channels_last")



@keras_config(Resizing)
def _resizing_config(l):
    return dict(height=l.height, width=l.width, interpolation=l.interpolation,
                crop_to_aspect_ratio=l.crop_to_aspect_ratio, pad_to_aspect_ratio=l.pad_to_aspect_ratio,
                fill_mode=l.fill_mode, fill_value=l.fill_value, antialias=l.antialias, data_format=l.data_format)
