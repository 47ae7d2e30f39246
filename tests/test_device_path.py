"""The engine's device path, run on every machine through device="emu": the
CPU's kernels behind a device's interface (separate memory reported like
cudaMemGetInfo, weight copies both ways, double-buffered batch uploads, a run
workspace the reductions require). The kernels are the CPU's, so results must
equal device="cpu" exactly; what differs is everything around them: where the
weights live while a run is open, what the plan counts on the device, budgets
and failures. The same code path serves device="cuda"."""

import gc

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers

X = np.random.default_rng(0).standard_normal((120, 16)).astype(np.float32)
Y = np.random.default_rng(1).integers(0, 4, 120)
XC = np.random.default_rng(2).standard_normal((48, 8, 8, 2)).astype(np.float32)
YC = np.random.default_rng(3).integers(0, 3, 48)


def mlp():
    m = bf.Sequential([layers.Dense(24, activation="relu", input_shape=(16,)),
                       layers.Dense(4, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def cnn():
    m = bf.Sequential([layers.Conv2D(4, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 2)),
                       layers.BatchNormalization(), layers.MaxPooling2D((2, 2)), layers.Dropout(0.25),
                       layers.Flatten(), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def twins(build):
    a, b = build(), build()
    b.set_weights(a.get_weights())
    return a, b


def fit_both(build, x, y, callbacks=lambda: [], **kw):
    """The same model trained on cpu and on emu from the same weights and seed."""
    out = []
    for m, dev in zip(twins(build), ("cpu", "emu")):
        bf.utils.set_random_seed(9)
        out.append((m, m.fit(x, y, verbose=0, shuffle=False, device=dev, callbacks=callbacks(), **kw)))
    return out


def assert_same_weights(a, b):
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("build,x,y", [(mlp, X, Y), (cnn, XC, YC)], ids=["mlp", "cnn"])
def test_device_run_trains_and_validates_exactly_as_the_cpu(build, x, y):
    (mc, hc), (md, hd) = fit_both(build, x, y, batch_size=16, epochs=3, validation_split=0.25)
    assert hd.history == hc.history  # val_loss each epoch from that epoch's weights
    assert_same_weights(md.get_weights(), mc.get_weights())  # includes BN moving statistics
    np.testing.assert_array_equal(md.predict(x, verbose=0, device="emu"), mc.predict(x, verbose=0))
    assert md.evaluate(x, y, verbose=0, device="emu") == mc.evaluate(x, y, verbose=0)


class Snapshot(bf.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(self.model.get_weights())


def test_get_weights_during_a_device_fit_returns_the_current_weights():
    snaps = []

    def cbs():
        snaps.append(Snapshot())
        return [snaps[-1]]

    fit_both(mlp, X, Y, cbs, batch_size=16, epochs=3)
    cpu, dev = snaps
    assert len(dev.seen) == 3
    for a, b in zip(dev.seen, cpu.seen):
        assert_same_weights(a, b)
    assert not all(np.array_equal(u, v) for u, v in zip(dev.seen[0], dev.seen[2]))


class ResetAfterFirstEpoch(bf.callbacks.Callback):
    def __init__(self, weights):
        super().__init__()
        self.weights = weights

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            self.model.set_weights(self.weights)


def test_set_weights_during_a_device_fit_reaches_the_device():
    start = mlp().get_weights()
    (mc, hc), (md, hd) = fit_both(lambda: _with(mlp(), start), X, Y, lambda: [ResetAfterFirstEpoch(start)],
                                  batch_size=16, epochs=2)
    assert_same_weights(md.get_weights(), mc.get_weights())
    assert hd.history == hc.history


def _with(m, weights):
    m.set_weights(weights)
    return m


def test_early_stopping_restores_the_best_weights_of_a_device_run():
    def cbs():
        return [bf.callbacks.EarlyStopping(monitor="loss", patience=0, restore_best_weights=True)]

    # a learning rate that makes the loss go up after the first epoch
    def build():
        m = bf.Sequential([layers.Dense(24, activation="relu", input_shape=(16,)), layers.Dense(4, activation="softmax")])
        m.compile(optimizer=bf.optimizers.SGD(learning_rate=3.0), loss="sparse_categorical_crossentropy")
        return m

    (mc, hc), (md, hd) = fit_both(build, X, Y, cbs, batch_size=120, epochs=6)
    assert hd.history == hc.history
    assert len(hd.history["loss"]) < 6  # it stopped early
    assert_same_weights(md.get_weights(), mc.get_weights())


def test_device_plan_equals_the_arenas_and_the_device_memory_a_fit_takes():
    m = mlp()
    plan = m.estimate_memory(batch_size=16, device="emu")
    on_dev = [e for e in plan.breakdown if e.where == "emu:0"]
    assert {e.category for e in on_dev} >= {"parameters", "optimizer state", "gradients", "input batches",
                                            "activations", "workspaces"}
    assert plan.device_bytes == sum(e.bytes for e in on_dev)
    free0, total = _core.device_mem_info("emu:0")
    seen = []
    cb = bf.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(_core.device_mem_info("emu:0")[0]))
    m.fit(X, Y, batch_size=16, epochs=1, verbose=0, device="emu", callbacks=[cb])
    stats = m._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    assert free0 - min(seen) == plan.device_bytes == sum(s["run_reserved"] for s in stats)
    assert _core.device_mem_info("emu:0")[0] == free0  # all of it given back


def test_device_budget_error_names_the_device_and_micro_batches_fit_under_it(device_limit):
    x = np.random.default_rng(4).standard_normal((512, 256)).astype(np.float32)
    y = np.random.default_rng(5).integers(0, 4, 512)

    def build():
        m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(256,)), layers.Dense(4, activation="softmax")])
        m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.1, momentum=0.9), loss="sparse_categorical_crossentropy")
        return m

    full = build().estimate_memory(batch_size=512, device="emu").device_bytes
    device_limit(full // 2)
    md, mc = twins(build)
    before = md.get_weights()
    with pytest.raises(bf.MemoryBudgetError) as ei:
        md.fit(x, y, batch_size=512, verbose=0, device="emu")
    e = ei.value
    assert e.where == "emu:0" and e.needed_bytes > e.available_bytes and e.available_bytes <= full // 2
    assert e.max_batch_size and e.max_batch_size < 512
    assert_same_weights(md.get_weights(), before)
    bf.utils.set_random_seed(1)
    hd = md.fit(x, y, batch_size=512, epochs=2, verbose=0, shuffle=False, device="emu", micro_batch="auto")
    assert md._last_plan.micro_batch and md._last_plan.micro_batch < 512
    bf.utils.set_random_seed(1)
    hc = mc.fit(x, y, batch_size=512, epochs=2, verbose=0, shuffle=False, device="cpu")
    for a, b in zip(md.get_weights(), mc.get_weights()):  # summed micro-batch gradients: same step
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hd.history["loss"], hc.history["loss"], rtol=1e-5)


def test_every_allocation_of_a_device_fit_can_fail_without_loss(frozen_gc):
    gc.collect()
    live = _core.live_reservations()
    first = mlp()
    _core.fault_inject(0)
    first.fit(X[:64], Y[:64], batch_size=16, verbose=0, validation_split=0.25, device="emu")
    sites = _core.fault_count()
    del first
    assert sites >= 8  # device arena, host slots, then the carvings of each of two runs
    gc.collect()
    for n in range(1, sites + 1):
        m = mlp()
        before = m.get_weights()
        _core.fault_inject(n)
        raised = False
        try:
            m.fit(X[:64], Y[:64], batch_size=16, verbose=0, validation_split=0.25, device="emu")
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
        assert _core.device_mem_info("emu:0")[0] == _core.device_mem_info("emu:0")[1]


def test_emu_is_a_device_name_and_bad_names_say_what_is_accepted():
    assert bf.runtime.devices.resolve("EMU") == "emu:0"
    with pytest.raises(ValueError, match="'cpu', 'cuda' or 'cuda:N'"):
        bf.runtime.devices.resolve("emu:1")


def test_nonfinite_loss_on_a_device_stops_where_the_cpu_does_with_the_same_weights():
    x = X.copy()
    x[70, 3] = np.nan  # in step 4 of 16 rows
    found, weights = {}, {}
    for m, dev in zip(twins(mlp), ("cpu", "emu")):
        with pytest.raises(bf.NonFiniteError) as ei:
            m.fit(x, Y, batch_size=16, shuffle=False, verbose=0, device=dev)
        e = ei.value
        found[dev] = (e.step, [ly.name for ly in m.layers].index(e.layer), e.what)
        weights[dev] = m.get_weights()
    # relu turns the NaN row's outputs into zeros; the first kernel's gradient is where it shows
    assert found["emu"] == found["cpu"] == (4, 0, "gradient")
    assert_same_weights(weights["emu"], weights["cpu"])
    assert all(np.isfinite(w).all() for w in weights["emu"])


def test_gradient_overflow_with_a_finite_loss_is_caught_on_a_device():
    m = bf.Sequential([layers.Dense(1, use_bias=False, input_shape=(1,)), layers.Dense(2, use_bias=False)])
    m.compile(optimizer="sgd", loss=bf.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.set_weights([np.array([[1e-30]], np.float32), np.array([[1e30, -1e30]], np.float32)])
    before = m.get_weights()
    with pytest.raises(bf.NonFiniteError) as ei:
        m.fit(np.full((8, 1), 1e30, np.float32), np.ones(8, np.int64), batch_size=8, verbose=0, device="emu")
    assert ei.value.what == "gradient" and ei.value.layer == m.layers[0].name
    assert_same_weights(m.get_weights(), before)


@pytest.mark.parametrize("build,x,y,bs", [(mlp, X, Y, 8), (cnn, XC, YC, 8)], ids=["mlp", "cnn"])
def test_a_device_training_step_waits_for_the_device_once(build, x, y, bs):
    """Loss, metric and the gradient guard's bounds stay on the device and come
    back in one read per step; the other counted wait is the check that the
    previous batch's upload is done (it is, by then). On a GPU every wait
    drains the queue, so this is what keeps small steps fast."""
    m = build()
    m.fit(x, y, batch_size=bs, epochs=1, verbose=0, device="emu")
    w0 = _core.emu_waits()
    m.fit(x, y, batch_size=bs, epochs=1, verbose=0, device="emu")
    steps = len(x) // bs
    # + the end of each chunk of steps (sync) and the final read of the weights
    assert _core.emu_waits() - w0 <= 2 * steps + 8


def test_sequences_generators_and_memmaps_feed_a_device_run_as_arrays_do(tmp_path):
    class Batches(bf.utils.PyDataset):
        def __len__(self):
            return len(X) // 24

        def __getitem__(self, i):
            return X[i * 24:(i + 1) * 24], Y[i * 24:(i + 1) * 24]

    np.save(tmp_path / "x.npy", X)
    xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    start = mlp().get_weights()
    runs = {"array": lambda m: m.fit(X, Y, batch_size=24, epochs=2, shuffle=False, verbose=0, device="emu"),
            "memmap": lambda m: m.fit(xm, Y, batch_size=24, epochs=2, shuffle=False, verbose=0, device="emu"),
            "sequence": lambda m: m.fit(Batches(), epochs=2, shuffle=False, verbose=0, device="emu"),
            "generator": lambda m: m.fit(((X[i:i + 24], Y[i:i + 24]) for e in range(2) for i in range(0, 120, 24)),
                                         steps_per_epoch=5, epochs=2, verbose=0, device="emu")}
    got = {}
    for name, run in runs.items():
        m = _with(mlp(), start)
        run(m)
        got[name] = m.get_weights()
    for name in ("memmap", "sequence", "generator"):
        assert_same_weights(got[name], got["array"])


def test_a_bad_label_on_a_device_is_a_data_error_naming_batch_and_row():
    y = Y.copy()
    y[16 * 3 + 5] = 7  # batch 3, row 5: no class 7 among 4
    results = {}
    for m, dev in zip(twins(mlp), ("cpu", "emu")):
        with pytest.raises(bf.DataError) as ei:
            m.fit(X, y, batch_size=16, shuffle=False, verbose=0, device=dev)
        results[dev] = (str(ei.value), ei.value.batch_index, m.get_weights())
    assert results["emu"][:2] == results["cpu"][:2]
    assert "batch 3: label 7 in row 5 (sample 53 of the data) is not a class id in [0, 4)" in results["emu"][0]
    assert_same_weights(results["emu"][2], results["cpu"][2])  # batches 0-2 applied, 3 not


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_predict_of_a_model_whose_output_is_its_input_slot(device):
    """Flatten alone is a view: the output is the input batch slot itself, so
    the slot is handed back to the prefetch thread only after the copy out."""
    m = bf.Sequential([layers.Flatten(input_shape=(4, 3))])
    x = np.random.default_rng(8).standard_normal((1000, 4, 3)).astype(np.float32)
    np.testing.assert_array_equal(m.predict(x, batch_size=7, verbose=0, device=device), x.reshape(1000, 12))
