"""Keras 3's results for the comparisons, recorded. Computing them takes
most of the suite's time (JAX traces and compiles every model, op and
training step; some need TensorFlow), more than it can spend on every run.

recorded(name, module_file, compute) returns compute()'s result, kept in
tests/keras_refs/<name>.npz; case(compute, label) does the same for the
running test (tests/keras_refs/<module>/<test id, label>.npz). A result is any
nest of dicts (str keys), lists and tuples of arrays, numbers, strings and
None. Each is kept under a key made of the test module's source (its cases
and data), the helpers' (tests/helpers) and the Keras, JAX and NumPy versions: a missing or stale file, or
BOUNDFIT_KERAS_LIVE=1, computes it from Keras again and rewrites the file
(commit it). compute() must return everything the test reads from Keras
(initial weights included), so a recorded run never imports Keras."""

import hashlib
import json
import os
import re
import zipfile

import numpy as np

HELPERS = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(os.path.dirname(HELPERS), "keras_refs")


def _key(module_file, extra=""):
    import importlib.metadata as md
    h = hashlib.sha256(open(module_file, "rb").read())
    for helper in sorted(os.listdir(HELPERS)):   # the shared Keras sides (keras_compare.py ...)
        if helper.endswith(".py"):
            h.update(open(os.path.join(HELPERS, helper), "rb").read())
    for dist in ("keras", "jax", "numpy"):
        try:
            h.update(f"{dist}={md.version(dist)};".encode())
        except md.PackageNotFoundError:
            h.update(f"{dist}=none;".encode())
    h.update(extra.encode())
    return h.hexdigest()


def _pack(obj, arrays):
    """a JSON tree for obj, its arrays appended to arrays"""
    if isinstance(obj, dict):
        assert all(isinstance(k, str) for k in obj), "recorded dicts take str keys"
        return {"d": {k: _pack(v, arrays) for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        return {"l" if isinstance(obj, list) else "t": [_pack(v, arrays) for v in obj]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"s": obj}
    arrays.append(np.asarray(obj))
    return {"a": len(arrays) - 1}


def _unpack(tree, arrays):
    (kind, v), = tree.items()
    if kind == "d":
        return {k: _unpack(t, arrays) for k, t in v.items()}
    if kind in ("l", "t"):
        items = [_unpack(t, arrays) for t in v]
        return items if kind == "l" else tuple(items)
    return v if kind == "s" else arrays[f"a{v}"]


def _load_or_compute(path, key, compute):
    if os.environ.get("BOUNDFIT_KERAS_LIVE") != "1" and os.path.exists(path):
        with np.load(path) as f:
            if str(f["__key__"]) == key and "__tree__" in f.files:
                return _unpack(json.loads(str(f["__tree__"])), {k: f[k] for k in f.files})
    result, arrays = compute(), []
    tree = _pack(result, arrays)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + f".{os.getpid()}.tmp.npz"
        np.savez_compressed(tmp, __key__=np.array(key), __tree__=np.array(json.dumps(tree)),
                            **{f"a{i}": a for i, a in enumerate(arrays)})
        os.replace(tmp, path)
    except OSError:   # a read-only checkout: computed each time
        pass
    return _unpack(tree, {f"a{i}": a for i, a in enumerate(arrays)})


def recorded(name, module_file, compute):
    """compute() from Keras, or its recorded copy for this module source and these versions"""
    return _load_or_compute(os.path.join(REFS, name + ".npz"), _key(module_file), compute)


_calls = {}


def case(compute, label=None, files=()):
    """compute() from Keras for the running test, or its recorded copy; label names which of the test's Keras
    results (default: the first, second, ... call in the test); files: the files compute() reads (a .keras file
    boundfit wrote, for Keras to open), their contents part of the key"""
    current = os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]   # "tests/test_x.py::test_y[case] (call)"
    module_file, test_id = current.split("::", 1)
    if label is None:
        label = str(_calls.setdefault(current, [0])[0])
        _calls[current][0] += 1
    test_id += "/" + label
    extra = test_id + "".join(_file_digest(f) for f in files)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_id)[:80] + "-" + hashlib.sha256(test_id.encode()).hexdigest()[:10]
    folder = os.path.join(REFS, os.path.splitext(os.path.basename(module_file))[0])
    return _load_or_compute(os.path.join(folder, name + ".npz"), _key(_module_path(module_file), extra), compute)


def _file_digest(path):
    """a file's contents; of a zip (.keras), its members' but metadata.json's (which has the time of saving)"""
    h = hashlib.sha256()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            for name in sorted(z.namelist()):
                if name != "metadata.json":
                    h.update(name.encode() + b"\0" + z.read(name))
    else:
        h.update(open(path, "rb").read())
    return h.hexdigest()


def _module_path(nodeid_file):
    """the test module's file from the node id's (relative to pytest's rootdir, the repository)"""
    return os.path.join(os.path.dirname(os.path.dirname(REFS)), nodeid_file)


def keras_file(path, compute, label=None):
    """A file Keras writes, recorded: compute(path) writes it (mk.save(path)) and returns {name: result} of the
    Keras model beside it (its predictions); the file is written to path from the record, and the results
    returned"""
    import tempfile

    def run():
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, os.path.basename(str(path)))
            out = dict(compute(p))
            out["__file__"] = np.frombuffer(open(p, "rb").read(), np.uint8)
            return out
    out = case(run, label)
    with open(path, "wb") as f:
        f.write(out.pop("__file__").tobytes())
    return out
