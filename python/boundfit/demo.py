"""python -m boundfit demo: train a small network on scikit-learn's digits (or
synthetic data when scikit-learn is absent), printing the memory plan first."""

import sys
import time

import numpy as np

import boundfit as bf
from boundfit import layers


def _data():
    try:
        from sklearn.datasets import load_digits
        d = load_digits()
        x, y = (d.data / 16.0).astype(np.float32), d.target
        name = "scikit-learn digits (1,797 8x8 images)"
    except ImportError:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((2000, 64)).astype(np.float32)
        y = (x[:, :10].argmax(1)).astype(np.int64)
        name = "synthetic data (install scikit-learn for the digits)"
    rng = np.random.default_rng(42)
    idx = rng.permutation(len(x))
    cut = int(0.8 * len(x))
    return name, x[idx[:cut]], y[idx[:cut]], x[idx[cut:]], y[idx[cut:]]


def main(argv=()):
    bf.utils.set_random_seed(0)
    name, xtr, ytr, xte, yte = _data()
    print(f"data: {name}; train {len(xtr)}, test {len(xte)}\n")
    model = bf.Sequential([
        layers.Dense(64, activation="relu", input_shape=(64,)),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.summary(batch_size=32)
    print()
    print("a plan that cannot fit a 1 MiB budget:")
    big = model.estimate_memory(batch_size=8192, memory_limit="1MiB")
    print(big)
    try:
        model.fit(xtr, ytr, batch_size=8192, epochs=1, memory_limit="1MiB", verbose=0)
    except bf.MemoryBudgetError as e:
        print(f"\nfit refused before the first step: {e}\n")
    t0 = time.perf_counter()
    model.fit(xtr, ytr, batch_size=32, epochs=20, validation_split=0.1, verbose=2)
    loss, acc = model.evaluate(xte, yte, verbose=0)
    print(f"\ntest accuracy {acc:.4f}, loss {loss:.4f} ({(time.perf_counter() - t0) * 1e3:.0f} ms for 20 epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
