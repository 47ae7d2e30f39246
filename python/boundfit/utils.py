"""Utilities: seeding (bf.utils.set_random_seed), to_categorical,
clear_session, and the Keras data-set protocols Sequence / PyDataset."""

import os
import random

import numpy as np

from . import _core

_seed = {"base": None, "count": 0}


def set_random_seed(seed):
    """Seed boundfit (weight init, shuffling, dropout), Python's random and NumPy."""
    seed = int(seed)
    _seed["base"], _seed["count"] = seed, 0
    random.seed(seed)
    np.random.seed(seed % (2**32))


def clear_session(free_memory=True):
    """Give back the memory boundfit keeps between runs: the arenas of the last
    finished fit / evaluate / predict, kept so that the next run of the same
    or a smaller size starts without page faults. The kernel already takes their pages back
    under memory pressure (they count as available); this unmaps them now, so
    that they also leave the process's RSS. Keras's name and argument."""
    if free_memory:
        _core.drop_kept()


def next_seed():
    """A fresh 63-bit seed: deterministic after set_random_seed, else from the OS."""
    if _seed["base"] is None:
        return int.from_bytes(os.urandom(8), "little") >> 1
    _seed["count"] += 1
    x = (_seed["base"] * 0x9E3779B97F4A7C15 + _seed["count"] * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    x ^= x >> 31
    return x >> 1


def to_categorical(y, num_classes=None, dtype="float32"):
    y = np.asarray(y, dtype="int64").reshape(-1)
    n = int(num_classes) if num_classes is not None else int(y.max()) + 1
    out = np.zeros((y.shape[0], n), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out


class PyDataset:
    """Keras data set protocol: __len__ (batches per epoch), __getitem__(i) -> (x, y), on_epoch_end()."""

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers, self.use_multiprocessing, self.max_queue_size = workers, use_multiprocessing, max_queue_size

    def __len__(self):
        raise NotImplementedError

    def __getitem__(self, index):
        raise NotImplementedError

    def on_epoch_end(self):
        pass


Sequence = PyDataset
