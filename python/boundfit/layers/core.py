"""Dense, Activation, Identity, ActivityRegularization and Lambda."""

from .. import _core, activations, constraints, initializers, regularizers
from .args import _size, _weight_options, _weight_specs, engine_kinds
from .layer import Layer, keras_config

DENSE, ACTIVATION, UNARY = engine_kinds("DENSE ACTIVATION UNARY")
UNARY_OPS = _core.UNARY_OPS


class Dense(Layer):
    """Keras 3's `Dense(units, activation=None, use_bias=True, ...)`: activation(x @ kernel + bias) over the last axis
    of inputs of any rank."""
    _base = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                        bias_constraint)
        self.kernel_initializer = initializers.get(kernel_initializer, "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, "bias_initializer")
        self.units, self.use_bias = _size("Dense", "units", units), bool(use_bias)
        self.activation = activations.layer_activation(self, activation)

    _has_weights = True

    def spec(self):
        return dict(kind=DENSE, name=self.name, units=self.units, use_bias=int(self.use_bias), act=int(self.activation),
                    act_p=activations.params_of(self.activation),
                    inits=initializers._engine_specs(self.kernel_initializer, self.bias_initializer),
                    **_weight_specs(self, 2))


class Activation(Layer):
    """Keras 3's `Activation(activation)`: an activation (name or function) as a layer."""
    _scalar_ok = True
    _base = "activation"
    _act_alone = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self._eop = activations.elementwise_op(activation)   # hard_silu: the engine's elementwise op
        self.activation = self._eop or activations.layer_activation(self, activation)

    def spec(self):
        if self._eop:
            return dict(kind=UNARY, name=self.name, eop=UNARY_OPS.index(self._eop), eleft=0, eparam=0.0,
                        eparam2=0.0, eparam3=0.0)
        return dict(kind=ACTIVATION, name=self.name, act=int(self.activation),
                    act_p=activations.params_of(self.activation))


class Identity(Layer):
    """Keras 3's `Identity`: its input, unchanged (the engine's linear Activation, a view of its input)."""
    _scalar_ok = True
    _base = "identity"

    def spec(self):
        linear = activations.get_id("linear")
        return dict(kind=ACTIVATION, name=self.name, act=int(linear), act_p=activations.params_of(linear))


class ActivityRegularization(Identity):
    """Keras 3's `ActivityRegularization(l1=0.0, l2=0.0)`: its input unchanged, and l1 * sum|x| + l2 * sum x^2
    of it (per sample, averaged over the batch) added to the training loss, as any layer's activity_regularizer."""
    _base = "activity_regularization"
    _keras_omit = ("activity_regularizer",)   # Keras's config holds l1 and l2 instead

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        if "activity_regularizer" in kwargs:
            raise TypeError("ActivityRegularization: activity_regularizer is set from l1 and l2, not given")
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = self.activity_regularizer.l1, self.activity_regularizer.l2


class Lambda(Layer):
    """Keras's Lambda: function(inputs, **arguments) on the symbolic inputs,
    traced into the graph like a custom layer's call() (its keras.ops and
    layers become nodes; a file stores that graph, not the function)."""
    _base = "lambda"

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {type(function).__name__}")
        if mask is not None:
            raise ValueError("Lambda: mask= is not supported by boundfit")
        self.function, self.output_shape_arg, self.arguments = function, output_shape, dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Dense)
def _dense_config(l):
    return dict(units=l.units, activation=activations.layer_config_name(l), use_bias=l.use_bias,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer),
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint))


@keras_config(Activation)
def _activation_config(l):
    return dict(activation=l._eop or activations.layer_config_name(l))


@keras_config(Identity)
def _identity_config(l):
    return {}


@keras_config(ActivityRegularization)
def _activity_regularization_config(l):
    return dict(l1=l.l1, l2=l.l2)
