"""Graphs with main's training features: several outputs each with its own
Keras loss (label smoothing, Huber delta, from_logits) and loss weight,
metrics per output with Keras's history names, sample weights, the Keras 3
optimizers with clipping and weight decay, schedules computed in the engine,
exact plans, Keras files and checkpoints of graphs, and what is refused with a
clear error (class_weight and per-output sample weights on several outputs).
Keras 3 (JAX, CPU) is the reference, its side recorded
(helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers

import keras_ref
from helpers.keras_recorded import case

rng = np.random.default_rng(11)
N = 32
X = rng.standard_normal((N, 5)).astype(np.float32)
YC = rng.integers(0, 3, N)
YB = (rng.random((N, 1)) > 0.5).astype(np.float32)
YR = rng.standard_normal((N, 2)).astype(np.float32)
SW = rng.uniform(0.2, 2.0, N).astype(np.float32)


def three_heads(lib):
    """A shared trunk (a Dense called twice, a skip), three outputs: softmax
    classes, a sigmoid unit, a linear regression."""
    L = lib.layers
    inp = lib.Input((5,), name="x")
    h = L.Dense(8, activation="tanh", name="h")(inp)
    shared = L.Dense(8, activation="relu", name="shared")
    t = L.Add(name="skip")([h, shared(shared(h))])
    return lib.Model(inp, [L.Dense(3, activation="softmax", name="cls")(t),
                           L.Dense(1, activation="sigmoid", name="bin")(t),
                           L.Dense(2, name="reg")(t)])


LAYERS = ("h", "shared", "cls", "bin", "reg")


def pair(run, build=three_heads, names=LAYERS):
    """boundfit's model given the initial weights of Keras's, and Keras's side (recorded): the results of
    run(keras, k) and its weights after, layer by layer"""
    def keras_side():
        keras = keras_ref.load()
        k = build(keras)
        w0 = {name: k.get_layer(name).get_weights() for name in names}
        results = run(keras, k)
        return {"w0": w0, "results": results, "weights": {name: k.get_layer(name).get_weights() for name in names}}
    rec = case(keras_side)
    m = build(bf)
    for name in names:
        m.get_layer(name).set_weights(rec["w0"][name])
    return m, rec


def losses(lib):
    return {"cls": lib.losses.CategoricalCrossentropy(label_smoothing=0.1),
            "bin": lib.losses.BinaryCrossentropy(label_smoothing=0.2),
            "reg": lib.losses.Huber(delta=0.5)}


def onehot(y, c=3):
    return np.eye(c, dtype=np.float32)[y]


def assert_weights_match(m, k, rtol=1e-5, atol=1e-6):
    """boundfit's weights against Keras's recorded ones (pair's k["weights"])"""
    for name in LAYERS:
        for a, b in zip(m.get_layer(name).get_weights(), k[name], strict=True):
            np.testing.assert_allclose(a, np.asarray(b), rtol=rtol, atol=atol)


def test_three_outputs_losses_metrics_sample_weights_and_adamw_clipping_match_keras():
    metrics = lambda lib: {"cls": ["accuracy", lib.metrics.TopKCategoricalAccuracy(k=2, name="top2")],
                           "bin": [lib.metrics.AUC(num_thresholds=50, name="auc"), "accuracy"],
                           "reg": ["mae"]}
    weights = {"cls": 1.0, "bin": 0.5, "reg": 2.0}
    y = [onehot(YC), YB, YR]

    def run(lib, model):   # fit, then evaluate
        model.compile(optimizer=lib.optimizers.AdamW(0.01, weight_decay=0.05, clipnorm=0.5), loss=losses(lib),
                      loss_weights=weights, metrics=metrics(lib))
        h = model.fit(X, y, sample_weight=SW, batch_size=8, epochs=2, shuffle=False, verbose=0).history
        return h, model.evaluate(X, y, sample_weight=SW, batch_size=8, verbose=0, return_dict=True)
    m, k = pair(run)
    (hk, ek), (hb, eb) = k["results"], run(bf, m)
    assert set(hb) == set(hk) == {"loss", "cls_loss", "bin_loss", "reg_loss", "cls_accuracy", "cls_top2",
                                  "bin_auc", "bin_accuracy", "reg_mae"}
    for key in hk:
        np.testing.assert_allclose(hb[key], hk[key], rtol=2e-4, atol=2e-5, err_msg=key)
    assert_weights_match(m, k["weights"], rtol=2e-4, atol=2e-5)
    assert set(eb) == set(ek)
    for key in ek:
        np.testing.assert_allclose(eb[key], ek[key], rtol=2e-4, atol=2e-5, err_msg=key)


def test_weighted_metrics_per_output_and_validation_sample_weights_match_keras():
    kw = lambda lib: dict(loss=["categorical_crossentropy", "binary_crossentropy", "mse"],
                          weighted_metrics=[["categorical_accuracy"], ["binary_accuracy"], ["mse"]])
    y = [onehot(YC), YB, YR]
    val = (X[:16], [a[:16] for a in y], SW[:16])

    def run(lib, model):
        model.compile(optimizer=lib.optimizers.SGD(0.05, momentum=0.9), **kw(lib))
        return model.fit(X, y, sample_weight=SW, validation_data=val, batch_size=16, epochs=2, shuffle=False,
                         verbose=0).history
    m, k = pair(run)
    hk = k["results"]
    hb = run(bf, m)
    assert set(hb) == set(hk)
    assert "val_bin_binary_accuracy" in hb and "reg_loss" in hb
    for key in hk:
        np.testing.assert_allclose(hb[key], hk[key], rtol=2e-4, atol=2e-5, err_msg=key)
    assert_weights_match(m, k["weights"], rtol=2e-4, atol=2e-5)


def test_schedule_and_global_clipnorm_on_a_graph_with_a_shared_layer_match_keras():
    sched = lambda lib: lib.optimizers.schedules.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)
    y = [onehot(YC), YB, YR]

    def run(lib, model):
        model.compile(optimizer=lib.optimizers.Nadam(sched(lib), global_clipnorm=0.3),
                      loss=["categorical_crossentropy", "binary_crossentropy", "mae"])
        return model.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    m, k = pair(run)
    hk = k["results"]
    hb = run(bf, m)
    for key in hk:
        np.testing.assert_allclose(hb[key], hk[key], rtol=2e-4, atol=2e-5, err_msg=key)
    assert_weights_match(m, k["weights"], rtol=2e-4, atol=2e-5)
    assert m.optimizer.iterations == 8


def test_clipnorm_clips_a_layer_called_twice_once_as_keras():
    def run(lib, model):
        model.compile(optimizer=lib.optimizers.SGD(0.5, clipnorm=0.01),
                      loss=["categorical_crossentropy", "binary_crossentropy", "mse"])
        model.fit(X, [onehot(YC), YB, YR], batch_size=N, epochs=1, shuffle=False, verbose=0)
    m, k = pair(run)
    run(bf, m)
    assert_weights_match(m, k["weights"])


def test_single_output_functional_model_keeps_the_plain_metric_names():
    inp = bf.Input((5,))
    m = bf.Model(inp, layers.Dense(3, activation="softmax", name="out")(layers.Dense(4)(inp)))
    m.compile("adam", bf.losses.SparseCategoricalCrossentropy(), metrics=["accuracy", "sparse_top_k_categorical_accuracy"],
              weighted_metrics=["accuracy"])
    h = m.fit(X, YC, sample_weight=SW, epochs=1, verbose=0).history
    assert set(h) == {"loss", "accuracy", "sparse_top_k_categorical_accuracy", "weighted_accuracy"}
    assert m.metrics_names == ["loss", "accuracy", "sparse_top_k_categorical_accuracy", "weighted_accuracy"]


def test_a_metric_that_cannot_read_its_outputs_targets_names_the_output():
    m = three_heads(bf)
    with pytest.raises(ValueError, match="'sparse_categorical_accuracy' \\(output 'reg'\\)"):
        m.compile("sgd", loss="mse", metrics={"reg": ["sparse_categorical_accuracy"]})
    assert m.optimizer is None  # nothing changed


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_plan_equals_the_arenas_with_per_output_metrics_and_weight_slots(device):
    m = three_heads(bf)
    m.compile(optimizer=bf.optimizers.Adam(amsgrad=True, clipvalue=1.0),
              loss=["categorical_crossentropy", "binary_crossentropy", "mse"],
              metrics=[["accuracy"], [bf.metrics.AUC(num_thresholds=300)], ["rmse"]], weighted_metrics=["mae"])
    m.fit(X, [onehot(YC), YB, YR], sample_weight=SW, batch_size=8, epochs=1, verbose=0, device=device)
    plan = m._last_plan
    s = m._last_run_stats[0]
    assert s["run_high_water"] == s["run_reserved"]
    where = plan.device_bytes if device == "emu" else plan.host_bytes
    assert s["run_reserved"] <= where
    assert any("metric" in e.name for e in plan.breakdown)


def test_emu_device_gives_the_cpu_updates_and_metrics_on_three_outputs():
    results = []
    for device in ("cpu", "emu"):
        m = three_heads(bf)
        m.set_weights(three_heads_weights)
        m.compile(optimizer=bf.optimizers.RMSprop(0.01, centered=True, momentum=0.5),
                  loss=losses(bf), metrics={"bin": ["accuracy"], "reg": ["mse"]})
        h = m.fit(X, [onehot(YC), YB, YR], sample_weight=SW, batch_size=8, epochs=2, shuffle=False, verbose=0,
                  device=device).history
        results.append((h, m.get_weights()))
    (h0, w0), (h1, w1) = results
    assert set(h0) == {"loss", "cls_loss", "bin_loss", "reg_loss", "bin_accuracy", "reg_mse"}
    for key in h0:
        np.testing.assert_allclose(h0[key], h1[key], rtol=1e-5, atol=1e-6)
    for a, b in zip(w0, w1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


three_heads_weights = three_heads(bf).get_weights()


def test_class_weight_and_per_output_sample_weights_on_several_outputs_are_refused():
    m = three_heads(bf)
    m.compile("sgd", loss=["categorical_crossentropy", "binary_crossentropy", "mse"])
    before = m.get_weights()
    y = [onehot(YC), YB, YR]
    with pytest.raises(ValueError, match="class_weight is only supported for models with a single output"):
        m.fit(X, y, class_weight={0: 1.0, 1: 2.0}, verbose=0)
    with pytest.raises(ValueError, match="per-output sample weights .* not implemented yet"):
        m.fit(X, y, sample_weight=[SW, SW, SW], verbose=0)
    with pytest.raises(ValueError, match="per-output sample weights .* not implemented yet"):
        m.evaluate(X, y, sample_weight={"cls": SW}, verbose=0)
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert m.optimizer.iterations == 0


@pytest.mark.parametrize("name", ["g.keras", "g.npz"])
def test_graphs_round_trip_in_keras_files_and_in_the_graph_file(tmp_path, name):
    m = three_heads(bf)
    m.compile(optimizer=bf.optimizers.Adam(0.01), loss=losses(bf), loss_weights=[1.0, 0.5, 2.0],
              metrics={"cls": ["accuracy"], "bin": [bf.metrics.AUC(num_thresholds=20, name="auc")]},
              weighted_metrics={"reg": ["mae"]})
    y = [onehot(YC), YB, YR]
    m.fit(X, y, sample_weight=SW, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save_weights(tmp_path / "g.weights.h5")
    assert m.get_config()["output_layers"] == [["cls", 0, 0], ["bin", 0, 0], ["reg", 0, 0]]
    m.save(tmp_path / name)
    m2 = bf.models.load_model(tmp_path / name)
    assert m2.compiled_metrics == m.compiled_metrics == ["cls_accuracy", "bin_auc", "reg_mae"]
    assert [l.label_smoothing for l in m2._out_losses] == pytest.approx([0.1, 0.2, 0.0])
    assert m2._out_losses[2].delta == 0.5 and m2._loss_weights == [1.0, 0.5, 2.0]
    assert m2.optimizer.iterations == m.optimizer.iterations
    h1 = m.fit(X, y, sample_weight=SW, batch_size=8, epochs=1, shuffle=False, verbose=0).history
    h2 = m2.fit(X, y, sample_weight=SW, batch_size=8, epochs=1, shuffle=False, verbose=0).history
    for key in h1:
        np.testing.assert_allclose(h1[key], h2[key], rtol=1e-6, err_msg=key)
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    m2.load_weights(tmp_path / "g.weights.h5")
    assert m2.optimizer.iterations == 4


def test_sequential_with_a_frozen_layer_round_trips_through_a_keras_file(tmp_path):
    m = bf.Sequential([layers.Dense(4, activation="relu", input_shape=(5,), name="a"), layers.Dense(3, name="b")])
    m.get_layer("a").trainable = False
    m.compile("adam", bf.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), metrics=["accuracy"])
    m.fit(X, onehot(YC), epochs=1, verbose=0)
    m.save(tmp_path / "s.keras")
    m2 = bf.models.load_model(tmp_path / "s.keras")
    assert m2.get_layer("a").trainable is False and m2._engine.n_trainable == m._engine.n_trainable == 4 * 3 + 3
    np.testing.assert_allclose(m2.predict(X, verbose=0), m.predict(X, verbose=0), rtol=1e-6)


def test_predict_batch_hook_gets_each_outputs_rows():
    m = three_heads(bf)
    seen = []
    cb = bf.callbacks.LambdaCallback(on_predict_batch_end=lambda b, logs: seen.append(logs["outputs"]))
    full = m.predict(X, batch_size=8, verbose=0)
    m.predict(X, batch_size=8, verbose=0, callbacks=[cb])
    assert len(seen) == 4
    for k in range(3):
        np.testing.assert_array_equal(np.concatenate([s[k] for s in seen]), full[k])


def test_checkpoint_callbacks_save_a_graph(tmp_path):
    m = three_heads(bf)
    m.compile("sgd", loss=["categorical_crossentropy", "binary_crossentropy", "mse"])
    cbs = [bf.callbacks.ModelCheckpoint(str(tmp_path / "c.keras")),
           bf.callbacks.ModelCheckpoint(str(tmp_path / "w.weights.h5"), save_weights_only=True),
           bf.callbacks.BackupAndRestore(str(tmp_path / "backup"), delete_checkpoint=False)]
    m.fit(X, [onehot(YC), YB, YR], epochs=1, verbose=0, callbacks=cbs)
    assert m.optimizer.iterations == 1
    c = bf.models.load_model(tmp_path / "c.keras")
    for a, b in zip(c.predict(X, verbose=0), m.predict(X, verbose=0)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert (tmp_path / "w.weights.h5").exists() and (tmp_path / "backup" / "latest.weights.h5").exists()


def test_sequential_loss_weight_is_kept_by_its_keras_file(tmp_path):
    m = bf.Sequential([layers.Dense(3, input_shape=(5,))])
    m.compile("sgd", "mse", loss_weights=0.5)
    full = bf.Sequential([layers.Dense(3, input_shape=(5,))])
    full.set_weights(m.get_weights())
    full.compile("sgd", "mse")
    y = onehot(YC)
    half, one = m.evaluate(X, y, verbose=0), full.evaluate(X, y, verbose=0)
    assert half == pytest.approx(0.5 * one, rel=1e-6)
    m.save(tmp_path / "w.keras")
    assert bf.models.load_model(tmp_path / "w.keras").evaluate(X, y, verbose=0) == pytest.approx(half, rel=1e-6)


def test_regularizer_and_constraint_of_a_layer_called_twice_count_once_as_keras():
    def build(lib):
        inp = lib.Input((5,))
        shared = lib.layers.Dense(5, activation="tanh", name="shared", kernel_regularizer=lib.regularizers.L2(0.1),
                                  kernel_constraint=lib.constraints.MaxNorm(0.8))
        out = lib.layers.Dense(2, name="out", kernel_regularizer=lib.regularizers.L1(0.05))(shared(shared(inp)))
        return lib.Model(inp, out)
    def run(lib, model):
        model.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
        return model.fit(X, YR, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    m, k = pair(run, build, ("shared", "out"))
    hb = run(bf, m)
    np.testing.assert_allclose(hb, k["results"], rtol=1e-5)
    for name in ("shared", "out"):
        for a, b in zip(m.get_layer(name).get_weights(), k["weights"][name], strict=True):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
