"""keras.mixed_precision: dtype policies (DTypePolicy / Policy), the global
policy, and LossScaleOptimizer (optimizers/loss_scale.py). A policy names a
compute dtype and a variable dtype; boundfit runs float32, mixed_bfloat16 and
mixed_float16 (variables float32, activations stored in 16 bits:
docs/mixed-precision.md). Layers read the policy, the engine gets a 16-bit
type per node."""

from .optimizers.loss_scale import LossScaleOptimizer

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_RUNS = ("float32", "mixed_bfloat16", "mixed_float16")   # the policies a boundfit layer computes under


class DTypePolicy:
    """Keras 3's `DTypePolicy`: a layer's compute dtype and variable dtype by name: 'float32',
    'mixed_bfloat16' (compute bfloat16, variables float32), 'mixed_float16', or any float dtype."""

    def __init__(self, name=None):
        if name is None:
            name = "float32"   # Keras: backend.floatx()
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'mixed_float16'. Received: name={name!r} "
                            f"(of type {type(name)})")
        if name in ("mixed_float16", "mixed_bfloat16"):
            self._compute, self._variable = name[6:], "float32"
        elif name in _FLOATS:
            self._compute = self._variable = name
        else:
            raise ValueError(f"Cannot convert '{name}' to a mixed precision DTypePolicy. Valid policies include "
                             "'mixed_float16', 'mixed_bfloat16', and the name of any float dtype such as 'float32'.")
        self._name = name

    name = property(lambda self: self._name, doc="The policy's name ('mixed_bfloat16').")
    compute_dtype = property(lambda self: self._compute, doc="The dtype layers compute in ('bfloat16').")
    variable_dtype = property(lambda self: self._variable, doc="The dtype of the layers' variables ('float32').")
    quantization_mode = property(lambda self: None, doc="None: boundfit has no quantized policies.")

    def get_config(self):
        """Keras's config: {'name': ...}."""
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        """The policy of a config from get_config()."""
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other._name == self._name

    def __hash__(self):
        return hash(("DTypePolicy", self._name))

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'


Policy = DTypePolicy          # keras.mixed_precision.Policy (Keras 3's alias)
FloatDTypePolicy = DTypePolicy
_global = None


def get(identifier):
    """keras.dtype_policies.get: a DTypePolicy from a policy, its name or its serialized config."""
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Cannot interpret `dtype` argument. Expected a string or an instance of DTypePolicy. "
                     f"Received: dtype={identifier!r}")


def serialize(policy):
    """A policy as Keras writes it in a config (module / class_name / config / registered_name)."""
    return {"module": "keras", "class_name": "DTypePolicy", "config": get(policy).get_config(),
            "registered_name": None}


def deserialize(config, custom_objects=None):
    """The policy of a serialized config."""
    if not isinstance(config, dict) or config.get("class_name") not in ("DTypePolicy", "FloatDTypePolicy", "Policy"):
        raise ValueError(f"boundfit has only DTypePolicy policies (float and mixed), got {config!r}")
    return DTypePolicy.from_config(dict(config.get("config") or {}))


def check_runs(policy, where):
    """The policy if boundfit layers can compute under it; else a clear error naming `where` (the argument)."""
    if policy.name not in _RUNS:
        raise ValueError(f"{where}: boundfit computes under 'float32', 'mixed_bfloat16' or 'mixed_float16', got "
                         f"{policy.name!r} (variables are float32)")
    return policy


def set_global_policy(policy):
    """Set the policy of the layers made from now on without a dtype (Keras's keras.mixed_precision
    .set_global_policy): 'float32', 'mixed_bfloat16' or 'mixed_float16'."""
    global _global
    if not isinstance(policy, (str, DTypePolicy)):
        raise ValueError("Invalid `policy` argument. Expected the string name of a policy (such as "
                         f"'mixed_float16') or a `DTypePolicy` instance. Received: policy={policy!r} "
                         f"(of type {type(policy)})")
    _global = check_runs(get(policy), "set_global_policy(policy)")


def global_policy():
    """The global policy (DTypePolicy('float32') unless set_global_policy changed it)."""
    return _global if _global is not None else DTypePolicy("float32")


set_dtype_policy = set_global_policy   # Keras 3's names for the same two functions
dtype_policy = global_policy


def layer_policy(dtype, layer):
    """A layer's policy from its dtype argument (None: the global policy), checked: boundfit runs it."""
    if dtype is None:
        return global_policy()
    try:
        return check_runs(get(dtype), f"layer {layer!r}: dtype")
    except TypeError:
        raise ValueError(f"layer {layer!r}: Cannot interpret `dtype` argument. Expected a string or an instance of "
                         f"DTypePolicy. Received: dtype={dtype!r}") from None
