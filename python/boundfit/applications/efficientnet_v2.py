"""keras.applications.efficientnet_v2: EfficientNetV2B0-B3, S, M, L (fused
and depthwise MBConv blocks, squeeze-excite, the rescaling and
normalization in the model), as Keras 3 builds them: same names, order
and weights."""

import copy
import math

from .. import initializers, layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled
from .efficientnet import CONV_KERNEL_INITIALIZER, DENSE_KERNEL_INITIALIZER
from .imagenet_utils import validate_activation


def _stages(*rows):
    """block arguments from rows (kernel_size, num_repeat, input_filters, output_filters, expand_ratio, se_ratio,
    strides, conv_type); conv_type 1: fused"""
    keys = ("kernel_size", "num_repeat", "input_filters", "output_filters", "expand_ratio", "se_ratio", "strides",
            "conv_type")
    return [dict(zip(keys, r)) for r in rows]


_B = _stages((3, 1, 32, 16, 1, 0, 1, 1), (3, 2, 16, 32, 4, 0, 2, 1), (3, 2, 32, 48, 4, 0, 2, 1),
             (3, 3, 48, 96, 4, 0.25, 2, 0), (3, 5, 96, 112, 6, 0.25, 1, 0), (3, 8, 112, 192, 6, 0.25, 2, 0))
DEFAULT_BLOCKS_ARGS = {
    "efficientnetv2-s": _stages((3, 2, 24, 24, 1, 0.0, 1, 1), (3, 4, 24, 48, 4, 0.0, 2, 1), (3, 4, 48, 64, 4, 0, 2, 1),
                                (3, 6, 64, 128, 4, 0.25, 2, 0), (3, 9, 128, 160, 6, 0.25, 1, 0),
                                (3, 15, 160, 256, 6, 0.25, 2, 0)),
    "efficientnetv2-m": _stages((3, 3, 24, 24, 1, 0, 1, 1), (3, 5, 24, 48, 4, 0, 2, 1), (3, 5, 48, 80, 4, 0, 2, 1),
                                (3, 7, 80, 160, 4, 0.25, 2, 0), (3, 14, 160, 176, 6, 0.25, 1, 0),
                                (3, 18, 176, 304, 6, 0.25, 2, 0), (3, 5, 304, 512, 6, 0.25, 1, 0)),
    "efficientnetv2-l": _stages((3, 4, 32, 32, 1, 0, 1, 1), (3, 7, 32, 64, 4, 0, 2, 1), (3, 7, 64, 96, 4, 0, 2, 1),
                                (3, 10, 96, 192, 4, 0.25, 2, 0), (3, 19, 192, 224, 6, 0.25, 1, 0),
                                (3, 25, 224, 384, 6, 0.25, 2, 0), (3, 7, 384, 640, 6, 0.25, 1, 0)),
    "efficientnetv2-b0": _B, "efficientnetv2-b1": _B, "efficientnetv2-b2": _B, "efficientnetv2-b3": _B,
}


def round_filters(filters, width_coefficient, min_depth, depth_divisor):
    """Filters scaled by width_coefficient, rounded to the divisor."""
    filters *= width_coefficient
    minimum_depth = min_depth or depth_divisor
    return int(max(minimum_depth, int(filters + depth_divisor / 2) // depth_divisor * depth_divisor))


def round_repeats(repeats, depth_coefficient):
    """Repeats scaled by depth_coefficient, rounded up."""
    return int(math.ceil(depth_coefficient * repeats))


def _squeeze_excite(x, name, activation, filters, input_filters, se_ratio):
    filters_se = max(1, int(input_filters * se_ratio))
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
    se = layers.Conv2D(filters_se, 1, padding="same", activation=activation, kernel_initializer=CONV_KERNEL_INITIALIZER,
                       name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=CONV_KERNEL_INITIALIZER,
                       name=f"{name}se_expand")(se)
    return layers.multiply([x, se], name=f"{name}se_excite")


def _expand(inputs, name, activation, bn_momentum, filters, kernel_size, strides):
    x = layers.Conv2D(filters, kernel_size=kernel_size, strides=strides, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      padding="same", use_bias=False, name=f"{name}expand_conv")(inputs)
    x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name=f"{name}expand_bn")(x)
    return layers.Activation(activation, name=f"{name}expand_activation")(x)


def _project(x, inputs, name, activation, bn_momentum, input_filters, output_filters, kernel_size, strides,
             survival_probability, act):
    x = layers.Conv2D(output_filters, kernel_size=kernel_size, strides=strides,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False,
                      name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name=f"{name}project_bn")(x)
    if act:
        x = layers.Activation(activation, name=f"{name}project_activation")(x)
    if strides == 1 and input_filters == output_filters:
        if survival_probability:   # (Keras's: the probability is the Dropout's rate)
            x = layers.Dropout(survival_probability, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.add([x, inputs], name=f"{name}add")
    return x


def MBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3, strides=1, se_ratio=0.0,
                bn_momentum=0.9, activation="swish", survival_probability=0.8, name=None):
    """Expansion, depthwise convolution, squeeze-excite, projection, the (dropped) residual."""
    def apply(inputs):
        filters = input_filters * expand_ratio
        x = inputs if expand_ratio == 1 else _expand(inputs, name, activation, bn_momentum, filters, 1, 1)
        x = layers.DepthwiseConv2D(kernel_size=kernel_size, strides=strides,
                                   depthwise_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False,
                                   name=f"{name}dwconv2")(x)
        x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name=f"{name}bn")(x)
        x = layers.Activation(activation, name=f"{name}activation")(x)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, name, activation, filters, input_filters, se_ratio)
        return _project(x, inputs, name, activation, bn_momentum, input_filters, output_filters, 1, 1,
                        survival_probability, False)
    return apply


def FusedMBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3, strides=1, se_ratio=0.0,
                     bn_momentum=0.9, activation="swish", survival_probability=0.8, name=None):
    """The expansion and depthwise convolution fused into one Conv2D, squeeze-excite, projection, the residual."""
    def apply(inputs):
        filters = input_filters * expand_ratio
        x = inputs if expand_ratio == 1 else _expand(inputs, name, activation, bn_momentum, filters, kernel_size,
                                                      strides)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, name, activation, filters, input_filters, se_ratio)
        one = expand_ratio != 1
        return _project(x, inputs, name, activation, bn_momentum, input_filters, output_filters,
                        1 if one else kernel_size, 1 if one else strides, survival_probability, not one)
    return apply


def EfficientNetV2(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2, drop_connect_rate=0.2,
                   depth_divisor=8, min_depth=8, bn_momentum=0.9, activation="swish", blocks_args="default",
                   name="efficientnetv2", include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                   pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                   weights_name=None):
    """Keras's EfficientNetV2 builder (the named variants call it)."""
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS[name]
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "efficientnet_v2/")
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, 32, include_top, weights)
    x = img_input
    if include_preprocessing:
        if name.split("-")[-1].startswith("b") and input_shape[-1] == 3:
            x = layers.Rescaling(scale=1.0 / 255)(x)
            x = layers.Normalization(mean=[0.485, 0.456, 0.406], variance=[0.229 ** 2, 0.224 ** 2, 0.225 ** 2],
                                     axis=3)(x)
        else:
            x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)
    rf = dict(width_coefficient=width_coefficient, min_depth=min_depth, depth_divisor=depth_divisor)
    x = layers.Conv2D(filters=round_filters(blocks_args[0]["input_filters"], **rf), kernel_size=3, strides=2,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(args["num_repeat"] for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["num_repeat"] <= 0:
            raise ValueError(f"The number of repeats in `EfficientNetV2` must be > 0. Received: "
                             f"num_repeat={args['num_repeat']}")
        args["input_filters"] = round_filters(args["input_filters"], **rf)
        args["output_filters"] = round_filters(args["output_filters"], **rf)
        block = {0: MBConvBlock, 1: FusedMBConvBlock}[args.pop("conv_type")]
        for j in range(round_repeats(args.pop("num_repeat"), depth_coefficient)):
            if j > 0:
                args["strides"] = 1
                args["input_filters"] = args["output_filters"]
            x = block(activation=activation, bn_momentum=bn_momentum, survival_probability=drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)(x)
            b += 1
    x = layers.Conv2D(filters=round_filters(1280, **rf), kernel_size=1, strides=1,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False, name="top_conv")(x)
    x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name="top_bn")(x)
    x = layers.Activation(activation=activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_KERNEL_INITIALIZER,
                         bias_initializer=initializers.Constant(0.0), name="predictions")(x)
    else:
        x = pooled(x, pooling)
    return finish(img_input, input_tensor, x, name, weights)


def _variant(width, depth, size, suffix, doc_name):
    def application(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                    classes=1000, classifier_activation="softmax", include_preprocessing=True,
                    name=f"efficientnetv2-{suffix}"):
        return EfficientNetV2(width_coefficient=width, depth_coefficient=depth, default_size=size, name=name,
                              include_top=include_top, weights=weights, input_tensor=input_tensor,
                              input_shape=input_shape, pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation, include_preprocessing=include_preprocessing,
                              weights_name=suffix if suffix.startswith("b") else f"-{suffix}")
    application.__name__ = application.__qualname__ = doc_name
    application.__doc__ = f"Keras 3's {doc_name} (weights None or a local file; {size}x{size} by default)."
    return application


EfficientNetV2B0 = _variant(1.0, 1.0, 224, "b0", "EfficientNetV2B0")
EfficientNetV2B1 = _variant(1.0, 1.1, 240, "b1", "EfficientNetV2B1")
EfficientNetV2B2 = _variant(1.1, 1.2, 260, "b2", "EfficientNetV2B2")
EfficientNetV2B3 = _variant(1.2, 1.4, 300, "b3", "EfficientNetV2B3")
EfficientNetV2S = _variant(1.0, 1.0, 384, "s", "EfficientNetV2S")
EfficientNetV2M = _variant(1.0, 1.0, 480, "m", "EfficientNetV2M")
EfficientNetV2L = _variant(1.0, 1.0, 480, "l", "EfficientNetV2L")


def preprocess_input(x, data_format=None):
    """EfficientNetV2 preprocesses in the model (Rescaling, and Normalization for B0-B3): the identity, as in
    Keras."""
    return x


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
