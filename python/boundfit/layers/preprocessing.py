"""Preprocessing layers: Rescaling (composed: x * scale, then + offset, the
engine's elementwise map with a number, Unary), and Normalization with adapt
(mean and variance over batches, float64)."""

import numpy as np

from ..errors import DataError
from .args import _listed, _number, engine_kinds
from .emath import Unary
from .layer import Layer, keras_config

(NORMALIZATION,) = engine_kinds("NORMALIZATION")


# ---- preprocessing ----

class Rescaling(Layer):
    """Keras 3's `Rescaling(scale, offset=0.0)`: x * scale + offset, traced into the engine's elementwise map with a
    number (Unary multiply, then add; either left out where it changes nothing, the multiply kept for an
    identity); neither keeps its input or output for backward (a constant derivative)."""
    _scalar_ok = True
    _base = "rescaling"

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = _number(scale, "scale", "Rescaling")
        self.offset = _number(offset, "offset", "Rescaling")

    def call(self, inputs):
        y = inputs
        if self.scale != 1.0 or self.offset == 0.0:
            y = Unary("multiply", self.scale, name=f"{self.name}_scale")(y)
        return Unary("add", self.offset, name=f"{self.name}_offset")(y) if self.offset != 0.0 else y


class Normalization(Layer):
    """Keras 3's Normalization over the last axis: (x - mean) / max(sqrt(variance), 1e-7).
    Weights mean, variance (per feature) and count (Keras keeps it 0), none of
    them trainable; adapt(data) sets mean and variance from a NumPy array or
    a batched Sequence / generator, batch by batch in bounded memory."""
    _base = "normalization"
    _has_weights = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        one = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
        if isinstance(one, bool) or not isinstance(one, int):
            raise ValueError(f"Normalization: only the last axis is supported (axis=-1, or its index), got "
                             f"axis={axis!r}")
        if invert:
            raise ValueError("Normalization: invert=True is not supported by boundfit")
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither (and call adapt())")
        self.axis, self.invert = one, False
        self.input_mean, self.input_variance = mean, variance
        self._pending = None
        if mean is not None:
            m, v = np.asarray(mean, np.float64), np.asarray(variance, np.float64)
            if m.ndim > 1 or v.ndim > 1 or not np.all(np.isfinite(m)) or not np.all(np.isfinite(v)) or np.any(v < 0):
                raise ValueError("Normalization: mean and variance must be finite numbers or 1-D arrays over the "
                                 f"last axis (variance >= 0), got mean={mean!r}, variance={variance!r}")
            self._pending = (m, v)

    def _check_call_shape(self, shape):
        super()._check_call_shape(shape)
        if self.axis not in (-1, len(shape)):
            raise ValueError(f"{self.name}: only the last axis is supported (axis=-1 or {len(shape)} for inputs of "
                             f"shape {(None,) + tuple(shape)}), got axis={self.axis}")
        if self._pending is not None:
            for a in self._pending:
                if a.ndim == 1 and a.shape[0] not in (1, shape[-1]):
                    raise ValueError(f"{self.name}: mean / variance have {a.shape[0]} values, the input's last "
                                     f"axis has {shape[-1]}")

    def _engine_weights(self, shapes):
        """Weights to put into a freshly built engine (constructor or adapt values), or None."""
        if self._pending is None:
            return None
        m, v = self._pending
        c = shapes[0]
        return [np.broadcast_to(m, c).astype(np.float32), np.broadcast_to(v, c).astype(np.float32),
                np.zeros(shapes[2], np.float32)]

    def adapt(self, data, batch_size=None, steps=None):
        """Mean and variance over all axes but the last, as Keras 3's adapt:
        a NumPy array is read in chunks (float64 sums, bounded memory); a
        Sequence / generator batch by batch (x, or x of (x, y) pairs)."""
        stats = _Moments()
        if isinstance(data, np.ndarray):
            if data.ndim < 1 or data.shape[0] == 0:
                raise DataError(f"Normalization.adapt: data must be a non-empty array, got shape {data.shape}")
            flat = data.reshape(-1, data.shape[-1]) if data.ndim > 1 else data.reshape(-1, 1)
            step = max(1, (1 << 22) // max(1, flat.shape[1]))
            for s in range(0, flat.shape[0], step):
                stats.add(flat[s:s + step], "data")
        else:
            try:
                it = iter(data)
            except TypeError:
                raise TypeError(f"Normalization.adapt: data must be a NumPy array, a Sequence / PyDataset or an "
                                f"iterable of batches, got {type(data).__name__}") from None
            for k, batch in enumerate(it):
                if steps is not None and k >= steps:
                    break
                if isinstance(batch, tuple):
                    batch = batch[0]
                b = np.asarray(batch)
                if b.ndim < 1 or b.dtype.kind not in "biuf":
                    raise DataError(f"Normalization.adapt: batch {k} is not a numeric array (dtype {b.dtype})")
                stats.add(b.reshape(-1, b.shape[-1]) if b.ndim > 1 else b.reshape(-1, 1), f"batch {k}")
        if stats.n == 0:
            raise DataError("Normalization.adapt: the data has no samples")
        if self._weight_dim is not None and stats.mean.shape[0] != self._weight_dim:
            raise DataError(f"{self.name}: adapt() data has {stats.mean.shape[0]} features on the last axis, the layer "
                            f"was built for {self._weight_dim}")
        self._pending = (stats.mean, stats.var)
        if self._model is not None:
            w = self.get_weights()
            self.set_weights(self._engine_weights([w[0].shape, w[1].shape, w[2].shape]))

    def _to_keras_vars(self, ws):
        return [] if self.input_mean is not None else [ws[0], ws[1], np.zeros((), np.int64)]

    def _from_keras_vars(self, got, want):
        if self.input_mean is not None and not got:
            return self.get_weights()
        return [np.asarray(got[0]), np.asarray(got[1]), np.zeros(want[2], np.float32)] if len(got) == 3 else got

    def spec(self):
        return dict(kind=NORMALIZATION, name=self.name, trainable=0)


class _Moments:
    """Per-feature count, mean and variance over batches (Chan et al.'s pairwise update, float64)."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, None, None

    def add(self, b, where):
        b = np.asarray(b, dtype=np.float64)
        if self.mean is not None and b.shape[1] != self.mean.shape[0]:
            raise DataError(f"Normalization.adapt: {where} has {b.shape[1]} features, earlier batches "
                            f"{self.mean.shape[0]}")
        if not np.all(np.isfinite(b)):
            raise DataError(f"Normalization.adapt: {where} holds NaN or Inf")
        n = b.shape[0]
        if n == 0:
            return
        mb = b.mean(axis=0)
        m2b = ((b - mb) ** 2).sum(axis=0)
        if self.mean is None:
            self.n, self.mean, self.m2 = n, mb, m2b
            return
        tot = self.n + n
        d = mb - self.mean
        self.mean = self.mean + d * (n / tot)
        self.m2 = self.m2 + m2b + d * d * (self.n * n / tot)
        self.n = tot

    @property
    def var(self):
        return self.m2 / self.n


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Rescaling)
def _rescaling_config(l):
    return dict(scale=l.scale, offset=l.offset)


@keras_config(Normalization)
def _normalization_config(l):
    return dict(axis=[l.axis], invert=False, mean=_listed(l.input_mean), variance=_listed(l.input_variance))
