"""Reduce: keras.ops' reductions on symbolic tensors (ops.py: sum, mean, max,
min, prod, argmax, argmin, any, all, logsumexp and what composes them), one
engine kind over any set of axes with keepdims (csrc/core/layers/reduce.c).
Axes count from the batch axis (0), as Keras's: over a sample's axes the
kind REDUCE; with the batch axis too BATCH_REDUCE, which holds its result in
every row of the batch (without keepdims Keras's tensor has no batch axis:
the output's `_nobatch`), mixes the samples of a batch (micro-batches and
data-parallel runs refuse it: mixing_layer) and is not written to .keras
files when the batch axis is gone. BatchReduce is the sum / mean over every
axis, batch included (ops.tensordot(a, b, 2), a composed loss's sum). Not
Keras layers: a .keras file holds the keras.ops call that made one (layers/opnode.py)."""

from .args import engine_kinds
from .layer import Layer

REDUCE, BATCH_REDUCE = engine_kinds("REDUCE BATCH_REDUCE")

# op codes, as bf_reduce_op (csrc/core/backend.h)
OPS = ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all", "logsumexp")
NO_GRADIENT = ("argmax", "argmin", "any", "all")


class Reduce(Layer):
    """op over the axes `axis` of its input (ints counted from the batch axis 0; None: every axis, the batch's
    too), those axes kept with size 1 where keepdims."""
    _base = "reduce"
    _scalar_ok = True   # over the batch, one number per sample reduces too

    def __init__(self, op, axis=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        if op not in OPS:
            raise ValueError(f"Reduce: unknown op {op!r}; one of {OPS}")
        if axis is not None:
            axis = tuple(sorted({int(a) for a in ((axis,) if isinstance(axis, int) else axis)}))
            if not axis or axis[0] < 0:
                raise ValueError(f"Reduce: axis must name axes >= 0 (0 the batch's), got {axis}")
        self.op, self.axis, self.keepdims = op, axis, bool(keepdims)

    @property
    def _mixes_batch(self):
        return self.axis is None or self.axis[0] == 0

    @property
    def _nobatch_out(self):
        return self._mixes_batch and not self.keepdims

    @property
    def _no_keras_file(self):
        return (" yet (a reduction over the batch axis without keepdims: keras.ops.tensordot of two tensors, "
                "keras.ops.sum with no axis); save the weights (save_weights, .weights.h5) or boundfit's graph "
                "file (.npz)")

    def spec(self):
        axes = [] if self.axis is None else [a - 1 for a in self.axis if a > 0]
        return dict(kind=BATCH_REDUCE if self._mixes_batch else REDUCE, name=self.name, rop=OPS.index(self.op),
                    raxes=axes, rall=int(self.axis is None), keepdims=int(self.keepdims))


class BatchReduce(Reduce):
    """The sum (or mean) of a tensor over the whole batch and every axis of a
    sample: one number without a batch axis (Keras's result of ops.sum(x),
    ops.tensordot(a, b, 2) of two (B, E) tensors)."""
    _base = "batch_reduce"
    OPS = ("sum", "mean")

    def __init__(self, op="sum", axis=None, keepdims=False, **kwargs):
        if op not in self.OPS or axis is not None or keepdims:
            raise ValueError(f"BatchReduce: op one of {self.OPS} over every axis, got op={op!r}, axis={axis!r}, "
                             f"keepdims={keepdims!r}")
        super().__init__(op, None, **kwargs)


def mixing_layer(layers):
    """The first of `layers` that mixes the samples of a batch (a reduction over the batch axis), or None."""
    return next((layer for layer in layers if getattr(layer, "_mixes_batch", False)), None)


def require_whole_batches(layers, why):
    """ValueError naming the first layer of `layers` that mixes the samples of a batch (a reduction over the batch
    axis), for a run that would split or regroup its batches (`why`)."""
    layer = mixing_layer(layers)
    if layer is not None:
        raise ValueError(f"layer {layer.name!r} mixes the samples of a batch (a reduction over the batch axis: "
                         f"keras.ops.tensordot of two tensors, keras.ops.sum with no axis or over axis 0), so {why}")
