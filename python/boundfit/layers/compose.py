"""What the Keras layers boundfit composes from the engine's primitives share
(norms.py, spatial_dropout.py, cropping.py, dot_attention.py, einsum_dense.py,
time_distributed.py): Keras writes these layers'
call() in keras.ops; boundfit's call() builds the same graph from the layer
pieces keras.ops becomes (Reduce, Unary, Binary, Weight, RandomDraw, Slice,
Reshape: layers/ sits below ops.py, so it uses them directly). Each such
layer has a Keras config (layer.keras_config), which makes it a Keras
composite: .keras files hold it as the one Keras layer (saving/keras_graph.py),
its weights its Weight sublayers' in assignment order."""

import numbers

import numpy as np

from .emath import Unary, Weight
from .reshaping import Reshape


def axes_of(layer, axis, rank):
    """Keras's axis (an int or a list of them, counted with the batch axis, negative from the end) of an input of
    `rank` axes per sample as sorted positive axes 1..rank; ValueError naming `axis` otherwise."""
    many = isinstance(axis, (list, tuple))
    items = list(axis) if many else [axis]
    if not items or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in items):
        raise ValueError(f"{type(layer).__name__}: axis must be an int or a list of ints, got {axis!r}")
    out = sorted({int(a) + rank + 1 if a < 0 else int(a) for a in items})
    if out[0] < 1 or out[-1] > rank:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: axis {axis!r} is out of range for inputs of "
                         f"{rank} axes per sample (the batch axis 0 is not normalized)")
    return tuple(out)


def checked_axis(cls, axis):
    """axis as given (an int or a list of ints), checked when the layer is made"""
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not items or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in items):
        raise TypeError(f"{cls}: axis must be an int or a list/tuple of ints, got {axis!r}")
    return [int(a) for a in items] if isinstance(axis, (list, tuple)) else int(axis)


def positive_number(cls, argument, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 < float(v) < float("inf"):
        raise ValueError(f"{cls}: {argument} must be a finite number > 0, got {v!r}")
    return float(v)


def rate(cls, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 <= float(v) < 1.0:
        raise ValueError(f"{cls}: rate must be a number in [0, 1), got {v!r}")
    return float(v)


def weight(layer, name, shape, initializer, regularizer=None, constraint=None, keras_shape=None):
    """A trainable weight of a composed layer (the engine's WEIGHT, the same for every sample); keras_shape: the
    shape Keras keeps it in where that differs (a scalar, (), is (1,) in the engine)."""
    w = Weight(shape, initializer=initializer, regularizer=regularizer, constraint=constraint,
               name=f"{layer.name}_{name}")
    w._of_layer = True
    w._keras_var_names = {"kernel": name}   # the engine's weight of a Weight is its "kernel"
    if keras_shape is not None:
        w._keras_shape = tuple(keras_shape)
    return w


class KerasShapedWeights:
    """A composed layer whose weights Keras keeps in other shapes than the engine (a scalar, an einsum kernel as
    a Dense's matrix): get_weights / set_weights and .keras files in Keras's shapes. Each engine layer among its
    sublayers says its weights' Keras shapes (`_keras_var_shapes`, or a Weight's `_keras_var_shape`)."""

    def _shapes(self):
        """[(engine shape, Keras shape)] of its weights, in order"""
        out = []
        for sub in self._sublayers():
            if isinstance(sub, Weight):
                out.append((sub.shape, sub._keras_var_shape))
            else:
                out.extend(zip(sub._engine_shapes, sub._keras_var_shapes))
        return out

    def _to_keras_vars(self, ws):
        return [np.reshape(w, k) for w, (_, k) in zip(ws, self._shapes())]

    def _from_keras_vars(self, got, want):
        return [np.reshape(g, s) if np.size(g) == int(np.prod(s)) else g for g, s in zip(got, want)]

    def get_weights(self):
        return self._to_keras_vars(super().get_weights())

    def set_weights(self, weights):
        ws = list(weights)
        shapes = self._shapes()
        super().set_weights(self._from_keras_vars(ws, [e for e, _ in shapes]) if len(ws) == len(shapes) else ws)


def against(t, x):
    """t (a tensor without a batch axis: a Weight's) with leading size-1 axes to x's per-sample rank, NumPy's
    broadcasting of a weight against a batch."""
    pad = len(x._ps) - len(t._ps)
    return Reshape((1,) * pad + tuple(t._ps))(t) if pad else t


def rsqrt_plus(t, epsilon):
    """1 / sqrt(t + epsilon)"""
    return Unary("rsqrt")(Unary("add", epsilon)(t))


def graph_seed(seed, k=0):
    """The engine's seed of a layer's draws: None, the run's stream; an int, a stream of its own from it (a
    Keras layer's SeedGenerator(seed): new draws every step, reproducible); k: the layer's k-th such stream"""
    if seed is None:
        return 0
    s = np.random.SeedSequence([int(seed), int(k)]).generate_state(1, np.uint64)[0]
    return int(s) % (2**62 - 1) + 1


def checked_noise_shape(cls, noise_shape):
    """Keras's noise_shape argument (None, or a tuple of ints >= 1 and None) as a tuple; ValueError naming it"""
    if noise_shape is not None and (not isinstance(noise_shape, (list, tuple)) or not all(
            d is None or isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1
            for d in noise_shape)):
        raise ValueError(f"{cls}: noise_shape must be None or a tuple of ints >= 1 and None, got {noise_shape!r}")
    return None if noise_shape is None else tuple(noise_shape)


def noise_of(layer, inputs):
    """the per-sample shape of a dropout's keep mask: noise_shape's None entries the input's, its batch entry
    None (a mask per sample); the input's shape without a noise_shape"""
    ps = inputs._ps
    if layer.noise_shape is None:
        return ps
    ns = layer.noise_shape
    if len(ns) != len(ps) + 1 or ns[0] is not None or any(
            d is not None and d != p and d != 1 for d, p in zip(ns[1:], ps)):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: noise_shape {ns} does not broadcast to the input's "
                         f"shape {inputs.shape} (its batch entry must be None: a mask per sample)")
    noise = tuple(p if d is None else d for d, p in zip(ns[1:], ps))
    if None in noise:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: the noise needs known sizes, got {noise} for input "
                         f"shape {inputs.shape}")
    return noise
