"""keras.applications.inception_v3: InceptionV3 (the mixed0-mixed10 modules
of parallel branches, each convolution a conv2d_bn), as Keras 3 builds it."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, top


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """Conv2D without bias, BatchNormalization without scale, relu (Keras's conv2d_bn)"""
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding, use_bias=False,
                      name=None if name is None else f"{name}_conv")(x)
    x = layers.BatchNormalization(axis=3, scale=False, name=None if name is None else f"{name}_bn")(x)
    return layers.Activation("relu", name=name)(x)


def _chain(x, *convs):
    for c in convs:
        x = conv2d_bn(x, *c)
    return x


def _avg_branch(x, filters):
    return conv2d_bn(layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x), filters, 1, 1)


def InceptionV3(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="inception_v3"):
    """Keras 3's InceptionV3 (weights None or a local file; inputs at least 75x75)."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "inception_v3/")
    img_input, _ = image_input(input_tensor, input_shape, 299, 75, include_top, weights)
    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    for i, pool_filters in enumerate((32, 64, 64)):          # mixed 0, 1, 2: 35 x 35 x 256 / 288
        branches = [conv2d_bn(x, 64, 1, 1), _chain(x, (48, 1, 1), (64, 5, 5)),
                    _chain(x, (64, 1, 1), (96, 3, 3), (96, 3, 3)), _avg_branch(x, pool_filters)]
        x = layers.concatenate(branches, axis=3, name=f"mixed{i}")
    branch3x3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")   # mixed 3: 17 x 17 x 768
    branch3x3dbl = _chain(x, (64, 1, 1), (96, 3, 3))
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3, strides=(2, 2), padding="valid")
    x = layers.concatenate([branch3x3, branch3x3dbl, layers.MaxPooling2D((3, 3), strides=(2, 2))(x)], axis=3,
                           name="mixed3")
    for i, f in enumerate((128, 160, 160, 192)):             # mixed 4, 5, 6, 7: 17 x 17 x 768
        branches = [conv2d_bn(x, 192, 1, 1), _chain(x, (f, 1, 1), (f, 1, 7), (192, 7, 1)),
                    _chain(x, (f, 1, 1), (f, 7, 1), (f, 1, 7), (f, 7, 1), (192, 1, 7)), _avg_branch(x, 192)]
        x = layers.concatenate(branches, axis=3, name=f"mixed{4 + i}")
    branch3x3 = conv2d_bn(conv2d_bn(x, 192, 1, 1), 320, 3, 3, strides=(2, 2), padding="valid")   # mixed 8
    branch7x7x3 = _chain(x, (192, 1, 1), (192, 1, 7), (192, 7, 1))
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 3, 3, strides=(2, 2), padding="valid")
    x = layers.concatenate([branch3x3, branch7x7x3, layers.MaxPooling2D((3, 3), strides=(2, 2))(x)], axis=3,
                           name="mixed8")
    for i in range(2):                                       # mixed 9, 10: 8 x 8 x 2048
        branch1x1 = conv2d_bn(x, 320, 1, 1)
        branch3x3 = conv2d_bn(x, 384, 1, 1)
        branch3x3 = layers.concatenate([conv2d_bn(branch3x3, 384, 1, 3), conv2d_bn(branch3x3, 384, 3, 1)], axis=3,
                                       name=f"mixed9_{i}")
        branch3x3dbl = _chain(x, (448, 1, 1), (384, 3, 3))
        branch3x3dbl = layers.concatenate([conv2d_bn(branch3x3dbl, 384, 1, 3), conv2d_bn(branch3x3dbl, 384, 3, 1)],
                                          axis=3)
        x = layers.concatenate([branch1x1, branch3x3, branch3x3dbl, _avg_branch(x, 192)], axis=3,
                               name=f"mixed{9 + i}")
    x = top(x, include_top, pooling, classes, classifier_activation, weights, pooled_names=(None, None))
    return finish(img_input, input_tensor, x, name, weights)


def preprocess_input(x, data_format=None):
    """InceptionV3's preprocessing: imagenet_utils.preprocess_input in "tf" mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
