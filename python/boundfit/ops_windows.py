"""keras.ops.nn windows over images (re-exported by ops.py and ops.nn):
adaptive_average_pool, adaptive_max_pool, unfold, fold.

On arrays: NumPy with Keras's windows. On symbolic tensors, compositions of
the engine's primitives (ops_lax.py): an adaptive pool's output i along an
axis of n reduces [floor(i n / out), ceil((i + 1) n / out)) (Keras's
windows), one Slice and Reduce (mean or max, keepdims) per output position
and axis, concatenated (a mean or max over a rectangle is the axes' in
turn); unfold (im2col of (B, C, H, W)) is the zero padding (ops.pad), a
Gather of the window rows, one of the window columns and a Permute /
Reshape to (B, C * kh * kw, L); fold (col2im) sums each of the kh * kw
kernel positions' (C, nH, nW) planes, spread by the stride (Reshape and
zero padding) and shifted by the dilation (ops.pad), then cuts the padding.
Each is recorded as Keras's operation node (layers/opnode.py)."""

import numpy as np

from . import backend, ops_lax as lx
from .layers.opnode import record
from .ops_shape import pad

NN = lx.NN


def _bounds(n, out):
    i = np.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)


def _spatial(op, x, data_format):
    df = data_format or backend.image_data_format()
    if df not in ("channels_last", "channels_first"):
        raise ValueError(f"keras.ops.{op}: data_format must be 'channels_last' or 'channels_first', got {df!r}")
    r = np.ndim(x) - 2 if not lx.sym(x) else x.ndim - 2
    if r not in (1, 2):
        if lx.sym(x):
            lx.refuse(op, f"of rank {r + 2}: 1-D or 2-D inputs ((B, L, C) or (B, H, W, C))")
        raise ValueError(f"keras.ops.{op}: inputs must be 3-D or 4-D, got shape {np.shape(x)}")
    return df, r, [1 + d for d in range(r)] if df == "channels_last" else [2 + d for d in range(r)]


def _adaptive(name, reduce):
    npfn = getattr(np, reduce)

    def fn(inputs, output_size, data_format=None):
        df, r, axes = _spatial(name, inputs, data_format)
        size = (int(output_size),) * r if np.ndim(output_size) == 0 else tuple(int(s) for s in output_size)
        if len(size) != r or min(size) < 1:
            raise ValueError(f"keras.ops.{name}: output_size {output_size!r} for {r} spatial axes")
        if not lx.sym(inputs):
            y = np.asarray(inputs, np.float32)
            for ax, out in zip(axes, size):
                lo, hi = _bounds(y.shape[ax], out)
                y = np.concatenate([npfn(np.take(y, np.arange(s, e), ax), axis=ax, keepdims=True)
                                    for s, e in zip(lo, hi)], axis=ax)
            return y
        lx.batched(name, inputs)
        y = inputs
        for ax, out in zip(axes, size):
            a = ax - 1
            lo, hi = _bounds(lx.static(name, inputs, a), out)
            y = lx.concat([lx.reduce(reduce, lx.cut(y, a, int(s), int(e)), (a,), True) for s, e in zip(lo, hi)], a)
        return record(y, "AdaptiveAveragePool" if reduce == "mean" else "AdaptiveMaxPool", NN,
                      {"output_size": output_size, "data_format": data_format}, [inputs])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.ops.{name}: windows [floor(i n / out), ceil((i + 1) n / out)) reduced by {reduce}"
    return fn


adaptive_average_pool = _adaptive("adaptive_average_pool", "mean")
adaptive_max_pool = _adaptive("adaptive_max_pool", "max")


def _pair(v):
    return (int(v), int(v)) if np.ndim(v) == 0 else tuple(int(a) for a in v)


def _unfold_index(n, k, d, s):
    """(k, out) positions of a padded axis of n read by kernel offset i and window o"""
    out = (n - d * (k - 1) - 1) // s + 1
    return np.arange(k)[:, None] * d + np.arange(out)[None, :] * s, out


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """keras.ops.unfold of (B, C, H, W): the sliding blocks (B, C * kh * kw, L), L = oH * oW"""
    k, d, p, s = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    if not lx.sym(x):
        x = np.pad(np.asarray(x), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
        ih, oh = _unfold_index(x.shape[2], k[0], d[0], s[0])
        iw, ow = _unfold_index(x.shape[3], k[1], d[1], s[1])
        y = x[:, :, ih[:, None, :, None], iw[None, :, None, :]]       # (B, C, kh, kw, oH, oW)
        return y.reshape(x.shape[0], -1, oh * ow)
    lx.batched("unfold", x)
    if x.ndim != 4:
        lx.refuse("unfold", f"of {x.shape}: a batch of (C, H, W) images")
    c, h, w = lx.static("unfold", x)
    y = pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1]))) if any(p) else x
    ih, oh = _unfold_index(h + 2 * p[0], k[0], d[0], s[0])
    iw, ow = _unfold_index(w + 2 * p[1], k[1], d[1], s[1])
    y = lx.take(lx.take(y, ih, 1), iw, 3)                             # (C, kh, oH, kw, oW)
    y = lx.reshape(lx.permute(y, (0, 1, 3, 2, 4)), (c * k[0] * k[1], oh * ow))
    return record(y, "Unfold", NN, {"kernel_size": kernel_size, "dilation": dilation, "padding": padding,
                                    "stride": stride}, [x])


def _spread(y, a, n, s):
    """per-sample axis a of n spread by s: position i at i * s, zeros between ((n - 1) * s + 1 long)"""
    if s == 1 or n == 1:
        return y
    ps = y._ps
    y = lx.reshape(y, ps[:a + 1] + (1,) + ps[a + 1:])
    y = pad(y, [(0, 0)] * (a + 2) + [(0, s - 1)] + [(0, 0)] * (len(ps) - a - 1))
    y = lx.reshape(y, ps[:a] + (n * s,) + ps[a + 1:])
    return lx.cut(y, a, 0, (n - 1) * s + 1)


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """keras.ops.fold of (B, C * kh * kw, L) blocks into (B, C, oH, oW), overlaps summed (col2im)"""
    o, k, d, p, s = _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    nh = (o[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    nw = (o[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    H, W = o[0] + 2 * p[0], o[1] + 2 * p[1]
    if not lx.sym(x):
        x = np.asarray(x)
        b, ckk, _ = x.shape
        c = ckk // (k[0] * k[1])
        blocks = x.reshape(b, c, k[0], k[1], nh, nw)
        out = np.zeros((b, c, H, W), x.dtype)
        for i in range(k[0]):
            for j in range(k[1]):
                out[:, :, i * d[0]:i * d[0] + (nh - 1) * s[0] + 1:s[0],
                    j * d[1]:j * d[1] + (nw - 1) * s[1] + 1:s[1]] += blocks[:, :, i, j]
        return out[:, :, p[0]:p[0] + o[0], p[1]:p[1] + o[1]]
    lx.batched("fold", x)
    if x.ndim != 3:
        lx.refuse("fold", f"of {x.shape}: (B, C * kh * kw, L)")
    ckk, L = lx.static("fold", x)
    if L != nh * nw or ckk % (k[0] * k[1]):
        raise ValueError(f"keras.ops.fold: x of {x.shape} for {nh} x {nw} blocks of a {k} kernel")
    c = ckk // (k[0] * k[1])
    blocks = lx.reshape(x, (c, k[0], k[1], nh, nw))
    total = None
    for i in range(k[0]):
        for j in range(k[1]):
            piece = lx.reshape(lx.cut(lx.cut(blocks, 1, i, i + 1), 2, j, j + 1), (c, nh, nw))
            piece = _spread(_spread(piece, 1, nh, s[0]), 2, nw, s[1])
            hh, ww = (nh - 1) * s[0] + 1, (nw - 1) * s[1] + 1
            piece = pad(piece, ((0, 0), (0, 0), (i * d[0], H - i * d[0] - hh), (j * d[1], W - j * d[1] - ww)))
            total = piece if total is None else lx.add(total, piece)
    y = lx.cut(lx.cut(total, 1, p[0], p[0] + o[0]), 2, p[1], p[1] + o[1])
    return record(y, "Fold", NN, {"output_size": output_size, "kernel_size": kernel_size, "dilation": dilation,
                                  "padding": padding, "stride": stride}, [x])
