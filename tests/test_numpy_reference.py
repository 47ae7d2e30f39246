"""Forward passes and five training steps against a NumPy reference of the
same model from the same initial weights (SGD, SGD+momentum/nesterov, Adam,
RMSprop), to 1e-5 relative."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers


def softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def ref_grads(w, x, y):
    """Dense(16, relu) -> Dense(3, softmax), sparse CE, mean over the batch (float64)."""
    W1, b1, W2, b2 = w
    h = np.maximum(x @ W1 + b1, 0)
    p = softmax(h @ W2 + b2)
    n = len(x)
    loss = -np.log(p[np.arange(n), y]).mean()
    dz = p.copy()
    dz[np.arange(n), y] -= 1
    dz /= n
    gW2, gb2 = h.T @ dz, dz.sum(0)
    dh = dz @ W2.T * (h > 0)
    return loss, [x.T @ dh, dh.sum(0), gW2, gb2]


class RefOpt:
    def __init__(self, kind, **kw):
        self.kind, self.kw, self.t, self.s = kind, kw, 0, None

    def step(self, w, g):
        k, t = self.kw, self.t + 1
        self.t = t
        if self.s is None:
            self.s = [[np.zeros_like(a) for a in w] for _ in range(2)]
        out = []
        for i, (wi, gi) in enumerate(zip(w, g)):
            if self.kind == "sgd":
                m = self.s[0][i] = k["momentum"] * self.s[0][i] - k["lr"] * gi
                out.append(wi + (k["momentum"] * m - k["lr"] * gi if k["nesterov"] else m))
            elif self.kind == "adam":
                m = self.s[0][i] = self.s[0][i] + (gi - self.s[0][i]) * (1 - 0.9)
                v = self.s[1][i] = self.s[1][i] + (gi * gi - self.s[1][i]) * (1 - 0.999)
                a = k["lr"] * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
                out.append(wi - a * m / (np.sqrt(v) + 1e-7))
            else:
                v = self.s[0][i] = 0.9 * self.s[0][i] + 0.1 * gi * gi
                out.append(wi - k["lr"] * gi / np.sqrt(v + 1e-7))
        return out


def model():
    m = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)), layers.Dense(3, activation="softmax")])
    return m


def data():
    rng = np.random.default_rng(7)
    return rng.standard_normal((64, 10)).astype(np.float32), rng.integers(0, 3, 64)


def test_forward_matches_numpy():
    m = model()
    x, _ = data()
    W1, b1, W2, b2 = m.get_weights()
    b1 += 0.1
    m.set_weights([W1, b1, W2, b2])
    ref = softmax(np.maximum(x @ W1 + b1, 0) @ W2 + b2)
    np.testing.assert_allclose(m.predict(x, verbose=0), ref, rtol=1e-5, atol=1e-6)


def test_initial_weights_follow_keras_initializers():
    m = bf.Sequential([layers.Dense(300, input_shape=(200,))])
    W, b = m.get_weights()
    limit = np.sqrt(6 / 500)
    assert np.abs(W).max() <= limit and np.abs(W).max() > 0.95 * limit
    assert abs(W.mean()) < 0.01 * limit and abs(W.std() - limit / np.sqrt(3)) < 0.02 * limit
    assert not b.any()


@pytest.mark.parametrize("opt,ref", [
    (bf.optimizers.SGD(learning_rate=0.1), RefOpt("sgd", lr=0.1, momentum=0.0, nesterov=False)),
    (bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), RefOpt("sgd", lr=0.05, momentum=0.9, nesterov=False)),
    (bf.optimizers.SGD(learning_rate=0.05, momentum=0.9, nesterov=True), RefOpt("sgd", lr=0.05, momentum=0.9, nesterov=True)),
    (bf.optimizers.Adam(learning_rate=0.01), RefOpt("adam", lr=0.01)),
    (bf.optimizers.RMSprop(learning_rate=0.01), RefOpt("rmsprop", lr=0.01)),
])
def test_five_steps_match_numpy_reference(opt, ref):
    m = model()
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = data()
    w = [a.astype(np.float64) for a in m.get_weights()]
    losses = []
    for s in range(5):
        xb, yb = x[16 * s % 64:16 * s % 64 + 16], y[16 * s % 64:16 * s % 64 + 16]
        loss, g = ref_grads(w, xb.astype(np.float64), yb)
        losses.append(loss)
        w = ref.step(w, g)
    for s in range(5):
        xb, yb = x[16 * s % 64:16 * s % 64 + 16], y[16 * s % 64:16 * s % 64 + 16]
        hist = m.fit(xb, yb, batch_size=16, epochs=1, shuffle=False, verbose=0)
        assert abs(hist.history["loss"][0] - losses[s]) <= 1e-5 * max(1, abs(losses[s]))
    for a, b in zip(m.get_weights(), w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
