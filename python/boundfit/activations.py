"""Activations by Keras name; the engine computes them (ids match csrc bf_act)."""

LINEAR, RELU, SIGMOID, TANH, SOFTMAX = 0, 1, 2, 3, 4
_IDS = {"linear": LINEAR, None: LINEAR, "relu": RELU, "sigmoid": SIGMOID, "tanh": TANH, "softmax": SOFTMAX}


def _named(name):
    def f(x):
        raise TypeError(f"boundfit.activations.{name} is computed by the engine; pass it to a layer")
    f.__name__ = name
    return f


linear, relu, sigmoid, tanh, softmax = (_named(n) for n in ("linear", "relu", "sigmoid", "tanh", "softmax"))


def get_id(activation, argument="activation"):
    """Engine id of an activation given by name, None, or one of this module's functions."""
    key = getattr(activation, "__name__", activation) if not isinstance(activation, str) and activation is not None else activation
    if isinstance(key, str):
        key = key.lower()
    if key not in _IDS:
        raise ValueError(f"{argument}: unknown activation {activation!r}; "
                         f"choose one of {sorted(k for k in _IDS if k)}")
    return _IDS[key]


def name_of(act_id):
    return {v: k for k, v in _IDS.items() if k}[act_id]
