"""tf.data.Dataset and torch DataLoader as data sources: re-iterated every
epoch (validation too), each element taken as one batch (as Keras 3 takes a
tf.data.Dataset: batched or not, an element is a batch), its tensors turned
into NumPy arrays without a copy where the framework allows (a CPU tensor's
memory is shared; a GPU tensor is copied to the host). An element is x,
(x,), (x, y) or (x, y, sample_weight); x and y may be tuples, lists or dicts
of tensors. The batches are then checked as any Python source's are
(sources.SequenceData: each against the first)."""

import numpy as np

from ...errors import DataError


def to_numpy(t, what):
    """One tensor (or array) as a NumPy array sharing its memory where it can."""
    if isinstance(t, np.ndarray) or t is None:
        return t
    mod = (type(t).__module__ or "").split(".")[0]
    name = type(t).__name__
    if name in ("RaggedTensor", "SparseTensor") or getattr(t, "is_sparse", False):
        raise DataError(f"{what}: a {name} is not supported; pad it to a dense tensor (e.g. .to_tensor())")
    if mod == "torch":
        if getattr(t, "is_sparse", False) or getattr(t, "layout", None) is not None and "strided" not in str(t.layout):
            raise DataError(f"{what}: a torch tensor with layout {t.layout} is not supported; make it dense")
        return t.detach().cpu().numpy()   # a view of a CPU tensor; a GPU tensor comes to the host
    return np.asarray(t)                  # tf: EagerTensor.__array__ shares a CPU tensor's buffer


def _tree(v, what):
    if isinstance(v, dict):
        return {k: _tree(e, f"{what}[{k!r}]") for k, e in v.items()}
    if isinstance(v, (tuple, list)):
        return tuple(_tree(e, f"{what}[{k}]") for k, e in enumerate(v))
    return to_numpy(v, what)


def _leaves(v):
    if isinstance(v, dict):
        return [e for x in v.values() for e in _leaves(x)]
    if isinstance(v, (tuple, list)):
        return [e for x in v for e in _leaves(x)]
    return [v]


def element(el, what):
    """An element as the (x, y, sample_weight) tuple a Python source yields."""
    if isinstance(el, list):
        el = tuple(el)
    if not isinstance(el, tuple):
        el = (el,)   # x alone (a tensor or a dict of them), as Keras takes it
    if len(el) > 3:
        raise DataError(f"{what}: an element must be x, (x,), (x, y) or (x, y, sample_weight); this one has "
                        f"{len(el)} parts")
    names = ("x", "y", "sample_weight")
    return tuple(_tree(e, f"{what} {n}") for e, n in zip(el, names))


class Batches:
    """A tf.data.Dataset or DataLoader as a re-iterable of NumPy batches: each
    iteration (epoch) starts the source over."""
    _keeps_order = True   # fit(shuffle=...) leaves its order alone, as Keras does a tf.data.Dataset's

    def __init__(self, source, kind):
        self.source, self.kind = source, kind
        spec = getattr(source, "element_spec", None)   # tf.data: the elements' shapes, before one is read
        if spec is not None and any(getattr(getattr(s, "shape", None), "rank", None) == 0 for s in _leaves(spec)):
            raise DataError(f"the {kind}'s elements hold scalars (element_spec {spec}): it is not batched, and an "
                            "element is taken as one batch (as Keras 3 takes it); call .batch(batch_size) on it")

    def __iter__(self):
        for k, el in enumerate(self.source):
            yield element(el, f"{self.kind} batch {k}")

    def __repr__(self):
        return f"Batches({self.kind})"
