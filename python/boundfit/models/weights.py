"""A model's weights and optimizer state: get / set (the model's, a
layer's), and their way between a model and its training graph (a custom
loss or losses layers add, models/loss_graph.py), parameter by parameter."""

import contextlib

import numpy as np

from .. import optimizers
from ..layers.input_layer import InputLayer
from ..layers.variable import EngineVariable, keras_var_shapes, own_variables
from ..saving import keras_graph


class Weights:
    """Model's weights, in Keras 3's get_weights() order."""

    def _info(self):
        memo = self.__dict__.get("_info_memo")
        return memo[1] if memo is not None and memo[0] is self._engine else self._engine.layers_info()

    @contextlib.contextmanager
    def _info_read_once(self):
        """layers_info() read once for a walk that reads it for every layer (model.weights, get_weights,
        trainable_weights: quadratic in the layers otherwise, 19 s for 2000 Dense layers); the engine is not
        kept after it"""
        if self.__dict__.get("_info_memo") is not None:
            yield
            return
        self._refresh_trainable()
        self.__dict__["_info_memo"] = (self._engine, self._engine.layers_info())
        try:
            yield
        finally:
            self.__dict__["_info_memo"] = None

    def _layer_output_shape(self, layer):
        if layer._inbound:
            return layer._inbound[0].outputs[0].shape
        return (None,) + tuple(self._info()[self._layer_node[id(layer)]][1])

    def _layer_weights(self, layer):
        eng, r = self._holder(layer)
        return [eng.get_weights_range(k, k + 1)[0] for k in r]   # (not every weight of a large model per layer)

    def _set_layer_weights(self, layer, weights):
        self._sync_layers()
        w = self._engine.get_weights()
        sl = self._param_ranges[self._layer_node[id(layer)]]
        if len(weights) != len(sl):
            raise ValueError(f"layer {layer.name!r} has {len(sl)} weights, got {len(weights)}")
        for k, v in zip(sl, weights):
            w[k] = v
        self._engine.set_weights(w)

    def _refresh_trainable(self):
        """Built anew when layers' trainable flags changed since the build (as compile() does): the engine's
        per-weight flags are then the layers' (and a BatchNormalization's statistics stay non-trainable)."""
        self._require_built()
        if self._built_sig is not None and self._built_sig != self._trainable_sig():
            self._build_engine()

    def _weights_flagged(self):
        """(weight, trainable) in get_weights()' order"""
        self._refresh_trainable()
        info, flags = self._info(), {}
        for i, r in enumerate(self._param_ranges):
            for (_, _, t), k in zip(info[i][2], r):
                flags[k] = bool(t)
        hidden = set(self._hidden_slots())
        return [(w, flags.get(k, False)) for k, w in enumerate(self._all_weights()) if k not in hidden]

    def _layer_weights_flagged(self, layer):
        self._refresh_trainable()
        ts = [bool(t) for _, _, t in self._info()[self._layer_node[id(layer)]][2]]
        return list(zip(self._layer_weights(layer), ts))

    # ---- Keras's variables (layers/variable.py): the model's own, then its layers' in model.layers' order ----
    @property
    def weights(self):
        """The model's Variables in Keras 3's order (get_weights()' too): live views of the engine's weights
        (numpy(), assign); each with Keras's name, path, shape and trainable flag."""
        self._require_built()
        with self._info_read_once():
            return self._variables()

    def _variables(self, within=()):
        """model.weights, a nested model's in place without building it (its layers stay with this model)"""
        k = keras_graph.kind(self, False)
        within = within + (id(self),)
        layers = [l for l in (keras_graph.keras_layers(self, False) if k == keras_graph.SUBCLASSED else self.layers)
                  if not isinstance(l, InputLayer) and id(l) not in within
                  and not getattr(l, "_is_training_graph", False)]   # (its training graph: the same layers)
        if k == keras_graph.SUBCLASSED or isinstance(self, keras_graph._models()[1]):   # Keras builds a Sequential's or a subclassed model's layers in its scope
            scope = "/".join(p for p in (self.__dict__.get("_keras_scope", ""), self.name) if p)
            for layer in layers:
                layer.__dict__.setdefault("_keras_scope", scope)
        out, seen = [], set()
        for v in own_variables(self) + [v for l in layers
                                        for v in (l._variables(within) if isinstance(l, Weights) else l.weights)]:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    variables = weights

    def _slot(self, v):
        """v's index in this model's engine weights (None where this model does not hold it)"""
        part, k = (v._part, v._k) if isinstance(v, EngineVariable) else (v._owner(), 0)
        i = self._layer_node.get(id(part)) if part is not None else None
        return None if i is None else self._param_ranges[i][k]

    def _keras_order(self):
        """The engine's weight indices in get_weights()' order (model.weights'); weights Keras's walk does not
        reach (none that Keras has) after them, never lost; constants no Keras model has left out."""
        slots = [j for j in (self._slot(v) for v in self.weights) if j is not None]
        hidden = set(self._hidden_slots())
        n = sum(len(r) for r in self._param_ranges)
        if len(set(slots)) != len(slots):   # a weight listed twice: the engine's order
            slots = []
        got = set(slots)
        return slots + [j for j in range(n) if j not in got and j not in hidden]

    def _flagged_variables(self):
        """[(Variable, trainable)] in Keras's order, the flags read once"""
        with self._info_read_once():
            info, flags = self._info(), {}
            for i, r in enumerate(self._param_ranges):
                for (_, _, t), k in zip(info[i][2], r):
                    flags[k] = bool(t)
            return [(v, flags[self._slot(v)] if self._slot(v) in flags else v.trainable) for v in self.weights]

    @property
    def trainable_weights(self):
        """The Variables that train (Keras's order)"""
        return [v for v, t in self._flagged_variables() if t]

    @property
    def non_trainable_weights(self):
        """The Variables that do not train (frozen layers', BatchNormalization's statistics)"""
        return [v for v, t in self._flagged_variables() if not t]

    trainable_variables, non_trainable_variables = trainable_weights, non_trainable_weights

    def count_params(self):
        """The number of weights (trainable and not) of the built model."""
        self._require_built()
        w = self._engine.get_weights()
        return self._engine.n_params - sum(w[k].size for k in self._hidden_slots())

    def _hidden_slots(self):
        """Indices in the engine's weights of constants no Keras model has as weights (a Resizing's matrices:
        Const layers made with keras_weight=False), which get_weights / set_weights leave out."""
        if getattr(self, "_node_layers", None) is None:   # a model not laid out in nodes yet: no constants
            return []
        return sorted(k for layer in self._node_layers_unique() if not getattr(layer, "keras_weight", True)
                      for k in self._param_ranges[self._layer_node[id(layer)]])

    def get_weights(self):
        """The weights as a list of NumPy arrays, in Keras 3's order, model.weights' (a Keras model's
        `get_weights()` loads as it is)."""
        w = self._all_weights()
        return [w[j] for j in self._keras_order()]

    def _all_weights(self):
        """get_weights() with the constants it leaves out (boundfit's graph files keep them)"""
        self._require_built()
        w = self._engine.get_weights()
        for k, shape in self._keras_shaped().items():
            w[k] = w[k].reshape(shape)
        return w

    def set_weights(self, weights):
        """Set the weights from a list of arrays in `get_weights()`'s order and shapes."""
        self._require_built()
        weights, order = list(weights), self._keras_order()
        if len(weights) == len(order):   # Keras's list: into the engine's order, the constants kept
            full, shaped = self._engine.get_weights(), self._keras_shaped()
            for j, a in zip(order, weights):
                if j in shaped and np.shape(a) == tuple(shaped[j]) and np.size(a) == full[j].size:
                    a = np.reshape(a, full[j].shape)
                full[j] = a
            weights = full
        self._engine.set_weights(weights)   # (a list of another length: the engine's error)
        self._push_to_trainer()

    def _set_all_weights(self, weights):
        """Set every weight from a list in the engine's order (_all_weights(): files read per layer)"""
        self._require_built()
        self._engine.set_weights(weights)
        self._push_to_trainer()

    def _keras_shaped(self):
        """{index in get_weights(): Keras's shape} of the weights a composed layer keeps in another shape than
        Keras (layers/compose.py KerasShapedWeights: a scalar as (1,), an EinsumDense kernel as a matrix)"""
        out = {}
        for layer in self._node_layers_unique():
            shapes = keras_var_shapes(layer)
            for k, shape in zip(self._param_ranges[self._layer_node[id(layer)]] if shapes else (), shapes or ()):
                out[k] = shape
        return out

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

    def _state_from_trainer(self):
        """Before saving: the training graph's optimizer state (and weights) onto this model's engine."""
        if self._loss_trainer is not None and self._engine is not None:
            self._sync_layers()
            _copy_optimizer_state(self._loss_trainer[1], self)


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
    if isinstance(src.optimizer, optimizers.LossScaleOptimizer):   # its dynamic scale and step counter
        dst._engine.set_loss_scale(*src._engine.loss_scale())
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
