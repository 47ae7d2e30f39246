"""Small data sets shipped inside the package, with Keras's loader interface
(keras.datasets): `boundfit.datasets.digits.load_data()`."""

from . import digits

__all__ = ["digits"]
