"""keras.mixed_precision.LossScaleOptimizer (also keras.optimizers'): dynamic loss scaling for mixed_float16, as
Keras 3 does it. The engine multiplies the losses' gradient by the scale, skips a step whose gradients are not
finite (the weights and the inner optimizer's state unchanged) and halves the scale, doubles it after
dynamic_growth_steps finite steps in a row, and divides the gradients by it before the inner optimizer's update
(csrc/core/loss_scale.c). compile() wraps the optimizer in one when the model's policy is mixed_float16."""

import inspect
import math

from .. import schedules
from .base import Optimizer, serialize

# Keras's base-optimizer arguments a LossScaleOptimizer refuses unless at their defaults (they belong to the
# inner optimizer)
_BASE_DEFAULTS = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                  "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None, "loss_scale_factor": None,
                  "gradient_accumulation_steps": None}


class LossScaleOptimizer(Optimizer):
    """Keras 3's `LossScaleOptimizer(inner_optimizer, initial_scale=2.0**15, dynamic_growth_steps=2000)`: the
    inner optimizer's updates on gradients of the loss times a dynamic scale (halved and the step skipped on a
    non-finite gradient, doubled after dynamic_growth_steps finite steps)."""

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000, name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, simply set "
                             "`loss_scale_factor` directly on the `inner_optimizer`.")
        for arg, default in _BASE_DEFAULTS.items():
            if arg in kwargs and kwargs.pop(arg) != default:
                raise ValueError(f"LossScaleOptimizer does not support `{arg}`. Instead, set `{arg}` on the "
                                 "`inner_optimizer`.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: `{'`, `'.join(kwargs)}`.")
        if not isinstance(inner_optimizer, Optimizer) or isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError(f"LossScaleOptimizer: inner_optimizer must be a boundfit.optimizers optimizer (not "
                            f"a LossScaleOptimizer), got {inner_optimizer!r}")
        try:
            scale = float(initial_scale)
        except (TypeError, ValueError):
            scale = float("nan")
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError(f"LossScaleOptimizer: initial_scale must be a finite number > 0, got {initial_scale!r}")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(dynamic_growth_steps, int) or \
                dynamic_growth_steps < 1:
            raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be an int >= 1, got "
                             f"{dynamic_growth_steps!r}")
        self.__dict__["inner_optimizer"] = inner_optimizer
        self.name = name or "loss_scale_optimizer"
        self.initial_scale, self.dynamic_growth_steps = initial_scale, dynamic_growth_steps
        self.kind = inner_optimizer.kind

    # the inner optimizer's rate, schedule and update count (Keras's properties)
    learning_rate = property(lambda self: self.inner_optimizer.learning_rate,
                             lambda self, v: setattr(self.inner_optimizer, "learning_rate", v),
                             doc="The inner optimizer's learning rate.")
    _schedule = property(lambda self: self.inner_optimizer._schedule, lambda self, v: None)
    iterations = property(lambda self: self.inner_optimizer.iterations,
                          doc="The inner optimizer's updates (a skipped step is none).")

    @property
    def _model(self):
        return self.inner_optimizer._model

    @_model.setter
    def _model(self, model):
        self.inner_optimizer._model = model

    def _track_lr(self, lr):
        self.inner_optimizer._track_lr(lr)

    def finalize_variable_values(self, var_list=None):
        """The inner optimizer's (Keras's)."""
        self.inner_optimizer.finalize_variable_values(var_list)

    def _state(self):
        m = self._model
        return m._engine.loss_scale() if m is not None and m._engine is not None else (float(self.initial_scale), 0)

    @property
    def dynamic_scale(self):
        """The loss scale now (Keras's dynamic_scale variable)."""
        return self._state()[0]

    @property
    def step_counter(self):
        """Finite steps since the scale last changed (Keras's step_counter variable)."""
        return self._state()[1]

    def scale_loss(self, loss):
        """loss times the current scale (Keras's scale_loss)."""
        return loss * self.dynamic_scale

    def _engine_args(self, model=None):
        return dict(self.inner_optimizer._engine_args(model), loss_scale=float(self.initial_scale),
                    growth_steps=int(self.dynamic_growth_steps))

    def get_config(self):
        """Keras's config: name, the inner optimizer serialized, initial_scale, dynamic_growth_steps."""
        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The optimizer of a get_config() (its inner optimizer deserialized: a boundfit optimizer class by its
        Keras name, with the arguments it takes)."""
        config = dict(config)
        inner = config.pop("inner_optimizer", None)
        if isinstance(inner, dict):
            kinds = {k.__name__: k for k in _subclasses(Optimizer)}
            kind = kinds.get(inner.get("class_name"))
            if kind is None or kind is cls:
                raise ValueError(f"LossScaleOptimizer: inner_optimizer {inner.get('class_name')!r} is not one "
                                 "boundfit has")
            args = dict(inner.get("config") or {})
            if isinstance(args.get("learning_rate"), dict):
                args["learning_rate"] = schedules.deserialize(args["learning_rate"])
            known = inspect.signature(kind.__init__).parameters
            inner = kind(**{k: v for k, v in args.items() if k in known})
        return cls(inner, **config)


def _subclasses(k):
    for s in k.__subclasses__():
        yield s
        yield from _subclasses(s)
