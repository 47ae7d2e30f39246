"""keras.applications.mobilenet_v3: MobileNetV3Small / Large (inverted
residual blocks with squeeze-excite, hard_swish, preprocessing in the
model), as Keras 3 builds them."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input
from .imagenet_utils import correct_pad, validate_activation


def MobileNetV3(stack_fn, last_point_ch, input_shape=None, alpha=1.0, model_type="large", minimalistic=False,
                include_top=True, weights="imagenet", input_tensor=None, classes=1000, pooling=None,
                dropout_rate=0.2, classifier_activation="softmax", include_preprocessing=True, name=None):
    """Keras's MobileNetV3 builder: the stem, stack_fn's blocks, the 1x1 head."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "mobilenet_v3/")
    if input_shape is not None and input_tensor is not None and input_tensor.shape[2] != input_shape[1]:
        raise ValueError(f"input_shape[1] must equal input_tensor.shape[2].  Received input_shape={input_shape}, "
                         f"input_tensor.shape={input_tensor.shape}")
    if input_shape is None and input_tensor is not None:
        input_shape = (input_tensor.shape[2], input_tensor.shape[1], 3)
    if input_shape is None:
        input_shape = (None, None, 3)
    rows, cols = input_shape[0], input_shape[1]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"Input size must be at least 32x32; Received `input_shape={input_shape}`")
    if include_top and None in input_shape:
        raise ValueError("If `include_top` is True, you should specify a static `input_shape`. Received: "
                         f"input_shape={input_shape}")
    img_input = image_input(input_tensor, input_shape, 224, 32, False, None)[0]
    kernel, activation, se_ratio = (3, relu, None) if minimalistic else (5, hard_swish, 0.25)
    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False, name="conv")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="conv_bn")(x)
    x = activation(x)
    x = stack_fn(x, kernel, activation, se_ratio)
    last_conv_ch = _depth(x.shape[-1] * 6)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False, name="conv_1")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="conv_1_bn")(x)
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True, name="conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="logits")(x)
        x = layers.Flatten()(x)
        validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D(name="max_pool")(x)
    return finish(img_input, input_tensor, x, name, weights)


def MobileNetV3Small(input_shape=None, alpha=1.0, minimalistic=False, include_top=True, weights="imagenet",
                     input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2,
                     classifier_activation="softmax", include_preprocessing=True, name="MobileNetV3Small"):
    """Keras 3's MobileNetV3Small (weights None or a local file)."""
    def stack_fn(x, kernel, activation, se_ratio):
        def depth(d):
            return _depth(d * alpha)
        x = _inverted_res_block(x, 1, depth(16), 3, 2, se_ratio, relu, 0)
        x = _inverted_res_block(x, 72.0 / 16, depth(24), 3, 2, None, relu, 1)
        x = _inverted_res_block(x, 88.0 / 24, depth(24), 3, 1, None, relu, 2)
        for block_id, (e, f, s) in enumerate([(4, 40, 2), (6, 40, 1), (6, 40, 1), (3, 48, 1), (3, 48, 1),
                                              (6, 96, 2), (6, 96, 1), (6, 96, 1)], start=3):
            x = _inverted_res_block(x, e, depth(f), kernel, s, se_ratio, activation, block_id)
        return x
    return MobileNetV3(stack_fn, 1024, input_shape, alpha, "small", minimalistic, include_top, weights, input_tensor,
                       classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name=name)


def MobileNetV3Large(input_shape=None, alpha=1.0, minimalistic=False, include_top=True, weights="imagenet",
                     input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2,
                     classifier_activation="softmax", include_preprocessing=True, name="MobileNetV3Large"):
    """Keras 3's MobileNetV3Large (weights None or a local file)."""
    def stack_fn(x, kernel, activation, se_ratio):
        def depth(d):
            return _depth(d * alpha)
        blocks = [(1, 16, 3, 1, None, relu), (4, 24, 3, 2, None, relu), (3, 24, 3, 1, None, relu),
                  (3, 40, kernel, 2, se_ratio, relu), (3, 40, kernel, 1, se_ratio, relu),
                  (3, 40, kernel, 1, se_ratio, relu), (6, 80, 3, 2, None, activation),
                  (2.5, 80, 3, 1, None, activation), (2.3, 80, 3, 1, None, activation),
                  (2.3, 80, 3, 1, None, activation), (6, 112, 3, 1, se_ratio, activation),
                  (6, 112, 3, 1, se_ratio, activation), (6, 160, kernel, 2, se_ratio, activation),
                  (6, 160, kernel, 1, se_ratio, activation), (6, 160, kernel, 1, se_ratio, activation)]
        for block_id, (e, f, k, s, se, act) in enumerate(blocks):
            x = _inverted_res_block(x, e, depth(f), k, s, se, act, block_id)
        return x
    return MobileNetV3(stack_fn, 1280, input_shape, alpha, "large", minimalistic, include_top, weights, input_tensor,
                       classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name=name)


def relu(x):
    return layers.ReLU()(x)


def hard_sigmoid(x):
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def hard_swish(x):
    return layers.Activation("hard_swish")(x)


def _depth(v, divisor=8, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:   # rounding down takes at most 10% off
        new_v += divisor
    return new_v


def _se_block(inputs, filters, se_ratio, prefix):
    x = layers.GlobalAveragePooling2D(keepdims=True, name=f"{prefix}squeeze_excite_avg_pool")(inputs)
    x = layers.Conv2D(_depth(filters * se_ratio), kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv")(x)
    x = layers.ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", name=f"{prefix}squeeze_excite_conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, x])


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation, block_id):
    shortcut = x
    prefix = "expanded_conv_"
    infilters = x.shape[-1]
    if block_id:
        prefix = f"expanded_conv_{block_id}_"
        x = layers.Conv2D(_depth(infilters * expansion), kernel_size=1, padding="same", use_bias=False,
                          name=f"{prefix}expand")(x)
        x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=f"{prefix}expand_bn")(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size), name=f"{prefix}depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride, padding="same" if stride == 1 else "valid",
                               use_bias=False, name=f"{prefix}depthwise")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=f"{prefix}depthwise_bn")(x)
    x = activation(x)
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion), se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False, name=f"{prefix}project")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=f"{prefix}project_bn")(x)
    if stride == 1 and infilters == filters:
        x = layers.Add(name=f"{prefix}add")([shortcut, x])
    return x


def preprocess_input(x, data_format=None):
    """MobileNetV3 preprocesses in the model (its Rescaling layer): the identity, as in Keras."""
    return x


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
