"""A data-parallel program for tests/test_dist_shuffle_seed.py, fit with the
default shuffle=True: python shuffle_seed.py OUTDIR BATCH SEED. Each rank
writes OUTDIR/rank<r>.json and its final weights OUTDIR/final<r>.npz.

1. Unseeded (each rank's seeds from the OS): a model with zero weights and a
   learning rate of 0 predicts 0, so an epoch's global loss is the mean of
   y**2 over the rows the ranks read: the mean over all rows only when the
   ranks split one permutation between them ("unseeded_loss").
2. bf.utils.set_random_seed(SEED), then seeded_fit: the model trained for 2
   epochs with batch BATCH per rank. The test imports seeded_fit to run the
   same script as one process with batch N * BATCH."""
import json
import os
import sys

import numpy as np

import boundfit as bf
from boundfit import layers

data = np.random.default_rng(7)
X = data.normal(size=(192, 6)).astype(np.float32)
Y = (X[:, :2].sum(axis=1, keepdims=True) + 0.1 * X[:, 2:3]).astype(np.float32)


def seeded_fit(batch, seed):
    """The seeded part of the script: its final weights."""
    bf.utils.set_random_seed(seed)
    m = bf.Sequential([layers.Dense(8, activation="tanh", input_shape=(6,)), layers.Dense(1)])
    m.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
    m.fit(X, Y, batch_size=batch, epochs=2, verbose=0)   # shuffle=True, the default
    return m.get_weights()


def unseeded_loss(batch):
    m = bf.Sequential([layers.Dense(1, kernel_initializer="zeros", input_shape=(6,))])
    m.compile(optimizer=bf.optimizers.SGD(0.0), loss="mse")
    return m.fit(X, Y, batch_size=batch, epochs=1, verbose=0).history["loss"][0]


def main(out, batch, seed):
    bf.distribution.initialize(timeout=float(os.environ.get("TEST_TIMEOUT", "20")))
    bf.distribution.set_distribution(bf.distribution.DataParallel())
    r = bf.distribution.rank()
    rec = {"rank": r, "size": bf.distribution.num_processes(), "unseeded_loss": unseeded_loss(batch)}
    np.savez(os.path.join(out, f"final{r}.npz"), *seeded_fit(batch, seed))
    with open(os.path.join(out, f"rank{r}.json"), "w") as f:
        json.dump(rec, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
