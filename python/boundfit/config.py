"""keras.config: the process-wide settings a Keras program reads and sets (Keras 3's names where boundfit has them:
epsilon, floatx, image data format, the dtype policy), and the TF32 switch of the CUDA backend: float32 GEMMs and
convolutions on tensor cores with TF32 operands (10 mantissa bits), on by default as JAX's default precision uses
TF32 on GPUs; exact float32 after disable_tf32(). The CPU never uses TF32. A run keeps the setting it was planned
with (its cuDNN workspaces depend on it)."""

from . import _core
from .backend import backend, epsilon, floatx, image_data_format, set_epsilon, set_floatx, set_image_data_format  # noqa: F401
from .mixed_precision import dtype_policy, set_dtype_policy  # noqa: F401


def enable_tf32():
    """Let float32 GEMMs and convolutions on CUDA use TF32 tensor cores (the default, as JAX's default precision)."""
    _core.set_tf32(True)


def disable_tf32():
    """Exact float32 GEMMs and convolutions on CUDA (as JAX's precision='highest')."""
    _core.set_tf32(False)


def is_tf32_enabled():
    """Whether float32 GEMMs and convolutions on CUDA may use TF32."""
    return bool(_core.get_tf32())
