"""The layers Keras's application modules define for themselves, under
Keras's class names, configs and modules (a .keras file names them as
Keras does: keras.src.applications.convnext's LayerScale, ...), each
composed of the engine's kinds in its call(): ConvNeXt's LayerScale (a
per-channel weight times the input) and StochasticDepth (a residual branch
dropped per sample in fit: Dropout with noise_shape (batch, 1, ...), the
same draw and scaling), InceptionResNetV2's CustomScaleLayer
(inputs[0] + inputs[1] * scale)."""

from .. import initializers, layers
from ..layers.layer import keras_config


class LayerScale(layers.Layer):
    """keras.src.applications.convnext.LayerScale(init_values, projection_dim): x * gamma, gamma (projection_dim,)
    trainable, initialized to init_values."""
    _keras_module = "keras.src.applications.convnext"

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values, self.projection_dim = init_values, projection_dim

    def build(self, _):
        self.gamma = self.add_weight(shape=(self.projection_dim,), initializer=initializers.Constant(self.init_values),
                                     trainable=True)
        super().build()

    def call(self, x):
        return x * self.gamma


class StochasticDepth(layers.Layer):
    """keras.src.applications.convnext.StochasticDepth(drop_path_rate): in fit, each sample's input is zeroed with
    probability drop_path_rate and the others divided by 1 - drop_path_rate; the identity otherwise."""
    _keras_module = "keras.src.applications.convnext"

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def build(self, input_shape):
        self.drop = layers.Dropout(self.drop_path_rate, noise_shape=(None,) + (1,) * (len(input_shape) - 1),
                                   name=f"{self.name}_dropout")
        super().build()

    def call(self, x, training=None):
        return self.drop(x, training=training)


class CustomScaleLayer(layers.Layer):
    """keras.src.applications.inception_resnet_v2.CustomScaleLayer(scale): inputs[0] + inputs[1] * scale."""
    _keras_module = "keras.src.applications.inception_resnet_v2"

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs):
        return inputs[0] + inputs[1] * self.scale


@keras_config(LayerScale)
def _layer_scale_config(l):
    return dict(init_values=l.init_values, projection_dim=l.projection_dim)


@keras_config(StochasticDepth)
def _stochastic_depth_config(l):
    return dict(drop_path_rate=l.drop_path_rate)


@keras_config(CustomScaleLayer)
def _custom_scale_config(l):
    return dict(scale=l.scale)
