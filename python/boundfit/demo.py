"""python -m boundfit demo: train a small network on the 8x8 handwritten digits
shipped in the package (boundfit.datasets.digits), printing the memory plan
first. Needs nothing beyond boundfit's own dependencies."""

import sys
import time

import numpy as np

import boundfit as bf
from boundfit import layers
from boundfit.datasets import digits

EPOCHS = 30


def _scaled(x):
    """(n, 8, 8) pixels 0..16 -> (n, 64) float32 in [0, 1]"""
    return (x.reshape(len(x), 64) / 16.0).astype(np.float32)


def main(argv=()):
    bf.utils.set_random_seed(0)
    (xtr, ytr), (xte, yte) = digits.load_data()
    xtr, xte = _scaled(xtr), _scaled(xte)
    print(f"data: the 8x8 handwritten digits (UCI, CC BY 4.0); train {len(xtr)}, test {len(xte)}\n")
    model = bf.Sequential([
        layers.Dense(128, activation="relu", input_shape=(64,)),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=bf.optimizers.Adam(learning_rate=3e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
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
    model.fit(xtr, ytr, batch_size=32, epochs=EPOCHS, validation_split=0.1, verbose=2)
    loss, acc = model.evaluate(xte, yte, verbose=0)
    print(f"\ntest accuracy {acc:.4f}, loss {loss:.4f} ({(time.perf_counter() - t0) * 1e3:.0f} ms for {EPOCHS} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
