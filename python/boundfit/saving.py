"""keras.saving: load_model / save_model in Keras 3's `.keras` format and
`.weights.h5` weights (python/boundfit/keras_format.py does the work)."""

from .keras_format import load_model, load_weights, save_model, save_weights

__all__ = ["load_model", "save_model", "load_weights", "save_weights"]
