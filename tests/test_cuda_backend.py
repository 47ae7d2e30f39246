"""The CUDA backend against the CPU reference, through the public API.

Every test here needs a usable GPU: the module is skipped, with the reason the
CUDA report gives, unless `_core.cuda_report()` has a line starting with "ok"
that names cuda:0. The same model is trained from the same weights (and the
same seed, so dropout draws the same mask: the mask formula is shared by the
CPU and CUDA kernels) on device="cpu" and device="cuda", and the weights must
agree to 1e-4 relative. Optimizers whose step does not blow up tiny gradient
differences are used (SGD with momentum, Adam with a large epsilon)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers


def _gpu_skip_reason():
    try:
        report = _core.cuda_report()
    except Exception as e:  # the report must never fail; if it does, say so
        return f"the CUDA report failed: {e!r}"
    lines = report.splitlines()
    if any(ln.startswith("ok") and "cuda:0" in ln for ln in lines):
        return None
    problems = [" ".join(ln.split()[1:]) for ln in lines if ln.startswith("PROBLEM")]
    return "no usable GPU (cuda:0): " + ("; ".join(problems) if problems else report.strip() or "empty CUDA report")


_REASON = _gpu_skip_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

RTOL = 1e-4


def _assert_weights_close(got, want, what):
    assert len(got) == len(want), what
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, f"{what}: weight {i} shape {a.shape} != {b.shape}"
        # relative to the tensor's scale, so entries near zero do not demand an
        # absolute 1e-4 of themselves
        scale = max(float(np.abs(b).max()), 1e-3)
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale, err_msg=f"{what}: weight {i}")


def _train_both(build, compile_kw, x, y, seed=77, **fit_kw):
    """Train two copies of build() from the same weights and seed, one per device;
    returns (cpu model, cuda model, cpu history, cuda history)."""
    cpu, gpu = build(), build()
    cpu.compile(**compile_kw())
    gpu.compile(**compile_kw())
    gpu.set_weights(cpu.get_weights())
    out = []
    for m, dev in ((cpu, "cpu"), (gpu, "cuda")):
        bf.utils.set_random_seed(seed)
        out.append(m.fit(x, y, shuffle=False, verbose=0, device=dev, **fit_kw))
    return cpu, gpu, out[0], out[1]


# ---------------------------------------------------------------- dense


def _dense_model():
    return bf.Sequential([
        layers.Dense(32, activation="relu", input_shape=(20,)),
        layers.Dense(16, activation="tanh"),
        layers.Dense(5, activation="softmax"),
    ])


XD = np.random.default_rng(11).standard_normal((96, 20)).astype(np.float32)
YD = np.random.default_rng(12).integers(0, 5, 96)


@pytest.mark.parametrize("opt", ["sgd_momentum", "adam", "rmsprop"])
def test_dense_model_trains_to_the_cpu_weights_on_cuda(opt):
    def compile_kw():
        o = {"sgd_momentum": lambda: bf.optimizers.SGD(learning_rate=0.05, momentum=0.9, nesterov=True),
             "adam": lambda: bf.optimizers.Adam(learning_rate=1e-3, epsilon=1e-3),
             "rmsprop": lambda: bf.optimizers.RMSprop(learning_rate=1e-3, momentum=0.5, epsilon=1e-3)}[opt]()
        return dict(optimizer=o, loss="sparse_categorical_crossentropy", metrics=["accuracy"])

    cpu, gpu, hc, hg = _train_both(_dense_model, compile_kw, XD, YD, batch_size=32, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"dense/{opt}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)
    np.testing.assert_allclose(hg.history["accuracy"], hc.history["accuracy"], atol=1e-6)


@pytest.mark.parametrize("opt", [
    lambda: bf.optimizers.Adamax(learning_rate=0.01, weight_decay=0.01, clipnorm=0.5),
    lambda: bf.optimizers.Adadelta(learning_rate=1.0, global_clipnorm=1.0),
    lambda: bf.optimizers.Ftrl(learning_rate=0.1, learning_rate_power=-0.7, l1_regularization_strength=0.01,
                               l2_shrinkage_regularization_strength=0.01, beta=0.1),
    lambda: bf.optimizers.Lion(learning_rate=0.01, weight_decay=0.01, clipvalue=0.1),
    lambda: bf.optimizers.Lamb(learning_rate=0.01, weight_decay=0.01, clipnorm=0.5),
], ids=["adamax", "adadelta", "ftrl", "lion", "lamb"])
def test_later_keras_optimizers_match_the_cpu_on_cuda(opt):
    """Adamax, Adadelta, Ftrl, Lion and Lamb (its trust ratio per variable from device sums) on CUDA."""
    def compile_kw():
        return dict(optimizer=opt(), loss="sparse_categorical_crossentropy")

    cpu, gpu, hc, hg = _train_both(_dense_model, compile_kw, XD, YD, batch_size=32, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "later optimizers")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)
    for a, b in zip(gpu._engine.optimizer_state()[1], cpu._engine.optimizer_state()[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("opt", [
    lambda: bf.optimizers.Adam(learning_rate=0.01, epsilon=1e-3, gradient_accumulation_steps=2, clipnorm=0.5),
    lambda: bf.optimizers.SGD(learning_rate=0.05, momentum=0.9, gradient_accumulation_steps=3, use_ema=True,
                              loss_scale_factor=3.0),
], ids=["adam-accumulate-2", "sgd-accumulate-3-ema-loss-scale-factor"])
def test_gradient_accumulation_and_loss_scale_factor_match_the_cpu_on_cuda(opt):
    """gradient_accumulation_steps (the accumulator slot on the device) and loss_scale_factor on CUDA."""
    cpu, gpu, hc, hg = _train_both(_dense_model, lambda: dict(optimizer=opt(), loss="sparse_categorical_crossentropy"),
                                   XD, YD, batch_size=32, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "gradient accumulation")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)
    assert gpu.optimizer.iterations == cpu.optimizer.iterations > 0


@pytest.mark.parametrize("name,use", [("Adafactor", "Adam"), ("Muon", "AdamW")])
def test_adafactor_and_muon_are_refused_on_cuda_by_name(name, use):
    m = _dense_model()
    m.compile(optimizer=getattr(bf.optimizers, name)(), loss="sparse_categorical_crossentropy")
    before = m.get_weights()
    with pytest.raises(ValueError, match=f"{name} optimizer is not implemented on the cuda.*{use}"):
        m.fit(XD, YD, batch_size=32, epochs=1, verbose=0, device="cuda")
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("opt,loss,metrics", [
    (lambda: bf.optimizers.Nadam(learning_rate=1e-3, epsilon=1e-3, clipnorm=0.5, weight_decay=0.01),
     lambda: bf.losses.BinaryCrossentropy(label_smoothing=0.1),
     lambda: ["accuracy", "AUC", bf.metrics.Precision(name="p"), bf.metrics.Recall(name="r"), "rmse"]),
    (lambda: bf.optimizers.Adagrad(learning_rate=0.05, global_clipnorm=1.0), lambda: "huber",
     lambda: ["mae", "mse"]),
    (lambda: bf.optimizers.RMSprop(learning_rate=1e-3, centered=True, epsilon=1e-3, clipvalue=0.1),
     lambda: "log_cosh", lambda: ["rmse"]),
], ids=["nadam-bce-binary-metrics", "adagrad-huber", "rmsprop-centered-logcosh"])
def test_new_losses_metrics_optimizers_and_sample_weights_match_the_cpu_on_cuda(opt, loss, metrics):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((96, 12)).astype(np.float32)
    y = (rng.random((96, 1)) > 0.5).astype(np.float32)
    sw = rng.random(96).astype(np.float32) * 2

    def build():
        return bf.Sequential([layers.Dense(16, activation="tanh", input_shape=(12,)),
                              layers.Dense(1, activation="sigmoid")])

    def compile_kw():
        return dict(optimizer=opt(), loss=loss(), metrics=metrics(), weighted_metrics=["mse"])

    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=32, epochs=2, sample_weight=sw,
                                   validation_data=(x[:32], y[:32], sw[:32]))
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "new optimizers")
    assert set(hg.history) == set(hc.history)
    for k in hc.history:  # counts are exact; weighted sums to rounding
        np.testing.assert_allclose(hg.history[k], hc.history[k], rtol=RTOL, atol=1e-6, err_msg=k)


def _clip_opt(how, **kw):
    if how == "amsgrad":
        return bf.optimizers.Adam(learning_rate=0.05, beta_2=0.5, epsilon=1e-3, **kw)  # v falls: max(v) acts
    return bf.optimizers.SGD(learning_rate=0.05, momentum=0.9, **kw)


@pytest.mark.parametrize("how,arg", [("clipnorm", 0.05), ("clipvalue", 0.01), ("global_clipnorm", 0.1),
                                     ("amsgrad", True)])
def test_gradient_clipping_and_amsgrad_train_to_the_cpu_weights_on_cuda(how, arg):
    """The clipping kernels (sum of squares, scale) and AMSGrad's max on the
    device give the CPU's weights; the same fit without the option ends
    elsewhere, so the option did act (a clip that never engages would pass
    with a broken norm)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((96, 12)).astype(np.float32)
    y = (10 * np.tanh(x[:, :3] * 2)).astype(np.float32)  # large errors: large gradients
    w0 = bf.Sequential([layers.Dense(16, activation="tanh", input_shape=(12,)), layers.Dense(3)]).get_weights()

    def build():
        m = bf.Sequential([layers.Dense(16, activation="tanh", input_shape=(12,)), layers.Dense(3)])
        m.set_weights(w0)
        return m

    cpu, gpu, hc, hg = _train_both(build, lambda: dict(optimizer=_clip_opt(how, **{how: arg}), loss="mse"), x, y,
                                   batch_size=32, epochs=3)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), how)
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)
    plain = build()
    plain.compile(optimizer=_clip_opt(how), loss="mse")
    plain.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0, device="cpu")
    assert max(float(np.abs(a - b).max()) for a, b in zip(plain.get_weights(), cpu.get_weights())) > 1e-2, how


def test_an_embedding_gradient_over_repeated_ids_trains_to_the_cpu_weights_on_cuda():
    """Three ids repeated over every token of the batch: the scatter-add of the
    table's gradient has hundreds of threads adding into the same rows, and
    must keep every update (tests/test_cuda_sim.py runs this with the threads
    switched at every store, where a non-atomic add loses most of them).
    The AUC's and recall's per-row atomic counts are checked on the way."""
    rng = np.random.default_rng(9)
    ids = rng.integers(0, 3, (64, 12))
    y = (ids.sum(1) > 12).astype(np.float32)[:, None]

    def build():
        i = bf.Input((12,))
        h = layers.GlobalAveragePooling1D()(layers.Embedding(3, 8)(i))
        return bf.Model(i, layers.Dense(1, activation="sigmoid")(h))

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.5), loss="binary_crossentropy",
                    metrics=["AUC", bf.metrics.Recall(name="r")])

    cpu, gpu, hc, hg = _train_both(build, compile_kw, ids, y, batch_size=64, epochs=3)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "embedding")
    for k in hc.history:
        np.testing.assert_allclose(hg.history[k], hc.history[k], rtol=RTOL, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("loss,last", [("mse", None), ("binary_crossentropy", "sigmoid"),
                                       ("categorical_crossentropy", "softmax")])
def test_dense_losses_match_the_cpu_on_cuda(loss, last):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 12)).astype(np.float32)
    if loss == "categorical_crossentropy":
        y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 64)]
    elif loss == "binary_crossentropy":
        y = (rng.random((64, 4)) > 0.5).astype(np.float32)
    else:
        y = rng.standard_normal((64, 4)).astype(np.float32)

    def build():
        return bf.Sequential([layers.Dense(16, activation="relu", input_shape=(12,)),
                              layers.Dense(4, activation=last)])

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss=loss,
                    metrics=["accuracy"])

    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), loss)
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)
    xe = x[:20]
    np.testing.assert_allclose(gpu.predict(xe, verbose=0, device="cuda"), cpu.predict(xe, verbose=0),
                               rtol=RTOL, atol=1e-5)


# ---------------------------------------------------------------- convolutional


def _conv_model(rate):
    return bf.Sequential([
        layers.Conv2D(4, (3, 3), padding="same", activation="relu", input_shape=(9, 9, 3)),
        layers.BatchNormalization(),
        layers.MaxPooling2D((2, 2), padding="same"),       # 9x9 -> 5x5: an uneven 'same' window
        layers.Conv2D(6, (2, 2), strides=(2, 2), padding="same"),  # asymmetric 'same' padding
        layers.AveragePooling2D((2, 2), strides=(1, 1), padding="same"),
        layers.Dropout(rate),
        layers.Flatten(),
        layers.Dense(3, activation="softmax"),
    ])


XC = np.random.default_rng(21).standard_normal((48, 9, 9, 3)).astype(np.float32)
YC = np.random.default_rng(22).integers(0, 3, 48)


@pytest.mark.parametrize("rate", [0.0, 0.3])
def test_conv_pool_batchnorm_dropout_model_trains_to_the_cpu_weights_on_cuda(rate):
    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.02, momentum=0.9),
                    loss="sparse_categorical_crossentropy", metrics=["accuracy"])

    cpu, gpu, hc, hg = _train_both(lambda: _conv_model(rate), compile_kw, XC, YC, batch_size=16, epochs=2)
    # includes the BatchNormalization moving mean / variance
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"conv, dropout rate {rate}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)
    # inference path (moving statistics, no dropout)
    np.testing.assert_allclose(gpu.predict(XC[:8], verbose=0, device="cuda"), cpu.predict(XC[:8], verbose=0),
                               rtol=RTOL, atol=1e-5)


def test_global_average_pooling_and_valid_conv_match_the_cpu_on_cuda():
    def build():
        return bf.Sequential([
            layers.Conv2D(5, (3, 3), strides=(2, 2), activation="tanh", input_shape=(11, 10, 2)),
            layers.GlobalAveragePooling2D(),
            layers.Dense(2, activation="sigmoid"),
        ])

    rng = np.random.default_rng(8)
    x = rng.standard_normal((32, 11, 10, 2)).astype(np.float32)
    y = (rng.random((32, 2)) > 0.5).astype(np.float32)

    def compile_kw():
        return dict(optimizer=bf.optimizers.Adam(learning_rate=1e-2, epsilon=1e-3), loss="binary_crossentropy",
                    metrics=["accuracy"])

    cpu, gpu, _, _ = _train_both(build, compile_kw, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "gap")


# ---------------------------------------------------------------- memory


def test_cuda_plan_equals_the_device_arena_to_the_byte():
    m = _dense_model()
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    plan = m.estimate_memory(batch_size=24, device="cuda")
    m.fit(XD, YD, batch_size=24, epochs=1, verbose=0, device="cuda")
    stats = m._last_run_stats
    assert stats and all(s["where"].startswith("cuda") for s in stats), stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats), stats
    planned = sum(e.bytes for e in plan.breakdown
                  if e.where.startswith("cuda") and e.category not in ("runtime", "measured"))
    assert planned == sum(s["run_reserved"] for s in stats)
    assert plan.device_bytes >= planned


def test_cuda_budget_error_names_the_device_before_the_first_step(device_limit):
    device_limit("8MiB")
    m = bf.Sequential([layers.Dense(1024, activation="relu", input_shape=(2048,)), layers.Dense(10)])
    m.compile(optimizer="adam", loss="mse")
    before = m.get_weights()
    x = np.zeros((64, 2048), np.float32)
    y = np.zeros((64, 10), np.float32)
    with pytest.raises(bf.MemoryBudgetError) as ei:
        m.fit(x, y, batch_size=64, verbose=0, device="cuda")
    e = ei.value
    assert isinstance(e, MemoryError)
    assert e.where.startswith("cuda"), e.where
    assert e.needed_bytes > e.available_bytes
    assert e.available_bytes <= 8 << 20
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_micro_batch_auto_trains_under_a_device_limit_like_the_full_batch_on_cpu(device_limit):
    device_limit("8MiB")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4096, 512)).astype(np.float32)   # one batch is 8 MiB of input
    y = rng.integers(0, 10, 4096)

    def build():
        return bf.Sequential([layers.Dense(128, activation="relu", input_shape=(512,)),
                              layers.Dense(10, activation="softmax")])

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                    loss="sparse_categorical_crossentropy", metrics=["accuracy"])

    gpu = build()
    gpu.compile(**compile_kw())
    with pytest.raises(bf.MemoryBudgetError) as ei:
        gpu.fit(x, y, batch_size=4096, verbose=0, device="cuda")
    assert ei.value.where.startswith("cuda")
    cpu = build()
    cpu.compile(**compile_kw())
    cpu.set_weights(gpu.get_weights())
    bf.utils.set_random_seed(5)
    hg = gpu.fit(x, y, batch_size=4096, epochs=2, shuffle=False, verbose=0, device="cuda", micro_batch="auto")
    assert gpu._last_plan.fits and gpu._last_plan.micro_batch and gpu._last_plan.micro_batch < 4096
    assert all(np.isfinite(v) for v in hg.history["loss"])
    bf.utils.set_random_seed(5)
    hc = cpu.fit(x, y, batch_size=4096, epochs=2, shuffle=False, verbose=0, device="cpu")
    # micro-batches accumulate gradients: the same step as the full batch
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "micro_batch='auto'")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=RTOL)


def test_device_memory_a_cuda_fit_takes_is_its_plan():
    """cudaMemGetInfo before and during a fit: the drop is the plan, plus at
    most the rounding of cudaMalloc (2 MiB pages) per arena; the context and
    the library handles exist before (a first fit opened them)."""
    m = _dense_model()
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    m.fit(XD, YD, batch_size=24, epochs=1, verbose=0, device="cuda", validation_split=0.25)  # opens handles
    plan = m.estimate_memory(batch_size=24, device="cuda")
    free0, _ = _core.device_mem_info("cuda:0")
    seen = []
    cb = bf.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(_core.device_mem_info("cuda:0")[0]))
    m.fit(XD, YD, batch_size=24, epochs=2, verbose=0, device="cuda", validation_split=0.25, callbacks=[cb])
    taken = free0 - min(seen)
    planned = sum(s["run_reserved"] for s in m._last_run_stats)
    assert planned == sum(e.bytes for e in m._last_plan.breakdown if e.where.startswith("cuda"))
    assert planned <= taken <= planned + 2 * (2 << 20), (taken, planned, plan.device_bytes)
    assert _core.device_mem_info("cuda:0")[0] >= free0 - (2 << 20)  # given back


def test_weights_read_and_validated_during_a_cuda_fit_are_current():
    """get_weights in a callback and each epoch's val_loss see the weights of
    that epoch, though they live on the device while the run is open."""
    snaps = {}

    def cb(dev):
        snaps[dev] = []
        return bf.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: snaps[dev].append(_m[dev].get_weights()))

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9),
                    loss="sparse_categorical_crossentropy", metrics=["accuracy"])

    _m = {"cpu": _dense_model(), "cuda": _dense_model()}
    for m in _m.values():
        m.compile(**compile_kw())
    _m["cuda"].set_weights(_m["cpu"].get_weights())
    hist = {}
    for dev, m in _m.items():
        bf.utils.set_random_seed(3)
        hist[dev] = m.fit(XD, YD, batch_size=16, epochs=3, shuffle=False, verbose=0, device=dev,
                          validation_split=0.25, callbacks=[cb(dev)])
    for a, b in zip(snaps["cuda"], snaps["cpu"]):
        _assert_weights_close(a, b, "get_weights during fit")
    np.testing.assert_allclose(hist["cuda"].history["val_loss"], hist["cpu"].history["val_loss"], rtol=RTOL)


def test_conv_on_large_images_runs_in_cudnn_descriptor_limits():
    """A 1024x1024 image with 32 filters is 2^25 values per sample: 64 samples
    exceed a cuDNN descriptor, so algorithms are chosen at a smaller batch."""
    def build():
        return bf.Sequential([layers.Conv2D(32, (3, 3), padding="same", input_shape=(1024, 1024, 3)),
                              layers.GlobalAveragePooling2D(), layers.Dense(1)])

    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 1024, 1024, 3)).astype(np.float32)
    y = rng.standard_normal((2, 1)).astype(np.float32)

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.01), loss="mse")

    cpu, gpu, _, _ = _train_both(build, compile_kw, x, y, batch_size=2, epochs=1)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "1024x1024 conv")


def test_the_100x100_conv_model_is_refused_under_8gib_and_trains_in_micro_batches(device_limit):
    """The Conv2D model of docs/design.md. On device="emu" (the CPU's workspaces) its plan
    is 6.5 GiB at batch 2048, which fits in 8 GiB, and 12.8 GiB at 4096, so
    4096 is the batch refused here; cuDNN's workspaces change this little."""
    def build():
        m = bf.Sequential([layers.Conv2D(32, (3, 3), activation="relu", input_shape=(100, 100, 3)),
                           layers.MaxPooling2D((2, 2)), layers.Flatten(),
                           layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")])
        m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.01, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        return m

    device_limit("8GiB")
    rng = np.random.default_rng(7)
    x = rng.random((4096, 100, 100, 3), dtype=np.float32)
    y = rng.integers(0, 10, 4096)
    small, full = build(), build()
    full.set_weights(small.get_weights())
    assert small.estimate_memory(batch_size=4096, device="cuda").device_bytes > 8 << 30
    before = small.get_weights()
    with pytest.raises(bf.MemoryBudgetError) as ei:
        small.fit(x, y, batch_size=4096, verbose=0, device="cuda")
    assert ei.value.where == "cuda:0" and ei.value.needed_bytes > 8 << 30
    for a, b in zip(small.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    small.fit(x, y, batch_size=4096, epochs=1, shuffle=False, verbose=0, device="cuda", micro_batch="auto")
    assert small._last_plan.micro_batch < 4096
    device_limit("auto")  # the full batch on the whole GPU: the same step
    full.fit(x, y, batch_size=4096, epochs=1, shuffle=False, verbose=0, device="cuda")
    _assert_weights_close(small.get_weights(), full.get_weights(), "micro_batch='auto' vs the full batch")
