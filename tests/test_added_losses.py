"""Losses layers add, as Keras 3 adds them to the training loss: a layer's
activity_regularizer (built-in l1 / l2, or a keras.regularizers.Regularizer
subclass whose __call__ is written in keras.ops) adds regularizer(output) /
batch size, and add_loss(ops.mean(...)) in a custom layer's call() adds its
value, both unweighted by sample weights (models/loss_graph.py: the engine's
ADDED loss on per-sample values). Same weights and batches as Keras 3: same
losses and weights; micro-batches give the full batch's update; the plan is
exact; the gradient matches finite differences; what boundfit cannot add
(a sum over the batch, a term that mixes the samples, like keras.io
PointNet's OrthogonalRegularizer) raises naming the layer."""

import numpy as np
import pytest

import boundfit as bf
from boundfit.ops import OpNotSupportedError
from conftest import assert_plan_equals_arenas, directional_check_per_array

from helpers.keras_recorded import case
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


rng = np.random.default_rng(7)
X = rng.standard_normal((20, 6)).astype(np.float32)
Y = rng.standard_normal((20, 2)).astype(np.float32)
SW = rng.uniform(0.2, 2.0, 20).astype(np.float32)
IMG = rng.standard_normal((12, 6, 6, 2)).astype(np.float32)


def squares(M):
    """a custom activity regularizer: 0.05 * the sum of squares, written in keras.ops"""
    class Squares(M.regularizers.Regularizer):
        def __init__(self, factor=0.05):
            self.factor = factor

        def __call__(self, x):
            return M.ops.sum(self.factor * M.ops.square(x))
    return Squares()


def penalized(M):
    """a custom layer adding 0.1 * the mean of its squared output (add_loss), and one with an activity
    regularizer of its own"""
    class Penalized(M.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.dense = M.layers.Dense(units, activation="tanh")

        def call(self, x):
            h = self.dense(x)
            self.add_loss(0.1 * M.ops.mean(M.ops.square(h)))
            return h
    return Penalized


def _mlp(M, variant):
    x = M.Input(shape=(6,))
    if variant == "builtin":
        h = M.layers.Dense(5, activation="tanh", activity_regularizer=M.regularizers.l2(0.01))(x)
        h = M.layers.Dense(4, activity_regularizer=M.regularizers.L1L2(l1=0.003, l2=0.02))(h)
    elif variant == "custom":
        h = M.layers.Dense(5, activation="tanh", activity_regularizer=squares(M))(x)
        h = M.layers.Dense(4)(h)
    elif variant == "add_loss":   # add_loss in a custom layer, and a custom layer's own activity regularizer
        h = penalized(M)(5)(x)
        h = penalized(M)(4, activity_regularizer="l2")(h)
    else:   # a custom layer that adds a loss, inside another custom layer
        class Outer(M.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.inner = penalized(M)(5)

            def call(self, x):
                return self.inner(x) * 2.0
        h = Outer()(x)
    return M.Model(x, M.layers.Dense(2)(h))


def _keras_fits(build, compile, x, y, fit, after=None):
    """Keras's side, recorded: build(keras)'s weights (w), compile(keras, km), then its fit history, the weights
    after (w1) and after(km)'s results"""
    def compute():
        keras = load()
        km = build(keras)
        w = km.get_weights()
        compile(keras, km)
        h = km.fit(x, y, **fit).history
        return dict(w=w, history=h, w1=km.get_weights(), after=after(km) if after is not None else None)
    return case(compute)


def _assert_same(hb, k, bm):
    assert sorted(hb.history) == sorted(k["history"])
    for key in k["history"]:
        np.testing.assert_allclose(hb.history[key], k["history"][key], rtol=1e-5, atol=1e-6, err_msg=key)
    for a, b in zip(bm.get_weights(), k["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", ["builtin", "custom", "add_loss", "nested"])
def test_added_losses_train_as_keras_unweighted_by_sample_weights(variant):
    fit = dict(sample_weight=SW[:14], batch_size=6, epochs=2, shuffle=False, verbose=0)
    if variant == "builtin":   # the validation loss too (Keras's layers add their losses in inference too)
        fit["validation_data"] = (X[14:], Y[14:])

    def compile(M, m):
        m.compile(optimizer=M.optimizers.SGD(0.05, momentum=0.9), loss="mse", metrics=["mae"])

    def after(km):
        return (km.evaluate(X, Y, sample_weight=SW, batch_size=8, verbose=0), km.predict(X, verbose=0))
    k = _keras_fits(lambda M: _mlp(M, variant), compile, X[:14], Y[:14], fit, after if variant == "builtin" else None)
    bm = _mlp(bf, variant)
    bm.set_weights(k["w"])
    compile(bf, bm)
    hb = bm.fit(X[:14], Y[:14], **fit)
    _assert_same(hb, k, bm)
    if variant == "builtin":
        evaluate, predict = k["after"]
        np.testing.assert_allclose(bm.evaluate(X, Y, sample_weight=SW, batch_size=8, verbose=0), evaluate,
                                   rtol=1e-5)
        np.testing.assert_allclose(bm.predict(X, verbose=0), predict, rtol=1e-5, atol=1e-6)


def _convnet(M, variant=None):
    x = M.Input(shape=(6, 6, 2))
    h = M.layers.Conv2D(3, 3, activation="relu", activity_regularizer=M.regularizers.l1(0.01))(x)
    return M.Model(x, M.layers.Dense(1)(M.layers.Flatten()(h)))


def test_a_conv_layers_activity_regularizer_with_a_custom_loss_trains_as_keras():
    t = np.random.default_rng(8).standard_normal((12, 1)).astype(np.float32)
    fit = dict(batch_size=5, epochs=1, shuffle=False, verbose=0)

    def compile(M, m):
        m.compile(optimizer=M.optimizers.Adam(0.01), loss=lambda yt, yp: M.ops.mean(M.ops.abs(yt - yp), axis=-1))
    k = _keras_fits(_convnet, compile, IMG, t, fit)
    bm = _convnet(bf)
    bm.set_weights(k["w"])
    compile(bf, bm)
    _assert_same(bm.fit(IMG, t, **fit), k, bm)


@pytest.mark.parametrize("variant", ["builtin", "add_loss"])
def test_micro_batches_give_the_full_batchs_update_and_the_plan_is_exact(variant):
    m = _mlp(bf, variant)
    w0 = m.get_weights()
    runs = []
    for mb in (None, 5):
        m.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
        m.set_weights(w0)
        h = m.fit(X, Y, sample_weight=SW, batch_size=10, epochs=1, shuffle=False, verbose=0, micro_batch=mb)
        runs.append((h.history["loss"], m.get_weights()))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, X, Y, batch_size=8)


@pytest.mark.parametrize("variant", ["builtin", "custom", "add_loss"])
def test_the_gradient_of_added_losses_matches_finite_differences(variant):
    m = _mlp(bf, variant)
    m.compile(optimizer="sgd", loss="mse")
    trainer = m._trainer_for()
    x, y = trainer._lg.arrays(X[:8], Y[:8])
    directional_check_per_array(trainer, x, [np.ascontiguousarray(a) for a in y])


POINTNET_REGULARIZER = '''
class OrthogonalRegularizer(keras.regularizers.Regularizer):
    def __init__(self, num_features, l2reg=0.001):
        self.num_features = num_features
        self.l2reg = l2reg
        self.eye = ops.eye(num_features)

    def __call__(self, x):
        x = ops.reshape(x, (-1, self.num_features, self.num_features))
        xxt = ops.tensordot(x, x, axes=(2, 2))
        xxt = ops.reshape(xxt, (-1, self.num_features, self.num_features))
        return ops.sum(self.l2reg * ops.square(xxt - self.eye))
'''


def test_what_boundfit_cannot_add_raises_naming_the_layer():
    """keras.io PointNet's OrthogonalRegularizer (its tensordot of the (B, n, n) batch with itself mixes every
    pair of samples), add_loss of a sum over the batch or of per-sample values, a loss added by a call that is
    no node of the graph, a nested model's layers, and a regularizer whose value is a
    mean: each raises at fit naming the layer and what it was given"""
    scope = {"keras": bf, "ops": bf.ops, "np": np}
    exec(POINTNET_REGULARIZER, scope)
    x = bf.Input(shape=(3,))
    out = bf.layers.Dense(9, name="tnet_transform", activity_regularizer=scope["OrthogonalRegularizer"](3))(x)
    m = bf.Model(x, bf.layers.Dense(1)(out))
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(OpNotSupportedError, match="OrthogonalRegularizer of layer 'tnet_transform'.*tensordot"):
        m.fit(X[:, :3], Y[:, :1], verbose=0)

    def adding(value):
        class Adds(bf.layers.Layer):
            def call(self, x):
                self.add_loss(value(x))
                return x * 2.0
        x = bf.Input(shape=(6,))
        m = bf.Model(x, bf.layers.Dense(2)(Adds(name="adds")(x)))
        m.compile(optimizer="sgd", loss="mse")
        return m
    with pytest.raises(OpNotSupportedError, match="add_loss\\(\\) in layer 'adds'.*keras.ops.sum over every axis"):
        adding(lambda x: bf.ops.sum(x)).fit(X, Y, verbose=0)
    with pytest.raises(OpNotSupportedError, match="add_loss\\(\\) in layer 'adds'.*a KerasTensor"):
        adding(lambda x: bf.ops.square(x)).fit(X, Y, verbose=0)

    class Passes(bf.layers.Layer):   # its call() returns its input: no node of the graph
        def call(self, x):
            self.add_loss(bf.ops.mean(bf.ops.square(x)))
            return x
    x = bf.Input(shape=(6,))
    m = bf.Model(x, bf.layers.Dense(2)(Passes(name="passes")(x)))
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="layer 'passes' \\(Passes\\) adds a loss .* no call of it is a node"):
        m.fit(X, Y, verbose=0)
    inner_in = bf.Input(shape=(6,))
    inner = bf.Model(inner_in, bf.layers.Dense(2, activity_regularizer="l1", name="inside")(inner_in))
    x = bf.Input(shape=(6,))
    m = bf.Model(x, inner(x))
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="nested in .* has layers that add losses"):
        m.fit(X, Y, verbose=0)

    class MeanReg(bf.regularizers.Regularizer):
        def __call__(self, x):
            return bf.ops.mean(bf.ops.square(x))
    m = bf.Model(x, bf.layers.Dense(1, name="meanreg", activity_regularizer=MeanReg())(x))
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(OpNotSupportedError, match="MeanReg of layer 'meanreg' \\(Dense\\) returns keras.ops.mean over"):
        m.fit(X[:, :3], Y[:, :1], verbose=0)


def test_an_activity_regularizer_on_a_variable_length_input_trains_as_at_that_fixed_length():
    """losses added by layers on an Input of shape (None, 6): the loss traced at each batch's length, the same
    losses and weights as the model declared at that length"""
    def model(t):
        x = bf.Input(shape=(t, 6))
        m = bf.Model(x, bf.layers.Dense(2, activity_regularizer="l1", name="reg")(x))
        m.compile(optimizer="sgd", loss="mse")
        return m
    fixed, free = model(3), model(None)
    free.set_weights(fixed.get_weights())
    x, y = np.stack([X, X * 0.5, -X], 1), np.stack([Y, Y, Y * 2], 1)
    a = fixed.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    b = free.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(b, a, rtol=1e-6)
    for u, v in zip(free.get_weights(), fixed.get_weights()):
        np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7)


def test_activity_regularizers_are_saved_as_keras_writes_them(tmp_path):
    """a built-in one by its Keras config, a Regularizer subclass by its class name and get_config(): Keras
    and boundfit load them (the subclass from custom_objects, as Keras) and evaluate the same loss"""

    def scaled(M):
        class Scaled(M.regularizers.Regularizer):
            def __init__(self, factor=0.1):
                self.factor = factor

            def __call__(self, v):
                return M.ops.sum(self.factor * M.ops.square(v))

            def get_config(self):
                return {"factor": self.factor}
        return Scaled
    x = bf.Input((6,))
    h = bf.layers.Dense(4, activity_regularizer=bf.regularizers.l2(0.02))(x)
    m = bf.Model(x, bf.layers.Dense(2, activity_regularizer=scaled(bf)(0.3))(h))
    m.compile(optimizer="sgd", loss="mse")
    path = str(tmp_path / "m.keras")
    m.save(path)
    want = m.evaluate(X, Y, verbose=0)
    with pytest.raises(ValueError, match="activity_regularizer: unknown regularizer 'Scaled'.*custom_objects"):
        bf.models.load_model(path)
    back = bf.models.load_model(path, custom_objects={"Scaled": scaled(bf)})

    def opened():   # Keras's side, recorded by the file's contents
        keras = load()
        return keras.models.load_model(path, custom_objects={"Scaled": scaled(keras)}).evaluate(X, Y, verbose=0)
    assert back.layers[-1].activity_regularizer.factor == 0.3
    np.testing.assert_allclose(back.evaluate(X, Y, verbose=0), want, rtol=1e-6)
    np.testing.assert_allclose(case(opened, files=[path]), want, rtol=1e-5)
