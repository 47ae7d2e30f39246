"""What every application shares around its own layers, as Keras 3's
application functions write it: the weights argument (None or a local file:
boundfit downloads nothing), the image input (input_shape / input_tensor),
the top (classifier, or pooling) and the model with its weights loaded."""

import os

from .. import layers
from ..layers.input_layer import Input
from ..models import Model
from .imagenet_utils import obtain_input_shape, validate_activation

KERAS_WEIGHTS = "https://storage.googleapis.com/tensorflow/keras-applications/"


def check_weights(weights, include_top, classes, url=None):
    """None, or the path of an existing weights file; "imagenet" (a download) is refused by name."""
    if weights == "imagenet":
        where = f" (Keras downloads it from {url})" if url else ""
        raise ValueError("weights='imagenet' needs a download and boundfit downloads nothing: download the weights "
                         f"file{where} and pass its path as weights=<path>, or weights=None")
    if weights is not None and not (isinstance(weights, (str, os.PathLike)) and os.path.isfile(weights)):
        raise ValueError("The `weights` argument should be either `None` (random initialization) or the path to "
                         f"the weights file to be loaded (boundfit downloads nothing). Received: weights={weights}")


def image_input(input_tensor, input_shape, default_size, min_size, include_top, weights, require_flatten=None):
    """(the image tensor the layers start from, input_shape as obtain_input_shape decided it)"""
    input_shape = obtain_input_shape(input_shape, default_size=default_size, min_size=min_size,
                                     data_format="channels_last",
                                     require_flatten=include_top if require_flatten is None else require_flatten,
                                     weights=weights)
    if input_tensor is None:
        return Input(shape=input_shape), input_shape
    if not hasattr(input_tensor, "_ps"):
        raise TypeError(f"input_tensor must be a symbolic tensor (the output of keras.Input() or of a layer), got "
                        f"{type(input_tensor).__name__}")
    return input_tensor, input_shape


def top(x, include_top, pooling, classes, classifier_activation, weights, pool_name="avg_pool",
        pooled_names=("avg_pool", "max_pool")):
    """Keras's usual top: GlobalAveragePooling2D then the `predictions` Dense, or the pooling without a top (its
    layers named pooled_names; None: Keras's automatic names, as some families leave them)."""
    if include_top:
        x = layers.GlobalAveragePooling2D(name=pool_name)(x)
        validate_activation(classifier_activation, weights)
        return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    return pooled(x, pooling, *pooled_names)


def pooled(x, pooling, avg_name="avg_pool", max_name="max_pool"):
    """include_top=False: pooling None (the feature map), "avg" or "max" over the map (names None: Keras's
    automatic names, as some families leave them)."""
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name=max_name)(x)
    if pooling is not None:
        raise ValueError(f"pooling must be None, 'avg' or 'max', got {pooling!r}")
    return x


def source_inputs(t):
    """The Inputs a symbolic tensor is computed from (Keras's operation_utils.get_source_inputs)."""
    out, seen, todo = [], set(), [t]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t._node is None:
            out.append(t)
        else:
            todo.extend(reversed(t._node.inputs))
    return out[0] if len(out) == 1 else out


def finish(img_input, input_tensor, x, name, weights):
    """The Model from the image input (or input_tensor's sources) to x, with the weights file loaded."""
    inputs = source_inputs(input_tensor) if input_tensor is not None else img_input
    model = Model(inputs, x, name=name)
    if weights is not None:
        model.load_weights(weights)
    return model

