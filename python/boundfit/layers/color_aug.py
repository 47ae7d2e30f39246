"""Keras 3's color augmentation layers on ImageAugmentation (image_aug.py):
RandomInvert, Solarization, RandomPosterization, RandomColorDegeneration,
AutoContrast, RandomSaturation, RandomHue, RandomSharpness and
RandomColorJitter, each a `_draw` (Keras's distributions, one draw per image,
Keras's transformation keys) and an `_apply` (Keras's formula in
image_math.py's pieces); Keras's arguments, their checks and factor forms
(its quirks included: Solarization's lower bound not scaled by 255,
RandomColorDegeneration's and RandomSaturation's factor f as (-f, f)).
channels_last (batch, H, W, C) images; the numbers drawn are the engine's."""

from . import image_math as im
from .augmentation import RandomContrast
from .color import RandomBrightness
from .image_aug import ImageAugmentation, factor_pair, value_range_of
from .emath import Unary
from .layer import keras_config
from .reduce import Reduce

_EPS = 1e-7   # keras.backend.epsilon()


def _rgb(layer, images):
    if images._ps[-1] != 3:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: expects RGB images (3 channels), got shape "
                         f"{images.shape}")


class RandomInvert(ImageAugmentation):
    """Keras 3's `RandomInvert(factor=1.0, value_range=(0, 255))`: in fit, each image becomes
    value_range[1] - x with a probability drawn from U[factor] (a number f: U[0, f])."""
    _base = "random_invert"
    _params = {"apply_inversion": ((), bool)}

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomInvert", factor, (0, 1))
        self.value_range = value_range_of("RandomInvert", value_range, sort=False)

    def _draw(self, images):
        p, u = self._uniform(images, *self.factor, k=0), self._uniform(images, 0.0, 1.0, k=1)
        return {"apply_inversion": im.op("less", u, p)}

    def _apply(self, images, t):
        return im.where(t["apply_inversion"], im.op("subtract", float(self.value_range[1]), images), images)


class Solarization(ImageAugmentation):
    """Keras 3's `Solarization(addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255))`: in fit, on the
    0-255 scale, x + a clipped to [0, 255], then 255 - that where it is at or above the threshold t; a, t drawn per
    image from U[lower, upper * 255) of their factors (a number f: (0, f)), as Keras draws them."""
    _base = "solarization"
    _params = {"additions": ((1, 1, 1), "float32"), "thresholds": ((1, 1, 1), "float32")}

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.addition_factor = self._factor(addition_factor, "addition_factor")
        self.threshold_factor = self._factor(threshold_factor, "threshold_factor")
        self.value_range = value_range_of("Solarization", value_range)

    @staticmethod
    def _factor(f, argument):
        if isinstance(f, (tuple, list)) and len(f) == 2:
            for v in f:
                factor_pair("Solarization", v, (0, 1), argument)
            return tuple(sorted(f))
        if isinstance(f, (tuple, list)):
            raise ValueError(f"Solarization: {argument} must be a number or a pair of numbers in [0, 1], got {f!r}")
        factor_pair("Solarization", f, (0, 1), argument)
        return (0, f)

    def _draw(self, images):
        (a0, a1), (t0, t1) = self.addition_factor, self.threshold_factor
        return {"additions": self._uniform(images, a0, a1 * 255, k=0),
                "thresholds": self._uniform(images, t0, t1 * 255, k=1)}

    def _apply(self, images, t):
        x = im.clip(im.add(im.value_range(images, self.value_range, (0, 255)), t["additions"]), 0.0, 255.0)
        x = im.where(im.op("less", x, t["thresholds"]), x, im.op("subtract", 255.0, x))
        return im.value_range(x, (0, 255), self.value_range)


class RandomPosterization(ImageAugmentation):
    """Keras 3's `RandomPosterization(factor, value_range=(0, 255))`: in fit, each image's 0-255 values keep their
    top b bits, b drawn per image from the integers in [factor[0], factor[1]) (a number f: [1, f); f alone when
    both are equal), as Keras's randint; factor within [1, 8]."""
    _base = "random_posterization"
    _params = {"shift_factor": ((), "uint8")}

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomPosterization", factor, (1, 8))
        self.value_range = value_range_of("RandomPosterization", value_range)

    def _draw(self, images):
        lo, hi = self.factor
        if lo == hi:
            return {"shift_factor": 8.0 - lo}
        bits = im.unary("floor", self._uniform(images, float(lo), float(hi)))
        return {"shift_factor": im.op("subtract", 8.0, bits)}

    def _apply(self, images, t):
        step = im.unary("exp2", t["shift_factor"]) if not isinstance(t["shift_factor"], float) \
            else 2.0 ** t["shift_factor"]
        x = im.value_range(images, self.value_range, (0, 255))
        x = im.mul(im.unary("floor", im.div(im.unary("trunc", x), step)), step)   # uint8 >> s << s
        return im.value_range(x, (0, 255), self.value_range)


class RandomColorDegeneration(ImageAugmentation):
    """Keras 3's `RandomColorDegeneration(factor, value_range=(0, 255))`: in fit, x + f * (gray(x) - x) clipped to
    value_range, f drawn per image from U[factor] (a number f: U[-f, f], as Keras's code has it); RGB images."""
    _base = "random_color_degeneration"
    _params = {"factor": ((1, 1, 1), "float32")}

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomColorDegeneration", factor, (-1, 1))
        self.value_range = value_range_of("RandomColorDegeneration", value_range)

    def _draw(self, images):
        return {"factor": self._uniform(images, *self.factor)}

    def _apply(self, images, t):
        _rgb(self, images)
        x = im.add(images, im.mul(t["factor"], im.sub(im.gray(images), images)))
        return im.clip(x, *self.value_range)


class AutoContrast(ImageAugmentation):
    """Keras 3's `AutoContrast(value_range=(0, 255))`: each image's channels stretched to the whole value_range
    (per channel min -> low, max -> high), in fit, evaluate and predict alike, as Keras; a flat channel unchanged."""
    _base = "auto_contrast"
    _always = True

    def __init__(self, value_range=(0, 255), **kwargs):
        super().__init__(**kwargs)
        self.value_range = value_range_of("AutoContrast", value_range)

    def _apply(self, images, t):
        x = im.value_range(images, self.value_range, (0, 255))
        low, high = Reduce("min", (1, 2), True)(x), Reduce("max", (1, 2), True)(x)
        scale = im.div(255.0, im.sub(high, low))
        y = im.clip(im.add(im.mul(x, scale), im.mul(im.unary("negative", low), scale)), 0.0, 255.0)
        y = im.value_range(y, (0, 255), self.value_range)
        nan = im.unary("isnan", y)   # a flat channel (0 * inf): the input, as Keras's where(isnan(...))
        return im.add(im.mul(images, nan), im.mul(Unary("nan_to_num")(y), im.op("subtract", 1.0, nan)))


class RandomSaturation(ImageAugmentation):
    """Keras 3's `RandomSaturation(factor, value_range=(0, 255))`: in fit, each image's HSV saturation times
    f / (1 - f + 1e-7), f drawn per image from U[factor] (a number f: U[-f, f]), clipped to value_range (on the
    images' own scale, as Keras's code); RGB images."""
    _base = "random_saturation"
    _params = {"factor": ((), "float32")}

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomSaturation", factor, (-1, 1))
        self.value_range = value_range_of("RandomSaturation", value_range)

    def _draw(self, images):
        f = self._uniform(images, *self.factor)
        return {"factor": im.div(f, im.op("subtract", 1.0 + _EPS, f)) if not isinstance(f, float)
                else f / (1 - f + _EPS)}

    def _apply(self, images, t):
        _rgb(self, images)
        h, s, v = im.rgb_to_hsv(images)
        return im.hsv_to_rgb(h, im.clip(im.mul(s, t["factor"]), *self.value_range), v)


class RandomHue(ImageAugmentation):
    """Keras 3's `RandomHue(factor, value_range=(0, 255))`: in fit, each image's hue (on [0, 1]) shifted by
    +-f / 2, f drawn per image from U[factor] (a number f: U[0, f]) and the sign by a fair coin, wrapped to
    [0, 1]; RGB images."""
    _base = "random_hue"
    _params = {"factor": ((), "float32")}

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomHue", factor, (0, 1))
        self.value_range = value_range_of("RandomHue", value_range, sort=False)

    def _draw(self, images):
        sign = im.op("subtract", 1.0, im.mul(im.op("greater", self._uniform(images, 0.0, 1.0, k=0), 0.5), 2.0))
        return {"factor": im.mul(im.mul(sign, self._uniform(images, *self.factor, k=1)), 0.5)}

    def _apply(self, images, t):
        _rgb(self, images)
        h, s, v = im.rgb_to_hsv(im.value_range(images, self.value_range, (0, 1)))
        h = im.add(h, t["factor"])
        h = im.sub(h, im.op("greater", h, 1.0))
        h = im.add(h, im.op("less", h, 0.0))
        return im.value_range(im.clip(im.hsv_to_rgb(h, s, v), 0.0, 1.0), (0, 1), self.value_range)


class RandomSharpness(ImageAugmentation):
    """Keras 3's `RandomSharpness(factor, value_range=(0, 255))`: in fit, x + (1 - 2 f) * (smooth(x) - x) clipped
    to value_range, smooth Keras's 3x3 kernel (1/13, centre 5/13, zero padding), f drawn per image from U[factor]
    (a number f: U[0, f])."""
    _base = "random_sharpness"
    _params = {"factor": ((), "float32")}
    _KERNEL = ((1 / 13, 1 / 13, 1 / 13), (1 / 13, 5 / 13, 1 / 13), (1 / 13, 1 / 13, 1 / 13))

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_pair("RandomSharpness", factor, (0, 1))
        self.value_range = value_range_of("RandomSharpness", value_range)

    def _draw(self, images):
        return {"factor": self._uniform(images, *self.factor)}

    def _apply(self, images, t):
        blend = im.op("subtract", 1.0, im.mul(t["factor"], 2.0))
        x = im.add(images, im.mul(blend, im.sub(im.filter3x3(images, self._KERNEL), images)))
        return im.clip(x, *self.value_range)


class RandomColorJitter(ImageAugmentation):
    """Keras 3's `RandomColorJitter(value_range=(0, 255), brightness_factor=None, contrast_factor=None,
    saturation_factor=None, hue_factor=None)`: in fit, RandomBrightness, RandomContrast, RandomSaturation and
    RandomHue in that order, each where its factor is given (with Keras's arguments for each)."""
    _base = "random_color_jitter"

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None, saturation_factor=None,
                 hue_factor=None, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.value_range = value_range_of("RandomColorJitter", value_range, sort=False)
        self.brightness_factor, self.contrast_factor = brightness_factor, contrast_factor
        self.saturation_factor, self.hue_factor = saturation_factor, hue_factor
        vr, s = list(self.value_range), self.seed
        self._steps = [make(f) for f, make in (
            (brightness_factor, lambda f: RandomBrightness(f, value_range=vr, seed=s)),
            (contrast_factor, lambda f: RandomContrast(f, value_range=vr, seed=s)),
            (saturation_factor, lambda f: RandomSaturation(f, value_range=vr, seed=s)),
            (hue_factor, lambda f: RandomHue(f, value_range=vr, seed=s))) if f is not None]

    def get_random_transformation(self, data, training=True, seed=None):
        """None: each of its layers draws its own (as Keras's RandomColorJitter)"""
        return None

    def transform_images(self, images, transformation=None, training=True):
        raise NotImplementedError("RandomColorJitter.transform_images: its layers draw their own transformations; "
                                  "call the layer (training=True) or its parts (RandomBrightness, ...) instead")

    def call(self, inputs, training=False):
        self._check_images(inputs)
        if not training:
            return inputs
        for layer in self._steps:
            inputs = layer(inputs, training=True)
        return inputs


# ---- Keras 3 configs (layer.keras_config) ----

def _base(l, **kw):
    return dict(data_format="channels_last", **kw)


@keras_config(RandomInvert)
def _random_invert_config(l):
    return _base(l, factor=list(l.factor), value_range=list(l.value_range), seed=l.seed)


@keras_config(Solarization)
def _solarization_config(l):
    return _base(l, value_range=list(l.value_range), addition_factor=list(l.addition_factor),
                 threshold_factor=list(l.threshold_factor), seed=l.seed)


@keras_config(RandomPosterization, RandomColorDegeneration, RandomSaturation, RandomHue, RandomSharpness)
def _factor_range_config(l):
    return _base(l, factor=list(l.factor), value_range=list(l.value_range), seed=l.seed)


@keras_config(AutoContrast)
def _auto_contrast_config(l):
    return _base(l, value_range=list(l.value_range))


@keras_config(RandomColorJitter)
def _random_color_jitter_config(l):
    return _base(l, value_range=list(l.value_range), brightness_factor=l.brightness_factor,
                 contrast_factor=l.contrast_factor, saturation_factor=l.saturation_factor,
                 hue_factor=l.hue_factor, seed=l.seed)
