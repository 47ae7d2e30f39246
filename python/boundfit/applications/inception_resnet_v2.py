"""keras.applications.inception_resnet_v2: InceptionResNetV2 (Inception
branches summed into the residual by CustomScaleLayer: x + scale * up), as
Keras 3 builds it: same names, order and weights."""

from .. import layers
from . import imagenet_utils
from .app_layers import CustomScaleLayer
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, top


def conv2d_bn(x, filters, kernel_size, strides=1, padding="same", activation="relu", use_bias=False, name=None):
    """Conv2D, BatchNormalization without scale (when no bias), the activation (Keras's names: name, name_bn,
    name_ac; automatic names without name)."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias, name=name)(x)
    if not use_bias:
        x = layers.BatchNormalization(axis=3, scale=False, name=None if name is None else f"{name}_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else f"{name}_ac")(x)
    return x


_BRANCHES = {   # per block type: branches of (filters, kernel_size) conv2d_bn chains
    "block35": [[(32, 1)], [(32, 1), (32, 3)], [(32, 1), (48, 3), (64, 3)]],
    "block17": [[(192, 1)], [(128, 1), (160, [1, 7]), (192, [7, 1])]],
    "block8": [[(192, 1)], [(192, 1), (224, [1, 3]), (256, [3, 1])]],
}


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """An Inception-ResNet block: its branches concatenated, a 1x1 Conv2D with bias back to x's channels, x + scale
    times that, the activation."""
    if block_type not in _BRANCHES:
        raise ValueError('Unknown Inception-ResNet block type. Expects "block35", "block17" or "block8", but got: '
                         f"{block_type}")
    branches = []
    for chain in _BRANCHES[block_type]:
        b = x
        for filters, k in chain:
            b = conv2d_bn(b, filters, k)
        branches.append(b)
    block_name = f"{block_type}_{block_idx}"
    mixed = layers.Concatenate(axis=3, name=f"{block_name}_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[3], 1, activation=None, use_bias=True, name=f"{block_name}_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=f"{block_name}_ac")(x)
    return x


def InceptionResNetV2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                      classes=1000, classifier_activation="softmax", name="inception_resnet_v2"):
    """Keras 3's InceptionResNetV2 (weights None or a local file; inputs at least 75x75, 299x299 by default)."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "inception_resnet_v2/")
    img_input, _ = image_input(input_tensor, input_shape, 299, 75, include_top, weights)
    x = conv2d_bn(img_input, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)
    branch_0 = conv2d_bn(x, 96, 1)
    branch_1 = conv2d_bn(conv2d_bn(x, 48, 1), 64, 5)
    branch_2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1), 96, 3), 96, 3)
    branch_pool = conv2d_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)
    x = layers.Concatenate(axis=3, name="mixed_5b")([branch_0, branch_1, branch_2, branch_pool])
    for block_idx in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=block_idx)
    branch_0 = conv2d_bn(x, 384, 3, strides=2, padding="valid")
    branch_1 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 256, 3), 384, 3, strides=2, padding="valid")
    branch_pool = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=3, name="mixed_6a")([branch_0, branch_1, branch_pool])
    for block_idx in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=block_idx)
    branch_0 = conv2d_bn(conv2d_bn(x, 256, 1), 384, 3, strides=2, padding="valid")
    branch_1 = conv2d_bn(conv2d_bn(x, 256, 1), 288, 3, strides=2, padding="valid")
    branch_2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 288, 3), 320, 3, strides=2, padding="valid")
    branch_pool = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=3, name="mixed_7a")([branch_0, branch_1, branch_2, branch_pool])
    for block_idx in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=block_idx)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8", block_idx=10)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = top(x, include_top, pooling, classes, classifier_activation, weights, pooled_names=(None, None))
    return finish(img_input, input_tensor, x, name, weights)


def preprocess_input(x, data_format=None):
    """InceptionResNetV2's preprocessing: imagenet_utils.preprocess_input in "tf" mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
