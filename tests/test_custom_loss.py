"""Custom loss functions fn(y_true, y_pred) written in keras.ops, traced into a
loss subgraph (boundfit.loss_trace) whose per-sample values the engine's MEAN
loss averages (Keras's sum_over_batch_size): a model that takes the targets
as one more input and outputs fn's values, sharing its layers with the
model, trains as Keras 3 trains the model compiled with loss=fn (same
weights, same batches: same losses and weights after training), sample
weights per sample as Keras; its gradient matches finite differences, its
plan is exact, and a loss boundfit cannot trace raises naming the loss and
the op. compile(loss=fn) itself (a function, a Loss subclass with call(), a
list or dict per output) builds that training graph for fit / evaluate
(models/loss_graph.py): history, evaluate, predict and metrics as Keras 3,
micro-batches as the full batch, the plan exact, the model saved with its
loss by name (load_model needs it in custom_objects, as Keras)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import loss_trace
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


rng = np.random.default_rng(4)
X = rng.standard_normal((24, 5)).astype(np.float32)
Y = rng.standard_normal((24, 2)).astype(np.float32)
SW = rng.uniform(0.2, 2.0, 24).astype(np.float32)


def my_mse(y_true, y_pred, ops):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


def _mlp(M):
    x = M.Input(shape=(5,))
    h = M.layers.Dense(6, activation="tanh")(x)
    return M.Model(x, M.layers.Dense(2)(h))


def _trainer(model, fn):
    """the model's layers with fn's loss subgraph: inputs [x, y_true], output fn's values"""
    y_true, values, over_batch = loss_trace.trace(fn, model.output)
    return bf.Model([model.input, y_true], values), over_batch


def _keras_fits(build, compile, x, y, fit, after=None):
    """Keras's side, recorded: build(keras)'s weights (w), compile(keras, km), then its fit history (fit: fit's
    arguments, or fit(keras) gives them), the weights after (w1) and after(km)'s results"""
    def compute():
        keras = load()
        km = build(keras)
        w = km.get_weights()
        compile(keras, km)
        h = km.fit(x, y, **(fit(keras) if callable(fit) else fit)).history
        return dict(w=w, history=h, w1=km.get_weights(), after=after(km) if after is not None else None)
    return case(compute)


def test_a_per_sample_loss_function_with_sample_weights_trains_as_keras():
    fit = dict(sample_weight=SW, batch_size=8, epochs=3, shuffle=False, verbose=0)
    k = _keras_fits(_mlp, lambda M, m: m.compile(optimizer=M.optimizers.SGD(0.1),
                                                 loss=lambda t, p: my_mse(t, p, M.ops)), X, Y, fit,
                    lambda km: (km.predict(X, verbose=0), km.evaluate(X, Y, sample_weight=SW, batch_size=24,
                                                                       verbose=0)))
    bm = _mlp(bf)
    bm.set_weights(k["w"])
    trainer, over_batch = _trainer(bm, lambda t, p: my_mse(t, p, bf.ops))
    assert not over_batch and trainer.output_shape == (None, 2)   # the mean over the last axis is the engine's
    trainer.compile(optimizer=bf.optimizers.SGD(0.1), loss=bf.losses._TracedMean())
    hb = trainer.fit([X, Y], np.zeros_like(Y), **fit)
    np.testing.assert_allclose(hb.history["loss"], k["history"]["loss"], rtol=1e-5)
    for a, b in zip(bm.get_weights(), k["w1"]):   # the model's own layers were trained
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    predict, kv = k["after"]
    np.testing.assert_allclose(bm.predict(X, verbose=0), predict, rtol=1e-5, atol=1e-6)
    bv = trainer.evaluate([X, Y], np.zeros_like(Y), sample_weight=SW, batch_size=24, verbose=0)
    np.testing.assert_allclose(bv, kv, rtol=1e-5)


def contrastive(ops, margin=1):
    def contrastive_loss(y_true, y_pred):
        square_pred = ops.square(y_pred)
        margin_square = ops.square(ops.maximum(margin - (y_pred), 0))
        return ops.mean((1 - y_true) * square_pred + (y_true) * margin_square)
    return contrastive_loss


def test_a_mean_over_every_axis_is_the_engines_mean_and_its_gradient_matches_finite_differences():
    m = _mlp(bf)
    trainer, over_batch = _trainer(m, contrastive(bf.ops))
    assert over_batch
    trainer.compile(optimizer="sgd", loss=bf.losses._TracedMean())
    t = (Y > 0).astype(np.float32)
    p = m.predict(X, verbose=0)
    want = np.mean((1 - t) * p ** 2 + t * np.maximum(1 - p, 0) ** 2)
    got = trainer.evaluate([X, t], np.zeros_like(t), batch_size=24, verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    directional_check_per_array(trainer, [X, t], np.zeros_like(t))


def test_the_plan_of_a_loss_subgraph_is_exact():
    trainer, _ = _trainer(_mlp(bf), lambda t, p: my_mse(t, p, bf.ops))
    trainer.compile(optimizer="adam", loss=bf.losses._TracedMean())
    assert_plan_equals_arenas(trainer, [X, Y], np.zeros_like(Y), batch_size=8)


def test_a_loss_function_that_cannot_be_traced_raises_naming_the_loss_and_the_op():
    m = _mlp(bf)

    def sum_of_squares(y_true, y_pred):
        return bf.ops.sum(bf.ops.square(y_true - y_pred))

    def math_after_the_mean(y_true, y_pred):
        return bf.ops.sqrt(bf.ops.mean(bf.ops.square(y_true - y_pred)))

    def ops_after_the_per_sample_mean(y_true, y_pred):
        return bf.ops.sqrt(bf.ops.mean(bf.ops.square(y_true - y_pred), axis=-1))

    def returns_a_number(y_true, y_pred):
        return 0.0

    with pytest.raises(OpNotSupportedError, match="loss function 'sum_of_squares' returns keras.ops.sum over every"):
        loss_trace.trace(sum_of_squares, m.output)
    with pytest.raises(OpNotSupportedError, match="'math_after_the_mean'.*mean over every axis.*only as a loss"):
        loss_trace.trace(math_after_the_mean, m.output)
    with pytest.raises(OpNotSupportedError, match="ops_after_the_per_sample_mean.*ops.mean on a symbolic.*loss's"):
        loss_trace.trace(ops_after_the_per_sample_mean, m.output)
    with pytest.raises(TypeError, match="loss function 'returns_a_number' returned float"):
        loss_trace.trace(returns_a_number, m.output)
    with pytest.raises(TypeError, match="_TracedMean is computed by the engine"):
        bf.losses._TracedMean()(Y, Y)


# ---- compile(loss=...) ----

def _with_my_mse(**kw):
    """compile(M, m): SGD with momentum and my_mse in module M's ops"""
    def compile(M, m):
        m.compile(optimizer=M.optimizers.SGD(0.1, momentum=0.9), loss=lambda t, p: my_mse(t, p, M.ops), **kw)
    return compile


def _assert_same(hb, k, bm, rtol=1e-5):
    hk = k["history"]
    assert sorted(hb.history) == sorted(hk)
    for key in hk:
        np.testing.assert_allclose(hb.history[key], hk[key], rtol=rtol, atol=1e-6, err_msg=key)
    for a, b in zip(bm.get_weights(), k["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _fits_as_keras(build, compile, x, y, fit, after=None):
    """the boundfit model of build(bf) from Keras's weights, compiled and fit as Keras's (recorded): (model,
    Keras's record, boundfit's History)"""
    k = _keras_fits(build, compile, x, y, fit, after)
    bm = build(bf)
    bm.set_weights(k["w"])
    compile(bf, bm)
    hb = bm.fit(x, y, **(fit(bf) if callable(fit) else fit))
    _assert_same(hb, k, bm)
    return bm, k, hb


def test_compile_with_a_loss_function_fits_evaluates_and_predicts_as_keras():
    """compile(loss=fn, metrics=...): the history (loss, metric, val_loss, val metric), evaluate with sample
    weights and predict as Keras 3; predict takes x alone."""
    fit = dict(sample_weight=SW[:16], batch_size=8, epochs=3, shuffle=False, verbose=0,
               validation_data=(X[16:], Y[16:]))

    def after(km):
        return ([km.evaluate(X, Y, batch_size=10, verbose=0, **kw) for kw in ({}, {"sample_weight": SW})],
                km.predict(X, verbose=0))
    bm, k, _ = _fits_as_keras(_mlp, _with_my_mse(metrics=["mae"]), X[:16], Y[:16], fit, after)
    evaluated, predict = k["after"]
    for kw, want in zip(({}, {"sample_weight": SW}), evaluated):
        np.testing.assert_allclose(bm.evaluate(X, Y, batch_size=10, verbose=0, **kw), want, rtol=1e-5)
    np.testing.assert_allclose(bm.predict(X, verbose=0), predict, rtol=1e-5, atol=1e-6)


class _Margin:
    """a keras.losses.Loss subclass with its own argument, for either module"""

    @staticmethod
    def make(M):
        class MarginLoss(M.losses.Loss):
            def __init__(self, margin=1.0, **kwargs):
                super().__init__(**kwargs)
                self.margin = margin

            def call(self, y_true, y_pred):
                p = y_pred[:, :1]
                return M.ops.mean((1 - y_true) * M.ops.square(p)
                                  + y_true * M.ops.square(M.ops.maximum(self.margin - p, 0)), axis=-1)
        return MarginLoss


def _one_out(M):
    x = M.Input(shape=(5,))
    return M.Model(x, M.layers.Dense(1, activation="sigmoid")(M.layers.Dense(6, activation="tanh")(x)))


def test_a_loss_subclass_with_call_trains_as_keras():
    """keras.losses.Loss subclass with call(y_true, y_pred) and an __init__ argument, a metric on the output;
    labels (N,) for an (N, 1) output, which Keras passes to call() as they are (the math then broadcasts
    across the batch), are refused naming the class"""
    t = (Y[:, :1] > 0).astype(np.float32)

    def compile(M, m):
        m.compile(optimizer=M.optimizers.Adam(0.01), loss=_Margin.make(M)(margin=0.8), metrics=["mse"])
    bm, _, _ = _fits_as_keras(_one_out, compile, X, t, dict(batch_size=8, epochs=3, shuffle=False, verbose=0))
    with pytest.raises(bf.DataError, match="per-sample shape \\(\\), .*MarginLoss.*broadcasts across the batch"):
        bm.fit(X, t[:, 0], verbose=0)


def _two_out(M):
    x = M.Input(shape=(5,))
    h = M.layers.Dense(6, activation="tanh")(x)
    return M.Model(x, [M.layers.Dense(2, name="reg")(h), M.layers.Dense(1, activation="sigmoid", name="cls")(h)])


@pytest.mark.parametrize("form", ["list", "dict"])
def test_losses_per_output_train_as_keras(form):
    """a custom loss on one output, a built-in one on the other, loss weights and metrics per output"""
    t = (Y[:, :1] > 0).astype(np.float32)

    def compile(M, m):
        fn = lambda yt, yp: my_mse(yt, yp, M.ops)   # noqa: E731
        loss = [fn, "binary_crossentropy"] if form == "list" else {"reg": fn, "cls": "binary_crossentropy"}
        lw = [0.5, 2.0] if form == "list" else {"reg": 0.5, "cls": 2.0}
        m.compile(optimizer=M.optimizers.SGD(0.1), loss=loss, loss_weights=lw,
                  metrics={"reg": ["mae"], "cls": ["accuracy"]})
    bm, k, _ = _fits_as_keras(_two_out, compile, X, [Y, t], dict(batch_size=8, epochs=2, shuffle=False, verbose=0),
                              lambda km: km.evaluate(X, [Y, t], verbose=0, return_dict=True))
    eb, ek = bm.evaluate(X, [Y, t], verbose=0, return_dict=True), k["after"]
    assert sorted(eb) == sorted(ek)
    np.testing.assert_allclose([eb[k] for k in ek], list(ek.values()), rtol=1e-5)


def test_the_training_graphs_plan_is_exact_and_micro_batches_give_the_full_batchs_update():
    m = _mlp(bf)
    m.compile(optimizer="adam", loss=lambda t, p: my_mse(t, p, bf.ops))
    assert_plan_equals_arenas(m, X, Y, batch_size=8)
    w0 = m.get_weights()
    runs = []
    for mb in (None, 4):
        m.compile(optimizer=bf.optimizers.SGD(0.1), loss=contrastive(bf.ops))
        m.set_weights(w0)
        m.fit(X, (Y > 0).astype(np.float32), batch_size=12, epochs=1, shuffle=False, verbose=0, micro_batch=mb)
        runs.append(m.get_weights())
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_the_training_graph_computes_on_the_models_weights_not_a_copy_of_them():
    """The training graph's engine takes the model's weights (one copy: a write through either is the other's),
    and what its fit trains is what the model predicts with, computed here in NumPy from get_weights()."""
    m = _mlp(bf)
    m.compile(optimizer="adam", loss=lambda t, p: my_mse(t, p, bf.ops))
    m.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    trainer = m._trainer_for()
    assert trainer._engine.weights_base() is m._engine and m._engine.weights_base() is None
    w = [np.full_like(a, 0.01 * (k + 1)) for k, a in enumerate(m.get_weights())]
    m.set_weights(w)
    for a, b in zip(trainer._engine.get_weights(), w):
        np.testing.assert_array_equal(a, b)
    w[0][0, 0] = 3.0
    trainer._engine.set_weights(w)
    assert m.get_weights()[0][0, 0] == 3.0
    h = m.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert np.all(np.diff(h.history["loss"]) < 0)
    k1, b1, k2, b2 = m.get_weights()
    assert not np.array_equal(k1, w[0])
    np.testing.assert_allclose(m.predict(X, verbose=0), np.tanh(X @ k1 + b1) @ k2 + b2, rtol=1e-5, atol=1e-6)


def test_a_training_graph_refuses_weights_that_are_not_the_models_naming_the_node():
    """The engine lends a model's weights only to a graph whose weights are exactly the model's, node by node."""
    from boundfit import _core
    m = _mlp(bf)
    m.build()
    other = bf.Model(m.input, bf.layers.Dense(3)(m.layers[1].output))   # one Dense of its own
    g = bf.graph.compile_graph(other)
    nodes = [m._layer_node.get(id(l), -1) for l in g.node_layers]
    with pytest.raises(ValueError, match="not one node's of the model"):
        _core.Model(g.specs, g.input_shapes[0], 0, outputs=g.output_ids, weights_of=(m._engine, nodes))
    g = bf.graph.compile_graph(m)
    with pytest.raises(ValueError, match="weights_of: 2 node indices expected, got 1"):
        _core.Model(g.specs, g.input_shapes[0], 0, outputs=g.output_ids, weights_of=(m._engine, [0]))


def test_a_model_compiled_with_a_loss_function_saves_and_loads_by_its_name(tmp_path):
    """The .keras file holds the loss by name as Keras writes it and the optimizer state of the training
    graph; load_model needs the function in custom_objects (as Keras) and then trains on as the saved model
    does, compile=False loads the weights without it; Keras opens the file."""
    m = _mlp(bf)

    def scaled_mse(y_true, y_pred):
        return my_mse(y_true, y_pred, bf.ops)
    m.compile(optimizer="adam", loss=scaled_mse)
    m.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    path = str(tmp_path / "m.keras")
    m.save(path)
    with pytest.raises(TypeError, match="Could not locate function 'scaled_mse'.*custom_objects"):
        bf.models.load_model(path)
    bare = bf.models.load_model(path, compile=False)
    for a, b in zip(bare.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)
    back = bf.models.load_model(path, custom_objects={"scaled_mse": scaled_mse})
    np.testing.assert_allclose(back.evaluate(X, Y, verbose=0), m.evaluate(X, Y, verbose=0), rtol=1e-6)
    assert back.optimizer.iterations == m.optimizer.iterations == 3   # Adam's state saved from the training graph

    def opened():   # Keras's side, recorded by the file's contents
        keras = load()
        km = keras.models.load_model(path, custom_objects={"scaled_mse": lambda t, p: my_mse(t, p, keras.ops)})
        return km.evaluate(X, Y, verbose=0)
    np.testing.assert_allclose(case(opened, files=[path]), m.evaluate(X, Y, verbose=0), rtol=1e-5)
    hm = m.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    hl = back.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)   # goes on as the model itself does
    np.testing.assert_allclose(hl.history["loss"], hm.history["loss"], rtol=1e-6)
    for a, b in zip(back.get_weights(), m.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_what_a_custom_loss_cannot_do_raises_naming_it():
    m = _mlp(bf)
    m.compile(optimizer="sgd", loss=contrastive(bf.ops))
    with pytest.raises(ValueError, match="loss 'contrastive_loss' returns keras.ops.mean over every axis.*sample_w"):
        m.fit(X, Y, sample_weight=SW, verbose=0)
    with pytest.raises(ValueError, match="contrastive_loss.*class_weight"):
        m.fit(X, Y, class_weight={0: 2.0}, verbose=0)
    with pytest.raises(bf.DataError, match="per-sample shape \\(3,\\); the loss 'contrastive_loss' takes targets"):
        m.fit(X, np.zeros((24, 3), np.float32), verbose=0)
    with pytest.raises(bf.DataError, match="batch 0: .*expected \\(x, y\\) or \\(x, y, sample_weight\\) batches"):
        m.fit(iter([(X,)]), verbose=0)

    def total(y_true, y_pred):
        return bf.ops.sum(bf.ops.square(y_true - y_pred))
    m.compile(optimizer="sgd", loss=total)
    with pytest.raises(OpNotSupportedError, match="loss function 'total' returns keras.ops.sum over every axis"):
        m.fit(X, Y, verbose=0)
    with pytest.raises(ValueError, match="MarginLoss subclasses Loss but defines no call"):
        class MarginLoss(bf.losses.Loss):
            pass
        m.compile(optimizer="sgd", loss=MarginLoss())


class _Batches(bf.utils.PyDataset):
    def __init__(self, n=8):
        super().__init__()
        self.n = n

    def __len__(self):
        return len(X) // self.n

    def __getitem__(self, i):
        s = slice(i * self.n, (i + 1) * self.n)
        return X[s], Y[s], SW[s]


class _Sub(bf.Model):
    def __init__(self):
        super().__init__()
        self.d1 = bf.layers.Dense(6, activation="tanh", activity_regularizer=bf.regularizers.l2(0.01))
        self.d2 = bf.layers.Dense(2)

    def call(self, x):
        return self.d2(self.d1(x))


def test_a_pydataset_and_a_generator_train_a_custom_loss_as_arrays_do():
    """the batches of a PyDataset (and of a generator, into a subclassed model traced on its first batch) give
    the same training as the arrays"""
    def fn(t, p):
        return my_mse(t, p, bf.ops)
    runs = []
    for kind in ("arrays", "pydataset", "generator"):
        m = _Sub()
        m.build((None, 5))
        if runs:
            m.set_weights(w0)
        w0 = m.get_weights()
        m.compile(optimizer=bf.optimizers.SGD(0.1), loss=fn)
        if kind == "arrays":
            h = m.fit(X, Y, sample_weight=SW, batch_size=8, epochs=1, shuffle=False, verbose=0)
            ev = m.evaluate(X, Y, sample_weight=SW, batch_size=8, verbose=0)
        elif kind == "pydataset":
            h = m.fit(_Batches(), epochs=1, shuffle=False, verbose=0)
            ev = m.evaluate(_Batches(), verbose=0)
        else:
            m2 = _Sub()
            m2.compile(optimizer=bf.optimizers.SGD(0.1), loss=fn)
            h = m2.fit((_Batches()[i] for i in range(3)), epochs=1, verbose=0)
            m2.set_weights(w0)   # built on the first batch: the same graph
            m2.compile(optimizer=bf.optimizers.SGD(0.1), loss=fn)
            h = m2.fit((_Batches()[i] for i in range(3)), epochs=1, verbose=0)
            ev, m = m2.evaluate(_Batches(), verbose=0), m2
        runs.append((h.history["loss"], ev, m.get_weights()))
    for loss, ev, w in runs[1:]:
        np.testing.assert_allclose(loss, runs[0][0], rtol=1e-5)
        np.testing.assert_allclose(ev, runs[0][1], rtol=1e-5)
        for a, b in zip(w, runs[0][2]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_callbacks_see_the_model_early_stopping_restores_and_the_rate_is_reduced_as_in_keras():
    """callbacks get the model itself while its training graph runs: EarlyStopping reads and restores its
    newest weights, ReduceLROnPlateau sets the rate the training graph steps with, as Keras 3 does"""
    def compile(M, m):
        m.compile(optimizer=M.optimizers.Adam(0.3), loss=lambda t, p: my_mse(t, p, M.ops))

    def fit(M):   # each library's own callbacks
        return dict(batch_size=12, epochs=10, shuffle=False, verbose=0, callbacks=[
            M.callbacks.EarlyStopping(monitor="loss", patience=2, restore_best_weights=True),
            M.callbacks.ReduceLROnPlateau(monitor="loss", patience=0, factor=0.5)])
    _, _, hb = _fits_as_keras(_mlp, compile, X, Y, fit)
    assert len(hb.history["loss"]) < 10   # it stopped early


def test_class_weight_weighs_a_custom_loss_per_sample_as_in_keras():
    """class_weight becomes per-sample weights by each sample's class (its one-hot target's argmax)"""
    onehot = np.eye(2, dtype=np.float32)[(Y[:, 0] > 0).astype(int)]
    fit = dict(class_weight={0: 0.5, 1: 3.0}, batch_size=8, epochs=2, shuffle=False, verbose=0)
    _fits_as_keras(_mlp, _with_my_mse(), X, onehot, fit)
