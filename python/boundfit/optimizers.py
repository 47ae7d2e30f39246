"""Optimizers with Keras 3 names and defaults; the engine applies the updates.
learning_rate may be a float, a keras.optimizers.schedules object or a callable
lr(iterations); with a schedule the training loop sets the engine's rate before
every step (optimizer.iterations = completed updates, as Keras). Setting
optimizer.learning_rate changes the rate of a compiled model's next update."""

from . import schedules

SGD_ID, ADAM_ID, RMSPROP_ID = 1, 2, 3


class Optimizer:
    kind = None

    def __init__(self, learning_rate):
        self._schedule = None
        if isinstance(learning_rate, schedules.LearningRateSchedule) or callable(learning_rate):
            self._schedule = learning_rate
            learning_rate = float(schedules.step_fn(learning_rate)(0))
        lr = float(learning_rate)
        if not lr >= 0:
            raise ValueError(f"learning_rate must be >= 0, got {learning_rate!r}")
        self.learning_rate = lr
        self._model = None

    @property
    def learning_rate(self):
        """The rate of the next update (with a schedule: as of the last step or epoch end)."""
        return self.__dict__["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, value):
        # kept in __dict__ so get_config (vars) still lists it; a compiled model's engine follows at once
        if getattr(self, "_schedule", None) is not None and "learning_rate" in self.__dict__:
            raise TypeError("This optimizer was created with a learning rate schedule (or callable) as its "
                            "learning_rate argument, hence its learning rate is not settable.")
        lr = float(value)
        if not 0 <= lr < float("inf"):
            raise ValueError(f"learning_rate must be a finite number >= 0, got {value!r}")
        m = getattr(self, "_model", None)
        if m is not None and m.optimizer is self and m._engine is not None:
            try:
                m._engine.set_learning_rate(lr)
            except RuntimeError:   # the engine is not compiled yet: compile() passes the stored rate
                pass
        self.__dict__["learning_rate"] = lr

    def _track_lr(self, lr):
        """The rate a schedule gave the engine (no push back)."""
        self.__dict__["learning_rate"] = float(lr)

    @property
    def iterations(self):
        """Updates applied so far (Keras optimizer.iterations)."""
        return self._model._engine.optimizer_state()[0] if self._model is not None else 0

    def _engine_args(self):
        return dict(optimizer=self.kind, learning_rate=self.learning_rate, beta_1=getattr(self, "beta_1", 0.9),
                    beta_2=getattr(self, "beta_2", 0.999), epsilon=getattr(self, "epsilon", 1e-7),
                    momentum=getattr(self, "momentum", 0.0), nesterov=getattr(self, "nesterov", False),
                    rho=getattr(self, "rho", 0.9))

    def get_config(self):
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


class SGD(Optimizer):
    kind = SGD_ID

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name=None):
        super().__init__(learning_rate)
        if not 0.0 <= float(momentum) <= 1.0:
            raise ValueError(f"momentum must be in [0, 1], got {momentum!r}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)


class Adam(Optimizer):
    kind = ADAM_ID

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None):
        super().__init__(learning_rate)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)


class RMSprop(Optimizer):
    kind = RMSPROP_ID

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, name=None):
        super().__init__(learning_rate)
        self.rho, self.momentum, self.epsilon = float(rho), float(momentum), float(epsilon)


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop}


def get(optimizer):
    if isinstance(optimizer, Optimizer):
        return optimizer
    if isinstance(optimizer, str) and optimizer.lower() in _BY_NAME:
        return _BY_NAME[optimizer.lower()]()
    raise ValueError(f"optimizer: unknown optimizer {optimizer!r}; choose one of {sorted(_BY_NAME)} "
                     "or a boundfit.optimizers object")
