"""Variable-length inputs: keras.Input(shape=(None,)) and (None, features).
The graph is symbolic in the length; each fit / evaluate / predict builds the
engine for the shapes its data brings (weights and optimizer state carry over)
and plans that run exactly. Checked against Keras 3 with the same weights:
predictions at several lengths, a step-by-step decoding loop, two fits at two
lengths (the optimizer state continues); files with a variable-length input
open in both; the errors name the layer or the data. One fit or evaluate over
batches of several lengths (a Sequence of buckets) builds one engine per
length, cached, plans each exactly and checks it before its first step;
fit(lengths=...) plans them all before step one. Keras's side is recorded
(helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit.errors import DataError

import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case, keras_file


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


def pair(build, results, save=None):
    """boundfit's model given Keras's initial weights (before any data: the weights do not depend on the
    length), and results(keras, km) of Keras's model (recorded); save: a path Keras's model is saved to first
    (helpers/keras_recorded.keras_file)"""
    def compute(path=None):
        keras = keras_ref.load()
        km = build(keras)
        if path is not None:
            km.save(path)
        return {"w0": km.get_weights(), "results": results(keras, km)}
    rec = case(compute) if save is None else keras_file(save, compute)
    bm = build(bf)
    bm.set_weights(rec["w0"])
    return rec["results"], bm


def test_predictions_at_several_lengths_match_keras():
    rng = np.random.default_rng(0)
    xs = [rng.integers(0, 40, (9, T)).astype(np.int32) for T in (20, 7, 1, 33)]
    pk, bm = pair(text_model, lambda keras, km: [km.predict(x, verbose=0) for x in xs])
    assert bm.input_shape == (None, None) and bm.output_shape == (None, 1)
    for x, want in zip(xs, pk, strict=True):
        np.testing.assert_allclose(bm.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)


def test_a_step_by_step_decoding_loop_matches_keras():
    def decode(keras, km):   # Keras's loop: each step's prediction, its argmax the next character
        seq, out = np.eye(7, dtype=np.float32)[[3]][None], []    # (1, 1, 7): the seed character
        for _ in range(5):
            out.append(km.predict(seq, verbose=0))
            seq = np.concatenate([seq, np.eye(7, dtype=np.float32)[[int(np.argmax(out[-1][0]))]][None]], axis=1)
        return out
    steps, bm = pair(char_model, decode)
    seq_b = np.eye(7, dtype=np.float32)[[3]][None]
    for pk in steps:
        pb = bm.predict(seq_b, verbose=0)
        np.testing.assert_allclose(pb, pk, rtol=1e-5, atol=1e-6)
        nxt = np.eye(7, dtype=np.float32)[[int(np.argmax(pk[0]))]][None]
        seq_b = np.concatenate([seq_b, nxt], axis=1)


def test_two_fits_at_two_lengths_continue_the_optimizer_as_keras():
    rng = np.random.default_rng(1)
    runs = [(rng.integers(0, 40, (32, T)).astype(np.int32), rng.integers(0, 2, (32, 1)).astype(np.float32))
            for T in (12, 5)]

    def fits(keras, km):
        km.compile(keras.optimizers.Adam(0.01), "binary_crossentropy")
        losses = [km.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0).history["loss"] for x, y in runs]
        return {"losses": losses, "iterations": int(km.optimizer.iterations), "weights": km.get_weights()}
    k, bm = pair(text_model, fits)
    bm.compile(bf.optimizers.Adam(0.01), "binary_crossentropy")
    for (x, y), lk in zip(runs, k["losses"], strict=True):
        hb = bm.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        np.testing.assert_allclose(hb.history["loss"], lk, rtol=1e-4)
    assert int(bm.optimizer.iterations) == k["iterations"] == 4
    for a, b in zip(k["weights"], bm.get_weights(), strict=True):
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
        planned = sum(e.bytes for e in m._last_plan.breakdown if e.category not in ("runtime", "measured", "cached"))
        assert planned == arenas, T
        cached = sum(e.bytes for e in m._last_plan.breakdown if e.category == "cached")
        assert cached == sum(e["engine"].weight_arena_bytes + e["engine"].optimizer_arena_bytes
                             for e in m._engines.values() if e["engine"] is not m._engine) == (T == 30) * cached
        engine_bytes.append(planned)
    assert engine_bytes[1] > engine_bytes[0]   # longer sequences, larger activations


def opened(path, x):
    """Keras's side: the file at path opened in Keras, its input shape and predictions on x"""
    theirs = keras_ref.load().models.load_model(path)
    return {"input_shape": theirs.input_shape, "predict": theirs.predict(x, verbose=0)}


def test_a_variable_length_model_file_opens_in_both(tmp_path):
    x = np.random.default_rng(3).integers(0, 40, (4, 9)).astype(np.int32)
    pk, bm = pair(text_model, lambda keras, km: [km.predict(x[:, :T], verbose=0) for T in (9, 3)],
                  save=tmp_path / "theirs.keras")
    want = pk[0]
    bm.save(tmp_path / "ours.keras")
    theirs = case(lambda: opened(tmp_path / "ours.keras", x), files=[tmp_path / "ours.keras"])
    assert theirs["input_shape"] == (None, None)
    np.testing.assert_allclose(theirs["predict"], want, rtol=1e-5, atol=1e-6)
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    assert ours.input_shape == (None, None)
    for T, want in zip((9, 3), pk, strict=True):
        np.testing.assert_allclose(ours.predict(x[:, :T], verbose=0), want, rtol=1e-5, atol=1e-6)


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
    with pytest.raises(ValueError, match=r"input 0 must have shape \(None, None\)"):   # validation's, named
        m.fit(x, y, validation_data=(np.zeros((4, 5, 2), np.int32), y[:4]), verbose=0)
    with pytest.raises(ValueError, match=r"input 0 must have shape \(None, None\)"):
        m.predict(np.zeros((2, 3, 4), np.int32), verbose=0)


def test_a_variable_length_sequential_runs_saves_and_matches_keras(tmp_path):
    def build(M):
        return M.Sequential([M.Input((None, 7)), M.layers.LSTM(5), M.layers.Dense(2)])
    x = np.random.default_rng(4).standard_normal((3, 9, 7)).astype(np.float32)
    pk, bm = pair(build, lambda keras, km: [km.predict(x[:, :T], verbose=0) for T in (9, 2)])
    for T, want in zip((9, 2), pk, strict=True):
        np.testing.assert_allclose(bm.predict(x[:, :T], verbose=0), want, rtol=1e-5, atol=1e-6)
    bm.save(tmp_path / "seq.keras")
    theirs = case(lambda: opened(tmp_path / "seq.keras", x), files=[tmp_path / "seq.keras"])
    assert theirs["input_shape"] == (None, None, 7)
    np.testing.assert_allclose(theirs["predict"], pk[0], rtol=1e-5, atol=1e-6)


# ---- batches of several lengths in one fit (bucketed, as keras.io's text pipelines batch them) ----

def bucket_model(M, rnn="LSTM"):
    ids = M.Input(shape=(None,), dtype="int32")
    x = M.layers.Embedding(30, 6)(ids)
    x = getattr(M.layers, rnn)(5, return_sequences=True)(x)
    x = M.layers.GlobalAveragePooling1D()(x)
    return M.Model(ids, M.layers.Dense(1, activation="sigmoid")(x))


def bucket_batches(lengths, rows=6, seed=5):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 30, (rows, T)).astype(np.int32), rng.integers(0, 2, (rows, 1)).astype(np.float32))
            for T in lengths]


def bucket_source(M, batches):
    class Buckets(M.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            return batches[i]
    return Buckets()


def test_one_fit_over_batches_of_several_lengths_matches_keras():
    batches = bucket_batches([5, 7, 5, 9])
    val = bucket_batches([5], seed=9)[0]   # validated on the first length's engine, after the epoch's last (9)
    xs = [(x,) for x, _ in batches]

    def fit(keras, km):   # the fit, then evaluate and predict over the same batches
        km.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
        hk = km.fit(bucket_source(keras, batches), epochs=2, shuffle=False, verbose=0, validation_data=val)
        return {"history": hk.history, "iterations": int(km.optimizer.iterations), "weights": km.get_weights(),
                "evaluate": km.evaluate(bucket_source(keras, batches), verbose=0),
                "predict": km.predict(bucket_source(keras, xs), verbose=0)}
    k, bm = pair(bucket_model, fit)
    bm.compile(bf.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    hk = k["history"]
    hb = bm.fit(bucket_source(bf, batches), epochs=2, shuffle=False, verbose=0, validation_data=val)
    for key in ("loss", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(hb.history[key], hk[key], rtol=1e-4)
    np.testing.assert_allclose(hb.history["accuracy"], hk["accuracy"], rtol=1e-6)
    assert int(bm.optimizer.iterations) == k["iterations"] == 8
    for a, b in zip(k["weights"], bm.get_weights(), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=2e-5)
    # evaluate and predict over the same batches: one engine per length, the loss and metric over all of them
    np.testing.assert_allclose(bm.evaluate(bucket_source(bf, batches), verbose=0), k["evaluate"], rtol=1e-4)
    np.testing.assert_allclose(bm.predict(bucket_source(bf, xs), verbose=0), k["predict"], rtol=1e-5, atol=1e-6)


def test_each_length_is_built_once_cached_and_planned_exactly():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy")
    batches = bucket_batches([5, 7, 5, 9, 7])
    m.fit(bucket_source(bf, batches), epochs=1, shuffle=False, verbose=0)
    assert set(m._engines) == {((5,),), ((7,),), ((9,),)}   # one engine per length, 5 and 7 not rebuilt
    engines = {k: e["engine"] for k, e in m._engines.items()}
    runs = m._bucket_runs
    assert [r[0] for r in runs] == [[(5,)], [(7,)], [(5,)], [(9,)], [(7,)]]
    for shapes, plan, stats, engine_bytes in runs:   # every run's arena high-water is its length's plan
        planned = sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured", "cached"))
        assert planned == engine_bytes + stats["run_high_water"], shapes
    assert runs[0][1] is runs[2][1]   # the plan of a length is made once
    m.fit(bucket_source(bf, batches), epochs=1, shuffle=False, verbose=0)
    assert all(m._engines[k]["engine"] is engines[k] for k in engines)   # a second fit rebuilds nothing
    def own(p):   # the plan less the engines cached for the other lengths (more of them later on) and the
        # batches the data source holds (a fit's Python source; estimate_memory has no source)
        return p.host_bytes - sum(e.bytes for e in p.breakdown if e.category == "cached"
                                  or e.name.startswith("Python batches"))
    by_len = {r[0][0][0]: own(r[1]) for r in runs}
    assert by_len[5] < by_len[7] < by_len[9]
    # estimate_memory at the declared lengths: the plan of the largest, equal to the fit's own plans
    est = m.estimate_memory(batch_size=6, lengths=[5, 9, 7])
    assert est.length == 9 and sorted(est.plans_by_length) == [5, 7, 9]
    assert {n: own(p) for n, p in est.plans_by_length.items()} == by_len
    cached = [e for e in est.breakdown if e.category == "cached"]   # the two other lengths' engines, held
    assert len(cached) == 1 and cached[0].bytes == m.cached_engine_bytes() > 0


def test_a_length_that_does_not_fit_stops_before_its_first_step():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy")
    est = m.estimate_memory(batch_size=6, lengths=[5, 4000]).plans_by_length
    new = {n: p.host_bytes - p.held_bytes for n, p in est.items()}
    limit = (new[5] + new[4000]) // 2
    batches = bucket_batches([5, 4000], seed=6)
    w0 = m.get_weights()
    with pytest.raises(bf.MemoryBudgetError, match=r"batch 1: input shape \(None, 4000\)") as err:
        m.fit(bucket_source(bf, batches), epochs=1, shuffle=False, verbose=0, memory_limit=limit)
    assert err.value.needed_bytes > err.value.available_bytes
    assert int(m._engine.iterations()) == 1   # the step of batch 0 was taken, nothing after it
    assert any((a != b).any() for a, b in zip(w0, m.get_weights()))
    # declared upfront: the whole fit is planned before step one, so it refuses before any step
    m2 = bucket_model(bf)
    m2.compile("adam", "binary_crossentropy")
    w0 = m2.get_weights()
    with pytest.raises(bf.MemoryBudgetError, match=r"input shape \(None, 4000\)"):
        m2.fit(bucket_source(bf, batches), lengths=[5, 4000], verbose=0, memory_limit=limit)
    assert int(m2.optimizer.iterations) == 0
    for a, b in zip(w0, m2.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_declared_lengths_plan_the_fit_upfront_and_refuse_others():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy")
    batches = bucket_batches([5, 9, 5])
    m.fit(bucket_source(bf, batches), lengths=[5, 9], shuffle=False, verbose=0)
    assert m._last_plan is m._bucket_plans[((9,),)]   # the fit's plan: its largest length's
    with pytest.raises(DataError, match=r"batch 1: input shape \(None, 7\) is not one of the lengths"):
        m.fit(bucket_source(bf, bucket_batches([5, 7])), lengths=[5, 9], shuffle=False, verbose=0)
    with pytest.raises(ValueError, match="lengths must be a list of positive ints"):
        m.fit(bucket_source(bf, batches), lengths=[5, 0], verbose=0)
    with pytest.raises(ValueError, match="lengths: declared lengths apply to a Sequence"):
        m.fit(*batches[0], lengths=[5], verbose=0)
    fixed = bf.Sequential([bf.Input((3,)), bf.layers.Dense(1)])
    fixed.compile("sgd", "mse")
    with pytest.raises(ValueError, match="no variable-length input"):
        fixed.fit(np.zeros((4, 3)), np.zeros((4, 1)), lengths=[3], verbose=0)
    seq_out = bf.Model(m.input, m.layers[2].output)   # (None, None, 5): one output shape per length
    with pytest.raises(DataError, match=r"batch 1: the predictions of one call are joined, so they need one output"):
        seq_out.predict(bucket_source(bf, [(x,) for x, _ in batches]), verbose=0)


def test_a_length_the_layers_refuse_mid_fit_names_the_batch_and_keeps_the_model():
    def build(M):
        ids = M.Input(shape=(None,), dtype="int32")
        x = M.layers.Conv1D(3, 5)(M.layers.Embedding(30, 4)(ids))   # needs 5 steps or more
        return M.Model(ids, M.layers.Dense(1)(M.layers.GlobalMaxPooling1D()(x)))
    m = build(bf)
    m.compile("sgd", "mse")
    with pytest.raises(DataError, match=r"batch 1: .*cannot run on inputs of shape \[\(None, 3\)\]"):
        m.fit(bucket_source(bf, bucket_batches([6, 3])), shuffle=False, verbose=0)
    assert m._bound == [(6,)] and int(m._engine.iterations()) == 1   # the engine of the last step, current


def test_moving_metric_statistics_between_runs_checks_its_argument():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    m.fit(bucket_source(bf, bucket_batches([5])), verbose=0)
    run = m._engine.open_run("evaluate", 4)
    try:
        sums = run.metric_sums()
        assert len(sums) > 0 and all(v == 0.0 for v in sums)
        with pytest.raises(ValueError, match=f"set_metric_sums: 1 values, the run's metrics hold {len(sums)}"):
            run.set_metric_sums([1.0])
        with pytest.raises(TypeError):
            run.set_metric_sums(["x"] * len(sums))
        assert run.metric_sums() == sums   # all or nothing
        run.set_metric_sums([2.0] * len(sums))
        assert run.metric_sums() == [2.0] * len(sums)
    finally:
        run.close()
    with pytest.raises(Exception, match="closed|not open"):
        run.metric_sums()
