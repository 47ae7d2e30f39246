"""Sequential: a chain of layers (and models), built as a graph the same way
as a functional Model. add() and build() are all or nothing: a rebuild keeps
the weights of the layers built before (as Keras does), and a layer the graph
or the engine refuses leaves the model as it was (layers, weights, engine)."""

import contextlib
import json

import numpy as np

from .. import graph
from ..layers.input_layer import InputLayer
from ..layers.layer import Layer
from ..layers.node import KerasTensor
from ..saving import keras_graph
from .model import Model


class Sequential(Model):
    """Keras `Sequential`: a chain of layers (and models); `Sequential([layers...])` or `add()` one at a time."""
    def __init__(self, layers=None, name=None, trainable=True):
        self._init_state(name or "sequential")
        self._trainable = bool(trainable)
        self._layers, self._in_shape = [], None
        self._input_layer, self._in_dtype = None, None
        for layer in layers or []:
            self.add(layer)

    # ---- structure ----
    def add(self, layer):
        """Append a layer (or an `Input`, first); all or nothing: a layer the graph or the engine refuses leaves the
        model as it was."""
        if isinstance(layer, KerasTensor) and layer._input_layer is not None:
            layer = layer._input_layer
        if isinstance(layer, InputLayer):
            if self._layers:
                raise ValueError("Input must come first in a Sequential model")
            self._in_shape, self._input_layer, self._in_dtype = layer.shape, layer, layer.dtype
            return
        if not isinstance(layer, (Layer, Model)):
            raise TypeError(f"Sequential.add: expected a boundfit layer or model, got {type(layer).__name__}")
        if len(getattr(layer, "_parts", lambda: [None])()) > 1:
            raise ValueError(f"Sequential.add: layer {layer.name!r} has several outputs (return_state=True or "
                             "merge_mode=None); all layers in a Sequential model should have a single output "
                             "tensor. For multi-output layers, use the functional API.")
        if not self._layers and self._in_shape is None:
            if getattr(layer, "input_shape_arg", None) is not None:
                self._in_shape = layer.input_shape_arg
            elif isinstance(layer, Model) and layer._functional and len(layer._inputs) == 1:
                self._in_shape = layer._inputs[0]._ps
        with self._all_or_nothing([layer]):
            self._layers.append(layer)
            self._stash_engine()
            self._inputs = None
            if self._in_shape is not None and not all(getattr(l, "_host_side", False) for l in self._layers):
                self.build()   # (host-side preprocessing alone, a TextVectorization, has nothing for the engine yet)

    @contextlib.contextmanager
    def _all_or_nothing(self, new=()):
        """On any exception inside, the model and the call records of its layers (and of `new` ones) are put back
        as they were: the old engine, with its weights, stays the model's."""
        state = dict(self.__dict__, _layers=list(self._layers), _engines=self._engines.copy())
        layers = list(self._layers) + list(new)
        records = [(l, list(l._inbound), dict(l.__dict__) if isinstance(l, Layer) else None) for l in layers]
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)
            for l, inbound, attrs in records:
                l._inbound[:] = inbound
                if attrs is not None:   # a layer's own attributes (built, the input size its weights take)
                    l.__dict__.clear()
                    l.__dict__.update(attrs)
            raise

    @property
    def layers(self):
        """The model's layers in order (its `Input` left out, as in Keras)."""
        return list(self._layers)

    def build(self, input_shape=None):
        """Build the chain for `input_shape` (batch axis first, or the per-sample shape), keeping the weights of
        layers built before."""
        with self._all_or_nothing():
            if input_shape is not None:
                s = tuple(input_shape)
                self._in_shape = s[1:] if len(s) > 1 and s[0] is None else s
            if self._in_shape is None:
                raise ValueError("the model has no input shape: pass input_shape= to the first layer or use "
                                 "layers.Input")
            if not self._layers:
                raise ValueError("the model has no layers")
            inp = InputLayer(shape=self._in_shape, name=self._input_layer.name if self._input_layer else None,
                             dtype=self._in_dtype)
            x = inp.output
            for l in self._layers:
                x = l(x)
            (self._inputs, self._input_names, self._inputs_dict, self._outputs, self._output_names,
             self._outputs_dict) = graph.normalize_io(inp.output, x)
            self._nodes = graph.collect_nodes(self._inputs, self._outputs)
            self._stash_engine()
            self._bound = None
            if not self._dynamic:  # variable-length: built for each run's data (Model._bind_shapes)
                self._build_engine()

    def _require_built(self, x=None):
        if self._inputs is not None and self._dynamic:
            self._bind_shapes(x)
        elif self._engine is None:
            if x is None:
                raise ValueError("the model is not built: give the first layer input_shape= or call build()")
            self._in_shape = tuple(np.shape(x)[1:])
            if self._in_dtype is None and isinstance(x, np.ndarray) and x.dtype.kind in "USO":   # strings (a
                self._in_dtype = "string"                           # TextVectorization first): a string Input
            self.build()
        self._sync_layers()

    def _own_layers(self):
        out = []
        for l in self._layers:
            out += l._own_layers() if isinstance(l, Model) else [l]
        return out

    def _summary_rows(self):
        rows = []
        for layer in self._layers:
            shape = graph.last_output_shape(layer)
            rows.append((layer, (f"{layer.name} ({type(layer).__name__})", str(shape),
                                 f"{graph.layer_params(self, layer):,}")))
        return ("Layer (type)", "Output Shape", "Param #"), rows

    def _plain(self):
        """A chain of plain layers (no nested models, no custom layers): what Keras's Sequential files describe here."""
        return not any(isinstance(l, Model) for l in self._layers) and not self._has_custom_layers()

    def _has_custom_layers(self):
        """custom layers (a call() of their own) are no nodes of the graph: only the layers they call are"""
        return any(not isinstance(l, Model) and l._custom() and not l._keras_composite() for l in self._layers)

    def get_config(self):
        """Keras 3's config of this model (saving/keras_graph.py): name, layers, ..."""
        return keras_graph.model_config(self)["config"]

    @classmethod
    def from_config(cls, config):
        """A Sequential from Keras 3's Sequential config (`get_config()`'s dict)."""
        return keras_graph.sequential_from_config({"class_name": "Sequential", "config": config})

    def to_json(self, **kwargs):
        """Keras 3's model config as JSON (without the compile config)."""
        cfg = keras_graph.model_config(self)
        cfg.pop("compile_config", None)
        return json.dumps(cfg, **kwargs)

    def __repr__(self):
        return f"<Sequential name={self.name} layers={len(self._layers)}>"
