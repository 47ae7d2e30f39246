"""model.save / load_model: one .npz-format file with the architecture (JSON),
weights, compile settings and optimizer state. A Sequential of layers is
stored as its layer list; any other model (functional, nested, subclassed)
as its graph of layer calls with nested models inlined (kind "graph"), which
loads back as a functional Model computing the same thing with the same
weights."""

import json
import os

import numpy as np

from . import layers as L, losses, optimizers
from .activations import name_of


def _layer_config(layer):
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
    from .functional import compile_graph
    g = compile_graph(model)
    n_in = len(model._inputs)
    index = {id(l): k for k, l in enumerate(g.owners)}
    return {"kind": "graph",
            "inputs": [{"name": n, "shape": list(t._ps)} for n, t in zip(model._input_names, model._inputs)],
            "inputs_dict": model._inputs_dict, "outputs_dict": model._outputs_dict,
            "output_names": model._output_names,
            "layers": [_layer_config(l) for l in g.owners],
            "nodes": [{"layer": index[id(l)], "inputs": d["inputs"], "many": l._n_inputs == "many"}
                      for l, d in zip(g.node_layers, g.specs)],
            "outputs": g.output_ids, "n_inputs": n_in}


def save_model(model, filepath, overwrite=True):
    from .models import Model, Sequential
    filepath = os.fspath(filepath)
    if not filepath.endswith((".npz", ".keras", ".bf")):
        filepath += ".npz"
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(filepath)
    model._require_built()
    meta = {"format": "boundfit-1", "name": model.name}
    if isinstance(model, Sequential) and not any(isinstance(l, Model) for l in model._layers):
        meta.update({"input_shape": list(model._input_shape), "layers": [_layer_config(l) for l in model._layers]})
    else:
        meta.update(_graph_meta(model))
    arrays = {f"w{i}": w for i, w in enumerate(model.get_weights())}
    if model.optimizer is not None:
        meta["compile"] = {"optimizer": type(model.optimizer).__name__, "optimizer_config": model.optimizer.get_config(),
                           "loss": type(model.loss).__name__, "from_logits": model.loss.from_logits,
                           "metrics": model.compiled_metrics,
                           "losses": [[type(l).__name__, l.from_logits] for l in model._out_losses],
                           "loss_weights": list(model._loss_weights),
                           "out_metrics": list(model._out_metrics),
                           "multi_loss": bool(getattr(model, "_multi_loss", False))}
        it, slots = model._engine.optimizer_state()
        meta["compile"]["iterations"] = it
        arrays.update({f"s{i}": s for i, s in enumerate(slots)})
    with open(filepath, "wb") as f:
        np.savez(f, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)


def load_model(filepath, compile=True):
    with np.load(os.fspath(filepath)) as f:
        meta = json.loads(bytes(f["meta"]).decode())
        weights = [f[f"w{i}"] for i in range(sum(1 for k in f.files if k.startswith("w")))]
        slots = [f[f"s{i}"] for i in range(sum(1 for k in f.files if k.startswith("s")))]
    if meta.get("format") != "boundfit-1":
        raise ValueError(f"{filepath} is not a boundfit model file")
    from .models import Sequential
    if meta.get("kind") == "graph":
        model = _load_graph(meta)
    else:
        built = []
        for entry in meta["layers"]:
            cls = getattr(L, entry["class_name"])
            built.append(_make(cls, dict(entry["config"])))
        model = Sequential([L.InputLayer(shape=meta["input_shape"])] + built, name=meta["name"])
    model.set_weights(weights)
    c = meta.get("compile")
    if compile and c:
        opt = getattr(optimizers, c["optimizer"])(**{k: v for k, v in c["optimizer_config"].items()})
        if "losses" in c and c.get("multi_loss"):
            loss = [_loss(name, fl) for name, fl in c["losses"]]
            model.compile(optimizer=opt, loss=loss, loss_weights=c["loss_weights"],
                          metrics=[["accuracy"] if m else [] for m in c["out_metrics"]])
        else:
            model.compile(optimizer=opt, loss=_loss(c["loss"], c["from_logits"]), metrics=c["metrics"])
        if slots:
            model._engine.restore_optimizer_state(c["iterations"], slots)
    return model


def _loss(name, from_logits):
    return getattr(losses, name)(**({} if name == "MeanSquaredError" else {"from_logits": from_logits}))


def _load_graph(meta):
    from .models import Model
    made = [_make(getattr(L, e["class_name"]), dict(e["config"])) for e in meta["layers"]]
    ins = [L.Input(shape=tuple(i["shape"]), name=i["name"]) for i in meta["inputs"]]
    tensors = list(ins)
    for n in meta["nodes"]:
        args = [tensors[t] for t in n["inputs"]]
        tensors.append(made[n["layer"]](args if n["many"] else args[0]))
    outs = [tensors[t] for t in meta["outputs"]]
    names = meta["output_names"]
    inputs = dict(zip([i["name"] for i in meta["inputs"]], ins)) if meta["inputs_dict"] else ins
    outputs = dict(zip(names, outs)) if meta["outputs_dict"] else outs
    return Model(inputs, outputs if len(outs) > 1 or meta["outputs_dict"] else outs[0], name=meta["name"])


def _make(cls, cfg):
    layer = _make_layer(cls, cfg)
    layer.trainable = cfg.get("trainable", True)
    return layer


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
        return L.Dropout(cfg["rate"], name=name)
    if cls is L.BatchNormalization:
        return L.BatchNormalization(momentum=cfg["momentum"], epsilon=cfg["epsilon"], center=cfg["center"],
                                    scale=cfg["scale"], name=name)
    if cls is L.Activation:
        return L.Activation(cfg["activation"], name=name)
    if cls is L.Concatenate:
        return L.Concatenate(axis=cfg["axis"], name=name)
    return cls(name=name)
