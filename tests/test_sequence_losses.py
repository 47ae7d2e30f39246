"""Losses and metrics per time step on sequence outputs (T, C), as Keras 3:
each loss works over the last axis at every position and is averaged over
all B*T positions; sample_weight (B,) is broadcast over the steps (Keras
itself takes the same weights as (B, T)); an Embedding(mask_zero=True) mask
the output carries weighs the loss by B*T / (unmasked positions) there and 0
elsewhere, and the accuracy / mean-error metrics count unmasked positions only
(RootMeanSquaredError, like Keras's, ignores the mask). Against Keras 3 (JAX,
CPU): loss, metrics and one SGD step; finite differences; plans equal to the
arenas on cpu and emu; a learnable tagger; Keras files both ways; every new
refusal. Keras's side is recorded (helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file
from keras_ref import load

T, V, E, U, C, B = 6, 9, 4, 5, 3, 5
rng = np.random.default_rng(0)
IDS = rng.integers(1, V, (B, T))
IDS[0, 4:] = 0      # padded at the end
IDS[1, :2] = 0      # padded at the start
IDS[3, 2] = 0       # a hole
IDS[4, 1:] = 0      # one step left
TAGS = rng.integers(0, C, (B, T))
SW = np.array([1.0, 2.0, 0.5, 0.0, 3.0], np.float32)
TARGETS = {
    "sparse_categorical_crossentropy": TAGS,
    "categorical_crossentropy": np.eye(C, dtype=np.float32)[TAGS],
    "binary_crossentropy": (rng.random((B, T, C)) > 0.5).astype(np.float32),
    "mse": rng.standard_normal((B, T, C)).astype(np.float32),
}
ACT = {"sparse_categorical_crossentropy": "softmax", "categorical_crossentropy": "softmax",
       "binary_crossentropy": "sigmoid", "mse": None}


def metrics_of(M, loss):
    """(metrics, weighted_metrics) built from the module M (keras or boundfit)."""
    if loss == "sparse_categorical_crossentropy":
        return ["accuracy", M.metrics.SparseTopKCategoricalAccuracy(k=2)], ["accuracy"]
    if loss == "categorical_crossentropy":
        return ["accuracy", M.metrics.TopKCategoricalAccuracy(k=2)], ["accuracy"]
    if loss == "binary_crossentropy":
        return [M.metrics.BinaryAccuracy()], [M.metrics.BinaryAccuracy()]
    return ["mae", M.metrics.RootMeanSquaredError()], ["mae"]


def tagger(K, Ls, loss="sparse_categorical_crossentropy", mask=True, bidir=False):
    """Embedding -> (Bidirectional) LSTM(return_sequences) -> Dense per step."""
    rnn = Ls.LSTM(U, return_sequences=True)
    return K.Sequential([K.Input((T,)), Ls.Embedding(V, E, mask_zero=mask),
                         Ls.Bidirectional(rnn) if bidir else rnn, Ls.Dense(C, activation=ACT[loss])])


def same_weights(mk, mb, seed=1):
    w0 = [(np.random.default_rng(seed).standard_normal(w.shape) * 0.5).astype(np.float32) for w in mk.get_weights()]
    mk.set_weights(w0)
    mb.set_weights(w0)
    return w0


def close(ref, got, rtol=1e-5, scale=None):
    """Max-norm relative error against the largest entry (or a given scale:
    weight updates relative to the largest one, as float32 sums of many terms
    are accumulated in a different order by XLA and BLAS)."""
    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    assert ref.shape == got.shape
    top = max(np.abs(ref).max(), scale or 0.0, 1e-6)
    assert np.abs(ref - got).max() <= rtol * top, (np.abs(ref - got).max(), top)


CASES = [("sparse_categorical_crossentropy", True, True), ("sparse_categorical_crossentropy", True, False),
         ("sparse_categorical_crossentropy", False, True),
         ("categorical_crossentropy", True, True), ("categorical_crossentropy", False, False),
         ("binary_crossentropy", True, True),
         ("mse", True, True), ("mse", False, False)]


@pytest.mark.parametrize("loss,mask,weighted", CASES,
                         ids=[f"{a[:4]}-{'mask' if m else 'nomask'}-{'sw' if w else 'nosw'}" for a, m, w in CASES])
def test_loss_metrics_and_sgd_step_match_keras(loss, mask, weighted):
    y = TARGETS[loss]
    sw = SW if weighted else None
    swk = np.broadcast_to(SW[:, None], (B, T)).copy() if weighted else None  # Keras: (B,) and a (B, T) mask clash

    def keras_side():   # weights set, evaluate, one SGD step
        keras = load()
        mk = tagger(keras, keras.layers, loss, mask)
        w0 = same_weights(mk, mk)
        mets, wmets = metrics_of(keras, loss)
        mk.compile(optimizer=keras.optimizers.SGD(0.5), loss=loss, metrics=mets, weighted_metrics=wmets)
        rk = mk.evaluate(IDS, y, sample_weight=swk, batch_size=B, verbose=0, return_dict=True)
        hk = mk.fit(IDS, y, sample_weight=swk, batch_size=B, epochs=1, shuffle=False, verbose=0).history["loss"][0]
        return {"w0": w0, "evaluate": rk, "loss": hk, "weights": mk.get_weights()}
    k = case(keras_side)
    mb = tagger(bf, layers, loss, mask)
    w0 = k["w0"]
    mb.set_weights(w0)
    mets, wmets = metrics_of(bf, loss)
    mb.compile(optimizer=bf.optimizers.SGD(0.5), loss=loss, metrics=mets, weighted_metrics=wmets)
    rk = k["evaluate"]
    rb = mb.evaluate(IDS, y, sample_weight=sw, batch_size=B, verbose=0, return_dict=True)
    assert set(rk) == set(rb)
    for name in rk:
        assert abs(rk[name] - rb[name]) <= 1e-5 * max(abs(rk[name]), 1e-3), (name, rk[name], rb[name])
    hk = k["loss"]
    hb = mb.fit(IDS, y, sample_weight=sw, batch_size=B, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    assert abs(hk - hb) <= 1e-5 * abs(hk)
    dk = [w - v for w, v in zip(w0, k["weights"], strict=True)]
    db = [w - v for w, v in zip(w0, mb.get_weights())]
    top = max(float(np.abs(d).max()) for d in dk)
    for a, b in zip(dk, db):
        close(a, b, scale=top)


def test_a_tagger_with_a_sentence_output_matches_keras():
    """Two outputs: tags per step (masked SCCE) and a class per sentence
    (GlobalAveragePooling1D over the unmasked steps, per-sample SCCE), with
    loss_weights and sample_weight: total and per-output losses, metrics and
    one SGD step."""
    def two(K, Ls):
        i = K.Input((T,))
        h = Ls.LSTM(U, return_sequences=True)(Ls.Embedding(V, E, mask_zero=True)(i))
        tags = Ls.Dense(C, activation="softmax", name="tags")(h)
        cls = Ls.Dense(2, activation="softmax", name="cls")(Ls.GlobalAveragePooling1D()(h))
        return K.Model(i, [tags, cls])

    def compile(M, m):
        m.compile(optimizer=M.optimizers.SGD(0.5), loss=["sparse_categorical_crossentropy"] * 2,
                  loss_weights=[1.0, 0.5], metrics=[["accuracy"], ["accuracy"]])
    y = [TAGS, np.arange(B) % 2]
    swk = [np.broadcast_to(SW[:, None], (B, T)).copy(), SW]

    def keras_side():   # weights set, evaluate, one SGD step
        keras = load()
        mk = two(keras, keras.layers)
        w0 = same_weights(mk, mk)
        compile(keras, mk)
        rk = mk.evaluate(IDS, y, sample_weight=swk, batch_size=B, verbose=0, return_dict=True)
        mk.fit(IDS, y, sample_weight=swk, batch_size=B, epochs=1, shuffle=False, verbose=0)
        return {"w0": w0, "evaluate": rk, "weights": mk.get_weights()}
    k = case(keras_side)
    mb = two(bf, layers)
    w0 = k["w0"]
    mb.set_weights(w0)
    compile(bf, mb)
    rk = k["evaluate"]
    rb = mb.evaluate(IDS, y, sample_weight=SW, batch_size=B, verbose=0, return_dict=True)
    assert set(rk) == set(rb)
    for name in rk:
        assert abs(rk[name] - rb[name]) <= 1e-5 * max(abs(rk[name]), 1e-3), (name, rk[name], rb[name])
    mb.fit(IDS, y, sample_weight=SW, batch_size=B, epochs=1, shuffle=False, verbose=0)
    dk = [w - v for w, v in zip(w0, k["weights"], strict=True)]
    top = max(float(np.abs(d).max()) for d in dk)
    for a, w, b in zip(dk, w0, mb.get_weights()):
        close(a, w - b, scale=top)


def test_masked_positions_play_no_part():
    """Changing the targets at masked positions changes neither the loss nor
    the metrics nor the gradient; the padding id's table row gets none."""
    m = tagger(bf, layers)
    m.compile(optimizer=bf.optimizers.SGD(1.0), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    other = np.where(IDS == 0, (TAGS + 1) % C, TAGS)
    r0 = m.evaluate(IDS, TAGS, batch_size=B, verbose=0, return_dict=True)
    r1 = m.evaluate(IDS, other, batch_size=B, verbose=0, return_dict=True)
    assert r0 == r1
    w0 = m.get_weights()
    m.fit(IDS, TAGS, batch_size=B, epochs=1, shuffle=False, verbose=0)
    g0 = [a - b for a, b in zip(w0, m.get_weights())]
    m.set_weights(w0)
    m.fit(IDS, other, batch_size=B, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(g0, [a - b for a, b in zip(w0, m.get_weights())]):
        np.testing.assert_array_equal(a, b)
    assert np.all(g0[0][0] == 0)


def test_a_bidirectional_tagger_matches_keras_and_an_all_padded_batch_weighs_nothing():
    """The user's tagger (Bidirectional LSTM); a batch with no unmasked step has
    loss 0 (Keras's divide_no_nan) and leaves the weights as they were."""
    def keras_side():
        keras = load()
        mk = tagger(keras, keras.layers, bidir=True)
        w0 = same_weights(mk, mk)
        mk.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        return {"w0": w0, "evaluate": mk.evaluate(IDS, TAGS, batch_size=B, verbose=0, return_dict=True),
                "predict": mk.predict(IDS, verbose=0)}
    k = case(keras_side)
    mb = tagger(bf, layers, bidir=True)
    mb.set_weights(k["w0"])
    mb.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    rk = k["evaluate"]
    rb = mb.evaluate(IDS, TAGS, batch_size=B, verbose=0, return_dict=True)
    for name in rk:
        assert abs(rk[name] - rb[name]) <= 1e-5 * abs(rk[name]), name
    close(k["predict"], mb.predict(IDS, verbose=0))
    w0 = mb.get_weights()
    h = mb.fit(np.zeros_like(IDS), TAGS, batch_size=B, epochs=1, verbose=0).history
    assert h["loss"] == [0.0] and h["accuracy"] == [0.0]
    for a, b in zip(w0, mb.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("loss,mask", [("sparse_categorical_crossentropy", True), ("categorical_crossentropy", False),
                                       ("binary_crossentropy", True)])
def test_gradients_match_finite_differences(loss, mask):
    """Central differences of the float64-summed loss along random directions
    (float32 forward: eps 1e-3, 2 % tolerance)."""
    m = tagger(bf, layers, loss, mask)
    same_weights(m, m, seed=3)
    y = TARGETS[loss]
    w0 = m.get_weights()
    m.compile(optimizer=bf.optimizers.SGD(1.0), loss=loss)
    m.fit(IDS, y, sample_weight=SW, batch_size=B, epochs=1, shuffle=False, verbose=0)
    g = [a.astype(np.float64) - b for a, b in zip(w0, m.get_weights())]
    r, eps = np.random.default_rng(0), 1e-3
    for _ in range(3):
        d = [r.standard_normal(w.shape) for w in w0]
        ls = []
        for s in (1, -1):
            m.set_weights([w + s * eps * di for w, di in zip(w0, d)])
            ls.append(m.evaluate(IDS, y, sample_weight=SW, batch_size=B, verbose=0, return_dict=True)["loss"])
        fd, an = (ls[0] - ls[1]) / (2 * eps), sum(float((gi * di).sum()) for gi, di in zip(g, d))
        assert abs(fd - an) <= 2e-2 * max(abs(fd), abs(an), 1e-2), (fd, an)


@pytest.mark.parametrize("device", ["cpu", "emu"])
@pytest.mark.parametrize("loss,sw", [("sparse_categorical_crossentropy", SW), ("categorical_crossentropy", SW),
                                     ("sparse_categorical_crossentropy", None)], ids=["scce-sw", "cce-sw", "scce"])
def test_plan_equals_arena_high_water(loss, sw, device):
    m = tagger(bf, layers, loss, bidir=True)
    mets, wmets = metrics_of(bf, loss)
    m.compile(optimizer="adam", loss=loss, metrics=mets, weighted_metrics=wmets)
    plan = m.estimate_memory(batch_size=3, device=device)
    m.fit(IDS, TARGETS[loss], sample_weight=sw, batch_size=3, epochs=1, verbose=0, device=device)
    if sw is not None:
        plan = m._last_plan  # fit's own: estimate_memory cannot know of sample-weight slots
    stats = m._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    if device == "cpu":
        assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    else:
        assert plan.device_bytes > 0


def test_emu_device_path_trains_as_the_cpu():
    a, b = tagger(bf, layers, bidir=True), tagger(bf, layers, bidir=True)
    b.set_weights(a.get_weights())
    hs = []
    for m, dev in ((a, "cpu"), (b, "emu")):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy"])
        hs.append(m.fit(IDS, TAGS, sample_weight=SW, batch_size=2, epochs=2, verbose=0, shuffle=False,
                        device=dev).history)
    assert hs[0] == hs[1]
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_a_tagger_learns_tag_of_token():
    """tag = token % C on padded sentences: > 0.9 masked accuracy; evaluate and
    predict agree with it."""
    r = np.random.default_rng(5)
    n = 256
    ids = r.integers(1, V, (n, T))
    lengths = r.integers(2, T + 1, n)
    ids[np.arange(T)[None, :] >= lengths[:, None]] = 0
    tags = np.where(ids > 0, ids % C, 0)
    m = tagger(bf, layers)
    m.compile(optimizer=bf.optimizers.Adam(0.03), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    h = m.fit(ids, tags, batch_size=32, epochs=15, verbose=0)
    assert h.history["accuracy"][-1] > 0.9
    res = m.evaluate(ids, tags, batch_size=64, verbose=0, return_dict=True)
    p = m.predict(ids, batch_size=64, verbose=0)
    assert p.shape == (n, T, C)
    keep = ids > 0
    acc = float((p.argmax(-1) == tags)[keep].mean())
    assert res["accuracy"] > 0.9 and abs(res["accuracy"] - acc) < 1e-6
    lp = -np.log(np.clip(np.take_along_axis(p, tags[..., None], -1)[..., 0], 1e-7, 1 - 1e-7))
    # evaluate: the mean over batches of 64 of each batch's masked mean, weighted by batch size (Keras)
    want = np.mean([lp[i:i + 64][keep[i:i + 64]].mean() for i in range(0, n, 64)])
    assert abs(res["loss"] - want) <= 1e-5 * want


def results(mk):
    """Keras's predictions and evaluate's results on the tags"""
    return {"predict": mk.predict(IDS, verbose=0),
            "evaluate": mk.evaluate(IDS, TAGS, batch_size=B, verbose=0, return_dict=True)}


def test_keras_files_both_ways(tmp_path):
    mb = tagger(bf, layers, bidir=True)
    mb.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    mb.save(tmp_path / "bf.keras")
    k = case(lambda: results(load().saving.load_model(tmp_path / "bf.keras")), files=[tmp_path / "bf.keras"])
    close(k["predict"], mb.predict(IDS, verbose=0))
    rk = k["evaluate"]
    rb = mb.evaluate(IDS, TAGS, batch_size=B, verbose=0, return_dict=True)
    assert abs(rk["loss"] - rb["loss"]) <= 1e-5 * rk["loss"] and abs(rk["accuracy"] - rb["accuracy"]) < 1e-6

    def save(p):
        keras = load()
        mk2 = tagger(keras, keras.layers, bidir=True)
        mk2.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        mk2.save(p)
        return results(mk2)
    k = keras_file(tmp_path / "k.keras", save)
    mb2 = bf.models.load_model(tmp_path / "k.keras")
    close(k["predict"], mb2.predict(IDS, verbose=0))
    rk = k["evaluate"]
    rb = mb2.evaluate(IDS, TAGS, batch_size=B, verbose=0, return_dict=True)
    assert abs(rk["loss"] - rb["loss"]) <= 1e-5 * rk["loss"] and abs(rk["accuracy"] - rb["accuracy"]) < 1e-6


def compiled_tagger(**kw):
    m = tagger(bf, layers, **kw)
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


@pytest.mark.parametrize("y,match", [
    (TAGS[:, :4], r"one class id per position .* per-sample shape \(6,\), got \(4,\)"),
    (TAGS[:, 0], r"one class id per position .* got \(\)"),
    (np.eye(C)[TAGS], r"one class id per position .* got \(6, 3\)"),
])
def test_targets_of_the_wrong_shape_raise_data_error_before_anything_runs(y, match):
    m = compiled_tagger()
    w = m.get_weights()
    with pytest.raises(bf.DataError, match=match):
        m.fit(IDS, y, verbose=0)
    for a, b in zip(w, m.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [-1, 3, 1.5])
def test_a_bad_class_id_names_batch_sample_position_and_value(bad):
    m = compiled_tagger()
    w = m.get_weights()
    y = TAGS.copy().astype(np.float32)
    y[2, 4] = bad
    with pytest.raises(bf.DataError, match=rf"batch 0: label {bad:g} in row 2, position 4 is not a class id in \[0, 3\)"):
        m.fit(IDS, y, batch_size=B, shuffle=False, verbose=0)  # row: the row of the batch
    for a, b in zip(w, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(bf.DataError, match="row 2, position 4"):
        m.evaluate(IDS, y, batch_size=B, verbose=0)


def test_class_weight_on_a_sequence_is_refused_by_name():
    """(per-step sample_weight (B, T) trains as Keras's: tests/test_temporal_weights.py)"""
    m = compiled_tagger()
    with pytest.raises(ValueError, match="class_weight: the model's output .* is a sequence"):
        m.fit(IDS, TAGS, class_weight={0: 1.0, 1: 2.0}, verbose=0)


def test_a_masked_loss_split_into_micro_batches_is_refused():
    """Keras normalizes a masked loss by the whole batch's unmasked steps; a
    batch split into micro-batches cannot, so it is refused before any update."""
    m = compiled_tagger()
    w = m.get_weights()
    with pytest.raises(ValueError, match="cannot be split into micro-batches"):
        m.fit(IDS, TAGS, batch_size=4, micro_batch=2, verbose=0)
    for a, b in zip(w, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    # unmasked, micro-batches give the same update as the whole batch
    a, b = compiled_tagger(mask=False), compiled_tagger(mask=False)
    b.set_weights(a.get_weights())
    a.fit(IDS[:4], TAGS[:4], batch_size=4, shuffle=False, verbose=0)
    b.fit(IDS[:4], TAGS[:4], batch_size=4, micro_batch=2, shuffle=False, verbose=0)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-7)


@pytest.mark.gpu
def test_a_masked_tagger_trains_on_cuda_as_on_the_cpu():
    """Skipped without a GPU (the CUDA report's reason): the masked tagger with
    sample and weighted metrics, trained on both devices from the same weights;
    the device plan equals the device arena; a bad id raises there too."""
    from test_cuda_backend import _REASON, _assert_weights_close, _train_both
    if _REASON is not None:
        pytest.skip(_REASON)

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                    metrics=["accuracy", bf.metrics.SparseTopKCategoricalAccuracy(k=2)], weighted_metrics=["accuracy"])

    cpu, gpu, hc, hg = _train_both(lambda: tagger(bf, layers, bidir=True), compile_kw, IDS, TAGS, batch_size=B,
                                   epochs=2, sample_weight=SW)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "masked tagger")
    for name in hc.history:
        np.testing.assert_allclose(hg.history[name], hc.history[name], rtol=1e-4)
    stats = gpu._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    y = TAGS.copy()
    y[3, 5] = C
    with pytest.raises(bf.DataError, match="row 3, position 5"):
        gpu.fit(IDS, y, batch_size=B, shuffle=False, verbose=0, device="cuda")
