"""Keras 3's registry of custom objects: register_keras_serializable,
get_custom_objects, custom_object_scope, get_registered_name / _object.
The loaders (config.py, keras_graph.py, load_model) look a class up by its
entry's registered_name ("package>Name") and class_name in `lookup(custom_objects)`:
the active scopes first, then the global registry, then the custom_objects
given, as Keras's get_registered_object."""

import inspect
import threading

GLOBAL_CUSTOM_OBJECTS = {}
GLOBAL_CUSTOM_NAMES = {}
_scope = threading.local()   # the innermost custom_object_scope's dict (Keras's global_state is per thread)


class CustomObjectScope:
    """`with custom_object_scope({"name": obj}):` makes the objects visible to deserialization (load_model,
    from_config, deserialize_keras_object) inside the block, as Keras 3's."""

    def __init__(self, custom_objects):
        if custom_objects is not None and not isinstance(custom_objects, dict):
            raise TypeError(f"custom_objects must be a dict of {{name: object}}, got {type(custom_objects).__name__}")
        self.custom_objects = dict(custom_objects or {})
        self.backup = None

    def __enter__(self):
        self.backup = dict(getattr(_scope, "objects", {}))
        _scope.objects = dict(self.custom_objects)   # Keras replaces the scope's dict (no merge with the outer)
        return self

    def __exit__(self, *exc):
        _scope.objects = self.backup


custom_object_scope = CustomObjectScope


def get_custom_objects():
    """The live global dict of registered objects (scopes are not in it), as Keras's."""
    return GLOBAL_CUSTOM_OBJECTS


def register_keras_serializable(package="Custom", name=None):
    """A decorator registering a class (with get_config) or function under "package>name" (name: its __name__)."""
    def decorator(arg):
        registered = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        GLOBAL_CUSTOM_OBJECTS[registered] = arg
        GLOBAL_CUSTOM_NAMES[arg] = registered
        return arg
    return decorator


def get_registered_name(obj):
    """"package>name" of a registered object, else its __name__."""
    return GLOBAL_CUSTOM_NAMES.get(obj, obj.__name__)


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object registered under name: the active scope, the global registry, custom_objects, module_objects."""
    for d in (getattr(_scope, "objects", {}), GLOBAL_CUSTOM_OBJECTS, custom_objects or {}, module_objects or {}):
        if name in d:
            return d[name]
    return None


def lookup(custom_objects=None):
    """One dict for a loader: custom_objects, overridden by the global registry, overridden by the active scope"""
    return {**(custom_objects or {}), **GLOBAL_CUSTOM_OBJECTS, **getattr(_scope, "objects", {})}
