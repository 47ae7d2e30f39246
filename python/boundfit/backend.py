"""keras.backend: the settings Keras programs read and set (epsilon, floatx,
image_data_format: boundfit runs in float32, channels_last, with Keras's
fuzz factor 1e-7, and refuses other values by name), dtype names, session
and name counters."""

from . import dtype_promotion
from .layers.node import KerasTensor
from .session import LAYER_NAMES, clear_session  # noqa: F401 - keras.backend's names

_ALLOWED_DTYPES = ("float16", "float32", "float64", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                   "int64", "bfloat16", "bool", "string", "float8_e4m3fn", "float8_e5m2", "complex64", "complex128")
_PYTHON_DTYPES = {bool: "bool", int: "int32", float: "float32", str: "string", "int": "int32", complex: "complex64"}


def epsilon():
    """Keras's fuzz factor, 1e-7."""
    return 1e-7


def floatx():
    """The default float type, 'float32' (the engine computes in float32)."""
    return "float32"


def image_data_format():
    """The image layout, 'channels_last'."""
    return "channels_last"


def backend():
    """The backend's name, 'boundfit'."""
    return "boundfit"


def _fixed(arg, value, allowed, why):
    if value != allowed:
        raise NotImplementedError(f"{arg}={value!r} is not supported by boundfit: {why} (only {allowed!r})")


def set_epsilon(value):
    """Keras's setter; boundfit's losses and layers use 1e-7 in their kernels, so only that value is taken."""
    _fixed("set_epsilon", value, 1e-7, "its kernels compute with Keras's default fuzz factor")


def set_floatx(value):
    """Keras's setter; boundfit computes in float32 (for 16-bit activations use keras.mixed_precision)."""
    _fixed("set_floatx", value, "float32", "the engine computes in float32; for 16 bits use "
           "mixed_precision.set_global_policy('mixed_bfloat16')")


def set_image_data_format(data_format):
    """Keras's setter; boundfit's default layout is channels_last (layers that take data_format= say so)."""
    _fixed("set_image_data_format", data_format, "channels_last",
           "its default layout is channels_last; pass data_format= to the layers that take it")


def standardize_dtype(dtype):
    """Keras's dtype name: None -> floatx(), Python types and NumPy dtypes by name; ValueError for others."""
    if dtype is None:
        return floatx()
    dtype = _PYTHON_DTYPES.get(dtype, dtype) if isinstance(dtype, (type, str)) else dtype
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or dtype
    if name not in _ALLOWED_DTYPES:
        raise ValueError(f"Invalid dtype: {dtype}")
    return name


def result_type(*dtypes):
    """keras.backend.result_type: the dtype Keras 3 (JAX backend) gives an operation on these dtypes (None is
    floatx(); Python int and float are weak types); ValueError where there is no promotion path."""
    return dtype_promotion.result_type(dtypes, floatx(), standardize_dtype)


def is_float_dtype(dtype):
    dtype = standardize_dtype(dtype)
    return dtype.startswith(("float", "bfloat"))


def is_int_dtype(dtype):
    dtype = standardize_dtype(dtype)
    return dtype.startswith(("int", "uint"))


def is_keras_tensor(x):
    """Whether x is a symbolic tensor (from Input or a layer call)."""
    return isinstance(x, KerasTensor)


def get_uid(prefix=""):
    """Keras's counter per prefix (1 at the first call), shared with the automatic layer names."""
    LAYER_NAMES[prefix] = LAYER_NAMES.get(prefix, 0) + 1
    return LAYER_NAMES[prefix]
