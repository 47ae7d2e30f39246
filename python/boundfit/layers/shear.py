"""Keras 3's RandomShear on ImageAugmentation (image_aug.py), warped by
gathers in the graph: each output pixel (y, x) samples the image at
(y + shear_y * x, x + shear_x * y) (Keras's shear matrix about the top-left
corner, through keras.ops.image.affine_transform, i.e.
jax.scipy.ndimage.map_coordinates): bilinear (the four neighbours
floor / floor + 1, weights 1 - f and f) or nearest (rounded half away from
zero), each neighbour's index fixed by fill_mode (reflect, wrap, nearest;
constant: fill_value where it falls outside), gathered from the image
flattened to (H * W, C)."""

import numbers

from . import image_math as im
from .erase_blur import _grid
from .image_aug import ImageAugmentation
from .index import Gather
from .layer import keras_config
from .reshaping import Reshape

import numpy as np

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _fix(i, n, mode):
    """JAX's index fixers (float indices of integer values) -> (index in [0, n), valid or None)"""
    if mode == "constant":
        return im.clip(i, 0.0, float(n - 1)), im.mul(im.op("greater_equal", i, 0.0), im.op("less", i, float(n)))
    if mode == "nearest":
        return im.clip(i, 0.0, float(n - 1)), None
    if mode == "wrap":
        return im.op("mod", i, float(n)), None
    r = im.op("mod", i, float(2 * n))                              # reflect: (d c b a | a b c d | d c b a)
    return im.where(im.op("less", r, float(n)), r, im.op("subtract", float(2 * n - 1), r)), None


def warp(images, src_y, src_x, interpolation, fill_mode, fill_value):
    """images (H, W, C) sampled at per-pixel source coordinates src_y, src_x (H, W, 1)"""
    h, w, c = images._ps
    flat = Reshape((h * w, c))(images)

    def at(iy, ix):   # images at integer coordinates (H, W, 1) -> (H, W, C), fill_mode applied
        (fy, vy), (fx, vx) = _fix(iy, h, fill_mode), _fix(ix, w, fill_mode)
        ids = Reshape((h * w, 1))(im.add(im.mul(fy, float(w)), fx))
        g = Reshape((h, w, c))(Gather(0, along=True)([flat, ids]))
        if vy is None:
            return g
        return im.where(im.mul(vy, vx), g, float(fill_value))

    if interpolation == "nearest":
        r = [im.mul(im.unary("sign", s), im.unary("floor", im.add(im.unary("abs", s), 0.5))) for s in (src_y, src_x)]
        return at(*r)
    y0, x0 = im.unary("floor", src_y), im.unary("floor", src_x)
    wy1, wx1 = im.sub(src_y, y0), im.sub(src_x, x0)
    wy0, wx0 = im.op("subtract", 1.0, wy1), im.op("subtract", 1.0, wx1)
    y1, x1 = im.add(y0, 1.0), im.add(x0, 1.0)
    out = None
    for yy, wy in ((y0, wy0), (y1, wy1)):
        for xx, wx in ((x0, wx0), (x1, wx1)):
            term = im.mul(im.mul(wy, wx), at(yy, xx))
            out = term if out is None else im.add(out, term)
    return out


def _shear_factor(f, argument):
    """Keras's _set_factor_with_name: a pair in [0, 1] sorted, a number f in [0, 1] as (-f, f)"""
    msg = f"RandomShear: {argument} must be a number or a pair of numbers in [0, 1], got {f!r}"
    vals = list(f) if isinstance(f, (tuple, list)) else [f]
    if len(vals) not in (1, 2) or isinstance(f, (tuple, list)) and len(vals) != 2 or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 <= v <= 1 for v in vals):
        raise ValueError(msg)
    return tuple(sorted(vals)) if len(vals) == 2 else (-abs(f), abs(f))


class RandomShear(ImageAugmentation):
    """Keras 3's `RandomShear(x_factor=0.0, y_factor=0.0, interpolation="bilinear", fill_mode="reflect",
    fill_value=0.0)`: in fit, each image sheared by (shear_x, shear_y) drawn from U[x_factor], U[y_factor], both
    negated with probability 1/2, about the top-left corner."""
    _base = "random_shear"
    _params = {"shear_x": ((), "float32"), "shear_y": ((), "float32")}

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                 data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.x_factor = _shear_factor(x_factor, "x_factor")
        self.y_factor = _shear_factor(y_factor, "y_factor")
        if fill_mode not in _FILL_MODES:
            raise ValueError(f"RandomShear: fill_mode must be one of {list(_FILL_MODES)}, got {fill_mode!r}")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"RandomShear: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}")
        if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Real):
            raise ValueError(f"RandomShear: fill_value must be a number, got {fill_value!r}")
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, fill_value

    @classmethod
    def from_config(cls, config):
        """Keras's config writes a factor f as (-f, f), which its own constructor refuses (Keras cannot load it);
        boundfit reads it back as f"""
        config = dict(config)
        for k in ("x_factor", "y_factor"):
            f = config.get(k)
            if isinstance(f, (tuple, list)) and len(f) == 2 and f[0] < 0 and f[0] == -f[1]:
                config[k] = f[1]
        return cls(**config)

    def _draw(self, images):
        sign = im.op("subtract", 1.0, im.mul(im.op("greater", self._uniform(images, 0.0, 1.0, k=0), 0.5), 2.0))
        return {"shear_x": im.mul(self._uniform(images, *self.x_factor, k=1), sign),
                "shear_y": im.mul(self._uniform(images, *self.y_factor, k=2), sign)}

    def get_random_transformation(self, data, training=True, seed=None):
        """Keras's keys on arrays: shear_factor (batch, 2) (x, y), input_shape; symbolic: shear_x, shear_y"""
        t = super().get_random_transformation(data, training, seed)
        if t is None or not isinstance(t.get("shear_x"), np.ndarray):
            return t
        return {"shear_factor": np.stack([t["shear_x"], t["shear_y"]], axis=-1).astype(np.float32),
                "input_shape": np.asarray(np.shape(data), np.int32)}

    def transform_images(self, images, transformation, training=True):
        """Keras's transformation (shear_factor (batch, 2); input_shape ignored) or shear_x / shear_y entries"""
        t = {k: v for k, v in dict(transformation or {}).items() if k != "input_shape"}
        if "shear_factor" in t:
            f = np.asarray(t.pop("shear_factor"), np.float32).reshape(-1, 2)
            t["shear_x"], t["shear_y"] = f[:, 0], f[:, 1]
        return super().transform_images(images, t, training)

    def _apply(self, images, t):
        gy, gx = _grid(images, 0), _grid(images, 1)     # (H, 1, 1), (1, W, 1)
        src_x = im.add(im.mul(gy, t["shear_x"]), gx)    # Keras's x + shear_x * y, y + shear_y * x: (H, W, 1)
        src_y = im.add(im.mul(gx, t["shear_y"]), gy)
        return warp(images, src_y, src_x, self.interpolation, self.fill_mode, self.fill_value)


@keras_config(RandomShear)
def _random_shear_config(l):
    return dict(data_format="channels_last", x_factor=list(l.x_factor), y_factor=list(l.y_factor),
                interpolation=l.interpolation, fill_mode=l.fill_mode, fill_value=l.fill_value, seed=l.seed)
