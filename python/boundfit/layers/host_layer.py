"""The base of Keras 3's structured-data preprocessing layers (StringLookup,
IntegerLookup, Hashing, HashedCrossing, CategoryEncoding, Discretization):
host-side layers computed in NumPy, never engine nodes. Called on arrays or
lists they return what Keras 3 returns on the JAX backend (values, shapes,
dtypes); on a TensorFlow tensor inside a traced graph (tf.data's map) they
run through tf.numpy_function; on a model's own Input they make its first
stage (graph.host_stages, engine/host_stage.py: each batch is encoded on the
host into a buffer of the plan, which the engine takes as its input).
encode() is Keras's encode_categorical_inputs on NumPy."""

import sys

import numpy as np

from ..errors import DataError
from .layer import Layer
from .node import KerasTensor, Node, _as_tensors

CATEGORICAL_MODES = ("int", "one_hot", "multi_hot", "count")


def output_mode_arg(layer, mode, allowed):
    mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(mode, mode)
    if mode not in allowed:
        raise ValueError(f"{layer}: output_mode must be one of {list(allowed)}, got output_mode={mode!r}")
    return mode


def refuse_sparse(layer, sparse):
    if sparse:
        raise ValueError(f"{layer}: sparse=True is not supported by boundfit (Keras allows it only on the TensorFlow "
                         "backend); use sparse=False for dense NumPy outputs")


def positive_int(layer, value, arg, minimum=1, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{layer}: {arg} must be an int >= {minimum}{' or None' if allow_none else ''}, got "
                         f"{arg}={value!r}")
    return int(value)


def as_values(x, what):
    """An array of the values a layer is called on: a NumPy array, a list / tuple (nested), a scalar, or another
    library's eager tensor (JAX, TensorFlow: through __array__ / numpy())."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "numpy") and not hasattr(x, "__array__"):
        x = x.numpy()
    try:
        a = np.asarray(x)
    except Exception as e:   # ragged lists
        raise DataError(f"{what}: the input could not be converted to an array: {e}") from None
    if a.dtype.kind == "U":
        a = a.astype(object)
    return a


def encode(ids, mode, depth, dtype, count_weights=None):
    """Keras's encode_categorical_inputs on ids (an int64 array): "int" as is;
    "one_hot" per value (a last axis of 1 replaced by the depth); "multi_hot"
    / "count" over the last axis (a 1-D input is one sample). Ids outside
    [0, depth) count nowhere (a mask's value, as TensorFlow's bincount drops them)."""
    if mode == "int":
        return ids.astype(dtype)
    if ids.ndim == 0:
        ids = ids.reshape(1)
    if mode == "one_hot":
        if ids.ndim > 1 and ids.shape[-1] == 1:
            ids = ids[..., 0]
        return (ids[..., None] == np.arange(depth)).astype(dtype)
    if ids.ndim > 2:
        raise DataError(f"output_mode={mode!r} takes inputs of rank 1 or 2 (one sample, or a batch of samples), "
                        f"got shape {ids.shape}")
    rows = ids.reshape(-1, ids.shape[-1]) if ids.ndim == 2 else ids.reshape(1, -1)
    out = np.zeros((rows.shape[0], depth), np.float64 if count_weights is not None else np.int64)
    r, c = np.nonzero((rows >= 0) & (rows < depth))
    if mode == "multi_hot":
        out[r, rows[r, c]] = 1
    else:
        w = 1 if count_weights is None else np.broadcast_to(np.asarray(count_weights, np.float64).reshape(
            rows.shape if np.ndim(count_weights) == ids.ndim else (rows.shape[0], -1)), rows.shape)[r, c]
        np.add.at(out, (r, rows[r, c]), w)
    out = out.astype(dtype)
    return out if ids.ndim == 2 else out[0]


def encoded_shape(mode, in_shape, depth):
    """Keras's compute_output_shape of an encoding (in_shape with its batch axis)."""
    in_shape = tuple(in_shape)
    if mode == "int":
        return in_shape
    if not in_shape:
        return (depth,)
    if mode == "one_hot":
        return (in_shape[:-1] if len(in_shape) > 1 and in_shape[-1] == 1 else in_shape) + (depth,)
    return in_shape[:-1] + (depth,)


class HostLayer(Layer):
    """A layer computed on the host in NumPy. Subclasses define _compute(a)
    (an array in, an array out), out_dtype() (NumPy's, as Keras 3 on JAX
    returns it), compute_output_shape and _input_kinds (the NumPy dtype kinds
    it takes: "USO" for strings, "biu" for integers, ...)."""
    _host_side = True
    _input_kinds = "biufUSO"

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, KerasTensor) or (isinstance(inputs, (list, tuple)) and inputs
                                               and isinstance(inputs[0], KerasTensor)):
            if args or kwargs:
                raise TypeError(f"{self.name} ({type(self).__name__}): unexpected arguments after the inputs")
            return self._symbolic(inputs)
        traced = self._tf_graph_call(inputs, *args, **kwargs)
        if traced is not None:
            return traced
        return self._compute(self._values(inputs), *args, **kwargs)

    def _values(self, inputs):
        a = as_values(inputs, f"{self.name} ({type(self).__name__})")
        if a.dtype.kind not in self._input_kinds:
            raise DataError(f"{self.name} ({type(self).__name__}) takes {self._kinds_text()}, got dtype {a.dtype}")
        return a

    def _kinds_text(self):
        k = self._input_kinds
        return "strings" if k == "USO" else "integers" if k == "biu" else "numbers" if "S" not in k else \
            "integers or strings"

    def _tf_graph_call(self, inputs, *args, **kwargs):
        """A TensorFlow tensor in a traced graph (tf.data's map(), as keras.io's structured-data examples call
        these layers): the layer runs in Python on the batch's values when the graph runs. TensorFlow is used
        only when the caller already has it: boundfit never imports it."""
        tf = sys.modules.get("tensorflow")
        tensors = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        if tf is None or not tensors or not all(type(t).__module__.startswith("tensorflow") and tf.is_tensor(t)
                                                for t in tensors) or tf.executing_eagerly():
            return None
        dtype = self.out_dtype()
        tf_dtype = tf.string if dtype == object else tf.as_dtype(np.dtype(dtype))

        def run(*xs):
            out = self._compute(xs[0] if not isinstance(inputs, (list, tuple)) else list(xs), *args, **kwargs)
            return out.astype(np.bytes_) if out.dtype == object else out
        out = tf.numpy_function(run, list(tensors), tf_dtype, stateful=False)
        shape = tensors[0].shape
        if shape.rank is not None:
            out.set_shape(self.compute_output_shape(tuple(shape.as_list())))
        return out

    # ---- a model's first stage (graph.host_stages, engine/host_stage.py) ----
    def _symbolic(self, inputs):
        ins, _ = _as_tensors(self.name, inputs)
        who = f"{self.name} ({type(self).__name__})"
        if len(ins) != 1:
            raise ValueError(f"{who} takes one input tensor in a model, got {len(ins)}")
        t = ins[0]
        if t._input_layer is None:
            raise ValueError(f"{who} runs on the host before the engine, so in a model it must be called on one "
                             "of the model's keras.Input tensors itself (or apply it to the data first, e.g. in a "
                             "tf.data map)")
        if None in t._ps:
            raise ValueError(f"{who} takes an Input of a fixed shape, got {t.shape}")
        kind = "USO" if t.dtype == "string" else np.dtype(t.dtype).kind
        if not set(kind) & set(self._input_kinds):
            raise ValueError(f"{who} takes {self._kinds_text()}, got an Input of dtype {t.dtype!r}")
        self._check_stage_input(t._ps)
        self._stage_in = tuple(t._ps)
        out = KerasTensor(self._stage_shape(), dtype=np.dtype(self.batch_dtype()).name, name=f"{self.name}_output")
        Node(self, ins, [out])
        return out

    def _check_stage_input(self, ps):
        if getattr(self, "output_mode", "int") in ("multi_hot", "count", "tf_idf") and not ps:
            raise ValueError(f"{self.name} ({type(self).__name__}): output_mode={self.output_mode!r} encodes the "
                             "values of a sample's last axis; give the Input a shape such as (1,), got ()")

    def _stage_shape(self):
        """The per-sample shape of the stage's output (the engine's input)."""
        return tuple(self.compute_output_shape((None,) + self._stage_in)[1:])

    def batch_dtype(self):
        """The stage buffer's dtype: the layer's output dtype (the engine takes int32 and float32 inputs)."""
        dt = np.dtype(self.out_dtype())
        if dt.kind == "O":
            raise ValueError(f"{self.name} ({type(self).__name__}) makes strings (invert=True), which a model's "
                             "engine cannot take; apply it to the model's predictions instead")
        return np.int32 if dt.kind in "biu" else np.float32

    def vectorize(self, inputs, out=None):
        """One batch's values (rows of the stage's Input) encoded into out (an
        array of the output's shape, or more rows), or a new array."""
        a = self._values(inputs)
        n = a.shape[0] if a.ndim else 1
        if a.shape[1:] != self._stage_in:
            if int(np.prod(a.shape[1:], dtype=np.int64)) != int(np.prod(self._stage_in, dtype=np.int64)):
                raise DataError(f"{self.name} ({type(self).__name__}): the data has per-sample shape "
                                f"{a.shape[1:]}, the Input {self._stage_in}")
            a = a.reshape((n,) + self._stage_in)
        res = self._compute(a)
        if out is None:
            return res.astype(self.batch_dtype(), copy=False)
        out[:n] = res
        return out[:n]

    def output_width(self):
        return int(np.prod(self._stage_shape(), dtype=np.int64))

    def temporaries_bound(self, rows, longest):
        """Bytes the Python and NumPy objects encoding one batch hold at once (a
        bound): the values as objects and their strings, the distinct values'
        table, the ids (int64) and the encoded copy before it is written."""
        per_in = int(np.prod(self._stage_in, dtype=np.int64)) if getattr(self, "_stage_in", None) else 1
        per_out = int(np.prod(self._stage_shape(), dtype=np.int64)) if getattr(self, "_stage_in", None) else 1
        return rows * per_in * (3 * (8 * max(longest, 8) + 64) + 4 * 8) + rows * per_out * 8 * 2 + 4096

    def spec(self):
        raise ValueError(f"{self.name} ({type(self).__name__}) runs on the host, before the engine: call it on a "
                         "model's keras.Input (its first stage), or on the data before fit")
