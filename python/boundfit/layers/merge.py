"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum,
Concatenate, and their functional forms (add(...), ...). ops.py maps a
symbolic tensor's +, - and * onto them."""

from .. import _core
from .args import engine_kinds
from .layer import Layer, keras_config

ADD, SUBTRACT, MULTIPLY, AVERAGE, MAXIMUM, MINIMUM, CONCAT, BINARY = engine_kinds(
    "ADD SUBTRACT MULTIPLY AVERAGE MAXIMUM MINIMUM CONCAT BINARY")


def _broadcasts(a, b):
    """two per-sample shapes of one rank that differ and broadcast (each axis equal or 1 in one of them)"""
    return a != b and len(a) == len(b) and all(x == y or x == 1 or y == 1 for x, y in zip(a, b))


class _Merge(Layer):
    """Merge layers: called on a list of tensors of one shape; Add, Subtract, Multiply, Maximum and Minimum on
    two tensors whose shapes broadcast too (a (1, 1, C) gate of an (H, W, C) map, as Keras 3's merge layers
    take), computed then by the engine's broadcasting binary op (layers/emath.py's Binary)."""
    _scalar_ok = True   # elementwise, on one number per sample too (not Concatenate)
    kind = None
    _n_inputs = "many"
    _binary_op = None    # the BINARY_OPS name of a two-input merge that may broadcast
    _broadcast = False

    def _before_infer(self, shapes):
        self._broadcast = self._binary_op is not None and len(shapes) == 2 and _broadcasts(*map(tuple, shapes))

    def spec(self):
        if self._broadcast:
            return dict(kind=BINARY, name=self.name, eop=_core.BINARY_OPS.index(self._binary_op))
        return dict(kind=self.kind, name=self.name)


class Add(_Merge):
    """Keras 3's `Add`: the elementwise sum of its inputs."""
    _base, kind, _binary_op = "add", ADD, "add"


class Subtract(_Merge):
    """Keras 3's `Subtract`: the first input minus the second."""
    _base, kind, _binary_op = "subtract", SUBTRACT, "subtract"


class Multiply(_Merge):
    """Keras 3's `Multiply`: the elementwise product of its inputs."""
    _base, kind, _binary_op = "multiply", MULTIPLY, "multiply"


class Average(_Merge):
    """Keras 3's `Average`: the elementwise mean of its inputs."""
    _base, kind = "average", AVERAGE


class Maximum(_Merge):
    """Keras 3's `Maximum`: the elementwise maximum of its inputs."""
    _base, kind, _binary_op = "maximum", MAXIMUM, "maximum"


class Minimum(_Merge):
    """Keras 3's `Minimum`: the elementwise minimum of its inputs."""
    _base, kind, _binary_op = "minimum", MINIMUM, "minimum"


class Concatenate(_Merge):
    """Keras 3's `Concatenate(axis=-1)`: its inputs joined along `axis`."""
    _base, kind = "concatenate", CONCAT
    _scalar_ok = False

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, int) or axis == 0:
            raise ValueError(f"Concatenate: axis must be a non-zero int (axis 0 is the batch axis), got {axis!r}")
        self.axis = axis
        self._axis = None

    def _before_infer(self, shapes):
        """The engine's axis (per sample, from 0) of Keras's `axis` for inputs of this rank; one rank per layer."""
        r = len(shapes[0])
        a = self.axis - 1 if self.axis > 0 else r + self.axis
        if not 0 <= a < r or any(len(s) != r for s in shapes):
            raise ValueError(f"{self.name}: axis {self.axis} does not fit inputs of shapes "
                             f"{[(None,) + tuple(s) for s in shapes]}")
        if self._axis is not None and self._axis != a:
            raise ValueError(f"{self.name}: called again on inputs of another rank")
        self._axis = a

    def spec(self):
        return dict(kind=CONCAT, name=self.name, axis=self._axis if self._axis is not None else 0)


def add(inputs, **kwargs):
    """Keras's functional form: `Add()(inputs)`."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """Keras's functional form: `Subtract()(inputs)`."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Keras's functional form: `Multiply()(inputs)`."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """Keras's functional form: `Average()(inputs)`."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Keras's functional form: `Maximum()(inputs)`."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Keras's functional form: `Minimum()(inputs)`."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Keras's functional form: `Concatenate(axis)(inputs)`."""
    return Concatenate(axis=axis, **kwargs)(inputs)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Concatenate)
def _concatenate_config(l):
    return dict(axis=l.axis)


@keras_config(Add, Subtract, Multiply, Average, Maximum, Minimum)
def _merge_config(l):
    return {}
