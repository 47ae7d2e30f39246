"""keras.applications.mobilenet_v2: MobileNetV2 (inverted residual blocks,
width alpha), as Keras 3 builds it."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled
from .imagenet_utils import correct_pad, validate_activation

_BLOCKS = [(16, 1, 1)] + [(24, 2, 6), (24, 1, 6)] + [(32, 2, 6)] + [(32, 1, 6)] * 2 + [(64, 2, 6)] + \
    [(64, 1, 6)] * 3 + [(96, 1, 6)] * 3 + [(160, 2, 6)] + [(160, 1, 6)] * 2 + [(320, 1, 6)]   # filters, stride, expansion


def _default_size(shape):
    rows, cols = (shape[0], shape[1]) if shape is not None and len(shape) >= 2 else (None, None)
    return rows if rows == cols and rows in [96, 128, 160, 192, 224] else 224


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet", input_tensor=None, pooling=None,
                classes=1000, classifier_activation="softmax", name=None):
    """Keras 3's MobileNetV2 (weights None or a local file)."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "mobilenet_v2/")
    if input_shape is not None and input_tensor is not None and input_tensor.shape[2] != input_shape[1]:
        raise ValueError(f"input_tensor.shape[2] must equal input_shape[1]; Received `input_tensor.shape="
                         f"{input_tensor.shape}`, `input_shape={input_shape}`")
    default_size = _default_size(input_shape if input_shape is not None else
                                 None if input_tensor is None else input_tensor.shape[1:])
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, 32, include_top, weights)
    rows = input_shape[0]
    if weights is not None and (rows != input_shape[1] or rows not in [96, 128, 160, 192, 224]):
        rows = 224
    x = layers.Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="Conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride, expansion=expansion,
                                block_id=block_id)
    last_block_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_block_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = pooled(x, pooling, None, None)
    return finish(img_input, input_tensor, x, name or f"mobilenetv2_{alpha:0.2f}_{rows}", weights)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    in_channels = inputs.shape[-1]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False, activation=None,
                          name=f"{prefix}expand")(x)
        x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=f"{prefix}expand_BN")(x)
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid", name=f"{prefix}depthwise")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=f"{prefix}depthwise_BN")(x)
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False, activation=None,
                      name=f"{prefix}project")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=f"{prefix}project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:   # rounding down takes at most 10% off
        new_v += divisor
    return new_v


def preprocess_input(x, data_format=None):
    """MobileNetV2's preprocessing: imagenet_utils.preprocess_input in "tf" mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
