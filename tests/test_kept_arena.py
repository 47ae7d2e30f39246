"""Kept run arenas: a finished run's host arena stays mapped (its pages given
to the kernel with MADV_FREE) and the next run of its size or less writes into
it without page faults. Reuse must not change a single bit (nothing reads an
arena byte before writing it: the kept arena is filled with NaN here before
it is reused), a smaller run reuses it, a larger one unmaps it first, and
clear_session() gives it back at once."""

import json
import subprocess
import sys

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core
from boundfit import layers as L

MiB = 1 << 20


def transformer():
    inp = bf.Input((12, 16))
    a = L.MultiHeadAttention(2, 8, dropout=0.1)(inp, inp, use_causal_mask=True)
    x = L.LayerNormalization()(L.Add()([inp, a]))
    x = L.LayerNormalization()(L.Add()([x, L.Dense(16)(L.Dense(32, activation="gelu")(x))]))
    m = bf.Model(inp, L.Dense(3, activation="softmax")(L.GlobalAveragePooling1D()(x)))
    return m, (96, 12, 16), "sparse_categorical_crossentropy", 3


def recurrent():
    m = bf.Sequential([bf.Input((10,), dtype="int32"), L.Embedding(20, 8, mask_zero=True),
                       L.Bidirectional(L.GRU(6, return_sequences=True)), L.LSTM(5), L.Dense(1)])
    return m, "tokens", "mse", None


def conv():
    m = bf.Sequential([bf.Input((10, 10, 3)), L.Conv2D(4, 3, padding="same"), L.BatchNormalization(),
                       L.Activation("relu"), L.MaxPooling2D(), L.Dropout(0.3), L.Flatten(),
                       L.Dense(2, activation="softmax")])
    return m, (96, 10, 10, 3), "sparse_categorical_crossentropy", 2


def data(shape, classes):
    rng = np.random.default_rng(0)
    if shape == "tokens":
        x = rng.integers(0, 20, (96, 10)).astype(np.int32)
        x[:, 7:] = 0
        return x, rng.standard_normal((96, 1)).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    return x, (rng.integers(0, classes, len(x)) if classes else rng.standard_normal((len(x), 1)).astype(np.float32))


def two_fits_and_predict(build, reuse):
    """weights, losses and predictions after fit, fit, predict, predict; with
    reuse=False every run maps a fresh arena"""
    bf.utils.set_random_seed(5)
    m, shape, loss, classes = build()
    m.compile(optimizer="adam", loss=loss, metrics=["mae"] if classes is None else ["accuracy"])
    x, y = data(shape, classes)
    sw = np.linspace(0.5, 1.5, len(x)).astype(np.float32)
    losses, preds = [], []
    for _ in range(2):
        if not reuse:
            bf.utils.clear_session()
        h = m.fit(x, y, batch_size=16, epochs=1, sample_weight=sw, validation_data=(x[:40], y[:40]), verbose=0)
        losses += h.history["loss"] + h.history["val_loss"]
    for _ in range(2):
        if not reuse:
            bf.utils.clear_session()
        preds.append(m.predict(x, batch_size=32, verbose=0))
    return m.get_weights(), losses, preds


@pytest.mark.parametrize("build", [transformer, recurrent, conv])
def test_a_reused_arena_full_of_nan_gives_the_same_bits_as_a_fresh_one(build):
    fresh = two_fits_and_predict(build, reuse=False)
    _core.poison_kept(True)
    try:
        bf.utils.clear_session()
        taken = _core.kept_taken()
        kept = two_fits_and_predict(build, reuse=True)
        assert _core.kept_taken() > taken            # the second fit and predict did reuse
    finally:
        _core.poison_kept(False)
    for a, b in zip(fresh[0], kept[0]):
        np.testing.assert_array_equal(a, b)
    assert fresh[1] == kept[1] and all(np.isfinite(fresh[1]))
    for a, b in zip(fresh[2], kept[2]):
        np.testing.assert_array_equal(a, b)


def small_model():
    m = bf.Sequential([bf.Input((256,)), L.Dense(512, activation="relu"), L.Dense(10)])
    m.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(1).standard_normal((4096, 256)).astype(np.float32)
    return m, x, np.zeros((4096, 10), np.float32)


def test_a_run_reuses_the_smallest_kept_arena_of_its_size_or_more_and_a_larger_one_unmaps_them():
    m, x, y = small_model()
    bf.utils.clear_session()
    assert _core.kept_bytes() == 0
    m.fit(x, y, batch_size=1024, verbose=0)
    kept = _core.kept_bytes()
    plan = m.estimate_memory(batch_size=1024)
    assert 0 < kept <= plan.host_bytes                        # the run arena: the plan less the weights
    taken = _core.kept_taken()
    m.fit(x, y, batch_size=1024, verbose=0)                  # the same size (taken: its resident pages)
    assert 0.5 * kept < _core.kept_taken() - taken <= kept and _core.kept_bytes() == kept
    taken = _core.kept_taken()
    m.fit(x, y, batch_size=512, verbose=0)                   # smaller: writes the start of the same mapping
    small = _core.kept_taken() - taken
    assert 0 < small < kept and _core.kept_bytes() == kept
    m.predict(x, batch_size=256, verbose=0)                  # so does a predict after the fit
    assert _core.kept_taken() - taken > small and _core.kept_bytes() == kept
    taken = _core.kept_taken()
    m.fit(x, y, batch_size=2048, verbose=0)                  # larger than any kept: unmaps them, maps its own
    assert _core.kept_taken() == taken and _core.kept_bytes() > kept
    bf.utils.clear_session()
    assert _core.kept_bytes() == 0


CLEAR_SESSION = """
import json, re, numpy as np, boundfit as bf
from boundfit import _core, layers as L
from boundfit.runtime import budget

def kept_mapping(bytes_):
    # (start, Rss, LazyFree) of the anonymous mapping of bytes_ plus the arena's header page
    size, found, cur = (bytes_ + 4096 + 4095) // 4096 * 4096, None, None
    for line in open("/proc/self/smaps"):
        head = re.match(r"([0-9a-f]+)-[0-9a-f]+ ", line)
        if head:
            cur = {"start": int(head.group(1), 16)}
            continue
        key, _, val = line.partition(":")
        if key in ("Size", "Rss", "LazyFree") and cur is not None:
            cur[key] = int(val.split()[0]) * 1024
            if key == "LazyFree" and cur["Size"] == size:
                found = (cur["start"], cur["Rss"], cur["LazyFree"])
    return found

m = bf.Sequential([bf.Input((256,)), L.Dense(512, activation="relu"), L.Dense(10)])
m.compile(optimizer="adam", loss="mse")
x = np.random.default_rng(1).standard_normal((4096, 256)).astype(np.float32)
y = np.zeros((4096, 10), np.float32)
m.fit(x, y, batch_size=4096, verbose=0)  # one step over > 20 MiB of activations
kept = _core.kept_bytes()
resident = kept_mapping(kept)[1]
taken = _core.kept_taken()
m.fit(x, y, batch_size=4096, verbose=0)  # reuses it: counts the pages that were resident
taken = _core.kept_taken() - taken
before = budget.anon_rss_bytes()                  # first: the kernel may reclaim kept pages at any time
mapping = kept_mapping(kept)
bf.utils.clear_session()
after = budget.anon_rss_bytes()
print(json.dumps(dict(kept=kept, mapping=mapping, before=before, after=after, gone=kept_mapping(kept),
                      resident=resident, taken=taken)))
"""


def test_clear_session_takes_the_kept_pages_out_of_rss():
    """In a fresh process, where the arena's mapping is the only one of its
    size and no other transparent-huge-page mapping can merge with it."""
    r = subprocess.run([sys.executable, "-c", CLEAR_SESSION], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["kept"] > 20 * MiB and got["mapping"] is not None
    start, rss, lazy = got["mapping"]
    assert rss > 10 * MiB and lazy > 0.9 * rss                  # still resident, given to the kernel with MADV_FREE
    assert got["gone"] is None or got["gone"][0] != start       # unmapped
    assert got["before"] - got["after"] >= rss - 2 * MiB        # its resident pages left RSS with it
    # a reuse counts what was resident (the watchdog's baseline leaves exactly that out): the mapping's
    # resident pages less its header page
    assert abs(got["taken"] - (got["resident"] - 4096)) <= 8192, (got["taken"], got["resident"])
