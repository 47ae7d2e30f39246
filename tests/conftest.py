"""Shared fixtures: a fixed seed per test, a device memory limit, and small reference helpers."""

import numpy as np
import pytest

import boundfit as bf


@pytest.fixture(autouse=True)
def _seed():
    bf.utils.set_random_seed(1234)
    yield


@pytest.fixture
def device_limit():
    """Call it with a device memory limit ("8MiB", bytes); "auto" again after the test."""
    def set_(v):
        bf.set_memory_limit(device=v)
    yield set_
    bf.set_memory_limit(device="auto")


def n_samples(x):
    """Samples in x: an array, or a list / tuple / dict of arrays (one per model input)."""
    if isinstance(x, dict):
        x = list(x.values())
    return len(x[0]) if isinstance(x, (list, tuple)) else len(x)


def numeric_loss(model, x, y):
    return model.evaluate(x, y, batch_size=n_samples(x), verbose=0, return_dict=True)["loss"]


def engine_gradient(model, x, y):
    """Gradient of the mean loss on (x, y) as the engine computes it: one SGD
    step with learning rate 1 and no momentum moves the weights by -grad."""
    w0 = model.get_weights()
    opt, loss = model.optimizer, model.loss
    metrics = dict(metrics=model._metrics_arg, weighted_metrics=model._weighted_metrics_arg)
    model.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss=loss, **metrics)
    model.fit(x, y, batch_size=n_samples(x), epochs=1, shuffle=False, verbose=0)
    w1 = model.get_weights()
    model.set_weights(w0)
    model.compile(optimizer=opt, loss=loss, **metrics)
    return [a.astype(np.float64) - b for a, b in zip(w0, w1)]
