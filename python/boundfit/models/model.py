"""Models: the Keras model API over the engine (boundfit._core.Model).

`Model` is a graph of layer calls: functional (`Model(inputs, outputs)`),
subclassed (layers made in `__init__`, `call()` traced on symbolic
inputs, in both modes when it takes `training`) or `Sequential` (a chain, built the same way). Weights live in the
engine's host arena of the model that last used a layer (`layer._model`): a
model takes over the newest weights of its layers before it computes, so a
layer or a model shared between models sees one set of weights, as in Keras.
This class describes and reports; the engine computes. LossTrainer (below)
is the training graph of a model with a custom loss or losses its layers add."""

import numpy as np

from .. import graph, mixed_precision
from ..engine import data as data_mod
from ..layers import eager
from ..layers.eager import call_eagerly, is_array_call
from ..layers.input_layer import Input
from ..layers.layer import _counters
from . import loss_graph
from .building import Building
from .compiling import Compiling
from .engine_cache import EngineCache, ShapeBinding
from .fitting import Fitting
from .loss_lengths import ByLength, LossLengths
from .own_state import OwnState
from .persistence import Persistence
from .weights import Weights


class Model(ShapeBinding, Building, Weights, Compiling, Fitting, Persistence, OwnState, graph.GraphModel):
    """Keras `Model`: `Model(inputs, outputs, name=None)`, or subclass it and define `call(self, x, training=None)`.
    Its jobs are mixins, one module each: its engine by input shapes (engine_cache), building it (building),
    weights, compile (compiling), fit / evaluate / predict (fitting), saving and summary (persistence), what a
    subclassed model holds of its own (own_state: add_weight, add_loss)."""

    _is_training_graph = False   # LossTrainer: the training graph of a model's custom or added losses

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if len(args) > 0 else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        name = kwargs.pop("name", args[2] if len(args) > 2 else None)
        trainable = kwargs.pop("trainable", True)
        if kwargs:
            raise TypeError(f"Model: unknown arguments {sorted(kwargs)}")
        self._init_state(name or self._default_name())
        self._trainable = bool(trainable)
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("Model(inputs, outputs): both inputs and outputs are required")
            self._set_graph(inputs, outputs)
        elif type(self) is Model:
            raise TypeError("Model(inputs, outputs): pass the symbolic inputs (boundfit.Input) and outputs of a "
                            "graph, or subclass Model and define call(self, x, training=None)")

    def _default_name(self):
        base = "functional" if type(self) is Model else utils_snake(type(self).__name__)
        n = _counters.get(base, 0)
        _counters[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    @property
    def dtype_policy(self):
        """The model's own policy: the global policy when it was made (Keras's); under 'mixed_float16'
        compile() wraps the optimizer in a LossScaleOptimizer."""
        return self._dtype_policy

    def _init_state(self, name):
        self.name = name
        self._dtype_policy = mixed_precision.global_policy()   # Keras: a model's own policy (compile reads it)
        self._engine = None
        self.optimizer = self.loss = None
        self.compiled_metrics = []
        self._metrics_arg = self._weighted_metrics_arg = None
        self._metric_objs = []
        self.stop_training = False
        self.history = None
        self._device = None
        self._inputs = self._outputs = None
        self._input_names, self._output_names = [], []
        self._inputs_dict = self._outputs_dict = False
        self._out_losses = None
        self._built_sig = None
        self._inbound = []
        self._model = None
        self._traced = False
        self._bound = None
        self._engines = EngineCache()   # input shapes -> cached engine (variable-length inputs)
        self._prev_engine = None     # (engine, layer_node, param_ranges) of the graph before a change (_stash_engine)
        self._schedule_form = None   # the learning rate schedule fit set in the engine (carried to others)
        self._loss_trainer = None    # (sig, LossTrainer): the training graph of custom / added losses
        self._trainer_dirty = self._trainer_running = False   # its weights changed since read / it is training
        self._metric_raw = []

    # ---- structure ----
    def _set_graph(self, inputs, outputs):
        self._loss_trainer = None
        (self._inputs, self._input_names, self._inputs_dict, self._outputs, self._output_names,
         self._outputs_dict) = graph.normalize_io(inputs, outputs)
        self._nodes = graph.collect_nodes(self._inputs, self._outputs)
        self._stash_engine()
        self._bound = None  # per-sample input shapes the engine was built for (variable-length inputs)
        if not self._dynamic:
            self.build()

    @property
    def _host_stages(self):
        """{input index: host-side layer (TextVectorization)} run on the inputs before the engine."""
        return graph.host_stages(self)

    @property
    def _functional(self):
        return self._inputs is not None

    def call(self, inputs, training=None):
        """The forward pass of a subclassed model on (symbolic) inputs; a subclass defines it, boundfit traces it."""
        raise NotImplementedError(f"{type(self).__name__}: a subclassed Model must define call(self, x, training=None)")

    def __call__(self, inputs, training=None, **kwargs):
        if is_array_call(inputs):   # a model called on a batch: computed now (layers/eager.py)
            return call_eagerly(self, inputs, training=training, **kwargs)
        return graph.call_model(self, inputs, training=training)

    def _trace(self, shapes):
        """Subclassed models: run call() once on symbolic inputs of these per-sample shapes (a dict of them: the
        dict of Inputs named by its keys)."""
        if isinstance(shapes, dict):
            ins = {k: Input(shape=s, name=k) for k, s in shapes.items()}
            out = graph.trace_call(self, ins)
            self._traced = True
            self._set_graph(ins, out)
            return
        ins = [Input(shape=s) for s in shapes]
        out = graph.trace_call(self, ins[0] if len(ins) == 1 else ins)
        self._traced = True
        self._set_graph(ins[0] if len(ins) == 1 else ins, out)

    @property
    def inputs(self):
        """The model's symbolic inputs (`KerasTensor`s), a list."""
        return list(self._inputs or [])

    @property
    def outputs(self):
        """The model's symbolic outputs (`KerasTensor`s), a list."""
        return list(self._outputs or [])

    @property
    def input(self):
        """The symbolic input, or the list of them when the model has several."""
        return self._inputs[0] if self._inputs and len(self._inputs) == 1 else self.inputs

    @property
    def output(self):
        """The symbolic output, or the list of them when the model has several."""
        return self._outputs[0] if self._outputs and len(self._outputs) == 1 else self.outputs

    @property
    def output_names(self):
        """The names of the model's outputs, in order (the keys of per-output losses, metrics and logs)."""
        return list(self._output_names)

    @property
    def layers(self):
        """The model's layers in Keras 3's order (by depth to the outputs, then a walk from them)."""
        if not self._functional:
            return []
        return graph.model_layers(self)

    def get_layer(self, name=None, index=None):
        """The layer named `name`, or at position `index` of `layers`; ValueError naming the layers if none."""
        if index is not None:
            if not isinstance(index, int) or not -len(self.layers) <= index < len(self.layers):
                raise ValueError(f"get_layer: index {index!r} is out of range for {len(self.layers)} layers")
            return self.layers[index]
        for l in self.layers:
            if l.name == name:
                return l
        raise ValueError(f"get_layer: no layer named {name!r}; the layers are {[l.name for l in self.layers]}")

    @property
    def trainable(self):
        """Whether the model's layers train; setting it sets every layer's `trainable`."""
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for l in self._own_layers():
            l.trainable = value

    def _own_layers(self):
        """Every layer this model runs (nested models' layers included), in order."""
        if not self._functional:
            return []
        return graph.graph_layers(self)

    @property
    def built(self):
        """Whether the model has its engine (weights allocated): after `build`, a first call or a first run."""
        return self._engine is not None

    @property
    def _input_shape(self):
        """Per-sample shape of the (packed) x the engine takes."""
        if self._inputs is None:
            return None
        shapes = self._bound if self._bound is not None else [t._ps for t in self._inputs]
        if len(shapes) == 1:
            return tuple(shapes[0])
        return (sum(int(np.prod(s)) for s in shapes),)

    @property
    def input_shape(self):
        """The input shape with the batch axis (None) first, or a list of them; None before the graph exists."""
        if self._inputs is None:
            return None
        shapes = [(None,) + t._ps for t in self._inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        """The output shape with the batch axis (None) first, or a list of them; None before the graph exists."""
        if self._outputs is None:
            return None
        shapes = [(None,) + t._ps for t in self._outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def _training_graph(self, lg):
        """The training graph of this model's custom or added losses (loss_graph.LossGraph lg)."""
        return LossTrainer(self, lg)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class LossTrainer(LossLengths, Model):
    """The training graph of a model with a custom loss or losses its layers
    add (models/loss_graph.py): the model's layers (so training them trains the
    model) with the loss subgraphs; callbacks see the model itself, and its
    history keeps the model's names."""

    _is_training_graph = True

    def __init__(self, owner, lg):
        self._owner = owner
        super().__init__(lg.inputs, lg.outputs, name=f"{owner.name}_training")
        self._lg = lg
        self.compile(optimizer=owner.optimizer, loss=lg.losses, loss_weights=lg.weights,
                     metrics=lg.metrics.get(False), weighted_metrics=lg.metrics.get(True))
        self._callback_model = owner   # the optimizer drives this graph's engine (its rate, iterations)
        self._init_lengths(lg)   # a variable-length model: one graph per length (loss_lengths.py)
        self._log_map = lg.log_map(self, owner)

    def _weights_base(self, g):
        """The model's engine and, per node here, the model's node of the same layer: this graph computes on the
        model's weights (one copy; the gradients and optimizer state are its own). The engine refuses it (and
        this graph keeps a copy of its own, kept in step by _sync_layers) only where the loss uses weights the
        model does not have."""
        owner = self._owner
        if owner._engine is None:
            return None
        return owner._engine, [owner._layer_node.get(id(l), -1) for l in g.node_layers]

    def _sync_layers(self):
        """On the model's weights: the model takes over its layers' newest weights (the same memory)."""
        if self._engine is not None and self._engine.weights_base() is self._owner._engine:
            self._owner._sync_layers()
            return
        super()._sync_layers()

    def _set_layer_weights(self, layer, weights):   # layer.set_weights of a layer it trains    def _set_layer_weights(self, layer, weights):   # layer.set_weights of a layer it trains
        super()._set_layer_weights(layer, weights)
        self._owner._trainer_dirty = True

    def set_weights(self, weights):
        """Set the weights (in `get_weights()`'s order) of the model this training graph trains."""
        super().set_weights(weights)
        self._owner._trainer_dirty = True

    @property
    def stop_training(self):
        """Whether a callback asked the run to stop (read and set through the model it trains)."""
        return self._owner.stop_training

    @stop_training.setter
    def stop_training(self, v):
        self._owner.stop_training = v

    @property
    def _initial_epoch(self):
        return getattr(self._owner, "_initial_epoch", None)

    @_initial_epoch.setter
    def _initial_epoch(self, v):
        self._owner._initial_epoch = v

    def _data(self, x, y, kwargs, validation_data):
        """The model's (x, y), sample / class weights and validation data as this graph's."""
        kwargs = dict(kwargs)
        lg = self._lg if data_mod._is_sequence(x) else self._lg_for(x, y)   # (variable-length: x's length's)
        lg.check_weights(kwargs.get("sample_weight"), kwargs.get("class_weight"))
        cw = kwargs.pop("class_weight", None)
        if cw is not None:
            if kwargs.get("sample_weight") is not None:
                raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")
            kwargs["sample_weight"] = lg.class_weights(y, cw)
        if data_mod._is_sequence(x):
            if y is not None:
                raise ValueError("y must be None when x is a Sequence, PyDataset or generator (it yields (x, y))")
            x2, y2 = loss_graph.source(lg if self._rec is None else ByLength(self), x), None
        elif lg.temporal:   # sample weights (batch, T): an input of the training graph
            x2, y2 = lg.arrays(x, y, sample_weight=kwargs.pop("sample_weight", None))
        else:
            x2, y2 = lg.arrays(x, y)
        if validation_data is not None and data_mod._is_sequence(validation_data):
            validation_data = loss_graph.source(lg if self._rec is None else ByLength(self), validation_data)
        elif validation_data is not None and isinstance(validation_data, (tuple, list)) and \
                len(validation_data) in (2, 3):
            if len(validation_data) == 3:
                lg.check_weights(validation_data[2], None)
            vlg = self._lg_for(validation_data[0], validation_data[1])
            vsw = validation_data[2] if len(validation_data) == 3 else None
            vx, vy = vlg.arrays(validation_data[0], validation_data[1], "validation_data[0]", "validation_data[1]",
                                vsw, "validation_data[2]")
            validation_data = (vx, vy) + (() if vlg.temporal else tuple(validation_data[2:]))
        elif validation_data is not None:
            raise ValueError(f"{self._owner.name}: validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                             "sample_weight), or a Sequence / PyDataset / generator")
        return x2, y2, kwargs, validation_data

def utils_snake(name):
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return out or "model"


eager.MAKERS.update(model=Model, input=Input)   # layers called on arrays run a one-layer Model
