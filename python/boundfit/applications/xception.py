"""keras.applications.xception: Xception (separable convolutions in
residual blocks: entry, eight middle, exit), as Keras 3 builds it."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, top


def _sep(x, filters, name, act_first=True):
    """[relu] SeparableConv2D 3x3 'same' without bias, BatchNormalization (Keras's names)"""
    if act_first:
        x = layers.Activation("relu", name=f"{name}_act")(x)
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=f"{name}_bn")(x)


def _down(x, filters1, filters2, block, first_act=True):
    """an entry / exit block: a strided 1x1 shortcut, two separable convolutions, max pooling, the sum"""
    residual = layers.Conv2D(filters2, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    residual = layers.BatchNormalization(axis=-1)(residual)
    if first_act:
        x = layers.Activation("relu", name=f"block{block}_sepconv1_act")(x)
    x = layers.SeparableConv2D(filters1, (3, 3), padding="same", use_bias=False, name=f"block{block}_sepconv1")(x)
    x = layers.BatchNormalization(axis=-1, name=f"block{block}_sepconv1_bn")(x)
    x = _sep(x, filters2, f"block{block}_sepconv2")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"block{block}_pool")(x)
    return layers.add([x, residual])


def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", name="xception"):
    """Keras 3's Xception (weights None or a local file; inputs at least 71x71)."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "xception/")
    img_input, _ = image_input(input_tensor, input_shape, 299, 71, include_top, weights)
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)
    x = _down(x, 128, 128, 2, first_act=False)
    x = _down(x, 256, 256, 3)
    x = _down(x, 728, 728, 4)
    for i in range(8):
        residual = x
        for k in (1, 2, 3):
            x = _sep(x, 728, f"block{i + 5}_sepconv{k}")
        x = layers.add([x, residual])
    x = _down(x, 728, 1024, 13)
    x = layers.SeparableConv2D(1536, (3, 3), padding="same", use_bias=False, name="block14_sepconv1")(x)
    x = layers.BatchNormalization(axis=-1, name="block14_sepconv1_bn")(x)
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = layers.SeparableConv2D(2048, (3, 3), padding="same", use_bias=False, name="block14_sepconv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block14_sepconv2_bn")(x)
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights, pooled_names=(None, None))
    return finish(img_input, input_tensor, x, name, weights)


def preprocess_input(x, data_format=None):
    """Xception's preprocessing: imagenet_utils.preprocess_input in "tf" mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
