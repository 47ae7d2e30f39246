"""Embedding (with mask_zero: a per-sample, per-step mask carried through the
graph to the layers that use it)."""

from .. import constraints, initializers, regularizers
from .args import engine_kinds
from .layer import Layer, keras_config

EMBEDDING, = engine_kinds("EMBEDDING")


class Embedding(Layer):
    """Turns integer ids (T,) into vectors (T, output_dim); ids may come in any
    integer or float dtype, and one outside [0, input_dim) is a DataError."""
    _base = "embedding"

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, lora_rank=None, **kwargs):
        kwargs.pop("input_length", None)  # Keras 2 argument, ignored by Keras 3 too
        super().__init__(**kwargs)
        for arg, v in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"Embedding: {arg} must be a positive int, got {v!r}")
        if weights is not None:
            raise ValueError("Embedding: weights= is not supported; call set_weights() once the model is built")
        if lora_rank is not None:
            raise ValueError("Embedding: lora_rank is not supported by boundfit")
        self.input_dim, self.output_dim, self.mask_zero = input_dim, output_dim, bool(mask_zero)
        self.embeddings_initializer = initializers.get(embeddings_initializer, "embeddings_initializer")
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer, "embeddings_regularizer")
        self.embeddings_constraint = constraints.get(embeddings_constraint, "embeddings_constraint")

    _has_weights = True

    def _check_call_shape(self, shape):
        pass  # the table does not depend on the input's shape

    def compute_output_shape(self, shape):
        if len(shape) > 2:
            raise ValueError(f"{self.name}: expects ids of shape (T,) or (T, K) per sample, got "
                             f"{(None,) + tuple(shape)}")
        if self.mask_zero and len(shape) != 1:
            raise ValueError(f"{self.name}: mask_zero needs ids of shape (T,) per sample, got {(None,) + tuple(shape)}")
        return tuple(shape) + (self.output_dim,)

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
