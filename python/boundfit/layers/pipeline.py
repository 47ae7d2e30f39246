"""Keras 3's Pipeline: preprocessing layers applied in order, as one layer
(Keras's config: its layers serialized, and its name). In boundfit it holds
weightless preprocessing layers only (the augmentation and color layers,
Rescaling, CenterCrop, another Pipeline): a layer with weights is refused by
name (use Sequential)."""

from .augmentation import _Random
from .color import RandomBrightness, RandomGrayscale
from .cropping import CenterCrop
from .image_aug import ImageAugmentation
from .layer import Layer, keras_config, keras_object, layer_config
from .preprocessing import Rescaling


class Pipeline(Layer):
    """Keras 3's `Pipeline(layers, name=None)`: `layers` applied in order, each given the call's `training`."""
    _base = "pipeline"
    _keras_records_training = True
    _config_sublayers = True      # saving/config.py: its `layers` configs become layers first
    _keras_name_only_config = True   # Keras's config holds no trainable / dtype (layer.layer_config)

    def __init__(self, layers, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        layers = list(layers) if isinstance(layers, (list, tuple)) else None
        if layers is None:
            raise ValueError("Pipeline: layers must be a list of layers")
        for l in layers:
            if not isinstance(l, (ImageAugmentation, _Random, RandomBrightness, RandomGrayscale, Rescaling,
                                  CenterCrop, Pipeline)):
                raise ValueError(f"Pipeline: layers holds {type(l).__name__} {getattr(l, 'name', l)!r}; boundfit's "
                                 "Pipeline takes weightless preprocessing layers (the augmentation layers, "
                                 "Rescaling, CenterCrop); use Sequential for other layers")
        self._pipeline_layers = layers

    @property
    def layers(self):
        """its layers, in order"""
        return list(self._pipeline_layers)

    def call(self, inputs, training=False):
        for l in self._pipeline_layers:
            inputs = l(inputs, training=training) if l._keras_records_training else l(inputs)
        return inputs


@keras_config(Pipeline)
def _pipeline_config(l):
    return dict(layers=[keras_object("keras.layers", type(s).__name__, layer_config(s)) for s in l._pipeline_layers])
