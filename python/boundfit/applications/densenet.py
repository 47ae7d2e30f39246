"""keras.applications.densenet: DenseNet121 / 169 / 201 (dense blocks of
concatenated 1x1-3x3 convolutions, transitions halving the channels), as
Keras 3 builds them."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, top


def dense_block(x, blocks, name):
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x, reduction, name):
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_bn")(x)
    x = layers.Activation("relu", name=f"{name}_relu")(x)
    x = layers.Conv2D(int(x.shape[3] * reduction), 1, use_bias=False, name=f"{name}_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def conv_block(x, growth_rate, name):
    x1 = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_0_bn")(x)
    x1 = layers.Activation("relu", name=f"{name}_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=f"{name}_1_conv")(x1)
    x1 = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x1)
    x1 = layers.Activation("relu", name=f"{name}_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=f"{name}_2_conv")(x1)
    return layers.Concatenate(axis=3, name=f"{name}_concat")([x, x1])


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
             classes=1000, classifier_activation="softmax", name="densenet"):
    """Keras's DenseNet builder: the stem, four dense blocks of blocks[i] conv blocks, the top."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "densenet/")
    img_input, _ = image_input(input_tensor, input_shape, 224, 32, include_top, weights)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i, n in enumerate(blocks):
        x = dense_block(x, n, name=f"conv{i + 2}")
        if i < 3:
            x = transition_block(x, 0.5, name=f"pool{i + 2}")
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights)
    return finish(img_input, input_tensor, x, name, weights)


def DenseNet121(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="densenet121"):
    """Keras 3's DenseNet121 (weights None or a local file)."""
    return DenseNet([6, 12, 24, 16], include_top, weights, input_tensor, input_shape, pooling, classes,
                    classifier_activation, name)


def DenseNet169(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="densenet169"):
    """Keras 3's DenseNet169 (weights None or a local file)."""
    return DenseNet([6, 12, 32, 32], include_top, weights, input_tensor, input_shape, pooling, classes,
                    classifier_activation, name)


def DenseNet201(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="densenet201"):
    """Keras 3's DenseNet201 (weights None or a local file)."""
    return DenseNet([6, 12, 48, 32], include_top, weights, input_tensor, input_shape, pooling, classes,
                    classifier_activation, name)


def preprocess_input(x, data_format=None):
    """DenseNet's preprocessing: imagenet_utils.preprocess_input in "torch" mode."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
