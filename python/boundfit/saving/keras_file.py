"""Keras 3 files: `.keras` (a zip of config.json, metadata.json and
model.weights.h5) and `.weights.h5`, both ways.

Weights layout (as Keras's saving_lib writes it; keras_graph.py walks the
model): layers/<snake_case class name, numbered per class>/vars/<i> for each
layer's variables in Keras order (a nested model's under its own path, a
subclassed model's by attribute name), vars/ for the model itself,
optimizer/vars/<i> with iterations, the learning rate (unless a schedule) and
the slots in the order of Keras's trainable_variables. boundfit's own extras
(its optimizer's raw state, so any optimizer resumes exactly) live under
boundfit/, which Keras never reads. Every file is written atomically: a
temporary file in the same folder, fsync, rename."""

import datetime
import io
import json
import os
import warnings
import zipfile

import h5py
import numpy as np

from .. import layers as L
from .._version import __version__
from . import config as keras_config, config_check, keras_graph
from .atomic_write import atomic_write


# ---- weights: boundfit model <-> h5 ----

def _trainable_slices(model, as_functional=False):
    """(layer index, offset, shape) of each trainable variable in the engine's
    slot layout, in the order of Keras's model.trainable_variables."""
    per, off = {}, 0
    for i, (_, _, params) in enumerate(model._info()):
        for _, shape, trainable in params:
            if trainable:
                per.setdefault(i, []).append((i, off, tuple(shape)))
                off += int(np.prod(shape)) if len(shape) else 1
    out = []
    for layer in keras_graph.trainable_order(model, as_functional):
        got = per.pop(model._layer_node.get(id(layer)), [])
        ks = getattr(layer, "_keras_var_shape", None)   # a weight Keras holds in another shape (Weight's table)
        out.extend(got if ks is None else [(i, off, ks) for i, off, _ in got])
    for i in sorted(per):   # a layer Keras's walk does not reach: after the others, never lost
        out.extend(per[i])
    return out


# Keras's optimizer variables after iterations and learning_rate: which boundfit
# slot each group of per-variable slots comes from, per optimizer kind, in order.
def _keras_slot_groups(opt, nslots):
    kind = type(opt).__name__
    if kind == "Adam" and nslots == 2:
        return "interleaved", [0, 1]           # momentum, velocity per variable
    if kind == "SGD":
        return "grouped", list(range(nslots))  # momentums (when momentum > 0)
    if kind == "RMSprop":
        return "grouped", list(range(nslots))  # velocities, then momentums
    return None, None


def _keras_nslots(opt):
    """Per-variable slots Keras builds for opt (the engine makes them on the first step)."""
    kind = type(opt).__name__
    momentum = getattr(opt, "momentum", 0.0)
    return {"Adam": 2, "SGD": 1 if momentum else 0, "RMSprop": 2 if momentum > 0 else 1}.get(kind, 0)


def _write_optimizer(g, model, as_functional):
    opt = model.optimizer
    it, slots = model._engine.optimizer_state()
    sl = _trainable_slices(model, as_functional)
    layout, order = _keras_slot_groups(opt, len(slots) or _keras_nslots(opt))
    raw = list(slots)
    v = g.create_group("optimizer/vars")
    v.attrs["name"] = type(opt).__name__.lower()
    if layout is not None and not slots:   # not trained yet: Keras's built state is zeros
        slots = [np.zeros(sum(int(np.prod(sh)) for _, _, sh in sl), np.float32) for _ in range(_keras_nslots(opt))]
    if layout is not None:
        vals = [np.array(it, dtype=np.int64)]
        if getattr(opt, "_schedule", None) is None:
            vals.append(np.array(opt.learning_rate, dtype=np.float32))
        pieces = [[s[off:off + int(np.prod(shape))].reshape(shape) for (_, off, shape) in sl] for s in slots]
        if slots and layout == "interleaved":
            for j in range(len(sl)):
                vals.extend(pieces[k][j] for k in order)
        elif slots:
            for k in order:
                vals.extend(pieces[k])
        for i, a in enumerate(vals):
            v.create_dataset(str(i), data=a)
    b = g.create_group("boundfit")
    b.attrs["optimizer"] = type(opt).__name__
    b.attrs["iterations"] = int(it)
    b.attrs["learning_rate"] = float(opt.learning_rate)
    for k, s in enumerate(raw):
        b.create_dataset(f"slot{k}", data=s)


def _vars_path(path):
    return f"{path}/vars" if path else "vars"


def _var_groups(layer, n):
    """[(group path under the layer's, variables)] in get_weights() order; Keras keeps a
    recurrent layer's in its cell, a Bidirectional's in its two sublayers'."""
    fn = getattr(layer, "_keras_var_groups", None)
    return fn(n) if fn is not None else [("vars", n)]


def _slots(model, obj):
    """Indices in the model's weights list of a layer's variables, in Keras's
    order (a Keras composite layer: its sublayers'); [] for none."""
    if not isinstance(obj, L.Layer):
        return []
    out = []
    for l in keras_graph.engine_layers(obj):
        if id(l) in model._layer_node:
            out += list(model._param_ranges[model._layer_node[id(l)]])
    return out


def _weighted(model, obj):
    """A layer whose variables this model's engine holds."""
    return bool(_slots(model, obj))


def _layer_weights(model, obj):
    w = model._engine.get_weights()
    return [w[j] for j in _slots(model, obj)]


def write_weights(h5, model, optimizer=True, as_functional=False):
    """Model variables (and the optimizer's, when compiled) into an open h5py
    File, laid out as Keras's saving_lib walks the model (keras_graph.py);
    as_functional: a subclassed model as the Functional graph it was traced into."""
    model._require_built()
    for path, obj in keras_graph.weight_groups(model, as_functional):
        v = h5.require_group(_vars_path(path))
        v.attrs["name"] = obj.name
        for sub, arrays in (obj._keras_h5_vars().items() if hasattr(obj, "_keras_h5_vars") else ()):
            g = h5.require_group(f"{path}/{sub}" if path else sub)   # host-side layers' state (idf_weights)
            for name, a in arrays.items():
                g.create_dataset(name, data=a)
        ws = _layer_weights(model, obj) if _weighted(model, obj) else []
        if not ws:
            continue
        if hasattr(obj, "_to_keras_vars"):  # variables Keras keeps otherwise (Normalization's int count)
            ws = obj._to_keras_vars(ws)
        k = 0
        for sub, n in _var_groups(obj, len(ws)):  # recurrent layers: their cell's (and sublayers') groups
            vs = v if sub == "vars" else h5.require_group(f"{path}/{sub}" if path else sub)
            for i in range(n):
                w = np.asarray(ws[k])
                vs.create_dataset(str(i), data=w if w.dtype.kind == "i" else w.astype(np.float32))
                k += 1
            if sub.count("/") == 2:  # a sublayer's own (empty) variables, as Keras writes them
                h5.require_group(f"{path}/{sub.split('/')[0]}/vars" if path else f"{sub.split('/')[0]}/vars")
    if optimizer and model.optimizer is not None:
        _write_optimizer(h5, model, as_functional)


def _file_vars(h5):
    """Paths of the groups holding layer variables in a weights file (not the optimizer's, not boundfit's)."""
    found = []

    def visit(name, obj):
        if name.split("/")[-1] == "vars" and len(obj) and not name.startswith(("optimizer/", "boundfit/")):
            found.append(name)
    h5.visititems(visit)
    return found


def read_weights(h5, model, optimizer=True, where="weights file", skip_mismatch=False, as_functional=False):
    """Load an open h5py File's variables into model; all-or-nothing: every
    layer is checked before anything is set (skip_mismatch: a layer whose
    weights do not match keeps its own, with a warning, as Keras does)."""
    model._require_built()
    legacy = "layers" not in h5 and "_layer_checkpoint_dependencies" in h5
    new = model._engine.get_weights()
    expected = set()
    host = []   # host-side layers' state (TextVectorization's idf_weights), set once all else is checked
    for path, layer in keras_graph.weight_groups(model, as_functional):
        if hasattr(layer, "_load_keras_h5_vars"):
            groups = {}
            for sub in layer._keras_h5_vars():
                key = f"{path}/{sub}" if path else sub
                expected.add(key)
                if key in h5:
                    groups[sub] = {n: np.asarray(h5[key][n]) for n in h5[key]}
            host.append((layer, groups))
        if not _weighted(model, layer):
            continue
        key = _vars_path(path)
        expected.add(key)
        fkey = "_layer_checkpoint_dependencies" + key[len("layers"):] if legacy and key.startswith("layers/") else key
        want = [w.shape for w in _layer_weights(model, layer)]
        got = []
        for sub, _ in _var_groups(layer, len(want)):  # recurrent layers: their cell's (and sublayers') groups
            skey = fkey if sub == "vars" else fkey[:-len("vars")] + sub
            if sub != "vars":
                expected.add(key[:-len("vars")] + sub)
            v = h5[skey] if skey in h5 else None
            got += [np.asarray(v[str(k)]) for k in range(len(v))] if v is not None else []
        if hasattr(layer, "_from_keras_vars"):
            got = layer._from_keras_vars(got, want)
        if len(got) != len(want) or any(a.shape != s for a, s in zip(got, want)):
            if skip_mismatch:
                warnings.warn(f"{where}: skipping layer {layer.name!r}: it expects weights "
                              f"{[tuple(s) for s in want]}, the file has {[a.shape for a in got]}", stacklevel=3)
                continue
            raise ValueError(f"{where}: layer {layer.name!r} ({type(layer).__name__}) expects weights "
                             f"{[tuple(s) for s in want]}, the file has {[a.shape for a in got]} at {path}")
        for j, a in zip(_slots(model, layer), got):
            new[j] = a
    if legacy:
        expected = {"_layer_checkpoint_dependencies" + k[len("layers"):] for k in expected}
    extra = sorted(p[:-len("/vars")] for p in set(_file_vars(h5)) - expected)
    if extra and not skip_mismatch:
        raise ValueError(f"{where}: it has weights for layers this model lacks: {extra}")
    model.set_weights(new)
    for layer, groups in host:
        layer._load_keras_h5_vars(groups)
    if optimizer and model.optimizer is not None and model._engine is not None:
        _read_optimizer(h5, model, as_functional)


def _read_optimizer(h5, model, as_functional):
    if "boundfit" in h5:
        b = h5["boundfit"]
        slots = [np.asarray(b[f"slot{k}"]) for k in range(sum(1 for n in b if n.startswith("slot")))]
        name = type(model.optimizer).__name__
        if b.attrs.get("optimizer") != name:
            warnings.warn(f"Skipping variable loading for optimizer '{name}': the file holds the state of "
                          f"{b.attrs.get('optimizer')!r}", stacklevel=4)
            return
        try:
            if slots:
                model._engine.restore_optimizer_state(int(b.attrs["iterations"]), slots)
            else:
                model._engine.set_iterations(int(b.attrs["iterations"]))
        except ValueError as e:   # another configuration (say, momentum): weights load, the state does not
            warnings.warn(f"Skipping variable loading for optimizer '{name}': {e}", stacklevel=4)
            return
        if getattr(model.optimizer, "_schedule", None) is None:
            model.optimizer.learning_rate = float(b.attrs["learning_rate"])
        return
    if "optimizer/vars" not in h5:
        return
    v = h5["optimizer/vars"]
    vals = [np.asarray(v[str(i)]) for i in range(len(v))]
    opt = model.optimizer
    sl = _trainable_slices(model, as_functional)
    n = sum(int(np.prod(s)) if len(s) else 1 for _, _, s in sl)
    has_lr = getattr(opt, "_schedule", None) is None
    head = 2 if has_lr else 1
    per = len(vals) - head
    if not vals or per < 0 or (sl and per % len(sl)):
        return
    nslots = per // len(sl) if sl else 0
    layout, order = _keras_slot_groups(opt, nslots)
    if layout is None:
        return
    flat = [np.empty(n, np.float32) for _ in range(nslots)]
    body = vals[head:]
    for j, (_, off, shape) in enumerate(sl):
        size = int(np.prod(shape)) if len(shape) else 1
        for k in range(nslots):
            a = body[j * nslots + k] if layout == "interleaved" else body[k * len(sl) + j]
            if a.shape != shape:
                return
            flat[order[k]][off:off + size] = a.reshape(-1)
    try:
        model._engine.restore_optimizer_state(int(vals[0]), flat)
    except ValueError:
        return  # the compiled optimizer keeps other state (as Keras: skipped)
    if has_lr:
        opt.learning_rate = float(vals[1])


# ---- public: save / load ----

def save_weights(model, filepath, overwrite=True, extra_attrs=None):
    """extra_attrs: attributes stored on the file's boundfit/ group (Keras ignores it)."""
    filepath = os.fspath(filepath)
    if not filepath.endswith(".weights.h5"):
        raise ValueError("The filename must end in `.weights.h5`. Received: filepath=" + filepath)
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(f"{filepath} exists and overwrite=False")

    def write(f):
        with h5py.File(f, "w") as h5:
            write_weights(h5, model)
            if extra_attrs:
                b = h5.require_group("boundfit")
                for k, v in extra_attrs.items():
                    b.attrs[k] = v
    atomic_write(filepath, write)


def read_extra_attrs(filepath):
    """The boundfit/ attributes of a weights file (empty for Keras's own files)."""
    with h5py.File(os.fspath(filepath), "r") as h5:
        return {k: v.item() if hasattr(v, "item") else v for k, v in h5["boundfit"].attrs.items()} \
            if "boundfit" in h5 else {}


def load_weights(model, filepath, skip_mismatch=False):
    filepath = os.fspath(filepath)
    if filepath.endswith(".keras"):   # a subclassed model's .keras file holds its traced graph's layout
        with zipfile.ZipFile(filepath) as z, z.open("model.weights.h5") as raw:
            graph = json.loads(z.read("config.json")).get("class_name") == "Functional"
            with h5py.File(io.BytesIO(raw.read()), "r") as h5:
                return read_weights(h5, model, where=filepath, skip_mismatch=skip_mismatch, as_functional=graph)
    if not filepath.endswith(".weights.h5"):
        raise ValueError("File format not supported: filepath=" + filepath + ". boundfit reads `.weights.h5` and "
                         "`.keras` files")
    with h5py.File(filepath, "r") as h5:
        read_weights(h5, model, where=filepath, skip_mismatch=skip_mismatch)


def save_model(model, filepath, overwrite=True):
    filepath = os.fspath(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError("Invalid filepath extension for saving. Please add the `.keras` extension (the Keras 3 "
                         f"format). Received: filepath={filepath}")
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(f"{filepath} exists and overwrite=False")
    model._require_built()
    _keras_writable(model)
    config = json.dumps(keras_graph.model_config(model))
    meta = json.dumps({"keras_version": "3", "boundfit_version": __version__,
                       "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")})
    buf = io.BytesIO()
    with h5py.File(buf, "w") as h5:
        write_weights(h5, model, as_functional=True)

    assets = _assets(model)

    def write(f):
        with zipfile.ZipFile(f, "w") as z:
            z.writestr("metadata.json", meta)
            z.writestr("config.json", config)
            z.writestr("model.weights.h5", buf.getvalue(), compress_type=zipfile.ZIP_STORED)
            for name, data in assets.items():
                z.writestr(name, data)
    atomic_write(filepath, write)


def _keras_writable(model):
    """A .keras file holds a graph of Keras layers and operations: a call() that computes differently with
    training=True and False (a Switch) or draws with keras.random (a RandomDraw) has none, so such a model is
    refused here, naming the layer, rather than written as something else."""
    for n in model._nodes:
        if keras_graph.is_model(n.layer):
            _keras_writable(n.layer)
            continue
        if not isinstance(n.layer, (L.Switch, L.RandomDraw)):
            continue
        who = n.traced_in
        what = ("computes differently with training=True and training=False" if isinstance(n.layer, L.Switch) else
                f"draws with keras.random.{n.layer.dist}")
        also = "" if who is not None else \
            ", or its weights with save_weights() (Keras's layout, for an instance of the same class in Keras)"
        who = f"layer {who.name!r} ({type(who).__name__})" if who is not None else \
            f"model {model.name!r} ({type(model).__name__})"
        raise ValueError(f"{who}: its call() {what}, which a .keras file cannot hold as Keras layers and "
                         "operations (Keras rebuilds it only from the class itself). Save the model to boundfit's "
                         f"graph file (a path ending in .npz){also}")


def _assets(model):
    """{name in the archive: bytes}: the files Keras's save_assets writes under
    assets/<the layer's path> (TextVectorization's vocabulary)."""
    out = {}
    for path, obj in keras_graph.weight_groups(model, as_functional=True):
        for name, data in (obj._keras_assets().items() if hasattr(obj, "_keras_assets") else ()):
            out[f"assets/{path}/{name}" if path else f"assets/{name}"] = data
    return out


def _load_assets(model, z, names):
    for path, obj in keras_graph.weight_groups(model, as_functional=True):
        if hasattr(obj, "_load_keras_assets"):
            prefix = f"assets/{path}/" if path else "assets/"
            obj._load_keras_assets({n[len(prefix):]: z.read(n) for n in names if n.startswith(prefix)})


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Keras's signature; custom_objects may map a class name in the file to a
    boundfit layer class (safe_mode has nothing to guard: no code is loaded)."""
    filepath = os.fspath(filepath)
    if not os.path.isfile(filepath):
        raise ValueError(f"File not found: filepath={filepath}. Please ensure the file is an accessible `.keras` "
                         "zip file.")
    if not zipfile.is_zipfile(filepath):
        raise ValueError(f"{filepath} is not a .keras file (a zip archive written by Keras 3 or boundfit)")
    with zipfile.ZipFile(filepath) as z:
        names = set(z.namelist())
        for need in ("config.json", "model.weights.h5"):
            if need not in names:
                raise ValueError(f"{filepath}: the archive has no {need}")
        cfg = config_check.load_config(z.read("config.json"), filepath)
        weights = z.read("model.weights.h5")
        model = keras_graph.model_from_config(cfg, custom_objects)
        if compile and cfg.get("compile_config"):
            keras_config.compile_from_config(model, cfg["compile_config"], custom_objects)
        with h5py.File(io.BytesIO(weights), "r") as h5:
            read_weights(h5, model, where=filepath, as_functional=True)
        _load_assets(model, z, names)
        model._loaded()   # a model with a training graph (a custom loss): the weights and state go on into it
    return model
