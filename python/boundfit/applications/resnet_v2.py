"""keras.applications.resnet_v2: ResNet50V2 / 101V2 / 152V2 (pre-activation
blocks on resnet.py's builder), as Keras 3 builds them."""

from .. import layers
from . import imagenet_utils
from .resnet import ResNet


def residual_block_v2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    preact = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_preact_bn")(x)
    preact = layers.Activation("relu", name=f"{name}_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False, name=f"{name}_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return layers.Add(name=f"{name}_out")([shortcut, x])


def stack_residual_blocks_v2(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v2(x, filters, conv_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = residual_block_v2(x, filters, name=f"{name}_block{i}")
    return residual_block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def _v2(blocks, **kw):
    def stack_fn(x):
        for i, (filters, n) in enumerate(zip((64, 128, 256, 512), blocks)):
            x = stack_residual_blocks_v2(x, filters, n, stride1=1 if i == 3 else 2, name=f"conv{i + 2}")
        return x
    return ResNet(stack_fn, True, True, weights_name=kw["name"], **kw)


def ResNet50V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
               classifier_activation="softmax", name="resnet50v2"):
    """Keras 3's ResNet50V2 (weights None or a local file)."""
    return _v2((3, 4, 6, 3), include_top=include_top, weights=weights, input_tensor=input_tensor,
               input_shape=input_shape, pooling=pooling, classes=classes,
               classifier_activation=classifier_activation, name=name)


def ResNet101V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
                classifier_activation="softmax", name="resnet101v2"):
    """Keras 3's ResNet101V2 (weights None or a local file)."""
    return _v2((3, 4, 23, 3), include_top=include_top, weights=weights, input_tensor=input_tensor,
               input_shape=input_shape, pooling=pooling, classes=classes,
               classifier_activation=classifier_activation, name=name)


def ResNet152V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
                classifier_activation="softmax", name="resnet152v2"):
    """Keras 3's ResNet152V2 (weights None or a local file)."""
    return _v2((3, 8, 36, 3), include_top=include_top, weights=weights, input_tensor=input_tensor,
               input_shape=input_shape, pooling=pooling, classes=classes,
               classifier_activation=classifier_activation, name=name)


def preprocess_input(x, data_format=None):
    """ResNetV2's preprocessing: imagenet_utils.preprocess_input in "tf" mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
