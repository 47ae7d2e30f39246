"""Keras 3's later optimizers: Adamax, Adadelta, Ftrl, Lion and Lamb, with
Keras's arguments, defaults and checks (their updates run in the engine:
csrc/cpu/optimizers_more.c, csrc/cuda/optimizers_more.cu; Lamb's trust ratio
per variable, as Keras). Adafactor and Muon are refused by name, saying what
to use instead."""

from .base import ADADELTA_ID, ADAMAX_ID, FTRL_ID, LAMB_ID, LION_ID, Optimizer, _nonneg


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

    def _extra_engine_args(self):
        return dict(learning_rate_power=self.learning_rate_power,
                    l1_regularization_strength=self.l1_regularization_strength,
                    l2_regularization_strength=self.l2_regularization_strength,
                    l2_shrinkage_regularization_strength=self.l2_shrinkage_regularization_strength, beta=self.beta)


class _Refused(Optimizer):
    """A Keras optimizer boundfit does not have: constructing it raises, saying what to use."""
    why = use = ""
    _boundfit_refused = True   # tools/keras_coverage.py lists it as refused

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"keras.optimizers.{type(self).__name__} is not supported by boundfit: {self.why}. "
                                  f"Use {self.use}")


class Adafactor(_Refused):
    """Refused: Keras's Adafactor keeps factored (row and column) second moments, which the engine's update does
    not have. Use Adam, or Lion for the least optimizer state (one slot per weight)."""
    why = "its factored second moments (per row and column of each weight) are not in the engine's update"
    use = ("boundfit.optimizers.Adam (two state slots per weight), or Lion (one slot per weight: the least "
           "optimizer state of the adaptive optimizers)")


class Muon(_Refused):
    """Refused: Keras's Muon orthogonalizes each matrix update by Newton-Schulz iterations, which the engine's
    update does not have. Use AdamW, or Lamb for a per-variable scaled update."""
    why = "its Newton-Schulz orthogonalization of each matrix's update is not in the engine's update"
    use = "boundfit.optimizers.AdamW, or Lamb (Adam's update scaled per variable by its trust ratio)"
