"""keras.optimizers.schedules: each schedule's value per step equals Keras 3's,
the engine uses lr(iterations) for each update (iterations = completed
updates), and a training run with a schedule equals Keras's run."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers as L
from boundfit.optimizers import schedules

import keras_ref

CASES = [
    ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=3, decay_rate=0.5)),
    ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=3, decay_rate=0.5, staircase=True)),
    ("PiecewiseConstantDecay", dict(boundaries=[2, 5], values=[0.1, 0.05, 0.01])),
    ("CosineDecay", dict(initial_learning_rate=0.1, decay_steps=7, alpha=0.1)),
    ("CosineDecay", dict(initial_learning_rate=0.0, decay_steps=6, warmup_target=0.2, warmup_steps=4)),
    ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5)),
    ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5, staircase=True)),
    ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=5, end_learning_rate=0.01, power=2.0)),
    ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=4, cycle=True)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=3)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=2, t_mul=1.0, m_mul=0.5, alpha=0.1)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.2, first_decay_steps=2, t_mul=1.5, m_mul=0.8)),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_schedule_values_equal_keras(name, kw):
    keras = keras_ref.load()
    ours, theirs = getattr(schedules, name)(**kw), getattr(keras.optimizers.schedules, name)(**kw)
    for step in range(15):
        assert ours(step) == pytest.approx(float(theirs(step)), rel=1e-6, abs=1e-9), step
    assert ours.get_config() == {k: v for k, v in theirs.get_config().items()}


def test_schedule_arguments_checked():
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="boundaries"):
        schedules.PiecewiseConstantDecay([1, 2], [0.1, 0.2])


def _model(opt):
    m = bf.Sequential([L.Dense(4, activation="tanh", input_shape=(3,)), L.Dense(1)])
    m.compile(optimizer=opt, loss="mse")
    return m


def _data(n=24):
    rng = np.random.default_rng(3)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 1)).astype(np.float32)


class HalfEvery3(schedules.LearningRateSchedule):
    """A user's schedule: evaluated in Python before each step."""

    def __call__(self, step):
        return 0.1 * 0.5 ** (step // 3)


@pytest.mark.parametrize("lr", [schedules.PiecewiseConstantDecay([2, 4], [0.1, 0.01, 0.001]), HalfEvery3(),
                                lambda step: 0.1 / (1 + step)], ids=["schedule", "subclass", "callable(step)"])
def test_engine_uses_lr_of_iterations_for_each_update(lr):
    x, y = _data()
    m = _model(bf.optimizers.SGD(lr))
    seen = []
    cb = bf.callbacks.LambdaCallback(
        on_train_batch_begin=lambda b, logs: seen.append((m._engine.iterations(), m._engine.learning_rate())))
    m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[cb])
    assert [it for it, _ in seen] == list(range(12))
    for it, rate in seen:
        assert rate == pytest.approx(float(np.float32(lr(it))), rel=1e-7)
    assert m.optimizer.iterations == 12


def test_zero_argument_callable_as_keras_allows():
    x, y = _data(8)
    m = _model(bf.optimizers.SGD(lambda: 0.05))
    m.fit(x, y, batch_size=4, verbose=0)
    assert m._engine.learning_rate() == pytest.approx(0.05)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_training_with_a_schedule_equals_keras(opt):
    keras = keras_ref.load()
    x, y = _data()
    kw = dict(initial_learning_rate=0.05, decay_steps=4, alpha=0.1, warmup_target=0.1, warmup_steps=3)
    m = _model(bf.optimizers.SGD(schedules.CosineDecay(**kw), momentum=0.9) if opt == "sgd"
               else bf.optimizers.Adam(schedules.CosineDecay(**kw)))
    k = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    k.set_weights(m.get_weights())
    ksched = keras.optimizers.schedules.CosineDecay(**kw)
    k.compile(optimizer=keras.optimizers.SGD(ksched, momentum=0.9) if opt == "sgd" else keras.optimizers.Adam(ksched),
              loss="mse")
    k.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(k.get_weights(), m.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_setting_the_rate_of_a_scheduled_optimizer_is_refused():
    x, y = _data(8)
    m = _model(bf.optimizers.SGD(schedules.ExponentialDecay(0.1, 2, 0.5)))
    cb = bf.callbacks.LearningRateScheduler(lambda epoch: 0.5)
    with pytest.raises(TypeError, match="schedule"):
        m.fit(x, y, batch_size=4, verbose=0, callbacks=[cb])


@pytest.mark.parametrize("sched,python_steps", [(schedules.ExponentialDecay(0.1, 2, 0.5, staircase=True), 0),
                                                (HalfEvery3(), 7)], ids=["closed-form", "subclass"])
def test_closed_form_schedules_need_no_python_per_step(monkeypatch, sched, python_steps):
    from boundfit.engine import fit_loop
    calls = []
    real = fit_loop._apply_schedule
    monkeypatch.setattr(fit_loop, "_apply_schedule", lambda m, s: (calls.append(1), real(m, s)))
    x, y = _data()
    m = _model(bf.optimizers.SGD(sched))
    m.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert len(calls) == python_steps          # a subclass: before each of the 6 steps and at the epoch's end
    assert m._engine.learning_rate() == pytest.approx(float(np.float32(sched(6))), rel=1e-7)


def test_schedule_on_the_device_path_equals_cpu():
    x, y = _data()
    sched = schedules.InverseTimeDecay(0.1, 2, 0.7)
    a, b = _model(bf.optimizers.SGD(sched, momentum=0.5)), _model(bf.optimizers.SGD(sched, momentum=0.5))
    b.set_weights(a.get_weights())
    a.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    b.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, device="emu")
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7)
