"""gelu's vectorized CPU loops (csrc/cpu/act_more.c) against the exact
function in float64: forward and gradient to a few float32 ulps across
[-8, 8], the negative tail included (where 1 + erff(x/sqrt2) loses its
relative accuracy; Keras comparisons are in test_elementwise_layers.py)."""

import math

import numpy as np

import boundfit as bf
from boundfit import layers

X = np.linspace(-8.0, 8.0, 2001).astype(np.float32)


def exact(x):
    x = x.astype(np.float64)
    phi = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x])
    return x * phi, phi + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def test_gelu_forward_matches_float64():
    m = bf.Sequential([layers.Input((len(X),)), layers.Activation("gelu")])
    got = m.predict(X[None], verbose=0)[0].astype(np.float64)
    want, _ = exact(X)
    # 4e-6 relative: the erfc's own error (1.2e-7) plus float32 rounding of
    # exp's argument (up to ~35 in the tail, so ~2e-6 of the result); scalar
    # 1 + erff(x/sqrt2) was 1e-5 off at x = -3 and far worse beyond
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=1e-37)


def test_gelu_gradient_matches_float64():
    n = len(X)
    m = bf.Sequential([layers.Input((n,)), layers.Dense(n), layers.Activation("gelu")])
    m.compile(optimizer="sgd", loss="mse")
    m.set_weights([np.eye(n, dtype=np.float32), np.zeros(n, np.float32)])
    from conftest import engine_gradient
    g = engine_gradient(m, X[None], np.zeros((1, n), np.float32))
    val, der = exact(X)
    want = 2.0 / n * val * der  # d mean(gelu(x)^2) / d bias
    # gelu' = Phi + x pdf cancels near x = -0.75: error scaled by its terms
    scale = 2.0 / n * np.abs(val) * (np.abs(der) + np.abs(X) * np.exp(-0.5 * X.astype(np.float64) ** 2))
    assert np.all(np.abs(g[1] - want) <= 8e-6 * scale + 1e-37)
