"""keras.dtype_policies: the float policies (DTypePolicy, its alias FloatDTypePolicy) and get / serialize /
deserialize; Keras's quantized policies (int8, int4, float8, GPTQ, AWQ) and DTypePolicyMap are not in boundfit."""

from .mixed_precision import DTypePolicy, FloatDTypePolicy, deserialize, get, serialize

__all__ = ["DTypePolicy", "FloatDTypePolicy", "deserialize", "get", "serialize"]
