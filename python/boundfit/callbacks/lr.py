"""ReduceLROnPlateau and LearningRateScheduler (Keras 3 arguments). They set
the rate the engine uses from the next step on (optimizer state is kept)."""

import warnings

import numpy as np

from .base import Callback
from .early_stopping import resolve_mode


def get_lr(model):
    """The rate of the next update, as the engine will use it (the engine the
    optimizer drives: a model's training graph, with a custom loss)."""
    model = getattr(model.optimizer, "_model", None) or model
    if model._engine is not None:
        return model._engine.learning_rate()
    return float(model.optimizer.learning_rate)


def set_lr(model, lr, who):
    """optimizer.learning_rate = lr (the engine follows); a scheduled optimizer refuses."""
    if getattr(model.optimizer, "_schedule", None) is not None:
        raise TypeError(f"{who}: the optimizer was created with a learning rate schedule; its rate cannot be set")
    try:
        model.optimizer.learning_rate = lr
    except ValueError as e:
        raise ValueError(f"{who}: {e}") from None


class ReduceLROnPlateau(Callback):
    """Keras 3's `ReduceLROnPlateau(monitor='val_loss', factor=0.1, patience=10, ...)`: lowers the learning rate when
    the monitored value stops improving."""
    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, float(factor), patience, verbose
        self.mode = resolve_mode(mode, monitor, "ReduceLROnPlateau")
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, float(min_lr)
        self._reset()

    def _reset(self):
        self.best = np.inf if self.mode == "min" else -np.inf
        self.cooldown_counter, self.wait = 0, 0

    def _improved(self, cur):
        if self.mode == "min":
            return cur < self.best - self.min_delta
        return cur > self.best + self.min_delta

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = get_lr(self.model)
        cur = logs.get(self.monitor)
        if cur is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs)}.", stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(cur):
            self.best, self.wait = cur, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = get_lr(self.model)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    set_lr(self.model, new, "ReduceLROnPlateau")
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0


class LearningRateScheduler(Callback):
    """schedule(epoch, lr) -> lr (or schedule(epoch)), applied at the start of each epoch."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        try:
            lr = self.schedule(epoch, get_lr(self.model))
        except TypeError:  # a one-argument schedule, as Keras allows
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, int, np.floating, np.integer)):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: {lr!r}")
        set_lr(self.model, lr, "LearningRateScheduler")
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {float(lr)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = get_lr(self.model)
