"""The direct Conv2D kernels (csrc/cpu/conv2d_direct*.c, issue 25) in a
trained model: a small ResNet block (3x3 'same' and 'valid' stride-1
convolutions of 3, 16 and 20 channels, BatchNormalization, a 1x1 shortcut
and a strided conv that keeps to im2col) trained in fresh processes with
BF_CPU_ISA forcing each instruction set the CPU has. On each, one thread and
two give the same bits (Adam); across them (direct AVX-512, direct AVX2,
im2col + GEMM) the weights trained with SGD agree to float rounding."""

import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import sys, numpy as np, boundfit as bf
from boundfit import layers as L
bf.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.random((96, 12, 11, 3), dtype=np.float32)
y = rng.integers(0, 5, 96)
inp = L.Input((12, 11, 3))
a = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(inp)))
a = L.Conv2D(20, 3, padding="same")(a)
h = L.Activation("relu")(L.Add()([a, L.Conv2D(20, 1)(inp)]))
h = L.Conv2D(17, (2, 3), activation="relu")(h)
h = L.Conv2D(8, 3, strides=2, padding="same")(h)
m = bf.Model(inp, L.Dense(5, activation="softmax")(L.GlobalAveragePooling2D()(h)))
m.compile(optimizer=sys.argv[2], loss="sparse_categorical_crossentropy")
m.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
np.save(sys.argv[1], np.concatenate([w.ravel() for w in m.get_weights()]))
"""


def _flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


FLAGS = _flags()
ISAS = ["scalar"] + (["avx2"] if {"avx2", "fma"} <= FLAGS else []) + \
       (["avx512"] if {"avx512f", "avx512vl"} <= FLAGS else [])


def _train(path, isa, threads, optimizer="adam"):
    env = dict(os.environ, BF_CPU_ISA=isa, OPENBLAS_NUM_THREADS=str(threads))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(path), optimizer], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return np.load(path)


@pytest.mark.parametrize("isa", ISAS)
def test_conv_model_same_bits_on_one_and_two_threads_on_each_isa(tmp_path, isa):
    one = _train(tmp_path / "one.npy", isa, 1)
    two = _train(tmp_path / "two.npy", isa, 2)
    np.testing.assert_array_equal(one, two)


def test_direct_kernels_train_like_the_im2col_path(tmp_path):
    # SGD: Adam's normalised steps would turn rounding in near-zero gradients into whole steps
    ref = _train(tmp_path / "scalar.npy", "scalar", 2, "sgd")
    for isa in ISAS[1:]:
        np.testing.assert_allclose(_train(tmp_path / f"{isa}.npy", isa, 2, "sgd"), ref, rtol=1e-4, atol=1e-5)
