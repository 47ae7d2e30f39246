"""Keras 3's later optimizers: Adamax, Adadelta, Ftrl, Lion, Lamb, Adafactor
and Muon, with Keras's arguments, defaults and checks (their updates run in
the engine: csrc/cpu/optimizers_more.c, csrc/cuda/optimizers_more.cu; Lamb's
trust ratio per variable, as Keras; Adafactor and Muon per variable on the CPU,
csrc/core/opt_matrix.c, csrc/cpu/optimizers_matrix.c, refused on CUDA by name).
ScheduleFreeAdamW is refused by name, saying what to use instead."""

import re

from .base import ADADELTA_ID, ADAFACTOR_ID, ADAMAX_ID, FTRL_ID, LAMB_ID, LION_ID, MUON_ID, Optimizer, _nonneg


def _number(v, what):
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {v!r}") from None


def _fraction(v, what, top_open=True):
    """v in [0, 1) (top_open) or [0, 1], else ValueError naming it."""
    f = _number(v, what)
    if not (0.0 <= f < 1.0 if top_open else 0.0 <= f <= 1.0):
        raise ValueError(f"{what} must be in [0, 1{')' if top_open else ']'}, got {v!r}")
    return f


class _Adaptive(Optimizer):
    """beta_1 (bias-corrected: below 1), beta_2 and epsilon, as Adamax and Lamb take them."""

    def __init__(self, learning_rate, beta_1, beta_2, epsilon, weight_decay, clipnorm, clipvalue, global_clipnorm,
                 use_ema, name, **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.beta_1, self.beta_2 = _fraction(beta_1, "beta_1"), _fraction(beta_2, "beta_2", top_open=False)
        self.epsilon = _nonneg(epsilon, "epsilon")


class Adamax(_Adaptive):
    """Keras 3's `Adamax(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, ...)`: Adam with the
    infinity norm (state: momentum and norm per weight)."""
    kind = ADAMAX_ID

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False, name="adamax", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         use_ema, name, **kwargs)


class Lamb(_Adaptive):
    """Keras 3's `Lamb(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, ...)`: Adam's update
    scaled per variable by the trust ratio ||w|| / ||update|| (state: momentum and velocity per weight)."""
    kind = LAMB_ID

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False, name="lamb", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         use_ema, name, **kwargs)


class Adadelta(Optimizer):
    """Keras 3's `Adadelta(learning_rate=0.001, rho=0.95, epsilon=1e-7, ...)` (state: accumulated squared
    gradients and updates per weight)."""
    kind = ADADELTA_ID

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, name="adadelta", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.rho = _fraction(rho, "rho", top_open=False)
        self.epsilon = _nonneg(epsilon, "epsilon")


class Lion(Optimizer):
    """Keras 3's `Lion(learning_rate=0.001, beta_1=0.9, beta_2=0.99, ...)`: the sign of an interpolated
    momentum (state: one momentum per weight)."""
    kind = LION_ID

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, name="lion", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        b1 = _number(beta_1, "beta_1")
        if b1 <= 0 or b1 > 1:
            raise ValueError("Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer degenerates "
                             f"to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1, self.beta_2 = b1, _fraction(beta_2, "beta_2", top_open=False)


class Ftrl(Optimizer):
    """Keras 3's `Ftrl(learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
    l1_regularization_strength=0.0, l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
    beta=0.0, ...)` (state: accumulator and linear per weight). The learning rate must stay above 0 (Ftrl
    divides by it): a step at rate 0 raises before changing anything."""
    kind = FTRL_ID

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, name="ftrl", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        checks = [("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
                  ("learning_rate_power", learning_rate_power, "negative or zero"),
                  ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
                  ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
                  ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, "positive or zero"),
                  ("beta", beta, "positive or zero")]
        for what, v, sign in checks:   # Keras's checks and messages (beta: boundfit's, it divides by 2*lr)
            f = _number(v, what)
            if not (f <= 0.0 if sign == "negative or zero" else f >= 0.0) or f != f or abs(f) == float("inf"):
                raise ValueError(f"`{what}` needs to be {sign}. Received: {what}={v}.")
            setattr(self, what, f)

    def _extra_engine_args(self, model):
        return dict(learning_rate_power=self.learning_rate_power,
                    l1_regularization_strength=self.l1_regularization_strength,
                    l2_regularization_strength=self.l2_regularization_strength,
                    l2_shrinkage_regularization_strength=self.l2_shrinkage_regularization_strength, beta=self.beta)


class Adafactor(Optimizer):
    """Keras 3's `Adafactor(learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
    clip_threshold=1.0, relative_step=True, ...)`: second moments factored into the row and column means of each
    variable of rank >= 2 (over its last two axes), full for the others; the step scaled by the variable's root
    mean square and clipped by the update's (state: v per weight, and the row and column moments; boundfit keeps
    them in two more slots of the variable's size). CPU only: on CUDA it is refused by name. relative_step, as in
    Keras, changes nothing (the rate is min(learning_rate, 1/sqrt(step)) either way)."""
    kind = ADAFACTOR_ID

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3, clip_threshold=1.0,
                 relative_step=True, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, name="adafactor", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.beta_2_decay = _number(beta_2_decay, "beta_2_decay")
        self.epsilon_1, self.epsilon_2 = _nonneg(epsilon_1, "epsilon_1"), _nonneg(epsilon_2, "epsilon_2")
        self.clip_threshold = _number(clip_threshold, "clip_threshold")
        if not self.clip_threshold > 0:
            raise ValueError(f"clip_threshold must be > 0, got {clip_threshold!r}")
        self.relative_step = bool(relative_step)

    def _extra_engine_args(self, model):
        return dict(beta_2_decay=self.beta_2_decay, epsilon_1=self.epsilon_1, epsilon_2=self.epsilon_2,
                    clip_threshold=self.clip_threshold)


class Muon(Optimizer):
    """Keras 3's `Muon(learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999, adam_weight_decay=0.004,
    epsilon=1e-7, weight_decay=0.004, exclude_layers=None, exclude_embeddings=True, muon_a=3.4445, muon_b=-4.7750,
    muon_c=2.0315, adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True, rms_rate=0.2, ...)`: the
    momentum of each matrix (a variable of rank 2 whose path matches neither "embedding", with
    exclude_embeddings, nor a regular expression of exclude_layers) orthogonalized by ns_steps Newton-Schulz
    iterations; AdamW (at learning_rate * adam_lr_ratio) for the other variables (state: momentum per weight,
    velocity per weight of the AdamW variables; boundfit keeps the velocity as a slot of the model's size). A
    variable's path is Keras's: "<layer>/<weight>", under the model's name in a Sequential. CPU only: on CUDA it
    is refused by name."""
    kind = MUON_ID

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999, adam_weight_decay=0.004,
                 epsilon=1e-7, weight_decay=0.004, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, name="muon", exclude_layers=None, exclude_embeddings=True, muon_a=3.4445,
                 muon_b=-4.7750, muon_c=2.0315, adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True,
                 rms_rate=0.2, **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, name, **kwargs)
        self.adam_beta_1 = _fraction(adam_beta_1, "adam_beta_1")
        self.adam_beta_2 = _fraction(adam_beta_2, "adam_beta_2", top_open=False)
        self.epsilon = _nonneg(epsilon, "epsilon")
        self.muon_a, self.muon_b, self.muon_c = (_number(v, w) for v, w in ((muon_a, "muon_a"), (muon_b, "muon_b"),
                                                                             (muon_c, "muon_c")))
        self.adam_lr_ratio = _nonneg(adam_lr_ratio, "adam_lr_ratio")
        self.momentum = _fraction(momentum, "momentum", top_open=False)
        if isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 0:
            raise ValueError(f"ns_steps must be an integer >= 0, got {ns_steps!r}")
        self.ns_steps, self.nesterov = ns_steps, bool(nesterov)
        self.exclude_embeddings = bool(exclude_embeddings)
        if isinstance(exclude_layers, str) or not all(isinstance(k, str) for k in exclude_layers or []):
            raise ValueError(f"exclude_layers must be a list of strings (regular expressions), got {exclude_layers!r}")
        self.exclude_layers = list(exclude_layers or [])
        for k in self.exclude_layers:
            try:
                re.compile(k)
            except re.error as e:
                raise ValueError(f"exclude_layers: {k!r} is not a regular expression: {e}") from None
        self.adam_weight_decay = None if adam_weight_decay is None else _nonneg(adam_weight_decay,
                                                                                "adam_weight_decay")
        self.rms_rate = None if rms_rate is None else _nonneg(rms_rate, "rms_rate")

    def _should_use_adamw(self, path, shape):
        """Keras's Muon._should_use_adamw on a variable's path and shape."""
        if len(shape) != 2:
            return True
        if self.exclude_embeddings and "embedding" in path.lower():
            return True
        return any(re.search(k, path) for k in self.exclude_layers)

    def _extra_engine_args(self, model):
        return dict(beta_1=self.adam_beta_1, beta_2=self.adam_beta_2, muon_a=self.muon_a, muon_b=self.muon_b,
                    muon_c=self.muon_c, adam_lr_ratio=self.adam_lr_ratio,
                    adam_weight_decay=float(self.adam_weight_decay or 0.0),
                    rms_rate=-1.0 if self.rms_rate is None else self.rms_rate, ns_steps=self.ns_steps,
                    matrices=tuple(_muon_matrices(self, model)) if model is not None else ())


def _muon_matrices(opt, model):
    """Gradient offsets of the model's variables Muon orthogonalizes: Keras's rule on Keras's variable paths and
    shapes (Model._keras_variables)."""
    return [off for off, path, shape in model._keras_variables() if not opt._should_use_adamw(path, shape)]


class _Refused(Optimizer):
    """A Keras optimizer boundfit does not have: constructing it raises, saying what to use."""
    why = use = ""
    _boundfit_refused = True   # tools/keras_coverage.py lists it as refused

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"keras.optimizers.{type(self).__name__} is not supported by boundfit: {self.why}. "
                                  f"Use {self.use}")


class ScheduleFreeAdamW(_Refused):
    """Refused: Keras's ScheduleFreeAdamW interpolates between two weight sequences (its own schedule-free
    averaging and warmup), which the engine's update does not have. Use AdamW with a learning-rate schedule."""
    why = "its schedule-free averaging of two weight sequences is not in the engine's update"
    use = "boundfit.optimizers.AdamW with a keras.optimizers.schedules learning-rate schedule (CosineDecay, ...)"
