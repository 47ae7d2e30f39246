"""Mixed precision on this CPU: training samples/s of the seed MLP (10000 -> 5000 -> 2000 -> 10, batch 256) and
the seed CNN (100x100x3, Conv2D 32 -> MaxPooling -> Dense 128 -> 10, batch 128) under float32 and mixed_bfloat16,
and Keras 3 on TensorFlow under mixed_bfloat16 (same script and process, the same models by Keras's own layers;
TensorFlow's oneDNN runs bfloat16 GEMMs where the CPU has AVX512-BF16 / AMX), rounds interleaved, medians, with
the ratios; and the planned activation bytes of each at its batch and of the CNN at batch 2048. Without
AVX512-BF16 / AMX kernels (docs/mixed-precision.md) boundfit's bfloat16 storage is converted to and from float32
around the float32 kernels: expect it no faster than its float32, the gain is memory.

    python benchmarks/bench_mixed.py [rounds]     (BENCH_KERAS=0: boundfit only)
"""

import os
import statistics
import sys
import time

import numpy as np

import boundfit as bf
from boundfit import layers

os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def keras_build(make, policy):
    """the same model by Keras 3 (TensorFlow backend) under policy, or None without Keras / TensorFlow"""
    if os.environ.get("BENCH_KERAS", "1") == "0":
        return None
    try:
        import keras
    except ImportError:
        return None
    keras.mixed_precision.set_global_policy(policy)
    try:
        m = keras.Sequential(make(keras.layers))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def mlp(L=layers):
    return [L.Input((10000,)), L.Dense(5000, activation="relu"), L.Dense(2000, activation="relu"),
            L.Dense(10, activation="softmax")]


def cnn(L=layers):
    return [L.Input((100, 100, 3)), L.Conv2D(32, (3, 3), activation="relu"), L.MaxPooling2D((2, 2)), L.Flatten(),
            L.Dense(128, activation="relu"), L.Dense(10, activation="softmax")]


def build(make, policy):
    bf.mixed_precision.set_global_policy(policy)
    try:
        m = bf.Sequential(make())
    finally:
        bf.mixed_precision.set_global_policy("float32")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def activations(m, batch):
    return sum(e.bytes for e in m.estimate_memory(batch_size=batch).breakdown if e.category == "activations")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name, make, shape, batch, steps in (("seed MLP", mlp, (10000,), 256, 4), ("seed CNN", cnn, (100, 100, 3), 128, 4)):
        rng = np.random.default_rng(0)
        x = rng.random((batch * steps,) + shape, dtype=np.float32)
        y = rng.integers(0, 10, batch * steps)
        models = {p: build(make, p) for p in ("float32", "mixed_bfloat16")}
        km = keras_build(make, "mixed_bfloat16")
        if km is not None:
            models["keras"] = km
        for m in models.values():
            m.fit(x[:batch], y[:batch], batch_size=batch, verbose=0)   # warm-up: the run's arena, Keras's tracing
        rates = {p: [] for p in models}
        for _ in range(rounds):
            for p, m in models.items():
                t0 = time.perf_counter()
                m.fit(x, y, batch_size=batch, verbose=0, shuffle=False)
                rates[p].append(batch * steps / (time.perf_counter() - t0))
        med = {p: statistics.median(v) for p, v in rates.items()}
        act = {p: activations(models[p], batch) for p in ("float32", "mixed_bfloat16")}
        vs = (f"; Keras 3 (TensorFlow) mixed_bfloat16 {med['keras']:.0f} samples/s, boundfit's mixed / Keras's "
              f"{med['mixed_bfloat16'] / med['keras']:.2f}x" if "keras" in med else "")
        print(f"{name} (batch {batch}): float32 {med['float32']:.0f} samples/s, mixed_bfloat16 "
              f"{med['mixed_bfloat16']:.0f} samples/s, ratio {med['mixed_bfloat16'] / med['float32']:.2f}x{vs}; "
              f"activations {act['float32'] / 2**20:.0f} -> {act['mixed_bfloat16'] / 2**20:.0f} MiB "
              f"({act['mixed_bfloat16'] / act['float32']:.0%})")
    big = {p: activations(build(cnn, p), 2048) for p in ("float32", "mixed_bfloat16")}
    print(f"seed CNN at batch 2048: activations {big['float32'] / 2**20:.0f} -> {big['mixed_bfloat16'] / 2**20:.0f} MiB "
          f"({big['mixed_bfloat16'] / big['float32']:.0%} of float32)")


if __name__ == "__main__":
    main()
