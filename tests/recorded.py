"""Outputs of references that need TensorFlow (Keras 3's TextVectorization,
timeseries windows, directory datasets), recorded in tests/references/<name>.npz
by tests/references/make_<name>.py (run by hand with TensorFlow installed),
so that the tests compare boundfit against them without TensorFlow.

A record is a flat dict of arrays; a list of batches (tuples of arrays) is
kept under keys "<prefix>/<batch>/<part>", a JSON value under "<key>" as a
0-d string array."""

import json
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


def put_json(record, key, value):
    record[key] = np.array(json.dumps(value))


def get_json(record, key):
    return json.loads(str(record[key]))
