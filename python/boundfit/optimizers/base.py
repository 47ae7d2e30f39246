"""Optimizers with Keras 3 names, arguments and defaults; the engine applies
the updates (csrc/cpu/optimizers.c, csrc/cuda/optimizers.cu), including
Keras's gradient clipping (clipnorm per tensor, global_clipnorm, clipvalue)
and decoupled weight decay. Every state buffer is in the memory plan.
learning_rate may be a float, a keras.optimizers.schedules object or a callable
lr(iterations): closed-form schedules are computed by the engine per update,
others set the engine's rate before every step (optimizer.iterations =
completed updates, as Keras). Setting optimizer.learning_rate changes the rate
of a compiled model's next update. use_ema (ema_momentum, ema_overwrite_frequency)
keeps Keras's moving average of the trainable weights as one more state slot
(the last), updated by the engine after each update; fit ends with the weights
set to it (finalize_variable_values), as Keras. gradient_accumulation_steps=N
(Keras's) updates every N-th step with the mean of the N steps' gradients (one more state slot, before the
moving average); loss_scale_factor multiplies the losses' gradient and divides the gradients by it before the
update, as Keras."""

from .. import schedules

SGD_ID, ADAM_ID, RMSPROP_ID, ADAMW_ID, ADAGRAD_ID, NADAM_ID = 1, 2, 3, 4, 5, 6
ADAMAX_ID, ADADELTA_ID, FTRL_ID, LION_ID, LAMB_ID, ADAFACTOR_ID, MUON_ID = 7, 8, 9, 10, 11, 12, 13
CLIP_NONE, CLIP_NORM, CLIP_GLOBAL_NORM, CLIP_VALUE = 0, 1, 2, 3
EMA_SWAP, EMA_TO_WEIGHTS, EMA_FROM_WEIGHTS = 0, 1, 2   # the engine's ema(op) (csrc/core/model.h bf_ema_op)


def _nonneg(v, what):
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {v!r}") from None
    if not f >= 0:
        raise ValueError(f"{what} must be >= 0, got {v!r}")
    return f


class Optimizer:
    """Base class of the optimizers: the update itself runs in the engine, every state buffer in the plan."""
    kind = None

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, name=None, **kwargs):
        ema_momentum = kwargs.pop("ema_momentum", 0.99)
        ema_overwrite_frequency = kwargs.pop("ema_overwrite_frequency", None)
        loss_scale_factor = kwargs.pop("loss_scale_factor", None)
        gradient_accumulation_steps = kwargs.pop("gradient_accumulation_steps", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown arguments {sorted(kwargs)}")
        if gradient_accumulation_steps:   # Keras's check and message (None and 0: none)
            if isinstance(gradient_accumulation_steps, bool) or not isinstance(gradient_accumulation_steps, int) \
                    or not gradient_accumulation_steps >= 2:
                raise ValueError("`gradient_accumulation_steps` must be an integer >= 2. Received: "
                                 f"gradient_accumulation_steps={gradient_accumulation_steps}")
        if loss_scale_factor is not None:
            f = _nonneg(loss_scale_factor, "loss_scale_factor")
            if not 0 < f < float("inf"):
                raise ValueError(f"loss_scale_factor must be a finite number > 0 or None, got {loss_scale_factor!r}")
        self.loss_scale_factor, self.gradient_accumulation_steps = loss_scale_factor, gradient_accumulation_steps or None
        if use_ema:   # Keras's checks and messages
            if not 0 <= float(ema_momentum) <= 1:
                raise ValueError(f"`ema_momentum` must be in the range [0, 1]. Received: ema_momentum={ema_momentum}")
            if ema_overwrite_frequency and (not isinstance(ema_overwrite_frequency, int) or
                                            isinstance(ema_overwrite_frequency, bool) or ema_overwrite_frequency < 1):
                raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or None. Received: "
                                 f"ema_overwrite_frequency={ema_overwrite_frequency}")
        self.use_ema, self.ema_momentum = bool(use_ema), float(ema_momentum)
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self._schedule = None
        if isinstance(learning_rate, schedules.LearningRateSchedule) or callable(learning_rate):
            self._schedule = learning_rate
            learning_rate = float(schedules.step_fn(learning_rate)(0))
        self.learning_rate = _nonneg(learning_rate, "learning_rate")
        self.weight_decay = None if weight_decay is None else _nonneg(weight_decay, "weight_decay")
        given = [n for n, v in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                                ("global_clipnorm", global_clipnorm)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                             f"Received: {', '.join(given)}")
        self.clipnorm = None if clipnorm is None else _nonneg(clipnorm, "clipnorm")
        self.clipvalue = None if clipvalue is None else _nonneg(clipvalue, "clipvalue")
        self.global_clipnorm = None if global_clipnorm is None else _nonneg(global_clipnorm, "global_clipnorm")
        self.name = name or type(self).__name__.lower()
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
        if m is not None and getattr(m.optimizer, "inner_optimizer", m.optimizer) is self and m._engine is not None:
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
        """Updates applied so far (Keras optimizer.iterations: with gradient_accumulation_steps, the steps // it)."""
        return self._model._engine.optimizer_state()[0] if self._model is not None else 0

    def _clip(self):
        # Keras: a value of 0 (or None) means no clipping
        if self.clipnorm:
            return CLIP_NORM, self.clipnorm
        if self.global_clipnorm:
            return CLIP_GLOBAL_NORM, self.global_clipnorm
        if self.clipvalue:
            return CLIP_VALUE, self.clipvalue
        return CLIP_NONE, 0.0

    def _engine_args(self, model=None):
        clip, clip_value = self._clip()
        args = dict(optimizer=self.kind, learning_rate=self.learning_rate, beta_1=getattr(self, "beta_1", 0.9),
                    beta_2=getattr(self, "beta_2", 0.999), epsilon=getattr(self, "epsilon", 1e-7),
                    momentum=getattr(self, "momentum", 0.0), nesterov=getattr(self, "nesterov", False),
                    rho=getattr(self, "rho", 0.9), amsgrad=getattr(self, "amsgrad", False),
                    centered=getattr(self, "centered", False), weight_decay=self.weight_decay or 0.0,
                    initial_accumulator_value=getattr(self, "initial_accumulator_value", 0.0),
                    clip=clip, clip_value=clip_value, use_ema=self.use_ema, ema_momentum=self.ema_momentum,
                    ema_overwrite_frequency=int(self.ema_overwrite_frequency or 0) if self.use_ema else 0,
                    gradient_accumulation_steps=int(self.gradient_accumulation_steps or 0),
                    loss_scale_factor=float(self.loss_scale_factor or 0.0))
        args.update(self._extra_engine_args(model if model is not None else self._model))
        return args

    def _extra_engine_args(self, model):
        return {}

    def finalize_variable_values(self, var_list=None):
        """Keras's: with use_ema, the trainable weights take their moving average (fit does it at its end). var_list
        is accepted for Keras's signature; the compiled model's trainable weights are the ones."""
        m = self._model
        if self.use_ema and m is not None and m._engine is not None and self.iterations > 0:
            m._engine.ema(EMA_TO_WEIGHTS)

    def get_config(self):
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


def serialize(opt):
    """An optimizer as Keras writes it in a config (module / class_name / config / registered_name); a schedule
    as its own config."""
    if hasattr(opt, "inner_optimizer"):   # LossScaleOptimizer: its config holds the inner one serialized
        return {"module": "keras.optimizers", "class_name": type(opt).__name__, "config": opt.get_config(),
                "registered_name": None}
    cfg = {"name": type(opt).__name__.lower()}
    cfg.update(opt.get_config())
    if not cfg.get("use_ema"):   # at Keras's defaults they are left out (Keras reads the same optimizer), so files
        for k in ("use_ema", "ema_momentum", "ema_overwrite_frequency"):   # without EMA stay as they were
            cfg.pop(k, None)
    for k in ("loss_scale_factor", "gradient_accumulation_steps"):   # likewise at None
        if cfg.get(k) is None:
            cfg.pop(k, None)
    sched = getattr(opt, "_schedule", None)
    if isinstance(sched, schedules.LearningRateSchedule):
        cfg["learning_rate"] = schedules.serialize(sched)
    return {"module": "keras.optimizers", "class_name": type(opt).__name__, "config": cfg, "registered_name": None}
