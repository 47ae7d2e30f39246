"""InputLayer and Input: the symbolic input tensors of a graph."""

import numbers

from .args import _is_size
from .layer import _counters
from .node import KerasTensor


class InputLayer:
    """Marks the input shape (Keras `InputLayer`); `Input(...)` returns its symbolic tensor."""

    def __init__(self, shape=None, batch_size=None, name=None, input_shape=None, dtype=None, **kwargs):
        shape = shape if shape is not None else input_shape
        if shape is None:
            raise ValueError("Input: shape is required")
        if isinstance(shape, numbers.Integral):
            shape = (shape,)
        shape = tuple(shape)
        if not all(d is None or _is_size(d) for d in shape):
            raise ValueError(f"Input: shape must be a tuple of positive ints or None (a variable length), each below "
                             f"2**31, without the batch axis (() for one number per sample), got {shape!r}")
        self.shape = tuple(d if d is None else int(d) for d in shape)
        if name is None:
            n = _counters.get("input_layer", 0)
            _counters["input_layer"] = n + 1
            name = "input_layer" if n == 0 else f"input_layer_{n}"
        self.name = name
        self.dtype = dtype or "float32"
        self.trainable = False
        self._inbound = []

    def get_weights(self):
        return []

    @property
    def weights(self):
        """An input's weights: none ([], as Keras's InputLayer)."""
        return []

    def count_params(self):
        return 0

    @property
    def output(self):
        if not hasattr(self, "_tensor"):
            self._tensor = KerasTensor(self.shape, self.dtype, self.name, input_layer=self)
        return self._tensor


def Input(shape=None, batch_size=None, dtype=None, name=None, **kwargs):
    """A symbolic input tensor (Keras `keras.Input`): call layers on it and pass
    it to `Model(inputs, outputs)`, or put it first in a Sequential."""
    return InputLayer(shape=shape, batch_size=batch_size, name=name, dtype=dtype).output
