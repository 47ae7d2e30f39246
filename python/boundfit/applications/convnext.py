"""keras.applications.convnext: ConvNeXtTiny / Small / Base / Large / XLarge
(a patchify stem and downsampling blocks as nested Sequentials, blocks of a
7x7 depthwise Conv2D (groups), LayerNormalization, two Dense layers, a
LayerScale and the residual sum; the ImageNet normalization in the model),
as Keras 3 builds them: same names, order and weights."""

import numpy as np

from .. import layers
from ..backend import get_uid
from ..models import Sequential
from . import imagenet_utils
from .app_layers import LayerScale, StochasticDepth
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled
from .imagenet_utils import validate_activation

MODEL_CONFIGS = {
    "tiny": dict(depths=[3, 3, 9, 3], projection_dims=[96, 192, 384, 768], default_size=224),
    "small": dict(depths=[3, 3, 27, 3], projection_dims=[96, 192, 384, 768], default_size=224),
    "base": dict(depths=[3, 3, 27, 3], projection_dims=[128, 256, 512, 1024], default_size=224),
    "large": dict(depths=[3, 3, 27, 3], projection_dims=[192, 384, 768, 1536], default_size=224),
    "xlarge": dict(depths=[3, 3, 27, 3], projection_dims=[256, 512, 1024, 2048], default_size=224),
}


def ConvNeXtBlock(projection_dim, drop_path_rate=0.0, layer_scale_init_value=1e-6, name=None):
    """One ConvNeXt block (a function of its input, as Keras's)."""
    name = name or f"prestem{get_uid('prestem')}"

    def apply(inputs):
        x = layers.Conv2D(filters=projection_dim, kernel_size=7, padding="same", groups=projection_dim,
                          name=f"{name}_depthwise_conv")(inputs)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_layernorm")(x)
        x = layers.Dense(4 * projection_dim, name=f"{name}_pointwise_conv_1")(x)
        x = layers.Activation("gelu", name=f"{name}_gelu")(x)
        x = layers.Dense(projection_dim, name=f"{name}_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim, name=f"{name}_layer_scale")(x)
        if drop_path_rate:
            layer = StochasticDepth(drop_path_rate, name=f"{name}_stochastic_depth")
        else:
            layer = layers.Activation("linear", name=f"{name}_identity")
        return inputs + layer(x)
    return apply


def PreStem(name=None):
    """The ImageNet-1k mean and standard deviation (of pixels in [0, 255]) as a Normalization layer."""
    name = name or f"prestem{get_uid('prestem')}"

    def apply(x):
        return layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                    variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2],
                                    name=f"{name}_prestem_normalization")(x)
    return apply


def Head(num_classes=1000, classifier_activation=None, name=None):
    """The classification head: average pooling, LayerNormalization, the Dense."""
    name = name or str(get_uid("head"))

    def apply(x):
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_head_layernorm")(x)
        return layers.Dense(num_classes, activation=classifier_activation, name=f"{name}_head_dense")(x)
    return apply


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0, layer_scale_init_value=1e-6, default_size=224,
             name="convnext", include_preprocessing=True, include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax", weights_name=None):
    """Keras's ConvNeXt builder (any depths and projection_dims; the named variants call it)."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + "convnext/")
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, 32, include_top, weights)
    x = img_input
    if include_preprocessing and input_shape[-1] == 3:
        x = PreStem(name=name)(x)
    stem = Sequential([layers.Conv2D(projection_dims[0], kernel_size=4, strides=4, name=f"{name}_stem_conv"),
                       layers.LayerNormalization(epsilon=1e-6, name=f"{name}_stem_layernorm")],
                      name=f"{name}_stem")
    downsample_layers = [stem] + [
        Sequential([layers.LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
                    layers.Conv2D(projection_dims[i + 1], kernel_size=2, strides=2,
                                  name=f"{name}_downsampling_conv_{i}")],
                   name=f"{name}_downsampling_block_{i}") for i in range(3)]
    depth_drop_rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i in range(4):
        x = downsample_layers[i](x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(projection_dim=projection_dims[i], drop_path_rate=depth_drop_rates[cur + j],
                              layer_scale_init_value=layer_scale_init_value, name=f"{name}_stage_{i}_block_{j}")(x)
        cur += depths[i]
    if include_top:
        validate_activation(classifier_activation, weights)
        x = Head(num_classes=classes, classifier_activation=classifier_activation, name=name)(x)
    else:
        x = pooled(x, pooling, None, None)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
    return finish(img_input, input_tensor, x, name, weights)


def _variant(size, doc_name):
    cfg = MODEL_CONFIGS[size]

    def application(include_top=True, include_preprocessing=True, weights="imagenet", input_tensor=None,
                    input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                    name=f"convnext_{size}"):
        return ConvNeXt(weights_name=f"convnext_{size}", depths=cfg["depths"], projection_dims=cfg["projection_dims"],
                        drop_path_rate=0.0, layer_scale_init_value=1e-6, default_size=cfg["default_size"], name=name,
                        include_top=include_top, include_preprocessing=include_preprocessing, weights=weights,
                        input_tensor=input_tensor, input_shape=input_shape, pooling=pooling, classes=classes,
                        classifier_activation=classifier_activation)
    application.__name__ = application.__qualname__ = doc_name
    application.__doc__ = f"Keras 3's {doc_name} (weights None or a local file; inputs of pixels in [0, 255])."
    return application


ConvNeXtTiny = _variant("tiny", "ConvNeXtTiny")
ConvNeXtSmall = _variant("small", "ConvNeXtSmall")
ConvNeXtBase = _variant("base", "ConvNeXtBase")
ConvNeXtLarge = _variant("large", "ConvNeXtLarge")
ConvNeXtXLarge = _variant("xlarge", "ConvNeXtXLarge")


def preprocess_input(x, data_format=None):
    """ConvNeXt normalizes in the model (its Normalization layer): the identity, as in Keras."""
    return x


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
