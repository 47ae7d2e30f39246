"""keras.optimizers: the optimizers with Keras 3 names, arguments and defaults
(base.py: what they share; classic.py, more.py: the classes) and get().
The engine applies the updates; every state buffer is in the memory plan."""

from .. import schedules
from .base import Optimizer
from .classic import SGD, Adagrad, Adam, AdamW, Nadam, RMSprop
from .loss_scale import LossScaleOptimizer
from .more import Adadelta, Adafactor, Adamax, Ftrl, Lamb, Lion, Muon

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam", "Adamax", "Adadelta", "Ftrl", "Lion",
           "Lamb", "Adafactor", "Muon", "LossScaleOptimizer", "get", "schedules"]

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad, "nadam": Nadam,
            "adamax": Adamax, "adadelta": Adadelta, "ftrl": Ftrl, "lion": Lion}   # Keras's names (not Lamb's)


def get(optimizer):
    """An optimizer from a name ('adam', 'sgd', ...), a config dict or an Optimizer."""
    if isinstance(optimizer, Optimizer):
        return optimizer
    if isinstance(optimizer, str) and optimizer.lower() in _BY_NAME:
        return _BY_NAME[optimizer.lower()]()
    if isinstance(optimizer, str) and optimizer.lower() in ("adafactor", "muon"):
        return {"adafactor": Adafactor, "muon": Muon}[optimizer.lower()]()   # raises, saying what to use
    raise ValueError(f"optimizer: unknown optimizer {optimizer!r}; choose one of {sorted(_BY_NAME)} "
                     "or a boundfit.optimizers object")
