"""Keras 3's RandomErasing and RandomGaussianBlur on ImageAugmentation
(image_aug.py): a `_draw` of Keras's distributions and an `_apply` of
Keras's formula in image_math.py's pieces. RandomErasing's rectangle is a
mask from pixel grids (Const rows / columns, no weights of the model)
compared with each image's drawn corners; RandomGaussianBlur's kernel is
computed per image from its drawn sigmas (exp(-x^2 / 2 sigma^2) per tap,
normalized) and applied as shifted slices of the zero-padded image, rows then
columns (Keras's depthwise convolution, padding 'same', of the outer product
of the two 1-D kernels). Keras draws one blur_factor (sigma x, sigma y) for
the whole batch; boundfit draws one per image (the engine's draws are per
sample), and transform_images takes Keras's (2,) or a (batch, 2) array."""

import numpy as np

from . import image_math as im
from .image_aug import ImageAugmentation, factor_pair, value_range_of
from .layer import keras_config
from .reshaping import Const, Slice, ZeroPadding2D


def _grid(images, axis):
    """the row (axis 0) or column (axis 1) number of each pixel, per-sample shape (H, 1, 1) or (1, W, 1)"""
    n = images._ps[axis]
    shape = (n, 1, 1) if axis == 0 else (1, n, 1)
    return Const(np.arange(n, dtype=np.float32).reshape(shape), keras_weight=False)(images)


class RandomErasing(ImageAugmentation):
    """Keras 3's `RandomErasing(factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255))`: in fit,
    with a probability drawn from U[factor] per image, a rectangle of each image (its sides sqrt(U[scale]) of the
    image's, at a uniform position) set to fill_value (a number or one per channel; None: N(0, 1) * value_range[1]
    per pixel), clipped to value_range."""
    _base = "random_erasing"
    _params = {"apply_erasing": ((), bool), "batch_masks": (None, bool), "fill_value": (None, "float32")}

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255), seed=None,
                 data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomErasing", factor, (0, 1))
        self.scale = factor_pair("RandomErasing", scale, (0, 1), "scale")
        ok = fill_value is None or im._num(fill_value) or (
            isinstance(fill_value, (tuple, list)) and len(fill_value) == 3 and all(im._num(v) for v in fill_value))
        if not ok:
            raise ValueError(f"RandomErasing: fill_value must be None, a number or a list of three numbers, got "
                             f"{fill_value!r}")
        self.fill_value = fill_value
        self.value_range = value_range_of("RandomErasing", value_range, sort=False)

    def _bounds(self, images, axis, k):
        """the erased interval [start, end) along an axis: its length sqrt(U[scale]) of the axis's"""
        n = float(images._ps[axis])
        length = im.mul(im.unary("sqrt", self._uniform(images, *self.scale, k=k)), n)
        start = im.mul(self._uniform(images, 0.0, 1.0, k=k + 2), im.op("subtract", n, length))
        return start, im.add(start, length)

    def _draw(self, images):
        (x0, x1), (y0, y1) = self._bounds(images, 1, 0), self._bounds(images, 0, 1)
        gy, gx = _grid(images, 0), _grid(images, 1)
        inside = im.mul(im.mul(im.op("greater_equal", gx, x0), im.op("less", gx, x1)),
                        im.mul(im.op("greater_equal", gy, y0), im.op("less", gy, y1)))    # (H, W, 1)
        masks = im.add(im.mul(images, 0.0), inside)                                              # (H, W, C)
        p, u = self._uniform(images, *self.factor, k=4), self._uniform(images, 0.0, 1.0, k=5)
        lo, hi = self.value_range
        if self.fill_value is None:
            fill = im.mul(self._normal(images, k=6), float(hi))
        elif im._num(self.fill_value):
            fill = im.add(im.mul(images, 0.0), float(self.fill_value))
        else:
            fill = im.stack([im.add(im.mul(im.plane(images, 0), 0.0), float(v)) for v in self.fill_value])
        return {"apply_erasing": im.op("less", u, p), "batch_masks": masks,
                "fill_value": im.clip(fill, float(min(lo, hi)), float(max(lo, hi)))}

    def _apply(self, images, t):
        erased = im.where(t["batch_masks"], t["fill_value"], images)
        return im.where(t["apply_erasing"], erased, images)


class RandomGaussianBlur(ImageAugmentation):
    """Keras 3's `RandomGaussianBlur(factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255))`: in fit, with a
    probability drawn from U[factor] per image, a Gaussian blur of kernel_size taps (odd) per axis, sigma drawn
    from U[sigma] (+ 1e-6) per axis, zero padding; clipped to value_range."""
    _base = "random_gaussian_blur"
    _params = {"should_apply_blur": ((), bool), "blur_x": ((), "float32"), "blur_y": ((), "float32")}

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255), data_format=None, seed=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomGaussianBlur", factor, (0, 1))
        ks = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size, kernel_size)
        if len(ks) != 2 or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 and k % 2 for k in ks):
            raise ValueError(f"RandomGaussianBlur: kernel_size must be an odd number or a pair of them, got "
                             f"{kernel_size!r}")
        self.kernel_size = ks
        self.sigma = factor_pair("RandomGaussianBlur", sigma, (0, 1), "sigma")
        self.value_range = value_range_of("RandomGaussianBlur", value_range, sort=False)

    def _draw(self, images):
        p, u = self._uniform(images, *self.factor, k=0), self._uniform(images, 0.0, 1.0, k=1)
        return {"should_apply_blur": im.op("less", u, p),
                "blur_x": im.add(self._uniform(images, *self.sigma, k=2), 1e-6),
                "blur_y": im.add(self._uniform(images, *self.sigma, k=3), 1e-6)}

    def get_random_transformation(self, data, training=True, seed=None):
        """Keras's keys on arrays: should_apply_blur (batch,), blur_factor (batch, 2) (sigma x, sigma y: one per
        image, where Keras draws one pair for the batch); symbolic: blur_x, blur_y per image"""
        t = super().get_random_transformation(data, training, seed)
        if t is None or not isinstance(t.get("blur_x"), np.ndarray):
            return t
        return {"should_apply_blur": t["should_apply_blur"],
                "blur_factor": np.stack([t["blur_x"], t["blur_y"]], axis=-1).astype(np.float32)}

    def transform_images(self, images, transformation, training=True):
        """Keras's transformation (blur_factor (2,) for the batch, or (batch, 2)) or blur_x / blur_y entries"""
        t = dict(transformation or {})
        if "blur_factor" in t:
            n = np.shape(images)[0] if np.ndim(images) == 4 else 1
            f = np.broadcast_to(np.asarray(t.pop("blur_factor"), np.float32).reshape(-1, 2), (n, 2))
            t["blur_x"], t["blur_y"] = f[:, 0], f[:, 1]
        return super().transform_images(images, t, training)

    def _blur_axis(self, x, sigma, size, axis):
        """x blurred along axis (0 rows, 1 columns) with the normalized kernel exp(-0.5 (d / sigma)^2), d the
        taps' offsets from the centre; zero padding"""
        r = (size - 1) // 2
        taps = [im.unary("exp", im.mul(im.unary("square", im.op("divide", float(k - r), sigma)), -0.5))
                for k in range(size)]
        total = taps[0]
        for g in taps[1:]:
            total = im.add(total, g)
        h, w, c = x._ps
        padded = ZeroPadding2D(((r, r), (0, 0)) if axis == 0 else ((0, 0), (r, r)))(x)
        out = None
        for k, g in enumerate(taps):
            begin = (k, 0, 0) if axis == 0 else (0, k, 0)
            term = im.mul(Slice(begin, (1, 1, 1), (h, w, c))(padded), im.div(g, total))
            out = term if out is None else im.add(out, term)
        return out

    def _apply(self, images, t):
        kx, ky = self.kernel_size   # Keras's kernel (ky rows, kx columns): sigma y down the rows, x across
        blurred = self._blur_axis(self._blur_axis(images, t["blur_y"], ky, 0), t["blur_x"], kx, 1)
        lo, hi = self.value_range
        return im.clip(im.where(t["should_apply_blur"], blurred, images), float(lo), float(hi))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(RandomErasing)
def _random_erasing_config(l):
    fill = list(l.fill_value) if isinstance(l.fill_value, (tuple, list)) else l.fill_value
    return dict(data_format="channels_last", factor=list(l.factor), scale=list(l.scale), fill_value=fill,
                value_range=list(l.value_range), seed=l.seed)


@keras_config(RandomGaussianBlur)
def _random_gaussian_blur_config(l):
    return dict(data_format="channels_last", factor=list(l.factor), kernel_size=list(l.kernel_size),
                sigma=list(l.sigma), value_range=list(l.value_range), seed=l.seed)
