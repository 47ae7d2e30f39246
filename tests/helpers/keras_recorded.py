"""Keras 3's results for the heaviest comparisons, recorded. Computing them
takes tens of seconds (JAX compiles each of hundreds of small ops, eager or
jitted, and some need TensorFlow), more than the suite can spend on every
run. recorded(name, module_file, compute) returns compute()'s {name: array},
kept in tests/keras_refs/<name>.npz under a key made of the test module's
source (its cases and data) and the Keras, JAX and NumPy versions: a
missing or stale file, or BOUNDFIT_KERAS_LIVE=1, computes them from Keras
again and rewrites the file (commit it)."""

import hashlib
import os

import numpy as np

REFS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "keras_refs")


def _key(module_file):
    import importlib.metadata as md
    h = hashlib.sha256(open(module_file, "rb").read())
    for dist in ("keras", "jax", "numpy"):
        try:
            h.update(f"{dist}={md.version(dist)};".encode())
        except md.PackageNotFoundError:
            h.update(f"{dist}=none;".encode())
    return h.hexdigest()


def recorded(name, module_file, compute):
    """compute() -> {str: array} from Keras, or its recorded copy for this module source and these versions"""
    path, key = os.path.join(REFS, name + ".npz"), _key(module_file)
    if os.environ.get("BOUNDFIT_KERAS_LIVE") != "1" and os.path.exists(path):
        with np.load(path) as f:
            if str(f["__key__"]) == key:
                return {k: f[k] for k in f.files if k != "__key__"}
    out = {k: np.asarray(v) for k, v in compute().items()}
    try:
        os.makedirs(REFS, exist_ok=True)
        tmp = path + f".{os.getpid()}.tmp.npz"
        np.savez_compressed(tmp, __key__=np.array(key), **out)
        os.replace(tmp, path)
    except OSError:   # a read-only checkout: computed each time
        pass
    return out
