"""EinsumDense as Keras 3 defines it (einsum(equation, x, kernel) + bias,
then the activation), composed from the engine's primitives on the map of
einsum_map.py: its kernel is a Dense's (K, N) matrix (Dense takes the last
axis of any rank), Keras's kernel shape in files and get_weights(); its bias
that Dense's where it lies on the new axes in the kernel's order, else a
weight of Keras's bias shape added with broadcasting. Weights in Keras's
order: kernel, bias. lora_rank and quantization are refused by name."""

from .. import activations, constraints, initializers, regularizers
from .args import _weight_options
from .compose import KerasShapedWeights, weight
from .core import Activation, Dense
from .einsum_map import apply, einsum_map, is_identity
from .emath import Binary
from .layer import Layer, keras_config


class EinsumDense(KerasShapedWeights, Layer):
    """Keras 3's `EinsumDense(equation, output_shape, activation=None, bias_axes=None, ...)`: einsum(equation,
    inputs, kernel) + bias, for the equations einsum_map.py maps onto a matrix product ('ab,bc->ac',
    'abc,cd->abd', 'abc,cde->abde', '...b,bc->...c', ...); others are refused naming the equation."""
    _base = "einsum_dense"

    def __init__(self, equation, output_shape, activation=None, bias_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None, gptq_unpacked_column_size=None,
                 quantization_config=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(equation, str):
            raise ValueError(f"EinsumDense: equation must be a string such as 'abc,cd->abd', got {equation!r}")
        for arg, v in (("lora_rank", lora_rank), ("lora_alpha", lora_alpha),
                       ("gptq_unpacked_column_size", gptq_unpacked_column_size),
                       ("quantization_config", quantization_config)):
            if v is not None:
                raise NotImplementedError(f"EinsumDense: {arg}={v!r} is not supported by boundfit (LoRA and "
                                          "quantized kernels); train the full kernel (leave it None)")
        shape = (output_shape,) if isinstance(output_shape, int) else output_shape
        if not isinstance(shape, (list, tuple)) or not all(
                d is None or isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise ValueError(f"EinsumDense: output_shape must be an int or a tuple of ints > 0 and None, got "
                             f"{output_shape!r}")
        if bias_axes is not None and not isinstance(bias_axes, str):
            raise ValueError(f"EinsumDense: bias_axes must be None or a string of output labels, got {bias_axes!r}")
        self.equation, self.partial_output_shape, self.bias_axes = equation, tuple(shape), bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        _weight_options(self, kernel_regularizer, bias_regularizer, self.activity_regularizer, kernel_constraint,
                        bias_constraint)   # Dense's checks (the activity regularizer is the base Layer's)

    def _bias_shape(self, mp):
        """Keras's bias shape: the output's labels from the first bias axis on, 1 where not a bias axis"""
        O = mp.out_labels
        for c in self.bias_axes:
            if c not in O:
                raise ValueError(f"EinsumDense {self.name!r}: bias axis {c!r} is not in the output {O!r}")
        tail = O[min(O.find(c) for c in self.bias_axes):]
        return tail, tuple(mp.out_dims.get(c) if c in self.bias_axes else 1 for c in tail)

    def build(self, input_shape):
        who = f"EinsumDense {self.name!r}"
        mp = self._map = einsum_map(who, self.equation, tuple(input_shape)[1:], self.partial_output_shape)
        if not mp.kernel_order:
            raise NotImplementedError(f"{who}: the kernel of {self.equation!r} ({mp.kernel_labels!r}) puts a new "
                                      "output axis before a contracted one; boundfit keeps an EinsumDense kernel as "
                                      "(contracted axes..., new axes...): write the kernel's labels in that order")
        tail, bias_shape = self._bias_shape(mp) if self.bias_axes else ("", None)
        if bias_shape is not None and None in bias_shape:
            raise ValueError(f"{who}: bias axes {self.bias_axes!r} need known sizes, got {bias_shape}")
        new_labels = mp.kernel_labels[len(mp.kernel_labels) - len(mp.new):]
        in_dense = bias_shape is not None and tail == new_labels and set(tail) <= set(self.bias_axes) \
            and is_identity(mp.out_perm)
        fused = (bias_shape is None or in_dense) and activations.function_of(self.activation) is None
        self.dense = Dense(mp.N, activation=self.activation if fused else None, use_bias=in_dense,
                           kernel_initializer=self.kernel_initializer, bias_initializer=self.bias_initializer,
                           kernel_regularizer=self.kernel_regularizer, bias_regularizer=self.bias_regularizer,
                           kernel_constraint=self.kernel_constraint, bias_constraint=self.bias_constraint,
                           name=f"{self.name}_dense")
        self.dense._engine_shapes = [(mp.K, mp.N)] + ([(mp.N,)] if in_dense else [])
        self.dense._keras_var_shapes = [mp.kernel_shape] + ([bias_shape] if in_dense else [])
        self._bias = None
        if bias_shape is not None and not in_dense:
            if len(bias_shape) > 3:
                raise NotImplementedError(f"{who}: a bias of {len(bias_shape)} axes {bias_shape}; boundfit adds a "
                                          "bias of at most 3")
            self._bias = weight(self, "bias", bias_shape, self.bias_initializer, self.bias_regularizer,
                               self.bias_constraint)
        self._late_activation = None if fused else self.activation

    def call(self, inputs):
        y = apply(f"EinsumDense {self.name!r}", inputs, self._map, self.dense)
        if self._bias is not None:
            y = Binary("add")([y, self._bias(y)])
        late = self._late_activation
        if late is not None and activations.function_of(late) is not None:
            y = activations.function_of(late)(y)   # a function activation, traced through keras.ops
        elif late is not None and activations.get_id(late) != activations.LINEAR:
            y = Activation(late)(y)
        return y


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(EinsumDense)
def _einsum_dense_config(l):
    return dict(output_shape=tuple(l.partial_output_shape), equation=l.equation,
                activation=activations.serialize(l.activation), bias_axes=l.bias_axes,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer),
                activity_regularizer=regularizers.serialize(l.activity_regularizer),
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint), quantization_config=None)
