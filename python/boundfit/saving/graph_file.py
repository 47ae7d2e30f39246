"""keras.saving: load_model / save_model / load_weights / save_weights.

Every model is saved in Keras 3's `.keras` format, its weights as
`.weights.h5` (keras_file.py and keras_graph.py do the work): a Sequential
as Keras's Sequential, a functional model (nested models, shared and frozen
layers included) as Keras's Functional, a subclassed model as the Functional
graph its call() was traced into (Keras 3 opens it without the user's class).
A path not ending in `.keras` gets boundfit's graph file (.npz): the graph
of layer calls as JSON with nested models inlined, weights, compile config
and optimizer state; it loads back as a functional Model computing the same
thing with the same weights. Every save is atomic (a temporary file beside
the target, fsync, rename)."""

import json
import os

import h5py
import numpy as np

from .. import layers as L
from ..activations import name_of
from ..graph import compile_graph
from ..layers.layer import keras_layer_classes
from ..layers.recurrent import _call
from . import bounded_read, config as keras_config, keras_file as keras_format, legacy_h5_model
from .atomic_write import atomic_write
from .keras_file import load_weights, save_weights
from .registry import model_classes

__all__ = ["load_model", "save_model", "load_weights", "save_weights"]


def _layer_config(layer):
    """A layer Keras's configs cover is stored as its Keras config (initializers,
    regularizers, constraints included); merge layers by their few attributes."""
    if type(layer) in keras_layer_classes():
        return {"class_name": type(layer).__name__, "config": keras_config.layer_config(layer), "keras": True}
    d = {k: v for k, v in vars(layer).items() if not k.startswith("_") and k != "input_shape_arg"}
    if "activation" in d:
        d["activation"] = name_of(d["activation"])
    for k in ("kernel_size", "strides", "pool_size", "target_shape"):
        if k in d:
            d[k] = list(d[k])
    if "trainable" not in d:
        d["trainable"] = bool(layer.trainable)
    return {"class_name": type(layer).__name__, "config": d}


def _graph_meta(model):
    g = compile_graph(model)
    n_in = len(model._inputs)
    index = {id(l): k for k, l in enumerate(g.owners)}
    return {"kind": "graph",
            "inputs": [{"name": n, "shape": list(t._ps), **({"dtype": "string"} if t.dtype == "string" else {})}
                       for n, t in zip(model._input_names, model._inputs)],
            # host-side layers on inputs (TextVectorization): config and state (vocabulary, idf weights)
            "stages": [{"input": k, "layer": _layer_config(l), "state": l._host_state()}
                       for k, l in model._host_stages.items()],
            "inputs_dict": model._inputs_dict, "outputs_dict": model._outputs_dict,
            "output_names": model._output_names,
            "layers": [_layer_config(l) for l in g.owners],
            "nodes": [{"output_of": d["inputs"][0], "output": d["output"]} if "output" in d else
                      {"layer": index[id(l)], "inputs": d["inputs"], "many": l._n_inputs == "many",
                       **({"training": d["train_mode"] == 1} if d.get("train_mode") else {}),
                       **({"call": l._saved_call()} if hasattr(l, "_saved_call") else {}),
                       **({"keep_mask": True} if len(d["inputs"]) > 1 and not d.get("mask_off", 0) and
                          hasattr(l, "_n_states") else {}),
                       **({"mask_off": True} if d.get("mask_off", 0) and not hasattr(l, "_n_states") else {})}
                      for l, d in zip(g.node_layers, g.specs)],
            "outputs": g.output_ids, "n_inputs": n_in}


def save_model(model, filepath, overwrite=True):
    Sequential = model_classes()[1]
    filepath = os.fspath(filepath)
    if legacy_h5_model.is_legacy_model_path(filepath):   # Keras's legacy HDF5 model file
        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(filepath)
        return legacy_h5_model.save_model(model, filepath)
    if filepath.endswith(".keras") or isinstance(model, Sequential) and model._plain():
        return keras_format.save_model(model, filepath, overwrite=overwrite)  # (Keras's error for another suffix)
    if not filepath.endswith(".npz"):
        filepath += ".npz"
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(filepath)
    model._require_built()
    meta = {"format": "boundfit-1", "name": model.name}
    meta.update(_graph_meta(model))
    arrays = {f"w{i}": w for i, w in enumerate(model._all_weights())}   # (Consts too)
    if model.optimizer is not None:
        meta["compile"] = {"optimizer": keras_config._optimizer_config(model.optimizer),
                           "losses": [keras_config._loss_config(l) for l in model._out_losses],
                           "loss_weights": list(model._loss_weights),
                           "multi_loss": bool(getattr(model, "_multi_loss", False)),
                           "metrics": [[k, bool(w), c] for k, w, c in getattr(model, "_metric_cfgs", [])]}
        it, slots = model._engine.optimizer_state()
        meta["compile"]["iterations"] = it
        meta["compile"]["raw_steps"] = model._engine.raw_steps()   # gradient accumulation: the steps since too
        arrays.update({f"s{i}": s for i, s in enumerate(slots)})
    data = json.dumps(meta).encode()
    atomic_write(filepath, lambda f: np.savez(f, meta=np.frombuffer(data, dtype=np.uint8), **arrays))


def _is_graph_file(filepath):
    try:
        with bounded_read.open_zip(filepath) as z:
            return "meta.npy" in z.namelist()
    except (OSError, ValueError):
        return False


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Keras's signature: a `.keras` file (Keras 3 or boundfit), or a boundfit graph file (.npz). A graph
    file's arrays are read only once the model its description builds says what shape each must have.
    An untrusted file raises ValueError (refused or malformed content, naming the file and the member)
    or OSError (unreadable), never more (bounded_read.py)."""
    filepath = os.fspath(filepath)
    if os.path.isfile(filepath) and h5py.is_hdf5(filepath):   # Keras's legacy HDF5 model file
        return legacy_h5_model.load_model(filepath, custom_objects=custom_objects, compile=compile)
    if not (os.path.isfile(filepath) and _is_graph_file(filepath)):
        return keras_format.load_model(filepath, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode)
    with bounded_read.open_zip(filepath) as z:
        meta = bounded_read.npy_member(z, "meta.npy", filepath, max_bytes=bounded_read.JSON_CAP, kinds="u")
        try:
            meta = json.loads(meta.tobytes().decode())
        except ValueError as e:
            raise ValueError(f"{filepath}: its description (meta) is not JSON ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != "boundfit-1" or meta.get("kind") != "graph":
            raise ValueError(f"{filepath} is not a boundfit graph file")
        with bounded_read.refusing(f"{filepath}: its description (meta)"):
            model = _load_graph(meta)
            c = meta.get("compile") if compile else None
            if c:
                _compile(model, c, custom_objects)
        shapes = [tuple(s) for _, _, params in model._info() for _, s, _ in params]
        names = z.namelist()
        if sum(1 for n in names if n[:1] == "w") != len(shapes):
            raise ValueError(f"{filepath}: the file has {sum(1 for n in names if n[:1] == 'w')} weights, its "
                             f"model {len(shapes)}")
        weights = [bounded_read.npy_member(z, f"w{i}.npy", filepath, shape=s) for i, s in enumerate(shapes)]
        nslots = sum(1 for k in names if k[:1] == "s") if c else 0
        if nslots > 6:
            raise ValueError(f"{filepath}: the file has {nslots} optimizer slots, an optimizer has at most 6")
        slots = [bounded_read.npy_member(z, f"s{i}.npy", filepath, shape=(model._engine.n_trainable,), kinds="f")
                 for i in range(nslots)]
    model._set_all_weights(weights)
    if c:
        it = c.get("iterations")
        if not isinstance(it, int) or it < 0:
            raise ValueError(f"{filepath}: its compile description has iterations={it!r}")
        if slots:
            model._engine.restore_optimizer_state(it, slots)
        else:
            model._engine.set_iterations(it)
        steps = c.get("raw_steps")
        if isinstance(steps, int) and steps >= 0 and getattr(model.optimizer, "gradient_accumulation_steps", None):
            model._engine.set_raw_steps(steps)
        model._loaded()   # a model with a training graph (a custom loss): the state goes on into it
    return model


def _compile(model, c, custom_objects):
    names = model._output_names
    per, wper = [[] for _ in names], [[] for _ in names]
    for k, w, cfg in c["metrics"]:
        (wper if w else per)[k].append(cfg)
    losses_ = [keras_config.loss_from_config(l, custom_objects) for l in c["losses"]]
    model.compile(optimizer=keras_config.optimizer_from_config(c["optimizer"]),
                  loss=losses_ if len(losses_) > 1 else losses_[0],
                  loss_weights=c["loss_weights"] if c.get("multi_loss") else None,
                  metrics=per if any(per) else None, weighted_metrics=wper if any(wper) else None)


def _load_graph(meta):
    Model = model_classes()[0]
    made = [keras_config.layer_from_config(e) if e.get("keras") else _make(getattr(L, e["class_name"]), dict(e["config"]))
            for e in meta["layers"]]
    ins = [L.Input(shape=tuple(i["shape"]), name=i["name"], dtype=i.get("dtype")) for i in meta["inputs"]]
    tensors, several = list(ins), {}
    for st in meta.get("stages", []):   # the engine's input k is the stage's output
        layer = keras_config.layer_from_config(st["layer"])
        layer._set_host_state(st["state"])
        tensors[st["input"]] = layer(ins[st["input"]])
    for n in meta["nodes"]:
        if "output_of" in n:  # another output of a recurrent layer's call
            tensors.append(several[n["output_of"]][n["output"]])
            continue
        args = [tensors[t] for t in n["inputs"]]
        if "call" in n:  # several positional inputs and call arguments (MultiHeadAttention)
            y = made[n["layer"]](*args, **n["call"])
        elif len(args) > 1 and not n["many"]:  # a recurrent layer's initial states (mask read if the file says so)
            y = _call(made[n["layer"]], args[0], args[1:], None, {}, keep_mask=n.get("keep_mask", False))
        else:
            y = made[n["layer"]](args if n["many"] else args[0])
            if n.get("mask_off"):   # a keras.ops.mean's pooling: over every step, not the mask's
                y._node.mask_off = True
        if "training" in n:   # a call given training= inside a traced call(): that mode always
            (y[0] if isinstance(y, list) else y)._node.train_mode = 1 if n["training"] else 2
        if isinstance(y, list):  # return_state / merge_mode=None
            several[len(tensors)] = y
        tensors.append(y[0] if isinstance(y, list) else y)
    outs = [tensors[t] for t in meta["outputs"]]
    names = meta["output_names"]
    inputs = dict(zip([i["name"] for i in meta["inputs"]], ins)) if meta["inputs_dict"] else ins
    outputs = dict(zip(names, outs)) if meta["outputs_dict"] else outs
    return Model(inputs, outputs if len(outs) > 1 or meta["outputs_dict"] else outs[0], name=meta["name"])


def _make(cls, cfg):
    layer = _make_layer(cls, cfg)
    layer.trainable = cfg.get("trainable", True)
    return layer


_OPS_ARGS = {L.Unary: ("op", "param", "left", "param2", "param3"), L.Binary: ("op",),
             L.MatMul: ("transpose_a", "transpose_b"), L.Weight: ("shape", "initializer", "regularizer", "constraint"),
             L.Reduce: ("op", "axis", "keepdims"), L.BatchReduce: ("op",)}


def _make_layer(cls, cfg):
    name = cfg.pop("name")
    if cls is L.Dense:
        return L.Dense(cfg["units"], activation=cfg["activation"], use_bias=cfg["use_bias"], name=name)
    if cls is L.Conv2D:
        return L.Conv2D(cfg["filters"], tuple(cfg["kernel_size"]), strides=tuple(cfg["strides"]), padding=cfg["padding"],
                        activation=cfg["activation"], use_bias=cfg["use_bias"], name=name)
    if cls in (L.MaxPooling2D, L.AveragePooling2D):
        return cls(tuple(cfg["pool_size"]), strides=tuple(cfg["strides"]), padding=cfg["padding"], name=name)
    if cls is L.Reshape:
        return L.Reshape(tuple(cfg["target_shape"]), name=name)
    if cls is L.Dropout:
        return L.Dropout(cfg["rate"], noise_shape=cfg.get("noise_shape"), name=name)
    if cls is L.BatchNormalization:
        return L.BatchNormalization(momentum=cfg["momentum"], epsilon=cfg["epsilon"], center=cfg["center"],
                                    scale=cfg["scale"], name=name)
    if cls is L.Activation:
        return L.Activation(cfg["activation"], name=name)
    if cls is L.Concatenate:
        return L.Concatenate(axis=cfg["axis"], name=name)
    if cls is L.Slice:
        return L.Slice(cfg["begin"], cfg["step"], cfg["length"], name=name)
    if cls in _OPS_ARGS:   # keras.ops math: their few attributes
        return cls(**{k: cfg[k] for k in _OPS_ARGS[cls] if k in cfg}, name=name)
    if cls is L.RandomDraw:
        return L.RandomDraw(cfg["shape"], cfg["dist"], cfg["a"], cfg["b"], seed=cfg["seed"], fixed=cfg["fixed"],
                            shared=cfg["shared"], name=name)
    if cls is L.Const:   # its values are its weight, loaded next
        return L.Const(np.zeros(cfg["shape"], np.float32), name=name, keras_weight=cfg.get("keras_weight", False))
    return cls(name=name)
