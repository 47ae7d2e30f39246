"""Layers that move values without computing: Flatten, Reshape, Permute,
RepeatVector (composed: a Gather of position 0 n times), ZeroPadding2D,
UpSampling2D."""

import numpy as np

from .._core import MAX_RANK
from .args import _data_format, _is_size, _size, _sizes, engine_kinds
from .index import Gather
from .layer import _CONSTANT, Layer, keras_config

RESHAPE, PERMUTE, ZEROPAD2D, UPSAMPLE2D, SLICE, CONST = engine_kinds(
    "RESHAPE PERMUTE ZEROPAD2D UPSAMPLE2D SLICE CONST")


class Flatten(Layer):
    """Keras 3's `Flatten`: each sample as one vector, the engine's Reshape to (-1,) (a view)."""
    _scalar_ok = True
    _base = "flatten"

    def spec(self):
        return dict(kind=RESHAPE, name=self.name, target_shape=(-1,))


class Reshape(Layer):
    """Keras 3's `Reshape(target_shape)`: each sample reshaped."""
    _scalar_ok = True
    _base = "reshape"

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)
        if sum(1 for d in self.target_shape if d == -1) > 1 or not all(d == -1 or _is_size(d) for d in self.target_shape):
            raise ValueError(f"Reshape: target_shape must hold positive integers below 2**31 and at most one -1, got "
                             f"{target_shape!r}")
        self.target_shape = tuple(int(d) for d in self.target_shape)

    def spec(self):
        return dict(kind=RESHAPE, name=self.name, target_shape=self.target_shape)


# ---- layout ----

class Permute(Layer):
    """Keras 3's `Permute(dims)`: the sample's axes permuted (1-based, the batch axis kept)."""
    _base = "permute"

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        dims = tuple(dims) if isinstance(dims, (tuple, list)) else None
        if not dims or sorted(dims) != list(range(1, len(dims) + 1)) or not all(isinstance(d, int) for d in dims):
            raise ValueError(f"Permute: dims must be a permutation of 1..n (the batch axis is not permuted), got {dims!r}")
        self.dims = dims

    def spec(self):
        return dict(kind=PERMUTE, name=self.name, perm=tuple(d - 1 for d in self.dims))


class RepeatVector(Layer):
    """Keras 3's `RepeatVector(n)`: a (F,) sample repeated into (n, F), traced into the engine's Gather of row 0
    of its (1, F) view n times (positions a Const; backward the scatter-add, the sum of the n copies)."""
    _base = "repeat_vector"

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = _size("RepeatVector", "n", n)

    def call(self, inputs):
        ps = inputs._ps
        if len(ps) != 1 or ps[0] is None:
            raise ValueError(f"RepeatVector {self.name!r} expects input of rank 1 (features) per sample, of a known "
                             f"size, got shape {inputs.shape}")
        row = Reshape((1, ps[0]), name=f"{self.name}_row")(inputs)
        at = Const(np.zeros(self.n, np.float32), name=f"{self.name}_positions")(inputs)
        return Gather(0, name=f"{self.name}_gather")([row, at])


def _pad_pairs(padding):
    def nonneg(v):
        return _is_size(v, low=0)
    if nonneg(padding):
        return ((int(padding),) * 2,) * 2
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        if all(nonneg(v) for v in padding):
            return ((int(padding[0]),) * 2, (int(padding[1]),) * 2)
        if all(isinstance(p, (tuple, list)) and len(p) == 2 and all(nonneg(v) for v in p) for p in padding):
            return tuple(tuple(int(v) for v in p) for p in padding)
    raise ValueError(f"ZeroPadding2D: padding must be an int from 0 to 2**31 - 1, a pair of them or a pair of pairs "
                     f"((top, bottom), (left, right)), got {padding!r}")


class ZeroPadding2D(Layer):
    """Keras 3's `ZeroPadding2D(padding=(1, 1))`: zero rows and columns around images."""
    _base = "zero_padding2d"

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format("ZeroPadding2D", data_format)
        self.padding = _pad_pairs(padding)

    def spec(self):
        (t, b), (l, r) = self.padding
        return dict(kind=ZEROPAD2D, name=self.name, pad=(t, b, l, r))


class UpSampling2D(Layer):
    """Keras 3's `UpSampling2D(size=(2, 2))`: each pixel repeated (nearest)."""
    _base = "up_sampling2d"

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        _data_format("UpSampling2D", data_format)
        size = _sizes("UpSampling2D", "size", size, 2)
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D: interpolation={interpolation!r} is not supported by boundfit; "
                             "only 'nearest' is")
        self.size, self.interpolation = size, interpolation

    def spec(self):
        return dict(kind=UPSAMPLE2D, name=self.name, sh=self.size[0], sw=self.size[1])


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Flatten)
def _flatten_config(l):
    return dict(data_format="channels_last")


@keras_config(Reshape)
def _reshape_config(l):
    return dict(target_shape=list(l.target_shape))


@keras_config(Permute)
def _permute_config(l):
    return dict(dims=list(l.dims))


@keras_config(RepeatVector)
def _repeat_vector_config(l):
    return dict(n=l.n)


@keras_config(ZeroPadding2D)
def _zero_padding_config(l):
    return dict(padding=[list(p) for p in l.padding], data_format="channels_last")


@keras_config(UpSampling2D)
def _upsampling_config(l):
    return dict(size=list(l.size), data_format="channels_last", interpolation=l.interpolation)


class Slice(Layer):
    """x[:, begin::step] per sample axis, the engine's SLICE (csrc/core/layers/slice.c): what
    keras.ops slicing of a symbolic tensor becomes (ops.py). Not a Keras layer: Keras files hold
    it as Keras's GetItem operation (saving/keras_graph.py)."""
    _base = "slice"

    def __init__(self, begin, step, length, **kwargs):
        super().__init__(**kwargs)
        self.begin, self.step, self.length = tuple(begin), tuple(step), tuple(length)

    def spec(self):
        pad = (0,) * (MAX_RANK - len(self.begin))   # one entry per axis the engine's samples may have
        return dict(kind=SLICE, name=self.name, sl_begin=self.begin + pad, sl_step=self.step + (1,) * len(pad),
                    sl_len=self.length + (1,) * len(pad))


class Const(Layer):
    """A per-sample constant, the same for every sample (the engine's CONST,
    csrc/core/layers/const.c): an array a layer is called on inside a custom
    layer's call(), as keras.io's TokenAndPositionEmbedding calls its position
    embedding on arange(maxlen). Its input (a tensor of that call) gives only
    the batch size; its values are a non-trainable weight. Not a Keras layer:
    Keras files hold it as the operations zeros_like(x[:, 0, ..., 0, None])
    + values (saving/keras_graph.py), which both read back."""
    _base = "constant"
    _has_weights = True
    _scalar_ok = True   # its input gives only the batch size

    def __init__(self, values, keras_weight=False, **kwargs):
        super().__init__(**kwargs)
        self.keras_weight = bool(keras_weight)   # False: no weight of the model's get_weights() (models/weights.py)
        self._values = np.array(values, dtype=np.float32)
        if not 1 <= self._values.ndim <= 3:
            raise ValueError(f"{self.name}: a constant of 1 to 3 axes per sample, got shape {self._values.shape}")
        self.shape = tuple(int(d) for d in self._values.shape)
        self.trainable = False

    def _check_call_shape(self, shape):
        pass   # any tensor of the call will do

    def spec(self):
        return dict(kind=CONST, name=self.name, target_shape=self.shape)

    def _engine_weights(self, shapes):
        return [self._values]


_CONSTANT["cls"] = Const

