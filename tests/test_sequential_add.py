"""Sequential.add / build keep what was built: the layers built before keep
their weights (Keras 3 does the same), a layer the graph or the engine refuses
leaves the model exactly as it was (Keras 3 leaves it unbuilt with the layer
appended; here the failed add is undone), and the refused layer stays usable."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.runtime import budget

import keras_ref


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_add_keeps_the_weights_of_layers_already_built_as_keras_does():
    keras = keras_ref.load()
    km = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    k_before = km.layers[0].get_weights()
    km.add(keras.layers.Dense(1))
    _same(km.layers[0].get_weights(), k_before)      # Keras 3: the first Dense keeps its kernel and bias

    model = bf.Sequential([layers.Input((4,)), layers.Dense(3)])
    before = model.layers[0].get_weights()
    model.add(layers.Dense(1))
    _same(model.layers[0].get_weights(), before)
    assert [w.shape for w in model.get_weights()] == [w.shape for w in km.get_weights()]


def test_add_after_fit_keeps_the_trained_weights_and_trains_on():
    model = bf.Sequential([layers.Input((4,)), layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.arange(32, dtype=np.float32).reshape(8, 4) / 32
    model.fit(x, np.ones((8, 3), np.float32), epochs=2, verbose=0)
    trained = model.get_weights()
    model.add(layers.Dense(2))
    _same(model.get_weights()[:2], trained)
    h = model.fit(x, np.ones((8, 2), np.float32), epochs=1, verbose=0)   # still compiled
    assert np.isfinite(h.history["loss"][0])
    assert not np.array_equal(model.get_weights()[0], trained[0])


def test_failed_add_leaves_the_model_exactly_as_before():
    model = bf.Sequential([layers.Input((4,)), layers.Dense(3), layers.Dense(2)])
    before, names = model.get_weights(), [l.name for l in model.layers]
    inbound = [len(l._inbound) for l in model.layers]
    conv = layers.Conv2D(2, 3)
    with pytest.raises(ValueError, match=r"conv2d\w* expects input of rank 3 \(H, W, C\) per sample, got rank 1 "
                                         r"\(called on \(None, 2\)\)"):
        model.add(conv)
    assert [l.name for l in model.layers] == names and model.built
    assert [len(l._inbound) for l in model.layers] == inbound
    _same(model.get_weights(), before)
    _same(model.layers[0].get_weights(), before[:2])
    out = model.predict(np.ones((2, 4), np.float32), verbose=0)
    want = (np.ones((2, 4)) @ before[0] + before[1]) @ before[2] + before[3]
    np.testing.assert_allclose(out, want, rtol=1e-5)
    assert not conv.built and not conv._inbound     # the refused layer is as it came: usable elsewhere
    assert bf.Sequential([layers.Input((8, 8, 1)), conv]).output_shape == (None, 6, 6, 2)


def test_failed_build_of_a_new_input_shape_keeps_the_model():
    model = bf.Sequential([layers.Input((4,)), layers.Dense(3)])
    before = model.get_weights()
    with pytest.raises(ValueError, match=r"layer 'dense\w*' was built for inputs with last dimension 4"):
        model.build((None, 5))
    assert model.input_shape == (None, 4)
    _same(model.get_weights(), before)
    model.add(layers.Dense(1))                         # built on (None, 4) still
    assert model.output_shape == (None, 1)
    _same(model.get_weights()[:2], before)


def test_add_refused_by_the_host_budget_keeps_the_model_and_adds_after():
    model = bf.Sequential([layers.Input((4,)), layers.Dense(40000)])
    before = model.get_weights()
    budget.set_memory_limit(host="64MiB")
    try:
        with pytest.raises(bf.MemoryBudgetError, match=r"dense_\w+/kernel of shape \(40000, 40000\)"):
            model.add(layers.Dense(40000))
    finally:
        budget.set_memory_limit(host="auto")
    assert len(model.layers) == 1
    _same(model.get_weights(), before)
    model.add(layers.Dense(1))                         # the next add goes on from the same weights
    _same(model.get_weights()[:2], before)


def test_variable_length_model_keeps_weights_across_add_after_fit():
    model = bf.Sequential([layers.Input((None, 3)), layers.LSTM(4)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 5, 3), np.float32), np.ones((4, 4), np.float32), verbose=0)
    trained = model.layers[0].get_weights()
    model.add(layers.Dense(1))
    _same(model.layers[0].get_weights(), trained)
    h = model.fit(np.ones((4, 6, 3), np.float32), np.ones((4, 1), np.float32), verbose=0)
    assert np.isfinite(h.history["loss"][0])
