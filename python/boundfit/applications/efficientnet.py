"""keras.applications.efficientnet: EfficientNetB0-B7 (MBConv blocks with
squeeze-excite and stochastic depth, scaled by width and depth, the
rescaling and normalization in the model), as Keras 3 builds them."""

import copy
import math

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled
from .imagenet_utils import correct_pad, validate_activation

DEFAULT_BLOCKS_ARGS = [
    dict(kernel_size=3, repeats=1, filters_in=32, filters_out=16, expand_ratio=1, id_skip=True, strides=1,
         se_ratio=0.25),
    dict(kernel_size=3, repeats=2, filters_in=16, filters_out=24, expand_ratio=6, id_skip=True, strides=2,
         se_ratio=0.25),
    dict(kernel_size=5, repeats=2, filters_in=24, filters_out=40, expand_ratio=6, id_skip=True, strides=2,
         se_ratio=0.25),
    dict(kernel_size=3, repeats=3, filters_in=40, filters_out=80, expand_ratio=6, id_skip=True, strides=2,
         se_ratio=0.25),
    dict(kernel_size=5, repeats=3, filters_in=80, filters_out=112, expand_ratio=6, id_skip=True, strides=1,
         se_ratio=0.25),
    dict(kernel_size=5, repeats=4, filters_in=112, filters_out=192, expand_ratio=6, id_skip=True, strides=2,
         se_ratio=0.25),
    dict(kernel_size=3, repeats=1, filters_in=192, filters_out=320, expand_ratio=6, id_skip=True, strides=1,
         se_ratio=0.25)]
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2, drop_connect_rate=0.2,
                 depth_divisor=8, activation="swish", blocks_args="default", name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
                 classifier_activation="softmax", weights_name=None):
    """Keras's EfficientNet builder (the pretrained path's extra Rescaling comes with weights='imagenet' only,
    which boundfit refuses)."""
    blocks_args = DEFAULT_BLOCKS_ARGS if blocks_args == "default" else blocks_args
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "efficientnet/")
    img_input, _ = image_input(input_tensor, input_shape, default_size, 32, include_top, weights)

    def round_filters(filters, divisor=depth_divisor):
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:   # rounding down takes at most 10% off
            new_filters += divisor
        return int(new_filters)

    def round_repeats(repeats):
        return int(math.ceil(depth_coefficient * repeats))

    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=3)(x)
    x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["repeats"] <= 0:
            raise ValueError(f"The number of repeats in `EfficientNet` must be > 0. Received: repeats={args['repeats']}")
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / blocks, name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1
    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="top_conv")(x)
    x = layers.BatchNormalization(axis=3, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_KERNEL_INITIALIZER,
                         name="predictions")(x)
    else:
        x = pooled(x, pooling)
    return finish(img_input, input_tensor, x, name, weights)


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32, filters_out=16, kernel_size=3,
          strides=1, expand_ratio=1, se_ratio=0.0, id_skip=True):
    """An MBConv block: expansion, depthwise convolution, squeeze-excite, projection, (dropped) residual."""
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                          name=f"{name}expand_conv")(inputs)
        x = layers.BatchNormalization(axis=3, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    else:
        x = inputs
    if strides == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size), name=f"{name}dwconv_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding="valid" if strides == 2 else "same",
                               use_bias=False, depthwise_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}dwconv")(x)
    x = layers.BatchNormalization(axis=3, name=f"{name}bn")(x)
    x = layers.Activation(activation, name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
        se = layers.Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
        se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                           kernel_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}se_reduce")(se)
        se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=f"{name}se_expand")(se)
        x = layers.multiply([x, se], name=f"{name}se_excite")
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=3, name=f"{name}project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.add([x, inputs], name=f"{name}add")
    return x


def _variant(width, depth, size, dropout, weights_name, doc_name):
    def application(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                    classes=1000, classifier_activation="softmax", name=f"efficientnet{weights_name}"):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top, weights=weights,
                            input_tensor=input_tensor, input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, weights_name=weights_name)
    application.__name__ = application.__qualname__ = doc_name
    application.__doc__ = f"Keras 3's {doc_name} (weights None or a local file; {size}x{size} by default)."
    return application


EfficientNetB0 = _variant(1.0, 1.0, 224, 0.2, "b0", "EfficientNetB0")
EfficientNetB1 = _variant(1.0, 1.1, 240, 0.2, "b1", "EfficientNetB1")
EfficientNetB2 = _variant(1.1, 1.2, 260, 0.3, "b2", "EfficientNetB2")
EfficientNetB3 = _variant(1.2, 1.4, 300, 0.3, "b3", "EfficientNetB3")
EfficientNetB4 = _variant(1.4, 1.8, 380, 0.4, "b4", "EfficientNetB4")
EfficientNetB5 = _variant(1.6, 2.2, 456, 0.4, "b5", "EfficientNetB5")
EfficientNetB6 = _variant(1.8, 2.6, 528, 0.5, "b6", "EfficientNetB6")
EfficientNetB7 = _variant(2.0, 3.1, 600, 0.5, "b7", "EfficientNetB7")


def preprocess_input(x, data_format=None):
    """EfficientNet preprocesses in the model (its Rescaling and Normalization layers): the identity, as in
    Keras."""
    return x


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
