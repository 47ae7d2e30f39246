"""Keras 3 as the reference implementation, on its JAX backend (CPU).

`keras = keras_ref.load()` inside a test returns the keras module, or skips
the test with the reason when Keras 3 or JAX is not installed. The backend is
chosen before the first import, so nothing here needs TensorFlow."""

import os

import pytest


def load():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import keras
    except Exception as e:  # ImportError, or a backend that fails to load
        pytest.skip(f"Keras 3 on JAX is not available: {e!r}")
    if not keras.__version__.startswith("3") or keras.backend.backend() != "jax":
        pytest.skip(f"need Keras 3 on the JAX backend, got {keras.__version__} on {keras.backend.backend()}")
    return keras
