"""return_state / initial_state of SimpleRNN, LSTM, GRU and Bidirectional (and
Bidirectional(merge_mode=None)) against Keras 3: same weights and batch, same
outputs, loss and gradients (one SGD step, learning rate 1); masks carrying
the initial state over; finite differences through the initial states; plans
equal to the arenas (CPU and emu); Keras files both ways; every refusal."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import assert_plan_equals_arenas, directional_check_per_array as directional_check, engine_gradient
from helpers.keras_compare import against_keras as compare, close
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file
from keras_ref import load

T, D, U, B, V, E, T2, Z = 5, 3, 4, 4, 9, 3, 3, 2
rng = np.random.default_rng(0)
X = rng.standard_normal((B, T, D)).astype(np.float32)
X2 = rng.standard_normal((B, T2, D)).astype(np.float32)
ZS = rng.standard_normal((B, Z)).astype(np.float32)
IDS = rng.integers(1, V, (B, T))
IDS[0, 3:] = 0      # padded at the end
IDS[1, :2] = 0      # padded at the start
IDS[2, :] = 0       # all masked: the final state is the initial state
CELLS = ["SimpleRNN", "LSTM", "GRU"]




def targets(model):
    r = np.random.default_rng(2)
    return [r.standard_normal((B,) + tuple(s[1:])).astype(np.float32) for s in
            (model.output_shape if isinstance(model.output_shape, list) else [model.output_shape])]


def keras_order(model, weights=None):
    """boundfit's weights in Keras's order (keras_graph.trainable_order: Keras
    lists a graph's layers by depth, boundfit's get_weights by call order)."""
    from boundfit.saving.keras_graph import trainable_order
    out, k = [], 0
    for l in trainable_order(model):
        n = len(l.get_weights())
        if weights is not None:
            l.set_weights(weights[k:k + n])
        out += l.get_weights()
        k += n
    return out




def against_keras(build, x):
    """Outputs, summed losses and gradients against Keras 3 (helpers/keras_compare.py), the weights in Keras's
    order."""
    return compare(build, x, targets, order=keras_order)


def state_model(return_sequences, go_backwards):
    """Every output of each cell(return_state=True) feeds one Dense (h twice without return_sequences)."""
    def build(K, Ls):
        i, feats = K.Input((T, D)), []
        for cell in CELLS:
            outs = getattr(Ls, cell)(U, return_state=True, return_sequences=return_sequences,
                                     go_backwards=go_backwards)(i)
            feats += [Ls.Flatten()(outs[0]) if return_sequences else outs[0]] + list(outs[1:])
        return K.Model(i, Ls.Dense(2)(Ls.Concatenate()(feats)))
    return build


@pytest.mark.parametrize("return_sequences,go_backwards", [(False, False), (True, True)])
def test_return_state_matches_keras(return_sequences, go_backwards):
    against_keras(state_model(return_sequences, go_backwards), X)


def test_states_as_model_outputs_each_with_its_loss():
    """An LSTM's c as its own output (own loss), h unused (its gradient is zero)."""
    def build(K, Ls):
        i = K.Input((T, D))
        o, h, c = Ls.LSTM(U, return_state=True)(i)
        return K.Model(i, [Ls.Dense(2)(o), c])
    mb = against_keras(build, X)
    assert [tuple(t.shape) for t in mb.outputs] == [(None, 2), (None, U)]
    assert len(mb.predict(X, verbose=0)) == 2


def encoder_decoder(cell):
    """enc_out, *states = cell(return_state)(enc); cell(return_sequences)(dec, initial_state=states)."""
    def build(K, Ls):
        e, d = K.Input((T, D)), K.Input((T2, D))
        states = getattr(Ls, cell)(U, return_state=True)(e)[1:]
        seq = getattr(Ls, cell)(U, return_sequences=True)(d, initial_state=list(states))
        return K.Model([e, d], Ls.Dense(2)(seq))
    return build


def test_encoder_decoder_with_initial_state_fits_as_keras():
    def build(K, Ls):  # the three cells' encoder-decoders side by side
        e, d = K.Input((T, D)), K.Input((T2, D))
        return K.Model([e, d], [encoder_decoder(c)(K, Ls)([e, d]) for c in CELLS])
    against_keras(build, [X, X2])


def test_bidirectional_return_state_and_initial_state_match_keras():
    def build(K, Ls):
        e, d = K.Input((T, D)), K.Input((T2, D))
        o, fh, fc, bh, bc = Ls.Bidirectional(Ls.LSTM(U, return_state=True))(e)
        seq = Ls.Bidirectional(Ls.LSTM(U, return_sequences=True), merge_mode="sum")(d, initial_state=[fh, fc, bh, bc])
        return K.Model([e, d], [Ls.Dense(2)(seq), Ls.Dense(1)(o)])
    against_keras(build, [X, X2])


@pytest.mark.parametrize("return_state", [False, True])
def test_bidirectional_merge_mode_none_matches_keras(return_state):
    def build(K, Ls):
        i = K.Input((T, D))
        outs = Ls.Bidirectional(Ls.GRU(U, return_sequences=True, return_state=return_state), merge_mode=None)(i)
        a, b = outs[:2]
        h = Ls.Flatten()(Ls.Concatenate()([a, Ls.Multiply()([a, b])]))
        return K.Model(i, Ls.Dense(2)(Ls.Concatenate()([h] + list(outs[2:])) if return_state else h))
    against_keras(build, X)


def masked_with_state(K, Ls, explicit=False):
    """Embedding(mask_zero) -> LSTM from an initial state computed from a second
    input. Keras 3 drops the propagated mask of a call that also gets
    initial_state (Layer.__call__ fills `mask` only for a call with one tensor
    argument), and so does boundfit; `explicit` gives Keras the mask (mask=),
    with which a fully masked row keeps the initial state to the end."""
    i, z = K.Input((T,)), K.Input((Z,))
    kw = dict(mask=K.ops.not_equal(i, 0)) if explicit else {}  # Keras only: boundfit has no mask= (see below)
    h0, c0 = Ls.Dense(U, activation="tanh", name="h0")(z), Ls.Dense(U)(z)
    seq, h, c = Ls.LSTM(U, return_sequences=True, return_state=True, name="enc")(Ls.Embedding(V, E, mask_zero=True)(i),
                                                                                 initial_state=[h0, c0], **kw)
    g = Ls.GRU(U, go_backwards=True)(seq, initial_state=[h], **kw)
    return K.Model([i, z], Ls.Dense(2)(Ls.Concatenate()([g, h, c])))


def test_a_call_with_initial_states_reads_no_mask_as_keras():
    """Keras 3 fills a call's mask only when it has one tensor argument: with initial_state (and no mask=) the
    recurrent layer runs over the padded steps too, and so does boundfit's."""
    m = against_keras(masked_with_state, [IDS, ZS])
    h = bf.Model(m.inputs, m.get_layer("enc")._inbound[0].outputs[1]).predict([IDS, ZS], verbose=0)
    h0 = bf.Model(m.inputs[1], m.get_layer("h0")._inbound[0].outputs[0]).predict(ZS, verbose=0)
    assert np.abs(h[2] - h0[2]).max() > 1e-3  # every step of row 2 is padding, and it was still run


def test_a_keras_file_with_mask_given_carries_the_initial_state_over_masked_steps(tmp_path):
    def save(path):
        keras = load()
        mk = masked_with_state(keras, keras.layers, explicit=True)  # mask=: a NotEqual op node in the file
        mk.set_weights([(np.random.default_rng(1).standard_normal(w.shape) * 0.5).astype(np.float32)
                        for w in mk.get_weights()])
        mk.save(path)
        return {"predict": mk.predict([IDS, ZS], verbose=0)}
    ref = keras_file(tmp_path / "m.keras", save)["predict"]
    mb = bf.models.load_model(tmp_path / "m.keras")
    close(ref, mb.predict([IDS, ZS], verbose=0))
    h = bf.Model(mb.inputs, mb.get_layer("enc")._inbound[0].outputs[1]).predict([IDS, ZS], verbose=0)
    h0 = bf.Model(mb.inputs[1], mb.get_layer("h0")._inbound[0].outputs[0]).predict(ZS, verbose=0)
    np.testing.assert_array_equal(h[2], h0[2])  # every step masked: the state is carried over
    mb.save(tmp_path / "m.npz")  # boundfit's own graph file keeps the mask given
    close(ref, bf.models.load_model(tmp_path / "m.npz").predict([IDS, ZS], verbose=0))


@pytest.mark.parametrize("cell", CELLS)
def test_gradients_through_initial_states_match_finite_differences(cell):
    """The first Dense reaches the loss only through the recurrent layers' initial states."""
    c = getattr(layers, cell)
    i, z = bf.Input((T,)), bf.Input((Z,))
    n = 2 if cell == "LSTM" else 1
    s0 = [layers.Dense(U, activation="tanh")(z) for _ in range(2 * n)]
    emb = layers.Embedding(V, E, mask_zero=True)(i)
    outs = layers.Bidirectional(c(U, return_sequences=True, return_state=True), merge_mode=None)(emb, initial_state=s0)
    last = c(U, go_backwards=True)(outs[1], initial_state=outs[2:2 + n])
    m = bf.Model([i, z], layers.Dense(2)(layers.Concatenate()([last] + outs[2:])))
    m.compile(optimizer="sgd", loss="mse")
    y = targets(m)[0]
    g = engine_gradient(m, [IDS, ZS], y)
    assert all(np.abs(a).max() > 0 for a in g[:2])  # the state Dense layers do get gradients
    directional_check(m, [IDS, ZS], y)


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_plan_equals_arenas_and_emu_trains_as_the_cpu(device):
    a, b = masked_with_state(bf, layers), masked_with_state(bf, layers)
    b.set_weights(a.get_weights())
    y = targets(a)[0]
    for m, dev in ((a, "cpu"), (b, device)):
        bf.utils.set_random_seed(3)
        m.compile(optimizer="adam", loss="mse")
        m.fit([IDS, ZS], y, batch_size=2, epochs=2, verbose=0, shuffle=False, device=dev)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    m = encoder_decoder("LSTM")(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, [X, X2], targets(m)[0], 3, device=device)
    plan = m.estimate_memory(batch_size=3, device=device)
    assert plan.fits


def test_summary_get_layer_and_outputs_list_the_states():
    i = bf.Input((T, D))
    o, fh, fc, bh, bc = layers.Bidirectional(layers.LSTM(U, return_state=True), name="bi")(i)
    m = bf.Model(i, [o, fh, bc])
    assert [tuple(t.shape) for t in m.outputs] == [(None, 2 * U), (None, U), (None, U)]
    assert m.get_layer("bi").return_state
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "bi (Bidirectional)" in text and f"(None, {U})" in text
    p = m.predict(X, verbose=0)
    np.testing.assert_array_equal(p[1], p[0][:, :U])  # the forward h is the concatenated output's first half


def test_keras_files_both_ways(tmp_path):
    def build(K, Ls):
        e, d = K.Input((T, D)), K.Input((T2, D))
        o, fh, bh = Ls.Bidirectional(Ls.GRU(U, return_state=True))(e)
        a, b = Ls.Bidirectional(Ls.SimpleRNN(U, return_sequences=True), merge_mode=None)(d)
        _, h, c = Ls.LSTM(U, return_state=True)(a, initial_state=[fh, bh])
        seq = Ls.LSTM(U, return_sequences=True)(b, initial_state=[h, c])
        return K.Model([e, d], [Ls.Dense(2)(seq), o])

    mb = build(bf, layers)
    mb.compile(optimizer="adam", loss="mse")
    mb.save(tmp_path / "bf.keras")
    theirs = case(lambda: {"predict": load().saving.load_model(tmp_path / "bf.keras").predict([X, X2], verbose=0)},
                  files=[tmp_path / "bf.keras"])
    for r, g in zip(mb.predict([X, X2], verbose=0), theirs["predict"]):
        close(g, r)

    def save(path, make, x):
        keras = load()
        mk = make(keras, keras.layers)
        mk.compile(optimizer="adam", loss="mse")
        mk.save(path)
        return {"predict": mk.predict(x, verbose=0)}
    ref = keras_file(tmp_path / "k.keras", lambda p: save(p, build, [X, X2]))["predict"]
    for r, g in zip(ref, bf.models.load_model(tmp_path / "k.keras").predict([X, X2], verbose=0)):
        close(r, g)
    ref = keras_file(tmp_path / "m.keras", lambda p: save(p, masked_with_state, [IDS, ZS]))["predict"]
    close(ref, bf.models.load_model(tmp_path / "m.keras").predict([IDS, ZS], verbose=0))


def test_bad_states_raise_naming_the_argument():
    i, d = bf.Input((T, D)), bf.Input((T2, D))
    _, h, c = layers.LSTM(U, return_state=True)(i)
    with pytest.raises(ValueError, match="initial_state must be a list of 2 tensors"):
        layers.LSTM(U)(d, initial_state=[h])
    with pytest.raises(ValueError, match="initial_state must be a list of 4 tensors"):
        layers.Bidirectional(layers.LSTM(U))(d, initial_state=[h, c])
    with pytest.raises(ValueError, match=r"initial_state\[1\] must have shape \(None, 3\)"):
        layers.Bidirectional(layers.GRU(3))(d, initial_state=[layers.Dense(3)(h), h])
    with pytest.raises(ValueError, match=r"initial_state\[0\] must have shape \(None, 5\)"):
        layers.SimpleRNN(5)(d, initial_state=[h])
    with pytest.raises(TypeError, match=r"initial_state\[0\] must be a symbolic tensor"):
        layers.LSTM(U)(d, initial_state=[np.zeros((B, U), np.float32), c])
    with pytest.raises(ValueError, match="several outputs.*functional API"):
        bf.Sequential([layers.Input((T, D)), layers.LSTM(U, return_state=True)])
    with pytest.raises(ValueError, match="several outputs.*functional API"):
        bf.Sequential([layers.Input((T, D)), layers.Bidirectional(layers.GRU(U), merge_mode=None)])
    with pytest.raises(ValueError, match="merge_mode must be one of"):
        layers.Bidirectional(layers.GRU(U), merge_mode="max")
    with pytest.raises(ValueError, match=r"mask must have shape \(batch, \d+\)"):   # one value per step
        layers.LSTM(U)(d, mask=h)


def test_graph_file_keeps_states_in_and_out(tmp_path):
    """boundfit's own graph file (.npz) replays each call once, its other outputs taken from that call."""
    m = masked_with_state(bf, layers)
    i, d = bf.Input((T, D)), bf.Input((T2, D))
    a, b, fh, bh = layers.Bidirectional(layers.GRU(U, return_sequences=True, return_state=True), merge_mode=None)(i)
    seq = layers.GRU(U, return_sequences=True)(d, initial_state=[bh])
    m2 = bf.Model([i, d], [layers.Flatten()(layers.Add()([a, b])), fh, seq])
    for k, (model, x) in enumerate(((m, [IDS, ZS]), (m2, [X, X2]))):
        model.compile(optimizer="adam", loss="mse")
        model.save(tmp_path / f"g{k}")
        back = bf.models.load_model(tmp_path / f"g{k}.npz")
        want, got = model.predict(x, verbose=0), back.predict(x, verbose=0)
        for u, v in zip(want if k else [want], got if k else [got]):
            np.testing.assert_array_equal(u, v)
        assert len(back.get_weights()) == len(model.get_weights())
