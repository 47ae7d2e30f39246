"""InputSpec (Keras 3's keras.InputSpec / keras.layers.InputSpec): what a
layer expects of the inputs of its first call argument (rank, dtype, shape,
sizes of given axes), and check(), which Layer.__call__ applies where a layer
sets self.input_spec, raising ValueError with Keras's messages' meaning
(which input, of which layer, expected what, found what)."""

import numpy as np


def _dtype_name(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in ("string", "bool", "float32", "float16", "bfloat16", "int32", "int64"):
        return dtype
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)


def _checked_rank(v, argument):
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0):
        raise ValueError(f"InputSpec: {argument} must be None or an int >= 0, got {argument}={v!r}")
    return None if v is None else int(v)


class InputSpec:
    """Keras 3's `InputSpec(dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
    allow_last_axis_squeeze=False, name=None, optional=False)`: shape includes the batch axis (None: any size);
    axes maps an axis (negative from the end) to its size."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype = _dtype_name(dtype)
        if shape is not None:
            if not isinstance(shape, (list, tuple)) or not all(
                    d is None or isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
                    for d in shape):
                raise ValueError(f"InputSpec: shape must be a tuple of ints >= 0 and None, got shape={shape!r}")
            self.shape, self.ndim = tuple(None if d is None else int(d) for d in shape), len(shape)
        else:
            self.shape, self.ndim = None, _checked_rank(ndim, "ndim")
        self.max_ndim, self.min_ndim = _checked_rank(max_ndim, "max_ndim"), _checked_rank(min_ndim, "min_ndim")
        self.name, self.optional, self.allow_last_axis_squeeze = name, bool(optional), bool(allow_last_axis_squeeze)
        try:
            self.axes = {int(k): v for k, v in (axes or {}).items()}
        except (ValueError, TypeError, AttributeError):
            raise TypeError(f"InputSpec: axes must be a dict with integer keys, got axes={axes!r}")
        top = self.ndim if self.ndim else self.max_ndim
        if self.axes and top is not None and max(self.axes) > top - 1:
            raise ValueError(f"InputSpec: axes: axis {max(self.axes)} is greater than the maximum allowed value "
                             f"{top - 1}")

    def __repr__(self):
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                         ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                         ("axes", self.axes)) if v]
        return f"InputSpec({', '.join(parts)})"

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim, "max_ndim": self.max_ndim,
                "min_ndim": self.min_ndim, "axes": self.axes, "optional": self.optional}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flat(item)]
    if isinstance(x, dict):
        return [y for k in x for y in _flat(x[k])]
    return [x]


def check(input_spec, inputs, layer_name):
    """Keras's assert_input_compatibility: inputs (a tensor, an array or a nest of them) against input_spec (an
    InputSpec or a nest of them, None entries skipped); ValueError saying which input fails which expectation."""
    if not input_spec:
        return
    specs = _flat(input_spec)
    if isinstance(inputs, dict) and all(getattr(s, "name", None) for s in specs):
        missing = [s.name for s in specs if s.name not in inputs]
        if missing:
            raise ValueError(f"Missing data for input {missing[0]!r}: you passed a dict with keys {list(inputs)}; "
                             f"layer {layer_name!r} expects the keys {[s.name for s in specs]}")
        inputs = [inputs[s.name] for s in specs]
    xs = _flat(inputs)
    if len(xs) != len(specs):
        raise ValueError(f"Layer {layer_name!r} expects {len(specs)} input(s), but it received {len(xs)} input "
                         "tensors")
    for k, (x, spec) in enumerate(zip(xs, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(x, "shape"):
            raise ValueError(f"Inputs to a layer should be tensors; got {x!r} (of type {type(x).__name__}) as input "
                             f"for layer {layer_name!r}")
        shape = tuple(None if d is None else int(d) for d in x.shape)
        where = f"Input {k} with name {spec.name!r} of layer {layer_name!r} is incompatible with the layer"
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and len(shape) != spec.ndim:
            raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={len(shape)}. Full shape received: "
                             f"{shape}")
        if spec.max_ndim is not None and len(shape) > spec.max_ndim:
            raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={len(shape)}")
        if spec.min_ndim is not None and len(shape) < spec.min_ndim:
            raise ValueError(f"{where}: expected min_ndim={spec.min_ndim}, found ndim={len(shape)}. Full shape "
                             f"received: {shape}")
        if spec.dtype is not None and _dtype_name(getattr(x, "dtype", None)) != spec.dtype:
            raise ValueError(f"{where}: expected dtype={spec.dtype}, found dtype={_dtype_name(x.dtype)}")
        for axis, value in spec.axes.items():
            if value is not None and -len(shape) <= axis < len(shape) and shape[axis] not in (value, None):
                raise ValueError(f"{where}: expected axis {axis} of input shape to have value {value}, but received "
                                 f"input with shape {shape}")
        if spec.shape is not None:
            want, got = spec.shape, shape
            if spec.allow_last_axis_squeeze:
                got = got[:-1] if got and got[-1] == 1 else got
                want = want[:-1] if want and want[-1] == 1 else want
            if any(w is not None and g is not None and w != g for w, g in zip(want, got)):
                raise ValueError(f"{where}: expected shape={spec.shape}, found shape={shape}")
