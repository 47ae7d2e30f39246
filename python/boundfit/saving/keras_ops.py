"""keras.ops math of a graph (layers/emath.py: Unary, Binary, MatMul) as the
operation nodes Keras 3 writes for the same keras.ops calls on KerasTensors
(keras/src/ops/numpy.py: Sqrt, Square, Absolute, Log, Maximum, Minimum, Add,
Subtract, Multiply, Divide, Greater ..., Matmul), and such nodes of a
Functional config back into a boundfit graph.

Writing: one node per call, or a short chain whose last entry carries the
node's name (so its consumers' references stay): a comparison is Keras's
Greater (a bool tensor) then Cast to float32 (boundfit's 0 / 1); a product
with a transposed operand is Transpose(axes=(0, 2, 1)) then Matmul; c / x
is Divide(c, x).

Reading: each operation through boundfit.ops (which traces it into the same
engine kinds: Unary, Binary, MatMul, Embedding for OneHot, ...), with the
options Keras's node holds in its config (Mean's axis and keepdims,
Softmax's axis, LeakyRelu's negative_slope, Clip's x_min / x_max, Reshape's
newshape ...), each checked: an option boundfit does not take (Max's
initial, a sparse ConvertToTensor) or does not know is named; two tensors
of one rank and different shapes into Binary (NumPy's size-1 broadcast).
An operation not in the table, or called in another form, is refused
naming it.

Calls boundfit builds from layers of other kinds (Var: Reduce, Binary and
Unary; Clip: two Unary; OneHot: a frozen Embedding ...) are one OpNode
(layers/opnode.py), written back by group_entry as the node Keras writes.

(Slice, Const and a custom layer's Weight, whose Keras form involves
layers or constants, are written and read in keras_graph.py.)"""

import numpy as np

from .. import layers as L, ops as bf_ops
from ..layers.node import KerasTensor
from ..layers.opnode import record
from ..layers.emath import BINARY_OPS
from ..ops_elementwise import BOOL, KERAS

MODULE = "keras.src.ops.numpy"
# each written class's module: the elementwise ops' (ops_elementwise.KERAS), Cast's, else MODULE
_MODULES = {cls: module for cls, module, _ in KERAS.values()} | {"Cast": "keras.src.ops.core"}
_BINARY = {"add": "Add", "subtract": "Subtract", "multiply": "Multiply", "divide": "Divide", "maximum": "Maximum",
           "minimum": "Minimum", "greater": "Greater", "greater_equal": "GreaterEqual", "less": "Less",
           "less_equal": "LessEqual"}

WRITTEN = (L.Unary, L.Binary, L.MatMul)


def _history(name, k, ps, dtype="float32"):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": [None, *ps], "dtype": dtype, "keras_history": [name, k, 0]}}


def _steps(op, node, k, ins):
    """[(entry name, class, extra config, args)] of call k (node, its inputs
    `ins` as __keras_tensor__ dicts); the last step is named op.name."""
    ps = list(node.outputs[0]._ps)
    if isinstance(op, (L.Unary, L.Binary)):
        cls, _, keys = KERAS[op.op]
        if isinstance(op, L.Binary):
            args, cfg = list(ins), {}
        elif op.op == "full_like":                        # FullLike(x, fill_value)
            args, cfg = [ins[0], op.param], {"dtype": None}
        elif op.op in BINARY_OPS:                       # a binary op with a number
            args, cfg = [op.param, ins[0]] if op.left else [ins[0], op.param], {}
        else:                                             # a unary op with its options (round's decimals, ...)
            args, cfg = [ins[0]], dict(zip(keys, (op.param, op.param2, op.param3)))
            cfg = {key: int(v) if key == "decimals" else v for key, v in cfg.items()}
        if op.op in BOOL:                                 # Keras's bool result, then Cast to boundfit's 0 / 1
            return _compare(op.name, cls, args, k, ps)
        return [(op.name, cls, cfg, args)]
    a, b = ins                                            # MatMul: (M, K) @ (K, N) per sample
    steps = []
    for flag, i, t, suffix in ((op.transpose_a, 0, a, "ta"), (op.transpose_b, 1, b, "tb")):
        if flag:
            tps = list(node.inputs[i]._ps)[::-1]
            steps.append((f"{op.name}_{suffix}", "Transpose", {"axes": [0, 2, 1]}, [t]))
            if i == 0:
                a = _history(f"{op.name}_{suffix}", k, tps)
            else:
                b = _history(f"{op.name}_{suffix}", k, tps)
    return steps + [(op.name, "Matmul", {}, [a, b])]


def chain(op, i):
    """Operations beyond one between input i of op's node and its output in Keras's graph (as _steps writes it)."""
    if isinstance(op, L.MatMul):
        return int(op.transpose_b if i else op.transpose_a)
    return int(op.op in BOOL)


def _compare(name, cls, args, k, ps):
    cmp = f"{name}_bool"
    return [(cmp, cls, {}, args), (name, "Cast", {"dtype": "float32"}, [_history(cmp, k, ps, "bool")])]


def op_entries(op, calls):
    """The Functional config entries of a Unary / Binary / MatMul op; calls:
    [(node index in this model, node, its inputs as __keras_tensor__ dicts)]."""
    entries = {}
    for k, node, ins in calls:
        for name, cls, extra, args in _steps(op, node, k, ins):
            if name not in entries:
                module = _MODULES.get(cls, MODULE)
                entries[name] = {"module": module, "class_name": cls, "config": dict(name=name, **extra),
                                 "registered_name": cls, "name": name, "inbound_nodes": []}
            entries[name]["inbound_nodes"].append({"args": args, "kwargs": {}})
    return list(entries.values())


# ---- reading: Keras's operation nodes -> boundfit.ops ----

def _broadcast_or(fn, cls, via=None):
    """Keras's node cls of two arguments: boundfit.ops' function `via` (fn's), or for two tensors of one rank and
    different shapes Binary(fn) (NumPy's size-1 broadcast of one rank, as boundfit wrote it), recorded as cls"""
    def call(cfg, a, b):
        if isinstance(a, KerasTensor) and isinstance(b, KerasTensor) and a._ps != b._ps and \
                len(a._ps) == len(b._ps):
            return record(L.Binary(fn)([a, b]), cls, MODULE, {}, [a, b])
        return getattr(bf_ops, via or fn)(a, b)
    return call


def through_ops(fn):
    """fn(a, b) of boundfit.ops by name (add, multiply ...), for a tensor and a number or an array."""
    return lambda cfg, a, b: getattr(bf_ops, fn)(a, b)


def _one_hot(cfg, x):
    """one_hot: boundfit's frozen identity Embedding (no weights in Keras's file: written back as this node)"""
    o = _options("OneHot", cfg, {"num_classes": None, "axis": None, "sparse": _falsy,
                                 "dtype": lambda d: d is None or np.dtype(d).kind == "f"})
    return bf_ops.one_hot(x, o["num_classes"], axis=o.get("axis", -1))


def _one(fn):
    return lambda cfg, x: fn(x)


def _elementwise(name):
    """Keras's node of an elementwise op (ops_elementwise.KERAS): boundfit.ops.<name> with its checked options"""
    cls, _, keys = KERAS[name]
    fn = getattr(bf_ops, name)
    if name in BINARY_OPS:
        return lambda cfg, a, b: fn(a, b, **_options(cls, cfg, {}))
    if name == "full_like":
        return lambda cfg, x, v: fn(x, v, **_options(cls, cfg, {"dtype": None}))
    return lambda cfg, x: fn(x, **_options(cls, cfg, {key: None for key in keys}))


# ---- keras.ops calls boundfit builds from layers of other kinds (layers/opnode.py), both ways ----

def _json(v, tensor):
    if isinstance(v, KerasTensor):
        return tensor(v)
    if isinstance(v, (list, tuple)):
        return [_json(x, tensor) for x in v]
    if isinstance(v, np.ndarray):
        return {"class_name": "__numpy__", "config": {"value": v.tolist(), "dtype": str(v.dtype)}}
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    return v


def group_entry(g, k, tensor):
    """The Functional config entry of a keras.ops call's layers (an OpNode g, its head's node index k in the
    model): Keras's node for the call, named as the head layer (its consumers' references)."""
    name = g.head.name
    cfg = {"name": name, **{key: _json(v, tensor) for key, v in g.config.items()}}
    return {"module": g.module, "class_name": g.class_name, "config": cfg, "registered_name": g.class_name,
            "name": name, "inbound_nodes": [{"args": _json(g.args, tensor), "kwargs": {}}]}


def _options(cls, cfg, allowed):
    """The call's options in a Keras node's config, each checked: allowed {key: default or a checker}; a key
    boundfit does not read, or a value it does not take, is named."""
    out = {}
    for key, v in cfg.items():
        if key == "name":
            continue
        if key not in allowed:
            raise ValueError(f"the argument {key}={v!r} of {cls} is not one boundfit reads")
        want = allowed[key]
        if callable(want) and not want(v):
            raise ValueError(f"{cls}({key}={v!r}) is not supported by boundfit")
        out[key] = tuple(v) if isinstance(v, list) else v
    return out


def _none(v):
    return v is None


def _falsy(v):
    return v in (None, False)


def _reduction(fn, cls, keepdims=True):
    """a reduction node (Sum, Mean, Argmax, Var, Logsumexp, CountNonzero ...): axis, keepdims; Max / Min's initial
    and Prod's dtype only None"""
    def read(cfg, x):
        o = _options(cls, cfg, {"axis": None, "keepdims": None, "initial": _none, "dtype": _none})
        return fn(x, axis=o.get("axis"), **({"keepdims": bool(o.get("keepdims", False))} if keepdims else {}))
    return read


def _norm(cfg, x):
    o = _options("Norm", cfg, {"ord": None, "axis": None, "keepdims": None})
    return bf_ops.norm(x, ord=o.get("ord"), axis=o.get("axis"), keepdims=bool(o.get("keepdims", False)))


def _normalize(cfg, x):
    o = _options("Normalize", cfg, {"axis": None, "order": None, "epsilon": None})
    return bf_ops.normalize(x, axis=o.get("axis", -1), order=o.get("order", 2), epsilon=o.get("epsilon"))


def _act(fn, cls, **opts):
    """an activation node: its options (alpha, negative_slope, approximate, axis) passed on by keyword"""
    def read(cfg, x):
        return fn(x, **_options(cls, cfg, {k: None for k in opts}))
    return read


def _shaped(fn, cls, key, default=None):
    def read(cfg, x):
        v = _options(cls, cfg, {key: None}).get(key, default)
        return fn(x, v)
    return read


def _clip(cfg, x):
    o = _options("Clip", cfg, {"x_min": None, "x_max": None})
    return bf_ops.clip(x, o["x_min"], o["x_max"])


def _convert(cfg, x):
    o = _options("ConvertToTensor", cfg, {"dtype": None, "sparse": _falsy, "ragged": _falsy})
    return bf_ops.convert_to_tensor(x, o.get("dtype"))


def _tensordot(cfg, a, b):
    o = _options("Tensordot", cfg, {"axes": None})
    return bf_ops.tensordot(a, b, axes=o.get("axes", 2))


def _scan(fn, cls):
    def read(cfg, x):
        o = _options(cls, cfg, {"axis": None, "dtype": lambda d: d is None or np.dtype(d).kind == "f"})
        return fn(x, axis=o.get("axis"))
    return read


def _top_k(cfg, x):
    o = _options("TopK", cfg, {"k": None, "sorted": None})
    return bf_ops.top_k(x, o["k"], sorted=o.get("sorted", True))


GROUPED = {
    "Mean": _reduction(bf_ops.mean, "Mean"), "Sum": _reduction(bf_ops.sum, "Sum"),
    "Max": _reduction(bf_ops.max, "Max"), "Min": _reduction(bf_ops.min, "Min"),
    **{cls: _reduction(getattr(bf_ops, fn), cls) for fn, cls in (
        ("amax", "Amax"), ("amin", "Amin"), ("prod", "Prod"), ("argmax", "Argmax"), ("argmin", "Argmin"),
        ("any", "Any"), ("all", "All"), ("var", "Var"), ("std", "Std"), ("logsumexp", "Logsumexp"))},
    "CountNonzero": _reduction(bf_ops.count_nonzero, "CountNonzero", keepdims=False),
    "Norm": _norm, "Normalize": _normalize, "LogSoftmax": _act(bf_ops.log_softmax, "LogSoftmax", axis=-1),
    "Softmax": _act(bf_ops.softmax, "Softmax", axis=-1),
    "Relu": _act(bf_ops.relu, "Relu"), "Sigmoid": _act(bf_ops.sigmoid, "Sigmoid"), "Tanh": _act(bf_ops.tanh, "Tanh"),
    "Silu": _act(bf_ops.silu, "Silu"), "Elu": _act(bf_ops.elu, "Elu", alpha=1.0), "Selu": _act(bf_ops.selu, "Selu"),
    "Softplus": _act(bf_ops.softplus, "Softplus"), "Softsign": _act(bf_ops.softsign, "Softsign"),
    "Relu6": _act(bf_ops.relu6, "Relu6"), "LeakyRelu": _act(bf_ops.leaky_relu, "LeakyRelu", negative_slope=0.2),
    "HardSigmoid": _act(bf_ops.hard_sigmoid, "HardSigmoid"), "Gelu": _act(bf_ops.gelu, "Gelu", approximate=True),
    "Exp": _act(bf_ops.exp, "Exp"),
    "Reshape": _shaped(bf_ops.reshape, "Reshape", "newshape"),
    "ExpandDims": _shaped(bf_ops.expand_dims, "ExpandDims", "axis"),
    "Squeeze": _shaped(bf_ops.squeeze, "Squeeze", "axis"),
    "Transpose": _shaped(bf_ops.transpose, "Transpose", "axes"),
    "Concatenate": _shaped(bf_ops.concatenate, "Concatenate", "axis", 0),
    "Stack": _shaped(bf_ops.stack, "Stack", "axis", 0),
    "Clip": _clip, "Power": lambda cfg, a, b: bf_ops.power(a, b),
    "Reciprocal": _one(bf_ops.reciprocal), "Rsqrt": _one(bf_ops.rsqrt),
}


def _composed(fn, names=None):
    """a composed op's node (ops_shape, ops_stats, ops_compose, ops_create, ops_nn, ops_image): fn called with the
    node's arguments (positional, or by the Keras call's names) and its config's options by keyword"""
    def read(cfg, *args):
        opts = {k: tuple(v) if k in ("axis", "axes", "size", "strides") and isinstance(v, list) else v
                for k, v in cfg.items() if k != "name"}
        return fn(**dict(zip(names, args)), **opts) if names else fn(*args, **opts)
    return read


_NAMED = {"Pad": ("x", "constant_values"), "Average": ("x", "weights"), "Slice": ("inputs", "start_indices"),
          "Select": ("condlist", "choicelist", "default"), "BatchNorm": ("x", "mean", "variance", "offset", "scale"),
          "LayerNorm": ("x", "gamma", "beta"), "RMSNorm": ("x", "scale"),
          "DotProductAttention": ("query", "key", "value", "bias", "mask", "scale")}
_COMPOSED = {
    "Flip": "flip", "Fliplr": "fliplr", "Rot90": "rot90", "BroadcastTo": "broadcast_to", "Tril": "tril",
    "Triu": "triu", "Diagonal": "diagonal", "Trace": "trace", "Hstack": "hstack", "Dstack": "dstack",
    "Split": "split", "ArraySplit": "array_split", "Hsplit": "hsplit", "Dsplit": "dsplit", "Unstack": "unstack",
    "Append": "append", "Moveaxis": "moveaxis", "Swapaxes": "swapaxes", "Tile": "tile", "Repeat": "repeat",
    "Roll": "roll", "Pad": "pad", "Slice": "slice", "SliceUpdate": "slice_update",
    "ExtractSequences": "extract_sequences", "DepthToSpace": "depth_to_space", "SpaceToDepth": "space_to_depth",
    **{n.capitalize(): n for n in ("nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd",
                                   "nanargmax", "nanargmin", "nancumsum", "nancumprod")},
    "Median": "median", "Quantile": "quantile", "Percentile": "percentile", "Ptp": "ptp", "Average": "average",
    "Diff": "diff", "Trapezoid": "trapezoid", "Digitize": "digitize", "SearchSorted": "searchsorted",
    "IsIn": "isin", "CDist": "cdist", "InTopK": "in_top_k", "EmptyLike": "empty_like", "Isreal": "isreal",
    "Inner": "inner", "Cross": "cross", "Vander": "vander", "Ldexp": "ldexp", "Select": "select",
    "AllClose": "allclose", "UnravelIndex": "unravel_index", "Glu": "glu", "Sparsemax": "sparsemax",
    "BatchNorm": "batch_normalization", "LayerNorm": "layer_normalization", "RMSNorm": "rms_normalization",
    "BinaryCrossentropy": "binary_crossentropy", "CategoricalCrossentropy": "categorical_crossentropy",
    "SparseCategoricalCrossentropy": "sparse_categorical_crossentropy", "MultiHot": "multi_hot", "PSNR": "psnr",
    "DotProductAttention": "dot_product_attention", "AveragePool": "average_pool", "MaxPool": "max_pool",
    "FFT": "fft", "FFT2": "fft2", "IFFT2": "ifft2", "RFFT": "rfft", "IRFFT": "irfft", "STFT": "stft",
    "ISTFT": "istft", "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
    "BitwiseInvert": "bitwise_invert", "BitwiseNot": "bitwise_not", "BitwiseLeftShift": "bitwise_left_shift",
    "LeftShift": "left_shift", "BitwiseRightShift": "bitwise_right_shift", "RightShift": "right_shift",
    "AdaptiveAveragePool": "adaptive_average_pool", "AdaptiveMaxPool": "adaptive_max_pool", "Unfold": "unfold",
    "Fold": "fold", "I0": "i0", "Rearrange": "rearrange", "Conv": "conv", "ConvTranspose": "conv_transpose",
    "DepthwiseConv": "depthwise_conv", "SeparableConv": "separable_conv",
}


READ = {
    **{cls: _composed(getattr(bf_ops, fn), _NAMED.get(cls)) for cls, fn in _COMPOSED.items()},
    "Resize": _composed(bf_ops.image.resize), "ExtractPatches": _composed(bf_ops.image.extract_patches),
    **{cls: _elementwise(name) for name, (cls, _, _) in KERAS.items() if name not in _BINARY},
    "Abs": _one(bf_ops.abs), "Fabs": _one(bf_ops.abs), "Negative": _one(bf_ops.negative),
    "Real": _one(bf_ops.real), "Conjugate": _one(bf_ops.conj), "Copy": _one(bf_ops.copy),
    "Isclose": lambda cfg, a, b, rtol=1e-5, atol=1e-8: bf_ops.isclose(
        a, b, rtol, atol, **_options("Isclose", cfg, {"equal_nan": lambda v: not v})),
    "ZerosLike": lambda cfg, x: bf_ops.zeros_like(x, **_options("ZerosLike", cfg, {"dtype": None})),
    "OnesLike": lambda cfg, x: bf_ops.ones_like(x, **_options("OnesLike", cfg, {"dtype": None})),
    "Where": lambda cfg, c, x1, x2: bf_ops.where(c, x1, x2),
    "Matmul": lambda cfg, a, b: bf_ops.matmul(a, b),
    "Cast": lambda cfg, x: bf_ops.cast(x, cfg.get("dtype") or "float32"),
    "OneHot": _one_hot,
    "Take": lambda cfg, x, indices: bf_ops.take(x, indices, axis=_options("Take", cfg, {"axis": None}).get("axis")),
    "TakeAlongAxis": lambda cfg, x, indices: bf_ops.take_along_axis(
        x, indices, axis=_options("TakeAlongAxis", cfg, {"axis": None}).get("axis")),
    "Cumsum": _scan(bf_ops.cumsum, "Cumsum"), "Cumprod": _scan(bf_ops.cumprod, "Cumprod"),
    "Sort": _shaped(bf_ops.sort, "Sort", "axis", -1), "Argsort": _shaped(bf_ops.argsort, "Argsort", "axis", -1),
    "TopK": _top_k,
    **{cls: _broadcast_or(fn, cls) for fn, cls in _BINARY.items() if fn not in ("add", "subtract", "multiply")},
    "TrueDivide": _broadcast_or("divide", "TrueDivide", "true_divide"),   # x / y as Keras writes it
    "ConvertToTensor": _convert, "Tensordot": _tensordot, "Dot": lambda cfg, a, b: bf_ops.dot(a, b),
    **GROUPED,
}
# Add / Subtract / Multiply with tensors or numbers: keras_graph.py's KerasOp reads them (and the constants'
# zeros_like(x[:, 0, None]) + values); with broadcasting tensors here too
BROADCAST = {cls: _broadcast_or(fn, cls) for fn, cls in _BINARY.items() if fn in ("add", "subtract", "multiply")}


def arg(v, tensor):
    """A node argument as a value: a tensor, a number, an array (Keras's __numpy__ / __tensor__)."""
    if isinstance(v, dict) and v.get("class_name") == "__keras_tensor__":
        return tensor(v)
    if isinstance(v, dict) and v.get("class_name") in ("__numpy__", "__tensor__"):
        c = v["config"]
        return np.array(c["value"], dtype=c.get("dtype") or np.float32)
    if isinstance(v, list):   # Concatenate / Stack: a list of tensors
        return [arg(x, tensor) for x in v]
    return v
