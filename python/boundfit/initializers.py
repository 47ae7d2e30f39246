"""Keras 3 initializers (`keras.initializers`): names, classes, defaults.

Each object describes itself to the engine as (kind, a, b, mode); the values
are drawn in C from the model's seed (csrc/core/model.c), so the streams are
not Keras's, but the distributions and their parameters are.
"""

import math

import numpy as np

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
    """Base class; subclasses give `_engine()` and `get_config()`."""

    def _engine(self):
        raise NotImplementedError


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

    def get_config(self):
        return {"value": self.value.tolist() if isinstance(self.value, np.ndarray) else self.value}

    def _engine(self):
        return (_CONSTANT, 0.0 if isinstance(self.value, np.ndarray) else self.value, 0.0, 0)


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
                                     LecunUniform, LecunNormal, Orthogonal)}
_NAMES = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
          "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
          "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
          "he_uniform": HeUniform, "he_normal": HeNormal, "lecun_uniform": LecunUniform,
          "lecun_normal": LecunNormal, "orthogonal": Orthogonal, "uniform": RandomUniform,
          "normal": RandomNormal}

# lowercase aliases as Keras exports them
zeros, ones, constant = Zeros, Ones, Constant
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
variance_scaling, orthogonal = VarianceScaling, Orthogonal
glorot_uniform, glorot_normal, he_uniform, he_normal = GlorotUniform, GlorotNormal, HeUniform, HeNormal
lecun_uniform, lecun_normal = LecunUniform, LecunNormal


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
