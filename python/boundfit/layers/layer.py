"""Keras-style layers. Each describes itself as a spec dict for the engine
(kind ids from the engine, _core.LAYER_KINDS); the engine owns weights and compute. Calling a
layer on symbolic tensors (boundfit.Input) records a node of a graph and
returns a symbolic tensor (node.py); its shape is inferred at the call, by
the engine's own inference (_core.output_shape, as when a model is built),
so a bad graph fails where it is written, as in Keras."""

import copy
import inspect

import numpy as np

from .. import _core, initializers, mixed_precision, regularizers
from ..session import LAYER_NAMES as _counters, snake_case
from .args import _is_size
from .eager import build_alone, call_eagerly, is_array_call
from .input_spec import check as check_input_spec
from .node import KerasTensor, call_layer, infer_shape, inference_pass, trace_layer, tracing_anchor
from .variable import KERAS_ATTRS, Variable, own_variables, variables_of

__all__ = ["Layer", "Variable", "keras_config", "keras_object", "layer_object", "layer_config", "record_added_loss"]

_DTYPE = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}
_KERAS_CONFIGS = {}   # layer class -> fn(layer): its Keras 3 config keys beyond name / trainable / dtype
_CONSTANT = {}        # "cls": the Const layer (reshaping.py), for arrays a layer is called on in a traced call()
_MASKS = {}           # "call": a custom layer's call with Keras's masks (custom_masks.py)


def keras_object(module, class_name, config):
    """A Keras 3 serialized object (module / class_name / config / registered_name)."""
    return {"module": module, "class_name": class_name, "config": config, "registered_name": None}


def layer_object(layer, config):
    """A layer's Keras 3 entry: keras.layers' class, or for a layer Keras defines elsewhere (an application's own
    layer, `_keras_module`: keras.src.applications.convnext's LayerScale) that module and its registered name."""
    module = getattr(type(layer), "_keras_module", None)
    if module is None:
        return keras_object("keras.layers", type(layer).__name__, config)
    return dict(keras_object(module, type(layer).__name__, config), registered_name=type(layer).__name__)


def keras_config(*classes):
    """Decorator: fn(layer) -> dict gives the Keras 3 config of exactly these
    classes (not their subclasses). Registering is what makes a layer class
    saveable to and loadable from Keras files (saving/registry.py)."""
    def register(fn):
        for cls in classes:
            _KERAS_CONFIGS[cls] = fn
        return fn
    return register


def keras_layer_classes():
    """The layer classes with a Keras 3 config, in registration order."""
    return list(_KERAS_CONFIGS)


def layer_dtype(layer):
    """A layer's dtype policy as Keras 3 writes it in the layer's config."""
    return mixed_precision.serialize(layer.__dict__.get("_dtype_policy") or mixed_precision.DTypePolicy("float32"))


def layer_config(layer):
    """The Keras 3 `config` dict of a boundfit layer (layer.get_config())."""
    fn = _KERAS_CONFIGS.get(type(layer))
    if fn is None and layer._custom():   # a custom layer: Keras's base config, which its get_config extends
        return dict(name=layer.name, trainable=bool(layer.trainable), dtype=layer_dtype(layer))
    if fn is None:
        raise ValueError(f"layer {layer.name!r}: {type(layer).__name__} has no Keras serialization in boundfit"
                         + getattr(layer, "_no_keras_file", ""))
    cfg = dict(name=layer.name) if getattr(type(layer), "_keras_name_only_config", False) else \
        dict(name=layer.name, trainable=bool(layer.trainable), dtype=layer_dtype(layer))   # (Keras's Pipeline: name)
    cfg.update(fn(layer))   # may set its own dtype (Hashing's int64 policy)
    if getattr(layer, "activity_regularizer", None) is not None:   # Keras writes it when set
        cfg["activity_regularizer"] = regularizers.serialize(layer.activity_regularizer)
    for k in getattr(layer, "_keras_omit", ()):   # base keys Keras's config of the class lacks
        cfg.pop(k, None)
    return cfg


def record_added_loss(owner, loss):
    """add_loss(loss) in the traced call() of a layer or a subclassed model: kept on the owner. A call() that
    takes `training` is traced twice (node.trace_modes): the inference pass's value is marked, and the training
    graph adds the training pass's (models/loss_graph.py), once."""
    owner.__dict__.setdefault("_added_losses", []).append(loss)
    if inference_pass():
        owner.__dict__.setdefault("_inference_losses", set()).add(id(loss))


def _first_argument(layer, args, kwargs):
    """The inputs of a layer call, given first or by the name of call()'s first parameter (Keras's
    `layer(logits=x, targets=t)`), and the other positional arguments"""
    if args:
        return args[0], args[1:]
    params = [p for p in inspect.signature(layer.call).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if params and params[0].name in kwargs:
        return kwargs.pop(params[0].name), ()
    raise TypeError(f"{layer.name}: called without inputs (the first argument of call(), "
                    f"{params[0].name if params else 'inputs'!r})")


class Layer:
    """Keras 3's `Layer`: the base of every layer; subclass it with `build`, `add_weight` and `call` (traced on
    symbolic inputs) for a custom layer."""
    _base = "layer"

    def __init__(self, name=None, input_shape=None, trainable=True, activity_regularizer=None, **kwargs):
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown arguments {sorted(kwargs)}")
        if name is None:
            base = self._base if "_base" in type(self).__dict__ or type(self) is Layer else snake_case(
                type(self).__name__)   # a custom layer: Keras's name from its class
            n = _counters.get(base, 0)
            _counters[base] = n + 1
            name = base if n == 0 else f"{base}_{n}"
        self.name = name
        self._dtype_policy = mixed_precision.layer_policy(dtype, name)
        self.input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._trainable = bool(trainable)
        self._model = None      # the model whose engine holds this layer's newest weights
        self._inbound = []      # nodes: one per call on symbolic tensors
        self._weight_dim = None  # last input dimension the weights were made for
        self.built = False       # Keras's flag: True once a model (or build()) made its weights
        # Keras adds activity_regularizer(output) / batch size to the loss (models/loss_graph.py)
        self.activity_regularizer = regularizers.get(activity_regularizer, "activity_regularizer")

    def spec(self):
        raise NotImplementedError

    # ---- mixed precision (keras.mixed_precision): the policy; variables stay float32 ----
    @property
    def dtype_policy(self):
        """The layer's DTypePolicy (its dtype argument, else the global policy when it was made)."""
        return self.__dict__.get("_dtype_policy") or mixed_precision.DTypePolicy("float32")

    @dtype_policy.setter
    def dtype_policy(self, value):
        self._dtype_policy = mixed_precision.layer_policy(value if value is not None else "float32", self.name)

    @property
    def dtype(self):
        """The dtype of the layer's variables (Keras 3: the policy's variable_dtype, float32)."""
        return self.dtype_policy.variable_dtype

    @property
    def compute_dtype(self):
        """The dtype the layer computes in: 'bfloat16' under mixed_bfloat16, else 'float32'."""
        return self.dtype_policy.compute_dtype

    @property
    def variable_dtype(self):
        """The dtype of the layer's variables: float32."""
        return self.dtype_policy.variable_dtype

    # ---- custom layers: subclasses that define call() (and build(), get_config()) ----
    def call(self, inputs, *args, **kwargs):
        """A custom layer's computation on symbolic tensors, in layers and
        keras.ops (boundfit.ops); built-in layers compute in the engine. A
        built-in layer given a function activation (activations.layer_activation)
        is its linear self, then the function."""
        fn = self.__dict__.get("_act_fn")
        if fn is not None:
            inner = self._act_linear()
            return fn(inner(inputs) if inner is not None else inputs)
        raise NotImplementedError(f"{type(self).__name__} defines no call()")

    def build(self, input_shape=None):
        """Keras's build(input_shape): a custom layer makes its sublayers' or
        own state here; called once, before the first call(). A built-in
        layer given a shape makes its weights (layers/eager.py)."""
        if input_shape is not None and not self._custom() and self._model is None:
            build_alone(self, input_shape)
        self.built = True

    def add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, regularizer=None,
                   constraint=None, name=None, **kwargs):
        """A custom layer's own weight (Keras's add_weight): a Variable that
        call() uses through keras.ops.matmul(x, variable) (ops.py), the one
        use boundfit traces yet; initializer defaults to glorot_uniform as
        in Keras."""
        if shape is None or not all(_is_size(d) for d in tuple(shape)):
            raise ValueError(f"layer {self.name!r}: add_weight shape must be a tuple of positive ints below 2**31, "
                             f"got {shape!r}")
        shape = tuple(int(d) for d in shape)
        own = self.__dict__.setdefault("_own_variables", [])
        v = Variable.of_layer(self, tuple(shape), initializers.get(initializer or "glorot_uniform", "initializer"),
                              regularizer, constraint, trainable, name or f"variable_{len(own)}")
        own.append(v)
        return v

    def add_loss(self, loss):
        """Keras's add_loss(loss) inside call(): a loss term computed from the
        call's tensors with keras.ops (a mean over the batch, ops.mean), added
        to the training loss unweighted (models/loss_graph.py)."""
        record_added_loss(self, loss)
        anchor = tracing_anchor()   # the call's input knows the layer (a call that makes no node is found so)
        if anchor is not None and self not in anchor.__dict__.setdefault("_loss_layers", []):
            anchor.__dict__["_loss_layers"].append(self)

    @property
    def losses(self):
        """The values add_loss() was given in this layer's traced call()s."""
        return list(self.__dict__.get("_added_losses", []))

    @property
    def supports_masking(self):
        """Keras's flag: a custom layer's outputs get compute_mask()'s masks (by default, its input's mask); True
        when the class defines compute_mask (layers/custom_masks.py)."""
        return self.__dict__.get("_supports_masking", type(self).compute_mask is not Layer.compute_mask)

    @supports_masking.setter
    def supports_masking(self, value):
        self.__dict__["_supports_masking"] = bool(value)

    def compute_mask(self, inputs, previous_mask=None):
        """Keras's default: the output's mask is the input's."""
        return previous_mask

    def _custom(self):
        return type(self).call is not Layer.call or "_act_fn" in self.__dict__

    def _act_linear(self):
        """The layer with a function activation as its engine part (a copy of it, activation linear), made once;
        None for an Activation layer (the function alone)."""
        if "_act_inner" not in self.__dict__:
            inner = None
            if not self._act_alone:
                inner = copy.copy(self)
                del inner.__dict__["_act_fn"]
                inner.name, inner._inbound, inner._model = f"{self.name}_linear", [], None
            self.__dict__["_act_inner"] = inner
        return self.__dict__["_act_inner"]

    def _keras_composite(self):
        """A Keras layer boundfit traces into its sublayers (SeparableConv2D): a
        call() of its own and a Keras config; Keras files hold it as one layer."""
        return self._custom() and type(self) in _KERAS_CONFIGS

    def _sublayers(self):
        """The layers a custom layer holds as attributes (lists too), in assignment order."""
        out = []
        if "_act_fn" in self.__dict__:
            self._act_linear()
        for k, v in vars(self).items():
            if k == "_model":
                continue
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(x, Layer) or hasattr(x, "_own_layers"):
                    out.append(x)
        return out

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self):
        """Keras 3's config of this layer (registered with keras_config in its family's module)."""
        return layer_config(self)

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        if self._custom():
            for l in self._sublayers():
                l.trainable = value

    # ---- graphs ----
    _n_inputs = 1  # merge layers: "many"
    _has_weights = False
    _act_alone = False   # Activation: a function activation is the layer's whole call (_act_linear)
    _mode_dependent = False  # computes differently in training (Dropout, BatchNormalization...): `training` counts

    def _check_train_mode(self, train_mode, compiling=False):
        """A call given training= that fixes this layer's mode (node.train_mode: 1 training, 2 inference): raises
        where boundfit cannot run it so; checked at the call and again when a model is compiled for the engine
        (compiling), as trainable may change in between."""

    # takes one number per sample (a per-sample shape ()): elementwise layers, Embedding, Reshape
    _scalar_ok = False
    # draws random values in training (Dropout, noise, augmentation): one draw per sample
    _random = False
    # its output has no batch axis (a reduction over the batch: reduce.Reduce)
    _nobatch_out = False
    # Keras's image layers: Keras records training=True on each call (their call()'s default), which says
    # nothing about the model; reading a Keras file, boundfit runs them in the run's mode as Keras does
    _keras_records_training = False

    def compute_output_shape(self, input_shape):
        """Keras's: the output shape for `input_shape` (a list of shapes for a layer of several inputs), each
        with its batch axis first, passed through. The engine infers it (csrc/core/layers/: the kind's infer),
        as when a model is built; a dimension given as None (a variable length) is None where the output's
        depends on it."""
        if "_act_fn" in self.__dict__ and self._act_linear() is not None:
            return self._act_linear().compute_output_shape(input_shape)   # (an activation keeping its shape)
        if self._custom():   # traced into its layers, not a kind of the engine
            return self._traced_output_shape(input_shape)
        many = len(input_shape) > 0 and all(isinstance(s, (tuple, list)) for s in input_shape)
        shapes = [tuple(s)[1:] for s in input_shape] if many else [tuple(input_shape)[1:]]
        self._before_infer(shapes)
        spec = self.spec()
        try:
            out = infer_shape(lambda ps: _core.output_shape(spec, ps), shapes)
        except ValueError as e:   # the engine's message, with the shapes as the caller wrote them
            e.args = (f"{e.args[0]} (called on {', '.join(str((None,) + s) for s in shapes)})",) + e.args[1:]
            raise
        return (tuple(input_shape[0] if many else input_shape) or (None,))[:1] + tuple(out)

    def _traced_output_shape(self, input_shape):
        """A Keras composite without weights of its own (RepeatVector, Cropping2D): the shape its call() traces on
        a symbolic input of `input_shape`, the automatic names its sublayers took given back; another custom
        layer: the shape it is given, as before."""
        if not self._keras_composite() or type(self).build is not Layer.build:
            return input_shape
        many = len(input_shape) > 0 and all(isinstance(s, (tuple, list)) for s in input_shape)
        xs = [KerasTensor(tuple(s)[1:]) for s in (input_shape if many else [input_shape])]
        names = dict(_counters)
        try:
            out = self.call(xs if many else xs[0])
        finally:
            _counters.clear()
            _counters.update(names)
        return (tuple(input_shape[0] if many else input_shape) or (None,))[:1] + tuple(out._ps)

    def _before_infer(self, shapes):
        """Before the engine infers its shape, with its inputs' per-sample shapes: what its kind cannot check
        (a 1D pooling's rank: the engine's kind pools 1 x T images too) or a spec that depends on them
        (Concatenate's axis, from Keras's)."""

    def __call__(self, *args, **kwargs):
        inputs, args = _first_argument(self, args, kwargs)
        spec = self.__dict__.get("input_spec")
        if spec is not None:   # Keras applies a layer's input_spec to its first argument (layers/input_spec.py)
            check_input_spec(spec, inputs, self.name)
        if not args and is_array_call(inputs):   # on arrays, outside any graph: computed now (layers/eager.py)
            return call_eagerly(self, inputs, **kwargs)
        if self._custom():
            self._scope_sublayers()
            return _MASKS["call"](self, inputs, args, kwargs)
        if args:
            raise TypeError(f"{self.name}: unexpected positional arguments after the inputs")
        if tracing_anchor() is not None and isinstance(inputs, np.ndarray) and \
                inputs.dtype.kind in "biuf":   # an array inside a custom layer's call(): a constant; a leading
            a = inputs[0] if inputs.ndim >= 2 and inputs.shape[0] == 1 else inputs   # axis of 1 is a batch of
            inputs = _CONSTANT["cls"](np.asarray(a))(tracing_anchor())   # one (expand_dims(arange(n), 0): ViT's)
        return call_layer(self, inputs, **kwargs)

    def _check_call_shape(self, shape):
        if self._has_weights:
            if shape[-1] is None:
                raise ValueError(f"layer {self.name!r} ({type(self).__name__}) needs a known last dimension for its "
                                 f"weights, got input shape {(None,) + tuple(shape)}; only the other axes may be "
                                 "variable (None)")
            if self._weight_dim is not None and shape[-1] != self._weight_dim:
                raise ValueError(f"layer {self.name!r} was built for inputs with last dimension {self._weight_dim} "
                                 f"and is called on shape {(None,) + tuple(shape)}; a layer called twice shares its "
                                 "weights, so its inputs must agree")
            self._weight_dim = shape[-1]

    # ---- weights (held by the engine of the model that last used the layer) ----
    def _scope_sublayers(self):
        """Keras paths the variables a layer's sublayers make inside its call under the layer's path; its
        standalone keras.Variables become its own (variable.own_variables)"""
        own_variables(self)
        path = "/".join(p for p in (self.__dict__.get("_keras_scope", ""), self.name) if p)
        for l in self._sublayers():
            l.__dict__.setdefault("_keras_scope", path)

    def _keras_var_scope(self, pname):
        """Keras's name (with the sublayer scope Keras keeps it under) of the engine's weight `pname`"""
        name = getattr(self, "_keras_var_names", {}).get(pname, pname)
        prefix = self.__dict__.get("_keras_var_prefix")
        return f"{prefix}/{name}" if prefix else name

    def __getattr__(self, name):
        """Keras's variable attributes of a built-in layer (layer.kernel, bn.moving_mean, emb.embeddings): its
        Variable of that name (layers/variable.py)"""
        if name in KERAS_ATTRS and (not self._custom() or self._keras_composite() or "_act_fn" in self.__dict__):
            for v in variables_of(self):
                if getattr(v, "_scope", None) == name and v.layer is self:
                    return v
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_weights(self):
        if self._custom():   # Keras's order: its own variables, then the sublayers' weights in assignment order
            return [v.numpy() for v in own_variables(self)] + [w for l in self._sublayers() for w in l.get_weights()]
        if self._model is None:
            return []
        return self._model._layer_weights(self)

    def set_weights(self, weights):
        if self._custom():
            weights = list(weights)
            subs = [(v, 1) for v in own_variables(self)] + [(l, len(l.get_weights())) for l in self._sublayers()]
            if len(weights) != sum(n for _, n in subs):
                raise ValueError(f"layer {self.name!r} has {sum(n for _, n in subs)} weights, got {len(weights)}")
            k = 0
            for l, n in subs:
                if n:
                    l.set_weights(weights[k:k + n])
                k += n
            return
        if self._model is None:
            raise ValueError(f"layer {self.name!r} is not built; add it to a model with an input shape first")
        self._model._set_layer_weights(self, weights)

    @property
    def weights(self):
        """The layer's Variables in Keras 3's order: own trainable, own non-trainable, then its sublayers'; live
        views of the engine's weights (numpy(), assign)"""
        return variables_of(self)

    variables = weights

    @property
    def trainable_weights(self):
        return [v for v in self.weights if v.trainable] if self.trainable else []

    @property
    def non_trainable_weights(self):
        return [v for v in self.weights if not v.trainable] if self.trainable else self.weights

    trainable_variables, non_trainable_variables = trainable_weights, non_trainable_weights

    def count_params(self):
        return sum(int(w.size) for w in self.get_weights())

    @property
    def output_shape(self):
        return self._model._layer_output_shape(self) if self._model is not None else None

    def _first_call(self):
        """(inputs, outputs) of the layer's first call on symbolic tensors (a custom layer's traced call too)"""
        if self._inbound:
            return self._inbound[0].inputs, self._inbound[0].outputs
        traced = self.__dict__.get("_traced_calls")
        if not traced:
            raise AttributeError(f"layer {self.name!r} has never been called on a symbolic tensor")
        return traced[0]

    @property
    def input(self):
        """The symbolic input of the layer's first call (a list for several), as Keras's layer.input"""
        ins = self._first_call()[0]
        return ins[0] if len(ins) == 1 else list(ins)

    @property
    def output(self):
        outs = self._first_call()[1]
        return outs[0] if len(outs) == 1 else list(outs)  # several (return_state): a list, as Keras

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"
