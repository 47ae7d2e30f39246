"""Losses, metrics, optimizers and sample / class weights in the engine:
gradients of every new loss against finite differences, exact plans with
every optimizer's state and the weight and metric buffers (cpu and the
device path on 'emu'), micro-batches and Python sources with weights, and
the failure paths (unknown names, bad weights) leaving the model as it was."""

import gc

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers
from conftest import engine_gradient, numeric_loss
from test_gradients import directional_check

RNG = np.random.default_rng(11)
X = RNG.standard_normal((96, 10)).astype(np.float32)
YS = RNG.integers(0, 4, 96)
YB = (RNG.random((96, 1)) > 0.5).astype(np.float32)
SW = RNG.random(96).astype(np.float32) * 2


def mlp(out=4, act="softmax", opt="adam", loss="sparse_categorical_crossentropy", metrics=("accuracy",), **kw):
    m = bf.Sequential([layers.Dense(12, activation="tanh", input_shape=(10,)), layers.Dense(out, activation=act)])
    m.compile(optimizer=opt, loss=loss, metrics=list(metrics), **kw)
    return m


# ---- gradients ----

def _targets(kind, n, k, rng):
    if kind == "binary":
        return (rng.random((n, k)) > 0.5).astype(np.float32)
    if kind == "onehot":
        return np.eye(k, dtype=np.float32)[rng.integers(0, k, n)]
    return rng.standard_normal((n, k)).astype(np.float32)


@pytest.mark.parametrize("loss,act,ykind", [
    ("mae", "linear", "real"), (bf.losses.Huber(delta=0.5), "linear", "real"), ("log_cosh", "linear", "real"),
    (bf.losses.BinaryCrossentropy(label_smoothing=0.2), "sigmoid", "binary"),
    (bf.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2), "linear", "binary"),
    (bf.losses.CategoricalCrossentropy(label_smoothing=0.1), "softmax", "onehot"),
    (bf.losses.CategoricalCrossentropy(label_smoothing=0.1), "sigmoid", "onehot"),
    (bf.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3), "linear", "onehot"),
], ids=["mae", "huber", "log_cosh", "bce smoothing", "bce logits smoothing", "cce smoothing fused",
        "cce smoothing probabilities", "cce logits smoothing"])
def test_new_loss_gradients_match_finite_differences(loss, act, ykind):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((12, 5)).astype(np.float32)
    y = _targets(ykind, 12, 4, rng)
    m = bf.Sequential([layers.Dense(7, activation="tanh", input_shape=(5,)), layers.Dense(4, activation=act)])
    m.compile(optimizer="sgd", loss=loss)
    if isinstance(loss, str) and loss == "mae":   # a kink at each zero residual: residuals of both signs kept
        p = m.predict(x, verbose=0)               # 0.5 or more from it, out of a step's reach
        y = (p + rng.choice([-1.0, 1.0], p.shape) * (0.5 + rng.random(p.shape))).astype(np.float32)
    directional_check(m, x, y)


def test_sparse_and_one_hot_categorical_crossentropy_take_the_same_steps_bit_for_bit():
    """SCCE's fused softmax path takes a shortcut (only the label's class has a
    target); term for term it is CCE's on one-hot targets, with clipped
    probabilities (huge logits) among them."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((256, 10)).astype(np.float32)
    y = rng.integers(0, 6, 256)
    a = mlp(out=6, opt="sgd", metrics=())
    b = mlp(out=6, opt="sgd", loss="categorical_crossentropy", metrics=())
    w = a.get_weights()
    w[2] *= 40                                  # logits up to ~100: some probabilities clip at 1 - 1e-7
    a.set_weights(w)
    b.set_weights(w)
    sw = rng.random(256).astype(np.float32)
    ha = a.fit(x, y, batch_size=64, epochs=2, verbose=0, shuffle=False, sample_weight=sw)
    hb = b.fit(x, np.eye(6, dtype=np.float32)[y], batch_size=64, epochs=2, verbose=0, shuffle=False, sample_weight=sw)
    assert ha.history["loss"] == hb.history["loss"]
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_weighted_loss_gradient_matches_finite_differences_of_the_weighted_loss():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((12, 5)).astype(np.float32)
    y = rng.integers(0, 4, 12)
    sw = rng.random(12).astype(np.float32) * 3
    m = bf.Sequential([layers.Dense(7, activation="tanh", input_shape=(5,)), layers.Dense(4, activation="softmax")])
    m.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss="sparse_categorical_crossentropy")
    w0 = m.get_weights()
    m.fit(x, y, batch_size=12, shuffle=False, verbose=0, sample_weight=sw)
    g = [a.astype(np.float64) - b for a, b in zip(w0, m.get_weights())]
    m.set_weights(w0)
    loss = lambda: m.evaluate(x, y, batch_size=12, verbose=0, sample_weight=sw)  # noqa: E731
    d = [np.random.default_rng(4).standard_normal(w.shape) for w in w0]
    eps = 1e-2
    m.set_weights([w + eps * di for w, di in zip(w0, d)])
    lp = loss()
    m.set_weights([w - eps * di for w, di in zip(w0, d)])
    lm = loss()
    fd, an = (lp - lm) / (2 * eps), sum(float((gi * di).sum()) for gi, di in zip(g, d))
    assert abs(fd - an) <= 3e-2 * max(abs(fd), abs(an))
    # the weighted loss is sum(w * l) / rows, as Keras's sum_over_batch_size
    m.set_weights(w0)
    p = m.predict(x, verbose=0).astype(np.float64)
    ref = float(np.sum(sw * -np.log(p[np.arange(12), y])) / 12)
    assert loss() == pytest.approx(ref, rel=1e-5)


# ---- plans: exact with every optimizer's state, metric statistics, weight slots ----

OPTS = [bf.optimizers.Adam(amsgrad=True), bf.optimizers.AdamW(clipnorm=1.0), bf.optimizers.Nadam(global_clipnorm=1.0),
        bf.optimizers.Adagrad(), bf.optimizers.RMSprop(momentum=0.5, centered=True),
        bf.optimizers.SGD(momentum=0.9, clipvalue=0.1, weight_decay=0.01)]
SLOTS = [3, 2, 2, 1, 3, 1]


@pytest.mark.parametrize("opt,slots", list(zip(OPTS, SLOTS)), ids=[type(o).__name__ for o in OPTS])
def test_plan_equals_arenas_with_every_optimizer_metric_and_sample_weights(opt, slots):
    m = mlp(opt=opt, metrics=["accuracy", "sparse_top_k_categorical_accuracy"])
    m.fit(X, YS, batch_size=24, epochs=1, verbose=0, validation_split=0.25, sample_weight=SW)
    plan = m._last_plan
    stats = m._last_run_stats
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    engine = sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured"))
    assert engine == arenas
    it, state = m._engine.optimizer_state()
    assert it == 3 and len(state) == slots and m._engine.optimizer_arena_bytes >= slots * m.count_params() * 4
    # weight slots and metric statistics are planned only where used
    unweighted = m.estimate_memory(batch_size=24)
    assert plan.host_bytes > unweighted.host_bytes


def test_adagrad_state_starts_at_initial_accumulator_value():
    m = mlp(opt=bf.optimizers.Adagrad(learning_rate=0.0, initial_accumulator_value=0.25))
    m.fit(X[:8], YS[:8], batch_size=8, verbose=0)
    it, (acc,) = m._engine.optimizer_state()
    g = acc - 0.25
    assert it == 1 and (g >= 0).all() and g.max() > 0  # 0.25 + g^2


def test_auc_statistics_are_planned_in_the_step_record():
    m = mlp(out=1, act="sigmoid", loss="binary_crossentropy", metrics=[bf.metrics.AUC(num_thresholds=1000)])
    small = mlp(out=1, act="sigmoid", loss="binary_crossentropy", metrics=[bf.metrics.AUC(num_thresholds=10)])
    p, q = m._engine.plan("train", 16), small._engine.plan("train", 16)
    # record, read-back copy, epoch sums: three copies of 990 more buckets, each
    # copy's size rounded to the arena's 64-byte alignment (up to 64 bytes apart)
    assert p["host_bytes"] - q["host_bytes"] >= 3 * (8 * 2 * 990 - 64)
    m.fit(X, YB, batch_size=16, verbose=0)
    s = m._last_run_stats[0]
    assert s["run_high_water"] == s["run_reserved"]


def test_device_plan_with_weights_and_metrics_equals_the_device_memory_taken():
    m = mlp(opt=bf.optimizers.Nadam(clipnorm=1.0), out=1, act="sigmoid", loss="binary_crossentropy",
            metrics=["accuracy", "AUC", "precision"])
    free0, _ = _core.device_mem_info("emu:0")
    seen = []
    cb = bf.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(_core.device_mem_info("emu:0")[0]))
    m.fit(X, YB, batch_size=16, epochs=1, verbose=0, device="emu", callbacks=[cb], sample_weight=SW)
    plan, stats = m._last_plan, m._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    assert free0 - min(seen) == plan.device_bytes == sum(s["run_reserved"] for s in stats)
    assert _core.device_mem_info("emu:0")[0] == free0


# ---- the device path and the data paths give the CPU's numbers ----

def twins(build):
    a, b = build(), build()
    b.set_weights(a.get_weights())
    return a, b


@pytest.mark.parametrize("weights", ["sample", "class"])
def test_emu_equals_cpu_with_weights_metrics_and_clipping(weights):
    def build():
        return mlp(opt=bf.optimizers.Nadam(clipnorm=0.5, weight_decay=0.01), out=1, act="sigmoid",
                   loss=bf.losses.BinaryCrossentropy(label_smoothing=0.1),
                   metrics=["accuracy", "AUC", bf.metrics.Precision(name="p"), bf.metrics.Recall(name="r"), "rmse"],
                   weighted_metrics=["accuracy"])
    kw = dict(sample_weight=SW) if weights == "sample" else dict(class_weight={0: 0.3, 1: 2.0})
    out = []
    for m, dev in zip(twins(build), ("cpu", "emu")):
        out.append((m, m.fit(X, YB, batch_size=16, epochs=2, verbose=0, shuffle=False, device=dev,
                             validation_data=(X[:32], YB[:32], SW[:32]), **kw)))
    (mc, hc), (md, hd) = out
    assert hd.history == hc.history
    for a, b in zip(md.get_weights(), mc.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert md.evaluate(X, YB, verbose=0, device="emu", sample_weight=SW) == \
        mc.evaluate(X, YB, verbose=0, sample_weight=SW)


def test_micro_batches_with_weights_give_the_full_batch_step_and_metrics():
    a, b = twins(lambda: mlp(opt="adam", metrics=["accuracy", "sparse_top_k_categorical_accuracy"],
                             weighted_metrics=["accuracy"]))
    ha = a.fit(X, YS, batch_size=48, epochs=2, verbose=0, shuffle=False, sample_weight=SW)
    hb = b.fit(X, YS, batch_size=48, epochs=2, verbose=0, shuffle=False, sample_weight=SW, micro_batch=16)
    assert b._last_plan.micro_batch == 16
    for k in ha.history:
        np.testing.assert_allclose(hb.history[k], ha.history[k], rtol=1e-5, err_msg=k)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_sequence_batches_with_sample_weights_equal_arrays_with_sample_weight():
    class Seq(bf.utils.PyDataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            s = slice(16 * i, 16 * (i + 1))
            return X[s], YS[s], SW[s]

    a, b = twins(lambda: mlp(metrics=["accuracy"], weighted_metrics=["accuracy"]))
    ha = a.fit(X, YS, batch_size=16, epochs=1, verbose=0, shuffle=False, sample_weight=SW)
    hb = b.fit(Seq(), epochs=1, verbose=0, shuffle=False)
    for k in ha.history:
        np.testing.assert_allclose(hb.history[k], ha.history[k], rtol=1e-6, err_msg=k)
    np.testing.assert_allclose(b.evaluate(Seq(), verbose=0), a.evaluate(X, YS, verbose=0, sample_weight=SW,
                                                                         batch_size=16), rtol=1e-6)


def test_class_weight_equals_the_sample_weights_keras_derives_from_it():
    cw = {0: 2.0, 3: 0.5}
    sw = np.array([cw.get(int(c), 1.0) for c in YS], np.float32)
    a, b = twins(lambda: mlp(metrics=["accuracy"], weighted_metrics=["accuracy"]))
    ha = a.fit(X, YS, batch_size=32, verbose=0, shuffle=False, class_weight=cw)
    hb = b.fit(X, YS, batch_size=32, verbose=0, shuffle=False, sample_weight=sw)
    assert ha.history == hb.history
    # one-hot targets: the class is the argmax
    c, d = twins(lambda: mlp(loss="categorical_crossentropy", metrics=["accuracy"]))
    hc = c.fit(X, np.eye(4, dtype=np.float32)[YS], batch_size=32, verbose=0, shuffle=False, class_weight=cw)
    hd = d.fit(X, np.eye(4, dtype=np.float32)[YS], batch_size=32, verbose=0, shuffle=False, sample_weight=sw)
    assert hc.history == hd.history


def test_metrics_are_aggregated_over_the_epoch_not_averaged_per_batch():
    m = mlp(out=1, act="sigmoid", loss="binary_crossentropy", opt=bf.optimizers.SGD(learning_rate=0.0),
            metrics=[bf.metrics.AUC(name="auc"), "rmse", bf.metrics.Precision(name="p")])
    h = m.fit(X, YB, batch_size=10, epochs=1, verbose=0, shuffle=False)  # last batch short
    p = m.predict(X, verbose=0)[:, 0].astype(np.float64)
    y = YB[:, 0]
    assert h.history["rmse"][0] == pytest.approx(np.sqrt(np.mean((p - y) ** 2)), rel=1e-5)
    assert h.history["p"][0] == pytest.approx(((p > 0.5) & (y == 1)).sum() / (p > 0.5).sum(), rel=1e-9)
    pos, neg = p[y == 1], p[y == 0]
    exact = np.mean([(q > neg).mean() + 0.5 * (q == neg).mean() for q in pos])
    assert h.history["auc"][0] == pytest.approx(exact, abs=0.02)  # 200 thresholds approximate the exact AUC


def test_save_and_load_keep_loss_metrics_optimizer_and_its_state(tmp_path):
    m = mlp(out=1, act="sigmoid", opt=bf.optimizers.Nadam(clipnorm=0.5, weight_decay=0.01),
            loss=bf.losses.BinaryCrossentropy(label_smoothing=0.1),
            metrics=["mae", bf.metrics.AUC(num_thresholds=77), bf.metrics.BinaryAccuracy(threshold=0.3)],
            weighted_metrics=["mae"])
    h0 = m.fit(X, YB, batch_size=32, verbose=0, shuffle=False, sample_weight=SW)
    m.save(tmp_path / "m.keras")
    r = bf.models.load_model(tmp_path / "m.keras")
    assert r.compiled_metrics == m.compiled_metrics and set(h0.history) == set(["loss"] + m.compiled_metrics)
    assert r.loss.label_smoothing == 0.1 and r.optimizer.clipnorm == 0.5 and r.optimizer.weight_decay == 0.01
    assert r._metric_objs[1][0].num_thresholds == 77 and r._metric_objs[2][0].threshold == 0.3
    ha = m.fit(X, YB, batch_size=32, verbose=0, shuffle=False, sample_weight=SW)
    hb = r.fit(X, YB, batch_size=32, verbose=0, shuffle=False, sample_weight=SW)
    assert ha.history == hb.history  # Nadam's state and iterations came along
    for a, b in zip(m.get_weights(), r.get_weights()):
        np.testing.assert_array_equal(a, b)


# ---- failure paths: clear errors naming the argument, the model as it was ----

def test_unknown_names_raise_naming_the_argument():
    m = mlp()
    with pytest.raises(ValueError, match="loss: unknown loss 'msee'"):
        m.compile(optimizer="adam", loss="msee")
    with pytest.raises(ValueError, match="metrics: unknown metric 'accurracy'"):
        m.compile(optimizer="adam", loss="mse", metrics=["accurracy"])
    with pytest.raises(ValueError, match="optimizer: unknown optimizer 'adamx'"):
        m.compile(optimizer="adamx", loss="mse")
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue` and `global_clipnorm`"):
        bf.optimizers.Adam(clipnorm=1.0, clipvalue=0.5)
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        bf.losses.CategoricalCrossentropy(label_smoothing=1.5)
    with pytest.raises(ValueError, match="delta must be > 0"):
        bf.losses.Huber(delta=0)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        bf.optimizers.SGD(weight_decay=-1)
    with pytest.raises(ValueError, match="num_thresholds"):
        bf.metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="num_thresholds"):
        bf.metrics.AUC(num_thresholds=10**6)
    with pytest.raises(TypeError, match="unknown arguments"):
        bf.optimizers.Adam(learning_rat=0.1)
    # the model still trains with its first compile
    h = m.fit(X, YS, batch_size=32, verbose=0)
    assert set(h.history) == {"loss", "accuracy"}


def test_a_metric_that_does_not_fit_the_targets_names_metrics_and_changes_nothing():
    m = mlp(opt=bf.optimizers.SGD(momentum=0.9))
    m.fit(X, YS, batch_size=32, verbose=0)
    opt, state = m.optimizer, m._engine.optimizer_state()
    with pytest.raises(ValueError, match="metrics: 'categorical_accuracy'.*sparse_\\* metric"):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["categorical_accuracy"])
    assert m.optimizer is opt and m.compiled_metrics == ["accuracy"]
    it, slots = m._engine.optimizer_state()
    assert it == state[0] == 3 and np.array_equal(slots[0], state[1][0])  # optimizer state kept
    m2 = mlp(loss="categorical_crossentropy")
    with pytest.raises(ValueError, match="metrics: 'sparse_categorical_accuracy'.*class-id targets"):
        m2.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["sparse_categorical_accuracy"])


def test_bad_sample_and_class_weights_raise_before_training_and_change_nothing():
    m = mlp()
    before = m.get_weights()
    with pytest.raises(bf.DataError, match="sample_weight has 95 entries, x has 96"):
        m.fit(X, YS, sample_weight=SW[:95], verbose=0)
    with pytest.raises(bf.DataError, match="sample_weight must hold one weight per sample"):
        m.fit(X, YS, sample_weight=np.ones((96, 2)), verbose=0)
    with pytest.raises(ValueError, match="class_weight.*sample_weight"):
        m.fit(X, YS, sample_weight=SW, class_weight={0: 1.0}, verbose=0)
    with pytest.raises(ValueError, match="class_weight: keys must be non-negative class ids"):
        m.fit(X, YS, class_weight={-1: 2.0}, verbose=0)
    with pytest.raises(bf.DataError, match="sample_weight"):
        m.evaluate(X, YS, sample_weight=SW[:10], verbose=0)
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert m.optimizer.iterations == 0


def test_every_allocation_of_a_weighted_fit_with_metrics_can_fail_without_loss(frozen_gc):
    def build():
        return mlp(opt=bf.optimizers.Adam(clipnorm=1.0), out=1, act="sigmoid", loss="binary_crossentropy",
                   metrics=["AUC"])
    gc.collect()
    live = _core.live_reservations()
    first = build()
    # twice: a first run of the process brings up what it keeps (the emulated device), the second is each run's
    for _ in range(2):
        _core.fault_inject(0)
        first.fit(X[:64], YB[:64], batch_size=16, verbose=0, validation_split=0.25, device="emu",
                  sample_weight=SW[:64])
        sites = _core.fault_count()
    del first
    gc.collect()
    assert sites >= 8  # device arena, host slots, the carvings of two runs, the optimizer state
    for n in range(1, sites + 1):
        m = build()
        before = m.get_weights()
        _core.fault_inject(n)
        raised = False
        try:
            m.fit(X[:64], YB[:64], batch_size=16, verbose=0, validation_split=0.25, device="emu",
                  sample_weight=SW[:64])
        except MemoryError as e:
            raised = "injected failure" in str(e)
        finally:
            _core.fault_inject(0)
        assert raised, n
        for a, b in zip(m.get_weights(), before):
            np.testing.assert_array_equal(a, b)
        del m
        gc.collect()
        assert _core.live_reservations() == live
