"""keras.ops.image's resize and extract_patches (ops.image), composed of the
engine's primitives (ops_lax.py) on a batch of images (B, H, W, C):

- resize: per axis a product with a constant (n_out, n_in) matrix built as
  jax.image.resize builds it, for every interpolation (bilinear, nearest,
  bicubic, lanczos3 / 5, area), antialias, Keras's crop and pad to the aspect
  ratio folded into the matrices (layers/resize.py, shared with
  layers.Resizing);
- extract_patches: a Gather of each patch's rows (outputs, size) along H,
  of its columns along W, a Permute to (H', W', ph, pw, C) and a Reshape
  to Keras's (H', W', ph * pw * C); padding "same" pads with zeros first.

On arrays both compute with NumPy. Each is recorded as Keras's Resize /
ExtractPatches node."""

import types

import numpy as np

from . import ops_lax as lx
from .layers import resize as rz
from .layers.opnode import record
from .ops_shape import pad

IMAGE = "keras.src.ops.image"


def _pair(v, what):
    v = (int(v), int(v)) if np.ndim(v) == 0 else tuple(int(a) for a in v)
    if len(v) != 2 or min(v) < 1:
        raise ValueError(f"keras.ops.image: {what} must be one or two positive integers, got {v!r}")
    return v


def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """keras.ops.image.resize: per axis a constant matrix (layers/resize.py), every interpolation of Keras's"""
    size = _pair(size, "size")
    rz.check("keras.ops.image.resize", interpolation, fill_mode, crop_to_aspect_ratio, pad_to_aspect_ratio)
    first = data_format == "channels_first"
    if not lx.sym(images):
        x = np.asarray(images, np.float32)
        if x.ndim not in (3, 4):
            raise ValueError(f"keras.ops.image.resize: images must be of rank 3 or 4, got shape {x.shape}")
        x = np.moveaxis(x, -3, -1) if first else x
        mh, mw, padded = rz.matrices(x.shape[-3], x.shape[-2], size, interpolation, antialias,
                                     crop_to_aspect_ratio, pad_to_aspect_ratio)
        y = rz.resize_array(x, mh, mw, float(fill_value) if padded else 0.0)
        return np.moveaxis(y, -1, -3) if first else y
    lx.batched("image.resize", images)
    if images.ndim != 4:
        lx.refuse("image.resize", f"of {images.shape}: a batch of images (B, H, W, C)")
    h = lx.permute(images, (1, 2, 0)) if first else images
    H, W, _ = lx.static("image.resize", h)
    mh, mw, padded = rz.matrices(H, W, size, interpolation, antialias, crop_to_aspect_ratio, pad_to_aspect_ratio)
    h = rz.resize_symbolic(h, mh, mw, float(fill_value) if padded else 0.0)
    y = lx.permute(h, (2, 0, 1)) if first else h
    cfg = dict(size=list(size), interpolation=interpolation, antialias=bool(antialias),
               crop_to_aspect_ratio=bool(crop_to_aspect_ratio), pad_to_aspect_ratio=bool(pad_to_aspect_ratio),
               fill_mode=fill_mode, fill_value=fill_value, data_format=data_format)
    return record(y, "Resize", IMAGE, cfg, [images])


def _patch_index(n, p, s, d, same):
    """the start of each patch along an axis of n (after "same"'s padding) and the padding (before, after)"""
    span = (p - 1) * d + 1
    if same:
        out = -(-n // s)
        total = max((out - 1) * s + span - n, 0)
        before, after = total // 2, total - total // 2
    else:
        out, before, after = (n - span) // s + 1, 0, 0
    if out < 1:
        raise ValueError(f"keras.ops.image.extract_patches: a patch of {p} (dilation {d}) does not fit an axis of {n}")
    return np.arange(out)[:, None] * s + np.arange(p)[None, :] * d, (before, after)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """keras.ops.image.extract_patches of (B, H, W, C): (B, H', W', ph * pw * C), each patch's rows, columns and
    channels in that order (Keras's identity-kernel convolution)"""
    ph, pw = _pair(size, "size")
    sh, sw = _pair(strides if strides is not None else (ph, pw), "strides")
    dh, dw = _pair(dilation_rate, "dilation_rate")
    if padding not in ("valid", "same"):
        raise ValueError(f"keras.ops.image.extract_patches: padding must be 'valid' or 'same', got {padding!r}")
    first = data_format == "channels_first"
    if not lx.sym(images):
        x = np.asarray(images, np.float32)
        x = np.moveaxis(x, -3, -1) if first else x
        ih, padh = _patch_index(x.shape[-3], ph, sh, dh, padding == "same")
        iw, padw = _patch_index(x.shape[-2], pw, sw, dw, padding == "same")
        x = np.pad(x, [(0, 0)] * (x.ndim - 3) + [padh, padw, (0, 0)])
        y = x[..., ih[:, None, :, None], iw[None, :, None, :], :]          # (..., H', W', ph, pw, C)
        y = y.reshape(y.shape[:-3] + (-1,))
        return np.moveaxis(y, -1, -3) if first else y
    lx.batched("image.extract_patches", images)
    if images.ndim != 4:
        lx.refuse("image.extract_patches", f"of {images.shape}: a batch of images (B, H, W, C)")
    h = lx.permute(images, (1, 2, 0)) if first else images
    H, W, C = lx.static("image.extract_patches", h)
    ih, padh = _patch_index(H, ph, sh, dh, padding == "same")
    iw, padw = _patch_index(W, pw, sw, dw, padding == "same")
    if any(padh + padw):
        h = pad(h, [(0, 0), padh, padw, (0, 0)])
    h = lx.take(h, ih, 0)                                      # (H', ph, W, C)
    h = lx.take(h, iw, 2)                                      # (H', ph, W', pw, C)
    h = lx.reshape(lx.permute(h, (0, 2, 1, 3, 4)), (ih.shape[0], iw.shape[0], ph * pw * C))
    y = lx.permute(h, (2, 0, 1)) if first else h
    cfg = dict(size=[ph, pw], strides=None if strides is None else [sh, sw], dilation_rate=dilation_rate,
               padding=padding, data_format=data_format)
    return record(y, "ExtractPatches", IMAGE, cfg, [images])


image = types.SimpleNamespace(resize=resize, extract_patches=extract_patches)   # keras.ops.image
