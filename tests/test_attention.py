"""LayerNormalization and MultiHeadAttention against Keras 3 (same weights and
batch: outputs, losses and weights after training steps, relative 1e-5),
masks (causal, an explicit attention mask as a second model input, both),
cross-attention, finite-difference gradients, attention dropout, plans equal
to the arenas (cpu and emu), a small Transformer encoder that learns a
synthetic task, Keras files and configs, and every argument error."""

import json
import os
import tempfile

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers
from conftest import directional_check, numeric_loss
from helpers.keras_recorded import case, keras_file
from keras_ref import load as load_keras
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


RTOL = 1e-5
T, D = 6, 8


def rng(seed=0):
    return np.random.default_rng(seed)


def close(a, b, rtol=RTOL, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


def graph_on(make):
    """make(L, Input, Model), one graph on either library, as a build(M) of the module M"""
    return lambda M: make(M.layers, M.Input, M.Model)


def build_pair(build, x, y=None, steps=2, loss="mse", noise=(0.3, 7)):
    """build(M) makes one model of either library (M: boundfit or keras); the
    same (non-trivial) weights, Keras's moved by noise = (scale, seed), go
    into both. Keras's side, recorded: the weights (w), its predictions of x
    (p) and, y given, its evaluate (e), then the losses (loss) and weights
    (w1) of `steps` steps of SGD with momentum. Returns (boundfit model,
    Keras's record)."""
    def compute():
        keras = load_keras()
        km = build(keras)
        scale, seed = noise
        r = rng(seed)
        w = [(v + scale * r.standard_normal(v.shape)).astype(np.float32) for v in km.get_weights()]
        km.set_weights(w)
        out = dict(w=w, p=km.predict(x, verbose=0))
        if y is not None:
            km.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss=loss)
            out["e"] = km.evaluate(x, y, verbose=0)
            hk = km.fit(x, y, batch_size=_rows(x) // steps, epochs=1, shuffle=False, verbose=0)
            out.update(loss=hk.history["loss"], w1=km.get_weights())
        return out
    k = case(compute)
    bm = build(bf)
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in k["w"]]
    bm.set_weights(k["w"])
    return bm, k


def _rows(x):
    return len(x[0]) if isinstance(x, list) else len(x)


def compare_training(bm, k, x, y, steps=2, loss="mse", device=None):
    close(bm.predict(x, verbose=0, device=device), k["p"])
    # SGD with momentum: the key bias's true gradient is 0 (softmax ignores a
    # constant per row), and Adam would scale both libraries' rounding noise
    # in it up to full steps
    bm.compile(optimizer=bf.optimizers.SGD(0.05, momentum=0.9), loss=loss)
    close(bm.evaluate(x, y, verbose=0, device=device), k["e"])
    hb = bm.fit(x, y, batch_size=_rows(x) // steps, epochs=1, shuffle=False, verbose=0, device=device)
    close(hb.history["loss"], k["loss"])
    for a, b in zip(bm.get_weights(), k["w1"]):
        close(a, b, atol=1e-5)


def trains_as_keras(build, x, y, steps=2, loss="mse", device=None, noise=(0.3, 7)):
    """build_pair, then compare_training"""
    bm, k = build_pair(build, x, y, steps, loss, noise)
    compare_training(bm, k, x, y, steps, loss, device)


def self_attention(causal=False, mask=False, heads=2, key_dim=4, **kw):
    def make(L, Input, Model):
        x = Input((T, D))
        m = Input((T, T)) if mask else None
        a = L.MultiHeadAttention(heads, key_dim, **kw)(x, x, attention_mask=m, use_causal_mask=causal)
        h = L.LayerNormalization()(L.Add()([x, a]))
        out = L.Dense(3)(L.Flatten()(h))
        return Model([x, m] if mask else x, out)
    return make


def data(n=8, mask=False, seed=1):
    r = rng(seed)
    x = r.standard_normal((n, T, D)).astype(np.float32)
    y = r.standard_normal((n, 3)).astype(np.float32)
    if not mask:
        return x, y
    m = (r.random((n, T, T)) > 0.4).astype(np.float32)
    m[:, :, 0] = 1.0  # every query attends to something (see test_fully_masked_row...)
    return [x, m], y


# ---- LayerNormalization ----

def test_layernorm_variants_match_keras_outputs_loss_and_updates():
    """Three LayerNormalizations (defaults; no beta, eps 1e-5; no gamma, eps 0.1)
    on a rank-3 input, in one model (one Keras compilation)."""
    def make(L, Input, Model):
        x = Input((4, 5))
        h = L.LayerNormalization()(L.Dense(6)(x))
        h = L.LayerNormalization(epsilon=1e-5, center=False)(L.Dense(6)(h))
        h = L.LayerNormalization(epsilon=0.1, scale=False)(L.Dense(6)(h))
        return Model(x, L.Dense(2)(L.Flatten()(h)))
    r = rng(2)
    x, y = r.standard_normal((12, 4, 5)).astype(np.float32) * 3 + 1, r.standard_normal((12, 2)).astype(np.float32)
    trains_as_keras(graph_on(make), x, y, steps=3)


def test_layernorm_in_a_sequential_on_emu_equals_cpu_and_keras():
    def build(M):
        return M.Sequential([M.Input((5,)), M.layers.Dense(7), M.layers.LayerNormalization(), M.layers.Dense(1)])
    x, y = rng(4).standard_normal((16, 5)).astype(np.float32), rng(5).standard_normal((16, 1)).astype(np.float32)
    trains_as_keras(build, x, y, steps=2, device="emu", noise=(0.2, 3))


# ---- MultiHeadAttention against Keras ----

def test_self_attention_matches_keras_with_causal_mask_then_attention_mask():
    """Two stacked self-attentions: one with use_causal_mask, one with an
    explicit attention mask (a second model input); no mask at all is the
    cross-attention test below, both together the one after it."""
    def make(L, Input, Model):
        x, m = Input((T, D)), Input((T, T))
        h = L.LayerNormalization()(L.Add()([x, L.MultiHeadAttention(2, 4)(x, x, use_causal_mask=True)]))
        h = L.Add()([h, L.MultiHeadAttention(3, 2)(h, h, attention_mask=m)])
        return Model([x, m], L.Dense(3)(L.Flatten()(h)))
    x, y = data(mask=True)
    trains_as_keras(graph_on(make), x, y)


def test_heads_big_enough_for_row_split_products_match_keras():
    """Heads of 128 x 128 x 64 and an uneven cross-attention (97 queries, 161
    keys, key_dim 80): every tile product is over OpenBLAS's
    small-matrix size, so it runs in parts of C's rows (NT ones on a
    transposed B), forward and backward."""
    def make(L, Input, Model):
        x, q, c = Input((128, 8)), Input((97, 8)), Input((161, 8))
        h1 = L.GlobalAveragePooling1D()(L.Add()([x, L.MultiHeadAttention(2, 64)(x, x, use_causal_mask=True)]))
        h2 = L.GlobalAveragePooling1D()(L.MultiHeadAttention(2, 80)(q, c))
        return Model([x, q, c], L.Dense(3)(L.Concatenate()([h1, h2])))
    r = rng(9)
    x = [r.standard_normal((4, n, 8)).astype(np.float32) for n in (128, 97, 161)]
    trains_as_keras(graph_on(make), x, r.standard_normal((4, 3)).astype(np.float32))


def test_cross_attention_with_key_value_dim_output_shape_and_no_bias_matches_keras():
    def make(L, Input, Model):
        q, v, k = Input((5, 6)), Input((7, 4)), Input((7, 3))
        # Keras 3.15 on JAX fails value_dim != key_dim in its fused attention
        # (a shape check in jax.nn.dot_product_attention); a negligible dropout
        # sends its layer down its einsum path instead (1 - 1e-9 == 1 in float32)
        kw = dict(dropout=1e-9) if L is not layers else {}
        a = L.MultiHeadAttention(3, 2, value_dim=5, output_shape=4, use_bias=False, **kw)(q, v, key=k)
        return Model([q, v, k], L.Dense(2)(L.Flatten()(a)))
    r = rng(6)
    x = [r.standard_normal((8, 5, 6)).astype(np.float32), r.standard_normal((8, 7, 4)).astype(np.float32),
         r.standard_normal((8, 7, 3)).astype(np.float32)]
    y = r.standard_normal((8, 2)).astype(np.float32)
    bm, k = build_pair(graph_on(make), x, y)
    assert [w.shape for w in bm.get_weights()[:4]] == [(6, 3, 2), (3, 3, 2), (4, 3, 5), (3, 5, 4)]
    compare_training(bm, k, x, y)


def test_cross_attention_value_as_key_with_mask_on_emu_matches_keras():
    def make(L, Input, Model):
        q, v, m = Input((3, 6)), Input((5, 6)), Input((3, 5))
        a = L.MultiHeadAttention(2, 3)(q, v, attention_mask=m, use_causal_mask=True)
        return Model([q, v, m], L.Dense(2, activation="softmax")(L.Flatten()(a)))
    r = rng(8)
    m = (r.random((10, 3, 5)) > 0.5).astype(np.float32)
    m[:, :, 0] = 1.0
    x = [r.standard_normal((10, 3, 6)).astype(np.float32), r.standard_normal((10, 5, 6)).astype(np.float32), m]
    trains_as_keras(graph_on(make), x, r.integers(0, 2, 10), loss="sparse_categorical_crossentropy", device="emu")


def test_fully_masked_row_attends_uniformly_as_keras_on_jax():
    (x, m), y = data(mask=True)
    m[:, 2, :] = 0.0  # query 2 may attend to nothing
    bm, k = build_pair(graph_on(self_attention(mask=True)), [x, m])
    close(bm.predict([x, m], verbose=0), k["p"])
    directional_check(_compiled(bm), [x, m], y)


def _compiled(m):
    m.compile(optimizer="sgd", loss="mse")
    return m


# ---- gradients ----


@pytest.mark.parametrize("causal,mask", [(False, False), (True, True)])
def test_attention_and_layernorm_gradients_match_finite_differences(causal, mask):
    m = _compiled(self_attention(causal, mask)(layers, bf.Input, bf.Model))
    x, y = data(mask=mask, seed=3)
    directional_check(m, x, y)


def test_gradients_reach_query_key_and_value_inputs_through_finite_differences():
    """Input gradients: a trainable Dense before each of query, key, value (and
    one Dense feeding all three, whose gradient sums three contributions)."""
    inp = bf.Input((T, D))
    h = layers.Dense(D)(inp)
    a = layers.MultiHeadAttention(2, 3, value_dim=2)(layers.Dense(4)(h), layers.Dense(5)(h), key=h)
    m = _compiled(bf.Model(inp, layers.Dense(1)(layers.Flatten()(a))))
    x, _ = data(seed=4)
    directional_check(m, x, rng(4).standard_normal((8, 1)).astype(np.float32))


# ---- dropout on the attention weights ----

def fit_seeded(m, x, y, device=None, seed=7):
    """One epoch in one batch; the run's dropout seed comes from the global seed."""
    bf.utils.set_random_seed(seed)
    return m.fit(x, y, batch_size=len(x), verbose=0, shuffle=False, device=device)


def test_attention_dropout_acts_in_fit_only_and_cpu_and_emu_draw_the_same_masks():
    x, y = data(n=16, seed=5)

    def model(rate, w=None):
        m = _compiled(self_attention(dropout=rate)(layers, bf.Input, bf.Model))
        if w is not None:
            m.set_weights(w)
        return m
    plain = model(0.0)
    w0 = plain.get_weights()
    dropped = model(0.5, w0)
    np.testing.assert_array_equal(dropped.predict(x, verbose=0), plain.predict(x, verbose=0))
    assert dropped.evaluate(x, y, verbose=0) == plain.evaluate(x, y, verbose=0)
    hp, hd = fit_seeded(plain, x, y), fit_seeded(dropped, x, y)
    assert hd.history["loss"] != hp.history["loss"]   # the mask changed the training loss
    on_emu = model(0.5, w0)
    he = fit_seeded(on_emu, x, y, device="emu")
    assert he.history["loss"] == hd.history["loss"]
    for a, b in zip(on_emu.get_weights(), dropped.get_weights()):
        close(a, b, rtol=1e-6)


def test_attention_dropout_gradient_matches_finite_differences_of_the_dropped_loss():
    """The same seed gives the same mask, so the training loss of a step with
    learning rate 0 is a fixed function of the weights: its central
    differences match the gradient the engine applies (SGD with rate 1)."""
    x, y = data(n=8, seed=6)
    m = self_attention(dropout=0.3)(layers, bf.Input, bf.Model)
    w0 = m.get_weights()

    def dropped_loss(w, lr=0.0):
        m.set_weights(w)
        m.compile(optimizer=bf.optimizers.SGD(lr), loss="mse")
        return fit_seeded(m, x, y).history["loss"][0]
    assert dropped_loss(w0) != numeric_loss(m, x, y)
    dropped_loss(w0, lr=1.0)
    g = [a.astype(np.float64) - b for a, b in zip(w0, m.get_weights())]
    r, eps = rng(1), 2e-3   # the masked softmax curves: a smaller step than the other checks
    for _ in range(3):
        d = [r.standard_normal(w.shape) for w in w0]
        fd = (dropped_loss([w + eps * di for w, di in zip(w0, d)]) -
              dropped_loss([w - eps * di for w, di in zip(w0, d)])) / (2 * eps)
        an = sum(float((gi * di).sum()) for gi, di in zip(g, d))
        assert abs(fd - an) <= 3e-2 * max(abs(fd), abs(an), 1e-2), (fd, an)


# ---- plans ----

def encoder(T_=16, F=4, width=16, heads=2, ff=32, classes=3, causal=False):
    """A Transformer encoder block on continuous tokens: input projection,
    x + MHA(x, x) -> LayerNorm -> Dense(ff, relu) -> Dense -> add -> LayerNorm,
    then Flatten -> Dense (no GlobalAveragePooling1D in this part)."""
    L = layers
    inp = bf.Input((T_, F))
    x = L.Dense(width)(inp)
    a = L.MultiHeadAttention(heads, width // heads)(x, x, use_causal_mask=causal)
    x = L.LayerNormalization()(L.Add()([x, a]))
    f = L.Dense(width)(L.Dense(ff, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, f]))
    return bf.Model(inp, L.Dense(classes, activation="softmax")(L.Flatten()(x)))


def marked_tokens(n, T_=16, seed=0):
    """One token per sequence is marked (feature 0 = 1); the class is the
    argmax of that token's features 1..3 (chance: 1/3)."""
    r = rng(seed)
    x = r.standard_normal((n, T_, 4)).astype(np.float32)
    x[:, :, 0] = 0.0
    pos = r.integers(0, T_, n)
    x[np.arange(n), pos, 0] = 1.0
    y = np.argmax(x[np.arange(n), pos, 1:], axis=1)
    return x, y


def test_transformer_encoder_learns_marked_token_task_and_plan_equals_the_arenas():
    x, y = marked_tokens(1200)
    xt, yt = marked_tokens(400, seed=1)
    m = encoder()
    m.compile(optimizer=bf.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = m.estimate_memory(batch_size=64)
    m.fit(x, y, batch_size=64, epochs=12, verbose=0)
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(
        s["run_high_water"] for s in m._last_run_stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    _, acc = m.evaluate(xt, yt, verbose=0)
    assert acc >= 0.8, acc   # chance is 1/3


@pytest.mark.parametrize("mode", ["fit", "predict"])
def test_attention_plan_on_emu_equals_the_device_memory_a_run_takes(mode):
    m = _compiled(self_attention(True, True, dropout=0.2)(layers, bf.Input, bf.Model))
    x, y = data(n=32, mask=True)
    plan = m.estimate_memory(batch_size=16, device="emu") if mode == "fit" else None
    free0, _ = _core.device_mem_info("emu:0")
    if mode == "fit":
        m.fit(x, y, batch_size=16, verbose=0, device="emu")
        stats = m._last_run_stats
        assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
        assert plan.device_bytes == sum(s["run_reserved"] for s in stats)
    else:
        m.predict(x, batch_size=16, verbose=0, device="emu")
    assert _core.device_mem_info("emu:0")[0] == free0


def test_attention_weights_are_kept_per_head_only_for_backward():
    """The (T, T) weights of every (batch, head) are kept from forward to
    backward in training; predict holds one tile: a longer sequence grows the
    training plan by at least B*H*T*T floats more than the predict plan."""
    def act_bytes(T_, mode):
        m = _compiled(encoder(T_=T_))
        p = m.estimate_memory(batch_size=8) if mode == "fit" else m.estimate_memory(batch_size=8, mode="predict")
        return sum(e.bytes for e in p.breakdown if e.category == "activations")
    grow_fit = act_bytes(64, "fit") - act_bytes(32, "fit")
    grow_pred = act_bytes(64, "predict") - act_bytes(32, "predict")
    assert grow_fit - grow_pred >= 8 * 2 * (64 * 64 - 32 * 32) * 4


def test_long_sequence_raises_budget_error_before_any_step():
    m = encoder(T_=512, width=8, heads=4)
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = marked_tokens(64, T_=512)
    w0 = m.get_weights()
    with pytest.raises(bf.MemoryBudgetError) as e:
        m.fit(x, y, batch_size=64, verbose=0, memory_limit="64MiB")
    assert e.value.needed_bytes > 64 << 20
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)


def test_frozen_attention_passes_gradients_to_the_layers_before_it():
    inp = bf.Input((T, D))
    h = layers.Dense(D)(inp)
    mha = layers.MultiHeadAttention(2, 3)
    m = _compiled(bf.Model(inp, layers.Dense(1)(layers.Flatten()(mha(h, h)))))
    mha.trainable = False
    m.compile(optimizer="sgd", loss="mse")
    w0 = [w.copy() for w in mha.get_weights()]
    x, _ = data(seed=9)
    y = rng(9).standard_normal((8, 1)).astype(np.float32)
    m.fit(x, y, batch_size=8, verbose=0)
    for a, b in zip(mha.get_weights(), w0):
        np.testing.assert_array_equal(a, b)
    directional_check(m, x, y, fixed=range(2, 10))   # the attention's 8 weights


# ---- Keras files and configs ----

def keras_opens(path, run, out=None):
    """run(keras, the model Keras loads from boundfit's file at path[, a path to save to]), recorded by the
    file's contents; out: where the file run(...) saves goes (recorded too)"""
    def compute():
        keras = load_keras()
        k = keras.models.load_model(path)
        if out is None:
            return run(keras, k)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, os.path.basename(str(out)))
            got = run(keras, k, p)
            return dict(got, __out__=np.frombuffer(open(p, "rb").read(), np.uint8))
    got = case(compute, label=os.path.basename(path), files=[path])
    if out is not None:
        with open(out, "wb") as f:
            f.write(got.pop("__out__").tobytes())
    return got


def test_keras_file_with_layernorm_opens_in_keras_and_back(tmp_path):
    m = bf.Sequential([layers.Dense(6, input_shape=(3, 4)), layers.LayerNormalization(epsilon=1e-4, center=False),
                       layers.Flatten(), layers.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    x = rng(1).standard_normal((5, 3, 4)).astype(np.float32)
    m.fit(x, rng(2).standard_normal((5, 2)).astype(np.float32), verbose=0)
    m.save(tmp_path / "m.keras")

    def run(keras, km, out):
        km.save(out)
        return dict(p=km.predict(x, verbose=0))
    theirs = keras_opens(tmp_path / "m.keras", run, out=tmp_path / "k.keras")["p"]
    close(theirs, m.predict(x, verbose=0))
    back = bf.models.load_model(tmp_path / "k.keras")
    close(back.predict(x, verbose=0), theirs)
    assert isinstance(back.layers[1], layers.LayerNormalization) and back.layers[1].epsilon == 1e-4


def test_graph_with_masked_attention_saves_in_both_files_and_keras_opens_it(tmp_path):
    m = _compiled(self_attention(True, True, dropout=0.1)(layers, bf.Input, bf.Model))
    x, y = data(mask=True)
    m.fit(x, y, verbose=0)
    want = m.predict(x, verbose=0)
    for name in ("m.npz", "m.keras"):
        m.save(tmp_path / name)
        back = bf.models.load_model(tmp_path / name)
        np.testing.assert_array_equal(back.predict(x, verbose=0), want)
        mha = [l for l in back.layers if isinstance(l, layers.MultiHeadAttention)][0]
        assert mha._causal is True and mha.dropout == 0.1
    k = keras_opens(tmp_path / "m.keras", lambda keras, k: dict(p=k.predict(x, verbose=0)))
    np.testing.assert_allclose(np.asarray(k["p"]), want, rtol=1e-5, atol=1e-6)   # weights in EinsumDense sublayers

    def save(p):   # and a file Keras writes
        keras = load_keras()
        km = self_attention(True, True)(keras.layers, keras.Input, keras.Model)
        km.save(p)
        return dict(p=km.predict(x, verbose=0))
    theirs = keras_file(tmp_path / "k.keras", save)["p"]
    here = bf.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(here.predict(x, verbose=0), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_multi_head_attention_config_round_trips_with_keras(tmp_path):
    from boundfit.saving.config import layer_from_config

    def theirs():
        keras = load_keras()
        k = keras.layers.MultiHeadAttention(2, 3, value_dim=4, output_shape=5, dropout=0.1, use_bias=False,
                                            name="att")
        ki = keras.Input((4, 6))
        k(ki, ki)
        return dict(config=k.get_config(), shapes=[tuple(w.shape) for w in k.get_weights()])
    k = case(theirs)
    b = layer_from_config({"class_name": "MultiHeadAttention", "config": k["config"]})
    assert (b.num_heads, b.key_dim, b.value_dim, b.output_shape_arg, b.dropout, b.use_bias) == (2, 3, 4, 5, 0.1, False)
    bi = bf.Input((4, 6))
    b(bi, bi)
    (tmp_path / "config.json").write_text(json.dumps(b.get_config()))   # Keras's side recorded by the config

    def from_ours():
        keras = load_keras()
        k2 = keras.layers.MultiHeadAttention.from_config(b.get_config())
        ki = keras.Input((4, 6))
        k2(ki, ki)
        return [tuple(w.shape) for w in k2.get_weights()]
    assert case(from_ours, files=[tmp_path / "config.json"]) == k["shapes"]
    with pytest.raises(ValueError, match="use_gate"):
        layer_from_config({"class_name": "MultiHeadAttention", "config": dict(k["config"], use_gate=True)})


# ---- argument errors ----

@pytest.mark.parametrize("kwargs,match", [
    (dict(num_heads=0, key_dim=2), "num_heads"),
    (dict(num_heads=2, key_dim=-1), "key_dim"),
    (dict(num_heads=2, key_dim=2, value_dim=0), "value_dim"),
    (dict(num_heads=2, key_dim=2, dropout=1.0), "dropout"),
    (dict(num_heads=2, key_dim=2, output_shape=(2, 3)), "output_shape"),
    (dict(num_heads=2, key_dim=2, attention_axes=(2,)), "attention_axes"),
    (dict(num_heads=2, key_dim=2, kernel_regularizer="l2"), "kernel_regularizer"),
])
def test_bad_multi_head_attention_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.MultiHeadAttention(**kwargs)


def test_bad_multi_head_attention_calls_raise_before_the_graph_changes():
    q, v, img = bf.Input((4, 6)), bf.Input((5, 6)), bf.Input((4, 4, 3))
    mha = layers.MultiHeadAttention(2, 3)
    with pytest.raises(ValueError, match="query"):
        mha(img, v)
    with pytest.raises(ValueError, match="same length"):
        mha(q, v, key=bf.Input((3, 6)))
    with pytest.raises(ValueError, match="attention_mask"):
        mha(q, v, attention_mask=bf.Input((5, 4)))
    with pytest.raises(TypeError, match="use_causal_mask"):
        mha(q, v, use_causal_mask="yes")
    with pytest.raises(TypeError, match="value"):
        mha(q, np.zeros((1, 5, 6), np.float32))
    with pytest.raises(ValueError, match="return_attention_scores"):
        mha(q, v, return_attention_scores=True)
    with pytest.raises(TypeError, match="unknown call arguments"):
        mha(q, v, bogus=1)
    assert mha._inbound == []
    mha(q, v)
    with pytest.raises(ValueError, match="shares its weights"):
        mha(q, bf.Input((5, 3)))
    with pytest.raises(ValueError, match="use_causal_mask"):
        mha(q, v, use_causal_mask=True)


def test_bad_layernorm_arguments_raise():
    with pytest.raises(ValueError, match="axis"):
        layers.LayerNormalization(axis=[1, 2])
    with pytest.raises(TypeError, match="axis"):
        layers.LayerNormalization(axis="last")
    with pytest.raises(ValueError, match="rms_scaling"):
        layers.LayerNormalization(rms_scaling=True)
    with pytest.raises(ValueError, match="epsilon"):
        layers.LayerNormalization(epsilon=0.0)
    with pytest.raises(ValueError, match="last axis"):
        layers.LayerNormalization(axis=1)(bf.Input((4, 5)))
    layers.LayerNormalization(axis=2)(bf.Input((4, 5)))  # the last axis, counted with the batch axis


def test_attention_mask_input_with_wrong_data_shape_raises_data_error():
    m = _compiled(self_attention(mask=True)(layers, bf.Input, bf.Model))
    (x, mk), y = data(mask=True)
    w0 = m.get_weights()
    with pytest.raises(bf.DataError):
        m.fit([x, mk[:, :, :-1]], y, verbose=0)
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)
