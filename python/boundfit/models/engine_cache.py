"""A variable-length model's engines, one per input shapes: a model whose
input has a None dimension builds its engine for the shapes of the data each
fit / evaluate / predict brings, and keeps the engines it built by shapes
(EngineCache: least recently used dropped first, beyond ENGINE_CACHE
entries or ENGINE_CACHE_BYTES of weights and optimizer state). Switching
carries the weights, optimizer state and learning rate over; the memory
plan counts the cached engines (engine/memory.py)."""

import collections

import numpy as np

from .. import graph, optimizers
from .new_engine import new_engine

ENGINE_CACHE = 8
ENGINE_CACHE_BYTES = 256 << 20


class EngineCache(collections.OrderedDict):
    """{input shapes: dict(engine, node_layers, layer_node, param_ranges, sig)}, most recently used last."""

    def take(self, key):
        """The entry of these shapes, now the most recently used."""
        e = self.pop(key)
        self[key] = e
        return e

    def keep(self, key, entry, current):
        """Keep entry by its shapes, dropping the least recently used others beyond ENGINE_CACHE entries or
        ENGINE_CACHE_BYTES held by the engines other than the current one."""
        self.pop(key, None)
        self[key] = entry
        while len(self) > 1 and (len(self) > ENGINE_CACHE or self.bytes_besides(current) > ENGINE_CACHE_BYTES):
            self.pop(next(iter(self)))

    def bytes_besides(self, current):
        """Host bytes (weights and optimizer state) the engines other than `current` hold."""
        return sum(_engine_bytes(e["engine"]) for e in self.values() if e["engine"] is not current)


class ShapeBinding:
    """Model's binding to input shapes (variable-length inputs) and its engine cache."""

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
        if isinstance(self.optimizer, optimizers.LossScaleOptimizer):   # its dynamic scale and step counter
            self._engine.set_loss_scale(*old_eng.loss_scale())

    def _swap_engine(self, key, old_eng, state):
        """Make the cached engine of these input shapes current: the weights and
        optimizer state of the last one copied into it (same layout: only the
        lengths differ)."""
        e = self._engines.take(key)
        weights = old_eng.get_weights() if old_eng is not None else None
        self._engine, self._node_layers, self._layer_node, self._param_ranges = \
            e["engine"], e["node_layers"], e["layer_node"], e["param_ranges"]
        self._bound = list(key)
        if weights is not None:
            self._engine.set_weights(self._same_layout(weights))
        if state is not None and (state[0] or state[1]):
            self._engine.restore_optimizer_state(*state)
        self._carry_rate(old_eng)

    def _same_layout(self, weights):
        """weights of another length's engine for the current one: a constant no Keras model has as a weight and
        sized by the length (a RepeatVector's positions over the time axis: never trained) keeps this engine's
        own value; any other weight of another shape is set as given (and refused by set_weights)"""
        own, hidden = self._engine.get_weights(), set(self._hidden_slots())
        return [o if k in hidden and np.shape(w) != np.shape(o) else w for k, (w, o) in enumerate(zip(weights, own))]

    def _return_to(self, engine):
        """Make `engine` (one of this model's, holding the newest weights) current again, its weights kept."""
        key = next((k for k, e in self._engines.items() if e["engine"] is engine), None)
        if key is not None:
            self._swap_engine(key, None, None)
        else:   # dropped from the cache meanwhile: its weights into the current one
            self._engine.set_weights(self._same_layout(engine.get_weights()))

    def _cache_engine(self):
        """Keep the current engine by its input shapes (variable-length models)."""
        if not self._dynamic or self._engine is None:
            return
        self._engines.keep(tuple(self._bound), dict(engine=self._engine, node_layers=self._node_layers,
                                                    layer_node=self._layer_node, param_ranges=self._param_ranges,
                                                    sig=self._built_sig), self._engine)

    def cached_engine_bytes(self):
        """Host bytes the engines cached for other input shapes than the current ones hold."""
        return self._engines.bytes_besides(self._engine)

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


def _engine_bytes(eng):
    return (eng.weight_arena_bytes or 0) + (eng.optimizer_arena_bytes or 0)

