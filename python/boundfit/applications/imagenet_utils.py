"""keras.applications.imagenet_utils: ImageNet's preprocessing modes
(caffe, tf, torch), decode_predictions from a local class index file (no
download), and the input-shape rule every application shares
(obtain_input_shape), as Keras 3 writes them."""

import json
import os
import warnings

import numpy as np

from .. import activations

CLASS_INDEX_URL = "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"
_CLASS_INDEX = {}   # path -> the loaded index


def preprocess_input(x, data_format=None, mode="caffe"):
    """ImageNet preprocessing of a batch (or one image) of RGB pixels in [0, 255], channels last, as Keras 3:
    mode "caffe" (RGB to BGR, minus the ImageNet mean per channel), "tf" (scaled to [-1, 1]) or "torch" (scaled to
    [0, 1], then standardized per channel). A float NumPy array is changed in place, as Keras's is; returns
    float32 for other dtypes. Symbolic tensors: use the model's layers (Rescaling, Normalization) instead."""
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError(f"Expected mode to be one of `caffe`, `tf` or `torch`. Received: mode={mode}")
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError("Expected data_format to be one of `channels_first` or `channels_last`. Received: "
                         f"data_format={data_format}")
    if data_format == "channels_first":
        raise ValueError("preprocess_input: data_format='channels_first' is not supported by boundfit, which runs "
                         "channels_last only; transpose the images to (..., H, W, C)")
    if hasattr(x, "_ps"):
        raise TypeError("preprocess_input: boundfit preprocesses NumPy arrays (the data); for a symbolic tensor "
                        "put the preprocessing in the model with layers.Rescaling / layers.Normalization")
    x = np.asarray(x)
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype("float32", copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    else:
        x = x[..., ::-1]
        mean, std = [103.939, 116.779, 123.68], None
    for c in range(3):
        x[..., c] -= mean[c]
        if std is not None:
            x[..., c] /= std[c]
    return x


def _class_index(class_index):
    """the ImageNet class index: a dict, a path, or Keras's cached file (KERAS_HOME or ~/.keras, models/)"""
    if isinstance(class_index, dict):
        return class_index
    path = class_index
    if path is None:
        home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
        path = os.path.join(home, "models", "imagenet_class_index.json")
    path = os.fspath(path)
    if path not in _CLASS_INDEX:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"decode_predictions needs ImageNet's class index, and boundfit downloads "
                                    f"nothing: {path} does not exist. Download {CLASS_INDEX_URL} and put it there, "
                                    "or pass class_index=<its path>")
        with open(path) as f:
            _CLASS_INDEX[path] = json.load(f)
    return _CLASS_INDEX[path]


def decode_predictions(preds, top=5, class_index=None):
    """The top classes of each row of ImageNet predictions (samples, 1000), as Keras 3: lists of (class_name,
    class_description, score). The class index is read from `class_index` (a path or a dict) or from Keras's
    cache (~/.keras/models/imagenet_class_index.json); boundfit downloads nothing, so a missing file raises
    FileNotFoundError saying where to put it."""
    preds = np.asarray(preds)
    if len(preds.shape) != 2 or preds.shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D array of shape "
                         f"(samples, 1000)). Received array with shape: {preds.shape}")
    index = _class_index(class_index)
    results = []
    for pred in preds:
        top_indices = pred.argsort()[-top:][::-1]
        result = [tuple(index[str(i)]) + (pred[i],) for i in top_indices]
        result.sort(key=lambda x: x[2], reverse=True)
        results.append(result)
    return results


def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten, weights=None):
    """Keras's rule for an application's input shape: the default (default_size, default_size, 3), or the given
    one checked against min_size (None sizes allowed unless require_flatten)."""
    if data_format != "channels_last":
        raise ValueError(f"boundfit's applications run channels_last only, got data_format={data_format!r}")
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        if input_shape[-1] not in {1, 3}:
            warnings.warn("This model usually expects 1 or 3 input channels. However, it was passed an input_shape "
                          f"with {input_shape[-1]} input channels.", stacklevel=2)
        default_shape = (default_size, default_size, input_shape[-1])
    else:
        default_shape = (default_size, default_size, 3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default_shape:
            raise ValueError("When setting `include_top=True` and loading `imagenet` weights, `input_shape` should "
                             f"be {default_shape}.  Received: input_shape={input_shape}")
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError(f"`input_shape` must be a tuple of three integers. Received: input_shape={input_shape}")
        if input_shape[-1] != 3 and weights == "imagenet":
            raise ValueError(f"The input must have 3 channels; Received `input_shape={input_shape}`")
        if (input_shape[0] is not None and input_shape[0] < min_size) or (
                input_shape[1] is not None and input_shape[1] < min_size):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                             f"input_shape={input_shape}")
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError("If `include_top` is True, you should specify a static `input_shape`. Received: "
                         f"input_shape={input_shape}")
    return tuple(input_shape)


def validate_activation(classifier_activation, weights):
    """Keras's check: with pretrained weights, the classifier's activation is None or softmax."""
    if weights is None:
        return
    classifier_activation = activations.get(classifier_activation)
    if classifier_activation not in {activations.get("softmax"), activations.get(None)}:
        raise ValueError("Only `None` and `softmax` activations are allowed for the `classifier_activation` "
                         "argument when using pretrained weights, with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


def correct_pad(inputs, kernel_size):
    """Keras's ZeroPadding2D padding before a strided 'valid' convolution of kernel_size on inputs (as TF's SAME)."""
    input_size = inputs.shape[1:3]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if input_size[0] is None else (1 - input_size[0] % 2, 1 - input_size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))
