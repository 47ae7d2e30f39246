"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum,
Concatenate, and their functional forms (add(...), ...). ops.py maps a
symbolic tensor's +, - and * onto them."""

from .args import engine_kinds
from .layer import Layer, keras_config

ADD, SUBTRACT, MULTIPLY, AVERAGE, MAXIMUM, MINIMUM, CONCAT = engine_kinds(
    "ADD SUBTRACT MULTIPLY AVERAGE MAXIMUM MINIMUM CONCAT")


class _Merge(Layer):
    """Merge layers: called on a list of tensors of one shape."""
    _scalar_ok = True   # elementwise, on one number per sample too (not Concatenate)
    kind = None
    _n_inputs = "many"

    def spec(self):
        return dict(kind=self.kind, name=self.name)


class Add(_Merge):
    """Keras 3's `Add`: the elementwise sum of its inputs."""
    _base, kind = "add", ADD


class Subtract(_Merge):
    """Keras 3's `Subtract`: the first input minus the second."""
    _base, kind = "subtract", SUBTRACT


class Multiply(_Merge):
    """Keras 3's `Multiply`: the elementwise product of its inputs."""
    _base, kind = "multiply", MULTIPLY


class Average(_Merge):
    """Keras 3's `Average`: the elementwise mean of its inputs."""
    _base, kind = "average", AVERAGE


class Maximum(_Merge):
    """Keras 3's `Maximum`: the elementwise maximum of its inputs."""
    _base, kind = "maximum", MAXIMUM


class Minimum(_Merge):
    """Keras 3's `Minimum`: the elementwise minimum of its inputs."""
    _base, kind = "minimum", MINIMUM


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
