"""keras.utils: seeding (set_random_seed), to_categorical, clear_session,
pad_sequences, normalize, the data tuple helpers; and, from their own
modules, the data-set protocols (pydataset.py), the directory and timeseries
data sets, split_dataset (sample_dataset.py), the image helpers
(image_io.py), the bounding-box helpers (bounding_boxes.py), get_file (file_download.py), Config (config_dict.py), Progbar
and the interactive-logging switch (callbacks/progbar.py)."""

import numpy as np

from . import bounding_boxes  # noqa: F401 - keras.utils.bounding_boxes
from .audio_folder import audio_dataset_from_directory  # noqa: F401 - keras.utils' name
from .backend import is_keras_tensor, standardize_dtype  # noqa: F401 - keras.utils' names
from .callbacks.progbar import (Progbar, disable_interactive_logging, enable_interactive_logging,  # noqa: F401
                                is_interactive_logging_enabled)
from .config_dict import Config  # noqa: F401 - keras.utils' name
from .file_download import get_file  # noqa: F401 - keras.utils' name
from .image_io import array_to_img, img_to_array, load_img, save_img  # noqa: F401 - keras.utils' names
from .image_folder import image_dataset_from_directory  # noqa: F401 - keras.utils' name
from .layers.node import get_source_inputs  # noqa: F401 - keras.utils' name
from .model_plot import model_to_dot, plot_model  # noqa: F401 - keras.utils' names
from .object_registration import (CustomObjectScope, custom_object_scope, get_custom_objects,  # noqa: F401
                                  get_registered_name, get_registered_object, register_keras_serializable)
from .pydataset import PyDataset, Sequence  # noqa: F401 - keras.utils' names
from .sample_dataset import split_dataset  # noqa: F401 - keras.utils' name
from .saving.serialization import deserialize_keras_object, serialize_keras_object  # noqa: F401
from .session import LAYER_NAMES, clear_session, next_seed, set_random_seed, snake_case  # noqa: F401
from .text_folder import text_dataset_from_directory  # noqa: F401 - keras.utils' name
from .timeseries_data import timeseries_dataset_from_array  # noqa: F401 - keras.utils' name


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
