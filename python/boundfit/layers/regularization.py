"""Dropout."""

from .args import engine_kinds
from .layer import Layer, keras_config

DROPOUT, = engine_kinds("DROPOUT")


class Dropout(Layer):
    _base = "dropout"

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}")
        if noise_shape is not None:
            raise ValueError("Dropout: noise_shape is not supported")
        self.rate, self.seed = float(rate), seed

    def spec(self):
        return dict(kind=DROPOUT, name=self.name, rate=self.rate)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Dropout)
def _dropout_config(l):
    return dict(rate=l.rate, seed=l.seed, noise_shape=None)
