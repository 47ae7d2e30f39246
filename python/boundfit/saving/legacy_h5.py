"""Keras 2's HDF5 weights files (`save_weights("x.h5")` before Keras 3; the
format of keras.applications' pretrained files): the file's layers with
weights (its `layer_names` attribute, in order) matched to the model's
layers with weights in order, as Keras 3's legacy loader matches them; every
attribute and dataset checked before it is read (bounded_read.py)."""

import numpy as np

from . import bounded_read

_MAX_NAMES = 1 << 20   # entries of a name-list attribute read at most


def _name_list(obj, name, where):
    """A list-of-names attribute, stored whole or in chunks name0, name1, ... (Keras's way past HDF5's 64 KiB
    attribute limit); each checked to be a 1-D array of strings before it is read."""
    keys = [name] if name in obj.attrs else []
    while name not in obj.attrs and f"{name}{len(keys)}" in obj.attrs:
        keys.append(f"{name}{len(keys)}")
    out = []
    for k in keys:
        aid = obj.attrs.get_id(k)
        if aid.shape == (0,):   # an empty list (h5py stores it as float64)
            continue
        if len(aid.shape) > 1 or (aid.shape and aid.shape[0] > _MAX_NAMES) or aid.dtype.kind not in "SOU":
            raise ValueError(f"{where}: attribute {k!r} of {obj.name} is not a list of names (shape {aid.shape}, "
                             f"dtype {aid.dtype})")
        out += [n.decode("utf8") if isinstance(n, bytes) else str(n) for n in np.atleast_1d(obj.attrs[k])]
    return out


def read(h5, wanted, where):
    """[arrays per layer] for wanted = [(layer, [weight shapes])] (the model's layers with weights, in order)
    from an open legacy file h5; ValueError naming the file and the layer where counts or shapes differ."""
    names = _name_list(h5, "layer_names", where)
    if not names:
        raise ValueError(f"{where}: not a Keras weights file (no `layer_names` attribute, and the name does not end "
                         "in .weights.h5)")
    groups = []
    for n in names:
        g = bounded_read.h5_group(h5, n, where)
        if g is None:
            raise ValueError(f"{where}: layer {n!r} is listed but has no group")
        weight_names = _name_list(g, "weight_names", where)
        if weight_names:
            groups.append((n, g, weight_names))
    if len(groups) != len(wanted):
        raise ValueError(f"{where}: the file has weights for {len(groups)} layers, the model has {len(wanted)} "
                         "layers with weights (a legacy .h5 file is matched to the model layer by layer, in order)")
    out = []
    for (n, g, weight_names), (layer, shapes) in zip(groups, wanted):
        sets = [bounded_read.h5_dataset(g, w, where) for w in weight_names]
        if [d.shape for d in sets] != [tuple(s) for s in shapes]:
            raise ValueError(f"{where}: layer {layer.name!r} ({type(layer).__name__}) expects weights "
                             f"{[tuple(s) for s in shapes]}, the file's layer {n!r} has {[d.shape for d in sets]}")
        out.append([bounded_read.h5_read(d, tuple(s), where) for d, s in zip(sets, shapes)])
    return out
