"""Building a model's engine from its graph: weights carried over from the
engine (of this model or another) that holds its layers' newest weights,
fresh layers' own weights and array initializers written in, and the
layers' weights taken over from other models before the model computes."""

import numpy as np

from .. import graph, session
from .new_engine import new_engine


class Building:
    """Model's engine: build(), built anew when the graph or the trainable flags change."""

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

    def _weights_base(self, g):
        """(engine, its node per node of g) whose weights this model's engine takes instead of its own (a
        training graph's: its model's), or None."""
        return None

    def _build_engine(self, keep_cache=False):
        g = graph.compile_graph(self)
        if self._dynamic:
            g.input_shapes = list(self._bound)
        base = self._weights_base(g)
        if base is not None:
            try:
                eng = new_engine(self.name, g.specs, g.input_shapes, session.next_seed(), g.output_ids,
                                 weights_of=base)
            except ValueError:   # not the same weights: a copy of its own (below)
                eng = None
            if eng is not None:
                self._engine_ready(eng, g, keep_cache)
                return
        carried, full = {}, {}
        for l in g.owners:  # the newest weights of layers used before (another model, or this one's old engine)
            held = l._model._holder(l) if l._model is not None else None
            if held is not None:
                if id(held[0]) not in full:   # one copy of each engine's weights
                    full[id(held[0])] = held[0].get_weights()
                carried[id(l)] = [full[id(held[0])][k] for k in held[1]]
        del full
        eng = new_engine(self.name, g.specs, g.input_shapes, session.next_seed(), g.output_ids)
        self._set_engine(eng, g)
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
            l._model = self
        self._engine_ready(eng, g, keep_cache)

    def _set_engine(self, eng, g):
        self._engine = eng
        self._node_layers = g.node_layers
        self._layer_node = g.layer_node
        self._param_ranges = []
        k = 0
        for name, shape, params in eng.layers_info():
            self._param_ranges.append(range(k, k + len(params)))
            k += len(params)

    def _engine_ready(self, eng, g, keep_cache):
        if self._engine is not eng:
            self._set_engine(eng, g)
        for l in g.owners:
            l.built = True
            if l._model is None:
                l._model = self
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


def _array_initializers(eng, g, carried, ranges):
    """Weights of fresh layers whose initializer Python computes (Constant(array), Identity, STFT:
    initializers.py, `_computed`): its values for the weight's shape (`X_initializer` initializes the engine
    parameter named '<layer>/X', or '<layer>/X_kernel': depthwise_ and pointwise_initializer; a Weight's
    initializer its 'kernel'); or one with a `_fill(drawn)` method: what it makes of the engine's draw (ConvLSTM's
    unit_forget_bias, layers/conv_lstm.py)."""
    todo = []
    for l in g.owners:
        if id(l) in carried or id(l) not in g.layer_node:
            continue
        for k, v in vars(l).items():
            role = "kernel" if k == "_init" else k[:-len("_initializer")] if k.endswith("_initializer") else None
            if role and (getattr(v, "_computed", False) or hasattr(v, "_fill")):
                todo.append((l, role, v))
    if not todo:
        return
    w, info = eng.get_weights(), eng.layers_info()
    for l, role, init in todo:
        node = g.layer_node[id(l)]
        for j, (pname, shape, _) in zip(ranges[node], info[node][2]):
            if pname.rsplit("/", 1)[-1] in (role, role + "_kernel"):
                if hasattr(init, "_fill"):
                    w[j] = init._fill(w[j])
                    continue
                try:
                    w[j] = np.asarray(init(tuple(shape)), np.float32).reshape(shape)
                except ValueError as e:
                    raise ValueError(f"layer {l.name!r}: {role}_initializer: {e}") from None
    eng.set_weights(w)
