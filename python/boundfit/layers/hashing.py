"""Hashing and HashedCrossing: Keras 3's hashing layers in NumPy, host-side
(host_layer.py), bin for bin as Keras computes them through TensorFlow:
Hashing takes FarmHash's Fingerprint64 (or SipHash-2-4 under a salt) of each
value's string (an integer's decimal digits; a float truncated to an integer
first) modulo the bins, with mask_value's bin 0; HashedCrossing combines the
fingerprints of a sample's values as tf.sparse.cross_hashed does (strings
fingerprinted, integers as they are). Each distinct value is hashed once."""

import numpy as np

from ..errors import DataError
from . import hash64
from .host_layer import HostLayer, as_values, encode, encoded_shape, output_mode_arg, positive_int, refuse_sparse
from .layer import keras_config


def _as_bytes(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    raise DataError(f"expected strings, got {type(v).__name__} {v!r}")


class Hashing(HostLayer):
    """Keras 3's Hashing(num_bins, mask_value=None, salt=None, output_mode="int"): strings or integers to
    num_bins bins, equal to Keras's (FarmHash64; SipHash64 with a salt)."""
    _host_side = True   # shaped here, not by the engine (host_layer.HostLayer)
    _base = "hashing"

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, **kwargs):
        dtype = kwargs.pop("dtype", None)
        super().__init__(**kwargs)
        self.num_bins = positive_int("Hashing", num_bins, "num_bins")
        self.output_mode = output_mode_arg("Hashing", output_mode, ("int", "one_hot", "multi_hot", "count"))
        if sparse and self.output_mode == "int":
            raise ValueError("Hashing: sparse may only be True if output_mode is 'one_hot', 'multi_hot' or 'count'")
        refuse_sparse("Hashing", sparse)
        name = dtype.get("config", {}).get("name") if isinstance(dtype, dict) else dtype
        if self.output_mode == "int" and name not in (None, "int32", "int64"):
            raise ValueError(f"Hashing: when output_mode='int', dtype should be an integer type, 'int32' or 'int64', "
                             f"got dtype={name!r}")
        self._dtype_name = name or ("int64" if self.output_mode == "int" else "float32")
        self.mask_value = mask_value
        self.sparse = False
        if salt is None:
            self.salt = None
        elif isinstance(salt, (tuple, list)) and len(salt) == 2 and all(isinstance(v, int) for v in salt):
            self.salt = [int(v) for v in salt]
        elif isinstance(salt, int) and not isinstance(salt, bool):
            self.salt = [salt, salt]
        else:
            raise ValueError(f"Hashing: salt must be an int or a tuple of 2 ints, got salt={salt!r}")

    def out_dtype(self):
        """int32 bins ("int", Keras's int64 on JAX), float32 encodings (Keras's floatx)."""
        return np.int32 if self.output_mode == "int" else np.float32

    def compute_output_shape(self, input_shape):
        """Keras's: the input's shape for "int"; the last axis replaced by num_bins otherwise."""
        input_shape = tuple(input_shape)
        if self.output_mode == "int":
            return input_shape
        return (self.num_bins,) if not input_shape else input_shape[:-1] + (self.num_bins,)

    def _compute(self, a):
        bins = self.num_bins
        masked = self.mask_value is not None and bins > 1
        if masked:
            bins -= 1
        flat = a.reshape(-1)
        u, inv = np.unique(flat, return_inverse=True) if flat.dtype != object else _unique_objects(flat)
        ids = np.array([self._bin(v, bins, masked) for v in u.tolist()], np.int64)[inv].reshape(a.shape)
        if self.output_mode == "one_hot" and ids.ndim and ids.shape[-1] == 1:
            ids = ids[..., 0]
        return encode(ids, self.output_mode, self.num_bins, self.out_dtype())

    def _bin(self, v, bins, masked):
        if masked and (v == self.mask_value or (isinstance(v, bytes) and isinstance(self.mask_value, str)
                                                 and v == self.mask_value.encode("utf-8"))):
            return 0
        if isinstance(v, float):
            v = int(v)   # tf.cast to int64: toward zero
        b = str(int(v)).encode() if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else _as_bytes(v)
        h = hash64.siphash(self.salt, b) if self.salt is not None else hash64.fingerprint64(b)
        return h % bins + (1 if masked else 0)


class HashedCrossing(HostLayer):
    """Keras 3's HashedCrossing(num_bins, output_mode="int"): a tuple of integer or string features (each of
    shape (), (N,) or (N, 1)) crossed into num_bins bins, equal to Keras's (tf.sparse.cross_hashed). It takes
    several inputs, so it runs on arrays and in tf.data pipelines, not as a model's stage."""
    _host_side = True   # shaped here, not by the engine (host_layer.HostLayer)
    _base = "hashed_crossing"

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_bins = positive_int("HashedCrossing", num_bins, "num_bins")
        self.output_mode = output_mode_arg("HashedCrossing", output_mode, ("int", "one_hot"))
        refuse_sparse("HashedCrossing", sparse)
        self.sparse = False

    def out_dtype(self):
        """int32 bins ("int", Keras's int64 on JAX), float32 one-hot encodings."""
        return np.int32 if self.output_mode == "int" else np.float32

    def compute_output_shape(self, input_shape):
        """Keras's, for a list of the inputs' shapes."""
        first = tuple(input_shape[0]) if input_shape and isinstance(input_shape[0], (tuple, list)) else \
            tuple(input_shape)
        if self.output_mode == "int":
            return first
        if not first:
            return (self.num_bins,)
        if first[-1] != 1:
            return first + (self.num_bins,)
        return first[:-1] + (self.num_bins,)

    def _symbolic(self, inputs):
        raise ValueError(f"{self.name} (HashedCrossing) crosses several inputs, which boundfit's model stages do "
                         "not take: apply it to the data before the model (ids = layer((a, b)), or in a tf.data "
                         "map) and give the model an Input for its output")

    def _values(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise DataError(f"{self.name} (HashedCrossing) should be called on a list or tuple of inputs, got "
                            f"{type(inputs).__name__}")
        if len(inputs) < 2:
            raise DataError(f"{self.name} (HashedCrossing) should be called on at least two inputs, got "
                            f"{len(inputs)}")
        arrays = [as_values(x, f"{self.name} (HashedCrossing)") for x in inputs]
        shape = arrays[0].shape
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise DataError(f"{self.name} (HashedCrossing): all inputs should have shape (), (batch_size) or "
                            f"(batch_size, 1), got {shape}")
        if any(a.shape != shape for a in arrays):
            raise DataError(f"{self.name} (HashedCrossing): all inputs should have equal shape, got "
                            f"{[a.shape for a in arrays]}")
        if any(a.dtype.kind not in "biuUSO" for a in arrays):
            raise DataError(f"{self.name} (HashedCrossing): all inputs should have an integer or string dtype, got "
                            f"{[str(a.dtype) for a in arrays]}")
        return arrays

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)) and inputs and not all(hasattr(x, "shape") for x in inputs):
            inputs = type(inputs)(np.asarray(x) for x in inputs)
        return super().__call__(inputs, *args, **kwargs)

    def _compute(self, arrays):
        if not isinstance(arrays, list) or not arrays or not isinstance(arrays[0], np.ndarray) \
                or any(a.dtype.kind not in "biuUSO" for a in arrays):
            arrays = self._values(arrays)
        shape = arrays[0].shape
        feats = []
        for a in arrays:
            flat = a.reshape(-1)
            if flat.dtype.kind in "biu":
                feats.append([int(v) & hash64.M64 for v in flat.tolist()])
            else:
                u, inv = _unique_objects(flat.astype(object))
                fp = [hash64.fingerprint64(_as_bytes(v)) for v in u.tolist()]
                feats.append([fp[i] for i in inv.tolist()])
        out = []
        for vals in zip(*feats):
            h = hash64.CROSS_KEY
            for v in vals:
                h = hash64.fingerprint_cat64(h, v)
            out.append(h % self.num_bins)
        ids = np.array(out, np.int64).reshape(shape)
        if self.output_mode == "int":
            return ids.astype(np.int32)
        return encode(ids.reshape(shape[:1] + (1,)) if len(shape) else ids, "one_hot", self.num_bins, np.float32)


def _unique_objects(flat):
    """np.unique(return_inverse=True) of an object array of str / bytes (mixed types do not sort): by dict."""
    index, inv = {}, np.empty(len(flat), np.int64)
    for k, v in enumerate(flat.tolist()):
        inv[k] = index.setdefault(v, len(index))
    u = np.empty(len(index), dtype=object)
    u[:] = list(index)
    return u, inv


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(Hashing)
def _hashing_config(l):
    return dict(dtype={"module": "keras", "class_name": "DTypePolicy", "config": {"name": l._dtype_name},
                       "registered_name": None},
                num_bins=l.num_bins, salt=l.salt, mask_value=l.mask_value, output_mode=l.output_mode, sparse=False)


@keras_config(HashedCrossing)
def _hashed_crossing_config(l):
    return dict(num_bins=l.num_bins, output_mode=l.output_mode, sparse=False,
                dtype="int64" if l.output_mode == "int" else "float32")
