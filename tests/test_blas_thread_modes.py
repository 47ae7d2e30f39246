"""The engine's thread count must never change a result. Its pool splits big
GEMMs by rows or columns, never sums, and only where OpenBLAS takes the same
kernel for the whole and the parts (csrc/cpu/gemm.c); sums over rows
(LayerNorm's and Dense's parameter gradients) are split by columns; ops made
of many small GEMMs (recurrent steps, attention tiles) pick one thread or all
by timing both (csrc/cpu/blas_threads.h). Trained weights of a fresh process
on one thread equal, bit for bit, those of a process on two threads, which
split the feed-forward GEMMs, the column sums and the LSTMs' steps (blocks of
batch rows, with and without state masks) and ran the recurrent and attention ops in both modes (24 steps: past the tuner's alternating calls and
a probe of the other mode); a softmax classifier's losses and metrics (rows and fixed blocks of rows on the
pool) are the same to the bit too."""

import os
import subprocess
import sys

import numpy as np

SCRIPT = r"""
import sys, numpy as np, boundfit as bf
from boundfit import layers
bf.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.standard_normal((64 * 12, 24, 16)).astype(np.float32)
y = rng.standard_normal((64 * 12, 1)).astype(np.float32)
inp = layers.Input((24, 16))
h = layers.LSTM(128, return_sequences=True)(inp)   # batch 64 x 128 units: steps in blocks of rows
h = layers.LSTM(128, return_sequences=True, recurrent_dropout=0.2)(h)  # the same, each block masking its rows
h = layers.MultiHeadAttention(2, 8)(h, h)
f = layers.Dense(128)(layers.Dense(1024, activation="relu")(h))  # 1536 x 128 x 1024: split over the pool
h = layers.LayerNormalization()(layers.Add()([h, f]))
out = layers.Dense(1)(layers.GRU(16)(h))
m = bf.Model(inp, out)
m.compile(optimizer="adam", loss="mse")
m.fit(x, y, batch_size=64, epochs=2, verbose=0, shuffle=False)
# a softmax over 64 classes at batch 2048 with sample weights: loss rows and metric blocks on the pool
xc = rng.standard_normal((4096, 32)).astype(np.float32)
yc = rng.integers(0, 64, 4096)
c = bf.Sequential([layers.Input((32,)), layers.Dense(64, activation="softmax")])
c.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy", "sparse_top_k_categorical_accuracy"],
          weighted_metrics=["accuracy"])
h = c.fit(xc, yc, batch_size=2048, epochs=2, verbose=0, shuffle=False, sample_weight=rng.random(4096) + 0.5)
hist = np.array([v for k in sorted(h.history) for v in h.history[k]])
np.save(sys.argv[1], np.concatenate([w.ravel() for w in m.get_weights() + c.get_weights()] + [hist]))
"""


def _train(path, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return np.load(path)


def test_one_thread_and_two_give_the_same_bits(tmp_path):
    one = _train(tmp_path / "one.npy", 1)
    two = _train(tmp_path / "two.npy", 2)
    assert one.size > 1000
    np.testing.assert_array_equal(one, two)
