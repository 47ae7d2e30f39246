"""An Embedding's table given before the model exists, as the keras.io
pretrained-word-embeddings example does (build(), set_weights(), or the
weights= argument, with trainable=False): the model starts from it, keeps it
frozen through fit, predicts as Keras 3 does with the same table, and bad
tables are refused naming the layer."""

import numpy as np
import pytest

import boundfit as bf

import keras_ref


def _table(n=30, d=6, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _model(M, emb):
    ids = M.Input(shape=(12,), dtype="int64")
    x = emb(ids)
    x = M.layers.Conv1D(4, 3, activation="relu")(x)
    x = M.layers.GlobalMaxPooling1D()(x)
    return M.Model(ids, M.layers.Dense(3, activation="softmax")(x))


@pytest.mark.parametrize("how", ["build_then_set_weights", "weights_argument"])
def test_a_table_set_before_the_model_is_used_and_kept_frozen(how):
    table = _table()
    given = table.copy()
    if how == "weights_argument":
        emb = bf.layers.Embedding(30, 6, trainable=False, weights=[table])
    else:
        emb = bf.layers.Embedding(30, 6, trainable=False)
        emb.build((1,))
        assert emb.built
        emb.set_weights([table])
    np.testing.assert_array_equal(emb.get_weights()[0], table)
    model = _model(bf, emb)
    np.testing.assert_array_equal(model.layers[1].get_weights()[0], table)
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 30, (32, 12)), rng.integers(0, 3, 32)
    model.compile("adam", "sparse_categorical_crossentropy")
    before = model.get_weights()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    np.testing.assert_array_equal(emb.get_weights()[0], table)          # frozen
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))  # the rest trained
    np.testing.assert_array_equal(table, given)                          # the caller's array untouched


def test_predictions_match_keras_with_the_same_pretrained_table():
    keras = keras_ref.load()
    table = _table()
    kemb = keras.layers.Embedding(30, 6, trainable=False)
    kemb.build((1,))
    kemb.set_weights([table])
    bemb = bf.layers.Embedding(30, 6, trainable=False)
    bemb.build((1,))
    bemb.set_weights([table])
    km, bm = _model(keras, kemb), _model(bf, bemb)
    w = km.get_weights()
    np.testing.assert_array_equal(w[0], table)
    bm.set_weights(w)
    x = np.random.default_rng(2).integers(0, 30, (8, 12))
    np.testing.assert_allclose(bm.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_bad_tables_are_refused_naming_the_layer():
    emb = bf.layers.Embedding(30, 6, name="words")
    with pytest.raises(ValueError, match=r"words.*\(30, 6\)"):
        emb.set_weights([np.zeros((30, 5), np.float32)])
    with pytest.raises(ValueError, match="words.*1 weight"):
        emb.set_weights([_table(), _table()])
    with pytest.raises(ValueError, match=r"\(30, 6\)"):
        bf.layers.Embedding(30, 6, weights=np.zeros((6, 30), np.float32))
    assert emb.get_weights() == []  # nothing was kept
