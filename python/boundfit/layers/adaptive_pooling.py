"""AdaptiveAveragePooling1D / 2D / 3D and AdaptiveMaxPooling1D / 2D / 3D as
Keras 3 computes them (its JAX backend's "two-pool gather"): along each
spatial axis in turn, output i pools the window [floor(i*L/n), ceil((i+1)*L/n))
of the axis's L positions; Keras pools the whole axis with the two window
sizes that occur (small = ceil(L/n) and small + 1, stride 1) and gathers each
output's window. Here the same, composed from the engine's kinds: the axis as
the width of a (P, L, Q) view (Reshape), the 2D pooling with a (1, k)
window, Concatenate, and the gathered positions as strided Slices (runs of
equal steps; a plain pooling when L = n * small). channels_first through a
Permute on each side."""

import math

import numpy as np

from .args import _is_size
from .layer import Layer, keras_config
from .merge import Concatenate
from .pooling import AveragePooling2D, MaxPooling2D, _format
from .reshaping import Permute, Reshape, Slice


def _output_size(cls, v, n):
    t = (v,) * n if _is_size(v) else tuple(v) if isinstance(v, (list, tuple)) else None
    if t is None or len(t) != n or not all(_is_size(i) for i in t):
        raise TypeError(f"{cls}: output_size must be an int or a tuple of {n} ints, got {v!r}")
    return tuple(int(i) for i in t)


def _runs(idx):
    """idx as runs (start, step, length) of equal steps, greedily"""
    out, i = [], 0
    while i < len(idx):
        j = i + 1
        step = int(idx[j] - idx[i]) if j < len(idx) else 1
        while j < len(idx) and idx[j] - idx[j - 1] == step and step >= 1:
            j += 1
        if step < 1:   # a repeated or backward position: a run of one
            j, step = i + 1, 1
        out.append((int(idx[i]), step, j - i))
        i = j
    return out


class _AdaptivePool(Layer):
    _n, _pool = 0, None

    def __init__(self, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        self.output_size = _output_size(cls, output_size, self._n)
        self.data_format = _format(cls, data_format)

    def _axis(self, v, L, n):
        """v (P, L, Q) pooled along L to n positions"""
        starts = np.floor(np.arange(n) * L / n).astype(np.int64)
        sizes = np.ceil(np.arange(1, n + 1) * L / n).astype(np.int64) - starts
        small = math.ceil(L / n)
        if L == n * small:   # every window small, side by side
            return self._pool((1, small))(v)
        pooled = self._pool((1, small), strides=(1, 1))(v)
        idx = starts
        if (sizes == small + 1).any():
            pooled = Concatenate(axis=2)([pooled, self._pool((1, small + 1), strides=(1, 1))(v)])
            idx = np.where(sizes == small + 1, starts + L - small + 1, starts)
        P, _, Q = v._ps
        parts = [Slice((0, s, 0), (1, st, 1), (P, k, Q))(pooled) for s, st, k in _runs(idx)]
        return parts[0] if len(parts) == 1 else Concatenate(axis=2)(parts)

    def call(self, inputs):
        ps, n = inputs._ps, self._n
        if len(ps) != n + 1 or None in ps:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects inputs of {n + 2} axes of known sizes "
                             f"(batch first), got shape {inputs.shape}")
        first = self.data_format == "channels_first"
        x = Permute(tuple(range(2, n + 2)) + (1,))(inputs) if first else inputs
        for a in range(n):
            sp, C = x._ps[:n], x._ps[n]
            L, out = sp[a], self.output_size[a]
            P, Q = math.prod(sp[:a]), math.prod(sp[a + 1:]) * C
            v = self._axis(Reshape((P, L, Q))(x), L, out)
            x = Reshape(tuple(sp[:a]) + (out,) + tuple(sp[a + 1:]) + (C,))(v)
        return Permute((n + 1,) + tuple(range(1, n + 1)))(x) if first else x


class AdaptiveAveragePooling1D(_AdaptivePool):
    """Keras 3's `AdaptiveAveragePooling1D(output_size, data_format=None)`: (steps, C) averaged to output_size steps."""
    _base, _n, _pool = "adaptive_average_pooling1d", 1, AveragePooling2D


class AdaptiveAveragePooling2D(_AdaptivePool):
    """Keras 3's `AdaptiveAveragePooling2D(output_size, data_format=None)`: (H, W, C) averaged to output_size."""
    _base, _n, _pool = "adaptive_average_pooling2d", 2, AveragePooling2D


class AdaptiveAveragePooling3D(_AdaptivePool):
    """Keras 3's `AdaptiveAveragePooling3D(output_size, data_format=None)`: (D, H, W, C) averaged to output_size."""
    _base, _n, _pool = "adaptive_average_pooling3d", 3, AveragePooling2D


class AdaptiveMaxPooling1D(_AdaptivePool):
    """Keras 3's `AdaptiveMaxPooling1D(output_size, data_format=None)`: the maxima of (steps, C) to output_size."""
    _base, _n, _pool = "adaptive_max_pooling1d", 1, MaxPooling2D


class AdaptiveMaxPooling2D(_AdaptivePool):
    """Keras 3's `AdaptiveMaxPooling2D(output_size, data_format=None)`: the maxima of (H, W, C) to output_size."""
    _base, _n, _pool = "adaptive_max_pooling2d", 2, MaxPooling2D


class AdaptiveMaxPooling3D(_AdaptivePool):
    """Keras 3's `AdaptiveMaxPooling3D(output_size, data_format=None)`: the maxima of (D, H, W, C) to
    output_size."""
    _base, _n, _pool = "adaptive_max_pooling3d", 3, MaxPooling2D


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(AdaptiveAveragePooling1D, AdaptiveAveragePooling2D, AdaptiveAveragePooling3D, AdaptiveMaxPooling1D,
              AdaptiveMaxPooling2D, AdaptiveMaxPooling3D)
def _adaptive_config(l):
    return dict(output_size=list(l.output_size), data_format=l.data_format)
