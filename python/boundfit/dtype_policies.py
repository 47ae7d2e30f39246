"""keras.dtype_policies: the float policies (DTypePolicy, its alias FloatDTypePolicy) and get / serialize /
deserialize; Keras's quantized policies (int8, int4, float8, GPTQ, AWQ) and DTypePolicyMap are not in boundfit."""

from .mixed_precision import DTypePolicy, FloatDTypePolicy, deserialize, get, serialize
from .refusal import refused

_QUANT = ("boundfit computes in float32 (bfloat16 / float16 under the mixed policies); quantized weights (int8, int4, "
          "float8, GPTQ, AWQ) are not implemented. Use a float policy")
AWQDTypePolicy, GPTQDTypePolicy, Int4DTypePolicy, QuantizedDTypePolicy, QuantizedFloat8DTypePolicy = (
    refused(f"keras.dtype_policies.{n}", _QUANT) for n in ("AWQDTypePolicy", "GPTQDTypePolicy", "Int4DTypePolicy",
                                                          "QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy"))
DTypePolicyMap = refused("keras.dtype_policies.DTypePolicyMap",
                         "a map of layer paths to policies is not read; give each layer its policy (dtype=...)")

__all__ = ["DTypePolicy", "FloatDTypePolicy", "deserialize", "get", "serialize"]
