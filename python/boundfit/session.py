"""Process-wide state Keras keeps globally: the random seed (set_random_seed,
and next_seed, the seeds drawn from it for weights, shuffling and dropout),
the automatic names' counters (LAYER_NAMES, snake_case) and clear_session.
keras.utils / keras.backend export these; engine modules import them here."""

import os
import random
import re

import numpy as np

from . import _core

_seed = {"base": None, "count": 0}


def set_random_seed(seed):
    """Seed boundfit (weight init, shuffling, dropout), Python's random and NumPy."""
    seed = int(seed)
    _seed["base"], _seed["count"] = seed, 0
    random.seed(seed)
    np.random.seed(seed % (2**32))


LAYER_NAMES = {}   # the count of automatic names per base ("dense", "dense_1", ...): layers, inputs, models


def clear_session(free_memory=True):
    """Keras's clear_session: automatic layer names start again ("dense"), and,
    with free_memory, the memory boundfit keeps between runs is given back: the
    arenas of the last finished fit / evaluate / predict, kept so that the next
    run of the same or a smaller size starts without page faults. The kernel
    already takes their pages back under memory pressure (they count as
    available); this unmaps them now, so that they also leave the process's RSS."""
    LAYER_NAMES.clear()
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


def snake_case(name):
    """A class name as Keras names its objects (keras.src.utils.naming.to_snake_case): TransformerBlock ->
    transformer_block."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
