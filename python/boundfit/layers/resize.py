"""Image resizing as Keras 3 does it (its JAX backend: crop or pad to the
aspect ratio, then jax.image.resize): along each axis a product with a
constant (n_out, n_in) matrix, whatever the interpolation. The matrices are
built in NumPy as jax.image.scale's compute_weight_mat builds them (half-pixel
centres; kernels: triangle for bilinear, Keys cubic a=-0.5 for bicubic,
Lanczos 3 / 5, JAX's area overlaps; antialias widens the kernel by the
downscale; nearest: floor((o + 0.5) * n_in / n_out) in float32), with Keras's
aspect-ratio crop folded in as zero columns and its padding as the matrix's
columns of the padded image (the fill value added around, x - f padded with
zeros then + f). Applied to symbolic (H, W, C) images per sample as a MatMul
of a Const matrix (rows along H; along W through a Permute; no weight of the
model's get_weights(), as Keras's has none), or at once in NumPy: the same numbers, shared by layers.Resizing and keras.ops.image.resize.
'area' is JAX's (= TensorFlow's ResizeArea, which Keras's TensorFlow backend
runs; Keras's JAX backend refuses it)."""

import numpy as np

from .emath import MatMul, Unary
from .reshaping import Const, Permute, Reshape

METHODS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5", "area")
_RADIUS = {"bilinear": 1, "bicubic": 2, "lanczos3": 3, "lanczos5": 5}
_EPS32 = float(np.finfo(np.float32).eps)


def check(who, interpolation, fill_mode, crop_to_aspect_ratio, pad_to_aspect_ratio):
    """Keras's argument checks of a resize (its JAX backend's; 'area' as its TensorFlow backend takes it)"""
    if interpolation not in METHODS:
        raise ValueError(f"{who}: interpolation must be one of {METHODS}, got {interpolation!r}")
    if fill_mode != "constant":
        raise ValueError(f"{who}: fill_mode must be 'constant' (the only one Keras supports), got {fill_mode!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError(f"{who}: only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be True")


def _kernel(method, x):
    """jax.image.scale's kernels at distances x >= 0"""
    if method == "bilinear":
        return np.maximum(0.0, 1.0 - np.abs(x))
    if method == "bicubic":   # Keys, a = -0.5
        out = ((1.5 * x - 2.5) * x) * x + 1.0
        out = np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
        return np.where(x >= 2.0, 0.0, out)
    r = float(_RADIUS[method])
    with np.errstate(invalid="ignore", divide="ignore"):
        y = r * np.sin(np.pi * x) * np.sin(np.pi * x / r)
        out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1.0), 1.0)
    return np.where(x > r, 0.0, out)


def weights(n_in, n_out, method, antialias=False):
    """the (n_out, n_in) matrix jax.image.resize applies along an axis of n_in to make n_out"""
    if method == "nearest":
        src = np.floor((np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * np.float32(n_in) / np.float32(n_out))
        m = np.zeros((n_out, n_in))
        m[np.arange(n_out), np.minimum(src.astype(np.int64), n_in - 1)] = 1.0
        return m
    inv = 1.0 / (n_out / n_in)
    if method == "area":
        left = np.arange(n_out)[:, None] * inv
        w = np.maximum(0.0, np.minimum(left + inv, np.arange(n_in)[None, :] + 1.0)
                       - np.maximum(left, np.arange(n_in)[None, :]))
    else:
        sample = (np.arange(n_out) + 0.5) * inv - 0.5
        w = _kernel(method, np.abs(sample[:, None] - np.arange(n_in)[None, :]) / (max(inv, 1.0) if antialias else 1.0))
    total = w.sum(axis=1, keepdims=True)
    return np.where(np.abs(total) > 1000.0 * _EPS32, w / np.where(total != 0, total, 1.0), 0.0)


def geometry(h, w, size, crop_to_aspect_ratio=False, pad_to_aspect_ratio=False):
    """per axis (H, W): (start, length, pad): the window Keras's crop keeps, or the rows / columns its padding adds
    on each side (its int() arithmetic; only one axis padded)"""
    th, tw = size
    if crop_to_aspect_ratio:
        ch = max(min(h, int(float(w * th) / tw)), 1)
        cw = max(min(w, int(float(h * tw) / th)), 1)
        return (int(float(h - ch) / 2), ch, 0), (int(float(w - cw) / 2), cw, 0)
    if pad_to_aspect_ratio:
        ph = int(float(max(h, int(float(w * th) / tw)) - h) / 2)
        pw = int(float(max(w, int(float(h * tw) / th)) - w) / 2)
        return ((0, h, ph), (0, w, 0)) if ph > 0 else ((0, h, 0), (0, w, pw))
    return (0, h, 0), (0, w, 0)


def axis_matrix(n, n_out, window, method, antialias):
    """the (n_out, n) matrix of one axis of n, Keras's crop or pad (window: geometry's) folded in; None where the
    axis is left as it is (no crop, no pad, the same size: JAX skips it)"""
    start, length, pad = window
    n_in = length + 2 * pad
    if start == 0 and length == n and pad == 0 and n_in == n_out:
        return None
    m = weights(n_in, n_out, method, antialias) if n_in != n_out else np.eye(n_out)
    full = np.zeros((n_out, n))
    full[:, start:start + length] = m[:, pad:pad + length]
    return full


def matrices(h, w, size, method, antialias=False, crop_to_aspect_ratio=False, pad_to_aspect_ratio=False):
    """(the H matrix or None, the W matrix or None, whether the fill value enters): the resize of (h, w) images"""
    gh, gw = geometry(h, w, size, crop_to_aspect_ratio, pad_to_aspect_ratio)
    return (axis_matrix(h, size[0], gh, method, antialias), axis_matrix(w, size[1], gw, method, antialias),
            gh[2] > 0 or gw[2] > 0)


def resize_array(x, mh, mw, fill=0.0):
    """(..., H, W, C) images through the matrices at once (float32 results)"""
    y = np.asarray(x, np.float64) - fill
    if mh is not None:
        y = np.einsum("oh,...hwc->...owc", mh, y)
    if mw is not None:
        y = np.einsum("ow,...hwc->...hoc", mw, y)
    return (y + fill).astype(np.float32)


def resize_symbolic(x, mh, mw, fill=0.0):
    """symbolic (batch, H, W, C) images through the matrices: MatMuls of Const matrices (float32)"""
    h, w, c = x._ps
    if fill:
        x = Unary("subtract", float(fill))(x)
    if mh is not None:                                                   # (Ho, H) @ (H, W*C)
        x = MatMul()([Const(mh.astype(np.float32), keras_weight=False)(x), Reshape((h, w * c))(x)])
        x = Reshape((mh.shape[0], w, c))(x)
        h = mh.shape[0]
    if mw is not None:                                                   # (Wo, W) @ (W, Ho*C)
        x = Reshape((w, h * c))(Permute((2, 1, 3))(x))
        x = MatMul()([Const(mw.astype(np.float32), keras_weight=False)(x), x])
        x = Permute((2, 1, 3))(Reshape((mw.shape[0], h, c))(x))
    return Unary("add", float(fill))(x) if fill else x
