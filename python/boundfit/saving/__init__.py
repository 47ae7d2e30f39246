"""keras.saving: Keras 3 `.keras` / `.weights.h5` files (keras_file.py, with
keras_graph.py for model configs and the weights layout, config.py for layer
and compile configs) and boundfit's graph file (graph_file.py). What is built
from a file is looked up in registry.py, the user's registered classes in
../object_registration.py; serialization.py is Keras's dict form of objects."""

from ..object_registration import (CustomObjectScope, custom_object_scope, get_custom_objects,  # noqa: F401
                                   get_registered_name, get_registered_object, register_keras_serializable)
from .graph_file import load_model, load_weights, save_model, save_weights
from .serialization import deserialize_keras_object, serialize_keras_object
from ..refusal import refused

KerasFileEditor = refused("keras.saving.KerasFileEditor",
                          "edit a model by loading it (load_model), changing its layers' weights (set_weights) and "
                          "saving it again; a .keras file is a zip of config.json and model.weights.h5 (h5py reads it)")

__all__ = ["load_model", "save_model", "load_weights", "save_weights", "CustomObjectScope", "custom_object_scope",
           "get_custom_objects", "get_registered_name", "get_registered_object", "register_keras_serializable",
           "serialize_keras_object", "deserialize_keras_object"]
