"""sample_weight of shape (batch, T) for a loss with one value per step
(temporal weights, models/temporal_weights.py): built-in and custom losses,
with and without a step mask, fixed and variable length, against Keras 3
(JAX, recorded): losses per epoch, weights after two epochs, evaluate."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from helpers.keras_recorded import case


def tagger(M, mask, T=5):
    ids = M.Input(shape=(T,), dtype="int32")
    x = M.layers.Embedding(20, 6, mask_zero=mask)(ids)
    x = M.layers.GRU(4, return_sequences=True)(x)
    return M.Model(ids, M.layers.Dense(3)(x))


def loss_of(M, kind):
    if kind == "builtin":
        return M.losses.SparseCategoricalCrossentropy(from_logits=True)
    return lambda t, p: M.ops.mean(M.ops.square(p - M.ops.one_hot(M.ops.cast(t, "int32"), 3)), axis=-1)


def data(T=5, n=6, seed=6):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 20, (n, T)).astype(np.int32)
    x[:, T - 2:] = 0                 # padded (masked where the Embedding masks)
    y = rng.integers(0, 3, (n, T)).astype(np.float32)
    return x, y, rng.uniform(0.5, 2.0, (n, T)).astype(np.float32)


@pytest.mark.parametrize("kind", ["builtin", "custom"])
@pytest.mark.parametrize("mask", [False, True])
def test_temporal_sample_weights_train_as_keras(kind, mask):
    x, y, sw = data()

    def keras_side():
        keras = keras_ref.load()
        km = tagger(keras, mask)
        w0 = km.get_weights()
        km.compile(keras.optimizers.Adam(0.02), loss=loss_of(keras, kind))
        h = km.fit(x, y, sample_weight=sw, batch_size=3, epochs=2, shuffle=False, verbose=0,
                   validation_data=(x[:3], y[:3], sw[:3]))
        return {"w0": w0, "history": h.history, "w": km.get_weights(),
                "evaluate": km.evaluate(x, y, sample_weight=sw, batch_size=3, verbose=0)}
    k = case(keras_side)
    bm = tagger(bf, mask)
    bm.set_weights(k["w0"])
    bm.compile(bf.optimizers.Adam(0.02), loss=loss_of(bf, kind))
    h = bm.fit(x, y, sample_weight=sw, batch_size=3, epochs=2, shuffle=False, verbose=0,
               validation_data=(x[:3], y[:3], sw[:3]))
    for key, want in k["history"].items():
        np.testing.assert_allclose(h.history[key], want, rtol=1e-5, err_msg=key)
    for a, b in zip(bm.get_weights(), k["w"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bm.evaluate(x, y, sample_weight=sw, batch_size=3, verbose=0), k["evaluate"],
                               rtol=1e-5)


@pytest.mark.parametrize("kind", ["builtin", "custom"])
def test_temporal_sample_weights_on_bucketed_lengths_match_keras(kind):
    """a variable-length tagger fed (x, y, sample_weight) batches of several lengths"""
    items = [data(T, 4, seed) for T, seed in ((3, 1), (5, 2), (4, 3))]

    def source(M):
        class Buckets(M.utils.PyDataset):
            def __len__(self):
                return len(items)

            def __getitem__(self, i):
                return items[i]
        return Buckets()

    def keras_side():
        keras = keras_ref.load()
        km = tagger(keras, True, None)
        w0 = km.get_weights()
        km.compile(keras.optimizers.Adam(0.02), loss=loss_of(keras, kind))
        h = km.fit(source(keras), epochs=2, shuffle=False, verbose=0)
        return {"w0": w0, "loss": h.history["loss"], "w": km.get_weights()}
    k = case(keras_side)
    bm = tagger(bf, True, None)
    bm.set_weights(k["w0"])
    bm.compile(bf.optimizers.Adam(0.02), loss=loss_of(bf, kind))
    h = bm.fit(source(bf), epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], k["loss"], rtol=1e-5)
    for a, b in zip(bm.get_weights(), k["w"], strict=True):   # (Adam's steps on an id's tiny gradients: the
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=3e-6)  # cross-entropy's float32 rounding, ~2e-6)


def test_temporal_sample_weights_keras_cannot_apply_are_refused_by_name():
    x, y, sw = data()
    bm = tagger(bf, False)
    bm.compile("adam", loss=lambda t, p: bf.ops.mean(bf.ops.square(p), axis=(1, 2)))   # one value per sample
    with pytest.raises(ValueError, match="values of shape \\(None,\\).*temporal weights.*one value per step"):
        bm.fit(x, y, sample_weight=sw, verbose=0)
    bm.compile("adam", loss=loss_of(bf, "builtin"), weighted_metrics=["accuracy"])
    with pytest.raises(ValueError, match="weighted_metrics with sample_weight of shape \\(batch, T\\)"):
        bm.fit(x, y, sample_weight=sw, verbose=0)
    bm.compile("adam", loss=loss_of(bf, "builtin"))
    with pytest.raises(bf.errors.DataError, match="sample_weight has shape \\(6, 4\\)"):
        bm.fit(x, y, sample_weight=sw[:, :4], verbose=0)
