"""A model saved, loaded and described: `.keras` and `.weights.h5` files
(saving/keras_file.py), boundfit's graph files, Keras's Functional config,
and summary()."""

import json

from .. import graph
from ..layers.input_layer import InputLayer
from . import summary_text
from ..runtime import dist_group
from ..saving import graph_file, keras_file, keras_graph


def _size(n):
    """Keras's readable_memory_size: B, KB, MB, GB in powers of 1024, two decimals"""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}"
        n /= 1024


class Persistence:
    """Model's save / load / config / summary."""

    def _summary_rows(self):
        return graph.summary_rows(self)

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None, *, batch_size=None):
        """Keras's summary (its arguments: line_length, positions, print_fn, expand_nested, show_trainable,
        layer_range): the layers, their output shapes and parameter counts; a compiled model's memory plan (at
        `batch_size`, by default the last run's or 32) follows."""
        self._require_built()
        with self._info_read_once():   # every row reads the engine's layer table
            return self._summary(line_length, positions, print_fn, expand_nested, show_trainable, layer_range,
                                 batch_size)

    def _summary(self, line_length, positions, print_fn, expand_nested, show_trainable, layer_range, batch_size):
        header, rows = self._summary_rows()

        def expand(layer):
            if not expand_nested or not isinstance(layer, Persistence) or not getattr(layer, "built", True):
                return None
            _, inner = layer._summary_rows()
            return [(l, (c[0], c[1], f"{graph.layer_params(self, l):,}") + tuple(c[3:])) for l, c in inner
                    if not isinstance(l, InputLayer)]

        lines = summary_text.table(header, rows, line_length, positions, show_trainable, layer_range, expand)
        flagged = self._weights_flagged()
        total, trainable = sum(w.size for w, _ in flagged), sum(w.size for w, t in flagged if t)
        out = [f'Model: "{self.name}"'] + lines + [
            f" Total params: {total:,} ({_size(sum(w.nbytes for w, _ in flagged))})",
            f" Trainable params: {trainable:,} ({_size(sum(w.nbytes for w, t in flagged if t))})",
            f" Non-trainable params: {total - trainable:,} ({_size(sum(w.nbytes for w, t in flagged if not t))})"]
        if self.optimizer is not None:
            bs = batch_size or getattr(self, "_last_batch_size", None) or 32
            out += ["", str(self.estimate_memory(bs))]
        (print_fn or print)("\n".join(out))

    def _keras_variables(self):
        """(gradient offset, Keras's variable path, Keras's shape) of each trainable variable in Keras's order; the
        path is "<layer>/<weight>", under the model's name in a Sequential (Keras builds its layers there)"""
        info = self._info()
        node_layer = {self._layer_node.get(id(l)): l for l in self.layers}
        prefix = f"{self.name}/" if type(self).__name__ == "Sequential" else ""
        names = {i: [p[0] for p in params if p[2]] for i, (_, _, params) in enumerate(info)}
        seen, out = {}, []
        for i, off, shape in keras_file._trainable_slices(self):
            k = seen[i] = seen.get(i, -1) + 1
            layer = node_layer.get(i)
            lname = layer.name if layer is not None else str(info[i][0])
            vname = names[i][k].split("/")[-1] if k < len(names[i]) else ""
            out.append((off, f"{prefix}{lname}/{vname}", tuple(shape)))
        return out

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

    def to_json(self, **kwargs):
        """Keras 3's model config as JSON (without the compile config); models.model_from_json reads it."""
        self._require_built()
        entry = keras_graph.model_entry(self)
        entry.pop("compile_config", None)
        return json.dumps(entry, **kwargs)

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
