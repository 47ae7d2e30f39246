"""keras.saving: Keras 3 `.keras` / `.weights.h5` files (keras_file.py, with
keras_graph.py for model configs and the weights layout, config.py for layer
and compile configs) and boundfit's graph file (graph_file.py). What is built
from a file is looked up in registry.py."""

from .graph_file import load_model, load_weights, save_model, save_weights

__all__ = ["load_model", "save_model", "load_weights", "save_weights"]
