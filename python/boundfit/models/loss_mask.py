"""The step mask a model's sequence output carries, as a tensor of the graph,
for the custom losses Keras masks with it (keras/src/losses/loss.py:
Loss.__call__ reads y_pred's mask; apply_mask weighs the unmasked steps
total / valid and the masked 0, so the batch loss is the mean of the values
over the unmasked steps of the whole batch, 0 for a batch with none).

mask_of(t) follows the engine's own propagation of masks (the `mask` hooks
of csrc/core/layers/*.c): an Embedding(mask_zero=True) or a mask= argument
(SeqMask) makes one; Dense, Activation, BatchNormalization, LayerNormalization,
Dropout, PReLU, SpectralNormalization and MultiHeadAttention keep their first
input's; the merge layers keep their inputs' one mask; a recurrent layer
keeps it in its sequence output (return_sequences, a Bidirectional half);
a Switch keeps the mask both its inputs carry; every other kind drops it."""

from .. import ops
from ..layers.args import engine_kinds
from ..layers.reduce import BatchReduce

_KEEP = set(engine_kinds("ACTIVATION BATCHNORM LAYERNORM DENSE DROPOUT PRELU SPECNORM MHA"))
_MERGE = set(engine_kinds("ADD SUBTRACT MULTIPLY AVERAGE MAXIMUM MINIMUM CONCAT"))
_RNN = set(engine_kinds("SIMPLE_RNN LSTM GRU BIDIR"))
(_EMBEDDING, _SEQ_MASK, _SWITCH) = engine_kinds("EMBEDDING SEQ_MASK SWITCH")


def _origin(t, memo):
    """The tensor whose nonzero entries are t's mask (an Embedding's ids, a mask= argument), or None."""
    node = t._node
    if node is None:
        return None
    key = id(t)
    if key in memo:
        return memo[key]
    memo[key] = None   # (a cycle cannot occur; this only guards the walk)
    layer = node.layer
    try:
        spec = layer.spec()
    except Exception:   # (not an engine layer: no mask, as the engine's kinds without a hook)
        return None
    kind, ins = spec.get("kind"), node.inputs
    out = None
    if kind == _EMBEDDING:
        out = _origin(ins[0], memo) if spec.get("reverse") else ins[0] if spec.get("mask_zero") else None
    elif kind == _SEQ_MASK:
        out = ins[0]
    elif kind in _KEEP:
        out = _origin(ins[0], memo)
    elif kind in _MERGE:
        found = [m for m in (_origin(u, memo) for u in ins) if m is not None]
        out = found[0] if found else None
    elif kind in _RNN:
        parts = layer._parts() if hasattr(layer, "_parts") else [None]
        k = next(i for i, o in enumerate(node.outputs) if o is t)
        part = parts[k] if k < len(parts) else 0
        seq = part in (-1, -2) or part is None and bool(getattr(layer, "return_sequences", False))
        out = _origin(ins[0], memo) if seq else None
    elif kind == _SWITCH:
        a, b = (_origin(u, memo) for u in ins[:2])
        out = a if a is b else None
    memo[key] = out
    return out


def mask_of(t):
    """The (batch, T) step mask t carries, as a 0 / 1 tensor of the graph, or None."""
    src = _origin(t, {})
    return None if src is None else ops.not_equal(src, 0.0)


def masked(values, t, loss, name, over_batch):
    """A custom loss's values weighed by the step mask output t carries, as Keras's Loss.__call__; a loss that is
    already one mean over the batch keeps it (Keras's weights then sum to one)."""
    mask = None if over_batch or len(t._ps) < 2 else mask_of(t)
    if mask is None:
        return values
    if getattr(loss.given, "_keras_builtin", False) and tuple(values._ps) != tuple(mask._ps):
        return values   # (Keras's own losses written in keras.ops, one value per sample: as they were)
    return masked_values(values, mask, loss.name, name, t.shape)


def masked_values(values, mask, loss_name, output_name, shape):
    """A custom loss's per-step values (batch, T) weighed as Keras's apply_mask: mask * total / valid (valid the
    unmasked steps of the whole batch; 0 where none), so that their mean over the batch is Keras's masked loss.
    Values of another shape than the mask's are refused by name (Keras multiplies them with the mask, which
    does not broadcast)."""
    if tuple(values._ps) != tuple(mask._ps):
        raise ValueError(f"loss {loss_name!r}: the output {output_name!r} {shape} carries a step mask (an "
                         f"Embedding(mask_zero=True) or a mask= argument) of shape {(None,) + tuple(mask._ps)}, "
                         f"which Keras multiplies into the loss's values, of shape {values.shape} here: they do "
                         "not broadcast (Keras fails too); return one value per step (reduce over the last axis "
                         "only), or drop the mask (mask_zero=False)")
    share = ops.divide_no_nan(1.0, BatchReduce("mean")(mask))   # total / valid over the whole batch
    return ops.multiply(ops.multiply(values, mask), share)
