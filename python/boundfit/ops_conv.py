"""keras.ops.conv, conv_transpose, depthwise_conv and separable_conv (keras.ops
and keras.ops.nn), channels_last.

On arrays: NumPy, as Keras's JAX backend (lax.conv_general_dilated, "SAME"
padding (total max((out-1)*s + (k-1)*d + 1 - n, 0), the smaller half
first), feature groups when the kernel has fewer input channels than x;
conv_transpose as lax.conv_transpose with Keras's padding arguments: the
input dilated by the strides, padded, correlated with the flipped kernel).

On a symbolic tensor the kernel is a weight of the engine's convolution
kinds: a constant array (a frozen bias-free Conv1D / Conv2D / Conv3D,
Conv1DTranspose / Conv2DTranspose / Conv3DTranspose, DepthwiseConv1D /
DepthwiseConv2D whose kernel is that array) or a custom layer's weight
(add_weight: the same layer, trainable, holding that weight, as ops.matmul
holds one in a Dense). A symbolic kernel (another tensor) is refused by
name: the kinds read their kernel from their own weights. separable_conv is
depthwise_conv then a 1 x 1 conv. What the layers do not take (a 2-D or 3-D
dilation, groups, data_format='channels_first', output_padding) is refused
by name."""

import itertools

import numpy as np

from . import initializers
from . import ops_lax as lx
from .layers.conv import (Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose,
                          DepthwiseConv1D, DepthwiseConv2D)
from .layers.layer import Variable
from .layers.node import KerasTensor
from .layers.opnode import record


def _tuple(v, n, what, op):
    t = (int(v),) * n if np.isscalar(v) else tuple(int(a) for a in v)
    if len(t) != n or min(t) < 1:
        raise ValueError(f"keras.ops.{op}: {what} must be one or {n} positive integers, got {v!r}")
    return t


def _args(op, kernel, strides, padding, data_format, dilation_rate):
    nd = np.ndim(kernel) - 2 if not isinstance(kernel, Variable) else len(kernel.shape) - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"keras.ops.{op}: kernel must have 3 to 5 axes (spatial..., in, out), got rank {nd + 2}")
    if data_format not in (None, "channels_last"):
        raise ValueError(f"keras.ops.{op}: data_format must be 'channels_last' (boundfit's layout), got "
                         f"{data_format!r}")
    if str(padding).lower() not in ("valid", "same"):
        raise ValueError(f"keras.ops.{op}: padding must be 'valid' or 'same', got {padding!r}")
    return nd, _tuple(strides, nd, "strides", op), str(padding).lower(), _tuple(dilation_rate, nd, "dilation_rate", op)


# ---- on arrays ----

def _correlate(x, w, strides, pads, dil):
    """x (B, *S, C), w (*K, C/G, F) valid correlation after padding `pads` [(lo, hi)]: (B, *O, F)"""
    x = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    nd, C, F = len(strides), x.shape[-1], w.shape[-1]
    G = C // w.shape[-2]
    if G * w.shape[-2] != C or F % G:
        raise ValueError(f"keras.ops.conv: the input's {C} channels are not a multiple of the kernel's "
                         f"{w.shape[-2]} input channels (feature groups), or its {F} outputs of the groups")
    out = [(x.shape[1 + i] - (w.shape[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(nd)]
    if min(out) < 1:
        raise ValueError(f"keras.ops.conv: the kernel {w.shape[:nd]} (dilated {dil}) is larger than the padded "
                         f"input {x.shape[1:-1]}")
    xg = x.reshape(x.shape[:-1] + (G, C // G)).astype(np.float64)
    wg = w.reshape(w.shape[:-2] + (w.shape[-2], G, F // G)).astype(np.float64)
    y = np.zeros((x.shape[0],) + tuple(out) + (G, F // G))
    for k in itertools.product(*(range(n) for n in w.shape[:nd])):
        sl = tuple(slice(k[i] * dil[i], k[i] * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(nd))
        y += np.einsum("...gc,cgf->...gf", xg[(slice(None),) + sl], wg[k])
    return y.reshape(y.shape[:-2] + (F,)).astype(np.float32)


def _same(n, k, s, d):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def _np_conv(x, w, strides, padding, dil):
    pads = [_same(n, k, s, d) if padding == "same" else (0, 0)
            for n, k, s, d in zip(x.shape[1:-1], w.shape[:-2], strides, dil)]
    return _correlate(x, w, strides, pads, dil)


def _transpose_pads(k, s, d, padding, output_padding):
    k = (k - 1) * d + 1
    if padding == "valid":
        op = max(k, s) - k if output_padding is None else output_padding
        return k - 1, k - 1 + op
    pad = s + k - 2 if output_padding is None else k + k % 2 - 2 + output_padding
    lo = min(pad // 2 + pad % 2, k - 1)
    return lo, pad - lo


def _np_conv_transpose(x, w, strides, padding, output_padding, dil):
    nd = len(strides)
    ops_ = (None,) * nd if output_padding is None else _tuple(output_padding, nd, "output_padding", "conv_transpose") \
        if not np.isscalar(output_padding) else (int(output_padding),) * nd
    xd = np.zeros((x.shape[0],) + tuple((n - 1) * s + 1 for n, s in zip(x.shape[1:-1], strides)) + x.shape[-1:],
                  x.dtype)
    xd[(slice(None),) + tuple(slice(None, None, s) for s in strides)] = x
    pads = [_transpose_pads(k, s, d, padding, o) for k, s, d, o in zip(w.shape[:nd], strides, dil, ops_)]
    wf = np.swapaxes(np.flip(w, axis=tuple(range(nd))), -1, -2)              # (*K, C, F)
    return _correlate(xd, wf, (1,) * nd, pads, dil)


# ---- on symbolic tensors ----

def _weight_layer(op, make, kernel, x, init_name):
    """the layer make(**{init_name: ...}) holding `kernel`: a frozen constant, or a custom layer's weight"""
    if isinstance(kernel, KerasTensor):
        lx.refuse(op, "of a symbolic kernel: the engine's convolution kinds hold their kernel as their own weight; "
                  "give a constant array or a custom layer's weight (add_weight)")
    try:
        if isinstance(kernel, Variable):
            if kernel.dense is not None or kernel.holder is not None:
                lx.refuse(op, f"the weight {kernel.name!r} is used by another op too; boundfit holds a weight in "
                          "one place")
            layer = make(**{init_name: kernel.initializer}, name=f"{kernel.layer.name}_{kernel.name}")
            layer.trainable = kernel.trainable
            kernel.dense = layer
        else:
            layer = make(**{init_name: initializers.Constant(np.asarray(kernel, np.float32))})
            layer.trainable = False
    except ValueError as e:
        lx.refuse(op, str(e))
    lx.batched(op, x)
    return layer(x)


def _sym_conv(x, kernel, nd, strides, padding, dil):
    ks = tuple(kernel.shape if isinstance(kernel, Variable) else np.shape(kernel))
    if ks[-2] != x.shape[-1]:
        lx.refuse("conv", f"a kernel of {ks[-2]} input channels on {x.shape}: grouped convolution (groups > 1)")
    if nd > 1 and dil != (1,) * nd:
        lx.refuse("conv", f"dilation_rate={dil} on a {nd}-D convolution (the engine dilates 1-D convolutions only)")
    common = dict(filters=ks[-1], kernel_size=ks[:nd], strides=strides if nd > 1 else strides[0], padding=padding,
                  use_bias=False)
    cls = {1: Conv1D, 2: Conv2D, 3: Conv3D}[nd]
    if nd == 1:
        common["dilation_rate"] = dil[0]
    return _weight_layer("conv", lambda **kw: cls(**common, **kw), kernel, x, "kernel_initializer")


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """keras.ops.conv: an N-D convolution (N = 1, 2, 3) of inputs (B, *S, C) with kernel (*K, C, F)"""
    nd, strides, padding, dil = _args("conv", kernel, strides, padding, data_format, dilation_rate)
    if not lx.sym(inputs, kernel):
        return _np_conv(np.asarray(inputs, np.float32), np.asarray(kernel, np.float32), strides, padding, dil)
    y = _sym_conv(inputs, kernel, nd, strides, padding, dil)
    return record(y, "Conv", lx.NN, dict(strides=strides, padding=padding, data_format=data_format,
                                          dilation_rate=dil), [inputs, kernel])


def _np_depthwise(x, w, strides, padding, dil):
    return _np_conv(x, w.reshape(w.shape[:-2] + (1, w.shape[-2] * w.shape[-1])), strides, padding, dil)


def _sym_depthwise(x, kernel, nd, strides, padding, dil):
    ks = tuple(kernel.shape if isinstance(kernel, Variable) else np.shape(kernel))
    if nd == 3:
        lx.refuse("depthwise_conv", "of a 3-D kernel (the engine's depthwise kinds are 1-D and 2-D)")
    if dil != (1,) * nd:
        lx.refuse("depthwise_conv", f"dilation_rate={dil} (the engine's depthwise kinds do not dilate)")
    cls = {1: DepthwiseConv1D, 2: DepthwiseConv2D}[nd]
    common = dict(kernel_size=ks[:nd], strides=strides if nd > 1 else strides[0], padding=padding,
                  depth_multiplier=ks[-1], use_bias=False)
    return _weight_layer("depthwise_conv", lambda **kw: cls(**common, **kw), kernel, x, "depthwise_initializer")


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """keras.ops.depthwise_conv: each channel c of inputs (B, *S, C) with its M kernels (*K, C, M): output c*M+m"""
    nd, strides, padding, dil = _args("depthwise_conv", kernel, strides, padding, data_format,
                                      dilation_rate)
    if not lx.sym(inputs, kernel):
        return _np_depthwise(np.asarray(inputs, np.float32), np.asarray(kernel, np.float32), strides, padding, dil)
    y = _sym_depthwise(inputs, kernel, nd, strides, padding, dil)
    return record(y, "DepthwiseConv", lx.NN, dict(strides=strides, padding=padding, data_format=data_format,
                                                  dilation_rate=dil), [inputs, kernel])


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """keras.ops.separable_conv: depthwise_conv, then a 1 x 1 conv with pointwise_kernel (1.., C*M, F)"""
    nd, strides, padding, dil = _args("separable_conv", depthwise_kernel, strides, padding, data_format,
                                      dilation_rate)
    if not lx.sym(inputs, depthwise_kernel, pointwise_kernel):
        h = _np_depthwise(np.asarray(inputs, np.float32), np.asarray(depthwise_kernel, np.float32), strides,
                          padding, dil)
        return _np_conv(h, np.asarray(pointwise_kernel, np.float32), (1,) * nd, "valid", (1,) * nd)
    h = _sym_depthwise(inputs, depthwise_kernel, nd, strides, padding, dil)
    y = _sym_conv(h, pointwise_kernel, nd, (1,) * nd, "valid", (1,) * nd)
    return record(y, "SeparableConv", lx.NN, dict(strides=strides, padding=padding, data_format=data_format,
                                                  dilation_rate=dil), [inputs, depthwise_kernel, pointwise_kernel])


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1):
    """keras.ops.conv_transpose: inputs (B, *S, C), kernel (*K, F, C) -> (B, *O, F)"""
    nd, strides, padding, dil = _args("conv_transpose", kernel, strides, padding, data_format,
                                      dilation_rate)
    if not lx.sym(inputs, kernel):
        return _np_conv_transpose(np.asarray(inputs, np.float32), np.asarray(kernel, np.float32), strides, padding,
                                  output_padding, dil)
    ks = tuple(kernel.shape if isinstance(kernel, Variable) else np.shape(kernel))
    if output_padding is not None or dil != (1,) * nd:
        lx.refuse("conv_transpose", "output_padding or dilation_rate (the engine's transposed kinds take Keras's "
                  "defaults only: output_padding=None, dilation_rate=1)")
    if ks[-1] != inputs.shape[-1]:
        lx.refuse("conv_transpose", f"a kernel of {ks[-1]} input channels on {inputs.shape}")
    cls = {1: Conv1DTranspose, 2: Conv2DTranspose, 3: Conv3DTranspose}[nd]
    common = dict(filters=ks[-2], kernel_size=ks[:nd], strides=strides if nd > 1 else strides[0], padding=padding,
                  use_bias=False)
    y = _weight_layer("conv_transpose", lambda **kw: cls(**common, **kw), kernel, inputs, "kernel_initializer")
    return record(y, "ConvTranspose", lx.NN, dict(strides=strides, padding=padding, output_padding=output_padding,
                                                  data_format=data_format, dilation_rate=dil), [inputs, kernel])
