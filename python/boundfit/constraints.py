"""Keras 3 weight constraints (`keras.constraints`): MaxNorm, NonNeg,
UnitNorm, MinMaxNorm and their names, applied by the engine to the weight
after each optimizer update as Keras does (csrc/cpu/regularize.c,
csrc/cuda/regularize.cu). Norms are over `axis` (an axis or a run of
adjacent axes of the weight, as Keras's default axis=0)."""

import math

from .config_object import ConfigObject

_MAX_NORM, _NON_NEG, _UNIT_NORM, _MIN_MAX_NORM = 1, 2, 3, 4   # bf_constraint_kind


def _number(cls, arg, v, low=0.0):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < low:
        raise ValueError(f"{cls}: {arg} must be a finite number >= {low}, got {v!r}")
    return v


def _axis(cls, axis):
    axes = [axis] if isinstance(axis, int) and not isinstance(axis, bool) else list(axis) \
        if isinstance(axis, (list, tuple)) and axis else None
    if axes is None or not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
        raise ValueError(f"{cls}: axis must be an int or a list of ints, got {axis!r}")
    return axis


class Constraint(ConfigObject):
    """Base class of weight constraints: `__call__(w)` returns the constrained weights, applied after every update."""
    def _engine(self, rank):
        raise NotImplementedError

    def _norm_axes(self, rank):
        axes = sorted({a + rank if a < 0 else a for a in ([self.axis] if isinstance(self.axis, int) else self.axis)})
        if axes[0] < 0 or axes[-1] >= rank or axes != list(range(axes[0], axes[-1] + 1)):
            raise ValueError(f"{type(self).__name__}: axis={self.axis!r} must name adjacent axes of a weight of "
                             f"rank {rank}")
        return axes[0], axes[-1]


class MaxNorm(Constraint):
    """Keras 3's `MaxNorm(max_value=2, axis=0)`: rescales weights whose norm along `axis` exceeds max_value."""
    def __init__(self, max_value=2, axis=0):
        self.max_value = _number("MaxNorm", "max_value", max_value)
        self.axis = _axis("MaxNorm", axis)

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}

    def _engine(self, rank):
        return (_MAX_NORM, 0.0, float(self.max_value), 1.0) + self._norm_axes(rank)


class NonNeg(Constraint):
    """Keras 3's `NonNeg`: negative weights are set to zero."""
    def _engine(self, rank):
        return (_NON_NEG, 0.0, 0.0, 0.0, 0, 0)


class UnitNorm(Constraint):
    """Keras 3's `UnitNorm(axis=0)`: weights rescaled to unit norm along `axis`."""
    def __init__(self, axis=0):
        self.axis = _axis("UnitNorm", axis)

    def get_config(self):
        return {"axis": self.axis}

    def _engine(self, rank):
        return (_UNIT_NORM, 0.0, 1.0, 1.0) + self._norm_axes(rank)


class MinMaxNorm(Constraint):
    """Keras 3's `MinMaxNorm(min_value=0.0, max_value=1.0, rate=1.0, axis=0)`: norms kept within [min_value,
    max_value]."""
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = _number("MinMaxNorm", "min_value", min_value)
        self.max_value = _number("MinMaxNorm", "max_value", max_value)
        if self.max_value < self.min_value:
            raise ValueError(f"MinMaxNorm: max_value ({max_value}) must be >= min_value ({min_value})")
        self.rate = _number("MinMaxNorm", "rate", rate)
        if self.rate > 1:
            raise ValueError(f"MinMaxNorm: rate must be in [0, 1], got {rate!r}")
        self.axis = _axis("MinMaxNorm", axis)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}

    def _engine(self, rank):
        return (_MIN_MAX_NORM, float(self.min_value), float(self.max_value), float(self.rate)) + self._norm_axes(rank)


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_CLASSES = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm}
_NAMES = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}


def serialize(constraint):
    """Keras's serialized form of a constraint."""
    if constraint is None:
        return None
    return {"module": "keras.constraints", "class_name": type(constraint).__name__,
            "config": constraint.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A constraint from its serialized form (Keras's dict); custom_objects names a user's classes."""
    if isinstance(config, dict) and custom_objects and config.get("class_name") in custom_objects:
        return custom_objects[config["class_name"]].from_config(config.get("config") or {})
    return get(config)


def get(identifier, arg="constraint"):
    """A constraint from a name, a config dict, a Constraint or None."""
    if identifier is None or isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        return identifier()
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"{arg}: unknown constraint {identifier.get('class_name')!r}; known: {sorted(_CLASSES)}")
        cfg = dict(identifier.get("config") or {})
        if isinstance(cfg.get("axis"), list):
            cfg["axis"] = list(cfg["axis"])
        try:
            return cls(**cfg)
        except TypeError as e:
            raise ValueError(f"{arg}: {e}") from None
    if isinstance(identifier, str):
        cls = _NAMES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"{arg}: unknown constraint {identifier!r}; known names: {sorted(_NAMES)}")
        return cls()
    raise ValueError(f"{arg}: expected a constraint name or object, got {identifier!r}")


def _engine_specs(entries):
    """[(constraint, rank, argument)] -> the engine's `cons` entry of a layer spec."""
    out = []
    for c, rank, arg in entries:
        try:
            out.append(None if c is None else c._engine(rank))
        except ValueError as e:
            raise ValueError(f"{arg}: {e}") from None
    return out
