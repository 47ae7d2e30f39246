"""keras.layers.serialize / deserialize: a layer as Keras 3's dict
({"module", "class_name", "config", "registered_name"}) and back. The saving
package (above layers/) does the work and registers its functions here when
it is imported (saving/serialization.py), as models/ registers its classes
with saving/registry.py."""

from .layer import Layer

_FUNCTIONS = {}


def register(serialize_fn, deserialize_fn):
    _FUNCTIONS["serialize"], _FUNCTIONS["deserialize"] = serialize_fn, deserialize_fn


def serialize(layer):
    """Keras 3's serialized form of a layer (keras.layers.serialize)."""
    if not isinstance(layer, Layer):
        raise TypeError(f"keras.layers.serialize: layer must be a Layer, got {type(layer).__name__}")
    return _FUNCTIONS["serialize"](layer)


def deserialize(config, custom_objects=None):
    """The layer of a Keras 3 layer dict (keras.layers.deserialize), classes in custom_objects or registered with
    register_keras_serializable included."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"keras.layers.deserialize: config must be a dict with 'class_name' and 'config', got "
                         f"{config!r}")
    return _FUNCTIONS["deserialize"](config, custom_objects)
