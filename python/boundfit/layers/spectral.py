"""SpectralNormalization (Keras 3): the wrapped layer's kernel divided by its
largest singular value, estimated by power iteration from vector_u, which
moves once per training step. Composed as the wrapped layer's linear map
alone (a copy of it without bias or activation: its node owns the kernel),
then the engine's SPECNORM (csrc/core/layers/specnorm.c: / sigma, which it
computes from that node's kernel and differentiates into it; the bias; u),
then the activation. A Dense's, a convolution's and an Embedding's output
is linear in the kernel, so dividing the output by sigma is dividing the
kernel. As Keras's JAX backend: training normalizes, inference reads the raw
kernel (the normalized kernel Keras assigns in the step is not kept).
Weights in Keras's order: kernel, vector_u, bias; .keras files hold the
kernel and u in the layer's own vars and the kernel and bias in layer/vars."""

import copy

from .. import activations, initializers, regularizers, constraints
from .args import engine_kinds
from .conv import (Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose, DepthwiseConv1D,
                   DepthwiseConv2D)
from .core import Activation, Dense
from .embedding import Embedding
from .layer import Layer, keras_config
from .serialize import serialize
from .wrapper import Wrapper

SPECNORM, = engine_kinds("SPECNORM")
_TRANSPOSED = (Conv1DTranspose, Conv2DTranspose, Conv3DTranspose)
_WRAPPABLE = (Dense, Conv1D, Conv2D, Conv3D, DepthwiseConv1D, DepthwiseConv2D, Embedding) + _TRANSPOSED


class _SpecNormStep(Layer):
    """The engine's SPECNORM after the linear map (a graph piece of SpectralNormalization, not a Keras layer)."""
    _base = "spectral_normalization_step"
    _has_weights = True
    _mode_dependent = True

    def __init__(self, wrapped, power_iterations, cols, **kwargs):
        super().__init__(**kwargs)
        self.wrapped, self.power_iterations, self.cols = wrapped, power_iterations, cols
        self.use_bias = bool(getattr(wrapped, "use_bias", False))

    def _check_call_shape(self, shape):
        pass   # its input is the linear map's output

    def spec(self):
        w = self.wrapped
        bias = (getattr(w, "bias_initializer", None) or initializers.get("zeros"))
        return dict(kind=SPECNORM, name=self.name, power_iterations=self.power_iterations, kernel_cols=self.cols,
                    use_bias=int(self.use_bias),
                    inits=initializers._engine_specs(initializers.TruncatedNormal(stddev=0.02), bias),
                    regs=regularizers._engine_specs(None, getattr(w, "bias_regularizer", None) if self.use_bias
                                                    else None),
                    cons=constraints._engine_specs([(None, 2, "vector_u"), (getattr(w, "bias_constraint", None)
                                                                            if self.use_bias else None, 1,
                                                                            "bias_constraint")]))


class SpectralNormalization(Wrapper):
    """Keras 3's `SpectralNormalization(layer, power_iterations=1)`: wraps a Dense, a convolution (Conv1D/2D/3D,
    their transposes, DepthwiseConv1D/2D) or an Embedding; its kernel is divided by its spectral norm in training."""
    _base = "spectral_normalization"

    def __init__(self, layer, power_iterations=1, **kwargs):
        super().__init__(layer, **kwargs)
        if isinstance(power_iterations, bool) or not isinstance(power_iterations, int) or power_iterations < 1:
            raise ValueError(f"SpectralNormalization: power_iterations should be greater than zero, got "
                             f"power_iterations={power_iterations!r}")
        if type(layer) not in _WRAPPABLE:
            raise ValueError(f"SpectralNormalization: layer={type(layer).__name__} is not supported by boundfit; it "
                             f"wraps a layer whose output is linear in one kernel: "
                             f"{', '.join(c.__name__ for c in _WRAPPABLE)}")
        if getattr(layer, "activity_regularizer", None) is not None:
            raise ValueError("SpectralNormalization: the wrapped layer's activity_regularizer is not supported by "
                             "boundfit; give it to SpectralNormalization(..., activity_regularizer=) instead")
        self.power_iterations = power_iterations

    def build(self, input_shape):
        layer = self.layer
        lin = copy.copy(layer)   # the linear map: the wrapped layer without bias and activation, under its name
        for k in ("_act_fn", "_act_inner"):
            lin.__dict__.pop(k, None)
        lin._inbound, lin._model, lin._weight_dim = [], None, None
        if hasattr(layer, "activation"):
            lin.activation = activations.get_id("linear")
        if hasattr(layer, "use_bias"):
            lin.use_bias = False
        self.linear = lin
        cols = layer.output_dim if isinstance(layer, Embedding) else layer.depth_multiplier \
            if isinstance(layer, DepthwiseConv2D) else input_shape[-1] if isinstance(layer, _TRANSPOSED) \
            else layer.filters if hasattr(layer, "filters") else layer.units
        self.step = _SpecNormStep(layer, self.power_iterations, int(cols), name=f"{self.name}_step")
        lin._keras_var_prefix = layer.name   # Keras's paths: <wrapper>/<layer>/kernel, <wrapper>/vector_u, .../bias
        self.step._keras_var_names = {"bias": f"{layer.name}/bias"}
        act = getattr(layer, "activation", None)
        self._then_fn = layer.__dict__.get("_act_fn")   # a function activation, traced through keras.ops
        self._then = act if act is not None and activations.get_id(act) != activations.LINEAR else None
        self.built = True

    def call(self, inputs):
        y = self.step(self.linear(inputs))   # the step reads the run's training mode (specnorm.c)
        if self._then_fn is not None:
            return self._then_fn(y)
        return Activation(self._then)(y) if self._then is not None else y

    # get_weights: [kernel, vector_u, bias] (the sublayers' in order, Keras's); Keras files: the layer's own vars
    # [kernel, vector_u] (Keras tracks the wrapped kernel as its own too), layer/vars [kernel, bias]
    def _keras_var_groups(self, n):
        return [("vars", 2), ("layer/vars", n - 2)]

    def _to_keras_vars(self, ws):
        ws = list(ws)
        return [ws[0], ws[1], ws[0]] + ws[2:]

    def _from_keras_vars(self, got, want):
        got = list(got)
        return [got[2], got[1]] + got[3:]


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(SpectralNormalization)
def _spectral_normalization_config(l):
    return dict(layer=serialize(l.layer), power_iterations=l.power_iterations)
