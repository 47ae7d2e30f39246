"""keras.optimizers.schedules: learning rates as a function of the optimizer's
iteration count (completed updates), with Keras 3's names, arguments and
formulas, in float32 as Keras computes them. The engine computes five of them
in closed form for each update (csrc/core/schedule.c, no Python per step);
subclasses and plain callables are evaluated here and the training loop sets
the engine's rate before each step."""

import inspect
import math

import numpy as np

_f = np.float32


class LearningRateSchedule:
    """Base class: subclasses define __call__(step) -> learning rate."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override __call__(self, step).")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override get_config().")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _positive(name, value, what):
    if not value > 0:
        raise ValueError(f"{name}: argument `{what}` must be > 0. Received: {what}={value!r}")


class ExponentialDecay(LearningRateSchedule):
    """Keras 3's `ExponentialDecay`: lr * decay_rate ** (step / decay_steps), computed by the engine per update."""
    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        _positive(name, decay_steps, "decay_steps")
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        p = _f(step) / _f(self.decay_steps)
        if self.staircase:
            p = np.floor(p)
        return float(_f(self.initial_learning_rate) * np.power(_f(self.decay_rate), p))

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate, decay_steps=self.decay_steps,
                    decay_rate=self.decay_rate, staircase=self.staircase, name=self.name)


class PiecewiseConstantDecay(LearningRateSchedule):
    """Keras 3's `PiecewiseConstantDecay(boundaries, values)`, computed by the engine per update."""
    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError("PiecewiseConstantDecay: the length of `boundaries` should be 1 less than the length of "
                             f"`values`. Received: boundaries={boundaries!r} of length {len(boundaries)}, and "
                             f"values={values!r} of length {len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        for b, v in zip(self.boundaries, self.values):
            if step <= b:
                return float(_f(v))
        return float(_f(self.values[-1]))

    def get_config(self):
        return dict(boundaries=self.boundaries, values=self.values, name=self.name)


class PolynomialDecay(LearningRateSchedule):
    """Keras 3's `PolynomialDecay`, computed by the engine per update."""
    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        _positive(name, decay_steps, "decay_steps")
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name

    def __call__(self, step):
        s, ds = _f(step), _f(self.decay_steps)
        if self.cycle:
            ds = ds * (_f(1.0) if s == 0 else np.ceil(s / ds))
        else:
            s = min(s, ds)
        p = s / ds
        lr0, lr1 = _f(self.initial_learning_rate), _f(self.end_learning_rate)
        return float((lr0 - lr1) * np.power(_f(1) - p, _f(self.power)) + lr1)

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate, decay_steps=self.decay_steps,
                    end_learning_rate=self.end_learning_rate, power=self.power, cycle=self.cycle, name=self.name)


class InverseTimeDecay(LearningRateSchedule):
    """Keras 3's `InverseTimeDecay`, computed by the engine per update."""
    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        _positive(name, decay_steps, "decay_steps")
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        p = _f(step) / _f(self.decay_steps)
        if self.staircase:
            p = np.floor(p)
        return float(_f(self.initial_learning_rate) / (_f(1) + _f(self.decay_rate) * p))

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate, decay_steps=self.decay_steps,
                    decay_rate=self.decay_rate, staircase=self.staircase, name=self.name)


class CosineDecay(LearningRateSchedule):
    """Keras 3's `CosineDecay` (with warmup), computed by the engine per update."""
    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        _positive(name, decay_steps, "decay_steps")
        self.initial_learning_rate, self.decay_steps, self.alpha, self.name = (initial_learning_rate, decay_steps,
                                                                               alpha, name)
        self.warmup_target, self.warmup_steps = warmup_target, warmup_steps

    def _decay(self, step, decay_steps, lr_from):
        cos = _f(0.5) * (_f(1) + np.cos(_f(math.pi) * (step / decay_steps)))
        return lr_from * ((_f(1) - _f(self.alpha)) * cos + _f(self.alpha))

    def __call__(self, step):
        s, ds, lr0 = _f(step), _f(self.decay_steps), _f(self.initial_learning_rate)
        if self.warmup_target is None:
            return float(self._decay(min(s, ds), ds, lr0))
        target, ws = _f(self.warmup_target), _f(self.warmup_steps)
        s = min(s, ds + ws)
        if s < ws:
            return float((target - lr0) * (s / ws) + lr0)
        return float(self._decay(s - ws, ds, target))

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate, decay_steps=self.decay_steps, alpha=self.alpha,
                    name=self.name, warmup_target=self.warmup_target, warmup_steps=self.warmup_steps)


class CosineDecayRestarts(LearningRateSchedule):
    """Keras 3's `CosineDecayRestarts` (SGDR): cosine decay over first_decay_steps, restarted with periods
    t_mul times longer and peaks m_mul times lower; evaluated here before each step."""
    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        _positive(name, first_decay_steps, "first_decay_steps")
        self.initial_learning_rate, self.first_decay_steps, self.alpha, self.name = (
            initial_learning_rate, first_decay_steps, alpha, name)
        self._t_mul, self._m_mul = t_mul, m_mul

    def __call__(self, step):
        fraction = _f(step) / _f(self.first_decay_steps)
        t_mul, m_mul, alpha = _f(self._t_mul), _f(self._m_mul), _f(self.alpha)
        if t_mul == _f(1):
            restart = np.floor(fraction)
            fraction = fraction - restart
        else:   # the restart whose geometric sum of periods the step has passed
            restart = np.floor(np.log(_f(_f(1) - fraction * (_f(1) - t_mul))) / np.log(t_mul))
            passed = (_f(1) - np.power(t_mul, restart)) / (_f(1) - t_mul)
            fraction = (fraction - passed) / np.power(t_mul, restart)
        cosine = _f(0.5) * np.power(m_mul, restart) * (_f(1) + np.cos(_f(math.pi) * fraction))
        return float(_f(self.initial_learning_rate) * ((_f(1) - alpha) * cosine + alpha))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_MAX_BOUNDS = 16  # csrc/core/schedule.h BF_SCHED_MAX_BOUNDS
_NO_SCHEDULE = (0, (0.0,) * 5, 0, (), ())


def engine_form(schedule):
    """The arguments of the engine's set_schedule for a schedule it computes in
    closed form (csrc/core/schedule.c), or None: a subclass or a callable is
    evaluated in Python before each step instead."""
    t = type(schedule)
    if schedule is None:
        return _NO_SCHEDULE
    g = lambda *names: tuple(float(getattr(schedule, n)) for n in names)
    if t is ExponentialDecay:
        return 1, g("initial_learning_rate", "decay_steps", "decay_rate") + (0.0, 0.0), int(schedule.staircase), (), ()
    if t is InverseTimeDecay:
        return 2, g("initial_learning_rate", "decay_steps", "decay_rate") + (0.0, 0.0), int(schedule.staircase), (), ()
    if t is PolynomialDecay:
        return 3, g("initial_learning_rate", "decay_steps", "end_learning_rate", "power") + (0.0,), \
            int(schedule.cycle), (), ()
    if t is CosineDecay:
        warm = schedule.warmup_target is not None
        return 4, g("initial_learning_rate", "decay_steps", "alpha") + (
            float(schedule.warmup_target) if warm else 0.0, float(schedule.warmup_steps)), int(warm), (), ()
    if t is PiecewiseConstantDecay and len(schedule.boundaries) <= _MAX_BOUNDS:
        return 5, (0.0,) * 5, 0, tuple(float(b) for b in schedule.boundaries), tuple(float(v) for v in schedule.values)
    return None


def step_fn(learning_rate):
    """lr(step) for a schedule or a callable: a one-argument callable gets the
    iteration count; a zero-argument one (Keras's own callable form) none."""
    if isinstance(learning_rate, LearningRateSchedule):
        return learning_rate
    try:
        sig = inspect.signature(learning_rate)
        takes_step = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                         for p in sig.parameters.values())
    except (TypeError, ValueError):
        takes_step = True
    return learning_rate if takes_step else (lambda step: learning_rate())


def serialize(schedule):
    """Keras's serialized form of a schedule."""
    return {"module": "keras.optimizers.schedules", "class_name": type(schedule).__name__,
            "config": schedule.get_config(), "registered_name": None}


def deserialize(config):
    """A schedule from its serialized form."""
    cls = globals().get(config.get("class_name"))
    if not (isinstance(cls, type) and issubclass(cls, LearningRateSchedule)) or cls is LearningRateSchedule:
        raise ValueError(f"unknown learning rate schedule {config.get('class_name')!r}")
    return cls.from_config(config["config"])
