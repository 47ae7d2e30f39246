"""Adamax, Adadelta, Ftrl, Lion and Lamb against Keras 3 (JAX backend): three
steps on a small Dense model from the same weights and batches give Keras's
weights to float32 rounding, with and without weight decay and clipping; the
plan equals the arenas with their state; the device path ("emu") gives the
CPU's bits; bad arguments raise naming them; Ftrl at a learning rate of 0
raises before changing anything (Adafactor and Muon: test_matrix_optimizers.py)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
import keras_ref

RNG = np.random.default_rng(3)
X = RNG.standard_normal((48, 5)).astype(np.float32)
Y = RNG.standard_normal((48, 3)).astype(np.float32)

# (id, constructor arguments, state slots) for both libraries
CASES = [
    ("adamax", "Adamax", dict(learning_rate=0.01), 2),
    ("adamax wd clipnorm", "Adamax", dict(learning_rate=0.01, beta_2=0.99, weight_decay=0.05, clipnorm=0.5), 2),
    ("adadelta", "Adadelta", dict(learning_rate=1.0), 2),
    ("adadelta wd global_clipnorm", "Adadelta", dict(learning_rate=1.0, rho=0.9, epsilon=1e-6, weight_decay=0.05,
                                                     global_clipnorm=0.5), 2),
    ("ftrl", "Ftrl", dict(learning_rate=0.1), 2),
    ("ftrl regularized clipnorm", "Ftrl", dict(learning_rate=0.1, learning_rate_power=-0.7,
                                               initial_accumulator_value=0.2, l1_regularization_strength=0.01,
                                               l2_regularization_strength=0.02,
                                               l2_shrinkage_regularization_strength=0.03, beta=0.1,
                                               weight_decay=0.05, clipnorm=0.5), 2),
    ("lion", "Lion", dict(learning_rate=0.01), 1),
    ("lion wd clipvalue", "Lion", dict(learning_rate=0.01, beta_1=0.8, beta_2=0.9, weight_decay=0.05,
                                       clipvalue=0.1), 1),
    ("lamb", "Lamb", dict(learning_rate=0.01), 2),
    ("lamb wd clipnorm", "Lamb", dict(learning_rate=0.01, weight_decay=0.05, clipnorm=0.5), 2),
]
IDS = [c[0] for c in CASES]


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(5, 6), (6,), (6, 3), (3,)]
    return [rng.normal(0, 0.7, size=s).astype(np.float32) for s in shapes]


def _model(lib, opt):
    if lib is bf:
        m = bf.Sequential([layers.Dense(6, activation="tanh", input_shape=(5,)), layers.Dense(3)])
    else:
        m = lib.Sequential([lib.Input((5,)), lib.layers.Dense(6, activation="tanh"), lib.layers.Dense(3)])
    m.set_weights(_weights())
    m.compile(optimizer=opt, loss="mse")
    return m


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_three_steps_give_keras_weights(keras, case):
    _, cls, kw, nslots = case
    km = _model(keras, getattr(keras.optimizers, cls)(**kw))
    bm = _model(bf, getattr(bf.optimizers, cls)(**kw))
    hk = km.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    hb = bm.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-5)
    for i, (a, b) in enumerate(zip(km.get_weights(), bm.get_weights())):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"weights[{i}]")
    it, state = bm._engine.optimizer_state()
    assert it == 3 == int(km.optimizer.iterations) and len(state) == nslots
    # the state is Keras's too, in Keras's variable order (per weight: the slots in turn)
    kstate = [np.asarray(v).ravel() for v in km.optimizer.variables[2:]]
    per = len(kstate) // 4
    for k in range(nslots):
        want = np.concatenate([kstate[j * per + k] for j in range(4)])
        np.testing.assert_allclose(state[k], want, rtol=1e-5, atol=1e-6, err_msg=f"slot {k}")


@pytest.mark.parametrize("case", CASES[1::2], ids=IDS[1::2])
def test_plan_equals_arenas_and_emu_equals_cpu(case):
    _, cls, kw, nslots = case
    a, b = (_model(bf, getattr(bf.optimizers, cls)(**kw)) for _ in range(2))
    ha = a.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    plan, stats = a._last_plan, a._last_run_stats
    arenas = a._engine.weight_arena_bytes + a._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    state = [e.bytes for e in plan.breakdown if e.category == "optimizer state"]
    assert sum(state) == a._engine.optimizer_arena_bytes >= nslots * a.count_params() * 4
    hb = b.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, device="emu")
    assert hb.history == ha.history
    for x, y in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a._engine.optimizer_state()[1], b._engine.optimizer_state()[1]):
        np.testing.assert_array_equal(x, y)


def test_lamb_norms_are_planned_per_variable():
    """Lamb's two sums of squares per trainable tensor are a planned workspace: more tensors, more bytes."""
    small = _model(bf, bf.optimizers.Lamb())
    big = bf.Sequential([layers.Dense(6, activation="tanh", input_shape=(5,))] +
                        [layers.Dense(6, activation="tanh") for _ in range(8)] + [layers.Dense(3)])
    big.compile(optimizer=bf.optimizers.Lamb(), loss="mse")
    norms = [[e.bytes for e in m.estimate_memory(batch_size=16).breakdown if "Lamb" in e.name] for m in (small, big)]
    assert norms[0] and norms[1] and norms[1][0] >= 2 * 8 * 20 > norms[0][0]
    adam = _model(bf, bf.optimizers.Adam())
    assert not [e for e in adam.estimate_memory(batch_size=16).breakdown if "Lamb" in e.name]


@pytest.mark.parametrize("make,what", [
    (lambda: bf.optimizers.Adamax(beta_1=1.0), "beta_1"),
    (lambda: bf.optimizers.Adamax(epsilon=-1), "epsilon"),
    (lambda: bf.optimizers.Lamb(beta_2="x"), "beta_2"),
    (lambda: bf.optimizers.Adadelta(rho=1.5), "rho"),
    (lambda: bf.optimizers.Lion(beta_1=0.0), "beta_1"),
    (lambda: bf.optimizers.Lion(beta_2=-0.1), "beta_2"),
    (lambda: bf.optimizers.Ftrl(learning_rate_power=0.5), "learning_rate_power"),
    (lambda: bf.optimizers.Ftrl(initial_accumulator_value=-1), "initial_accumulator_value"),
    (lambda: bf.optimizers.Ftrl(l1_regularization_strength=-1), "l1_regularization_strength"),
    (lambda: bf.optimizers.Ftrl(l2_shrinkage_regularization_strength=-1), "l2_shrinkage_regularization_strength"),
    (lambda: bf.optimizers.Lamb(learning_rate=-1), "learning_rate"),
    (lambda: bf.optimizers.Lion(clipnorm=1.0, clipvalue=1.0), "clipvalue"),
    (lambda: bf.optimizers.Adamax(nonsense=1), "nonsense"),
])
def test_bad_arguments_raise_naming_them(make, what):
    with pytest.raises((ValueError, TypeError), match=what):
        make()


@pytest.mark.parametrize("name,cls", [("adamax", "Adamax"), ("adadelta", "Adadelta"), ("ftrl", "Ftrl"),
                                      ("lion", "Lion"), ("lamb", "Lamb")])
def test_names_and_defaults_are_keras(keras, name, cls):
    if name == "lamb":   # Keras has no name for it: the class only, in both
        for get in (bf.optimizers.get, keras.optimizers.get):
            with pytest.raises(ValueError, match="lamb"):
                get(name)
    b = bf.optimizers.get(name) if name != "lamb" else bf.optimizers.Lamb()
    k = keras.optimizers.get(name) if name != "lamb" else keras.optimizers.Lamb()
    assert type(b).__name__ == type(k).__name__ == cls
    kc = k.get_config()
    for key, v in b.get_config().items():
        if key != "name":
            assert kc[key] == pytest.approx(v) if isinstance(v, float) else kc[key] == v, key


def test_ftrl_at_learning_rate_zero_raises_before_changing_anything():
    m = _model(bf, bf.optimizers.Ftrl(learning_rate=0.1))
    m.optimizer.learning_rate = 0.0
    before = m.get_weights()
    with pytest.raises(ValueError, match="Ftrl needs a learning rate > 0"):
        m.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert m.optimizer.iterations == 0
