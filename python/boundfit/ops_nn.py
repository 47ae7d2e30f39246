"""keras.ops.nn functions composed of the engine's primitives (re-exported by
ops.py, in ops.nn and ops): glu, sparsemax, batch_normalization,
layer_normalization, rms_normalization, binary_crossentropy,
categorical_crossentropy, sparse_categorical_crossentropy, multi_hot, psnr,
dot_product_attention, average_pool, max_pool.

On arrays: NumPy with the formulas of Keras's JAX backend. On symbolic
tensors each follows the same formula on ops_lax.py's primitives (clip as
maximum / minimum, log_softmax as x - logsumexp, one_hot as an Embedding
whose frozen table is the identity); dot_product_attention is, per head, a
MatMul of the query and the transposed key, scaled, biased and masked (a
masked logit is -0.7 * float32's max, as Keras's), softmax, and a MatMul
with the value; the pools are the pooling layers. Each is recorded as
Keras's operation node (layers/opnode.py). What cannot be composed (flash
attention, a soft cap, sparse outputs, synchronized statistics) raises
OpNotSupportedError naming the op and the argument."""

import numpy as np

from . import backend, ops_lax as lx
from .layers.core import Activation
from .layers.embedding import Embedding
from .layers.emath import MatMul, Unary
from .layers.index import ArgSort, Gather, Scan
from .layers.node import KerasTensor
from .layers.opnode import record
from .layers.reduce import BatchReduce
from .layers.pooling import AveragePooling1D, AveragePooling2D, MaxPooling1D, MaxPooling2D

NN = lx.NN
_BIG = -0.7 * float(np.finfo(np.float32).max)


def _np_softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, a):
    return lx.sub(x, lx.reduce("logsumexp", x, (a,), True))


def glu(x, axis=-1):
    """keras.ops.nn.glu: a * sigmoid(b), the two halves of axis"""
    if not lx.sym(x):
        a, b = np.split(np.asarray(x, np.float32), 2, axis=axis)
        return a / (1.0 + np.exp(-b))
    a = lx.sample_axis("glu", x, axis)
    n = lx.static("glu", x, a)
    if n % 2:
        raise ValueError(f"keras.ops.glu: axis {axis} of {x.shape} must have an even size")
    y = lx.mul(lx.cut(x, a, 0, n // 2), Activation("sigmoid")(lx.cut(x, a, n // 2, n)))
    return record(y, "Glu", NN, {"axis": axis}, [x])


def sparsemax(x, axis=-1):
    """keras.ops.nn.sparsemax, Keras's formula: the values sorted descending (ArgSort + Gather), their cumsum
    (Scan), the support, the threshold tau, relu(x - tau)"""
    if not lx.sym(x):
        x = np.asarray(x, np.float32)
        s = -np.sort(-x, axis=axis)
        cs = np.cumsum(s, axis=axis)
        shape = [1] * x.ndim
        shape[axis] = -1
        r = np.arange(1, x.shape[axis] + 1).reshape(shape)
        support = s - (cs - 1) / r > 0
        tau = (np.sum(np.where(support, cs, 0.0), axis=axis, keepdims=True) - 1) / np.sum(support, axis, keepdims=True)
        return np.maximum(x - tau, 0.0)
    a = lx.sample_axis("sparsemax", x, axis)
    n = lx.static("sparsemax", x, a)
    s = Gather(a, along=True)([x, ArgSort(a, n, descending=True)(x)])
    cs = Scan(a, "sum")(s)
    shape = [1] * len(x._ps)
    shape[a] = n
    r = np.arange(1, n + 1, dtype=np.float32).reshape(shape)
    support = Unary("greater", 0.0)(lx.sub(s, lx.div(Unary("subtract", 1.0)(cs), r)))
    k = lx.reduce("sum", support, (a,), True)
    tau = lx.div(Unary("subtract", 1.0)(lx.reduce("sum", lx.mul(support, cs), (a,), True)), k)
    y = Activation("relu")(lx.sub(x, tau))
    return record(y, "Sparsemax", NN, {"axis": axis}, [x])


def _along(v, a, rank):
    """a 1-D array or tensor-free vector v laid along per-sample axis a of a rank-`rank` sample"""
    v = np.asarray(v, np.float32)
    if v.ndim != 1:
        return v
    shape = [1] * rank
    shape[a] = v.shape[0]
    return v.reshape(shape)


def _vec(op, v, a, x):
    if isinstance(v, KerasTensor):
        if v.ndim != x.ndim:
            lx.refuse(op, f"a symbolic statistic of shape {v.shape}: of x's rank {x.shape} (keepdims=True)")
        return v
    return _along(v, a, len(x._ps))


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """keras.ops.nn.batch_normalization: (x - mean) * rsqrt(variance + epsilon) * scale + offset, the statistics
    vectors along axis (arrays) or symbolic tensors of x's rank"""
    if not lx.sym(x, mean, variance, offset, scale):
        x = np.asarray(x, np.float32)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        r = (lambda v: np.reshape(v, shape) if v is not None and np.ndim(v) == 1 else v)
        y = (x - r(mean)) / np.sqrt(r(variance) + epsilon)
        return y * (r(scale) if scale is not None else 1.0) + (r(offset) if offset is not None else 0.0)
    if not isinstance(x, KerasTensor):
        lx.refuse("batch_normalization", "of an array with symbolic statistics")
    a = lx.sample_axis("batch_normalization", x, axis)
    inv = Unary("rsqrt")(Unary("add", float(epsilon))(_vec("batch_normalization", variance, a, x))) if isinstance(
        variance, KerasTensor) else 1.0 / np.sqrt(_along(variance, a, len(x._ps)) + np.float32(epsilon))
    if scale is not None:
        inv = lx.mul(inv, _vec("batch_normalization", scale, a, x)) if isinstance(inv, KerasTensor) or isinstance(
            scale, KerasTensor) else inv * _along(scale, a, len(x._ps))
    y = lx.mul(lx.sub(x, _vec("batch_normalization", mean, a, x)), inv)
    if offset is not None:
        y = lx.add(y, _vec("batch_normalization", offset, a, x))
    return record(y, "BatchNorm", NN, {"axis": axis, "epsilon": epsilon}, [x, mean, variance, offset, scale])


def _norm_axes(op, x, axis):
    axes = lx.sample_axes(op, x, axis)
    return axes, [lx.static(op, x, d) for d in axes]


def _param(v, x, axes):
    """gamma / beta / scale of the normalized axes' shape, laid out against x's sample shape"""
    if v is None or isinstance(v, KerasTensor):
        return v
    v = np.asarray(v, np.float32)
    if v.ndim == len(axes) and len(axes) < len(x._ps):
        shape = [1] * len(x._ps)
        for d, n in zip(axes, v.shape):
            shape[d] = n
        v = v.reshape(shape)
    return v


def _moments(x, axes):
    m = lx.reduce("mean", x, axes, True)
    d = lx.sub(x, m)
    return d, lx.reduce("mean", Unary("square")(d), axes, True)


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """keras.ops.nn.layer_normalization: (x - mean) * rsqrt(var + epsilon) * gamma + beta over sample axes"""
    eps = backend.epsilon() if epsilon is None else float(epsilon)
    if kwargs.get("rms_scaling"):
        lx.refuse("layer_normalization", "rms_scaling=True (deprecated in Keras); use keras.ops.rms_normalization")
    if not lx.sym(x, gamma, beta):
        x = np.asarray(x, np.float32)
        ax = tuple(np.atleast_1d(axis))
        y = (x - x.mean(ax, keepdims=True)) / np.sqrt(x.var(ax, keepdims=True) + eps)
        return y * (gamma if gamma is not None else 1.0) + (beta if beta is not None else 0.0)
    axes, _ = _norm_axes("layer_normalization", x, axis)
    d, v = _moments(x, axes)
    y = lx.mul(d, Unary("rsqrt")(Unary("add", eps)(v)))
    if gamma is not None:
        y = lx.mul(y, _param(gamma, x, axes))
    if beta is not None:
        y = lx.add(y, _param(beta, x, axes))
    return record(y, "LayerNorm", NN, {"axis": axis, "epsilon": epsilon, "rms_scaling": False}, [x, gamma, beta])


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """keras.ops.nn.rms_normalization: x * rsqrt(mean(x**2) + epsilon) * scale over sample axes"""
    eps = backend.epsilon() if epsilon is None else float(epsilon)
    if not lx.sym(x, scale):
        x = np.asarray(x, np.float32)
        ax = tuple(np.atleast_1d(axis))
        return x / np.sqrt(np.mean(x * x, axis=ax, keepdims=True) + eps) * (scale if scale is not None else 1.0)
    axes, _ = _norm_axes("rms_normalization", x, axis)
    y = lx.mul(x, Unary("rsqrt")(Unary("add", eps)(lx.reduce("mean", Unary("square")(x), axes, True))))
    if scale is not None:
        y = lx.mul(y, _param(scale, x, axes))
    return record(y, "RMSNorm", NN, {"axis": axis, "epsilon": epsilon}, [x, scale])


# ---- losses as ops ----

def _clip01(o):
    eps = backend.epsilon()
    return Unary("minimum", 1.0 - eps)(Unary("maximum", eps)(o))


def _same(op, target, output):
    if not isinstance(output, KerasTensor):
        lx.refuse(op, "of a constant output (only of a symbolic output)")
    lx.batched(op, target, output)
    if isinstance(target, KerasTensor) and target._ps != output._ps:
        raise ValueError(f"keras.ops.{op}: target {target.shape} and output {output.shape} must have one shape")


def binary_crossentropy(target, output, from_logits=False):
    """keras.ops.nn.binary_crossentropy, elementwise (Keras's JAX formula: log_sigmoid of the logits, or the log of
    the output clipped to [epsilon, 1 - epsilon])"""
    if not lx.sym(target, output):
        t, o = np.asarray(target, np.float32), np.asarray(output, np.float32)
        if from_logits:
            return t * np.logaddexp(0.0, -o) + (1 - t) * np.logaddexp(0.0, o)
        o = np.clip(o, backend.epsilon(), 1 - backend.epsilon())
        return -(t * np.log(o) + (1 - t) * np.log(1 - o))
    _same("binary_crossentropy", target, output)
    if from_logits:
        pos, neg = Unary("log_sigmoid")(output), Unary("log_sigmoid")(Unary("negative")(output))
    else:
        o = _clip01(output)
        pos, neg = Unary("log")(o), Unary("log")(Unary("subtract", 1.0, left=True)(o))
    one_minus = Unary("subtract", 1.0, left=True)(target) if isinstance(target, KerasTensor) else 1.0 - np.asarray(
        target, np.float32)
    y = Unary("negative")(lx.add(lx.mul(target, pos), lx.mul(one_minus, neg)))
    return record(y, "BinaryCrossentropy", NN, {"from_logits": bool(from_logits)}, [target, output])


def _log_prob(output, a, from_logits):
    if from_logits:
        return _log_softmax(output, a)
    return Unary("log")(_clip01(lx.div(output, lx.reduce("sum", output, (a,), True))))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """keras.ops.nn.categorical_crossentropy: -sum(target * log_prob(output), axis)"""
    if not lx.sym(target, output):
        t, o = np.asarray(target, np.float32), np.asarray(output, np.float64)
        if from_logits:
            lp = o - np.log(np.sum(np.exp(o - o.max(axis, keepdims=True)), axis, keepdims=True)) - o.max(axis,
                                                                                                        keepdims=True)
        else:
            lp = np.log(np.clip(o / o.sum(axis, keepdims=True), backend.epsilon(), 1 - backend.epsilon()))
        return (-np.sum(t * lp, axis=axis)).astype(np.float32)
    _same("categorical_crossentropy", target, output)
    a = lx.sample_axis("categorical_crossentropy", output, axis)
    y = Unary("negative")(lx.reduce("sum", lx.mul(target, _log_prob(output, a, from_logits)), (a,)))
    return record(y, "CategoricalCrossentropy", NN, {"from_logits": bool(from_logits), "axis": axis},
                  [target, output])


def _one_hot(ids, n):
    e = Embedding(int(n), int(n))
    e.set_weights([np.eye(n, dtype=np.float32)])
    e.trainable = False
    return e(ids)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """keras.ops.nn.sparse_categorical_crossentropy: categorical_crossentropy of one_hot(target) (an Embedding
    with a frozen identity table), the class axis last"""
    if not lx.sym(target, output):
        t = np.asarray(target).astype(np.int64)
        o = np.asarray(output)
        if t.ndim == o.ndim and t.shape[-1] == 1:
            t = t[..., 0]
        return categorical_crossentropy(np.eye(o.shape[axis], dtype=np.float32)[t], o, from_logits, axis)
    if not isinstance(target, KerasTensor) or not isinstance(output, KerasTensor):
        lx.refuse("sparse_categorical_crossentropy", "target and output must both be symbolic tensors")
    lx.batched("sparse_categorical_crossentropy", target, output)
    a = lx.sample_axis("sparse_categorical_crossentropy", output, axis)
    if a != len(output._ps) - 1:
        lx.refuse("sparse_categorical_crossentropy", "only with the classes on the last axis (axis=-1)")
    t = target
    if t.ndim == output.ndim and t._ps[-1] == 1:
        t = lx.reshape(t, t._ps[:-1] or ())
    if t._ps != output._ps[:-1] or len(t._ps) > 2:
        lx.refuse("sparse_categorical_crossentropy", f"target {target.shape} for output {output.shape}: ids of the "
                  "output's shape without its last axis, at most 2 axes per sample")
    n = lx.static("sparse_categorical_crossentropy", output, a)
    hot = _one_hot(t, n) if t._ps else lx.reshape(_one_hot(lx.reshape(t, (1,)), n), (n,))
    y = Unary("negative")(lx.reduce("sum", lx.mul(hot, _log_prob(output, a, from_logits)), (a,)))
    return record(y, "SparseCategoricalCrossentropy", NN, {"from_logits": bool(from_logits), "axis": axis},
                  [target, output])


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """keras.ops.nn.multi_hot of ids (B, K): the max over K of their one-hot rows, (B, num_classes)"""
    num_classes = kwargs.pop("num_tokens", num_classes)
    if not lx.sym(inputs):
        ids = np.asarray(inputs).astype(np.int64)
        hot = (ids[..., None] == np.arange(num_classes)).astype(dtype or np.float32)
        return hot.max(axis=1 if ids.ndim > 1 else 0)
    if sparse or axis != -1:
        lx.refuse("multi_hot", "only dense (sparse=False) with the classes last (axis=-1)")
    lx.batched("multi_hot", inputs)
    if inputs.ndim != 2:
        lx.refuse("multi_hot", f"ids of shape {inputs.shape}: (B, K)")
    y = lx.reduce("max", _one_hot(inputs, int(num_classes)), (0,))
    return record(y, "MultiHot", NN, {"num_classes": int(num_classes), "axis": axis, "dtype": dtype,
                                      "sparse": False}, [inputs])


def psnr(x1, x2, max_val):
    """keras.ops.nn.psnr: 20 log10(max_val) - 10 log10(mean((x1 - x2)**2)), the mean over every axis, the batch's
    too (one number without a batch axis)"""
    if not lx.sym(x1, x2):
        mse = np.mean(np.square(np.asarray(x1, np.float32) - np.asarray(x2, np.float32)))
        return np.float32(20 * np.log10(max_val) - 10 * np.log10(mse))
    lx.batched("psnr", x1, x2)
    mse = BatchReduce("mean")(Unary("square")(lx.sub(x1, x2)))
    y = Unary("subtract", float(20 * np.log10(max_val)), left=True)(lx.mul(Unary("log10")(mse), 10.0))
    return record(y, "PSNR", NN, {"max_val": float(max_val)}, [x1, x2])


# ---- attention ----

def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """keras.ops.nn.dot_product_attention of (B, T, N, H) query and (B, S, N, H) key and value: per head n a
    MatMul q_n k_n^T (T, S) * scale (1 / sqrt(H) by default), + bias, masked (mask 0 / 1 or is_causal), softmax,
    MatMul with v_n; the heads joined again (B, T, N, H)"""
    if not lx.sym(query, key, value, bias, mask):
        q, k, v = (np.asarray(t, np.float32) for t in (query, key, value))
        logits = np.einsum("btnh,bsnh->bnts", q, k) * (1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
        if bias is not None:
            logits = logits + bias
        keep = np.ones(logits.shape, bool)
        if mask is not None:
            keep &= np.asarray(mask, bool)
        if is_causal:
            keep &= np.tril(np.ones(logits.shape[-2:], bool))
        return np.einsum("bnts,bsnh->btnh", _np_softmax(np.where(keep, logits, _BIG), -1), v)
    op = "dot_product_attention"
    if flash_attention or attn_logits_soft_cap is not None:
        lx.refuse(op, "flash_attention=True or attn_logits_soft_cap (only the plain computation)")
    if not all(isinstance(t, KerasTensor) for t in (query, key, value)):
        lx.refuse(op, "query, key and value must be symbolic tensors")
    lx.batched(op, query, key, value)
    if not (query.ndim == key.ndim == value.ndim == 4):
        raise ValueError(f"keras.ops.{op}: query, key and value must be 4-D (B, T, N, H), got {query.shape}, "
                         f"{key.shape}, {value.shape}")
    T, N, H = lx.static(op, query)
    S = lx.static(op, key)[0]
    sc = 1.0 / np.sqrt(H) if scale is None else float(scale)
    heads = []
    for n in range(N):
        q, k, v = (lx.reshape(lx.cut(t, 1, n, n + 1), (t._ps[0], H)) for t in (query, key, value))
        heads.append(lx.reshape(Unary("multiply", sc)(_matmul_t(q, k)), (1, T, S)))
    logits = lx.concat(heads, 0)                                     # (N, T, S)
    if bias is not None:
        logits = lx.add(logits, _bnts(op, bias, logits))
    keep = None
    if mask is not None:
        keep = _bnts(op, mask, logits)
    if is_causal:
        tri = np.tril(np.ones((T, S), np.float32))
        keep = tri if keep is None else lx.mul(keep, tri)
    if keep is not None:                                              # where(keep, logits, BIG)
        logits = lx.add(lx.mul(logits, keep), lx.mul(Unary("subtract", 1.0, left=True)(keep), _BIG)
                        if isinstance(keep, KerasTensor) else (1.0 - keep) * np.float32(_BIG))
    probs = Activation("softmax")(logits)
    outs = []
    for n in range(N):
        p = lx.reshape(lx.cut(probs, 0, n, n + 1), (T, S))
        v = lx.reshape(lx.cut(value, 1, n, n + 1), (S, H))
        outs.append(lx.reshape(lx.matmul(p, v), (T, 1, H)))
    y = lx.concat(outs, 1)
    return record(y, "DotProductAttention", NN, {"is_causal": bool(is_causal), "flash_attention": flash_attention,
                                                 "attn_logits_soft_cap": None},
                  [query, key, value, bias, mask, scale])


def _matmul_t(q, k):
    return MatMul(transpose_b=True)([q, k])


def _bnts(op, v, logits):
    """a bias or mask (B, N, T, S) or (N, T, S) per sample: a symbolic tensor of rank 4, or an array broadcast
    against (N, T, S)"""
    if isinstance(v, KerasTensor):
        if v.ndim != 4:
            lx.refuse(op, f"a symbolic bias or mask of shape {v.shape}: (B, N, T, S) with size-1 axes allowed")
        return v
    a = np.asarray(v, np.float32)
    if a.ndim == 4:
        if a.shape[0] != 1:
            lx.refuse(op, f"a constant bias or mask of shape {a.shape}: its batch axis must be 1")
        a = a[0]
    return a


# ---- pools: the pooling layers ----

def _pool(name, layers1d, layers2d, npname):
    def fn(inputs, pool_size, strides=None, padding="valid", data_format=None):
        if not lx.sym(inputs):
            return _eager_pool(npname, inputs, pool_size, strides, padding, data_format)
        lx.batched(name, inputs)
        rank = inputs.ndim - 2
        cls = {1: layers1d, 2: layers2d}.get(rank)
        if cls is None:
            lx.refuse(name, f"of {inputs.shape}: 1-D or 2-D pools ((B, T, C) or (B, H, W, C))")
        kw = dict(pool_size=pool_size, strides=strides, padding=padding)
        if data_format is not None:
            kw["data_format"] = data_format
        y = cls(**kw)(inputs)
        return record(y, "AveragePool" if npname == "mean" else "MaxPool", NN,
                      {"pool_size": _compact(pool_size), "strides": _compact(strides), "padding": padding,
                       "data_format": data_format},
                      [inputs])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.nn.{name} of (B, T, C) or (B, H, W, C): the pooling layer"
    return fn


def _compact(v):
    """a pool's size or strides as one int where every axis has it (Keras reads a list back from a file as a
    list, which its pools do not take)"""
    if v is None or np.ndim(v) == 0:
        return v
    v = [int(a) for a in v]
    return v[0] if len(set(v)) == 1 else v


def _eager_pool(npname, x, pool_size, strides, padding, data_format):
    """NumPy's pool of x (B, ..., C): windows of pool_size every strides; "same" pads with NaN, which the mean
    and max skip (Keras's averages count only the elements inside)"""
    x = np.asarray(x, np.float32)
    if data_format == "channels_first":
        x = np.moveaxis(x, 1, -1)
    r = x.ndim - 2
    ps = (int(pool_size),) * r if np.ndim(pool_size) == 0 else tuple(pool_size)
    st = ps if strides is None else (int(strides),) * r if np.ndim(strides) == 0 else tuple(strides)
    if padding == "same":
        pads = []
        for n, p, s in zip(x.shape[1:-1], ps, st):
            total = max((-(-n // s) - 1) * s + p - n, 0)
            pads.append((total // 2, total - total // 2))
        x = np.pad(x, [(0, 0)] + pads + [(0, 0)], constant_values=np.nan)
    win = np.lib.stride_tricks.sliding_window_view(x, ps, axis=tuple(range(1, 1 + r)))
    win = win[(slice(None),) + tuple(slice(None, None, s) for s in st)]
    y = (np.nanmean if npname == "mean" else np.nanmax)(win, axis=tuple(range(-r, 0)))
    return np.moveaxis(y, -1, 1) if data_format == "channels_first" else y


average_pool = _pool("average_pool", AveragePooling1D, AveragePooling2D, "mean")
max_pool = _pool("max_pool", MaxPooling1D, MaxPooling2D, "max")
