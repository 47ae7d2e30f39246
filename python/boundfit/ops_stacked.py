"""keras.ops.stack(xs, axis=0) of symbolic tensors: Keras's tensor (k, batch, ...) has the stack's axis before
the batch's, which boundfit's graphs keep first, so the stack is kept as its k tensors (Stacked), each of the
whole batch, and the ops that read it along its axis 0 compute per sample (keras.io's attention MIL:
`alpha = ops.softmax(ops.stack(scores), axis=0)`, then `alpha[i]`): indexing (`s[i]`, `s[i, ...]`), `len`,
iteration, `.shape`, ops.unstack, ops.softmax / ops.log_softmax over axis 0 (over a new last axis of the
stacked samples, then split back), ops.sum / mean / max / min over axis 0 (between the k tensors). Anything
else is refused by name (OpNotSupportedError), never computed on the wrong axes."""

from .errors import OpNotSupportedError


def _refuse(what):
    raise OpNotSupportedError(
        f"{what} of a stack along the batch axis (keras.ops.stack(xs, axis=0) of symbolic tensors) is not "
        "supported by boundfit's graphs: it keeps the batch axis first, so it holds such a stack as its tensors; "
        "index it (s[i]), ops.unstack it, or take ops.softmax / log_softmax / sum / mean / max / min over its "
        "axis 0, or stack along a sample axis (axis=-1) instead")


class Stacked:
    """k symbolic tensors of one shape stacked on a new axis 0 (Keras's shape (k, batch, ...))"""

    def __init__(self, xs):
        self.xs = list(xs)

    @property
    def shape(self):
        return (len(self.xs),) + tuple(self.xs[0].shape)

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return len(self.xs)

    def __iter__(self):
        return iter(self.xs)

    def __getitem__(self, key):
        first, rest = (key[0], key[1:]) if isinstance(key, tuple) else (key, ())
        if isinstance(first, slice):
            if rest:
                _refuse("indexing past the stack's axis with a slice")
            return Stacked(self.xs[first]) if self.xs[first] else _refuse("an empty slice")
        if not isinstance(first, int) or not -len(self.xs) <= first < len(self.xs):
            raise IndexError(f"index {first!r} of a stack of {len(self.xs)} tensors")
        x = self.xs[first]
        return x[rest] if rest else x

    def __array__(self, *args, **kwargs):
        _refuse("an op")

    def __repr__(self):
        return f"<stack of {len(self.xs)} tensors, shape {self.shape}>"


def stacked_axis0(op, axis, ndim):
    """axis (of a Stacked) names the stack's axis 0, else the op is refused"""
    if axis not in (0, -ndim):
        _refuse(f"keras.ops.{op} over axis {axis!r}")


def softmax(ops, s, axis, log=False):
    """(log_)softmax across the stack: over a new last axis of the stacked samples, split back"""
    stacked_axis0("log_softmax" if log else "softmax", axis, s.ndim)
    t = ops.stack(s.xs, axis=-1)
    y = ops.log_softmax(t, axis=-1) if log else ops.softmax(t, axis=-1)
    return Stacked(ops.unstack(y, axis=-1))


def reduce(ops, op, s, axis, keepdims):
    """sum / mean / max / min across the stack's tensors (per sample)"""
    stacked_axis0(op, axis, s.ndim)
    if keepdims:
        _refuse(f"keras.ops.{op} with keepdims=True")
    if op in ("sum", "mean"):
        y = s.xs[0]
        for x in s.xs[1:]:
            y = ops.add(y, x)
        return ops.divide(y, float(len(s.xs))) if op == "mean" else y
    y = s.xs[0]
    for x in s.xs[1:]:
        y = ops.maximum(y, x) if op == "max" else ops.minimum(y, x)
    return y
