"""model.save / load_model: one .npz-format file with the architecture (JSON),
weights, compile settings and optimizer state."""

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
    return {"class_name": type(layer).__name__, "config": d}


def save_model(model, filepath, overwrite=True):
    filepath = os.fspath(filepath)
    if not filepath.endswith((".npz", ".keras", ".bf")):
        filepath += ".npz"
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(filepath)
    model._require_built()
    meta = {"format": "boundfit-1", "name": model.name, "input_shape": list(model._input_shape),
            "layers": [_layer_config(l) for l in model._layers]}
    arrays = {f"w{i}": w for i, w in enumerate(model.get_weights())}
    if model.optimizer is not None:
        meta["compile"] = {"optimizer": type(model.optimizer).__name__, "optimizer_config": model.optimizer.get_config(),
                           "loss": type(model.loss).__name__, "loss_config": model.loss.get_config(),
                           "metrics": model._metrics_arg, "weighted_metrics": model._weighted_metrics_arg}
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
    built = []
    for entry in meta["layers"]:
        cls = getattr(L, entry["class_name"])
        built.append(_make(cls, dict(entry["config"])))
    model = Sequential([L.InputLayer(shape=meta["input_shape"])] + built, name=meta["name"])
    model.set_weights(weights)
    c = meta.get("compile")
    if compile and c:
        opt = getattr(optimizers, c["optimizer"])(**{k: v for k, v in c["optimizer_config"].items()})
        loss_cfg = c.get("loss_config", {"from_logits": c.get("from_logits", False)}
                         if c["loss"] != "MeanSquaredError" else {})
        model.compile(optimizer=opt, loss=getattr(losses, c["loss"])(**loss_cfg), metrics=c["metrics"],
                      weighted_metrics=c.get("weighted_metrics"))
        if slots:
            model._engine.restore_optimizer_state(c["iterations"], slots)
    return model


def _make(cls, cfg):
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
    return cls(name=name)
