"""boundfit.losses: Keras 3's losses by their names. core.py holds the Loss
base class, the losses the engine computes (MeanSquaredError, the
cross-entropies, ...) and CustomLoss (a loss traced into the training
graph); composed.py the Keras losses written in keras.ops (KLDivergence,
Hinge, the focal cross-entropies, Dice, ...), which train as traced losses.
get() turns a name, class, object or function into the Loss compile() runs;
serialize / deserialize are Keras's. Circle is refused by name."""

from .composed import (CTC, KLD, MAPE, MSLE, BinaryFocalCrossentropy, CategoricalFocalCrossentropy,  # noqa: F401
                       CategoricalGeneralizedCrossEntropy, CategoricalHinge, ComposedLoss, CosineSimilarity, Dice,
                       Hinge, KLDivergence, MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Poisson,
                       SquaredHinge, Tversky, binary_focal_crossentropy, categorical_focal_crossentropy,
                       categorical_generalized_cross_entropy, categorical_hinge, cosine_similarity, dice, hinge,
                       kl_divergence, kld, mape, mean_absolute_percentage_error, mean_squared_logarithmic_error,
                       msle, poisson, squared_hinge, tversky, ctc, binary_crossentropy, categorical_crossentropy, mae,
                       mean_absolute_error, mean_squared_error, mse, huber, log_cosh, sparse_categorical_crossentropy)
from .composed import CLASSES as _COMPOSED, FUNCTIONS as _FUNCTIONS, REFUSED as _REFUSED
from .core import (ADDED, BCE, CCE, HUBER, LOGCOSH, MAE, MEAN, MSE, SCCE, BinaryCrossentropy,  # noqa: F401
                   CategoricalCrossentropy, CustomLoss, Huber, LogCosh, Loss, MeanAbsoluteError, MeanSquaredError,
                   SparseCategoricalCrossentropy, _AddedMean, _NoLoss, _smoothing, _TracedMean)
from ..session import snake_case

_BY_NAME = {
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError, "MSE": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
    "huber": Huber, "huber_loss": Huber, "log_cosh": LogCosh, "logcosh": LogCosh,
    "binary_crossentropy": BinaryCrossentropy, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "kld": KLDivergence, "KLD": KLDivergence, "kullback_leibler_divergence": KLDivergence,
    "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
    "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
}
for _c in (MeanSquaredError, MeanAbsoluteError, Huber, LogCosh, BinaryCrossentropy, CategoricalCrossentropy,
           SparseCategoricalCrossentropy) + _COMPOSED:
    _BY_NAME[_c.__name__] = _c
for _c in _COMPOSED:                     # each composed loss by its function's name too
    _BY_NAME[_c.fn.__name__] = _c


def __getattr__(name):
    """Keras's losses boundfit cannot compute, refused by name with what to use instead."""
    if name in _REFUSED:
        raise AttributeError(f"boundfit.losses.{name} is not supported: {_REFUSED[name]}")
    raise AttributeError(f"module 'boundfit.losses' has no attribute {name!r}")


def builtin_function(name):
    """The loss function Keras writes by this name in a saved model (kl_divergence, hinge, ...), or None."""
    cls = _BY_NAME.get(name) if isinstance(name, str) else None
    if cls is None:
        return None
    return cls.fn if isinstance(cls, type) and issubclass(cls, ComposedLoss) else globals().get(name)


def _custom_call(loss):
    """A Loss subclass's own call(y_true, y_pred), or None (boundfit's built-in losses have none)."""
    call = getattr(type(loss), "call", None)
    return None if call is None else loss.call


def get(loss):
    """A Loss object from a name, a Loss, or one of this module's functions; a
    custom loss (a function of (y_true, y_pred), a Loss subclass with call())
    as a CustomLoss, as are Keras's losses written in keras.ops (composed.py)."""
    if isinstance(loss, CustomLoss):
        return loss
    if isinstance(loss, dict):
        loss = deserialize(loss)
    if isinstance(loss, str) and loss in _REFUSED:
        raise ValueError(f"loss {loss!r} is not supported: {_REFUSED[loss]}")
    if isinstance(loss, str) and (loss in _BY_NAME or loss.lower() in _BY_NAME):
        loss = _BY_NAME.get(loss, _BY_NAME.get(loss.lower()))
    if isinstance(loss, type) and issubclass(loss, Loss) and loss.kind is None:
        loss = loss()
    if isinstance(loss, Loss) and loss.kind is None:
        call = _custom_call(loss)
        if call is None:
            raise ValueError(f"loss: {type(loss).__name__} subclasses Loss but defines no call(self, y_true, y_pred)")
        return CustomLoss(call, loss.name or snake_case(type(loss).__name__), loss)
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, type) and issubclass(loss, Loss):
        return loss()
    if callable(loss) and hasattr(loss, "_loss_class"):
        return loss._loss_class()
    if callable(loss) and not isinstance(loss, type):
        return CustomLoss(loss, getattr(loss, "__name__", type(loss).__name__))
    raise ValueError(f"loss: unknown loss {loss!r}; choose one of {sorted(k for k in _BY_NAME if k.islower())} "
                     "or a boundfit.losses object")


def serialize(loss):
    """Keras's serialized form of a loss: a name stays a name; a function by its name; a Loss object as
    {'module', 'class_name', 'config', 'registered_name'}."""
    if isinstance(loss, str):
        return loss
    if callable(loss) and not isinstance(loss, (Loss, type)):
        builtin = hasattr(loss, "_loss_class") or getattr(loss, "_keras_builtin", False)
        return {"module": "builtins" if builtin else getattr(loss, "__module__", None) or "builtins",
                "class_name": "function", "config": getattr(loss, "__name__", type(loss).__name__),
                "registered_name": "function"}
    obj = get(loss)
    if isinstance(obj, CustomLoss):
        return obj.keras_config()
    return {"module": "keras.losses", "class_name": type(obj).__name__,
            "config": {"name": obj.name, "reduction": obj.reduction, **obj.get_config()}, "registered_name": None}


def deserialize(config, custom_objects=None):
    """A loss from serialize()'s form (or Keras's): a Loss object, or a function given by name (Keras's own, or
    one of custom_objects)."""
    if isinstance(config, str):
        found = (custom_objects or {}).get(config) or builtin_function(config)
        return found if found is not None else get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"losses.deserialize: cannot interpret {config!r}")
    name, cfg = config["class_name"], config.get("config")
    if name == "function":
        found = (custom_objects or {}).get(cfg) or builtin_function(cfg)
        if found is None:
            raise ValueError(f"losses.deserialize: unknown loss function {cfg!r}; pass it in custom_objects")
        return found
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if name in _REFUSED:
        raise ValueError(f"loss {name!r} is not supported: {_REFUSED[name]}")
    if not (isinstance(cls, type) and issubclass(cls, Loss)):
        raise ValueError(f"losses.deserialize: unknown loss class {name!r}")
    return cls.from_config(dict(cfg or {})) if hasattr(cls, "from_config") else cls(**dict(cfg or {}))
