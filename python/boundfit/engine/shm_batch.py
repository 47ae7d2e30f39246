"""A batch in a shared-memory block: what a worker process's __getitem__
returned (x, y, sample weights: arrays, or tuples / lists / dicts of them)
written into the block, array after array at 64-byte-aligned offsets, and
described by a skeleton (the same structure with each array replaced by
its offset, dtype and shape) that the parent reads back as NumPy views of
the block, without another copy (engine/worker_procs.py)."""

import numpy as np

_ALIGN = 64


class Slot:
    """Where one array of a batch lies in its block."""
    __slots__ = ("offset", "dtype", "shape")

    def __init__(self, offset, dtype, shape):
        self.offset, self.dtype, self.shape = offset, dtype, shape

    def __reduce__(self):
        return Slot, (self.offset, self.dtype, self.shape)


def _leaves(item):
    """The arrays of a batch, depth first, as the skeleton lists them."""
    if isinstance(item, (tuple, list)):
        for v in item:
            yield from _leaves(v)
    elif isinstance(item, dict):
        for v in item.values():
            yield from _leaves(v)
    elif item is not None:
        yield np.asarray(item)


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def size(item):
    """Bytes of the block that holds batch `item`."""
    return sum(_aligned(a.nbytes) for a in _leaves(item))


def write(item, buf):
    """Batch `item` copied into the buffer `buf` (a memoryview); its skeleton. ValueError if an array holds
    Python objects or the batch needs more than len(buf) bytes."""
    need = size(item)
    if need > len(buf):
        raise ValueError(f"needs {need} bytes, the shared block holds {len(buf)} (sized from the first batch)")
    off = [0]

    def put(v):
        if isinstance(v, (tuple, list)):
            return type(v)(put(e) for e in v) if isinstance(v, tuple) else [put(e) for e in v]
        if isinstance(v, dict):
            return {k: put(e) for k, e in v.items()}
        if v is None:
            return None
        a = np.asarray(v)
        if a.dtype.hasobject:
            raise ValueError(f"holds Python objects (dtype {a.dtype}), which cannot be passed in shared memory")
        s = Slot(off[0], a.dtype.str, a.shape)
        np.ndarray(a.shape, a.dtype, buffer=buf, offset=s.offset)[...] = a
        off[0] += _aligned(a.nbytes)
        return s
    return put(item)


def read(skeleton, buf):
    """The batch of `skeleton`, its arrays views of `buf`."""
    if isinstance(skeleton, tuple):
        return tuple(read(e, buf) for e in skeleton)
    if isinstance(skeleton, list):
        return [read(e, buf) for e in skeleton]
    if isinstance(skeleton, dict):
        return {k: read(e, buf) for k, e in skeleton.items()}
    if isinstance(skeleton, Slot):
        return np.ndarray(skeleton.shape, np.dtype(skeleton.dtype), buffer=buf, offset=skeleton.offset)
    return skeleton
