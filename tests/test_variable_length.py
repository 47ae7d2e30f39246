"""Variable-length inputs: keras.Input(shape=(None,)) and (None, features).
The graph is symbolic in the length; each fit / evaluate / predict builds the
engine for the shapes its data brings (weights and optimizer state carry over)
and plans that run exactly. Checked against Keras 3 with the same weights:
predictions at several lengths, a step-by-step decoding loop, two fits at two
lengths (the optimizer state continues); files with a variable-length input
open in both; the errors name the layer or the data."""

import numpy as np
import pytest

import boundfit as bf
from boundfit.errors import DataError

import keras_ref


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def text_model(M, vocab=40):
    ids = M.Input(shape=(None,), dtype="int32")
    x = M.layers.Embedding(vocab, 8)(ids)
    x = M.layers.Bidirectional(M.layers.LSTM(6, return_sequences=True))(x)
    x = M.layers.LSTM(5)(x)
    return M.Model(ids, M.layers.Dense(1, activation="sigmoid")(x))


def char_model(M, feats=7):
    """keras.io's character-level text generation shape: one-hot steps in, next-character softmax out."""
    inp = M.Input(shape=(None, feats))
    x = M.layers.LSTM(9)(inp)
    return M.Model(inp, M.layers.Dense(feats, activation="softmax")(x))


def pair(keras, build):
    km, bm = build(keras), build(bf)
    bm.set_weights(km.get_weights())   # before any data: the weights do not depend on the length
    return km, bm


def test_predictions_at_several_lengths_match_keras(keras):
    km, bm = pair(keras, text_model)
    assert bm.input_shape == (None, None) and bm.output_shape == (None, 1)
    rng = np.random.default_rng(0)
    for T in (20, 7, 1, 33):
        x = rng.integers(0, 40, (9, T)).astype(np.int32)
        np.testing.assert_allclose(bm.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_a_step_by_step_decoding_loop_matches_keras(keras):
    km, bm = pair(keras, char_model)
    seq_k = seq_b = np.eye(7, dtype=np.float32)[[3]][None]          # (1, 1, 7): the seed character
    for _ in range(5):
        pk, pb = km.predict(seq_k, verbose=0), bm.predict(seq_b, verbose=0)
        np.testing.assert_allclose(pb, pk, rtol=1e-5, atol=1e-6)
        nxt = np.eye(7, dtype=np.float32)[[int(np.argmax(pk[0]))]][None]
        seq_k = seq_b = np.concatenate([seq_k, nxt], axis=1)


def test_two_fits_at_two_lengths_continue_the_optimizer_as_keras(keras):
    km, bm = pair(keras, text_model)
    rng = np.random.default_rng(1)
    runs = [(rng.integers(0, 40, (32, T)).astype(np.int32), rng.integers(0, 2, (32, 1)).astype(np.float32))
            for T in (12, 5)]
    km.compile(keras.optimizers.Adam(0.01), "binary_crossentropy")
    bm.compile(bf.optimizers.Adam(0.01), "binary_crossentropy")
    for x, y in runs:
        hk = km.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        hb = bm.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-4)
    assert int(bm.optimizer.iterations) == int(km.optimizer.iterations) == 4
    for a, b in zip(km.get_weights(), bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=2e-5)


def test_each_length_is_planned_exactly():
    m = text_model(bf)
    m.compile("adam", "binary_crossentropy")
    rng = np.random.default_rng(2)
    engine_bytes = []
    for T in (10, 30):
        x, y = rng.integers(0, 40, (48, T)), rng.integers(0, 2, (48, 1)).astype(np.float32)
        m.fit(x, y, batch_size=16, epochs=1, verbose=0)
        stats = m._last_run_stats
        arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + \
            sum(s["run_high_water"] for s in stats)
        planned = sum(e.bytes for e in m._last_plan.breakdown if e.category not in ("runtime", "measured"))
        assert planned == arenas, T
        engine_bytes.append(planned)
    assert engine_bytes[1] > engine_bytes[0]   # longer sequences, larger activations


def test_a_variable_length_model_file_opens_in_both(keras, tmp_path):
    km, bm = pair(keras, text_model)
    x = np.random.default_rng(3).integers(0, 40, (4, 9)).astype(np.int32)
    want = km.predict(x, verbose=0)
    bm.save(tmp_path / "ours.keras")
    km.save(tmp_path / "theirs.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    assert theirs.input_shape == (None, None)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    assert ours.input_shape == (None, None)
    for T in (9, 3):
        np.testing.assert_allclose(ours.predict(x[:, :T], verbose=0), km.predict(x[:, :T], verbose=0),
                                   rtol=1e-5, atol=1e-6)


def test_variable_length_errors_name_the_layer_or_the_data():
    ids = bf.Input(shape=(None,))
    flat = bf.layers.Flatten()(bf.layers.Embedding(10, 4)(ids))
    with pytest.raises(ValueError, match="dense.*known last dimension"):
        bf.layers.Dense(3, name="dense")(flat)
    with pytest.raises(ValueError, match="positive ints or None"):
        bf.Input(shape=(0, 3))
    m = text_model(bf)
    m.compile("adam", "binary_crossentropy")
    x, y = np.zeros((8, 6), np.int32), np.zeros((8, 1), np.float32)
    with pytest.raises(DataError, match="pad_sequences"):
        m.fit(x, y, validation_data=(np.zeros((4, 5), np.int32), y[:4]), verbose=0)
    with pytest.raises(ValueError, match=r"input 0 must have shape \(None, None\)"):
        m.predict(np.zeros((2, 3, 4), np.int32), verbose=0)


def test_a_variable_length_sequential_runs_saves_and_matches_keras(keras, tmp_path):
    def build(M):
        return M.Sequential([M.Input((None, 7)), M.layers.LSTM(5), M.layers.Dense(2)])
    km, bm = pair(keras, build)
    x = np.random.default_rng(4).standard_normal((3, 9, 7)).astype(np.float32)
    for T in (9, 2):
        np.testing.assert_allclose(bm.predict(x[:, :T], verbose=0), km.predict(x[:, :T], verbose=0),
                                   rtol=1e-5, atol=1e-6)
    bm.save(tmp_path / "seq.keras")
    theirs = keras.models.load_model(tmp_path / "seq.keras")
    assert theirs.input_shape == (None, None, 7)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
