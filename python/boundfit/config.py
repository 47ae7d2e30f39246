"""keras.config: the global settings Keras programs read and set.

The numeric settings are keras.backend's (float32, channels_last, epsilon
1e-7; other values refused by name) and the dtype policy is
keras.mixed_precision's. Debugging caps: set_max_epochs / KERAS_MAX_EPOCHS
caps fit's epochs, set_max_steps_per_epoch / KERAS_MAX_STEPS_PER_EPOCH the
steps of each fit / evaluate / predict epoch (with a warning), as in Keras.
Switches that change nothing in boundfit are kept as Keras's flags and say
so: flash attention (boundfit's attention is always its own fused kernel),
traceback filtering (boundfit's errors are raised from the user's call
already), unsafe deserialization (boundfit never runs code from a file: a
Lambda layer's bytecode in a .keras file is refused whatever the flag).

boundfit's own switch: TF32 on the CUDA backend (enable_tf32 / disable_tf32 /
is_tf32_enabled): float32 GEMMs and convolutions on tensor cores with TF32
operands (10 mantissa bits), on by default as JAX's default precision uses
TF32 on GPUs; exact float32 after disable_tf32(). The CPU never uses TF32. A
run keeps the setting it was planned with (its cuDNN workspaces depend on
it)."""

import os
import warnings

from . import _core
from .backend import (backend, epsilon, floatx, image_data_format, set_epsilon,  # noqa: F401 - keras.config's
                      set_floatx, set_image_data_format)
from .callbacks.progbar import (disable_interactive_logging, enable_interactive_logging,  # noqa: F401
                                is_interactive_logging_enabled)
from .mixed_precision import dtype_policy, set_dtype_policy  # noqa: F401 - keras.config's names


def _env_int(name):
    v = os.environ.get(name)
    try:
        return int(v) if v else None
    except ValueError:
        raise ValueError(f"environment variable {name} must be an int, got {v!r}") from None


_flags = {"max_epochs": _env_int("KERAS_MAX_EPOCHS"), "max_steps_per_epoch": _env_int("KERAS_MAX_STEPS_PER_EPOCH"),
          "flash_attention": None, "traceback_filtering": True, "unsafe_deserialization": False}


def _cap(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    _flags[name] = value


def set_max_epochs(max_epochs):
    """Cap the epochs of every fit (None: no cap); for debugging, as Keras's."""
    _cap("max_epochs", max_epochs)


def max_epochs():
    return _flags["max_epochs"]


def set_max_steps_per_epoch(max_steps_per_epoch):
    """Cap the steps of each epoch of fit / evaluate / predict (None: no cap)."""
    _cap("max_steps_per_epoch", max_steps_per_epoch)


def max_steps_per_epoch():
    return _flags["max_steps_per_epoch"]


def capped_epochs(epochs):
    cap = _flags["max_epochs"]
    return epochs if cap is None or epochs is None else min(epochs, cap)


def capped_steps(steps):
    """steps (None: the whole data) under max_steps_per_epoch, with Keras's warning when it cuts them."""
    cap = _flags["max_steps_per_epoch"]
    if cap is not None and (not steps or cap < steps):
        warnings.warn(f"Limiting steps_per_epoch to {cap}", stacklevel=3)
        return cap
    return steps


def enable_flash_attention():
    """Keras's flag; boundfit's attention layers always run its own fused kernel, so this changes nothing."""
    _flags["flash_attention"] = True


def disable_flash_attention():
    _flags["flash_attention"] = False


def is_flash_attention_enabled():
    """None (the default: automatic, as Keras), or what enable / disable_flash_attention set."""
    return _flags["flash_attention"]


def enable_traceback_filtering():
    """Keras's flag (Keras hides its own frames from tracebacks; boundfit raises from the user's call)."""
    _flags["traceback_filtering"] = True


def disable_traceback_filtering():
    _flags["traceback_filtering"] = False


def is_traceback_filtering_enabled():
    return _flags["traceback_filtering"]


def enable_unsafe_deserialization():
    """Keras's flag for loading Lambda bytecode from files. boundfit never runs code from a file, so it changes
    nothing: a .keras file's Lambda is refused by name either way (pass the function in custom_objects)."""
    _flags["unsafe_deserialization"] = True


def is_nnx_enabled():
    """Flax NNX is a JAX-backend feature; boundfit has none."""
    return False


def set_backend(backend_name):
    """Refused: Keras reloads itself with another backend; boundfit is its own backend."""
    if backend_name != "boundfit":
        raise NotImplementedError(f"set_backend({backend_name!r}) is not supported by boundfit: it is its own "
                                  "backend ('boundfit'); to run the program on another backend, import keras instead")


def enable_tf32():
    """Let float32 GEMMs and convolutions on CUDA use TF32 tensor cores (the default, as JAX's default precision)."""
    _core.set_tf32(True)


def disable_tf32():
    """Exact float32 GEMMs and convolutions on CUDA (as JAX's precision='highest')."""
    _core.set_tf32(False)


def is_tf32_enabled():
    """Whether float32 GEMMs and convolutions on CUDA may use TF32."""
    return bool(_core.get_tf32())
