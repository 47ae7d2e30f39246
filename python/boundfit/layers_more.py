"""Keras 3 layers for activations with parameters, layout and preprocessing:
ReLU, LeakyReLU, ELU, Softmax; Permute, RepeatVector, ZeroPadding2D,
UpSampling2D; Rescaling, Normalization (with adapt), RandomFlip, RandomCrop,
RandomTranslation. Re-exported from `boundfit.layers`. As there, each layer
describes itself to the engine (kind ids from _core.LAYER_KINDS);
the engine computes. The random layers act in fit only (identity in
evaluate / predict, RandomCrop a centred crop) and draw from the engine's
counter-based generator: a layer seed gives the same augmentations on every
run of a fresh model."""

import math
import numbers

import numpy as np

from . import activations
from .layers import ACTIVATION, Layer, engine_kinds

PERMUTE, REPEAT, ZEROPAD2D, UPSAMPLE2D, RESCALING, NORMALIZATION, AUGMENT = engine_kinds(
    "PERMUTE REPEAT ZEROPAD2D UPSAMPLE2D RESCALING NORMALIZATION AUGMENT")


def _number(v, argument, cls="layer"):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
        raise ValueError(f"{cls}: {argument} must be a finite number, got {v!r}")
    return float(v)


def _image_shape(layer, shape):
    if len(shape) != 3:
        raise ValueError(f"{layer.name}: expects input of rank 3 (H, W, C) per sample, got shape {(None,) + tuple(shape)}")


def _data_format(cls, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{cls}: only data_format='channels_last' is supported, got {data_format!r}")


def _seed(cls, seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"{cls}: seed must be None or an int >= 0, got {seed!r}")
    return int(seed)


# ---- activation layers ----

class _ActLayer(Layer):
    def spec(self):
        return dict(kind=ACTIVATION, name=self.name, act=int(self.activation), act_p=self.activation.params())


class ReLU(_ActLayer):
    _base = "re_lu"

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold
        self.activation = activations.relu_act(negative_slope, max_value, threshold, "ReLU")


class LeakyReLU(_ActLayer):
    _base = "leaky_re_lu"

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _number(negative_slope, "negative_slope", "LeakyReLU")
        if self.negative_slope < 0:
            raise ValueError(f"LeakyReLU: negative_slope must be >= 0, got {negative_slope!r}")
        self.activation = activations.Act(activations.LEAKY_RELU, self.negative_slope)


class ELU(_ActLayer):
    _base = "elu"

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = _number(alpha, "alpha", "ELU")
        if self.alpha < 0:
            raise ValueError(f"ELU: alpha must be >= 0, got {alpha!r}")
        self.activation = activations.Act(activations.ELU, self.alpha)


class Softmax(_ActLayer):
    _base = "softmax"

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if axis not in (-1, [-1], (-1,)):
            raise ValueError(f"Softmax: only axis=-1 is supported, got axis={axis!r}")
        self.axis = -1
        self.activation = activations.Act(activations.SOFTMAX)


# ---- layout ----

class Permute(Layer):
    _base = "permute"

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        dims = tuple(dims) if isinstance(dims, (tuple, list)) else None
        if not dims or sorted(dims) != list(range(1, len(dims) + 1)) or not all(isinstance(d, int) for d in dims):
            raise ValueError(f"Permute: dims must be a permutation of 1..n (the batch axis is not permuted), got {dims!r}")
        self.dims = dims

    def compute_output_shape(self, shape):
        if len(shape) != len(self.dims):
            raise ValueError(f"{self.name}: dims {self.dims} do not fit input of shape {(None,) + tuple(shape)}")
        return tuple(shape[d - 1] for d in self.dims)

    def spec(self):
        return dict(kind=PERMUTE, name=self.name, perm=tuple(d - 1 for d in self.dims))


class RepeatVector(Layer):
    _base = "repeat_vector"

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0:
            raise ValueError(f"RepeatVector: n must be a positive int, got {n!r}")
        self.n = int(n)

    def compute_output_shape(self, shape):
        if len(shape) != 1:
            raise ValueError(f"{self.name}: expects input of shape (batch, features), got {(None,) + tuple(shape)}")
        return (self.n, shape[0])

    def spec(self):
        return dict(kind=REPEAT, name=self.name, reps=self.n)


def _pad_pairs(padding):
    def nonneg(v):
        return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0
    if nonneg(padding):
        return ((int(padding),) * 2,) * 2
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        if all(nonneg(v) for v in padding):
            return ((int(padding[0]),) * 2, (int(padding[1]),) * 2)
        if all(isinstance(p, (tuple, list)) and len(p) == 2 and all(nonneg(v) for v in p) for p in padding):
            return tuple(tuple(int(v) for v in p) for p in padding)
    raise ValueError("ZeroPadding2D: padding must be an int >= 0, a pair of them or a pair of pairs "
                     f"((top, bottom), (left, right)), got {padding!r}")


class ZeroPadding2D(Layer):
    _base = "zero_padding2d"

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("ZeroPadding2D", data_format)
        self.padding = _pad_pairs(padding)

    def compute_output_shape(self, shape):
        _image_shape(self, shape)
        (t, b), (l, r) = self.padding
        return (shape[0] + t + b, shape[1] + l + r, shape[2])

    def spec(self):
        (t, b), (l, r) = self.padding
        return dict(kind=ZEROPAD2D, name=self.name, pad=(t, b, l, r))


class UpSampling2D(Layer):
    _base = "up_sampling2d"

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        _data_format("UpSampling2D", data_format)
        size = (size, size) if isinstance(size, int) else tuple(size)
        if len(size) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size):
            raise ValueError(f"UpSampling2D: size must be a positive int or a pair of them, got {size!r}")
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D: interpolation={interpolation!r} is not supported by boundfit; "
                             "only 'nearest' is")
        self.size, self.interpolation = size, interpolation

    def compute_output_shape(self, shape):
        _image_shape(self, shape)
        return (shape[0] * self.size[0], shape[1] * self.size[1], shape[2])

    def spec(self):
        return dict(kind=UPSAMPLE2D, name=self.name, sh=self.size[0], sw=self.size[1])


# ---- preprocessing ----

class Rescaling(Layer):
    _base = "rescaling"

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = _number(scale, "scale", "Rescaling")
        self.offset = _number(offset, "offset", "Rescaling")

    def spec(self):
        return dict(kind=RESCALING, name=self.name, rs_scale=self.scale, rs_offset=self.offset)


class Normalization(Layer):
    """Keras 3's Normalization over the last axis: (x - mean) / max(sqrt(variance), 1e-7).
    Weights mean, variance (per feature) and count (Keras keeps it 0), none of
    them trainable; adapt(data) sets mean and variance from a NumPy array or
    a batched Sequence / generator, batch by batch in bounded memory."""
    _base = "normalization"
    _has_weights = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis not in (-1, (-1,), [-1]):
            raise ValueError(f"Normalization: only axis=-1 (the last axis) is supported, got axis={axis!r}")
        if invert:
            raise ValueError("Normalization: invert=True is not supported by boundfit")
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither (and call adapt())")
        self.axis, self.invert = -1, False
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
        from .errors import DataError
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
        from .errors import DataError
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


_FILL = {"reflect": 0, "constant": 1, "nearest": 2, "wrap": 3}


class _Random(Layer):
    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format(type(self).__name__, data_format)
        self.seed = _seed(type(self).__name__, seed)

    def compute_output_shape(self, shape):
        _image_shape(self, shape)
        return tuple(shape)

    def _spec(self, **kw):
        return dict(kind=AUGMENT, name=self.name, aug_seed=self.seed, **kw)


class RandomFlip(_Random):
    _base = "random_flip"
    _MODES = {"horizontal": 1, "vertical": 2, "horizontal_and_vertical": 3}

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip: mode must be one of {sorted(self._MODES)}, got {mode!r}")
        self.mode = mode

    def spec(self):
        return self._spec(aug_flip=self._MODES[self.mode])


class RandomCrop(_Random):
    _base = "random_crop"

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        for k, v in (("height", height), ("width", width)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError(f"RandomCrop: {k} must be a positive int, got {v!r}")
        self.height, self.width = int(height), int(width)

    def compute_output_shape(self, shape):
        _image_shape(self, shape)
        if self.height > shape[0] or self.width > shape[1]:
            raise ValueError(f"{self.name}: a {self.height}x{self.width} crop does not fit input {tuple(shape[:2])}; "
                             "boundfit does not resize a smaller image up as Keras would")
        return (self.height, self.width, shape[2])

    def spec(self):
        return self._spec(aug_crop=1, kh=self.height, kw=self.width)


class RandomTranslation(_Random):
    _base = "random_translation"

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = self._factor(height_factor, "height_factor")
        self._w = self._factor(width_factor, "width_factor")
        if fill_mode not in _FILL:
            raise ValueError(f"RandomTranslation: fill_mode must be one of {sorted(_FILL)}, got {fill_mode!r}")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"RandomTranslation: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = _number(fill_value, "fill_value", "RandomTranslation")

    @staticmethod
    def _factor(f, argument):
        if isinstance(f, (tuple, list)):
            if len(f) != 2:
                raise ValueError(f"RandomTranslation: {argument} must be a number or a pair, got {f!r}")
            lo, hi = sorted(_number(v, argument, "RandomTranslation") for v in f)
        else:
            v = abs(_number(f, argument, "RandomTranslation"))
            lo, hi = -v, v
        if lo < -1.0 or hi > 1.0:
            raise ValueError(f"RandomTranslation: {argument} must be within [-1, 1], got {f!r}")
        return lo, hi

    def spec(self):
        return self._spec(aug_translate=1, aug_h_lo=self._h[0], aug_h_hi=self._h[1], aug_w_lo=self._w[0],
                          aug_w_hi=self._w[1], aug_fill=_FILL[self.fill_mode],
                          aug_bilinear=int(self.interpolation == "bilinear"), aug_fill_value=self.fill_value)
