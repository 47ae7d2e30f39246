"""keras.applications.resnet: ResNet50 / 101 / 152 (and the ResNet builder
ResNetV2 shares), layer for layer as Keras 3 builds them: same names, order
and weights, so Keras's weight files load."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled, top

WEIGHTS_URL = KERAS_WEIGHTS + "resnet/"


def ResNet(stack_fn, preact, use_bias, include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
           pooling=None, classes=1000, classifier_activation="softmax", name="resnet", weights_name=None):
    """Keras's ResNet / ResNetV2 builder: the stem, stack_fn's residual stacks, the top."""
    check_weights(weights, include_top, classes, WEIGHTS_URL)
    img_input, _ = image_input(input_tensor, input_shape, 224, 32, include_top, weights)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights) if include_top else pooled(x, pooling)
    return finish(img_input, input_tensor, x, name, weights)


def residual_block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="same", name=f"{name}_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_3_bn")(x)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def stack_residual_blocks_v1(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = residual_block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def _v1(blocks, **kw):
    def stack_fn(x):
        for i, (filters, n) in enumerate(zip((64, 128, 256, 512), blocks)):
            x = stack_residual_blocks_v1(x, filters, n, stride1=1 if i == 0 else 2, name=f"conv{i + 2}")
        return x
    return ResNet(stack_fn, preact=False, use_bias=True, weights_name=kw["name"], **kw)


def ResNet50(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", name="resnet50"):
    """Keras 3's ResNet50 (weights None or a local file)."""
    return _v1((3, 4, 6, 3), include_top=include_top, weights=weights, input_tensor=input_tensor,
               input_shape=input_shape, pooling=pooling, classes=classes,
               classifier_activation=classifier_activation, name=name)


def ResNet101(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name="resnet101"):
    """Keras 3's ResNet101 (weights None or a local file)."""
    return _v1((3, 4, 23, 3), include_top=include_top, weights=weights, input_tensor=input_tensor,
               input_shape=input_shape, pooling=pooling, classes=classes,
               classifier_activation=classifier_activation, name=name)


def ResNet152(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name="resnet152"):
    """Keras 3's ResNet152 (weights None or a local file)."""
    return _v1((3, 8, 36, 3), include_top=include_top, weights=weights, input_tensor=input_tensor,
               input_shape=input_shape, pooling=pooling, classes=classes,
               classifier_activation=classifier_activation, name=name)


def preprocess_input(x, data_format=None):
    """ResNet's preprocessing: imagenet_utils.preprocess_input in "caffe" mode (BGR, minus the ImageNet mean)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
