"""Models: the Keras model API over the engine (boundfit._core.Model).

`Model` is a graph of layer calls: functional (`Model(inputs, outputs)`),
subclassed (layers made in `__init__`, `call()` traced on symbolic
inputs, in both modes when it takes `training`) or `Sequential` (a chain, built the same way). Weights live in the
engine's host arena of the model that last used a layer (`layer._model`): a
model takes over the newest weights of its layers before it computes, so a
layer or a model shared between models sees one set of weights, as in Keras.
This class describes and reports; the engine computes."""

import collections
import itertools

import numpy as np

from .. import graph, losses, metrics as metrics_mod, optimizers, utils
from ..engine import buckets, data as data_mod, dist_fit, memory, training
from ..layers.input_layer import Input
from ..runtime import dist_group
from ..layers.layer import _counters
from ..saving import graph_file, keras_file, keras_graph
from . import loss_graph
from .new_engine import new_engine


# variable-length inputs: engines kept by input shapes (least recently used dropped first)
ENGINE_CACHE = 8
ENGINE_CACHE_BYTES = 256 << 20


def _engine_bytes(eng):
    return (eng.weight_arena_bytes or 0) + (eng.optimizer_arena_bytes or 0)


class Model(graph.GraphModel):
    """Keras `Model`: `Model(inputs, outputs, name=None)`, or subclass it and define `call(self, x, training=None)`."""

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

    def _init_state(self, name):
        self.name = name
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
        self._engines = collections.OrderedDict()   # input shapes -> cached engine (variable-length inputs)
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

    def _stash_engine(self):
        """The graph changes: the engine goes, but it keeps its layers' weights until the next engine takes them
        over (_holder), so a rebuild (Sequential.add, a subclassed model built again) keeps them as Keras does."""
        if self._engine is not None:
            self._prev_engine = (self._engine, self._layer_node, self._param_ranges)
        self._engine = None
        self._engines.clear()

    def _holder(self, layer):
        """(engine, range of the layer's weights in it) of the engine holding the layer's newest weights here: the
        current one, or after a change of graph the last one (_stash_engine); None where neither has the layer."""
        cur = (self._engine, getattr(self, "_layer_node", {}), getattr(self, "_param_ranges", []))
        for eng, nodes, ranges in (cur, getattr(self, "_prev_engine", None) or (None, {}, [])):
            if eng is not None and id(layer) in nodes:
                return eng, ranges[nodes[id(layer)]]
        return None

    @property
    def _host_stages(self):
        """{input index: host-side layer (TextVectorization)} run on the inputs before the engine."""
        return graph.host_stages(self)

    @property
    def _dynamic(self):
        """An input has a variable (None) dimension: the engine is built for
        the shapes of the data each fit / evaluate / predict brings."""
        return self._inputs is not None and any(None in t._ps for t in self._inputs)

    def _bind_shapes(self, x):
        """Variable-length inputs: (re)build the engine for the per-sample
        shapes of x (the first shapes that build, if x is None and nothing is
        bound yet). Weights and optimizer state carry over to the new engine;
        the memory plan of the next run is made for its shapes."""
        if x is None:
            if self._bound is not None:
                return
            shapes = self._placeholder_shapes()
        elif isinstance(x, dict):
            missing = [n for n in self._input_names if n not in x]
            if missing:
                raise ValueError(f"{self.name}: inputs {missing} are missing from the dict of inputs")
            shapes = [tuple(np.shape(x[n])[1:]) for n in self._input_names]
        else:
            shapes = [tuple(int(d) for d in s) for s in graph.data_shapes(x)]
        self._bind_to(shapes)

    def _bind_to(self, shapes):
        """Make the engine for these per-sample input shapes current: the cached
        one (weights and optimizer state copied in) or a new one."""
        if len(shapes) != len(self._inputs):
            raise ValueError(f"{self.name}: the model takes {len(self._inputs)} inputs, got {len(shapes)}")
        for k, (s, t) in enumerate(zip(shapes, self._inputs)):
            if len(s) != len(t._ps) or any(d is not None and d != e for d, e in zip(t._ps, s)):
                raise ValueError(f"{self.name}: input {k} must have shape {t.shape}, got {(None,) + tuple(s)}")
        shapes = [tuple(s) for s in shapes]
        if shapes == self._bound and self._engine is not None:
            return
        old_eng = self._engine
        state = old_eng.optimizer_state() if old_eng is not None and self.optimizer is not None else None
        old = self._bound
        key = tuple(shapes)
        if key in self._engines and self._engines[key]["sig"] == self._trainable_sig():
            self._swap_engine(key, old_eng, state)   # built before for these shapes: no rebuild
            return
        self._bound = shapes
        try:
            self._build_engine(keep_cache=True)
        except ValueError as e:
            self._bound = old
            raise ValueError(f"{self.name}: cannot run on inputs of shape "
                             f"{[(None,) + tuple(s) for s in shapes]}: {e}") from None
        if state is not None and (state[0] or state[1]):  # an optimizer that has stepped (slots are made lazily)
            self._engine.restore_optimizer_state(*state)
        self._carry_rate(old_eng)

    def _carry_rate(self, old_eng):
        """The learning rate and schedule the last engine ran with, onto the current one."""
        if old_eng is None or self.optimizer is None or old_eng is self._engine:
            return
        if self._schedule_form is not None:
            self._engine.set_schedule(*self._schedule_form)
        self._engine.set_learning_rate(old_eng.learning_rate())

    def _swap_engine(self, key, old_eng, state):
        """Make the cached engine of these input shapes current: the weights and
        optimizer state of the last one copied into it (same layout: only the
        lengths differ)."""
        e = self._engines.pop(key)
        self._engines[key] = e   # most recently used last
        weights = old_eng.get_weights() if old_eng is not None else None
        self._engine, self._node_layers, self._layer_node, self._param_ranges = \
            e["engine"], e["node_layers"], e["layer_node"], e["param_ranges"]
        self._bound = list(key)
        if weights is not None:
            self._engine.set_weights(weights)
        if state is not None and (state[0] or state[1]):
            self._engine.restore_optimizer_state(*state)
        self._carry_rate(old_eng)

    def _cache_engine(self):
        """Keep the current engine by its input shapes (variable-length models),
        dropping the least recently used others beyond ENGINE_CACHE entries or
        ENGINE_CACHE_BYTES of weights and optimizer state they hold."""
        if not self._dynamic or self._engine is None:
            return
        key = tuple(self._bound)
        self._engines.pop(key, None)
        self._engines[key] = dict(engine=self._engine, node_layers=self._node_layers, layer_node=self._layer_node,
                                  param_ranges=self._param_ranges, sig=self._built_sig)
        while len(self._engines) > 1 and (len(self._engines) > ENGINE_CACHE or
                                          self.cached_engine_bytes() > ENGINE_CACHE_BYTES):
            self._engines.pop(next(iter(self._engines)))

    def cached_engine_bytes(self):
        """Host bytes the engines cached for other input shapes than the current ones hold."""
        return sum(_engine_bytes(e["engine"]) for e in self._engines.values() if e["engine"] is not self._engine)

    def _drop_cached_engines(self):
        """Only the current engine stays (compile, a trainable change, a new graph)."""
        self._engines.clear()
        self._cache_engine()

    def _placeholder_shapes(self):
        """Shapes to make the weights with before any data (get_weights, save,
        summary): each variable dimension the smallest of a few lengths that
        every layer accepts; the weights do not depend on it."""
        last = None
        for n in (8, 64, 512):
            shapes = [tuple(n if d is None else d for d in t._ps) for t in self._inputs]
            g = graph.compile_graph(self)
            try:
                new_engine(self.name, g.specs, shapes, 0, g.output_ids)
                return shapes
            except ValueError as e:
                last = e
        raise ValueError(f"{self.name}: no variable-length input of 8, 64 or 512 steps fits the layers ({last}); "
                         "call fit / predict with data first")

    @property
    def _functional(self):
        return self._inputs is not None

    def call(self, inputs, training=None):
        """The forward pass of a subclassed model on (symbolic) inputs; a subclass defines it, boundfit traces it."""
        raise NotImplementedError(f"{type(self).__name__}: a subclassed Model must define call(self, x, training=None)")

    def __call__(self, inputs, training=None, **kwargs):
        return graph.call_model(self, inputs, training=training)

    def _trace(self, shapes):
        """Subclassed models: run call() once on symbolic inputs of these per-sample shapes."""
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

    def build(self, input_shape=None):
        """Build the engine: a functional model from its graph; a subclassed one needs `input_shape` with the batch
        axis first, e.g. `(None, 64)`."""
        if not self._functional:
            if input_shape is None:
                raise ValueError(f"{self.name}: a subclassed model is built by its first fit / predict, or "
                                 "build(input_shape) with the batch axis first, e.g. build((None, 64))")
            shapes = input_shape if isinstance(input_shape, list) else [input_shape]
            self._trace([tuple(s)[1:] for s in shapes])
            return
        self._build_engine()

    def _build_engine(self, keep_cache=False):
        g = graph.compile_graph(self)
        if self._dynamic:
            g.input_shapes = list(self._bound)
        carried, full = {}, {}
        for l in g.owners:  # the newest weights of layers used before (another model, or this one's old engine)
            held = l._model._holder(l) if l._model is not None else None
            if held is not None:
                if id(held[0]) not in full:   # one copy of each engine's weights
                    full[id(held[0])] = held[0].get_weights()
                carried[id(l)] = [full[id(held[0])][k] for k in held[1]]
        del full
        eng = new_engine(self.name, g.specs, g.input_shapes, utils.next_seed(), g.output_ids)
        self._engine = eng
        self._node_layers = g.node_layers
        self._layer_node = g.layer_node
        self._param_ranges = []
        k = 0
        for name, shape, params in eng.layers_info():
            self._param_ranges.append(range(k, k + len(params)))
            k += len(params)
        fresh = [l for l in g.owners if id(l) not in carried and hasattr(l, "_engine_weights")]
        if fresh:  # layers that bring their own weights (Normalization's mean / variance)
            w = eng.get_weights()
            for l in fresh:
                r = self._param_ranges[g.layer_node[id(l)]]
                vals = l._engine_weights([w[j].shape for j in r])
                for a, j in zip(vals or [], r):
                    w[j] = a
            eng.set_weights(w)
        _array_initializers(eng, g, carried, self._param_ranges)
        if carried:
            w = eng.get_weights()
            for l in g.owners:
                if id(l) in carried:
                    r = self._param_ranges[g.layer_node[id(l)]]
                    if len(carried[id(l)]) == len(r) and all(a.shape == w[j].shape for a, j in zip(carried[id(l)], r)):
                        for a, j in zip(carried[id(l)], r):
                            w[j] = a
            eng.set_weights(w)
        for l in g.owners:
            l._model, l.built = self, True
        self._prev_engine = None   # its weights are carried over
        self._built_sig = self._trainable_sig()
        if self.optimizer is not None:
            self._compile_engine()
        if not keep_cache:
            self._engines.clear()   # built anew: the graph or trainable flags changed
        self._cache_engine()

    def _trainable_sig(self):
        return tuple(bool(l.trainable) for l in self._own_layers())

    def _sync_layers(self):
        """Take over the newest weights of layers another model has used since."""
        if self._engine is None:
            return
        trainer = self._loss_trainer[1] if self._loss_trainer is not None else None
        fresh = trainer is not None and not (self._trainer_dirty or self._trainer_running)
        stale = [l for l in self._node_layers_unique() if l._model is not self and not (fresh and l._model is trainer)]
        self._trainer_dirty = False
        if not stale:
            return
        w = self._engine.get_weights()
        for l in stale:
            if l._model is not None and l._model._holder(l) is not None:
                for a, j in zip(l._model._layer_weights(l), self._param_ranges[self._layer_node[id(l)]]):
                    w[j] = a
            if l._model is not trainer or trainer is None:   # the training graph keeps the layers it trains
                l._model = self
        self._engine.set_weights(w)

    def _node_layers_unique(self):
        seen, out = set(), []
        for l in self._node_layers:
            if id(l) not in seen:
                seen.add(id(l))
                out.append(l)
        return out

    def _require_built(self, x=None):
        if self._functional and self._dynamic:
            self._bind_shapes(x)
        elif self._engine is None:
            if not self._functional:
                if x is None:
                    raise ValueError(f"{self.name}: the model is not built; call build(input_shape) or fit / predict "
                                     "with data first")
                self._trace(graph.data_shapes(x))
            else:
                self._build_engine()
        self._sync_layers()

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

    def _info(self):
        return self._engine.layers_info()

    def _layer_output_shape(self, layer):
        if layer._inbound:
            return layer._inbound[0].outputs[0].shape
        return (None,) + tuple(self._info()[self._layer_node[id(layer)]][1])

    def _layer_weights(self, layer):
        eng, r = self._holder(layer)
        w = eng.get_weights()
        return [w[k] for k in r]

    def _set_layer_weights(self, layer, weights):
        self._sync_layers()
        w = self._engine.get_weights()
        sl = self._param_ranges[self._layer_node[id(layer)]]
        if len(weights) != len(sl):
            raise ValueError(f"layer {layer.name!r} has {len(sl)} weights, got {len(weights)}")
        for k, v in zip(sl, weights):
            w[k] = v
        self._engine.set_weights(w)

    def count_params(self):
        """The number of weights (trainable and not) of the built model."""
        self._require_built()
        return self._engine.n_params

    @property
    def weights(self):
        """The weights as NumPy arrays, in Keras 3's `get_weights()` order."""
        return self.get_weights()

    def get_weights(self):
        """The weights as a list of NumPy arrays, in Keras 3's order (a Keras model's `get_weights()` loads as it
        is)."""
        self._require_built()
        return self._engine.get_weights()

    def set_weights(self, weights):
        """Set the weights from a list of arrays in `get_weights()`'s order and shapes."""
        self._require_built()
        self._engine.set_weights(list(weights))
        self._push_to_trainer()

    def _loaded(self):
        """load_model wrote weights and optimizer state into this model's engine: on into its training graph."""
        self._push_to_trainer(optimizer_state=True)

    def _push_to_trainer(self, optimizer_state=False):
        """Weights written into this model's engine go on into its training graph (a custom loss or added
        losses), which holds its layers' newest weights while it exists."""
        if self._loss_trainer is None:
            return
        trainer = self._loss_trainer[1]
        for l in self._node_layers_unique():
            l._model = self
        trainer._sync_layers()
        if optimizer_state:
            _copy_optimizer_state(self, trainer)

    # ---- compile ----
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None, weighted_metrics=None,
                **kwargs):
        """Keras's `compile`: optimizer (name or object), loss (name, `Loss`, function, or one per output), metrics,
        loss_weights, weighted_metrics."""
        unknown = set(kwargs) - {"jit_compile", "run_eagerly", "steps_per_execution", "auto_scale_loss"}
        if unknown:
            raise TypeError(f"compile: unknown arguments {sorted(unknown)}")
        if loss is None:
            raise ValueError("compile: loss is required")
        opt = optimizers.get(optimizer)
        names = self._output_names or ["output"]
        n_out = len(names)
        out_losses = graph.per_output(loss, names, "loss", losses.get)
        weights = graph.per_output(1.0 if loss_weights is None else loss_weights, names, "loss_weights", float)
        given, raw = [], []   # (output, metric object, name, weighted, as given); (output, as given, weighted)
        for arg, weighted in ((metrics, False), (weighted_metrics, True)):
            what = "weighted_metrics" if weighted else "metrics"
            for k, ms in enumerate(graph.per_output_metrics(arg, names, what)):
                for m in ms:
                    obj, name = metrics_mod.get(m)
                    given.append((k, obj, name, weighted, m if isinstance(m, str) else metrics_mod.serialize(obj)))
                    raw.append((k, m, weighted))
        if self._engine is not None:
            self._resolve_metrics([g[:4] for g in given], out_losses)  # checked before anything changes
        self.optimizer, self.loss = opt, out_losses[0]
        self._out_losses, self._loss_weights = out_losses, weights
        self._multi_loss = n_out > 1 or loss_weights is not None
        self._compile_given = (loss, loss_weights)   # as given, for Keras's compile_config
        # as given (names, or serialized objects), for saving
        self._metrics_arg = metrics if n_out > 1 else [c for _, o, n, w, c in given if not w] or None
        self._weighted_metrics_arg = weighted_metrics if n_out > 1 else [c for _, o, n, w, c in given if w] or None
        self._metric_given = [g[:4] for g in given]
        self._metric_raw, self._loss_trainer = raw, None
        self._metric_cfgs = [(k, w, c) for k, o, n, w, c in given]
        self.compiled_metrics = [self._metric_log_name(k, n) for k, o, n, w, c in given]
        opt._model = self
        if self._engine is not None:
            if self._built_sig is not None and self._built_sig != self._trainable_sig():
                self._build_engine()  # trainable changed: the plan and parameter layout change with it
            else:
                self._compile_engine()
            self._drop_cached_engines()   # the others were compiled for the optimizer and loss before
            if self._functional and not self._dynamic and not isinstance(self, LossTrainer):
                try:   # the training graph's engine now, not inside the first fit (whose plan it is)
                    self._trainer_for()
                except Exception:   # noqa: BLE001 - raised again, as Keras raises it, by fit / evaluate
                    self._loss_trainer = None

    def _metric_log_name(self, k, name):
        """Keras's history name of a metric of output k: `<output>_<name>` when the model has several outputs."""
        return f"{self._output_names[k]}_{name}" if self._n_outputs > 1 else name

    def _resolve_metrics(self, given, out_losses):
        """Keras's history names and engine specs of the compiled metrics, each
        on its output: 'accuracy' resolved by that output's and its targets'
        shapes, a repeated weighted metric named weighted_<name>, and with
        several outputs `<output>_<name>`. A metric that cannot read its
        output's targets raises ValueError naming it."""
        shapes = self._engine.output_shapes
        objs, names, seen = [], [], set()
        for k, obj, name, weighted in given:
            loss = out_losses[k]
            out_size = int(shapes[k][-1]) if len(shapes[k]) else 1  # Keras decides on the last axis
            sparse = loss.kind == losses.SCCE
            where = f" (output {self._output_names[k]!r})" if len(shapes) > 1 else ""
            if isinstance(obj, metrics_mod._Accuracy) and not len(shapes[k]):
                raise ValueError(f"metrics: {name!r}{where} on an output of one number per sample (shape (None,)): "
                                 "Keras 3 reads the batch axis as its last axis and computes categorical accuracy "
                                 "over the batch (one 0 / 1 per batch), mixing the samples; name 'binary_accuracy' "
                                 "(or give the output shape (None, 1))")
            if isinstance(obj, metrics_mod._Accuracy):
                obj = metrics_mod.resolve_accuracy(name, out_size, sparse)
            is_sparse = obj.kind in (metrics_mod.SPARSE_CAT_ACC, metrics_mod.SPARSE_TOPK)
            if is_sparse and not sparse and out_size > 1:
                raise ValueError(f"metrics: {name!r}{where} is a sparse metric and needs class-id targets "
                                 f"(loss sparse_categorical_crossentropy); the loss {loss.name!r} takes targets "
                                 f"shaped as the output ({out_size} values per sample)")
            if not is_sparse and sparse:
                raise ValueError(f"metrics: {name!r}{where} needs targets shaped as the output ({out_size} values per "
                                 "sample), the loss sparse_categorical_crossentropy takes class ids; use a sparse_* "
                                 "metric")
            obj.name = name  # Keras renames the object to the name it was given
            if len(shapes) > 1:
                name = f"{self._output_names[k]}_{name}"
            if name in seen:
                if weighted:
                    name = f"weighted_{name}"
                j = 1
                base = name
                while name in seen:
                    name = f"{base}_{j}"
                    j += 1
            seen.add(name)
            spec = dict(obj._spec(), weighted=int(weighted), output=k)
            if not len(shapes[k]):
                spec.update(_scalar_output_metric(obj, name, where, weighted))
            objs.append((obj, name, spec))
            names.append(name)
        return objs, names

    def _compile_engine(self):
        kw = {}
        if getattr(self, "_multi_loss", False):
            kw["outputs"] = [(l.kind, l.from_logits, w, l.label_smoothing, l.delta)
                             for l, w in zip(self._out_losses, self._loss_weights)]
        self._engine.compile(**self.optimizer._engine_args(), **self.loss._engine_args(), **kw)
        objs, names = self._resolve_metrics(getattr(self, "_metric_given", []), self._out_losses)
        try:
            self._engine.set_metrics([spec for _, _, spec in objs])
        except Exception as e:
            raise ValueError(f"metrics: {e}") from None
        self._metric_objs = objs
        self.compiled_metrics = names

    def _require_compiled(self, what):
        if self.optimizer is None or self.loss is None:
            raise RuntimeError(f"You must call compile() before {what}()")

    @property
    def _n_outputs(self):
        return len(self._outputs) if self._outputs else 1

    @property
    def metrics_names(self):
        """The keys the model logs (`loss`, then the metrics, per output where there are several)."""
        return training.log_keys(self)

    # ---- training (implemented in engine/training.py) ----
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None, micro_batch=None,
            memory_limit=None, device=None, **kwargs):
        """Keras's `fit`, planned first: the run's memory plan is checked against the budget before step one
        (MemoryBudgetError if it does not fit).

        Beyond Keras's arguments: `micro_batch` (None, an int or "auto"), `batch_size="auto"`, `memory_limit`
        (bytes or "512MiB"), `device` ("cpu", "cuda", "cuda:N", "emu"), `memory_wait` (seconds to wait for other
        runs' memory). Returns a `History`."""
        x = self._built_on(x)
        trainer = self._trainer_for()
        if trainer is not None:   # a custom loss or losses added by layers: the training graph fits
            x, y, kwargs, validation_data = trainer._data(x, y, kwargs, validation_data)
            self._trainer_running = True   # callbacks read this model's weights: from the graph, fresh
            try:
                self.history = trainer.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                                           callbacks=callbacks, validation_split=validation_split,
                                           validation_data=validation_data, shuffle=shuffle,
                                           initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch,
                                           micro_batch=micro_batch, memory_limit=memory_limit, device=device,
                                           **kwargs)
            finally:
                self._trainer_running, self._trainer_dirty = False, True
            self._last_plan, self._last_batch_size = trainer._last_plan, trainer._last_batch_size
            return self.history
        with dist_fit.fit_guard():   # [dist hook] a rank's error reaches the others at once
            return training.fit(self, x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
                                validation_split=validation_split, validation_data=validation_data, shuffle=shuffle,
                                initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch, micro_batch=micro_batch,
                                memory_limit=memory_limit, device=device, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", steps=None, return_dict=False,
                 memory_limit=None, device=None, **kwargs):
        """Keras's `evaluate`: the loss and metrics over (x, y), planned and checked against the budget first;
        `return_dict=True` gives a dict."""
        x = self._built_on(x)
        trainer = self._trainer_for()
        if trainer is not None:   # a custom loss or losses added by layers: the training graph evaluates
            x, y, kwargs, _ = trainer._data(x, y, kwargs, None)
            return trainer.evaluate(x, y, batch_size=batch_size, verbose=verbose, steps=steps,
                                    return_dict=return_dict, memory_limit=memory_limit, device=device, **kwargs)
        with dist_fit.fit_guard():   # [dist hook] a rank's error reaches the others at once
            return training.evaluate(self, x, y, batch_size=batch_size, verbose=verbose, steps=steps,
                                     return_dict=return_dict, memory_limit=memory_limit, device=device, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, memory_limit=None, device=None, **kwargs):
        """Keras's `predict`: the outputs for x as NumPy arrays; the returned array is in the run's plan."""
        with dist_fit.fit_guard():   # [dist hook] a rank's error reaches the others at once
            return training.predict(self, x, batch_size=batch_size, verbose=verbose, steps=steps,
                                    memory_limit=memory_limit, device=device, **kwargs)

    def estimate_memory(self, batch_size=32, optimizer=None, device=None, micro_batch=None, mode="train",
                        memory_limit=None, validation_batch_size=None, shuffle_rows=0, sample_weight=False,
                        lengths=None):
        """The exact memory plan of a run, without seeing data (shuffle_rows:
        rows fit will shuffle, for the per-epoch order array; sample_weight:
        whether the run gets sample or class weights, whose per-batch slots it
        then holds). A variable-length model is planned at `lengths` (a list:
        the plan of the length that needs most, each length's plan in
        `.plans_by_length`; its engines are built and kept for the fit), or
        else at the length it last ran (8 before any data)."""
        weighted = memory.Weighted(train=bool(sample_weight), evaluate=bool(sample_weight) and mode == "evaluate")
        trainer = self._trainer_for() if mode != "predict" else None
        if trainer is not None:   # fit / evaluate run the training graph: its plan
            return trainer.estimate_memory(batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch,
                                           mode=mode, memory_limit=memory_limit,
                                           validation_batch_size=validation_batch_size, shuffle_rows=shuffle_rows,
                                           sample_weight=sample_weight, lengths=lengths)
        if lengths is not None:
            plans = {}
            for n, shapes in zip(lengths, buckets.declared_shapes(self, lengths)):
                self._bind_to(shapes)
                plans[int(n)] = memory.estimate(
                    self, batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch, mode=mode,
                    memory_limit=memory_limit, validation_batch_size=validation_batch_size,
                    shuffle_rows=shuffle_rows, weighted=weighted)
            def own(p):   # less the other lengths' cached engines, which are held whichever runs
                return p.host_bytes + p.device_bytes - sum(e.bytes for e in p.breakdown if e.category == "cached")
            worst = max(plans, key=lambda n: own(plans[n]))
            plan = plans[worst]
            plan.plans_by_length, plan.length = plans, worst
            return plan
        return memory.estimate(self, batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch, mode=mode,
                               memory_limit=memory_limit, validation_batch_size=validation_batch_size,
                               shuffle_rows=shuffle_rows, weighted=weighted)

    # ---- custom and added losses (models/loss_graph.py) ----
    def _built_on(self, x):
        """A subclassed model not traced yet is traced on x's shapes first (the
        first batch of a Sequence or generator; a generator's first batch is put
        back in front), so that its losses are known. Returns x."""
        if self._functional or x is None or self.optimizer is None:
            return x
        if not data_mod._is_sequence(x):
            self._require_built(x)
            return x
        if hasattr(x, "__getitem__") and hasattr(x, "__len__"):
            first = x[0] if len(x) else None
        else:
            it = iter(x)
            first = next(it, None)
            x = itertools.chain([] if first is None else [first], it)
        if isinstance(first, (tuple, list)) and first and not isinstance(first[0], dict):   # a dict: the data
            self._require_built(first[0])                                         # pipeline names the batch
        return x

    def _trainer_for(self):
        """The training graph fit / evaluate run when the loss is a custom
        function or layers add losses (built once per compile), else None."""
        if self.optimizer is None or self._out_losses is None or isinstance(self, LossTrainer) or \
                not self._functional:
            return None
        if not loss_graph.needed(self, self._out_losses):
            return None
        if self._dynamic:
            raise ValueError(f"{self.name}: a custom loss or losses added by layers need fixed input shapes; the "
                             f"inputs {[t.shape for t in self._inputs]} have a variable length")
        self._require_built()
        sig = self._trainable_sig()
        if self._loss_trainer is None or self._loss_trainer[0] != sig:
            lg = loss_graph.LossGraph(self, self._out_losses, self._loss_weights, self._metric_raw)
            self._loss_trainer = (sig, LossTrainer(self, lg))
        return self._loss_trainer[1]

    def _state_from_trainer(self):
        """Before saving: the training graph's optimizer state (and weights) onto this model's engine."""
        if self._loss_trainer is not None and self._engine is not None:
            self._sync_layers()
            _copy_optimizer_state(self._loss_trainer[1], self)

    # ---- reports ----
    def _summary_rows(self):
        return graph.summary_rows(self)

    def summary(self, batch_size=None, print_fn=None):
        """Print the layers, their output shapes and parameter counts; a compiled model's memory plan (at
        `batch_size`, by default the last run's or 32) follows."""
        self._require_built()
        print_fn = print_fn or print
        rows = self._summary_rows()
        ncol = len(rows[0])
        w = [max(len(r[i]) for r in rows) + 2 for i in range(ncol)]
        line = "-" * sum(w)
        out = [f'Model: "{self.name}"', line]
        for i, r in enumerate(rows):
            out.append("".join(c.ljust(w[j]) for j, c in enumerate(r)).rstrip())
            if i == 0:
                out.append("=" * sum(w))
        total, trainable = self._engine.n_params, self._engine.n_trainable
        out += ["=" * sum(w), f"Total params: {total:,} ({total * 4 / 1024:.2f} KB)",
                f"Trainable params: {trainable:,}", f"Non-trainable params: {total - trainable:,}"]
        if self.optimizer is not None:
            bs = batch_size or getattr(self, "_last_batch_size", None) or 32
            out += ["", str(self.estimate_memory(bs))]
        print_fn("\n".join(out))

    # ---- persistence ----
    def save(self, filepath, overwrite=True):
        """Save atomically to a Keras 3 `.keras` file (architecture, weights,
        compile config, optimizer state), or any model to a boundfit graph file
        (.npz). A subclassed model is written to `.keras` as the Functional
        graph its call() was traced into: Keras 3 opens it without the class."""
        if not dist_group.is_chief():   # [dist hook] rank 0 saves
            return
        self._state_from_trainer()   # a custom loss trains the weights in the training graph
        graph_file.save_model(self, filepath, overwrite=overwrite)

    def get_config(self):
        """Keras 3's Functional config of this graph (keras_graph.py); a
        subclassed model gives the Functional graph it was traced into."""
        self._require_built()
        return keras_graph.functional_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A functional model from Keras 3's Functional config (get_config())."""
        return keras_graph.functional_from_config({"class_name": "Functional", "config": config}, custom_objects)

    def save_weights(self, filepath, overwrite=True):
        """Save weights (and optimizer state) to a Keras 3 `.weights.h5` file, atomically."""
        if not dist_group.is_chief():   # [dist hook] rank 0 saves
            return
        self._state_from_trainer()
        keras_file.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False):
        """Load a `.weights.h5` (or `.keras`) file written by Keras 3 or boundfit; all or nothing."""
        self._state_from_trainer()
        keras_file.load_weights(self, filepath, skip_mismatch=skip_mismatch)
        self._push_to_trainer(optimizer_state=True)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class LossTrainer(Model):
    """The training graph of a model with a custom loss or losses its layers
    add (models/loss_graph.py): the model's layers (so training them trains the
    model) with the loss subgraphs; callbacks see the model itself, and its
    history keeps the model's names."""

    def __init__(self, owner, lg):
        self._owner = owner
        super().__init__(lg.inputs, lg.outputs, name=f"{owner.name}_training")
        self._lg = lg
        self.compile(optimizer=owner.optimizer, loss=lg.losses, loss_weights=lg.weights,
                     metrics=lg.metrics.get(False), weighted_metrics=lg.metrics.get(True))
        self._callback_model = owner   # the optimizer drives this graph's engine (its rate, iterations)
        self._log_map = lg.log_map(self, owner)

    def _set_layer_weights(self, layer, weights):   # layer.set_weights of a layer it trains
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
        lg = self._lg
        lg.check_weights(kwargs.get("sample_weight"), kwargs.get("class_weight"))
        cw = kwargs.pop("class_weight", None)
        if cw is not None:
            if kwargs.get("sample_weight") is not None:
                raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")
            kwargs["sample_weight"] = lg.class_weights(y, cw)
        if data_mod._is_sequence(x):
            if y is not None:
                raise ValueError("y must be None when x is a Sequence, PyDataset or generator (it yields (x, y))")
            x2, y2 = lg.source(x), None
        else:
            x2, y2 = lg.arrays(x, y)
        if validation_data is not None and data_mod._is_sequence(validation_data):
            validation_data = lg.source(validation_data)
        elif validation_data is not None and isinstance(validation_data, (tuple, list)) and \
                len(validation_data) in (2, 3):
            if len(validation_data) == 3:
                lg.check_weights(validation_data[2], None)
            vx, vy = lg.arrays(validation_data[0], validation_data[1], "validation_data[0]", "validation_data[1]")
            validation_data = (vx, vy) + tuple(validation_data[2:])
        elif validation_data is not None:
            raise ValueError(f"{self._owner.name}: validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                             "sample_weight), or a Sequence / PyDataset / generator")
        return x2, y2, kwargs, validation_data


def _slot_layout(model):
    """{(id(layer), k): (offset, size)} of each trainable parameter in the engine's optimizer slots, and their total."""
    out, off = {}, 0
    for i, (_, _, params) in enumerate(model._engine.layers_info()):
        for k, (_, shape, trainable) in enumerate(params):
            if trainable:
                n = int(np.prod(shape)) if len(shape) else 1
                out[(id(model._node_layers[i]), k)] = (off, n)
                off += n
    return out, off


def _copy_optimizer_state(src, dst):
    """The optimizer state (iterations, slots) of src's engine into dst's, parameter by parameter (two graphs
    of the same layers: a model and its training graph lay their parameters out in their own orders)."""
    if src._engine is None or dst._engine is None or src.optimizer is None:
        return
    it, slots = src._engine.optimizer_state()
    if not it:
        return
    if not slots:   # an optimizer without slots (plain SGD): its step count
        dst._engine.set_iterations(it)
        return
    s_map, s_n = _slot_layout(src)
    d_map, d_n = _slot_layout(dst)
    if s_n != len(slots[0]) or set(d_map) - set(s_map):
        return   # not the same trainable parameters: nothing carried
    out = [np.zeros(d_n, np.float32) for _ in slots]
    for key, (off, n) in d_map.items():
        so, sn = s_map[key]
        for a, b in zip(out, slots):
            a[off:off + n] = b[so:so + sn]
    dst._engine.restore_optimizer_state(it, out)


def utils_snake(name):
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return out or "model"


def _array_initializers(eng, g, carried, ranges):
    """Weights of fresh layers whose initializer is Constant(array): the array, in the weight's shape
    (`X_initializer` initializes the engine parameter named '<layer>/X')."""
    todo = []
    for l in g.owners:
        if id(l) in carried or id(l) not in g.layer_node:
            continue
        for k, v in vars(l).items():
            if k.endswith("_initializer") and isinstance(getattr(v, "value", None), np.ndarray):
                todo.append((l, k[:-len("_initializer")], v.value))
    if not todo:
        return
    w, info = eng.get_weights(), eng.layers_info()
    for l, role, value in todo:
        node = g.layer_node[id(l)]
        for j, (pname, shape, _) in zip(ranges[node], info[node][2]):
            if pname.rsplit("/", 1)[-1] == role:
                if value.size != int(np.prod(shape)):
                    raise ValueError(f"layer {l.name!r}: {role}_initializer Constant of {value.size} values for a "
                                     f"weight of shape {tuple(shape)}")
                w[j] = value.reshape(shape)
    eng.set_weights(w)


def _scalar_output_metric(obj, name, where, weighted):
    """A metric of an output of one number per sample (Keras (B,)): Keras's MAE and MSE reduce over its last
    axis, the batch axis, so their result is the mean of each batch's mean (the engine's batch_mean); the
    accuracies by argmax would compare samples with one another, and weights would weigh each batch's mean by
    the batch's summed weights: both raise naming the metric."""
    k = obj.kind
    if k in (metrics_mod.CAT_ACC, metrics_mod.SPARSE_CAT_ACC, metrics_mod.TOPK, metrics_mod.SPARSE_TOPK):
        raise ValueError(f"metrics: {name!r}{where} on an output of one number per sample (shape (None,)): Keras 3 "
                         "takes the batch axis as the classes, mixing the samples; give the output shape (None, C)")
    if k not in (metrics_mod.MAE, metrics_mod.MSE):   # (binary accuracy, RMSE, the counts: per element)
        return {}
    if weighted:
        raise ValueError(f"metrics: the weighted metric {name!r}{where} on an output of one number per sample "
                         "(shape (None,)): Keras 3 averages it over the batch axis before weighing it, mixing the "
                         "samples; give the output shape (None, 1) (keras.ops.expand_dims(x, -1))")
    return {"batch_mean": 1}

