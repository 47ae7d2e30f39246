"""SpatialDropout1D / 2D and AlphaDropout as Keras 3 writes them, composed
from the engine's draws (RandomDraw, the RANDOM kind) and elementwise ops:
in fit only (their call() traces a training and an inference graph, which a
Switch picks: layers/switch.py), the identity otherwise. SpatialDropout
drops whole channels (one keep mask per sample and channel, broadcast over
the steps / pixels / voxels: SpatialDropout3D's (D, H, W, C) sample as
(D*H*W, C) rows); AlphaDropout keeps SELU's mean and variance. The numbers
are the engine's draws, the distributions Keras's."""

import numbers

from .args import _data_format
from .compose import checked_noise_shape, graph_seed, noise_of, rate as _rate
from .draw import RandomDraw
from .emath import Binary, Unary
from .layer import Layer, keras_config
from .reshaping import Reshape

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _checked_seed(cls, seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"{cls}: seed must be None or an int >= 0, got {seed!r}")
    return None if seed is None else int(seed)


class _SpatialDropout(Layer):
    """Keras 3's BaseSpatialDropout: one keep mask per sample and channel (1 / (1 - rate) or 0)."""
    _rank = 0
    _keras_omit = ("trainable",)   # Keras's config of these: rate, seed, name, dtype (data_format)

    def __init__(self, rate, data_format=None, seed=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        cls = type(self).__name__
        _data_format(cls, data_format)
        self.rate, self.seed = _rate(cls, rate), _checked_seed(cls, seed)

    def call(self, inputs, training=False):
        ps = inputs._ps
        if len(ps) != self._rank:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects inputs of {self._rank + 1} axes (batch "
                             f"first, channels last), got shape {inputs.shape}")
        if not training or self.rate == 0.0:
            return inputs
        x = Reshape((-1, ps[-1]))(inputs) if len(ps) > 3 else inputs   # the draws take at most 3 axes
        keep = RandomDraw((1,) * (len(x._ps) - 1) + (ps[-1],), "dropout", self.rate, 1.0 / (1.0 - self.rate),
                          seed=graph_seed(self.seed))(x)
        y = Binary("multiply")([x, keep])
        return Reshape(ps)(y) if x is not inputs else y


class SpatialDropout1D(_SpatialDropout):
    """Keras 3's `SpatialDropout1D(rate, seed=None)`: drops whole channels of (steps, channels) samples in fit."""
    _base = "spatial_dropout1d"
    _rank = 2

    def __init__(self, rate, seed=None, name=None, dtype=None):
        super().__init__(rate, seed=seed, name=name, dtype=dtype)


class SpatialDropout2D(_SpatialDropout):
    """Keras 3's `SpatialDropout2D(rate, data_format=None, seed=None)`: drops whole channels of (H, W, C) images
    in fit (channels_last)."""
    _base = "spatial_dropout2d"
    _rank = 3


class SpatialDropout3D(_SpatialDropout):
    """Keras 3's `SpatialDropout3D(rate, data_format=None, seed=None)`: drops whole channels of (D, H, W, C)
    volumes in fit (channels_last)."""
    _base = "spatial_dropout3d"
    _rank = 4


class AlphaDropout(Layer):
    """Keras 3's `AlphaDropout(rate, noise_shape=None, seed=None)`: in fit, each entry kept with probability
    1 - rate or set to SELU's negative saturation -alpha * scale, then a * x + b keeps the mean and variance."""
    _base = "alpha_dropout"

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _rate("AlphaDropout", rate), _checked_seed("AlphaDropout", seed)
        self.noise_shape = checked_noise_shape("AlphaDropout", noise_shape)

    def call(self, inputs, training=False):
        noise = noise_of(self, inputs)
        if not training or self.rate == 0.0:
            return inputs
        r, alpha_p = self.rate, -_SELU_ALPHA * _SELU_SCALE
        kept = RandomDraw(noise, "dropout", r, 1.0, seed=graph_seed(self.seed))(inputs)   # 1 kept, 0 dropped
        a = ((1 - r) * (1 + r * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * r
        # a * (x * kept + alpha_p * (1 - kept)) + b  =  (x - alpha_p) * (a * kept) + (a * alpha_p + b)
        shifted = Unary("add", -alpha_p)(inputs)
        return Unary("add", a * alpha_p + b)(Binary("multiply")([shifted, Unary("multiply", a)(kept)]))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(SpatialDropout1D)
def _spatial_dropout1d_config(l):
    return dict(rate=l.rate, seed=l.seed)


@keras_config(SpatialDropout2D, SpatialDropout3D)
def _spatial_dropout2d_config(l):
    return dict(rate=l.rate, seed=l.seed, data_format="channels_last")


@keras_config(AlphaDropout)
def _alpha_dropout_config(l):
    return dict(rate=l.rate, seed=l.seed, noise_shape=None if l.noise_shape is None else list(l.noise_shape))
