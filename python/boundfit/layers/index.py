"""The engine's index primitives as graph pieces (ops_index.py builds them
from keras.ops calls): Gather (take / take_along_axis, the values of sort
and top_k; csrc/core/layers/gather.c), Scan (cumsum / cumprod: scan.c) and
ArgSort (the positions of a stable sort, of its first k: argsort.c). Axes
are per sample (0: the first axis after the batch axis). Not Keras layers:
Keras files hold them as the operation nodes of the keras.ops calls
(layers/opnode.py)."""

from .args import engine_kinds
from .layer import Layer

GATHER, SCAN, ARGSORT = engine_kinds("GATHER SCAN ARGSORT")


class Gather(Layer):
    """x at the positions `ids` holds along per-sample axis `axis` of x: take (the ids' axes replace it), or
    along=True take_along_axis (ids of x's rank, the other axes equal or 1). Negative ids count from the end;
    one out of range gives NaN (JAX's mode "fill")."""
    _base = "gather"
    _n_inputs = "many"
    _scalar_ok = True

    def __init__(self, axis, along=False, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.along = int(axis), bool(along)

    def spec(self):
        return dict(kind=GATHER, name=self.name, g_axis=self.axis, g_along=int(self.along))


class Scan(Layer):
    """The cumulative sum (op="sum") or product (op="prod") along per-sample axis `axis`."""
    _base = "scan"
    OPS = ("sum", "prod")

    def __init__(self, axis, op="sum", **kwargs):
        super().__init__(**kwargs)
        if op not in self.OPS:
            raise ValueError(f"Scan: unknown op {op!r}; one of {self.OPS}")
        self.axis, self.op = int(axis), op

    def spec(self):
        return dict(kind=SCAN, name=self.name, s_axis=self.axis, s_prod=self.OPS.index(self.op))


class ArgSort(Layer):
    """The positions (as float32) of the first k elements of a stable sort along per-sample axis `axis`,
    ascending or (descending=True) descending; NaN sorts above every number. No gradient flows back."""
    _base = "argsort"

    def __init__(self, axis, k, descending=False, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.k, self.descending = int(axis), int(k), bool(descending)

    def spec(self):
        return dict(kind=ARGSORT, name=self.name, a_axis=self.axis, a_k=self.k, a_desc=int(self.descending))
