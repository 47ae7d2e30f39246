"""Utilities: seeding (bf.utils.set_random_seed), to_categorical,
clear_session, the Keras data-set protocols Sequence / PyDataset (pydataset.py),
timeseries_dataset_from_array (timeseries_data.py), the directory data sets
image_ / text_ / audio_dataset_from_directory (image_folder.py, text_folder.py,
audio_folder.py), pad_sequences and the image loaders load_img / img_to_array."""

import io
import os
import random
import re

import numpy as np

from . import _core
from .audio_folder import audio_dataset_from_directory  # noqa: F401 - keras.utils' name
from .image_folder import image_dataset_from_directory  # noqa: F401 - keras.utils' name
from .object_registration import (CustomObjectScope, custom_object_scope, get_custom_objects,  # noqa: F401
                                  get_registered_name, get_registered_object, register_keras_serializable)
from .pydataset import PyDataset, Sequence  # noqa: F401 - keras.utils' names
from .text_folder import text_dataset_from_directory  # noqa: F401 - keras.utils' name
from .timeseries_data import timeseries_dataset_from_array  # noqa: F401 - keras.utils' name

_seed = {"base": None, "count": 0}


def set_random_seed(seed):
    """Seed boundfit (weight init, shuffling, dropout), Python's random and NumPy."""
    seed = int(seed)
    _seed["base"], _seed["count"] = seed, 0
    random.seed(seed)
    np.random.seed(seed % (2**32))


LAYER_NAMES = {}   # the count of automatic names per base ("dense", "dense_1", ...): layers, inputs, models


def clear_session(free_memory=True):
    """Keras's clear_session: automatic layer names start again ("dense"), and,
    with free_memory, the memory boundfit keeps between runs is given back: the
    arenas of the last finished fit / evaluate / predict, kept so that the next
    run of the same or a smaller size starts without page faults. The kernel
    already takes their pages back under memory pressure (they count as
    available); this unmaps them now, so that they also leave the process's RSS."""
    LAYER_NAMES.clear()
    if free_memory:
        _core.drop_kept()


def next_seed():
    """A fresh 63-bit seed: deterministic after set_random_seed, else from the OS."""
    if _seed["base"] is None:
        return int.from_bytes(os.urandom(8), "little") >> 1
    _seed["count"] += 1
    x = (_seed["base"] * 0x9E3779B97F4A7C15 + _seed["count"] * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    x ^= x >> 31
    return x >> 1


def to_categorical(y, num_classes=None, dtype="float32"):
    """Keras's to_categorical: class ids to one-hot rows (num_classes inferred when None)."""
    y = np.asarray(y, dtype="int64").reshape(-1)
    n = int(num_classes) if num_classes is not None else int(y.max()) + 1
    out = np.zeros((y.shape[0], n), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out




def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """Keras's keras.utils.pad_sequences: a list of sequences (each a list or
    array of steps, a step a scalar or an array) to one (n, maxlen, ...) array;
    shorter ones are padded with `value`, longer ones truncated, at the start
    ('pre', the default) or the end ('post'). maxlen None: the longest."""
    if not hasattr(sequences, "__len__"):
        raise ValueError(f"sequences must be a list of sequences, got {type(sequences).__name__}")
    for name, v in (("padding", padding), ("truncating", truncating)):
        if v not in ("pre", "post"):
            raise ValueError(f"{name} must be 'pre' or 'post', got {v!r}")
    lengths, step_shape = [], None
    for i, s in enumerate(sequences):
        if not hasattr(s, "__len__"):
            raise ValueError(f"sequences[{i}] is not a sequence: {s!r}")
        lengths.append(len(s))
        if step_shape is None and len(s):
            step_shape = np.asarray(s).shape[1:]
    step_shape = step_shape or ()
    if maxlen is None:
        maxlen = max(lengths, default=0)
    if not isinstance(maxlen, (int, np.integer)) or maxlen < 0:
        raise ValueError(f"maxlen must be a non-negative int or None, got {maxlen!r}")
    text = np.issubdtype(np.dtype(dtype), np.str_) if dtype is not object else True
    if isinstance(value, str) and not text:
        raise ValueError(f"value {value!r} is a string but dtype {dtype!r} is not: pass dtype=object or a str dtype")
    out = np.full((len(lengths), int(maxlen)) + tuple(step_shape), value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        kept = np.asarray(s[-maxlen:] if truncating == "pre" else s[:maxlen], dtype=dtype)
        if kept.shape[1:] != tuple(step_shape):
            raise ValueError(f"sequences[{i}] has steps of shape {kept.shape[1:]}, the first non-empty one "
                             f"{tuple(step_shape)}")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, -len(kept):] = kept
    return out


_RESAMPLE = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """Keras's keras.utils.load_img: a PIL image from a path (str, bytes,
    pathlib.Path) or a BytesIO, in `color_mode` 'rgb' / 'rgba' / 'grayscale',
    resized to target_size (height, width) if given; keep_aspect_ratio crops
    the centre to the target's aspect first. Needs Pillow."""
    try:
        from PIL import Image  # optional dependency, as in Keras
    except ImportError as e:
        raise ImportError("load_img needs Pillow: pip install pillow") from e
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


def snake_case(name):
    """A class name as Keras names its objects (keras.src.utils.naming.to_snake_case): TransformerBlock ->
    transformer_block."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()



class FeatureSpace:
    """Refused: Keras's FeatureSpace (keras.utils.FeatureSpace) is not in boundfit. Build the same features
    from its parts: a keras.Input per feature and StringLookup / IntegerLookup / Hashing / Discretization /
    Normalization on it, HashedCrossing on the data, then Concatenate."""
    _boundfit_refused = True   # tools/keras_coverage.py lists it as refused

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "keras.utils.FeatureSpace is not supported by boundfit. Build its features from the layers it "
            "combines: one keras.Input per feature with layers.StringLookup / IntegerLookup / Hashing "
            "(output_mode='one_hot') or Discretization / Normalization on it, layers.HashedCrossing applied to "
            "the data (or in a tf.data map), and layers.Concatenate of the encoded features")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """Keras's data tuple: x alone (a 1-tuple if x is itself a tuple or list), (x, y) or (x, y, sample_weight)."""
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) of Keras's data tuple, None where absent."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if 1 <= len(data) <= 3:
        return tuple(data) + (None,) * (3 - len(data))
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, "
                     f"found: {data}")


def normalize(x, axis=-1, order=2):
    """x divided by its `order`-norm along axis (a zero norm divides by 1), as Keras's on arrays; on a symbolic
    tensor use keras.ops.normalize (a TypeError says so)."""
    if hasattr(x, "_ps"):
        raise TypeError("utils.normalize takes arrays; on a symbolic tensor use keras.ops.normalize(x, axis, order)")
    x = np.asarray(x)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)
