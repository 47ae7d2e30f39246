"""Adafactor and Muon (their update per variable: csrc/core/opt_matrix.c), gradient_accumulation_steps and
loss_scale_factor (any optimizer) against Keras 3 (JAX backend): two epochs on a small Conv1D + Dense model (a
rank-3 kernel, a tall and a wide matrix, biases) from the same weights and batches give Keras's losses and
weights; the plan equals the arenas, the device path ("emu") the CPU's bits; configs serialize as Keras's and
survive .keras files; bad arguments raise naming them; ScheduleFreeAdamW is refused by name. Keras's results are
recorded (helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
import keras_ref
from helpers.keras_recorded import case

RNG = np.random.default_rng(7)
X = RNG.standard_normal((48, 6, 2)).astype(np.float32)
Y = RNG.standard_normal((48, 8)).astype(np.float32)
SHAPES = [(3, 2, 4), (4,), (16, 5), (5,), (5, 8), (8,)]

# (id, optimizer class, its arguments) for both libraries
CASES = [
    ("adafactor", "Adafactor", dict(learning_rate=0.05)),
    ("adafactor args wd clipnorm", "Adafactor",
     dict(learning_rate=0.05, beta_2_decay=-0.5, epsilon_2=1e-2, clip_threshold=0.5, weight_decay=0.05,
          clipnorm=0.5)),
    ("muon", "Muon", dict(learning_rate=0.01)),
    ("muon args", "Muon", dict(learning_rate=0.01, exclude_layers=["out"], nesterov=False, rms_rate=None,
                               adam_lr_ratio=0.5, momentum=0.9, ns_steps=3, weight_decay=0.05,
                               adam_weight_decay=0.02)),
    ("adam accumulate 2", "Adam", dict(learning_rate=0.01, gradient_accumulation_steps=2)),
    ("sgd accumulate 3 ema clipnorm", "SGD", dict(learning_rate=0.05, momentum=0.9, gradient_accumulation_steps=3,
                                                  use_ema=True, ema_overwrite_frequency=2, clipnorm=0.5)),
    ("muon accumulate 2", "Muon", dict(learning_rate=0.01, gradient_accumulation_steps=2)),
    ("adam loss_scale_factor", "Adam", dict(learning_rate=0.01, loss_scale_factor=3.0)),
    ("adafactor accumulate 2 loss_scale_factor", "Adafactor",
     dict(learning_rate=0.05, gradient_accumulation_steps=2, loss_scale_factor=1024.0)),
]
IDS = [c[0] for c in CASES]


def _weights():
    rng = np.random.default_rng(0)
    return [rng.normal(0, 0.5, size=s).astype(np.float32) for s in SHAPES]


def _model(lib, opt):
    L = lib.layers
    stack = [L.Conv1D(4, 3, activation="tanh", name="conv"), L.Flatten(name="flat"),
             L.Dense(5, activation="tanh", name="hidden"), L.Dense(8, name="out")]
    m = bf.Sequential([layers.Input((6, 2))] + stack) if lib is bf else lib.Sequential([lib.Input((6, 2))] + stack)
    m.set_weights(_weights())
    m.compile(optimizer=opt, loss="mse")
    return m


def _keras_run(cls, kw):
    def compute():
        keras = keras_ref.load()
        km = _model(keras, getattr(keras.optimizers, cls)(**kw))
        h = km.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return {"loss": h.history["loss"], "weights": km.get_weights(), "iterations": int(km.optimizer.iterations),
                "config": {k: v for k, v in km.optimizer.get_config().items() if isinstance(v, (int, float, str, list))
                           and not isinstance(v, bool)}}
    return case(compute)


@pytest.fixture(scope="module")
def trained():
    """the boundfit side of each case, trained once"""
    out = {}
    for cid, cls, kw in CASES:
        m = _model(bf, getattr(bf.optimizers, cls)(**kw))
        out[cid] = (m, m.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0))
    return out


@pytest.mark.parametrize("cid,cls,kw", CASES, ids=IDS)
def test_two_epochs_give_keras_losses_and_weights(trained, cid, cls, kw):
    ref = _keras_run(cls, kw)
    m, h = trained[cid]
    np.testing.assert_allclose(h.history["loss"], ref["loss"], rtol=1e-5)
    for i, (a, b) in enumerate(zip(ref["weights"], m.get_weights())):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"weights[{i}]")
    assert m.optimizer.iterations == ref["iterations"] == 6 // (kw.get("gradient_accumulation_steps") or 1)


@pytest.mark.parametrize("cid,cls,kw", CASES[1::2], ids=IDS[1::2])
def test_plan_equals_arenas_and_emu_equals_cpu(trained, cid, cls, kw):
    a, ha = trained[cid]
    plan, stats = a._last_plan, a._last_run_stats
    arenas = a._engine.weight_arena_bytes + a._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    b = _model(bf, getattr(bf.optimizers, cls)(**kw))
    hb = b.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, device="emu")
    assert hb.history == ha.history
    for x, y in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(x, y)


def test_state_slots_per_optimizer_and_muon_scratch_is_planned():
    n = sum(int(np.prod(s)) for s in SHAPES)
    for opt, slots in ((bf.optimizers.Adafactor(), 3), (bf.optimizers.Muon(), 2),
                       (bf.optimizers.Adam(gradient_accumulation_steps=2, use_ema=True), 4)):
        m = _model(bf, opt)
        state = [e.bytes for e in m.estimate_memory(batch_size=16).breakdown if e.category == "optimizer state"]
        assert sum(state) >= slots * n * 4 and sum(state) < (slots + 1) * n * 4
    muon = [e for e in _model(bf, bf.optimizers.Muon()).estimate_memory(batch_size=16).breakdown
            if "Newton-Schulz" in e.name]
    assert muon and muon[0].bytes >= 4 * (2 * 5 * 8 + 2 * 5 * 5)   # the largest matrix: (5, 8), and (16, 5)


def test_muon_picks_keras_matrices():
    """rank 2 only; exclude_layers by regular expression on the path; "embedding" in the path with
    exclude_embeddings"""
    pick = bf.optimizers.Muon(exclude_layers=["^sequential/out/"])._should_use_adamw
    assert pick("sequential/hidden/kernel", (16, 5)) is False
    assert pick("sequential/out/kernel", (5, 8)) is True
    assert pick("sequential/conv/kernel", (3, 2, 4)) is True and pick("sequential/out/bias", (8,)) is True
    assert pick("sequential/embedding/embeddings", (9, 4)) is True
    assert bf.optimizers.Muon(exclude_embeddings=False)._should_use_adamw("a/embedding/embeddings", (9, 4)) is False


@pytest.mark.parametrize("cid,cls,kw", [CASES[1], CASES[3], CASES[5]], ids=[IDS[1], IDS[3], IDS[5]])
def test_config_is_keras_and_survives_serialize_and_keras_files(trained, tmp_path, cid, cls, kw):
    ref = _keras_run(cls, kw)
    opt = getattr(bf.optimizers, cls)(**kw)
    cfg = opt.get_config()
    for key, v in ref["config"].items():
        if key != "name" and key in cfg:
            assert cfg[key] == pytest.approx(v) if isinstance(v, float) else cfg[key] == v, key
    assert {k for k in kw} <= set(cfg)
    again = bf.optimizers.deserialize(bf.optimizers.serialize(opt))
    assert type(again) is type(opt) and again.get_config() == cfg
    m, _ = trained[cid]
    m.save(tmp_path / "m.keras")
    back = bf.models.load_model(tmp_path / "m.keras")
    assert type(back.optimizer) is type(opt) and back.optimizer.get_config() == cfg
    assert back.optimizer.iterations == m.optimizer.iterations
    for x, y in zip(m._engine.optimizer_state()[1], back._engine.optimizer_state()[1]):
        np.testing.assert_array_equal(x, y)


def test_keras_opens_the_file_with_the_optimizer_config(trained, tmp_path):
    m, _ = trained["muon args"]
    path = str(tmp_path / "muon.keras")
    m.save(path)
    got = case(lambda: {k: v for k, v in keras_ref.load().models.load_model(path).optimizer.get_config().items()
                        if isinstance(v, (int, float, str, list)) and not isinstance(v, bool)}, files=[path])
    assert got["exclude_layers"] == ["out"] and got["ns_steps"] == 3 and got["adam_lr_ratio"] == 0.5
    assert got["adam_weight_decay"] == pytest.approx(0.02)


@pytest.mark.parametrize("make,what", [
    (lambda: bf.optimizers.Adam(gradient_accumulation_steps=1), "gradient_accumulation_steps"),
    (lambda: bf.optimizers.SGD(gradient_accumulation_steps=2.5), "gradient_accumulation_steps"),
    (lambda: bf.optimizers.Adam(loss_scale_factor=0), "loss_scale_factor"),
    (lambda: bf.optimizers.Adam(loss_scale_factor="x"), "loss_scale_factor"),
    (lambda: bf.optimizers.Adafactor(clip_threshold=0), "clip_threshold"),
    (lambda: bf.optimizers.Adafactor(epsilon_1=-1), "epsilon_1"),
    (lambda: bf.optimizers.Adafactor(beta_2_decay="x"), "beta_2_decay"),
    (lambda: bf.optimizers.Muon(ns_steps=-1), "ns_steps"),
    (lambda: bf.optimizers.Muon(exclude_layers="out"), "exclude_layers"),
    (lambda: bf.optimizers.Muon(exclude_layers=["("]), "exclude_layers"),
    (lambda: bf.optimizers.Muon(adam_beta_1=1.0), "adam_beta_1"),
    (lambda: bf.optimizers.Muon(momentum=2), "momentum"),
    (lambda: bf.optimizers.Muon(nonsense=1), "nonsense"),
    (lambda: bf.optimizers.LossScaleOptimizer(bf.optimizers.Adam(), gradient_accumulation_steps=2),
     "gradient_accumulation_steps"),
])
def test_bad_arguments_raise_naming_them(make, what):
    with pytest.raises((ValueError, TypeError), match=what):
        make()


@pytest.mark.parametrize("arg", ["gradient_accumulation_steps", "loss_scale_factor"])
def test_loss_scale_optimizer_refuses_inner_accumulation_and_factor_by_name(arg):
    inner = bf.optimizers.Adam(**{arg: 2})
    with pytest.raises(ValueError, match=arg):
        _model(bf, bf.optimizers.LossScaleOptimizer(inner))


def test_schedule_free_adamw_is_refused_by_name_saying_what_to_use():
    with pytest.raises(NotImplementedError, match="ScheduleFreeAdamW is not supported by boundfit.*AdamW"):
        bf.optimizers.ScheduleFreeAdamW()
    with pytest.raises(NotImplementedError, match="ScheduleFreeAdamW"):
        bf.optimizers.get("schedulefreeadamw")
