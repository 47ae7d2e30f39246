"""Embedding (with masks), SimpleRNN, LSTM, GRU and Bidirectional against
Keras 3 (same weights and batch: outputs, loss, weights after one SGD step),
finite differences, plans equal to the arenas, the emu device path, Keras
files both ways, a text classifier that learns, and every refusal."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import assert_plan_equals_arenas, directional_check_per_array as directional_check, engine_gradient
from helpers.keras_compare import against_keras as compare, close
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file
from keras_ref import load

T, D, U, B, V, E = 6, 3, 4, 5, 12, 3
rng = np.random.default_rng(0)
X = rng.standard_normal((B, T, D)).astype(np.float32)
IDS = rng.integers(1, V, (B, T))
IDS[0, 4:] = 0      # padded at the end
IDS[1, :2] = 0      # padded at the start
IDS[2, :] = 0       # all masked
IDS[3, 2] = 0       # a hole
Y = rng.standard_normal((B, 2)).astype(np.float32)
CELLS = ["SimpleRNN", "LSTM", "GRU"]




def stack(K, Ls):
    """Input (T,D) through every cell: return_sequences, go_backwards with and without it."""
    return K.Sequential([K.Input((T, D)), Ls.SimpleRNN(U, activation="relu", return_sequences=True),
                         Ls.LSTM(U, go_backwards=True, return_sequences=True), Ls.GRU(U, go_backwards=True),
                         Ls.Dense(2)])


def against_keras(build, x, y=Y, rtol=1e-5):
    """Outputs, loss and gradients against Keras 3 (helpers/keras_compare.py)."""
    return compare(build, x, y, rtol)


def masked(K, Ls):
    """Embedding(mask_zero) -> Bidirectional in every merge mode (masked steps
    output 0 there, as Keras) -> a go_backwards GRU (masked steps carry the state)."""
    i = K.Input((T,))
    h = Ls.Embedding(V, E, mask_zero=True)(i)
    h = Ls.Bidirectional(Ls.SimpleRNN(U, return_sequences=True))(h)
    h = Ls.Dropout(0.0)(h)  # passes the mask on
    h = Ls.Bidirectional(Ls.LSTM(U, return_sequences=True), merge_mode="sum")(h)
    h = Ls.Bidirectional(Ls.GRU(U, return_sequences=True), merge_mode="mul")(h)
    h = Ls.Bidirectional(Ls.LSTM(U, return_sequences=True), merge_mode="ave")(h)
    return K.Model(i, Ls.Dense(2)(Ls.GRU(U, go_backwards=True)(h)))




def test_recurrent_layers_match_keras_outputs_loss_and_gradients():
    against_keras(stack, X)


def test_masked_embedding_and_bidirectional_match_keras():
    against_keras(masked, IDS)


def test_wide_lstm_steps_split_by_batch_rows_match_keras():
    """Batch 70, 128 units: the recurrent products and cell math run in three
    uneven blocks of batch rows (23, 23, 24) on the engine's pool, each block
    through all the steps (csrc/cpu/rnn.c row_blocks), forward and backward,
    masked, in both directions."""
    def wide(K, Ls):
        i = K.Input((T,))
        h = Ls.Embedding(V, E, mask_zero=True)(i)
        h = Ls.LSTM(128, return_sequences=True)(h)
        return K.Model(i, Ls.Dense(2)(Ls.LSTM(128, go_backwards=True)(h)))
    r = np.random.default_rng(3)
    ids = r.integers(1, V, (70, T))
    ids[::5, 4:] = 0
    ids[1::7, :2] = 0
    against_keras(wide, ids, r.standard_normal((70, 2)).astype(np.float32))


def test_wide_encoder_decoder_in_row_blocks_passes_states_both_ways_as_keras():
    """The same blocks with an odd number of steps (each block swaps its own
    dh / dc buffers per step; the caller's final swap hands dh0 / dc0 on) and
    states between the layers: the decoder starts from the encoder's h, c and
    sends their gradients back into the encoder's last step."""
    def enc_dec(K, Ls):
        i = K.Input((5,))
        h = Ls.Embedding(V, E, mask_zero=True)(i)
        _, sh, sc = Ls.LSTM(128, return_state=True)(h)
        seq = Ls.LSTM(128, return_sequences=True, go_backwards=True)(h, initial_state=[sh, sc])
        return K.Model(i, Ls.Dense(2)(Ls.GlobalAveragePooling1D()(seq)))
    r = np.random.default_rng(4)
    ids = r.integers(1, V, (64, 5))
    ids[::6, 3:] = 0
    against_keras(enc_dec, ids, r.standard_normal((64, 2)).astype(np.float32))


@pytest.mark.parametrize("cell", CELLS)
def test_gradients_match_finite_differences(cell):
    c = getattr(layers, cell)
    i = bf.Input((T,))
    h = layers.Embedding(V, E, mask_zero=True)(i)
    h = layers.Bidirectional(c(U, return_sequences=True), merge_mode="mul")(h)
    h = c(U, return_sequences=True, go_backwards=True)(h)
    m = bf.Model(i, layers.Dense(2)(layers.Bidirectional(c(U, go_backwards=True))(h)))
    m.compile(optimizer="sgd", loss="mse")
    directional_check(m, IDS, Y)


def test_embedding_gradient_scatters_into_the_rows_used():
    m = bf.Sequential([layers.Input((4,)), layers.Embedding(7, 2), layers.Flatten(), layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    ids = np.array([[1, 1, 3, 0], [3, 5, 5, 5]])
    g = engine_gradient(m, ids, np.ones((2, 1), np.float32))[0]
    assert np.all(g[[2, 4, 6]] == 0) and np.all(np.abs(g[[0, 1, 3, 5]]).sum(1) > 0)
    directional_check(m, ids, np.ones((2, 1), np.float32))


def test_plan_equals_arena_high_water():
    m = masked(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, IDS, Y, 3)


def test_lstm_keeps_exactly_what_backpropagation_needs():
    """One buffer kept from forward to backward per layer: gates (4U) and cells
    (U) per step, plus the states (U) unless the output is the states
    (return_sequences, forward order); backward's scratch is per step only."""
    Tn, Dn, Un, Bn = 50, 8, 16, 32
    m = bf.Sequential([layers.Input((Tn, Dn)), layers.LSTM(Un, return_sequences=True, name="l1"),
                       layers.LSTM(Un, name="l2"), layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    bufs = {b[0]: b[1] for b in m._engine.plan("train", Bn, "cpu", weighted=False)["buffers"]}
    f = 4
    assert bufs["l1 gates and states (kept for backward)"] == f * Bn * Tn * 5 * Un
    assert bufs["l2 gates and states (kept for backward)"] == f * Bn * Tn * 6 * Un
    assert bufs["l1 output"] == f * Bn * Tn * Un and bufs["l2 output"] == f * Bn * Un
    assert bufs["l2 backward workspace"] == f * Bn * 4 * Un  # dh, dh_prev, dc, dc_prev
    assert "l1 forward workspace" not in bufs  # LSTM: gates are computed in place


def test_emu_device_path_trains_as_the_cpu():
    a, b = masked(bf, layers), masked(bf, layers)
    b.set_weights(a.get_weights())
    for m, dev in ((a, "cpu"), (b, "emu")):
        bf.utils.set_random_seed(3)
        m.compile(optimizer="adam", loss="mse")
        m.fit(IDS, Y, batch_size=2, epochs=2, verbose=0, shuffle=False, device=dev)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a.predict(IDS, verbose=0), b.predict(IDS, verbose=0, device="emu"))
    m = stack(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert assert_plan_equals_arenas(m, X, Y, 3, device="emu").device_bytes > 0


def test_text_classifier_learns_synthetic_tokens():
    """Embedding(mask_zero) -> LSTM -> Dense on padded token sequences: is token 3 in it?"""
    r = np.random.default_rng(7)
    n, t = 768, 12
    x = r.integers(4, 20, (n, t))
    y = (r.random(n) < 0.5).astype(np.float32)
    for i in range(n):
        length = r.integers(3, t + 1)
        x[i, length:] = 0
        if y[i]:
            x[i, r.integers(0, length)] = 3
    bf.utils.set_random_seed(1)
    m = bf.Sequential([layers.Input((t,)), layers.Embedding(20, 8, mask_zero=True), layers.LSTM(16),
                       layers.Dense(1, activation="sigmoid")])
    m.compile(optimizer=bf.optimizers.Adam(0.02), loss="binary_crossentropy", metrics=["accuracy"])
    m.fit(x[:640], y[:640], batch_size=32, epochs=12, verbose=0)
    acc = m.evaluate(x[640:], y[640:], verbose=0, return_dict=True)["accuracy"]
    assert acc >= 0.9, acc  # chance is 0.5
    assert_plan_equals_arenas(m, x, y, 32)


def test_keras_files_both_ways(tmp_path):
    def build(K, Ls):  # unrolled: Keras computes eagerly, without compiling
        return K.Sequential([K.Input((T,)), Ls.Embedding(V, E, mask_zero=True),
                             Ls.Bidirectional(Ls.LSTM(U, return_sequences=True, unroll=True), merge_mode="ave"),
                             Ls.GRU(U, go_backwards=True, unroll=True), Ls.Dense(2)])

    mb = build(bf, layers)
    mb.compile(optimizer="adam", loss="mse")
    mb.save(tmp_path / "bf.keras")
    theirs = case(lambda: {"out": np.asarray(load().saving.load_model(tmp_path / "bf.keras")(IDS))},
                  files=[tmp_path / "bf.keras"])
    close(mb.predict(IDS, verbose=0), theirs["out"])

    def save(p):
        keras = load()
        mk2 = build(keras, keras.layers)
        mk2.compile(optimizer="adam", loss="mse")
        mk2.save(p)
        return {"out": np.asarray(mk2(IDS))}
    ref = keras_file(tmp_path / "k.keras", save)
    mb2 = bf.models.load_model(tmp_path / "k.keras")
    close(ref["out"], mb2.predict(IDS, verbose=0))
    assert [type(l).__name__ for l in mb2.layers] == ["Embedding", "Bidirectional", "GRU", "Dense"]


def emb_model():
    m = bf.Sequential([layers.Input((4,)), layers.Embedding(5, 2), layers.Flatten(), layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    return m


@pytest.mark.parametrize("bad", [5, -1, 2.5])
def test_out_of_range_id_is_a_data_error_naming_batch_and_value(bad):
    m = emb_model()
    w = m.get_weights()
    x = np.ones((8, 4), np.float32)
    x[6, 2] = bad
    with pytest.raises(bf.DataError, match=rf"batch 1: id {bad:g} at row 2 \(sample 6 of the data\), position 2 .*input_dim=5"):
        m.fit(x, np.ones((8, 1)), batch_size=4, epochs=1, verbose=0, shuffle=False)
    with pytest.raises(bf.DataError, match=rf"id {bad:g} at row 2 \(sample 6 of the data\), position 2"):
        m.predict(x, batch_size=4, verbose=0)
    x[6, 2], x[1, 3] = 1, bad
    w = m.get_weights()
    with pytest.raises(bf.DataError, match=rf"batch 0: id {bad:g} at row 1 \(sample 1 of the data\), position 3"):
        m.fit(x, np.ones((8, 1)), batch_size=4, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(w, m.get_weights()):
        np.testing.assert_array_equal(a, b)  # the bad batch's update was not applied


@pytest.mark.parametrize("make,match", [
    (lambda: layers.GRU(4, dropout=1.0), "dropout"),
    (lambda: layers.LSTM(4, recurrent_dropout=-0.1), "recurrent_dropout"),
    (lambda: layers.SimpleRNN(4, dropout="0.2"), "dropout"),
    (lambda: layers.LSTM(4, dropout=0.1, seed=1.5), "seed"),
    (lambda: layers.Bidirectional(layers.LSTM(3, dropout=0.1),
                                  backward_layer=layers.LSTM(3, go_backwards=True)), "backward_layer"),
    (lambda: layers.GRU(4, reset_after=False), "reset_after"),
    (lambda: layers.SimpleRNN(0), "units"),
    (lambda: layers.LSTM(4, stateful=True), "stateful"),
    (lambda: layers.Embedding(0, 3), "input_dim"),
    (lambda: layers.Embedding(5, -1), "output_dim"),
    (lambda: layers.Bidirectional(layers.Dense(3)), "layer"),
    (lambda: layers.Bidirectional(layers.LSTM(3), merge_mode="max"), "merge_mode"),
    (lambda: layers.Bidirectional(layers.LSTM(3), backward_layer=layers.GRU(3, go_backwards=True)), "backward_layer"),
])
def test_bad_arguments_raise_naming_them(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_graphs_raise_before_anything_runs():
    with pytest.raises(ValueError, match="rank 2"):
        bf.Sequential([layers.Input((5,)), layers.LSTM(3)]).build()
    with pytest.raises(ValueError, match="mask_zero needs ids of shape"):
        bf.Sequential([layers.Input((5, 2)), layers.Embedding(9, 3, mask_zero=True)]).build()
    m = bf.Sequential([layers.Input((5,)), layers.Embedding(9, 3, mask_zero=True), layers.LSTM(3, return_sequences=True)])
    assert m.predict(np.ones((2, 5)), verbose=0).shape == (2, 5, 3)  # predicting is fine
    m.compile(optimizer="sgd", loss="mse")  # a masked sequence output: its loss is masked (test_sequence_losses.py)
    assert np.isfinite(m.fit(np.ones((2, 5)), np.ones((2, 5, 3)), verbose=0).history["loss"][0])


def test_masks_that_cannot_be_combined_are_refused():
    i = bf.Input((5,))
    a, b = layers.Embedding(9, 3, mask_zero=True)(i), layers.Embedding(9, 3, mask_zero=True)(i)
    with pytest.raises(ValueError, match="masks of two Embedding layers"):
        bf.Model(i, layers.LSTM(2)(layers.Add()([a, b]))).build()
    with pytest.raises(ValueError, match="concatenated on the last axis"):
        bf.Model(i, layers.LSTM(2)(layers.Concatenate(axis=1)([a, layers.Embedding(9, 3)(i)]))).build()


def test_a_mask_reaching_pooling_and_attention_is_used_as_keras_uses_it():
    """GlobalAveragePooling1D averages over the unmasked steps and MultiHeadAttention masks its
    keys and queries with an Embedding's mask (Keras 3; tests/test_masks.py checks the numbers):
    such graphs build and run, and the padded steps change nothing."""
    tok = bf.Input((6,))
    e = bf.layers.Embedding(10, 4, mask_zero=True)(tok)
    g = bf.Model(tok, bf.layers.Dense(1)(bf.layers.GlobalAveragePooling1D()(bf.layers.LayerNormalization()(e))))
    a = bf.Model(tok, bf.layers.Flatten()(bf.layers.MultiHeadAttention(2, 2)(e, e)))
    x = np.array([[1, 2, 3, 0, 0, 0], [4, 5, 6, 7, 8, 9]])
    w = g.get_weights()
    w[0][0] += 50.0   # the padding id's row
    g2 = bf.Model(tok, bf.layers.Dense(1)(bf.layers.GlobalAveragePooling1D()(bf.layers.LayerNormalization()(
        bf.layers.Embedding(10, 4, mask_zero=True)(tok)))))
    g2.set_weights(w)
    np.testing.assert_allclose(g.predict(x, verbose=0), g2.predict(x, verbose=0), rtol=1e-6)
    pa = a.predict(x, verbose=0).reshape(2, 6, 4)
    assert np.all(np.isfinite(pa)) and pa.shape == (2, 6, 4)
    m = bf.Model(tok, bf.layers.Dense(1)(bf.layers.GlobalAveragePooling1D()(bf.layers.Embedding(10, 4)(tok))))
    assert m.predict(np.ones((2, 6)), verbose=0).shape == (2, 1)      # without mask_zero it runs


@pytest.mark.parametrize("kw", [{}, dict(dropout=0.1, recurrent_dropout=0.2)], ids=["plain", "dropout"])
def test_wide_layers_in_row_blocks_plan_their_transposed_kernel(kw):
    """Row blocks add u^T (G*U, U) to the backward's workspace on the CPU: the plan still equals the arenas."""
    m = bf.Sequential([layers.Input((7, 16)), layers.LSTM(128, return_sequences=True, **kw),
                       layers.SimpleRNN(200, **kw), layers.Dense(1)])
    m.compile(optimizer="adam", loss="mse")
    r = np.random.default_rng(0)
    assert_plan_equals_arenas(m, r.standard_normal((128, 7, 16)).astype(np.float32),
                              r.standard_normal((128, 1)).astype(np.float32), 64)
