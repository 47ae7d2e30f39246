"""Models: Model (functional, subclassed) and Sequential, over the engine;
load_model for Keras 3 `.keras` files and boundfit's graph files. Importing
this package registers both classes with saving/registry.py, which builds
them from files."""

from ..saving import registry as _registry
from ..saving.graph_file import load_model
from .cloning import clone_model, model_from_json, save_model
from .model import Model
from .sequential import Sequential

_registry.register_models(Model, Sequential)

__all__ = ["Model", "Sequential", "load_model", "clone_model", "model_from_json", "save_model"]
