"""Keras 3 files: `.keras` (a zip of config.json, metadata.json and
model.weights.h5) and `.weights.h5`, both ways.

Weights layout (as Keras's saving_lib writes it; keras_graph.py walks the
model): layers/<snake_case class name, numbered per class>/vars/<i> for each
layer's variables in Keras order (a nested model's under its own path, a
subclassed model's by attribute name), vars/ for the model itself,
optimizer/vars/<i> with iterations, the learning rate (unless a schedule),
use_ema's moving averages (the engine's last slot) and the slots in the order
of Keras's trainable_variables. boundfit's own extras
(its optimizer's raw state, so any optimizer resumes exactly) live under
boundfit/, which Keras never reads. Every file is written atomically: a
temporary file in the same folder, fsync, rename."""

import contextlib
import datetime
import io
import json
import os
import warnings
import zipfile

import h5py
import numpy as np

from .. import layers as L, optimizers
from .._version import __version__
from .. import object_registration
from . import bounded_read, config as keras_config, config_check, keras_graph, legacy_h5
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
        kss = getattr(layer, "_keras_var_shapes", None)  # each of a layer's (an EinsumDense's Dense: its kernel)
        out.extend([(i, off, s) for (i, off, _), s in zip(got, kss)] if kss is not None else
                   got if ks is None else [(i, off, ks) for i, off, _ in got])
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
    if kind in _TWO_SLOTS and nslots == 2:     # one add_optimizer_variables call with two names: per variable
        return "interleaved", [0, 1]
    if kind == "Lion" and nslots == 1:
        return "grouped", [0]                  # momentums
    return None, None


# Keras's two per-variable slots in the engine's order: Adamax momentum, norm; Adadelta accumulated_grad,
# accumulated_delta_var; Ftrl accumulator, linear; Lamb momentum, velocity
_TWO_SLOTS = ("Adamax", "Adadelta", "Ftrl", "Lamb")


def _keras_nslots(opt):
    """Per-variable slots Keras builds for opt (the engine makes them on the first step)."""
    kind = type(opt).__name__
    momentum = getattr(opt, "momentum", 0.0)
    return {"Adam": 2, "SGD": 1 if momentum else 0, "RMSprop": 2 if momentum > 0 else 1, "Lion": 1,
            **{k: 2 for k in _TWO_SLOTS}}.get(kind, 0)


def _keras_initial_slots(opt, n):
    """The state Keras builds before the first step (zeros; Ftrl's accumulator at its initial value)."""
    slots = [np.zeros(n, np.float32) for _ in range(_keras_nslots(opt))]
    if type(opt).__name__ == "Ftrl":
        slots[0][:] = opt.initial_accumulator_value
    return slots


def _write_optimizer(g, model, as_functional):
    lso = model.optimizer if isinstance(model.optimizer, optimizers.LossScaleOptimizer) else None
    opt = lso.inner_optimizer if lso is not None else model.optimizer
    it, slots = model._engine.optimizer_state()
    sl = _trainable_slices(model, as_functional)
    raw, steps = list(slots), model._engine.raw_steps()   # Keras's _iterations (gradient accumulation: steps)
    ema = [slots.pop()] if slots and getattr(opt, "use_ema", False) else []   # Keras: the averages come first,
    acc = [slots.pop()] if slots and getattr(opt, "gradient_accumulation_steps", None) else []   # accumulators next
    layout, order = _keras_slot_groups(opt, len(slots) or _keras_nslots(opt))
    # a LossScaleOptimizer (Keras): its variables (iteration, learning_rate, step_counter, dynamic_scale) then the
    # inner optimizer's in optimizer/vars, the inner's also in optimizer/inner_optimizer/vars
    v = g.create_group("optimizer/inner_optimizer/vars" if lso is not None else "optimizer/vars")
    v.attrs["name"] = type(opt).__name__.lower()
    if layout is not None and not slots and not ema:   # not trained yet: Keras's built state is zeros
        n = sum(int(np.prod(sh)) for _, _, sh in sl)
        slots = _keras_initial_slots(opt, n)
        ema = [np.zeros(n, np.float32)] if getattr(opt, "use_ema", False) else []
        acc = [np.zeros(n, np.float32)] if getattr(opt, "gradient_accumulation_steps", None) else []
    if layout is not None:
        vals = [np.array(steps, dtype=np.int64)]
        if getattr(opt, "_schedule", None) is None:
            vals.append(np.array(opt.learning_rate, dtype=np.float32))
        pieces = [[s[off:off + int(np.prod(shape))].reshape(shape) for (_, off, shape) in sl]
                  for s in slots + acc + ema]
        if ema:
            vals.extend(pieces.pop())
        if acc:
            vals.extend(pieces.pop())
        if slots and layout == "interleaved":
            for j in range(len(sl)):
                vals.extend(pieces[k][j] for k in order)
        elif slots:
            for k in order:
                vals.extend(pieces[k])
        for i, a in enumerate(vals):
            v.create_dataset(str(i), data=a)
    if lso is not None:
        scale, counter = model._engine.loss_scale()
        outer = g.create_group("optimizer/vars")
        outer.attrs["name"] = lso.name
        own = [np.array(0, np.int64), np.array(0.0, np.float32), np.array(counter, np.int64),
               np.array(scale, np.float32)]
        for i, a in enumerate(own + (vals if layout is not None else [])):
            outer.create_dataset(str(i), data=a)
    b = g.create_group("boundfit")
    b.attrs["optimizer"] = type(model.optimizer).__name__
    if lso is not None:
        b.attrs["loss_scale"], b.attrs["scale_counter"] = float(scale), int(counter)
    b.attrs["iterations"] = int(it)
    b.attrs["raw_steps"] = int(steps)
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
    return [model._engine.get_weights_range(j, j + 1)[0] for j in _slots(model, obj)]


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
    """Paths of the groups holding layer variables in a weights file (not the optimizer's, not boundfit's);
    HDF5's visit follows hard links only."""
    found = []

    def visit(name, obj):
        if name.split("/")[-1] == "vars" and isinstance(obj, h5py.Group) and len(obj) \
                and not name.startswith(("optimizer/", "boundfit/")):
            found.append(name)
    h5.visititems(visit)
    return found


_HOST_ITEMS = 1 << 22   # elements a host-side layer's state may hold (TextVectorization's idf_weights: 4M tokens)
_COPIES = 8             # the weights, and optimizer state: Keras's slots, EMA, accumulators, boundfit's own copy


def _weights_cap(model):
    """Bytes a .keras file's model.weights.h5 may hold for this model: every variable at 8 bytes an element
    _COPIES times over, host-side layers' state, and HDF5's overhead per object (about 1.5 KiB)."""
    model._require_built()   # a variable-length model: bound to placeholder lengths (the weights' shapes)
    info = model._info()
    shapes = [s for _, _, params in info for _, s, _ in params]
    items = sum(int(np.prod(s, dtype=np.int64)) for s in shapes)
    host = sum(1 for _, l in keras_graph.weight_groups(model, True) if hasattr(l, "_load_keras_h5_vars"))
    return 8 * (_COPIES * items + 2 * host * _HOST_ITEMS) + (1 << 20) + (64 << 10) * (_COPIES * len(shapes) + len(info))


def read_weights(h5, model, optimizer=True, where="weights file", skip_mismatch=False, as_functional=False):
    """Load an open h5py File's variables into model; all-or-nothing: every dataset's shape, dtype and
    storage are checked before a byte of it is read (bounded_read.py), and everything is read before
    anything is set (skip_mismatch: a layer whose weights do not match keeps its own, with a warning, as
    Keras does)."""
    model._require_built()
    with bounded_read.refusing(where):
        new, host = _read_layers(h5, model, where, skip_mismatch, as_functional)
        restore = _read_optimizer(h5, model, where, as_functional) \
            if optimizer and model.optimizer is not None and model._engine is not None else None
    model._set_all_weights(new)
    for layer, groups in host:
        layer._load_keras_h5_vars(groups)
    if restore is not None:
        restore()


def _read_host_groups(h5, path, layer, expected, where):
    """{group: {name: array}} of a host-side layer's state (TextVectorization's idf_weights)."""
    groups = {}
    for sub in layer._keras_h5_vars():
        key = f"{path}/{sub}" if path else sub
        expected.add(key)
        g = bounded_read.h5_group(h5, key, where)
        if g is None:
            continue
        sets = {n: bounded_read.h5_dataset(g, n, where) for n in g}
        if sum(d.size for d in sets.values()) > _HOST_ITEMS:
            raise ValueError(f"{where}: {g.name} holds {sum(d.size for d in sets.values())} elements, at most "
                             f"{_HOST_ITEMS} are read for layer {layer.name!r}")
        groups[sub] = {n: bounded_read.h5_read(d, None, where, _HOST_ITEMS) for n, d in sets.items()}
    return groups


def _read_layers(h5, model, where, skip_mismatch, as_functional):
    """(every weight of the model, the file's where it has them; [(host-side layer, its state)])."""
    legacy = bounded_read.h5_group(h5, "layers", where) is None and \
        bounded_read.h5_group(h5, "_layer_checkpoint_dependencies", where) is not None
    new = model._engine.get_weights()
    expected = set()
    host = []
    for path, layer in keras_graph.weight_groups(model, as_functional):
        if hasattr(layer, "_load_keras_h5_vars"):
            host.append((layer, _read_host_groups(h5, path, layer, expected, where)))
        slots = _slots(model, layer)
        if not slots:
            continue
        key = _vars_path(path)
        expected.add(key)
        fkey = "_layer_checkpoint_dependencies" + key[len("layers"):] if legacy and key.startswith("layers/") else key
        want = [new[j].shape for j in slots]
        fwant = [np.shape(a) for a in layer._to_keras_vars([new[j] for j in slots])] \
            if hasattr(layer, "_to_keras_vars") else want   # the shapes Keras keeps them in
        groups = []
        for sub, _ in _var_groups(layer, len(want)):  # recurrent layers: their cell's (and sublayers') groups
            if sub != "vars":
                expected.add(key[:-len("vars")] + sub)
            groups.append(bounded_read.h5_group(h5, fkey if sub == "vars" else fkey[:-len("vars")] + sub, where))
        count = sum(len(g) for g in groups if g is not None)
        sets = [bounded_read.h5_dataset(g, str(k), where) for g in groups if g is not None for k in range(len(g))] \
            if count <= 2 * len(fwant) + 8 else None
        has = f"{count} datasets" if sets is None else [d.shape for d in sets]
        got = [bounded_read.h5_read(d, s, where) for d, s in zip(sets, fwant)] \
            if sets is not None and [d.shape for d in sets] == [tuple(s) for s in fwant] else None
        if got is not None and hasattr(layer, "_from_keras_vars"):
            got = layer._from_keras_vars(got, want)
        if got is None or len(got) != len(want) or any(a.shape != s for a, s in zip(got, want)):
            if skip_mismatch:
                warnings.warn(f"{where}: skipping layer {layer.name!r}: it expects weights "
                              f"{[tuple(s) for s in fwant]}, the file has {has}", stacklevel=4)
                continue
            raise ValueError(f"{where}: layer {layer.name!r} ({type(layer).__name__}) expects weights "
                             f"{[tuple(s) for s in fwant]}, the file has {has} at {path}")
        for j, a in zip(slots, got):
            new[j] = a
    if legacy:
        expected = {"_layer_checkpoint_dependencies" + k[len("layers"):] for k in expected}
    extra = sorted(p[:-len("/vars")] for p in set(_file_vars(h5)) - expected)
    if extra and not skip_mismatch:
        raise ValueError(f"{where}: it has weights for layers this model lacks: {extra}")
    return new, host


def _skip_optimizer(name, why):
    warnings.warn(f"Skipping variable loading for optimizer '{name}': {why}", stacklevel=5)


def _read_optimizer(h5, model, where, as_functional):
    """The file's optimizer state, checked and read: a function that puts it into the model, or None (no
    state, or another configuration's: skipped, as Keras skips it)."""
    lso = model.optimizer if isinstance(model.optimizer, optimizers.LossScaleOptimizer) else None
    opt = lso.inner_optimizer if lso is not None else model.optimizer
    name = type(model.optimizer).__name__
    b = bounded_read.h5_group(h5, "boundfit", where)
    if b is not None:
        attrs = bounded_read.h5_scalar_attrs(b, where)
        if attrs.get("optimizer") != name:
            return _skip_optimizer(name, f"the file holds the state of {attrs.get('optimizer')!r}")
        it, lr = _attr(attrs, "iterations", int, where), _attr(attrs, "learning_rate", float, where)
        steps = _attr(attrs, "raw_steps", int, where) if "raw_steps" in attrs else None
        sets = [bounded_read.h5_dataset(b, f"slot{k}", where) for k in range(sum(1 for n in b if n.startswith("slot")))]
        n = model._engine.n_trainable
        if len(sets) > 6 or any(d.shape != (n,) for d in sets):
            return _skip_optimizer(name, f"the file's slots {[d.shape for d in sets]} are not the compiled "
                                         f"optimizer's (({n},) each)")
        slots = [bounded_read.h5_read(d, (n,), where) for d in sets]
        scaled = (_attr(attrs, "loss_scale", float, where), _attr(attrs, "scale_counter", int, where)) \
            if lso is not None else None

        def restore():
            if scaled is not None:
                model._engine.set_loss_scale(*scaled)
            try:
                if slots:
                    model._engine.restore_optimizer_state(it, slots)
                else:
                    model._engine.set_iterations(it)
                if steps is not None and getattr(opt, "gradient_accumulation_steps", None):
                    model._engine.set_raw_steps(steps)
            except ValueError as e:   # another configuration (say, momentum): weights load, the state does not
                return _skip_optimizer(name, e)
            if getattr(opt, "_schedule", None) is None:
                opt.learning_rate = lr
        return restore
    scaled = None
    if lso is not None:   # Keras's LossScaleOptimizer: its own 4 variables, the inner's under inner_optimizer/
        own = bounded_read.h5_group(h5, "optimizer/vars", where)
        if own is None or len(own) < 4:
            return None
        ds = [bounded_read.h5_dataset(own, str(i), where) for i in (2, 3)]
        if any(d.size != 1 or d.ndim > 1 for d in ds):
            return None
        counter, scale = (bounded_read.h5_read(d, d.shape, where).reshape(()).item() for d in ds)
        scaled = (_number(scale, float, f"{where}: optimizer/vars/3 (dynamic_scale)"),
                  _number(counter, int, f"{where}: optimizer/vars/2 (step_counter)"))
    v = bounded_read.h5_group(h5, "optimizer/inner_optimizer/vars" if lso is not None else "optimizer/vars", where)
    if v is None:
        return None
    sl = _trainable_slices(model, as_functional)
    n = sum(int(np.prod(s)) if len(s) else 1 for _, _, s in sl)
    has_lr = getattr(opt, "_schedule", None) is None
    n_ema = len(sl) if getattr(opt, "use_ema", False) else 0   # use_ema: the averages, one per variable, first
    n_acc = len(sl) if getattr(opt, "gradient_accumulation_steps", None) else 0   # then the accumulators
    head = (2 if has_lr else 1) + n_ema + n_acc
    per = len(v) - head
    if not len(v) or per < 0 or (sl and per % len(sl)):
        return None
    nslots = per // len(sl) if sl else 0
    layout, order = _keras_slot_groups(opt, nslots)
    if layout is None or nslots != _keras_nslots(opt):
        return None
    sets = [bounded_read.h5_dataset(v, str(i), where) for i in range(len(v))]
    shapes = [s for _, _, s in sl]
    body = [shapes[i // nslots] if layout == "interleaved" else shapes[i % len(sl)] for i in range(per)]
    if any(d.size != 1 or d.ndim > 1 for d in sets[:head - n_ema - n_acc]) or \
            [d.shape for d in sets[head - n_ema - n_acc:]] != shapes[:n_ema] + shapes[:n_acc] + body:
        return None   # another layout (as Keras: skipped)
    vals = [bounded_read.h5_read(d, d.shape, where) for d in sets]
    flat = [np.empty(n, np.float32) for _ in range(nslots)]
    for j, (_, off, shape) in enumerate(sl):
        size = int(np.prod(shape)) if len(shape) else 1
        for k in range(nslots):
            a = vals[head + (j * nslots + k if layout == "interleaved" else k * len(sl) + j)]
            flat[order[k]][off:off + size] = a.reshape(-1)
    for first in ([head - n_acc] if n_acc else []) + ([head - n_acc - n_ema] if n_ema else []):
        extra = np.empty(n, np.float32)   # the engine's order: the accumulator, then the average (last)
        for j, (_, off, shape) in enumerate(sl):
            extra[off:off + (int(np.prod(shape)) if len(shape) else 1)] = vals[first + j].reshape(-1)
        flat.append(extra)
    it = _number(vals[0].reshape(()).item(), int, f"{where}: optimizer/vars/0 (iterations)")
    lr = _number(vals[1].reshape(()).item(), float, f"{where}: optimizer/vars/1 (learning rate)") if has_lr else None

    def restore():
        if scaled is not None and scaled[0] > 0:
            model._engine.set_loss_scale(*scaled)
        try:
            model._engine.restore_optimizer_state(it, flat)
            if n_acc:
                model._engine.set_raw_steps(it)   # Keras's _iterations counts the accumulated steps
        except ValueError:
            return  # the compiled optimizer keeps other state (as Keras: skipped)
        if has_lr:
            opt.learning_rate = lr
    return restore


def _attr(attrs, key, kind, where):
    """attrs[key] of the file's boundfit/ group as an int (iterations) or a finite float >= 0."""
    if key not in attrs:
        raise ValueError(f"{where}: boundfit/ has no attribute {key!r}")
    return _number(attrs[key], kind, f"{where}: boundfit/ attribute {key!r}")


def _number(v, kind, what):
    try:
        x = kind(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} is {v!r}, not a number") from None
    if not 0 <= x < 2 ** 62:   # also NaN
        raise ValueError(f"{what} is {v!r}, out of range")
    return x


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
    filepath = os.fspath(filepath)
    with h5py.File(filepath, "r") as h5, bounded_read.refusing(filepath):
        b = bounded_read.h5_group(h5, "boundfit", filepath)
        return {} if b is None else bounded_read.h5_scalar_attrs(b, filepath)


def _json(z, name, where):
    data = bounded_read.zip_bytes(z, name, bounded_read.JSON_CAP, where)
    try:
        return json.loads(data)
    except ValueError as e:
        raise ValueError(f"{where}: {name} is not JSON ({e})") from None


@contextlib.contextmanager
def _weights_h5(z, model, where):
    """model.weights.h5 of the open .keras archive z as an h5py File, copied out only while it stays
    within what model's weights need (_weights_cap)."""
    with bounded_read.zip_file(z, "model.weights.h5", _weights_cap(model), where) as f, h5py.File(f, "r") as h5:
        yield h5


def load_weights(model, filepath, skip_mismatch=False):
    """A `.weights.h5` or `.keras` file's weights (and optimizer state) into model, all or nothing; an
    untrusted file raises ValueError (refused or malformed content, naming the file and the dataset) or
    OSError (unreadable), never more (bounded_read.py)."""
    filepath = os.fspath(filepath)
    if filepath.endswith(".keras"):   # a subclassed model's .keras file holds its traced graph's layout
        model._require_built()
        with bounded_read.open_zip(filepath) as z:
            cfg = _json(z, "config.json", filepath)
            graph = isinstance(cfg, dict) and cfg.get("class_name") == "Functional"
            with _weights_h5(z, model, filepath) as h5:
                return read_weights(h5, model, where=filepath, skip_mismatch=skip_mismatch, as_functional=graph)
    if filepath.endswith(".h5") and not filepath.endswith(".weights.h5"):
        return _load_legacy(model, filepath)
    if not filepath.endswith(".weights.h5"):
        raise ValueError("File format not supported: filepath=" + filepath + ". boundfit reads `.weights.h5`, "
                         "`.keras` and Keras 2's `.h5` weights files")
    with h5py.File(filepath, "r") as h5:
        read_weights(h5, model, where=filepath, skip_mismatch=skip_mismatch)


def _load_legacy(model, filepath, group=None):
    """A Keras 2 `.h5` weights file (keras.applications' pretrained files), or the group of a legacy model file
    holding the weights: layer by layer in order (legacy_h5)."""
    model._require_built()
    new = model._engine.get_weights()
    wanted = []   # (layer, its slots, the shapes Keras keeps its weights in)
    for _, layer in keras_graph.weight_groups(model, True):
        slots = _slots(model, layer)
        if slots:
            mine = [new[j] for j in slots]
            keras = layer._to_keras_vars(mine) if hasattr(layer, "_to_keras_vars") else mine
            wanted.append((layer, slots, [np.shape(a) for a in keras]))
    with h5py.File(filepath, "r") as h5, bounded_read.refusing(filepath):
        root = h5 if group is None else bounded_read.h5_group(h5, group, filepath)
        got = legacy_h5.read(root, [(layer, shapes) for layer, _, shapes in wanted], filepath)
    for (layer, slots, _), arrays in zip(wanted, got):
        if hasattr(layer, "_from_keras_vars"):
            arrays = layer._from_keras_vars(arrays, [new[j].shape for j in slots])
        for j, a in zip(slots, arrays):
            new[j] = np.asarray(a, np.float32).reshape(new[j].shape)
    model._set_all_weights(new)


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
    refused here, naming the layer, rather than written as something else (unless a Keras layer that boundfit
    traces made it: the file holds that layer)."""
    for n in model._nodes:
        if keras_graph.is_model(n.layer):
            _keras_writable(n.layer)
            continue
        who = n.traced_in
        if not isinstance(n.layer, (L.Switch, L.RandomDraw)) or who is not None and who._keras_composite():
            continue   # (a Keras layer boundfit traces, SpatialDropout1D: the file holds that layer)
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


def _load_assets(model, z, names, where):
    for path, obj in keras_graph.weight_groups(model, as_functional=True):
        if hasattr(obj, "_load_keras_assets"):
            prefix = f"assets/{path}/" if path else "assets/"
            obj._load_keras_assets({n[len(prefix):]: bounded_read.zip_bytes(z, n, bounded_read.ASSET_CAP, where)
                                    for n in names if n.startswith(prefix)})


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Keras's signature; custom_objects may map a class name in the file to a
    boundfit layer class (safe_mode has nothing to guard: no code is loaded)."""
    filepath, custom_objects = os.fspath(filepath), object_registration.lookup(custom_objects)
    if not os.path.isfile(filepath):
        raise ValueError(f"File not found: filepath={filepath}. Please ensure the file is an accessible `.keras` "
                         "zip file.")
    if not zipfile.is_zipfile(filepath):
        raise ValueError(f"{filepath} is not a .keras file (a zip archive written by Keras 3 or boundfit)")
    with bounded_read.open_zip(filepath) as z:
        names = set(z.namelist())
        for need in ("config.json", "model.weights.h5"):
            if need not in names:
                raise ValueError(f"{filepath}: the archive has no {need}")
        cfg = config_check.load_config(bounded_read.zip_bytes(z, "config.json", bounded_read.JSON_CAP, filepath),
                                       filepath)
        model = keras_graph.model_from_config(cfg, custom_objects)
        if compile and cfg.get("compile_config"):
            keras_config.compile_from_config(model, cfg["compile_config"], custom_objects)
        with _weights_h5(z, model, filepath) as h5:   # its size bounded by what the config's weights need
            read_weights(h5, model, where=filepath, as_functional=True)
        _load_assets(model, z, names, filepath)
        model._loaded()   # a model with a training graph (a custom loss): the weights and state go on into it
    return model
