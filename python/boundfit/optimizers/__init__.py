"""keras.optimizers: the optimizers with Keras 3 names, arguments and defaults
(base.py: what they share; classic.py, more.py: the classes) and get().
The engine applies the updates; every state buffer is in the memory plan."""

import inspect

from .. import schedules
from .base import Optimizer, serialize
from .classic import SGD, Adagrad, Adam, AdamW, Nadam, RMSprop
from .loss_scale import LossScaleOptimizer
from .more import Adadelta, Adafactor, Adamax, Ftrl, Lamb, Lion, Muon, ScheduleFreeAdamW
from ..refusal import refused

_ONE = ("the engine updates every trainable weight of a model with one optimizer. Freeze the layers that should "
        "not train (trainable=False), or fit in stages with different optimizers")
MultiOptimizer = refused("keras.optimizers.MultiOptimizer", _ONE)
OptimizerMap = refused("keras.optimizers.OptimizerMap", _ONE)

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam", "Adamax", "Adadelta", "Ftrl", "Lion",
           "Lamb", "Adafactor", "Muon", "ScheduleFreeAdamW", "LossScaleOptimizer", "get", "serialize", "deserialize", "schedules"]

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad, "nadam": Nadam,
            "adamax": Adamax, "adadelta": Adadelta, "ftrl": Ftrl, "lion": Lion, "adafactor": Adafactor,
            "muon": Muon, "schedulefreeadamw": ScheduleFreeAdamW}   # Keras's names (not Lamb's)


_BY_CLASS = {k.__name__: k for k in (SGD, Adam, AdamW, RMSprop, Adagrad, Nadam, Adamax, Adadelta, Ftrl, Lion, Lamb,
                                     Adafactor, Muon, ScheduleFreeAdamW, LossScaleOptimizer)}
# the base optimizer's, taken through **kwargs
_BASE_KWARGS = ("ema_momentum", "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps")


def deserialize(config, custom_objects=None):
    """Keras's `keras.optimizers.deserialize`: the optimizer of a serialize() dict (module / class_name / config),
    a schedule as learning_rate deserialized; config entries the class does not take are left out."""
    if isinstance(config, Optimizer):
        return config
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"config: expected an optimizer's serialize() dict with a class_name, got {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_CLASS.get(name) or _BY_NAME.get(name.lower())
    if not (isinstance(cls, type) and issubclass(cls, Optimizer)):
        raise ValueError(f"config: optimizer class_name {name!r} is not one boundfit has; choose one of "
                         f"{sorted(_BY_CLASS)} or pass it in custom_objects")
    cfg = dict(config.get("config") or {})
    if cls is LossScaleOptimizer:
        return cls(deserialize(cfg.pop("inner_optimizer", None) or {}, custom_objects), **cfg)
    if isinstance(cfg.get("learning_rate"), dict):
        cfg["learning_rate"] = schedules.deserialize(cfg["learning_rate"])
    params = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in cfg.items() if k in params or k in _BASE_KWARGS})


def get(optimizer):
    """An optimizer from a name ('adam', 'sgd', ...), a config dict (deserialize) or an Optimizer."""
    if isinstance(optimizer, Optimizer):
        return optimizer
    if isinstance(optimizer, dict):
        return deserialize(optimizer)
    if isinstance(optimizer, str) and optimizer.lower() in _BY_NAME:
        return _BY_NAME[optimizer.lower()]()
    raise ValueError(f"optimizer: unknown optimizer {optimizer!r}; choose one of {sorted(_BY_NAME)} "
                     "or a boundfit.optimizers object")
