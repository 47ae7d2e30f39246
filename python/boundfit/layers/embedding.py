"""Embedding (with mask_zero: a per-sample, per-step mask carried through the
graph to the layers that use it)."""

import numpy as np

from .. import constraints, initializers, regularizers
from .args import _size, engine_kinds
from .emath import Unary
from .layer import Layer, keras_config
from .node import KerasTensor

EMBEDDING, = engine_kinds("EMBEDDING")


class Embedding(Layer):
    """Keras 3's `Embedding(input_dim, output_dim, mask_zero=False, ...)`: rows of a table by integer id; an id
    outside [0, input_dim) is a DataError naming it."""
    _scalar_ok = True
    """Turns integer ids (T,) into vectors (T, output_dim); ids may come in any
    integer or float dtype, and one outside [0, input_dim) is a DataError."""
    _base = "embedding"

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, lora_rank=None, **kwargs):
        kwargs.pop("input_length", None)  # Keras 2 argument, ignored by Keras 3 too
        super().__init__(**kwargs)
        input_dim, output_dim = _size("Embedding", "input_dim", input_dim), _size("Embedding", "output_dim", output_dim)
        if lora_rank is not None:
            raise ValueError("Embedding: lora_rank is not supported by boundfit")
        self.input_dim, self.output_dim, self.mask_zero = input_dim, output_dim, bool(mask_zero)
        self.embeddings_initializer = initializers.get(embeddings_initializer, "embeddings_initializer")
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer, "embeddings_regularizer")
        self.embeddings_constraint = constraints.get(embeddings_constraint, "embeddings_constraint")
        self._table = None  # a table given before any model holds the layer (weights=, set_weights)
        if weights is not None:  # Keras: the initial table, (input_dim, output_dim)
            self.set_weights(list(weights) if isinstance(weights, (list, tuple)) else [weights])

    def compute_mask(self, inputs, mask=None):
        """Keras's: ids != 0 with mask_zero=True (on symbolic ids, a tensor of 0 / 1), else None; a custom layer's
        compute_mask may return it (layers/custom_masks.py)."""
        if not self.mask_zero:
            return None
        if isinstance(inputs, KerasTensor):
            return Unary("not_equal", 0.0)(inputs)
        return np.not_equal(np.asarray(inputs), 0)

    def build(self, input_shape=None):
        """Keras's build(): the table does not depend on the input shape, so
        set_weights() works from here on, before the layer is in a model."""
        self.built = True

    def get_weights(self):
        if self._model is None and self._table is not None:
            return [self._table.copy()]
        return super().get_weights()

    def set_weights(self, weights):
        if self._model is not None:
            return super().set_weights(weights)
        weights = list(weights)
        want = (self.input_dim, self.output_dim)
        if len(weights) != 1:
            raise ValueError(f"layer {self.name!r} has 1 weight (the embeddings table), got {len(weights)}")
        table = np.asarray(weights[0])
        if table.shape != want or table.dtype.kind not in "biuf":
            raise ValueError(f"layer {self.name!r}: the embeddings table must be a numeric array of shape {want}, "
                             f"got {table.dtype} {table.shape}")
        self._table = np.array(table, dtype=np.float32)  # a copy: the caller's array stays theirs

    def _engine_weights(self, shapes):
        """The table given before the model was built (model.py puts it into the fresh engine), or None."""
        if self._table is None:
            return None
        table, self._table = self._table, None
        return [table]

    _has_weights = True

    def _check_call_shape(self, shape):
        pass  # the table does not depend on the input's shape

    def spec(self):
        return dict(kind=EMBEDDING, name=self.name, units=self.output_dim, input_dim=self.input_dim,
                    mask_zero=int(self.mask_zero), inits=initializers._engine_specs(self.embeddings_initializer),
                    regs=regularizers._engine_specs(self.embeddings_regularizer),
                    cons=constraints._engine_specs([(self.embeddings_constraint, 2, "embeddings_constraint")]))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Embedding)
def _embedding_config(l):
    return dict(input_dim=l.input_dim, output_dim=l.output_dim,
                embeddings_initializer=initializers.serialize(l.embeddings_initializer),
                embeddings_regularizer=regularizers.serialize(l.embeddings_regularizer), activity_regularizer=None,
                embeddings_constraint=constraints.serialize(l.embeddings_constraint), mask_zero=l.mask_zero)
