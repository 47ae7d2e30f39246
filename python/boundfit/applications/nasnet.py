"""keras.applications.nasnet: NASNetMobile and NASNetLarge (NASNet-A: normal
and reduction cells of separable convolutions and poolings over the two
previous cells' outputs, adjusted to one shape by a factorized reduction
(padding, cropping, strided 1x1 average pooling)), as Keras 3 builds them:
same names, order and weights."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled
from .imagenet_utils import correct_pad, validate_activation

_BN = dict(axis=-1, momentum=0.9997, epsilon=1e-3)


def NASNet(input_shape=None, penultimate_filters=4032, num_blocks=6, stem_block_filters=96, skip_reduction=True,
           filter_multiplier=2, include_top=True, weights="imagenet", input_tensor=None, pooling=None, classes=1000,
           default_size=None, classifier_activation="softmax", name="NASNet"):
    """Keras's NASNet-A builder (the two named variants call it)."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "nasnet/")
    img_input, _ = image_input(input_tensor, input_shape, default_size or 331, 32, include_top, weights)
    if penultimate_filters % (24 * (filter_multiplier ** 2)) != 0:
        raise ValueError("For NASNet-A models, the `penultimate_filters` must be a multiple of 24 * "
                         f"(`filter_multiplier` ** 2). Current value: {penultimate_filters}")
    filters = penultimate_filters // 24
    x = layers.Conv2D(stem_block_filters, (3, 3), strides=(2, 2), padding="valid", use_bias=False, name="stem_conv1",
                      kernel_initializer="he_normal")(img_input)
    x = layers.BatchNormalization(name="stem_bn1", **_BN)(x)
    p = None
    x, p = _reduction_a_cell(x, p, filters // (filter_multiplier ** 2), block_id="stem_1")
    x, p = _reduction_a_cell(x, p, filters // filter_multiplier, block_id="stem_2")
    for stage in range(3):
        if stage:
            x, p0 = _reduction_a_cell(x, p, filters * filter_multiplier ** stage,
                                      block_id=f"reduce_{stage * num_blocks}")
            p = p0 if not skip_reduction else p
        for i in range(num_blocks):
            x, p = _normal_a_cell(x, p, filters * filter_multiplier ** stage,
                                  block_id=f"{stage * num_blocks + i + (1 if stage else 0)}")
    x = layers.Activation("relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = pooled(x, pooling, None, None)
    return finish(img_input, input_tensor, x, name, weights)


def NASNetMobile(input_shape=None, include_top=True, weights="imagenet", input_tensor=None, pooling=None,
                 classes=1000, classifier_activation="softmax", name="nasnet_mobile"):
    """Keras 3's NASNetMobile (weights None or a local file; 224x224 by default)."""
    if not include_top and input_shape is None:
        input_shape = (224, 224, 3)
    return NASNet(input_shape, penultimate_filters=1056, num_blocks=4, stem_block_filters=32, skip_reduction=False,
                  filter_multiplier=2, include_top=include_top, weights=weights, input_tensor=input_tensor,
                  pooling=pooling, classes=classes, default_size=224, classifier_activation=classifier_activation,
                  name=name)


def NASNetLarge(input_shape=None, include_top=True, weights="imagenet", input_tensor=None, pooling=None, classes=1000,
                classifier_activation="softmax", name="nasnet_large"):
    """Keras 3's NASNetLarge (weights None or a local file; 331x331 by default)."""
    return NASNet(input_shape, penultimate_filters=4032, num_blocks=6, stem_block_filters=96, skip_reduction=True,
                  filter_multiplier=2, include_top=include_top, weights=weights, input_tensor=input_tensor,
                  pooling=pooling, classes=classes, default_size=331, classifier_activation=classifier_activation,
                  name=name)


def _separable_conv_block(ip, filters, kernel_size=(3, 3), strides=(1, 1), block_id=None):
    """relu, [padding,] SeparableConv2D, BatchNormalization, relu, SeparableConv2D, BatchNormalization"""
    x = layers.Activation("relu")(ip)
    if strides == (2, 2):
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size), name=f"separable_conv_1_pad_{block_id}")(x)
    x = layers.SeparableConv2D(filters, kernel_size, strides=strides, name=f"separable_conv_1_{block_id}",
                               padding="valid" if strides == (2, 2) else "same", use_bias=False)(x)
    x = layers.BatchNormalization(name=f"separable_conv_1_bn_{block_id}", **_BN)(x)
    x = layers.Activation("relu")(x)
    x = layers.SeparableConv2D(filters, kernel_size, name=f"separable_conv_2_{block_id}", padding="same",
                               use_bias=False)(x)
    return layers.BatchNormalization(name=f"separable_conv_2_bn_{block_id}", **_BN)(x)


def _adjust_block(p, ip, filters, block_id=None):
    """The previous cell's output p brought to ip's size (a factorized reduction) or to `filters` channels."""
    if p is None:
        return ip
    if p.shape[-2] != ip.shape[-2]:
        p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_1_{block_id}")(p)
        p1 = layers.Conv2D(filters // 2, (1, 1), padding="same", use_bias=False, name=f"adjust_conv_1_{block_id}",
                           kernel_initializer="he_normal")(p1)
        p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
        p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
        p2 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_2_{block_id}")(p2)
        p2 = layers.Conv2D(filters // 2, (1, 1), padding="same", use_bias=False, name=f"adjust_conv_2_{block_id}",
                           kernel_initializer="he_normal")(p2)
        p = layers.concatenate([p1, p2], axis=-1)
        return layers.BatchNormalization(name=f"adjust_bn_{block_id}", **_BN)(p)
    if p.shape[-1] != filters:
        p = layers.Activation("relu")(p)
        p = layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same", name=f"adjust_conv_projection_{block_id}",
                          use_bias=False, kernel_initializer="he_normal")(p)
        return layers.BatchNormalization(name=f"adjust_bn_{block_id}", **_BN)(p)
    return p


def _cell_input(ip, kind, filters, block_id):
    h = layers.Activation("relu")(ip)
    h = layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same", name=f"{kind}_conv_1_{block_id}",
                      use_bias=False, kernel_initializer="he_normal")(h)
    return layers.BatchNormalization(name=f"{kind}_bn_1_{block_id}", **_BN)(h)


def _avg3(x, strides, padding, name):
    return layers.AveragePooling2D((3, 3), strides=strides, padding=padding, name=name)(x)


def _normal_a_cell(ip, p, filters, block_id=None):
    """A normal cell: (its output, ip as the next cell's previous output)."""
    p = _adjust_block(p, ip, filters, block_id)
    h = _cell_input(ip, "normal", filters, block_id)
    x1_1 = _separable_conv_block(h, filters, kernel_size=(5, 5), block_id=f"normal_left1_{block_id}")
    x1_2 = _separable_conv_block(p, filters, block_id=f"normal_right1_{block_id}")
    x1 = layers.add([x1_1, x1_2], name=f"normal_add_1_{block_id}")
    x2_1 = _separable_conv_block(p, filters, (5, 5), block_id=f"normal_left2_{block_id}")
    x2_2 = _separable_conv_block(p, filters, (3, 3), block_id=f"normal_right2_{block_id}")
    x2 = layers.add([x2_1, x2_2], name=f"normal_add_2_{block_id}")
    x3 = _avg3(h, (1, 1), "same", f"normal_left3_{block_id}")
    x3 = layers.add([x3, p], name=f"normal_add_3_{block_id}")
    x4_1 = _avg3(p, (1, 1), "same", f"normal_left4_{block_id}")
    x4_2 = _avg3(p, (1, 1), "same", f"normal_right4_{block_id}")
    x4 = layers.add([x4_1, x4_2], name=f"normal_add_4_{block_id}")
    x5 = _separable_conv_block(h, filters, block_id=f"normal_left5_{block_id}")
    x5 = layers.add([x5, h], name=f"normal_add_5_{block_id}")
    x = layers.concatenate([p, x1, x2, x3, x4, x5], axis=-1, name=f"normal_concat_{block_id}")
    return x, ip


def _reduction_a_cell(ip, p, filters, block_id=None):
    """A reduction cell (strides 2): (its output, ip as the next cell's previous output)."""
    p = _adjust_block(p, ip, filters, block_id)
    h = _cell_input(ip, "reduction", filters, block_id)
    h3 = layers.ZeroPadding2D(padding=correct_pad(h, 3), name=f"reduction_pad_1_{block_id}")(h)
    x1_1 = _separable_conv_block(h, filters, (5, 5), strides=(2, 2), block_id=f"reduction_left1_{block_id}")
    x1_2 = _separable_conv_block(p, filters, (7, 7), strides=(2, 2), block_id=f"reduction_right1_{block_id}")
    x1 = layers.add([x1_1, x1_2], name=f"reduction_add_1_{block_id}")
    x2_1 = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid", name=f"reduction_left2_{block_id}")(h3)
    x2_2 = _separable_conv_block(p, filters, (7, 7), strides=(2, 2), block_id=f"reduction_right2_{block_id}")
    x2 = layers.add([x2_1, x2_2], name=f"reduction_add_2_{block_id}")
    x3_1 = _avg3(h3, (2, 2), "valid", f"reduction_left3_{block_id}")
    x3_2 = _separable_conv_block(p, filters, (5, 5), strides=(2, 2), block_id=f"reduction_right3_{block_id}")
    x3 = layers.add([x3_1, x3_2], name=f"reduction_add3_{block_id}")
    x4 = _avg3(x1, (1, 1), "same", f"reduction_left4_{block_id}")
    x4 = layers.add([x2, x4])
    x5_1 = _separable_conv_block(x1, filters, (3, 3), block_id=f"reduction_left4_{block_id}")
    x5_2 = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid", name=f"reduction_right5_{block_id}")(h3)
    x5 = layers.add([x5_1, x5_2], name=f"reduction_add4_{block_id}")
    x = layers.concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{block_id}")
    return x, ip


def preprocess_input(x, data_format=None):
    """NASNet's preprocessing: imagenet_utils.preprocess_input in "tf" mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
