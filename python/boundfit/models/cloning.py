"""keras.models' clone_model, model_from_json and save_model: a model's
architecture through Keras 3's config (saving/keras_graph.py), as Keras
builds a clone (new layers, new weights by their initializers)."""

import json

from ..saving import config as keras_config, keras_graph
from ..saving.serialization import serialize_keras_object


def clone_model(model, input_tensors=None, clone_function=None, call_function=None, recursive=False, **kwargs):
    """A new model of the same architecture, its layers new and their weights freshly initialized (Keras 3's
    default clone), compiled as the model was (a fresh optimizer of the same config, as Keras's
    compile_from_config); clone_function / call_function / input_tensors are refused by name."""
    for arg, v in (("input_tensors", input_tensors), ("clone_function", clone_function),
                   ("call_function", call_function)):
        if v is not None:
            raise NotImplementedError(f"clone_model: {arg}= is not supported by boundfit; clone with the defaults "
                                      "and build the changed model from its layers")
    if kwargs:
        raise TypeError(f"clone_model: unexpected arguments {sorted(kwargs)}")
    entry = serialize_keras_object(model)
    compiled = entry.pop("compile_config", None)
    clone = keras_graph.model_from_config(entry)
    if compiled and getattr(model, "optimizer", None) is not None:
        keras_config.compile_from_config(clone, compiled)
    return clone


def model_from_json(json_string, custom_objects=None):
    """A model from Keras 3's JSON config (model.to_json())."""
    try:
        cfg = json.loads(json_string)
    except (TypeError, ValueError) as e:
        raise ValueError(f"model_from_json: json_string is not JSON: {e}") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"model_from_json: json_string must hold a model config (an object), got {type(cfg).__name__}")
    return keras_graph.model_from_config(cfg, custom_objects)


def save_model(model, filepath, overwrite=True, **kwargs):
    """model.save(filepath, overwrite) (Keras 3's function form)."""
    return model.save(filepath, overwrite=overwrite, **kwargs)
