"""Keras 3 initializers (`keras.initializers`): names, classes, defaults.

Each object describes itself to the engine as (kind, a, b, mode); the values
are drawn in C from the model's seed (csrc/core/model.c), so the streams are
not Keras's, but the distributions and their parameters are. The constant
initializers whose values depend on the weight's shape (Constant of an
array, Identity, STFT) compute them in Python (`__call__(shape)`, as Keras's
initializers are called); the model writes them into the weight when it
builds (models/building.py: _array_initializers).
"""

import math

import numpy as np

from . import spectral
from .config_object import ConfigObject

# bf_init (csrc/core/model.h)
_ZEROS, _ONES, _GLOROT_UNIFORM, _CONSTANT, _RANDOM_UNIFORM, _RANDOM_NORMAL, _TRUNCATED_NORMAL = range(7)
_VS_UNIFORM, _VS_NORMAL, _VS_TRUNCATED_NORMAL, _ORTHOGONAL = range(7, 11)
_MODES = {"fan_in": 0, "fan_out": 1, "fan_avg": 2}
_DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")


def _number(cls, arg, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{cls}: {arg} must be a finite number, got {v!r}")
    return float(v)


class Initializer(ConfigObject):
    """Base class; subclasses give `_engine()` and `get_config()`; those whose values Python computes
    (`_computed`) give `__call__(shape, dtype=None)` too."""
    _computed = False

    def _engine(self):
        raise NotImplementedError


class _Computed(Initializer):
    """An initializer whose values Python computes from the weight's shape (`__call__`); the engine writes zeros
    that the model replaces when it builds."""
    _computed = True

    def _engine(self):
        return (_CONSTANT, 0.0, 0.0, 0)


class Zeros(Initializer):
    """Keras 3's `Zeros`: all weights 0."""
    def _engine(self):
        return (_ZEROS, 0.0, 0.0, 0)


class Ones(Initializer):
    """Keras 3's `Ones`: all weights 1."""
    def _engine(self):
        return (_ONES, 0.0, 0.0, 0)


class Constant(Initializer):
    """A number, or an array of the weight's size (keras.io's PointNet: an identity matrix as a bias), which
    the model writes into the weight when it builds (models/building.py: _array_initializers)."""

    def __init__(self, value=0.0):
        if isinstance(value, (list, tuple, np.ndarray)):
            self.value = np.array(value, dtype=np.float32)
            if not np.isfinite(self.value).all():
                raise ValueError("Constant: value must be finite")
        else:
            self.value = _number("Constant", "value", value)

    @property
    def _computed(self):
        return isinstance(self.value, np.ndarray)

    def __call__(self, shape, dtype=None):
        """the values for a weight of `shape`: the number everywhere, or the array (of that many values)"""
        shape = tuple(int(d) for d in shape)
        if not isinstance(self.value, np.ndarray):
            return np.full(shape, self.value, np.float32)
        if self.value.size != int(np.prod(shape)):
            raise ValueError(f"Constant of {self.value.size} values for a weight of shape {shape}")
        return self.value.reshape(shape)

    def get_config(self):
        return {"value": self.value.tolist() if isinstance(self.value, np.ndarray) else self.value}

    def _engine(self):
        return (_CONSTANT, 0.0 if isinstance(self.value, np.ndarray) else self.value, 0.0, 0)


class Identity(_Computed):
    """Keras 3's `Identity(gain=1.0)`: gain times the identity matrix (ones on the diagonal of a 2D weight of any
    shape, as ops.eye)."""

    def __init__(self, gain=1.0):
        self.gain = _number("Identity", "gain", gain)

    def __call__(self, shape, dtype=None):
        shape = tuple(int(d) for d in shape)
        if len(shape) != 2:
            raise ValueError(f"Identity matrix initializer can only be used for 2D matrices. Received: shape={shape} "
                             f"of rank {len(shape)}.")
        return (self.gain * np.eye(*shape)).astype(np.float32)

    def get_config(self):
        return {"gain": self.gain}


class STFT(_Computed):
    """Keras 3's `STFT(side="real", window="hann", scaling="density", periodic=False)`: the kernel (frame_length,
    channels, bins) of a Fourier transform as a convolution, cos (side "real") or sin ("imag") of -2 pi t f /
    (2 (bins - 1)), times the window (a name of spectral.py, an array of frame_length values or None)
    divided by its L2 norm ("density"), its sum ("spectrum") or 1 (None)."""

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"STFT: side should be 'real' or 'imag', not {side!r}")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"STFT: scaling is invalid, it must be None, 'density' or 'spectrum'. Received "
                             f"scaling={scaling!r}")
        self.side, self.scaling, self.periodic = side, scaling, bool(periodic)
        self.window = spectral.check_window_name("STFT", window)
        if window is not None and not isinstance(window, str):
            win = np.asarray(window, np.float64)
            if win.ndim != 1 or not np.isfinite(win).all():
                raise ValueError(f"STFT: window must be a name, a 1D array of finite numbers or None, got {window!r}")
            self.window = win.tolist()

    def __call__(self, shape, dtype=None):
        shape = tuple(int(d) for d in shape)
        if len(shape) not in (2, 3):
            raise ValueError(f"STFT: the kernel's shape must be (frame_length, channels, bins) or (frame_length, "
                             f"bins), got {shape}")
        frame_length, bins = shape[0], shape[-1]
        t = np.arange(frame_length, dtype=np.float64)[:, None, None]
        f = np.arange(bins, dtype=np.float64)[None, None, :] / ((bins - 1) * 2)
        args = -2.0 * t * f * np.pi
        kernel = np.cos(args) if self.side == "real" else np.sin(args)
        if self.window is not None:
            win = spectral.get_window(self.window, frame_length, self.periodic) \
                if isinstance(self.window, str) else np.asarray(self.window, np.float64)
            if win.shape != (frame_length,):
                raise ValueError(f"STFT: the shape of `window` must be equal to [frame_length]. Received: window "
                                 f"shape={win.shape}")
            scale = np.sqrt(np.sum(win * win)) if self.scaling == "density" else \
                np.sum(np.abs(win)) if self.scaling == "spectrum" else 1.0
            kernel = kernel * win[:, None, None] / scale
        return np.broadcast_to(kernel if len(shape) == 3 else kernel[:, 0], shape).astype(np.float32)

    def get_config(self):
        return {"side": self.side, "window": self.window, "periodic": self.periodic, "scaling": self.scaling}


class RandomUniform(Initializer):
    """Keras 3's `RandomUniform(minval=-0.05, maxval=0.05, seed=None)`, drawn in C from the model's seed."""
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval = _number("RandomUniform", "minval", minval)
        self.maxval = _number("RandomUniform", "maxval", maxval)
        if self.maxval < self.minval:
            raise ValueError(f"RandomUniform: maxval ({maxval}) must be >= minval ({minval})")
        self.seed = seed

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}

    def _engine(self):
        return (_RANDOM_UNIFORM, self.minval, self.maxval, 0)


class RandomNormal(Initializer):
    """Keras 3's `RandomNormal(mean=0.0, stddev=0.05, seed=None)`, drawn in C from the model's seed."""
    _kind = _RANDOM_NORMAL

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean = _number(type(self).__name__, "mean", mean)
        self.stddev = _number(type(self).__name__, "stddev", stddev)
        if self.stddev < 0:
            raise ValueError(f"{type(self).__name__}: stddev must be >= 0, got {stddev!r}")
        self.seed = seed

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}

    def _engine(self):
        return (self._kind, self.mean, self.stddev, 0)


class TruncatedNormal(RandomNormal):
    """Normal values cut at two standard deviations (redrawn), as Keras."""
    _kind = _TRUNCATED_NORMAL


class VarianceScaling(Initializer):
    """Keras 3's `VarianceScaling(scale, mode, distribution, seed)`, the base of Glorot, He and LeCun initializers."""
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, input_axes=None,
                 output_axes=None):
        _no_axes(type(self).__name__, input_axes, output_axes)
        self.scale = _number(type(self).__name__, "scale", scale)
        if self.scale <= 0:
            raise ValueError(f"{type(self).__name__}: scale must be > 0, got {scale!r}")
        if mode not in _MODES:
            raise ValueError(f"{type(self).__name__}: mode must be one of {sorted(_MODES)}, got {mode!r}")
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"{type(self).__name__}: distribution must be one of {list(_DISTRIBUTIONS)}, "
                             f"got {distribution!r}")
        self.mode, self.distribution, self.seed = mode, distribution, seed

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}

    def _engine(self):
        if self.distribution == "uniform":
            # glorot_uniform's own stream (the engine default) where it is the same distribution
            kind = _GLOROT_UNIFORM if (self.scale, self.mode) == (1.0, "fan_avg") else _VS_UNIFORM
        elif self.distribution == "truncated_normal":
            kind = _VS_TRUNCATED_NORMAL
        else:
            kind = _VS_NORMAL
        return (kind, self.scale, 0.0, _MODES[self.mode])


def _no_axes(cls, input_axes, output_axes):
    # newer Keras 3 writes these (fans of einsum kernels); None is the only value boundfit's layers have
    if input_axes is not None or output_axes is not None:
        raise ValueError(f"{cls}: input_axes / output_axes are not supported (got {input_axes!r}, {output_axes!r})")


def _vs(name, scale, mode, distribution):
    def __init__(self, seed=None, input_axes=None, output_axes=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": f"VarianceScaling(scale={scale}, mode={mode!r}, "
                                                      f"distribution={distribution!r})"})


GlorotUniform = _vs("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _vs("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeUniform = _vs("HeUniform", 2.0, "fan_in", "uniform")
HeNormal = _vs("HeNormal", 2.0, "fan_in", "truncated_normal")
LecunUniform = _vs("LecunUniform", 1.0, "fan_in", "uniform")
LecunNormal = _vs("LecunNormal", 1.0, "fan_in", "truncated_normal")


class Orthogonal(Initializer):
    """An orthogonal matrix over (prod of all but the last axis, last axis), times gain."""

    def __init__(self, gain=1.0, seed=None):
        self.gain = _number("Orthogonal", "gain", gain)
        self.seed = seed

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}

    def _engine(self):
        return (_ORTHOGONAL, self.gain, 0.0, 0)


_CLASSES = {c.__name__: c for c in (Zeros, Ones, Constant, RandomUniform, RandomNormal, TruncatedNormal,
                                     VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, HeNormal,
                                     LecunUniform, LecunNormal, Orthogonal, Identity, STFT)}
_NAMES = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
          "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
          "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
          "he_uniform": HeUniform, "he_normal": HeNormal, "lecun_uniform": LecunUniform,
          "lecun_normal": LecunNormal, "orthogonal": Orthogonal, "uniform": RandomUniform,
          "normal": RandomNormal, "identity": Identity, "stft": STFT, "IdentityInitializer": Identity,
          "STFTInitializer": STFT, "OrthogonalInitializer": Orthogonal}

# lowercase aliases as Keras exports them
zeros, ones, constant = Zeros, Ones, Constant
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
variance_scaling, orthogonal = VarianceScaling, Orthogonal
glorot_uniform, glorot_normal, he_uniform, he_normal = GlorotUniform, GlorotNormal, HeUniform, HeNormal
lecun_uniform, lecun_normal = LecunUniform, LecunNormal
identity, stft = Identity, STFT
# Keras's compatibility aliases
IdentityInitializer, STFTInitializer, OrthogonalInitializer = Identity, STFT, Orthogonal


def serialize(initializer):
    """Keras's serialized form of an initializer."""
    return {"module": "keras.initializers", "class_name": type(initializer).__name__,
            "config": initializer.get_config(), "registered_name": None}


def deserialize(config, arg="initializer"):
    """An initializer from its serialized form."""
    if isinstance(config, dict):
        name = config.get("class_name")
        cls = _CLASSES.get(name) or _NAMES.get(name)
        if cls is None:
            raise ValueError(f"{arg}: unknown initializer {name!r}; known: {sorted(_CLASSES)}")
        try:
            return cls(**(config.get("config") or {}))
        except TypeError as e:
            raise ValueError(f"{arg}: {e}") from None
    return get(config, arg)


def get(identifier, arg="initializer"):
    """An initializer object from a name, a config dict or an object."""
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, dict):
        return deserialize(identifier, arg)
    if isinstance(identifier, str):
        cls = _NAMES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"{arg}: unknown initializer {identifier!r}; known names: {sorted(_NAMES)}")
        return cls()
    raise ValueError(f"{arg}: expected an initializer name or object, got {identifier!r}")


def _engine_specs(*inits):
    """The engine's `inits` entry of a layer spec: one tuple per role."""
    return [i._engine() for i in inits]
