"""Custom loss functions fn(y_true, y_pred) written in keras.ops, traced into a
loss subgraph (boundfit.loss_trace) whose per-sample values the engine's MEAN
loss averages (Keras's sum_over_batch_size): a model that takes the targets
as one more input and outputs fn's values, sharing its layers with the
model, trains as Keras 3 trains the model compiled with loss=fn (same
weights, same batches: same losses and weights after training), sample
weights per sample as Keras; its gradient matches finite differences, its
plan is exact, and a loss boundfit cannot trace raises naming the loss and
the op."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import loss_trace
from boundfit.ops import OpNotSupportedError
from conftest import assert_plan_equals_arenas, directional_check_per_array

import keras_ref

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


def test_a_per_sample_loss_function_with_sample_weights_trains_as_keras():
    keras = keras_ref.load()
    km, bm = _mlp(keras), _mlp(bf)
    bm.set_weights(km.get_weights())
    km.compile(optimizer=keras.optimizers.SGD(0.1), loss=lambda t, p: my_mse(t, p, keras.ops))
    hk = km.fit(X, Y, sample_weight=SW, batch_size=8, epochs=3, shuffle=False, verbose=0)
    trainer, over_batch = _trainer(bm, lambda t, p: my_mse(t, p, bf.ops))
    assert not over_batch and trainer.output_shape == (None, 2)   # the mean over the last axis is the engine's
    trainer.compile(optimizer=bf.optimizers.SGD(0.1), loss=bf.losses._TracedMean())
    hb = trainer.fit([X, Y], np.zeros_like(Y), sample_weight=SW, batch_size=8, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-5)
    for a, b in zip(bm.get_weights(), km.get_weights()):   # the model's own layers were trained
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bm.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    kv = km.evaluate(X, Y, sample_weight=SW, batch_size=24, verbose=0)
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
        return bf.ops.mean(bf.ops.square(y_true - y_pred)) * 2.0

    def ops_after_the_per_sample_mean(y_true, y_pred):
        return bf.ops.sqrt(bf.ops.mean(bf.ops.square(y_true - y_pred), axis=-1))

    def returns_a_number(y_true, y_pred):
        return 0.0

    with pytest.raises(OpNotSupportedError, match="loss function 'sum_of_squares': keras.ops.sum on a symbolic"):
        loss_trace.trace(sum_of_squares, m.output)
    with pytest.raises(OpNotSupportedError, match="loss function 'math_after_the_mean'.*mean over every axis.*last op"):
        loss_trace.trace(math_after_the_mean, m.output)
    with pytest.raises(OpNotSupportedError, match="ops_after_the_per_sample_mean.*keras.ops.mean in a loss.*last op"):
        loss_trace.trace(ops_after_the_per_sample_mean, m.output)
    with pytest.raises(TypeError, match="loss function 'returns_a_number' returned float"):
        loss_trace.trace(returns_a_number, m.output)
    with pytest.raises(TypeError, match="_TracedMean is computed by the engine"):
        bf.losses._TracedMean()(Y, Y)
