"""ImageAugmentation: the base of the composed image augmentation layers,
Keras 3's BaseImagePreprocessingLayer in boundfit's graphs. A layer says how
to sample a transformation (`_draw`: one number per image per entry, from
the engine's draws) and how to apply it (`_apply`); call() composes the two
in fit (the identity in evaluate / predict, unless Keras applies the layer
there too: `_always`), as Keras's call() composes get_random_transformation
and transform_images. Both are public with Keras's names and keys: on
symbolic images they build graph pieces, on arrays they run at once (a small
model, planned like any run), so Keras's transformation dict can be applied
by boundfit and compared (an entry is one number per image, or one per pixel:
RandomErasing's masks). channels_last (batch, H, W, C) images only; labels,
bounding boxes and segmentation masks (Keras's dict inputs) are refused by
name."""

import numbers

import numpy as np

from .args import _data_format, _number, _seed
from .compose import graph_seed
from .draw import RandomDraw
from .eager import MAKERS, is_array_call
from .layer import Layer
from .node import KerasTensor
from .reshaping import Reshape


def factor_pair(cls, factor, bounds, argument="factor"):
    """Keras's BaseImagePreprocessingLayer._set_factor: a pair within `bounds` sorted, a number f as
    (max(-|f|, bounds[0]), |f|); ValueError naming the argument otherwise"""
    msg = f"{cls}: {argument} must be a number or a pair of numbers in [{bounds[0]}, {bounds[1]}], got {factor!r}"
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in factor):
            raise ValueError(msg)
        if factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(msg)
        lo, hi = sorted(factor)
        return lo, hi
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not bounds[0] <= factor <= bounds[1]:
        raise ValueError(msg)
    f = abs(factor)
    return max(-f, bounds[0]), f


def value_range_of(cls, value_range, sort=True):
    """Keras's value_range: a pair of numbers (sorted where Keras sorts it)"""
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError(f"{cls}: value_range must be a list of two numbers, got {value_range!r}")
    for v in value_range:
        _number(v, "value_range", cls)
    return sorted(value_range) if sort else value_range


class ImageAugmentation(Layer):
    """Keras 3's BaseImagePreprocessingLayer: `get_random_transformation(images, training=True, seed=None)` then
    `transform_images(images, transformation, training=True)`; in fit only unless `_always`."""
    _keras_records_training = True   # Keras's files record training=True on each call (saving/keras_graph.py)
    _always = False                  # Keras applies it outside training too (AutoContrast)
    _params = {}                     # transformation entry -> (its Keras shape after the batch axis, dtype;
                                     # None: the images' (H, W, C))

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format(type(self).__name__, data_format)
        self.seed = _seed(type(self).__name__, seed)
        self.data_format = "channels_last"

    # ---- what a layer defines ----
    def _draw(self, images):
        """{entry: a draw per image, per-sample shape (1, 1, 1)} (through self._uniform)"""
        return {}

    def _apply(self, images, t):
        """the transformed images, from t's entries (per-sample shape (1, 1, 1) each)"""
        raise NotImplementedError

    # ---- the structure ----
    def _uniform(self, images, lo, hi, k=0):
        """U[lo, hi) per image, shape (1, 1, 1): the layer's k-th stream (a seed gives each k its own)"""
        if lo == hi:
            return float(lo)   # (Keras draws U[lo, lo): lo)
        seed, fixed = getattr(self, "_seed_now", None) or (self.seed, False)
        return RandomDraw((1, 1, 1), "uniform", lo, hi, seed=graph_seed(seed, k), fixed=fixed)(images)

    def _normal(self, images, k=0):
        """N(0, 1) per pixel, the images' shape: the layer's k-th stream"""
        seed, fixed = getattr(self, "_seed_now", None) or (self.seed, False)
        return RandomDraw(tuple(images._ps), "normal", 0.0, 1.0, seed=graph_seed(seed, k), fixed=fixed)(images)

    def _check_images(self, images):
        if len(images._ps) != 3:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects (batch, H, W, C) images, got shape "
                             f"{images.shape}")
        if None in images._ps:
            raise ValueError(f"{type(self).__name__} {self.name!r}: needs images of known sizes, got "
                             f"{images.shape}")

    def call(self, inputs, training=False):
        if isinstance(inputs, dict):
            _refuse_dict(self, inputs)
        self._check_images(inputs)
        if not (training or self._always):
            return inputs
        return self._apply(inputs, self._draw(inputs))

    def get_random_transformation(self, data, training=True, seed=None):
        """Keras's: the random parameters of one call, a dict by Keras's keys (None outside training); on
        symbolic images graph pieces of one number per image, on an array of images NumPy arrays in Keras's
        shapes, drawn at once (seed: an int gives that draw every time)"""
        if isinstance(data, dict):
            _refuse_dict(self, data)
        if not training:
            return None
        if is_array_call(data):
            return self._draw_now(np.asarray(data, np.float32), seed)
        self._check_images(data)
        self._seed_now = None if seed is None else (_seed(type(self).__name__, seed), True)
        try:
            return self._draw(data)
        finally:
            self._seed_now = None

    def transform_images(self, images, transformation, training=True):
        """Keras's: the images transformed by `transformation` (a dict as get_random_transformation gives,
        Keras's own included), symbolic or at once on arrays"""
        if not (training or self._always):
            return images
        if is_array_call(images):
            return self._apply_now(np.asarray(images, np.float32), transformation or {})
        self._check_images(images)
        return self._apply(images, {k: _per_image(v, images) for k, v in (transformation or {}).items()})

    # ---- at once, on arrays ----
    def _now_model(self, key, build):
        cache = self.__dict__.setdefault("_now_models", {})
        if key not in cache:
            cache[key] = build()
        return cache[key]

    def _draw_now(self, x, seed):
        one = x.ndim == 3
        x = x[None] if one else x
        names = list(self._params)

        def build():
            Model, Input = MAKERS["model"], MAKERS["input"]
            inp = Input(shape=x.shape[1:])
            t = self.get_random_transformation(inp, training=True, seed=seed)
            drawn = [k for k in names if isinstance(t[k], KerasTensor)]
            return (Model(inp, [t[k] for k in drawn]) if drawn else None), drawn, t
        model, drawn, t = self._now_model(("draw", x.shape[1:], seed), build)
        outs = model.predict(x, batch_size=len(x), verbose=0) if drawn else []
        outs = dict(zip(drawn, outs if isinstance(outs, list) else [outs]))
        shape = {k: x.shape[1:] if self._params[k][0] is None else self._params[k][0] for k in names}
        return {k: np.reshape(outs[k] if k in outs else np.full(len(x), t[k]), (len(x),) + shape[k])
                .astype(self._params[k][1]) for k in names}

    def _apply_now(self, x, t):
        one = x.ndim == 3
        x = x[None] if one else x
        names = sorted(t)
        vals = [np.asarray(t[k], np.float32).reshape(len(x), -1) for k in names]   # one number or an image each
        vals = [v.reshape((len(x), 1, 1, 1) if v.shape[1] == 1 else (len(x),) + x.shape[1:]) for v in vals]

        def build():
            Model, Input = MAKERS["model"], MAKERS["input"]
            img = Input(shape=x.shape[1:])
            ins = {k: Input(shape=v.shape[1:]) for k, v in zip(names, vals)}
            return Model([img] + [ins[k] for k in names], self.transform_images(img, ins))
        y = self._now_model(("apply", x.shape[1:], tuple((k, v.shape[1:]) for k, v in zip(names, vals))), build).predict([x] + vals, batch_size=len(x),
                                                                          verbose=0)
        return y[0] if one else y


def _per_image(v, images):
    """a transformation entry as one number per image, per-sample shape (1, 1, 1), or one per pixel (the images'
    shape)"""
    if not isinstance(v, KerasTensor):
        raise ValueError(f"transform_images on symbolic images takes symbolic transformation entries, got {type(v)}")
    if tuple(v._ps) in ((1, 1, 1), tuple(images._ps)):
        return v
    if int(np.prod([d or 0 for d in v._ps])) != 1:
        raise ValueError(f"transform_images: a transformation entry must hold one number per image, got {v.shape}")
    return Reshape((1, 1, 1))(v)


def _refuse_dict(layer, data):
    raise NotImplementedError(
        f"keras.layers.{type(layer).__name__}: dict inputs ({sorted(data)}: labels, bounding boxes, segmentation "
        "masks) are not supported by boundfit; call the layer on the images alone (bounding boxes and "
        "segmentation masks: transform them in the data)")
