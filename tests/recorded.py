"""Outputs of references that need TensorFlow (Keras 3's TextVectorization,
timeseries windows, directory datasets), recorded in tests/references/<name>.npz
by tests/references/make_<name>.py (run by hand with TensorFlow installed),
so that the tests compare boundfit against them without TensorFlow.

A record is a flat dict of arrays; a list of batches (tuples of arrays) is
kept under keys "<prefix>/<batch>/<part>", a Python literal (a config, a
vocabulary: str, numbers, None, lists, tuples, dicts) as its repr in a 0-d
string array."""

import ast
import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "references")


def load(name):
    path = os.path.join(HERE, f"{name}.npz")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: run tests/references/make_{name}.py with TensorFlow installed")
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def save(name, record):
    np.savez_compressed(os.path.join(HERE, f"{name}.npz"), **record)


def put_batches(record, prefix, batches):
    for i, b in enumerate(batches):
        for j, a in enumerate(b):
            record[f"{prefix}/{i}/{j}"] = np.asarray(a)


def batches(record, prefix):
    out = []
    while f"{prefix}/{len(out)}/0" in record:
        i = len(out)
        out.append(tuple(record[f"{prefix}/{i}/{j}"] for j in range(sum(k.startswith(f"{prefix}/{i}/")
                                                                         for k in record))))
    return out


def put_value(record, key, value):
    text = repr(value)
    if ast.literal_eval(text) != value:
        raise ValueError(f"{key}: {text[:200]} is no Python literal")
    record[key] = np.array(text)


def value(record, key):
    return ast.literal_eval(str(record[key]))
