"""dropout / recurrent_dropout of SimpleRNN, LSTM, GRU and Bidirectional.

Keras's random streams cannot be matched, so the engine's masks are
recomputed here in NumPy from the run's seed (the counter hash of
csrc/cpu/rnn_dropout.c, seeds as csrc/core/layers/recurrent.c derives them) and
handed to Keras 3's cells (their get_dropout_mask / get_recurrent_dropout_mask):
same weights, batch and masks give the same loss and gradients. Then the
properties: the keep fraction, no dropout in predict / evaluate, finite
differences at a fixed seed, emu == cpu bit for bit, plan == arenas, and
Keras files both ways keeping dropout, recurrent_dropout and seed."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from helpers.keras_compare import against_keras as compare, close
from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


T, D, U, B = 5, 3, 4, 6
rng = np.random.default_rng(3)
X = rng.standard_normal((B, T, D)).astype(np.float32)
Y = rng.standard_normal((B, 2)).astype(np.float32)
RUN_SEED = 0x1234_5678_9ABC
M64 = (1 << 64) - 1
GATES = {"SimpleRNN": 1, "LSTM": 4, "GRU": 3}


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def keep_bits(seed, n):
    """bf_dropout_bits(seed, i) for i < n, vectorized (uint64 arithmetic wraps as C's)."""
    with np.errstate(over="ignore"):
        x = np.uint64(seed) ^ (np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(40)).astype(np.uint32)


def engine_masks(node, direction, cell, rate, rec_rate, rows, d_in, units, run_seed=RUN_SEED):
    """The masks node `node` (engine order) draws in the first training forward
    of a run seeded run_seed, direction 0 forward / 1 backward: (input masks,
    state masks), each a list of (rows, N) float32 arrays (one, or one per gate
    once rec_rate > 0), None where that dropout is off. Only the first node
    with dropout in a model draws from run_seed itself (later ones from the
    stream after it): the tests keep one such node per model."""
    base = splitmix64(run_seed ^ ((node + 1) << 44))
    n = GATES[cell] if rec_rate > 0 and cell != "SimpleRNN" else 1

    def draw(r, seed, width):
        if r == 0:
            return None
        r32 = np.float32(r)
        thr = np.ceil(np.float64(r32) * 16777216.0)
        scale = np.float32(1.0) / (np.float32(1.0) - r32)
        bits = keep_bits(seed, n * rows * width).reshape(n, rows, width)
        return [np.where(bits >= thr, scale, np.float32(0.0)).astype(np.float32) for bits in bits]
    return (draw(rate, splitmix64(base ^ (2 * direction + 1)), d_in),
            draw(rec_rate, splitmix64(base ^ (2 * direction + 2)), units))


def give_masks(cell, masks):
    """Keras 3's cell uses these masks (a list per gate, or one array) in training."""
    import jax.numpy as jnp
    mx, mh = masks

    def as_keras(m):
        return None if m is None else [jnp.asarray(a) for a in m] if len(m) > 1 else jnp.asarray(m[0])
    kx, kh = as_keras(mx), as_keras(mh)
    cell.get_dropout_mask = lambda step_input: kx
    cell.get_recurrent_dropout_mask = lambda step_input: kh




def fit_seeded(m, x, y, monkeypatch, device=None, seed=RUN_SEED):
    """One epoch in one batch, the run seeded with `seed`."""
    monkeypatch.setattr(bf.session, "next_seed", lambda: seed)   # the seed of each run (session.py)
    return m.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0, device=device)


def one_cell(cell, rate, rec_rate, **kw):
    def build(K, Ls):
        c = getattr(Ls, cell)(U, dropout=rate, recurrent_dropout=rec_rate, **kw)
        return K.Sequential([K.Input((T, D)), c] + ([Ls.Flatten()] if kw.get("return_sequences") else []) +
                            [Ls.Dense(2)])
    return build


def bidirectional(K, Ls):
    return K.Sequential([K.Input((T, D)), Ls.Bidirectional(Ls.GRU(U, dropout=0.2, recurrent_dropout=0.3,
                                                                  return_sequences=True)),
                         Ls.Flatten(), Ls.Dense(2)])


def masked_lstm(K, Ls):
    """Embedding(mask_zero) -> LSTM with both dropouts: masked steps carry the (undropped) state."""
    return K.Sequential([K.Input((T,)), Ls.Embedding(9, D, mask_zero=True),
                         Ls.LSTM(U, dropout=0.3, recurrent_dropout=0.3), Ls.Dense(2)])




def against_keras(build, cells, monkeypatch, x=X, y=Y, units=U):
    """Keras's training-mode loss and gradients with the engine's masks against
    boundfit's fit (helpers/keras_compare.py); predict against Keras's
    inference outputs. cells(mk) -> [(keras cell, cell name, rate, rec_rate,
    direction[, engine node index, default 0])]."""
    def masks(mk):
        for c, name, rate, rec_rate, d, *node in cells(mk):
            give_masks(c, engine_masks(node[0] if node else 0, d, name, rate, rec_rate, len(x), D, units))
    compare(build, x, y, prepare=masks, training=True, fit=lambda m, x, y: fit_seeded(m, x, y, monkeypatch))


@pytest.mark.parametrize("cell", ["SimpleRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("rate,rec_rate,kw", [(0.3, 0.0, {}), (0.25, 0.4, dict(go_backwards=True)),
                                              (0.0, 0.35, dict(return_sequences=True))],
                         ids=["dropout", "both-go-backwards", "recurrent-sequences"])
def test_training_loss_and_gradients_match_keras_with_the_same_masks(cell, rate, rec_rate, kw, monkeypatch):
    against_keras(one_cell(cell, rate, rec_rate, **kw), lambda mk: [(mk.layers[0].cell, cell, rate, rec_rate, 0)], monkeypatch)


def test_bidirectional_directions_draw_their_own_masks_as_keras(monkeypatch):
    against_keras(bidirectional, lambda mk: [(mk.layers[0].forward_layer.cell, "GRU", 0.2, 0.3, 0),
                                             (mk.layers[0].backward_layer.cell, "GRU", 0.2, 0.3, 1)], monkeypatch)
    fw, bw = engine_masks(0, 0, "GRU", 0.2, 0.3, B, D, U), engine_masks(0, 1, "GRU", 0.2, 0.3, B, D, U)
    assert not np.array_equal(fw[0][0], bw[0][0]) and not np.array_equal(fw[1][0], bw[1][0])


def test_masked_sequence_with_dropout_matches_keras(monkeypatch):
    ids = np.random.default_rng(2).integers(1, 9, (B, T))
    ids[0, 3:], ids[1, :2], ids[2, 2] = 0, 0, 0
    against_keras(masked_lstm, lambda mk: [(mk.layers[1].cell, "LSTM", 0.3, 0.3, 0, 1)], monkeypatch, ids)


def test_wide_layers_in_row_blocks_with_state_masks_match_keras(monkeypatch):
    """Batch 64, 128 units: the LSTM runs in blocks of rows through all its
    steps (csrc/cpu/rnn.c row_blocks), each block masking its own rows of
    h_prev and of dh_prev; the decoder starts from the encoder's states, so
    step 0's du term goes through the masked initial state."""
    def enc_dec(K, Ls):
        i = K.Input((T, D))
        _, h, c = Ls.LSTM(128, return_state=True)(i)
        seq = Ls.LSTM(128, dropout=0.2, recurrent_dropout=0.3, go_backwards=True,
                      return_sequences=True)(i, initial_state=[h, c])
        return K.Model(i, Ls.Dense(2)(Ls.Flatten()(seq)))
    r = np.random.default_rng(5)
    x, y = r.standard_normal((64, T, D)).astype(np.float32), r.standard_normal((64, 2)).astype(np.float32)
    against_keras(enc_dec, lambda mk: [(mk.layers[2].cell, "LSTM", 0.2, 0.3, 0, 3)], monkeypatch, x, y, 128)


def test_masks_keep_about_one_minus_the_rate_scaled_by_its_inverse():
    """The masks the Keras comparisons above pin to the engine's: per (gate,
    row) the same mask at every step by construction; kept fraction ~ 1 - rate."""
    for rate in (0.1, 0.5, 0.8):
        mx, mh = engine_masks(2, 0, "LSTM", rate, rate, 512, 64, 32)
        for m in mx + mh:
            kept = m != 0
            assert abs(kept.mean() - (1 - rate)) < 0.01
            np.testing.assert_array_equal(m[kept], np.float32(1) / (np.float32(1) - np.float32(rate)))
        assert not np.array_equal(mx[0], mx[1])   # one mask per gate


def test_no_dropout_in_predict_and_evaluate_but_in_fit(monkeypatch):
    def make(rate, rec):
        m = bf.Sequential([layers.Input((T, D)), layers.Bidirectional(layers.LSTM(U, dropout=rate,
                                                                                  recurrent_dropout=rec)),
                           layers.Dense(2)])
        m.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
        return m
    plain, dropped = make(0.0, 0.0), make(0.5, 0.5)
    dropped.set_weights(plain.get_weights())
    np.testing.assert_array_equal(dropped.predict(X, verbose=0), plain.predict(X, verbose=0))
    assert dropped.evaluate(X, Y, verbose=0) == plain.evaluate(X, Y, verbose=0)
    assert fit_seeded(dropped, X, Y, monkeypatch).history["loss"] != fit_seeded(plain, X, Y, monkeypatch).history["loss"]


def test_dropped_loss_gradient_matches_finite_differences_at_a_fixed_seed(monkeypatch):
    """A fixed seed fixes the masks, so the training loss of a step with learning
    rate 0 is a function of the weights; its central differences match the
    gradient the engine applies (SGD with learning rate 1)."""
    i = bf.Input((T, D))
    h = layers.Bidirectional(layers.GRU(U, dropout=0.3, recurrent_dropout=0.3, return_sequences=True))(i)
    m = bf.Model(i, layers.Dense(2)(layers.LSTM(U, recurrent_dropout=0.4, dropout=0.2)(h)))
    w0 = m.get_weights()

    def dropped_loss(w, lr=0.0):
        m.set_weights(w)
        m.compile(optimizer=bf.optimizers.SGD(lr), loss="mse")
        return fit_seeded(m, X, Y, monkeypatch).history["loss"][0]
    base = dropped_loss(w0)
    m.set_weights(w0)
    assert base != m.evaluate(X, Y, verbose=0)
    dropped_loss(w0, lr=1.0)
    g = [a.astype(np.float64) - b for a, b in zip(w0, m.get_weights())]
    r, eps = np.random.default_rng(5), 1e-2
    for _ in range(3):
        d = [r.standard_normal(w.shape) for w in w0]
        fd = (dropped_loss([w + eps * di for w, di in zip(w0, d)]) -
              dropped_loss([w - eps * di for w, di in zip(w0, d)])) / (2 * eps)
        an = sum(float((gi * di).sum()) for gi, di in zip(g, d))
        assert abs(fd - an) <= 3e-2 * max(abs(fd), abs(an), 1e-2), (fd, an)


def _dropout_model():
    i = bf.Input((T, D))
    h = layers.Bidirectional(layers.LSTM(U, dropout=0.3, recurrent_dropout=0.2, return_sequences=True),
                             merge_mode="mul")(i)
    h = layers.SimpleRNN(U, dropout=0.1, recurrent_dropout=0.3, return_sequences=True, go_backwards=True)(h)
    return bf.Model(i, layers.Dense(2)(layers.GRU(U, dropout=0.25)(h)))


def test_emu_trains_as_the_cpu_bit_for_bit_and_plans_equal_arenas(monkeypatch):
    w0 = None
    res = {}
    for dev in ("cpu", "emu"):
        m = _dropout_model()
        if w0 is None:
            w0 = m.get_weights()
        m.set_weights(w0)
        m.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
        plan = m.estimate_memory(batch_size=4, device=dev)
        monkeypatch.setattr(bf.session, "next_seed", lambda: RUN_SEED)
        h = m.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, device=dev)
        stats = m._last_run_stats
        assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
        arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(
            s["run_high_water"] + s["host_slots_high_water"] for s in stats)  # emu: pinned host slots too
        assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
        res[dev] = (h.history["loss"], m.get_weights())
    assert res["cpu"][0] == res["emu"][0]
    for a, b in zip(res["cpu"][1], res["emu"][1]):
        np.testing.assert_array_equal(a, b)


def test_keras_files_keep_dropout_recurrent_dropout_and_seed(tmp_path):
    m = bf.Sequential([layers.Input((T, D)), layers.Bidirectional(layers.LSTM(U, dropout=0.2, recurrent_dropout=0.1,
                                                                              seed=7, return_sequences=True)),
                       layers.GRU(U, dropout=0.3, seed=3), layers.Dense(2)])
    m.save(tmp_path / "m.keras")

    def opened():   # Keras's side, recorded by the file's contents
        k = load().models.load_model(tmp_path / "m.keras")
        fl, g = k.layers[0].forward_layer, k.layers[1]
        return dict(fw=(fl.dropout, fl.recurrent_dropout, fl.cell.seed),
                    rest=(k.layers[0].backward_layer.dropout, g.dropout, g.recurrent_dropout, g.cell.seed),
                    p=k.predict(X, verbose=0))
    k = case(opened, files=[tmp_path / "m.keras"])
    assert k["fw"] == (0.2, 0.1, 7)
    assert k["rest"] == (0.2, 0.3, 0.0, 3)
    close(k["p"], m.predict(X, verbose=0))

    def save(p):   # (Keras 3's SimpleRNN leaves seed out of its own config, so an LSTM here)
        keras = load()
        k2 = keras.Sequential([keras.Input((T, D)),
                               keras.layers.LSTM(U, dropout=0.4, recurrent_dropout=0.25, seed=11),
                               keras.layers.Dense(2)])
        k2.save(p)
        return dict(p=k2.predict(X, verbose=0))
    want = keras_file(tmp_path / "k.keras", save)["p"]
    b = bf.models.load_model(tmp_path / "k.keras")
    s = b.layers[0]
    assert (s.dropout, s.recurrent_dropout, s.seed) == (0.4, 0.25, 11)
    close(want, b.predict(X, verbose=0))
