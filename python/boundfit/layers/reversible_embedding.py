"""ReversibleEmbedding (Keras 3): an Embedding whose reverse call,
layer(x, reverse=True), maps vectors (..., output_dim) to logits
(..., input_dim) through the table's transpose (tie_weights=True: the
engine's EMBEDDING kind in reverse, a node sharing the forward node's table,
csrc/core/layers/embedding.c) or through a weight of its own,
reverse_embeddings (output_dim, input_dim) (tie_weights=False: a bias-free
Dense). logit_soft_cap: tanh(logits / cap) * cap. A Keras composite: one
layer in .keras files, its calls with their reverse flag; weights in Keras's
order: embeddings, reverse_embeddings."""

import numbers

from .. import initializers
from .core import Dense
from .embedding import Embedding
from .emath import Unary
from .layer import Layer, keras_config


class _ReverseTable(Layer):
    """The reverse call's logits x @ table^T: the engine's EMBEDDING with reverse=1, sharing the weights of the
    Embedding `_weights_of` (graph.py); a graph piece, not a Keras layer."""
    _base = "reverse_embedding"
    _has_weights = True

    def __init__(self, table, **kwargs):
        super().__init__(**kwargs)
        self._weights_of = table

    def spec(self):
        return dict(self._weights_of.spec(), name=self.name, reverse=1, mask_zero=0)

    def get_weights(self):
        return []   # the table's, read through the Embedding


class ReversibleEmbedding(Layer):
    """Keras 3's `ReversibleEmbedding(input_dim, output_dim, tie_weights=True, embeddings_initializer='uniform', ...,
    reverse_dtype=None, logit_soft_cap=None)`: called on ids, an Embedding; called with reverse=True on vectors
    (..., output_dim), logits (..., input_dim)."""
    _base = "reversible_embedding"

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False, reverse_dtype=None,
                 logit_soft_cap=None, **kwargs):
        super().__init__(**kwargs)
        self.table = Embedding(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                               embeddings_regularizer=embeddings_regularizer,
                               embeddings_constraint=embeddings_constraint, mask_zero=mask_zero,
                               name=f"{self.name}_table")
        self.input_dim, self.output_dim, self.mask_zero = self.table.input_dim, self.table.output_dim, bool(mask_zero)
        if not isinstance(tie_weights, bool):
            raise ValueError(f"ReversibleEmbedding: tie_weights must be a bool, got tie_weights={tie_weights!r}")
        if reverse_dtype not in (None, "float32"):
            raise ValueError(f"ReversibleEmbedding: reverse_dtype={reverse_dtype!r} is not supported by boundfit "
                             "(it computes logits in float32); leave it None")
        if logit_soft_cap is not None and (isinstance(logit_soft_cap, bool) or not isinstance(
                logit_soft_cap, numbers.Real) or not 0.0 < float(logit_soft_cap) < float("inf")):
            raise ValueError(f"ReversibleEmbedding: logit_soft_cap must be None or a number > 0, got "
                             f"logit_soft_cap={logit_soft_cap!r}")
        self.tie_weights, self.reverse_dtype, self.logit_soft_cap = tie_weights, reverse_dtype, logit_soft_cap
        self.embeddings_initializer = self.table.embeddings_initializer
        self.reverse = None if tie_weights else Dense(
            input_dim, use_bias=False, kernel_initializer=initializers.get(embeddings_initializer),
            name=f"{self.name}_reverse")
        if self.reverse is not None:
            self.reverse._keras_var_names = {"kernel": "reverse_embeddings"}
        self._pieces = {"reverse": _ReverseTable(self.table, name=f"{self.name}_reverse_table")}   # (no sublayer)
        self._reverse_calls = []   # reverse= of each call, in order

    def build(self, input_shape=None):
        self.built = True

    def __call__(self, inputs, *args, reverse=False, **kwargs):
        if not isinstance(reverse, bool):
            raise TypeError(f"{self.name}: reverse must be a bool, got reverse={reverse!r}")
        out = super().__call__(inputs, *args, reverse=reverse, **kwargs)
        if len(self.__dict__.get("_traced_calls", [])) > len(self._reverse_calls):
            self._reverse_calls.append(reverse)
        return out

    def call(self, inputs, reverse=False):
        if not reverse:
            return self.table(inputs)
        logits = self._pieces["reverse"](inputs) if self.tie_weights else self.reverse(inputs)
        cap = self.logit_soft_cap
        if cap is not None:
            logits = Unary("multiply", float(cap))(Unary("tanh")(Unary("divide", float(cap))(logits)))
        return logits

    def _keras_call_of(self, k, ts):
        """Call k as Keras writes it in a Functional config: the tensor, reverse by keyword."""
        return {"args": ts, "kwargs": {"reverse": True} if self._reverse_calls[k] else {}}

    def _call_from_keras(self, args, kwargs, tensor):
        extra = sorted(set(kwargs) - {"reverse"})
        if len(args) != 1 or extra:
            raise ValueError(f"layer {self.name!r}: the call {args!r} {extra} is not one boundfit can rebuild")
        return self(tensor(args[0]), reverse=bool(kwargs.get("reverse", False)))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(ReversibleEmbedding)
def _reversible_embedding_config(l):
    cfg = {k: v for k, v in l.table.get_config().items() if k not in ("name", "trainable", "dtype")}
    return dict(cfg, tie_weights=l.tie_weights, reverse_dtype=l.reverse_dtype, logit_soft_cap=l.logit_soft_cap)
