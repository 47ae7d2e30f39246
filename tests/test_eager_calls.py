"""A layer or a model called on arrays computes at once, as in Keras 3
(python/boundfit/layers/eager.py): the values equal Keras's on the same
weights; the weights the call makes are the layer's in any model built with
it later; training=True runs the training-time computation (dropout,
augmentation: fresh draws per call); the call is planned like any run (a
budget too small refuses it); it leaves the layer without a node, so a
model built from it saves as if the call never happened."""

import numpy as np
import pytest

import boundfit as bf
from helpers.keras_recorded import case
from keras_ref import load

R = np.random.default_rng(0)
X2 = R.standard_normal((3, 6)).astype(np.float32)
X3 = R.standard_normal((2, 5, 4)).astype(np.float32)
X4 = R.standard_normal((2, 7, 7, 3)).astype(np.float32)


def custom(K):
    class Affine(K.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1],), initializer="random_normal", name="w")

        def call(self, x):
            return K.ops.tanh(x * self.w) + 1.0
    return Affine()


CASES = {   # name: (layer maker given the module, input)
    "dense": (lambda K: K.layers.Dense(4, activation="relu"), X2),
    "conv2d": (lambda K: K.layers.Conv2D(2, 3, padding="same"), X4),
    "lstm": (lambda K: K.layers.LSTM(3, return_sequences=True), X3),
    "layernorm": (lambda K: K.layers.LayerNormalization(), X3),
    "add": (lambda K: K.layers.Add(), [X2, 2 * X2]),
    "custom": (custom, X2),
    "sequential": (lambda K: K.Sequential([K.Input((6,)), K.layers.Dense(5), K.layers.Dense(2)]), X2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_layer_or_model_called_on_arrays_gives_keras_values_on_the_same_weights(name):
    make, x = CASES[name]

    def compute():   # Keras's layer called on the arrays: its values and the weights it made
        kl = make(load())
        return np.asarray(kl(x)), kl.get_weights()
    want, weights = case(compute)
    bl = make(bf)
    first = bl(x)
    assert isinstance(first, np.ndarray) and first.shape == want.shape
    bl.set_weights(weights)
    np.testing.assert_allclose(bl(x), want, rtol=1e-5, atol=1e-5)
    assert not getattr(bl, "_inbound", [])   # the call left no node


def test_weights_made_by_an_eager_call_are_the_layers_in_a_model_built_later(tmp_path):
    d = bf.layers.Dense(3)
    y = d(X2)
    inp = bf.Input((6,))
    m = bf.Model(inp, d(inp))
    np.testing.assert_allclose(m.predict(X2, verbose=0), y, rtol=1e-6)
    d.set_weights([np.ones((6, 3), np.float32), np.zeros(3, np.float32)])   # and back: one layer, one set
    np.testing.assert_allclose(d(X2), X2.sum(1, keepdims=True).repeat(3, 1), rtol=1e-5)
    np.testing.assert_allclose(m.predict(X2, verbose=0), X2.sum(1, keepdims=True).repeat(3, 1), rtol=1e-5)
    m.save(tmp_path / "m.keras")   # the model's own call only: node 0 of the layer
    np.testing.assert_allclose(bf.models.load_model(tmp_path / "m.keras").predict(X2, verbose=0),
                               m.predict(X2, verbose=0), rtol=1e-6)


def test_training_true_drops_and_augments_with_fresh_draws_per_call_and_inference_is_the_identity():
    ones = np.ones((64, 32), np.float32)
    d = bf.layers.Dropout(0.25)
    a, b = d(ones, training=True), d(ones, training=True)
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)} and 0.15 < (a == 0).mean() < 0.35
    assert (a != b).any()
    np.testing.assert_array_equal(d(ones), ones)
    np.testing.assert_array_equal(d(ones, training=False), ones)
    x = np.arange(16 * 4, dtype=np.float32).reshape(16, 1, 4, 1)
    flip = bf.layers.RandomFlip("horizontal", seed=3)
    out = flip(x, training=True)
    flipped = np.array([np.array_equal(o, s[:, ::-1]) for o, s in zip(out, x)])
    same = np.array([np.array_equal(o, s) for o, s in zip(out, x)])
    assert (flipped | same).all() and flipped.any() and same.any()
    np.testing.assert_array_equal(flip(x), x)


def test_an_eager_call_is_planned_and_a_budget_too_small_refuses_it_before_computing():
    bf.set_memory_limit(host="2MiB")
    try:
        with pytest.raises(bf.MemoryBudgetError):
            bf.layers.Dense(512)(np.ones((4096, 512), np.float32))
    finally:
        bf.set_memory_limit(host="auto")


def test_what_an_eager_call_cannot_take_raises_naming_it():
    lstm = bf.layers.LSTM(3)
    with pytest.raises(TypeError, match="initial_state"):
        lstm(X3, initial_state=[np.zeros((2, 3), np.float32)] * 2)
    with pytest.raises(ValueError, match="one batch size"):
        bf.layers.Add()([X2, X2[:2]])
    with pytest.raises(ValueError, match="BatchNormalization.*training=True"):
        bf.layers.BatchNormalization()(X2, training=True)


def test_a_subclassed_model_whose_layer_was_called_on_arrays_saves_only_its_own_layers(tmp_path):
    """the eager call's one-layer model is no sublayer: the .keras file holds what it would without the call"""
    class Net(bf.Model):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.d = bf.layers.Dense(2)

        def call(self, x):
            return self.d(x)
    m = Net()
    m.d(X2)   # an eager call first: the layer gets weights and a cached one-layer model
    m(X2)     # and the model called on arrays
    m.compile("sgd", "mse")
    m.fit(X2, np.zeros((3, 2), np.float32), verbose=0)
    from boundfit.saving.keras_graph import keras_layers
    assert keras_layers(m, False) == [m.d]
    m.save_weights(tmp_path / "w.weights.h5")
    m.load_weights(tmp_path / "w.weights.h5")
