"""boundfit: Keras-like training whose fit() never kills the Python process.

Before the first step, fit() knows the exact peak memory of the run and checks
it against the budget; a run that does not fit raises MemoryBudgetError with
what is needed, what is there and what would fit."""

import ctypes as _ctypes
import importlib as _importlib
import os as _os


try:
    import scipy_openblas32 as _ob
except ImportError:
    _ob = None


def _preload_openblas():
    # the C core links libscipy_openblas from the scipy-openblas32 wheel; load
    # it by path so the extension resolves it without LD_LIBRARY_PATH
    if _ob is None:
        return
    try:
        lib = _os.path.join(_ob.get_lib_dir(), _ob.get_library() + ".so")
        if not _os.path.exists(lib):
            lib = _os.path.join(_ob.get_lib_dir(), "lib" + _ob.get_library() + ".so")
        _ctypes.CDLL(lib, mode=_ctypes.RTLD_GLOBAL)
    except OSError:
        pass


_preload_openblas()

from . import _core  # noqa: E402
from . import activations, backend, callbacks, constraints, initializers, layers, losses, metrics  # noqa: E402
from . import optimizers, preprocessing, regularizers, sizes, utils  # noqa: E402
from . import config, dtype_policies, mixed_precision  # noqa: E402  (keras.config, .mixed_precision, .dtype_policies)
from . import engine, memory, models, runtime, saving  # noqa: E402
from . import datasets  # noqa: E402  (keras.datasets: small data sets shipped in the package)
from . import applications  # noqa: E402  (keras.applications: the image models, built as Keras builds them)
from . import ops  # noqa: E402  (keras.ops; gives symbolic tensors their operators)  (all loaded now: a first fit imports nothing)
from . import random  # noqa: E402  (keras.random on arrays)
from . import tree  # noqa: E402  (keras.tree: nested structures)
from .layers.variable import Variable  # noqa: E402  (keras.Variable: a value, or a custom layer's weight)
from . import visualization  # noqa: E402  (keras.visualization: drawing boxes and masks, galleries)
from ._version import __version__  # noqa: E402
from .diagnose import diagnose  # noqa: E402
from .engine import data  # noqa: E402
from .engine.plan import MemoryPlan  # noqa: E402
from .errors import BoundfitError, DataError, DeviceError, MemoryBudgetError, NonFiniteError  # noqa: E402
from .layers import Input  # noqa: E402
from .models import Model, Sequential, load_model  # noqa: E402
from .runtime.budget import set_memory_limit  # noqa: E402
from .runtime.cuda_libs import wheel_libraries as _wheel_libraries  # noqa: E402
from .runtime.devices import device, set_default_device  # noqa: E402
from . import distribute  # noqa: E402
from . import distribute as distribution  # noqa: E402  (Keras 3's keras.distribution)
# keras's top-level names for the base classes and the tensor type
from .constraints import Constraint  # noqa: E402,F401
from .dtype_policies import DTypePolicy, FloatDTypePolicy  # noqa: E402,F401
from .initializers import Initializer  # noqa: E402,F401
from .layers import InputSpec, Layer  # noqa: E402,F401
from .layers.node import KerasTensor  # noqa: E402,F401
from .losses import Loss  # noqa: E402,F401
from .metrics import Metric  # noqa: E402,F401
from .optimizers import Optimizer  # noqa: E402,F401
from .regularizers import Regularizer  # noqa: E402,F401


def version():
    """boundfit's version (keras.version() gives Keras's)."""
    return __version__
from .distribute import DistributedError  # noqa: E402
from .refusal import refused as _refused, refused_function as _refused_function  # noqa: E402
_SYMBOLIC = "boundfit traces Keras layers and keras.ops into its own graph; Keras's symbolic-op machinery is not exposed"
Function, Operation = (_refused(f"keras.{n}", _SYMBOLIC) for n in ("Function", "Operation"))
StatelessScope, SymbolicScope = (_refused(f"keras.{n}", _SYMBOLIC) for n in ("StatelessScope", "SymbolicScope"))
remat = _refused_function("keras.remat", "rematerialization is not implemented: the memory plan keeps "
                          "activations for backward; lower batch_size or use fit(micro_batch=...) to fit a budget")
RematScope = _refused("keras.RematScope", "rematerialization is not implemented: the memory plan keeps activations "
                      "for backward; lower batch_size or use fit(micro_batch=...) to fit a budget")
Quantizer = _refused("keras.Quantizer", "quantization is not implemented (float32, or the mixed float policies)")
name_scope = _refused("keras.name_scope", "weights are named by their layers (layer.name / weight name)")

_core.set_module_dir(_os.path.dirname(_os.path.abspath(__file__)), ":".join(_wheel_libraries()))
__all__ = ["Input", "Sequential", "Model", "layers", "initializers", "regularizers", "constraints", "losses", "metrics",
           "optimizers", "activations", "config", "mixed_precision", "dtype_policies", "callbacks", "utils", "preprocessing", "models", "datasets", "data", "ops", "random", "saving", "load_model", "set_memory_limit", "memory", "visualization",
           "set_default_device", "diagnose", "MemoryPlan", "BoundfitError",
           "MemoryBudgetError", "DeviceError", "NonFiniteError", "DataError"]


def __getattr__(name):
    """keras.wrappers on first use: it imports scikit-learn (an optional dependency, slow to import)."""
    if name == "wrappers":
        return _importlib.import_module(".wrappers", __name__)
    raise AttributeError(f"module 'boundfit' has no attribute {name!r}")
