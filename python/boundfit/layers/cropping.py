"""Cropping1D, Cropping2D, CenterCrop, ZeroPadding1D and UpSampling1D as
Keras 3 defines them, composed from the engine's slicing (Slice) and the 2D
layout kinds on a (T, 1, C) view (ZeroPadding2D, UpSampling2D). The 3D forms
(Cropping3D, ZeroPadding3D, UpSampling3D) are refused by name: a sample
holds at most 3 axes in boundfit; Resizing too (no interpolation in the
engine's graphs)."""

from .args import _data_format, _is_size, _size
from .layer import Layer, keras_config
from .reshaping import Reshape, Slice, UpSampling2D, ZeroPadding2D


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


def _refused_3d(name, use):
    def init(self, *args, **kwargs):
        raise NotImplementedError(f"keras.layers.{name} is not supported by boundfit: its samples have 4 axes "
                                  f"(D, H, W, C) and a boundfit tensor holds at most 3 per sample. {use}")
    doc = f"Refused: Keras's {name} takes (D, H, W, C) samples; a boundfit sample holds at most 3 axes. {use}"
    return type(name, (), {"__init__": init, "__doc__": doc, "_boundfit_refused": True})


class Resizing:
    """Refused: Keras's Resizing interpolates images to any size (jax.image.resize), which boundfit's graphs do
    not have. Resize in the data (image_dataset_from_directory(image_size=...), utils.load_img(target_size=...)),
    or use CenterCrop / Cropping2D to cut and UpSampling2D / AveragePooling2D for integer factors."""
    _boundfit_refused = True   # tools/keras_coverage.py lists it as refused

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("keras.layers.Resizing is not supported by boundfit: its graphs have no image "
                                  "interpolation. Resize in the data (utils.image_dataset_from_directory(image_size="
                                  "...), utils.load_img(target_size=...)), or use CenterCrop / Cropping2D to cut and "
                                  "UpSampling2D / AveragePooling2D for integer factors")


Cropping3D = _refused_3d("Cropping3D", "Use Cropping2D on (H, W, C) images")
ZeroPadding3D = _refused_3d("ZeroPadding3D", "Use ZeroPadding2D on (H, W, C) images")
UpSampling3D = _refused_3d("UpSampling3D", "Use UpSampling2D on (H, W, C) images")


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
