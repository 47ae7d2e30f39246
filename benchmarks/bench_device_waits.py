"""How often a training step makes the host wait for the device, counted on
device="emu" (the CPU's kernels behind the device interface; it counts the
calls that on a GPU block the host: reads to the host, sync, upload checks).
Every wait drains the GPU's queue, so for small models this count, not the
kernels, sets the step time. Run with no arguments; no GPU needed.

    python benchmarks/bench_device_waits.py
"""

import numpy as np

import boundfit as bf
from boundfit import _core, layers


def waits_per_step(build, x, y, batch, loss):
    m = build()
    m.compile(optimizer="adam", loss=loss, metrics=["accuracy"])
    m.fit(x, y, batch_size=batch, epochs=1, verbose=0, device="emu")  # warm-up: chunk sizes settle
    before = _core.emu_waits()
    m.fit(x, y, batch_size=batch, epochs=1, verbose=0, device="emu")
    return (_core.emu_waits() - before) / (len(x) // batch)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3200, 100)).astype(np.float32)
    cases = [
        ("MLP 100-64-1, mse, batch 32",
         lambda: bf.Sequential([layers.Dense(64, activation="relu", input_shape=(100,)), layers.Dense(1)]),
         x, rng.standard_normal((3200, 1)).astype(np.float32), 32, "mse"),
        ("MLP 100-256-256-10, sparse CE, batch 32",
         lambda: bf.Sequential([layers.Dense(256, activation="relu", input_shape=(100,)),
                                layers.Dense(256, activation="relu"), layers.Dense(10, activation="softmax")]),
         x, rng.integers(0, 10, 3200), 32, "sparse_categorical_crossentropy"),
        ("CNN 8x8x1 conv-BN-pool-dense, sparse CE, batch 64",
         lambda: bf.Sequential([layers.Conv2D(8, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 1)),
                                layers.BatchNormalization(), layers.MaxPooling2D((2, 2)), layers.Flatten(),
                                layers.Dense(10, activation="softmax")]),
         rng.standard_normal((640, 8, 8, 1)).astype(np.float32), rng.integers(0, 10, 640), 64,
         "sparse_categorical_crossentropy"),
    ]
    print("host waits on the device per training step (device='emu')")
    for name, build, xs, ys, batch, loss in cases:
        print(f"  {name:52s} {waits_per_step(build, xs, ys, batch, loss):5.2f}")


if __name__ == "__main__":
    main()
