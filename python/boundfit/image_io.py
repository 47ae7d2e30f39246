"""Images to and from arrays, as keras.utils has them: load_img (a file to a
PIL image, resized), img_to_array, array_to_img (scaled to 0-255 unless
scale=False), save_img and smart_resize (a centred crop to the target's aspect ratio, resized). Pillow is an
optional dependency, as in Keras."""

import io
import os
import warnings

import numpy as np

from .ops_image import resize


def _pil():
    try:
        from PIL import Image  # optional dependency, as in Keras
    except ImportError as e:
        raise ImportError("load_img, array_to_img and save_img need Pillow: pip install pillow") from e
    return Image


_RESAMPLE = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """Keras's keras.utils.load_img: a PIL image from a path (str, bytes,
    pathlib.Path) or a BytesIO, in `color_mode` 'rgb' / 'rgba' / 'grayscale',
    resized to target_size (height, width) if given; keep_aspect_ratio crops
    the centre to the target's aspect first. Needs Pillow."""
    Image = _pil()
    if color_mode not in ("rgb", "rgba", "grayscale"):
        raise ValueError(f"color_mode must be 'rgb', 'rgba' or 'grayscale', got {color_mode!r}")
    if interpolation not in _RESAMPLE:
        raise ValueError(f"interpolation must be one of {', '.join(_RESAMPLE)}, got {interpolation!r}")
    if isinstance(path, io.BytesIO):
        img = Image.open(path)
    elif isinstance(path, (str, bytes, os.PathLike)):
        with open(path, "rb") as f:
            img = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path must be a path or io.BytesIO, got {type(path).__name__}")
    mode = {"rgb": "RGB", "rgba": "RGBA"}.get(color_mode)
    if mode and img.mode != mode:
        img = img.convert(mode)
    elif color_mode == "grayscale" and img.mode not in ("L", "I;16", "I"):
        img = img.convert("L")
    if target_size is not None:
        th, tw = (int(v) for v in target_size)
        if img.size != (tw, th):
            resample = getattr(Image.Resampling, interpolation.upper())
            box = None
            if keep_aspect_ratio:  # the centre crop with the target's aspect
                w, h = img.size
                ch, cw = min(h, w * th // tw), min(w, h * tw // th)
                top, left = (h - ch) // 2, (w - cw) // 2
                box = (left, top, left + cw, top + ch)
            img = img.resize((tw, th), resample, box=box)
    return img


def img_to_array(img, data_format=None, dtype=None):
    """Keras's keras.utils.img_to_array: a PIL image to a float32 array
    (height, width, channels) ('channels_last', the default) or (channels,
    height, width); a grayscale image gets one channel."""
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    x = np.asarray(img, dtype=dtype or "float32")
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"img_to_array: an image has 2 or 3 dimensions, got shape {x.shape}")
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """Keras's array_to_img: a rank-3 array (height, width, channels) ('channels_last', the default) or
    (channels, height, width) to a PIL image; scale=True maps the array's range to 0-255. 1 channel gives an
    'L' image ('I', 32-bit, above 255), 3 'RGB', 4 'RGBA'."""
    Image = _pil()
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"array_to_img: data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    x = np.array(x, dtype=dtype or "float32")
    if x.ndim != 3:
        raise ValueError(f"array_to_img: x must be one image of rank 3, got shape {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    channels = x.shape[2]
    if channels in (3, 4):
        return Image.fromarray(x.astype("uint8"), "RGB" if channels == 3 else "RGBA")
    if channels == 1:
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"array_to_img: an image has 1, 3 or 4 channels, got {channels} (shape {x.shape})")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Keras's save_img: array_to_img(x) written to path; the format from the suffix unless file_format is
    given ('jpg' is JPEG; an RGBA image saved as JPEG loses its alpha channel, with a warning)."""
    if file_format is None and isinstance(path, (str, os.PathLike)):
        file_format = os.path.splitext(os.fspath(path))[1][1:].lower() or None
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last", **kwargs):
    """keras.preprocessing.image.smart_resize: the largest centred crop of the image (or batch) with the target's
    aspect ratio, resized to `size` by keras.ops.image.resize; a NumPy array back."""
    if kwargs:
        raise TypeError(f"smart_resize() got unexpected keyword arguments: {list(kwargs)}")
    if len(size) != 2 or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
                                 for d in size):
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    img = np.asarray(x)
    if not 3 <= img.ndim <= 4:
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or `(batch_size, height, "
                         f"width, channels)`, but got input with incorrect rank, of shape {img.shape}.")
    last = data_format == "channels_last"
    height, width = img.shape[-3:-1] if last else img.shape[-2:]
    th, tw = size
    ch = max(min(height, int(float(width * th) / tw)), 1)
    cw = max(min(width, int(float(height * tw) / th)), 1)
    h0, w0 = int(float(height - ch) / 2), int(float(width - cw) / 2)
    crop = (slice(h0, h0 + ch), slice(w0, w0 + cw))
    img = img[(Ellipsis,) + crop + (slice(None),)] if last else img[(Ellipsis,) + crop]
    batch = img if img.ndim == 4 else img[None]
    out = resize(batch.astype(np.float32, copy=False), size, interpolation=interpolation, data_format=data_format)
    return np.asarray(out if img.ndim == 4 else out[0])
