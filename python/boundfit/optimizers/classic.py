"""Keras 3's first optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Nadam (their
updates run in the engine: csrc/cpu/optimizers.c, csrc/cuda/optimizers.cu)."""

from .base import ADAGRAD_ID, ADAM_ID, ADAMW_ID, NADAM_ID, RMSPROP_ID, SGD_ID, Optimizer, _nonneg


class SGD(Optimizer):
    """Keras 3's `SGD(learning_rate=0.01, momentum=0.0, nesterov=False, ...)`."""
    kind = SGD_ID

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, name="SGD", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        if not 0.0 <= float(momentum) <= 1.0:
            raise ValueError(f"momentum must be in [0, 1], got {momentum!r}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)


class Adam(Optimizer):
    """Keras 3's `Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, ...)`."""
    kind = ADAM_ID

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 name="adam", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.amsgrad = bool(amsgrad)


class AdamW(Adam):
    """Keras 3's `AdamW`: Adam with decoupled weight decay (weight_decay=0.004)."""
    kind = ADAMW_ID

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 name="adamw", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: weight_decay=None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, use_ema, name, **kwargs)


class RMSprop(Optimizer):
    """Keras 3's `RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, ...)`."""
    kind = RMSPROP_ID

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 name="rmsprop", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.rho, self.momentum, self.epsilon = float(rho), float(momentum), float(epsilon)
        self.centered = bool(centered)


class Adagrad(Optimizer):
    """Keras 3's `Adagrad(learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, ...)`."""
    kind = ADAGRAD_ID

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False, name="adagrad", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.initial_accumulator_value = _nonneg(initial_accumulator_value, "initial_accumulator_value")
        self.epsilon = float(epsilon)


class Nadam(Optimizer):
    """Keras 3's `Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, ...)`."""
    kind = NADAM_ID

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False, name="nadam", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
