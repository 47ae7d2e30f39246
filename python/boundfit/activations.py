"""Activations by Keras 3 name or function; the engine computes them (ids
match csrc bf_act). Each function here also evaluates on a NumPy array, as
Keras's do (`bf.activations.gelu(np.array(...))`), through the engine's CPU
kernel. Passed as `activation=`, a function is read with its keyword
arguments: `functools.partial(bf.activations.gelu, approximate=True)` or
`functools.partial(bf.activations.leaky_relu, negative_slope=0.1)`."""

import functools
import math

import numpy as np

from . import _core

(LINEAR, RELU, SIGMOID, TANH, SOFTMAX, GELU, GELU_TANH, SILU, ELU, SELU, LEAKY_RELU, SOFTPLUS, SOFTSIGN,
 HARD_SIGMOID, EXPONENTIAL, RELU6, RELU_X) = range(17)

_IDS = {"linear": LINEAR, None: LINEAR, "relu": RELU, "sigmoid": SIGMOID, "tanh": TANH, "softmax": SOFTMAX,
        "gelu": GELU, "silu": SILU, "swish": SILU, "elu": ELU, "selu": SELU, "leaky_relu": LEAKY_RELU,
        "softplus": SOFTPLUS, "softsign": SOFTSIGN, "hard_sigmoid": HARD_SIGMOID, "exponential": EXPONENTIAL,
        "relu6": RELU6}
# Keras's name of each id (swish is saved as silu, as Keras 3 does)
_NAMES = {LINEAR: "linear", RELU: "relu", SIGMOID: "sigmoid", TANH: "tanh", SOFTMAX: "softmax", GELU: "gelu",
          SILU: "silu", ELU: "elu", SELU: "selu", LEAKY_RELU: "leaky_relu", SOFTPLUS: "softplus",
          SOFTSIGN: "softsign", HARD_SIGMOID: "hard_sigmoid", EXPONENTIAL: "exponential", RELU6: "relu6"}


class Act(int):
    """An engine activation id with its parameters (alpha: leaky_relu / relu
    negative_slope or elu alpha; relu's max_value and threshold)."""

    def __new__(cls, act_id, alpha=None, max_value=None, threshold=0.0):
        self = super().__new__(cls, act_id)
        if alpha is None:
            alpha = 0.2 if act_id == LEAKY_RELU else 1.0 if act_id == ELU else 0.0
        self.alpha, self.max_value, self.threshold = float(alpha), max_value, float(threshold)
        return self

    def params(self):
        """(alpha, max_value, threshold) as the engine takes them."""
        return (self.alpha, math.inf if self.max_value is None else float(self.max_value), self.threshold)

    def __reduce__(self):
        return (Act, (int(self), self.alpha, self.max_value, self.threshold))


def _eval(act, x):
    return _core.activation(int(act), np.asarray(x), *act.params())


def linear(x):
    """The identity, of an array (by name, in a layer)."""
    return _eval(Act(LINEAR), x)


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Keras's relu(x, negative_slope=0.0, max_value=None, threshold=0.0) of an array, by the engine's C kernel."""
    return _eval(relu_act(negative_slope, max_value, threshold, "relu"), x)


def sigmoid(x):
    """1 / (1 + exp(-x)) of an array, by the engine's C kernel."""
    return _eval(Act(SIGMOID), x)


def tanh(x):
    """The hyperbolic tangent of an array, by the engine's C kernel."""
    return _eval(Act(TANH), x)


def softmax(x, axis=-1):
    """Softmax over the last axis (the only `axis` supported) of an array, by the engine's C kernel."""
    if axis not in (-1, np.ndim(x) - 1):
        raise ValueError(f"softmax: only axis=-1 is supported, got axis={axis!r}")
    return _eval(Act(SOFTMAX), x)


def gelu(x, approximate=False):
    """Gaussian error linear unit, exact or (approximate=True) the tanh form of an array, by the engine's C kernel."""
    return _eval(Act(GELU_TANH if approximate else GELU), x)


def silu(x):
    """x * sigmoid(x) (also named swish) of an array, by the engine's C kernel."""
    return _eval(Act(SILU), x)


swish = silu


def elu(x, alpha=1.0):
    """Exponential linear unit with `alpha` of an array, by the engine's C kernel."""
    return _eval(_checked(ELU, alpha, "alpha"), x)


def selu(x):
    """Scaled exponential linear unit (Keras's constants) of an array, by the engine's C kernel."""
    return _eval(Act(SELU), x)


def leaky_relu(x, negative_slope=0.2):
    """max(x, negative_slope * x) of an array, by the engine's C kernel."""
    return _eval(_checked(LEAKY_RELU, negative_slope, "negative_slope"), x)


def softplus(x):
    """log(1 + exp(x)) of an array, by the engine's C kernel."""
    return _eval(Act(SOFTPLUS), x)


def softsign(x):
    """x / (1 + |x|) of an array, by the engine's C kernel."""
    return _eval(Act(SOFTSIGN), x)


def hard_sigmoid(x):
    """Keras 3's piecewise-linear sigmoid, clip(x / 6 + 0.5, 0, 1) of an array, by the engine's C kernel."""
    return _eval(Act(HARD_SIGMOID), x)


def hard_silu(x):
    """Keras 3's hard_silu (hard_swish), x * relu6(x + 3) / 6, of an array. In a model it is an Activation
    layer's only (the engine's elementwise hard_silu op): Dense / Conv activation= do not take it."""
    x = np.asarray(x, dtype=np.float32)
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


hard_swish = hard_silu
# activations an Activation layer computes with the engine's elementwise op of that name (layers/emath.py's
# Unary), not fused into a layer: name -> the op
ELEMENTWISE = {"hard_silu": "hard_silu", "hard_swish": "hard_silu"}


def elementwise_op(activation):
    """The elementwise op of an ELEMENTWISE activation (by name or function), else None."""
    if activation is hard_silu:
        return "hard_silu"
    name = activation if isinstance(activation, str) else getattr(activation, "__name__", None) \
        if getattr(activation, "__module__", "").startswith("keras") else None
    return ELEMENTWISE.get(name.lower()) if isinstance(name, str) else None


def exponential(x):
    """exp(x) of an array, by the engine's C kernel."""
    return _eval(Act(EXPONENTIAL), x)


def relu6(x):
    """min(max(x, 0), 6) of an array, by the engine's C kernel."""
    return _eval(Act(RELU6), x)


def _checked(act_id, alpha, argument):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"{argument} must be a finite number >= 0, got {alpha!r}")
    return Act(act_id, alpha)


def relu_act(negative_slope=0.0, max_value=None, threshold=0.0, argument="relu"):
    """Keras's relu with options as one engine activation (plain relu / relu6 / leaky_relu when they are that)."""
    for k, v in (("negative_slope", negative_slope), ("threshold", threshold)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{argument}: {k} must be a finite number, got {v!r}")
    if negative_slope < 0:
        raise ValueError(f"{argument}: negative_slope must be >= 0, got {negative_slope!r}")
    if max_value is not None and (isinstance(max_value, bool) or not isinstance(max_value, (int, float))
                                  or not max_value >= 0):
        raise ValueError(f"{argument}: max_value must be None or a number >= 0, got {max_value!r}")
    if negative_slope == 0 and threshold == 0 and max_value is None:
        return Act(RELU)
    return Act(RELU_X, negative_slope, max_value, threshold)


_FUNCS = {linear: LINEAR, relu: RELU, sigmoid: SIGMOID, tanh: TANH, softmax: SOFTMAX, gelu: GELU, silu: SILU,
          elu: ELU, selu: SELU, leaky_relu: LEAKY_RELU, softplus: SOFTPLUS, softsign: SOFTSIGN,
          hard_sigmoid: HARD_SIGMOID, exponential: EXPONENTIAL, relu6: RELU6}


def get_id(activation, argument="activation"):
    """Engine activation (an int id with its parameters) of an activation given
    by name, None, one of this module's functions, or a functools.partial of one."""
    if isinstance(activation, Act):
        return activation
    if isinstance(activation, functools.partial) and activation.func not in _FUNCS and \
            getattr(activation.func, "__module__", "").startswith("keras") and activation.func.__name__ in _IDS:
        activation = functools.partial(globals()[activation.func.__name__], *activation.args, **activation.keywords)
    if isinstance(activation, functools.partial) and activation.func in _FUNCS and not activation.args:
        kw = dict(activation.keywords)
        f = activation.func
        try:
            if f is gelu:
                approximate = kw.pop("approximate", False)
                return Act(GELU_TANH if approximate else GELU) if not kw else _bad(kw)
            if f is leaky_relu:
                slope = kw.pop("negative_slope", 0.2)
                return _checked(LEAKY_RELU, slope, "negative_slope") if not kw else _bad(kw)
            if f is elu:
                alpha = kw.pop("alpha", 1.0)
                return _checked(ELU, alpha, "alpha") if not kw else _bad(kw)
            if f is relu:
                return relu_act(**kw, argument=argument)
        except TypeError as e:
            raise ValueError(f"{argument}: {e}") from None
        if kw:
            _bad(kw)
        return Act(_FUNCS[f])
    if activation in _FUNCS:
        return Act(_FUNCS[activation])
    key = activation
    if isinstance(key, str):
        key = key.lower()
    elif key is not None:
        key = getattr(activation, "__name__", None)
        if not (isinstance(key, str) and getattr(activation, "__module__", "").startswith("keras")):
            raise ValueError(f"{argument}: unknown activation {activation!r}; pass a name such as 'gelu' or a "
                             "function of boundfit.activations")
    if key not in _IDS:
        raise ValueError(f"{argument}: unknown activation {activation!r}; "
                         f"choose one of {sorted(k for k in _IDS if k)}")
    return Act(_IDS[key])


def _bad(kw):
    raise TypeError(f"unsupported keyword arguments {sorted(kw)}")


def name_of(act):
    """Keras's name of an activation (ValueError for those a Keras config cannot name)."""
    if isinstance(act, Act) and int(act) == ELU and act.alpha != 1.0 or \
            isinstance(act, Act) and int(act) == LEAKY_RELU and act.alpha != 0.2 or int(act) in (GELU_TANH, RELU_X):
        raise ValueError(f"activation {_describe(act)} has no Keras name; use the layer form (layers.LeakyReLU, "
                         "layers.ELU, layers.ReLU) or the default arguments to save it in a Keras file")
    return _NAMES[int(act)]


def _describe(act):
    n = {GELU_TANH: "gelu(approximate=True)", RELU_X: "relu with options"}.get(int(act), _NAMES.get(int(act)))
    return f"{n} (alpha={act.alpha})" if int(act) in (ELU, LEAKY_RELU) else n


def params_of(act):
    return act.params() if isinstance(act, Act) else Act(int(act)).params()


def get(identifier):
    """Keras's activations.get: the function of a name (or the function itself)."""
    if identifier is None:
        return linear
    if callable(identifier):
        get_id(identifier)
        return identifier
    act = get_id(identifier)
    return {v: k for k, v in _FUNCS.items()}[int(act)]


def serialize(activation):
    """Keras's serialized form of an activation (its name)."""
    return name_of(get_id(activation))


def deserialize(name):
    """The activation function of a serialized name."""
    return get(name)
