"""Activations by Keras 3 name or function; the engine computes them (ids
match csrc bf_act). Each function here also evaluates on a NumPy array, as
Keras's do (`bf.activations.gelu(np.array(...))`), through the engine's CPU
kernel. Passed as `activation=`, a function is read with its keyword
arguments: `functools.partial(bf.activations.gelu, approximate=True)` or
`functools.partial(bf.activations.leaky_relu, negative_slope=0.1)`.

Any other activation (Keras's that the engine has no id for, mish, celu...,
in FUNCTIONS, or a user's callable) is a function of keras.ops: a layer given
it applies it to its symbolic output (layer_activation; the layer becomes a
Keras composite, traced like a custom layer's call(), one layer in files)."""

import functools
import math

import numpy as np

from . import _core, object_registration

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
    """Keras 3's hard_silu (hard_swish), x * relu6(x + 3) / 6, of an array. In a model: Activation's is the
    engine's elementwise hard_silu op; in another layer's activation= it is keras.ops.hard_silu (FUNCTIONS)."""
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


# keras.ops' functions these compose, set by ops.py (which imports this module): name -> function
OPS = {}


class _Ops:
    def __getattr__(self, name):
        return OPS[name]


def _ops():
    return _Ops()


def celu(x, alpha=1.0):
    """Keras's celu: max(x, 0) + alpha * expm1(min(x, 0) / alpha), by keras.ops.celu."""
    return _ops().celu(x, alpha=alpha)


def glu(x, axis=-1):
    """Keras's glu: a * sigmoid(b), the two halves of axis, by keras.ops.glu."""
    return _ops().glu(x, axis=axis)


def hard_shrink(x, threshold=0.5):
    """Keras's hard_shrink: x where |x| > threshold, else 0, by keras.ops.hard_shrink."""
    return _ops().hard_shrink(x, threshold=threshold)


def hard_tanh(x):
    """Keras's hard_tanh: clip(x, -1, 1), by keras.ops.hard_tanh."""
    return _ops().hard_tanh(x)


def log_sigmoid(x):
    """Keras's log_sigmoid: -softplus(-x), by keras.ops.log_sigmoid."""
    return _ops().log_sigmoid(x)


def log_softmax(x, axis=-1):
    """Keras's log_softmax: x - logsumexp(x, axis), by keras.ops.log_softmax."""
    return _ops().log_softmax(x, axis=axis)


def mish(x):
    """Keras's mish: x * tanh(softplus(x)), of keras.ops."""
    o = _ops()
    return o.multiply(x, o.tanh(o.softplus(x)))


def soft_shrink(x, threshold=0.5):
    """Keras's soft_shrink: x - threshold above it, x + threshold below -threshold, else 0 (keras.ops)."""
    return _ops().soft_shrink(x, threshold=threshold)


def sparse_plus(x):
    """Keras's sparse_plus: 0, (x + 1)^2 / 4, x on x <= -1, |x| < 1, x >= 1 (keras.ops.sparse_plus)."""
    return _ops().sparse_plus(x)


def sparse_sigmoid(x):
    """Keras's sparse_sigmoid: clip((x + 1) / 2, 0, 1) (keras.ops.sparse_sigmoid)."""
    return _ops().sparse_sigmoid(x)


def sparsemax(x, axis=-1):
    """Keras's sparsemax over axis (keras.ops.sparsemax)."""
    return _ops().sparsemax(x, axis=axis)


def squareplus(x, b=4):
    """Keras's squareplus: (x + sqrt(x^2 + b)) / 2 (keras.ops.squareplus)."""
    return _ops().squareplus(x, b=b)


def tanh_shrink(x):
    """Keras's tanh_shrink: x - tanh(x) (keras.ops.tanh_shrink)."""
    return _ops().tanh_shrink(x)


def threshold(x, threshold, default_value):
    """Keras's threshold: x where x > threshold, else default_value (keras.ops.threshold)."""
    return _ops().threshold(x, threshold, default_value)


def _hard_silu_fn(x):   # hard_silu in a layer's activation=: keras.ops.hard_silu on its output
    return _ops().hard_silu(x)


_hard_silu_fn.__name__ = "hard_silu"
# Keras's activations the engine has no id for: applied as functions of keras.ops (name -> function)
FUNCTIONS = {f.__name__: f for f in (celu, glu, hard_shrink, hard_tanh, log_sigmoid, log_softmax, mish, soft_shrink,
                                     sparse_plus, sparse_sigmoid, sparsemax, squareplus, tanh_shrink, threshold)}
FUNCTIONS.update(hard_silu=_hard_silu_fn, hard_swish=_hard_silu_fn)


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
    elif key is not None and callable(activation):
        key = getattr(activation, "__name__", None)
        if not (isinstance(key, str) and getattr(activation, "__module__", "").startswith("keras")):
            raise ValueError(f"{argument}: {activation!r} is not an activation of the engine's kernels (a name "
                             "such as 'gelu' or a function of boundfit.activations); a function activation is "
                             "applied in Dense, Conv*, EinsumDense and Activation only")
    if key in FUNCTIONS:
        raise ValueError(f"{argument}: {key!r} is not an activation of the engine's kernels; it is applied as a "
                         "function in Dense, Conv*, EinsumDense and Activation only (follow this layer with "
                         f"Activation({key!r}))")
    if key not in _IDS:
        raise ValueError(f"{argument}: unknown activation {activation!r}; "
                         f"choose one of {sorted(k for k in _IDS if k)}")
    return Act(_IDS[key])


def function_of(activation):
    """The function a function activation is applied as (a name or function of FUNCTIONS, Keras's of those names,
    or a user's callable), or None for an engine activation (get_id's)."""
    if isinstance(activation, str):
        return FUNCTIONS.get(activation.lower())
    if isinstance(activation, dict) and activation.get("class_name") == "function":   # Keras's entry (config_name)
        name = activation.get("config")
        fn = FUNCTIONS.get(name) or object_registration.get_registered_object(name)
        if not callable(fn):
            raise ValueError(f"activation function {name!r} is not registered; register it with "
                             "keras.saving.register_keras_serializable")
        return fn
    if activation is hard_silu or activation is hard_swish:
        return FUNCTIONS["hard_silu"]
    if not callable(activation) or isinstance(activation, Act) or activation in _FUNCS:
        return None
    f = activation.func if isinstance(activation, functools.partial) else activation
    name = getattr(f, "__name__", None)
    if getattr(f, "__module__", "").startswith("keras") and isinstance(name, str):
        if name in _IDS or f in _FUNCS:
            return None   # an engine activation (get_id reads it, options too)
        if name in FUNCTIONS and not isinstance(activation, functools.partial):
            return FUNCTIONS[name]
    if f in _FUNCS:
        return None
    return activation


def layer_activation(layer, activation, argument="activation"):
    """A layer's engine activation (get_id); a function activation (function_of) is kept as layer._act_fn and the
    engine's is linear: Layer.call applies the function to the layer's linear output, traced through keras.ops."""
    fn = function_of(activation)
    if fn is None:
        return get_id(activation, argument)
    if getattr(layer, "activity_regularizer", None) is not None:
        raise ValueError(f"{argument}: a function activation ({config_name(fn)}) with an activity_regularizer is "
                         "not supported; add the activation as an Activation layer after this one")
    layer._act_fn = fn
    return Act(LINEAR)


def config_name(fn):
    """Keras's config entry of a function activation: its name (Keras's activations), else Keras's entry of a
    registered function (its registered name)."""
    for k, v in FUNCTIONS.items():
        if v is fn:
            return k
    name = object_registration.GLOBAL_CUSTOM_NAMES.get(fn)
    if name is None:
        raise ValueError(f"activation {getattr(fn, '__name__', fn)!r} is not registered, so a Keras file cannot "
                         "name it; decorate it with keras.saving.register_keras_serializable()")
    return {"module": "builtins", "class_name": "function", "config": name, "registered_name": "function"}


def layer_config_name(layer):
    """The activation entry of a layer's Keras config."""
    fn = layer.__dict__.get("_act_fn")
    return name_of(layer.activation) if fn is None else config_name(fn)


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
    if function_of(identifier) is not None:
        return function_of(identifier)
    if callable(identifier):
        get_id(identifier)
        return identifier
    act = get_id(identifier)
    return {v: k for k, v in _FUNCS.items()}[int(act)]


def serialize(activation):
    """Keras's serialized form of an activation (its name; a user's function's: config_name)."""
    fn = function_of(activation)
    return name_of(get_id(activation)) if fn is None else config_name(fn)


def deserialize(name):
    """The activation function of a serialized name."""
    return get(name)
