"""Keras's legacy HDF5 model files (`model.save("x.h5")`, `ModelCheckpoint("best.h5")`), both ways, as Keras 3
writes and reads them (keras/src/legacy/saving/legacy_h5_format.py): the root's attributes `model_config` (the
model's Keras 3 config, {"class_name", "config"}) and `training_config` (compile()'s arguments, the optimizer's
config as `optimizer_config`), and `model_weights`, one group per layer of `model.layers` (attribute
`layer_names`) with its variables in Keras's order (attribute `weight_names`). The optimizer's state is not
written (Keras then starts a fresh optimizer, as for a file without `optimizer_weights`); a nested model, whose
variables Keras keeps in one group in another order, is refused by name (save it as `.keras`)."""

import json

import h5py
import numpy as np

from . import bounded_read, config as keras_config, config_check, keras_graph, legacy_h5
from .atomic_write import atomic_write
from .keras_file import _layer_weights, _load_legacy, _weighted

SUFFIXES = (".h5", ".hdf5")


def is_legacy_model_path(filepath):
    """A path Keras saves a whole model to in the legacy format (not a `.weights.h5` file)."""
    return str(filepath).endswith(SUFFIXES) and not str(filepath).endswith(".weights.h5")


def _layers_with_weights(model):
    """[(layer, [arrays in Keras's shapes])] of Keras's `model.layers`, every layer (weightless ones with [])"""
    out = []
    for layer in keras_graph.keras_layers(model, True):
        if keras_graph.is_model(layer):
            raise ValueError(f"{model.name}: the nested model {layer.name!r} cannot go into a legacy HDF5 (.h5) "
                             "file (Keras keeps its variables in one group, trainable ones first); save the model "
                             "as .keras")
        ws = _layer_weights(model, layer) if _weighted(model, layer) else []
        if ws and hasattr(layer, "_to_keras_vars"):
            ws = layer._to_keras_vars(ws)
        out.append((layer, [np.asarray(w) for w in ws]))
    return out


def _names_attr(group, key, names):
    group.attrs[key] = np.array([n.encode("utf8") for n in names], dtype=object) if names else np.zeros((0,))


def save_model(model, filepath):
    """model written to filepath as Keras 3's legacy HDF5 model file, atomically."""
    model._require_built()
    entry = keras_graph.model_config(model)
    config = {"class_name": "Sequential" if entry["class_name"] == "Sequential" else "Functional",
              "config": entry["config"]}
    training = None
    if model.optimizer is not None:
        training = dict(keras_config.compile_config(model))
        opt = training.pop("optimizer")
        training["optimizer_config"] = {"class_name": opt["class_name"], "config": opt["config"]}
    prefix = f"{model.name}/" if config["class_name"] == "Sequential" else ""
    layers = _layers_with_weights(model)

    def write(f):
        with h5py.File(f, "w") as h5:
            h5.attrs["keras_version"] = "3"
            h5.attrs["backend"] = "boundfit"
            h5.attrs["model_config"] = json.dumps(config).encode("utf8")
            if training is not None:
                h5.attrs["training_config"] = json.dumps(training).encode("utf8")
            g = h5.create_group("model_weights")
            _names_attr(g, "layer_names", [layer.name for layer, _ in layers])
            g.attrs["backend"], g.attrs["keras_version"] = b"boundfit", b"3"
            for layer, ws in sorted(layers, key=lambda lw: lw[0].name):
                lg = g.create_group(layer.name)
                names = [f"{prefix}{layer.name}/{k}" for k in range(len(ws))]
                _names_attr(lg, "weight_names", names)
                for n, w in zip(names, ws):
                    lg.create_dataset(n, data=w if w.dtype.kind == "i" else w.astype(np.float32), track_times=False)
            _names_attr(g.create_group("top_level_model_weights"), "weight_names", [])
    atomic_write(filepath, write)


def _json_attr(h5, key, where):
    if key not in h5.attrs:
        return None
    raw = h5.attrs[key]
    raw = raw.decode("utf8") if isinstance(raw, bytes) else str(raw)
    if len(raw) > bounded_read.JSON_CAP:
        raise ValueError(f"{where}: attribute {key!r} is larger than {bounded_read.JSON_CAP} bytes")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{where}: attribute {key!r} is not JSON ({e})") from None


def load_model(filepath, custom_objects=None, compile=True):
    """A model from a legacy HDF5 model file (Keras 3's or boundfit's): its config, its weights layer by layer
    in order (legacy_h5.read), compiled from its training_config (a fresh optimizer)."""
    with h5py.File(filepath, "r") as h5, bounded_read.refusing(filepath):
        cfg = _json_attr(h5, "model_config", filepath)
        if not isinstance(cfg, dict) or "model_weights" not in h5:
            raise ValueError(f"{filepath}: not a Keras HDF5 model file (no model_config or model_weights); a "
                             "weights file loads with model.load_weights")
        cfg = config_check.load_config(json.dumps(cfg).encode(), filepath)
        training = _json_attr(h5, "training_config", filepath) if compile else None
    model = keras_graph.model_from_config(cfg, custom_objects)
    if isinstance(training, dict) and training.get("optimizer_config"):
        cc = dict(training)
        cc["optimizer"] = cc.pop("optimizer_config")
        keras_config.compile_from_config(model, cc, custom_objects)
    _load_legacy(model, filepath, group="model_weights")
    model._loaded()
    return model
