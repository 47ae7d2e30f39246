"""RandomBrightness and RandomGrayscale as Keras 3 defines them, composed
from the engine's draws (RandomDraw) and elementwise ops: in fit only (their
call() traces a training and an inference graph, a Switch picks), the
identity otherwise; one draw per image. The numbers are the engine's draws,
the distributions Keras's. channels_last images (H, W, C)."""

import numbers

from .args import _data_format
from .compose import graph_seed
from .draw import RandomDraw
from .emath import Binary, Unary
from .layer import Layer, keras_config
from .reshaping import Slice

_GRAY = (0.2989, 0.5870, 0.1140)   # Keras's rgb_to_grayscale (tf.image's)


def _seed(cls, seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"{cls}: seed must be None or an int >= 0, got {seed!r}")
    return None if seed is None else int(seed)


def _real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _image(layer, inputs):
    if len(inputs._ps) != 3:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: expects (batch, H, W, C) images, got shape "
                         f"{inputs.shape}")


class RandomBrightness(Layer):
    """Keras 3's `RandomBrightness(factor, value_range=(0, 255), seed=None)`: in fit, each image plus one delta
    drawn from U[factor[0], factor[1]) * (value_range[1] - value_range[0]), clipped to value_range; factor a
    number f (-f, f) or a pair, within [-1, 1]."""
    _base = "random_brightness"
    _keras_records_training = True

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("RandomBrightness", data_format)
        f = (-abs(factor), abs(factor)) if _real(factor) else tuple(factor) if isinstance(factor, (list, tuple)) \
            else None
        if f is None or len(f) != 2 or not all(_real(v) and -1.0 <= v <= 1.0 for v in f) or f[0] > f[1]:
            raise ValueError(f"RandomBrightness: factor must be a number or a pair (low <= high) within [-1, 1], got "
                             f"{factor!r}")
        r = tuple(value_range) if isinstance(value_range, (list, tuple)) else ()
        if len(r) != 2 or not all(_real(v) for v in r) or not r[0] < r[1]:
            raise ValueError(f"RandomBrightness: value_range must be a pair (low, high) with low < high, got "
                             f"{value_range!r}")
        self.factor, self.value_range = (float(f[0]), float(f[1])), [float(r[0]), float(r[1])]
        self.seed = _seed("RandomBrightness", seed)

    def call(self, inputs, training=False):
        _image(self, inputs)
        if not training:
            return inputs
        (lo, hi), span = self.factor, self.value_range[1] - self.value_range[0]
        if lo == hi:
            y = Unary("add", lo * span)(inputs)
        else:
            delta = RandomDraw((1, 1, 1), "uniform", lo * span, hi * span, seed=graph_seed(self.seed))(inputs)
            y = Binary("add")([inputs, delta])
        return Unary("minimum", self.value_range[1])(Unary("maximum", self.value_range[0])(y))


class RandomGrayscale(Layer):
    """Keras 3's `RandomGrayscale(factor=0.5, seed=None)`: in fit, each image replaced with probability `factor`
    by its grayscale (0.2989 R + 0.5870 G + 0.1140 B in every channel); RGB (3 channels) or gray (1: unchanged)."""
    _base = "random_grayscale"
    _keras_records_training = True

    def __init__(self, factor=0.5, data_format=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("RandomGrayscale", data_format)
        if not _real(factor) or not 0.0 <= factor <= 1.0:
            raise ValueError(f"RandomGrayscale: factor must be a number in [0, 1], got {factor!r}")
        self.factor, self.seed = float(factor), _seed("RandomGrayscale", seed)

    def call(self, inputs, training=False):
        _image(self, inputs)
        h, w, c = inputs._ps
        if c not in (1, 3):
            raise ValueError(f"RandomGrayscale {self.name!r}: expects 1 or 3 channels (RGB), got shape "
                             f"{inputs.shape}")
        if not training or c == 1 or self.factor == 0.0:
            return inputs
        if None in (h, w):
            raise ValueError(f"RandomGrayscale {self.name!r}: needs images of known sizes, got {inputs.shape}")
        gray = None
        for k, wk in enumerate(_GRAY):
            term = Unary("multiply", wk)(Slice((0, 0, k), (1, 1, 1), (h, w, 1))(inputs))
            gray = term if gray is None else Binary("add")([gray, term])
        apply = Unary("less", self.factor)(RandomDraw((1, 1, 1), "uniform", 0.0, 1.0,
                                                      seed=graph_seed(self.seed))(inputs))   # 1: gray
        return Binary("add")([inputs, Binary("multiply")([Binary("subtract")([gray, inputs]), apply])])


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(RandomBrightness)
def _random_brightness_config(l):
    return dict(factor=list(l.factor), value_range=list(l.value_range), seed=l.seed, data_format="channels_last")


@keras_config(RandomGrayscale)
def _random_grayscale_config(l):
    return dict(factor=l.factor, data_format="channels_last")
