"""keras.saving.serialize_keras_object / deserialize_keras_object: Keras 3's
dict form ({"module", "class_name", "config", "registered_name"}) of layers,
models, initializers, regularizers, constraints, losses, metrics, optimizers,
activation functions, NumPy arrays and registered custom objects, nested in
lists and dicts; a form Keras writes deserializes here and the other way
round. Classes are looked up as the loaders do (object_registration.lookup)."""

import inspect
import types

import numpy as np

from .. import activations, constraints, initializers, losses, metrics, optimizers, regularizers
from ..layers.serialize import register as register_layer_serialization
from ..layers.layer import Layer
from .. import object_registration
from . import config as keras_config, keras_graph
from .registry import model_classes

_BY_MODULE = (("keras.initializers", initializers.deserialize), ("keras.regularizers", regularizers.get),
              ("keras.constraints", constraints.get), ("keras.losses", keras_config.loss_from_config),
              ("keras.metrics", metrics.deserialize), ("keras.optimizers", keras_config.optimizer_from_config),
              ("keras.activations", activations.deserialize))


def serialize_keras_object(obj):
    """Keras 3's serialized form of obj (JSON-compatible)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.ndarray):
        return {"class_name": "__numpy__", "config": {"value": obj.tolist(), "dtype": str(obj.dtype)}}
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(x) for x in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    registered = object_registration.GLOBAL_CUSTOM_NAMES.get(obj if inspect.isfunction(obj) else type(obj))
    if isinstance(obj, types.FunctionType):
        for module, kind in (("keras.activations", activations), ("keras.losses", losses)):
            if registered is None and getattr(kind, obj.__name__, None) is obj:
                return {"module": module, "class_name": "function", "config": obj.__name__,
                        "registered_name": obj.__name__}
        name = registered or obj.__name__
        return {"module": obj.__module__, "class_name": "function", "config": name, "registered_name": name}
    if isinstance(obj, tuple(model_classes())):
        return keras_graph.model_entry(obj)
    if isinstance(obj, Layer) and registered is None and (not obj._custom() or obj._keras_composite()):
        return {"module": "keras.layers", "class_name": type(obj).__name__, "config": obj.get_config(),
                "registered_name": None}
    for module, kind in (("keras.initializers", initializers), ("keras.regularizers", regularizers),
                         ("keras.constraints", constraints), ("keras.losses", losses), ("keras.metrics", metrics),
                         ("keras.activations", activations)):
        if registered is None and type(obj).__module__.startswith(kind.__name__) and hasattr(kind, "serialize"):
            return kind.serialize(obj)
    if registered is None and type(obj).__module__.startswith(optimizers.__name__):
        return keras_config._optimizer_config(obj)
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object: {type(obj).__name__} has no get_config(); register it with "
                        "register_keras_serializable and give it get_config / from_config")
    return {"module": type(obj).__module__, "class_name": type(obj).__name__, "config": obj.get_config(),
            "registered_name": registered or type(obj).__name__}


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """The object of Keras 3's serialized form (serialize_keras_object's, or Keras's own)."""
    if config is None or isinstance(config, (bool, int, float)):
        return config
    found = object_registration.lookup(custom_objects)
    if isinstance(config, str):
        obj = found.get(config)
        return obj if obj is not None else config
    if isinstance(config, (list, tuple)):
        return [deserialize_keras_object(x, custom_objects) for x in config]
    if not isinstance(config, dict):
        raise TypeError(f"deserialize_keras_object: config must be a dict, list, str or number, got "
                        f"{type(config).__name__}")
    if "class_name" not in config:
        return {k: deserialize_keras_object(v, custom_objects) for k, v in config.items()}
    cls_name, module = config["class_name"], config.get("module") or ""
    inner, registered = config.get("config"), config.get("registered_name")
    if cls_name == "__numpy__":
        return np.array(inner["value"], dtype=inner.get("dtype"))
    if cls_name == "function":
        fn = found.get(registered or "") or found.get(inner)
        kinds = (losses, activations) if "losses" in module else (activations, losses)   # keras(.src).activations...
        for kind in kinds:
            v = getattr(kind, str(inner), None)
            fn = fn if fn is not None or not callable(v) else v
        if fn is None:
            raise ValueError(f"deserialize_keras_object: function {inner!r} is neither registered nor a Keras "
                             "activation or loss; register it or pass custom_objects")
        return fn
    custom = found.get(registered or "") or found.get(cls_name)
    if custom is not None:
        return custom.from_config(inner)
    if cls_name in ("Sequential", "Functional", "Model"):
        return keras_graph.model_from_config(config, found)
    if module.startswith(("keras.layers", "keras.src.layers")):
        return keras_config.layer_from_config(config, found)
    for prefix, make in _BY_MODULE:
        if module.startswith((prefix, prefix.replace("keras.", "keras.src.", 1))):
            return make(config)
    raise ValueError(f"deserialize_keras_object: {cls_name!r} (module {module!r}) is not a Keras object boundfit "
                     "knows; register it with register_keras_serializable or pass custom_objects")


register_layer_serialization(serialize_keras_object, deserialize_keras_object)   # keras.layers.serialize / deserialize
