"""What the PyDataset worker tests (threads and processes) share: the data and the model they train."""

import numpy as np

import boundfit as bf
from boundfit import layers

X = np.random.default_rng(0).standard_normal((320, 16)).astype(np.float32)
Y = X[:, :1] * 2.0


def small_model():
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Dense(8, activation="relu", input_shape=(16,)), layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    return m
