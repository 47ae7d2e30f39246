"""Dropout, GaussianNoise, GaussianDropout. The Gaussian layers act in fit
only (identity in evaluate / predict) and draw z ~ N(0, 1) per element from
the engine's counter-based generator (the AUGMENT kind): GaussianNoise adds
stddev z, GaussianDropout multiplies by 1 + sqrt(rate / (1 - rate)) z, as
Keras 3; the numbers are boundfit's own draws."""

import math
import numbers

from .args import _seed, engine_kinds
from .compose import checked_noise_shape, graph_seed, noise_of
from .draw import RandomDraw
from .emath import Binary
from .layer import Layer, keras_config

DROPOUT, AUGMENT = engine_kinds("DROPOUT AUGMENT")


class Dropout(Layer):
    """Keras 3's `Dropout(rate, noise_shape=None, seed=None)`: zeroes a fraction `rate` of the inputs in fit
    (scaling the rest), the identity otherwise. With a noise_shape (EfficientNet's stochastic depth:
    (None, 1, 1, 1), one draw per sample) the keep mask is drawn in that shape and broadcast: the layer is then
    composed from the engine's draw and a broadcasting multiply (call(), as SpatialDropout2D)."""
    _scalar_ok = True
    _random = True
    _base = "dropout"
    _mode_dependent = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}")
        self.noise_shape = checked_noise_shape("Dropout", noise_shape)
        self.rate, self.seed = float(rate), seed

    def _custom(self):
        return self.noise_shape is not None   # traced (call), else the engine's DROPOUT kind

    def call(self, inputs, training=False):
        noise = noise_of(self, inputs)
        if not training or self.rate == 0.0:
            return inputs
        keep = RandomDraw(noise, "dropout", self.rate, 1.0 / (1.0 - self.rate), seed=graph_seed(self.seed))(inputs)
        return Binary("multiply")([inputs, keep])

    def spec(self):
        return dict(kind=DROPOUT, name=self.name, rate=self.rate)


class GaussianNoise(Layer):
    """Keras 3's `GaussianNoise(stddev, seed=None)`: adds zero-mean Gaussian noise in fit only."""
    _random = True
    _base = "gaussian_noise"
    _mode_dependent = True

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(stddev, bool) or not isinstance(stddev, numbers.Real) or not 0.0 <= stddev < math.inf:
            raise ValueError(f"GaussianNoise: stddev must be a finite number >= 0, got {stddev!r}")
        self.stddev, self.seed = float(stddev), _seed("GaussianNoise", seed)

    def spec(self):
        return dict(kind=AUGMENT, name=self.name, aug_seed=self.seed, aug_noise=1, aug_stddev=self.stddev)


class GaussianDropout(Layer):
    """Keras 3's `GaussianDropout(rate, seed=None)`: multiplies by Gaussian noise of mean 1 in fit only."""
    _random = True
    _base = "gaussian_dropout"
    _mode_dependent = True

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate < 1.0:
            raise ValueError(f"GaussianDropout: rate must be in [0, 1), got {rate!r}")
        self.rate, self.seed = float(rate), _seed("GaussianDropout", seed)

    def spec(self):
        return dict(kind=AUGMENT, name=self.name, aug_seed=self.seed, aug_noise=2,
                    aug_stddev=math.sqrt(self.rate / (1.0 - self.rate)))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Dropout)
def _dropout_config(l):
    return dict(rate=l.rate, seed=l.seed, noise_shape=None if l.noise_shape is None else list(l.noise_shape))


@keras_config(GaussianNoise)
def _gaussian_noise_config(l):
    return dict(stddev=l.stddev, seed=l.seed)


@keras_config(GaussianDropout)
def _gaussian_dropout_config(l):
    return dict(rate=l.rate, seed=l.seed)
