"""Keras 3 weight regularizers (`keras.regularizers`): L1, L2, L1L2 and their
names. The engine adds the penalty l1*sum|w| + l2*sum w^2 of every
regularized weight to the loss it reports (as Keras adds the layers' losses
to the batch loss) and its gradient to the weight's gradient
(csrc/cpu/regularize.c, csrc/cuda/regularize.cu). OrthogonalRegularizer (a
Gram matrix of a whole kernel) is refused by name."""

import math

import numpy as np

from .config_object import ConfigObject


def _factor(cls, arg, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{cls}: {arg} must be a finite number >= 0, got {v!r}")
    return float(v)


class Regularizer(ConfigObject):
    """Base class of weight and activity regularizers: `__call__(x)` returns the penalty added to the loss."""
    def _engine(self):
        """(l1, l2) for the engine."""
        raise NotImplementedError

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        l1, l2 = self._engine()
        return l1 * np.abs(x).sum() + l2 * np.square(x).sum()


class L1(Regularizer):
    """Keras 3's `L1(l1=0.01)`: l1 * sum(|w|) added to the loss."""
    def __init__(self, l1=0.01):
        self.l1 = _factor("L1", "l1", 0.01 if l1 is None else l1)

    def get_config(self):
        return {"l1": self.l1}

    def _engine(self):
        return (self.l1, 0.0)


class L2(Regularizer):
    """Keras 3's `L2(l2=0.01)`: l2 * sum(w ** 2) added to the loss."""
    def __init__(self, l2=0.01):
        self.l2 = _factor("L2", "l2", 0.01 if l2 is None else l2)

    def get_config(self):
        return {"l2": self.l2}

    def _engine(self):
        return (0.0, self.l2)


class L1L2(Regularizer):
    """Keras 3's L1L2: both factors default to 0."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor("L1L2", "l1", 0.0 if l1 is None else l1)
        self.l2 = _factor("L1L2", "l2", 0.0 if l2 is None else l2)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}

    def _engine(self):
        return (self.l1, self.l2)


class OrthogonalRegularizer:
    """Refused: Keras's OrthogonalRegularizer(factor, mode) adds the mean |cosine| between a kernel's rows (or
    columns), a Gram matrix of the whole weight, to the loss; boundfit's engine regularizes weights elementwise
    (l1 * |w| + l2 * w^2, csrc/cpu/regularize.c) and has no such penalty. Use L2 (or an Orthogonal
    kernel_initializer), or train the model in Keras."""
    _boundfit_refused = True   # tools/keras_coverage.py lists it as refused

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("keras.regularizers.OrthogonalRegularizer is not supported by boundfit: its "
                                  "engine's weight penalties are elementwise (L1, L2, L1L2), not the Gram matrix of "
                                  "a kernel's normalized rows. Use regularizers.L2 (or kernel_initializer="
                                  "'orthogonal'), or train the model in Keras")


l1, l2, l1_l2 = L1, L2, L1L2
orthogonal_regularizer = OrthogonalRegularizer
_CLASSES = {"L1": L1, "L2": L2, "L1L2": L1L2}


def serialize(regularizer):
    """Keras's serialized form of a regularizer."""
    if regularizer is None:
        return None
    if type(regularizer).__name__ not in _CLASSES:   # a user's subclass: by its name, as Keras writes it
        return {"module": None, "class_name": type(regularizer).__name__, "config": regularizer.get_config(),
                "registered_name": type(regularizer).__name__}
    return {"module": "keras.regularizers", "class_name": type(regularizer).__name__,
            "config": regularizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A regularizer from its serialized form (Keras's dict); custom_objects names a user's classes."""
    if isinstance(config, dict) and custom_objects and config.get("class_name") in custom_objects:
        return custom_objects[config["class_name"]].from_config(config.get("config") or {})
    return get(config)


def get(identifier, arg="regularizer"):
    """None, a regularizer object, a Keras config dict, or the names 'l1', 'l2'
    (factor 0.01 as Keras) and 'l1_l2' (0.01 each, Keras 2's l1_l2 defaults;
    Keras 3 has no such name)."""
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Regularizer):
        return identifier()
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if identifier.get("class_name") == "OrthogonalRegularizer":
            OrthogonalRegularizer()   # raises, saying what to use
        if cls is None:
            raise ValueError(f"{arg}: unknown regularizer {identifier.get('class_name')!r}; known: {sorted(_CLASSES)} "
                             "(a Regularizer subclass of your own: pass it to load_model in custom_objects)")
        try:
            return cls(**(identifier.get("config") or {}))
        except TypeError as e:
            raise ValueError(f"{arg}: {e}") from None
    if isinstance(identifier, str):
        name = identifier.lower()
        if name == "l1":
            return L1()
        if name == "l2":
            return L2()
        if name == "l1_l2" or name == "l1l2":
            return L1L2(l1=0.01, l2=0.01)
        if name in ("orthogonal_regularizer", "orthogonalregularizer"):
            OrthogonalRegularizer()   # raises, saying what to use
        raise ValueError(f"{arg}: unknown regularizer {identifier!r}; known names: 'l1', 'l2', 'l1_l2'")
    raise ValueError(f"{arg}: expected a regularizer name or object, got {identifier!r}")


def _engine_specs(*regs):
    return [None if r is None else r._engine() for r in regs]
