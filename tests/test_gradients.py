"""Engine gradients against central finite differences of the engine's own
loss, for every activation, every loss (with and without from_logits) and
bias / no-bias Dense layers."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import directional_check



def make(act_hidden, act_out, out_units, loss, use_bias=True):
    m = bf.Sequential([layers.Dense(7, activation=act_hidden, use_bias=use_bias, input_shape=(5,)),
                       layers.Dense(out_units, activation=act_out, use_bias=use_bias)])
    m.compile(optimizer="sgd", loss=loss)
    return m


@pytest.mark.parametrize("act", ["linear", "relu", "sigmoid", "tanh", "softmax"])
def test_hidden_activation_gradients_match_finite_differences(act):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)
    directional_check(make(act, "linear", 3, "mse"), x, y)


@pytest.mark.parametrize("loss,act_out,from_logits", [
    ("mse", "linear", False), ("mse", "sigmoid", False),
    ("binary_crossentropy", "sigmoid", False), ("binary_crossentropy", "linear", True),
    ("categorical_crossentropy", "softmax", False), ("categorical_crossentropy", "linear", True),
    ("sparse_categorical_crossentropy", "softmax", False), ("sparse_categorical_crossentropy", "linear", True),
    ("categorical_crossentropy", "sigmoid", False),
])
def test_loss_gradients_match_finite_differences(loss, act_out, from_logits):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((12, 5)).astype(np.float32)
    k = 4
    if loss == "sparse_categorical_crossentropy":
        y = rng.integers(0, k, 12)
    elif loss == "binary_crossentropy":
        y = (rng.random((12, k)) > 0.5).astype(np.float32)
    elif loss == "categorical_crossentropy":
        y = np.eye(k, dtype=np.float32)[rng.integers(0, k, 12)]
    else:
        y = rng.random((12, k)).astype(np.float32)
    lobj = bf.losses.get(loss)
    if from_logits:
        lobj = type(lobj)(from_logits=True)
    directional_check(make("tanh", act_out, k, lobj), x, y)


def test_dense_without_bias_gradients():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    directional_check(make("tanh", "linear", 2, "mse", use_bias=False), x, y)


def test_dense_on_rank3_input_acts_on_last_axis():
    m = bf.Sequential([layers.Dense(3, activation="tanh", input_shape=(4, 5)), layers.Flatten(), layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 4, 5)).astype(np.float32)
    w = m.get_weights()
    ref = (np.tanh(x @ w[0] + w[1]).reshape(6, -1) @ w[2] + w[3])
    np.testing.assert_allclose(m.predict(x, verbose=0), ref, rtol=1e-5, atol=1e-5)
    directional_check(m, x, rng.standard_normal((6, 2)).astype(np.float32))
