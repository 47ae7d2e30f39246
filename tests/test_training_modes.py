"""`training` as Keras has it: a custom layer's (or subclassed model's)
call(x, training=None) with a Python `if training:` runs its training form
in fit and its inference form in evaluate / predict (traced in both modes,
node.trace_modes; a Switch node and per-node modes in the engine), with
shared weights, exact plans for each run and exact gradients; a call given
training=True / False keeps that mode (built-in layers, custom layers and
nested models), as Keras; saving refuses what a .keras file cannot hold and
boundfit's graph file round-trips it."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core
from boundfit.graph import compile_graph
from boundfit.layers.args import engine_kinds
from conftest import assert_plan_equals_arenas, directional_check_per_array

import keras_ref

rng = np.random.default_rng(0)
X = rng.standard_normal((12, 4)).astype(np.float32)
Y = rng.standard_normal((12, 1)).astype(np.float32)
SWITCH, = engine_kinds("SWITCH")


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def scale_layer(M):
    class Scale(M.layers.Layer):
        """a deterministic training branch: fit sees h * 0.5 + 1, predict h"""
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = M.layers.Dense(3, name="inner")

        def call(self, x, training=None):
            h = self.inner(x)
            if training:
                h = h * 0.5 + 1.0
            return h
    return Scale


def scale_model(M, training=None):
    inp = M.Input(shape=(4,))
    h = scale_layer(M)(name="scale")(inp, training=training)
    return M.Model(inp, M.layers.Dense(1, name="head")(h))


def fit_both(km, bm, keras, epochs=2):
    bm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.05), "mse")
    bm.compile(bf.optimizers.SGD(0.05), "mse")
    km.fit(X, Y, batch_size=6, epochs=epochs, shuffle=False, verbose=0)
    bm.fit(X, Y, batch_size=6, epochs=epochs, shuffle=False, verbose=0)


@pytest.mark.parametrize("training", [None, True])
def test_custom_layer_trains_its_training_form_and_predicts_its_inference_form_as_keras(keras, training):
    km, bm = scale_model(keras, training), scale_model(bf, training)
    fit_both(km, bm, keras)
    for a, b in zip(bm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bm.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bm.evaluate(X, Y, verbose=0), km.evaluate(X, Y, verbose=0), rtol=1e-4)
    # one layer in Keras's view, and its two forms apart (a training= given at the graph's level is overridden
    # by the run's mode, as Keras 3)
    assert [type(l).__name__ for l in bm.layers] == ["InputLayer", "Scale", "Dense"]
    kinds = [d["kind"] for d in compile_graph(bm).specs]
    assert kinds.count(SWITCH) == 1


def nested(M):
    Scale = scale_layer(M)

    class Outer(M.layers.Layer):
        """no `training` of its own: the inner layer still gets the run's mode (Keras's call context)"""
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.a, self.b = Scale(), Scale()

        def call(self, x):
            return self.b(self.a(x) * 2.0)

    class Top(M.layers.Layer):
        """`training` passed on: one trace per mode, the inner layers in it"""
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.outer, self.c = Outer(), Scale()

        def call(self, x, training=None):
            return self.c(self.outer(x), training=training)
    inp = M.Input(shape=(4,))
    return M.Model(inp, M.layers.Dense(1, name="head")(Top()(inp)))


def test_nested_custom_layers_take_the_run_s_mode_as_keras(keras):
    km, bm = nested(keras), nested(bf)
    fit_both(km, bm, keras)
    for a, b in zip(bm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bm.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-4, atol=1e-5)
    assert [d["kind"] for d in compile_graph(bm).specs].count(SWITCH) == 1


def test_alike_traces_make_one_graph():
    class Twice(bf.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner, self.drop = bf.layers.Dense(3), bf.layers.Dropout(0.5)

        def call(self, x, training=None):
            return self.drop(self.inner(x) * 2.0, training=training)

    inp = bf.Input(shape=(4,))
    layer = Twice()
    m = bf.Model(inp, layer(inp))
    specs = compile_graph(m).specs
    assert len(specs) == 3 and not any("modes" in d or "train_mode" in d for d in specs)
    assert len(layer.inner._inbound) == 1 and len(layer.drop._inbound) == 1


def dropout_branch_model(M):
    class Noisy(M.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner, self.drop = M.layers.Dense(6, name="inner"), M.layers.Dropout(0.3)

        def call(self, x, training=None):
            h = self.inner(x)
            if training:
                h = self.drop(M.layers.Dense(6, name="wide")(h) if False else h * 3.0)
            return h
    inp = M.Input(shape=(4,))
    return M.Model(inp, M.layers.Dense(1, name="head")(Noisy()(inp)))


def predict_run_stats(m, x):
    run = m._engine.open_run("predict", len(x))
    out = np.empty((len(x), 1), np.float32)
    run.predict(x, out, 0, len(x), 0)
    stats = run.stats()
    run.close()
    return stats


def test_plans_are_exact_in_fit_and_predict_and_the_unused_branch_is_not_planned():
    m = dropout_branch_model(bf)
    m.compile(optimizer="sgd", loss="mse")
    assert_plan_equals_arenas(m, X, Y, batch_size=6)
    st = predict_run_stats(m, X[:6])
    assert st["run_high_water"] == st["run_reserved"]
    plan = m.estimate_memory(batch_size=6, mode="predict")
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == \
        m._engine.weight_arena_bytes + st["run_high_water"]
    # predict plans what a model without the training branch plans
    inp = bf.Input(shape=(4,))
    plain = bf.Model(inp, bf.layers.Dense(1)(bf.layers.Dense(6)(inp)))
    act = [e.bytes for e in plan.breakdown if e.category == "activations"]
    assert act == [e.bytes for e in plain.estimate_memory(batch_size=6, mode="predict").breakdown
                   if e.category == "activations"]
    train_act = sum(e.bytes for e in m.estimate_memory(batch_size=6).breakdown if e.category == "activations")
    assert train_act > sum(act)


def test_training_form_gradients_match_finite_differences():
    class Warp(bf.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = bf.layers.Dense(5)

        def call(self, x, training=None):
            h = self.inner(x)
            if training:   # an int seed draws the same every step: evaluate sees fit's draw
                b = bf.ops.shape(h)[0]
                h = bf.ops.square(h) * (1.0 + bf.random.uniform((b, 1), -0.4, 0.4, seed=3)) - h
            return h

    class Fixed(bf.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.warp = Warp()

        def call(self, x):
            return self.warp(x, training=True)   # fixed: evaluate runs the training form
    inp = bf.Input(shape=(4,))
    m = bf.Model(inp, bf.layers.Dense(1)(Fixed()(inp)))
    m.compile(optimizer="sgd", loss="mse")
    directional_check_per_array(m, X[:6], Y[:6])


def fixed_modes(M, rate=0.5):
    class Fixed(M.layers.Layer):
        """built-in layers called with training= inside call(): always that mode, as Keras"""
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.drop, self.noise = M.layers.Dropout(rate), M.layers.GaussianNoise(1.0)

        def call(self, x):
            return self.drop(x, training=True), self.noise(x, training=True)
    return Fixed


def test_built_in_layers_in_a_call_keep_a_mode_given_there_as_keras(keras):
    x = np.ones((4, 400), np.float32)
    for M in (keras, bf):
        inp = M.Input(shape=(400,))
        a, b = fixed_modes(M)()(inp)
        drop, noise = M.Model(inp, [a, b]).predict(x, verbose=0)
        assert set(np.unique(drop)) <= {0.0, 2.0} and 0.4 < (drop == 0).mean() < 0.6, M
        assert 0.9 < float((noise - x).std()) < 1.1, M
        # a training= given at a functional graph's own level is overridden by predict's mode (Keras 3)
        p = M.Model(inp, M.layers.Dropout(0.5)(inp, training=True)).predict(x, verbose=0)
        np.testing.assert_array_equal(p, x)

    def model(M):
        class Off(M.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.d1, self.drop = M.layers.Dense(3, name="d1"), M.layers.Dropout(0.9)

            def call(self, x, training=None):
                return self.drop(self.d1(x), training=False)   # no dropout in fit either
        i = M.Input(shape=(4,))
        return M.Model(i, M.layers.Dense(1, name="d2")(Off()(i)))
    km, bm = model(keras), model(bf)
    fit_both(km, bm, keras)
    for a, b in zip(bm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_nested_model_called_with_training_false_in_call_runs_in_inference_mode(keras):
    def model(M):
        class Top(M.Model):
            def __init__(self):
                super().__init__()
                self.base = M.Sequential([M.Input(shape=(4,)), M.layers.Dense(3), M.layers.Dropout(0.9)])
                self.top = M.layers.Dense(1)

            def call(self, x, training=None):
                return self.top(self.base(x, training=False))
        m = Top()
        m(X[:1]) if M is keras else m.build((None, 4))
        return m
    km, bm = model(keras), model(bf)
    fit_both(km, bm, keras)
    for a, b in zip(bm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def subclassed(M):
    class Net(M.Model):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = M.layers.Dense(3), M.layers.Dense(1)

        def call(self, x, training=None):
            h = self.d1(x)
            if training:
                h = M.ops.relu(h) - 0.25
            return self.d2(h)
    return Net()


def test_a_subclassed_model_branching_on_training_as_keras(keras, tmp_path):
    km, bm = subclassed(keras), subclassed(bf)
    km(X[:1])
    bm.build((None, 4))
    fit_both(km, bm, keras)
    for a, b in zip(bm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bm.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-4, atol=1e-5)
    assert not any(isinstance(l, bf.layers.Switch) for l in bm.layers)   # the two traces are not a layer
    with pytest.raises(ValueError, match="model '.*' \\(Net\\): its call\\(\\) computes differently.*save_weights"):
        bm.save(tmp_path / "n.keras")
    bm.save_weights(tmp_path / "n.weights.h5")   # Keras's subclassed layout: Keras's Net reads it
    k2 = subclassed(keras)
    k2(X[:1])
    k2.load_weights(tmp_path / "n.weights.h5")
    np.testing.assert_allclose(k2.predict(X, verbose=0), bm.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


def test_files_keras_refuses_naming_the_layer_and_the_graph_file_round_trips(tmp_path):
    m = scale_model(bf)
    m.compile(optimizer=bf.optimizers.SGD(0.05), loss="mse")
    with pytest.raises(ValueError, match="layer 'scale' \\(Scale\\).*training=True and training=False.*npz"):
        m.save(tmp_path / "m.keras")
    assert not (tmp_path / "m.keras").exists()
    m.save(tmp_path / "m.npz")
    back = bf.models.load_model(tmp_path / "m.npz")
    np.testing.assert_allclose(back.predict(X, verbose=0), m.predict(X, verbose=0), rtol=1e-6)
    m.fit(X, Y, batch_size=6, epochs=1, shuffle=False, verbose=0)
    back.fit(X, Y, batch_size=6, epochs=1, shuffle=False, verbose=0)   # the training form, from the file
    for a, b in zip(back.get_weights(), m.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    inp = bf.Input(shape=(400,))
    fixed = bf.Model(inp, fixed_modes(bf)()(inp)[0])
    fixed.save(tmp_path / "f.npz")
    p = bf.models.load_model(tmp_path / "f.npz").predict(np.ones((2, 400), np.float32), verbose=0)
    assert 0.3 < (p == 0).mean() < 0.7 and set(np.unique(p)) <= {0.0, 2.0}


def test_what_cannot_run_raises_naming_the_layer():
    class Bad(bf.layers.Layer):
        def call(self, x, training=None):
            return bf.ops.reshape(x, (-1, 2, 2)) if training else x
    with pytest.raises(ValueError, match="layer 'bad' \\(Bad\\).*training=True.*training=False"):
        Bad(name="bad")(bf.Input(shape=(4,)))

    class Two(bf.layers.Layer):
        def call(self, x, training=None):
            return [x, x * 2.0] if training else x
    with pytest.raises(TypeError, match="layer 'two'.*2 tensors with training=True and 1"):
        Two(name="two")(bf.Input(shape=(4,)))
    inp = bf.Input(shape=(4,))

    class Norm(bf.layers.Layer):
        def __init__(self, training, **kwargs):
            super().__init__(**kwargs)
            self.bn, self.mode = bf.layers.BatchNormalization(name=f"bn_{training}"), training

        def call(self, x):
            return self.bn(x, training=self.mode)
    with pytest.raises(ValueError, match="'bn_True' \\(BatchNormalization\\) is called with training=True"):
        Norm(True)(inp)
    m = bf.Model(inp, Norm(False)(inp))
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="bn_False: BatchNormalization called with training=False while "
                       "trainable.*trainable = False"):
        m.fit(X, X, epochs=1, verbose=0)
    np.testing.assert_allclose(m.predict(X, verbose=0), X / np.sqrt(1.0 + 1e-3), rtol=1e-5)  # predict runs it
    m.layers[1].bn.trainable = False
    m.compile(optimizer="sgd", loss="mse")
    m.fit(X, X, epochs=1, verbose=0)   # frozen: inference mode, as Keras's fine-tuning guide runs it


def test_the_engine_checks_its_mode_fields_and_the_new_kinds():
    DENSE, RANDOM = engine_kinds("DENSE RANDOM")
    dense = dict(kind=DENSE, name="d", units=3, inputs=[0])
    with pytest.raises(ValueError, match="d: modes must be in 0..3 and train_mode in 0..2, got 5 and 0"):
        _core.Model([dict(dense, modes=5)], (4,), 0)
    with pytest.raises(ValueError, match="sw: call\\(\\) returns shape \\(4,\\) with training=True and \\(3,\\)"):
        _core.Model([dense, dict(kind=SWITCH, name="sw", inputs=[0, 1])], (4,), 0)
    with pytest.raises(ValueError, match="rd: unknown distribution 7"):
        _core.Model([dict(kind=RANDOM, name="rd", target_shape=(2,), rnd_dist=7, inputs=[0])], (4,), 0)
    with pytest.raises(ValueError, match="rd: the dropout rate must be in \\[0, 1\\), got 1"):
        _core.Model([dict(kind=RANDOM, name="rd", target_shape=(2,), rnd_dist=3, rnd_a=1.0, inputs=[0])], (4,), 0)
