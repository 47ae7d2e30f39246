"""Wrapper (Keras 3's keras.layers.Wrapper): the base of a layer that holds
another layer (`self.layer`) and calls it in its own call(). A subclass
defines call() (a custom layer: traced into the wrapped layer's nodes); the
config holds the wrapped layer serialized (keras.layers.serialize), and
from_config rebuilds it."""

from .layer import Layer
from .serialize import deserialize, serialize


class Wrapper(Layer):
    """Keras 3's `Wrapper(layer, **kwargs)`: the base of layers that wrap another layer; subclass it with call()."""

    _config_sublayer = True   # saving/config.py: the config's "layer" entry is a layer

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"{type(self).__name__}: layer must be a Keras layer, got layer={layer!r} (of type "
                             f"{type(layer).__name__})")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        """Keras's: the wrapped layer is built by its call inside this layer's call()."""
        self.built = True

    def get_config(self):
        """The base config and the wrapped layer serialized, under "layer"."""
        config = super().get_config()
        config["layer"] = serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = config.pop("layer")
        return cls(deserialize(layer, custom_objects) if isinstance(layer, dict) else layer, **config)
