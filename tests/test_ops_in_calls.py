"""keras.ops that keras.io programs use inside a custom layer's call(), against Keras 3 (recorded): a layer's own
weight (add_weight) as a tensor (ops.convert_to_tensor, ops.slice of it, ops.broadcast_to the batch: CCT's
PositionEmbedding), ops.stack(xs, axis=0) with ops.softmax / sum / mean / max / min over that axis (attention
MIL), ops.reshape by ops.shape of a variable-length axis, a Loss called with sample weights on the model's
inputs and added with add_loss (keras.io's endpoint layer); values, one SGD step's weights (the gradients),
central differences, and the refusals by name."""

import numpy as np
import pytest

import boundfit as bf
from boundfit.errors import OpNotSupportedError

import keras_ref
from conftest import directional_check
from helpers import keras_recorded


def _pos_model(K, start, T=4, F=3):
    """x + the layer's (6, F) weight sliced at `start` to x's (T, F), broadcast to the batch; then Dense"""
    class PosAdd(K.layers.Layer):
        def build(self, input_shape):
            self.pos = self.add_weight(name="pos", shape=(6, F), initializer="random_normal")

        def call(self, x):
            shape = K.ops.shape(x)
            p = K.ops.slice(K.ops.convert_to_tensor(self.pos), (start, 0), (shape[-2], shape[-1]))
            return x * K.ops.broadcast_to(p, shape)

    i = K.Input((T, F))
    m = K.Model(i, K.layers.Dense(2)(K.layers.Flatten()(PosAdd()(i))))
    m.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    return m


def _stack_model(K):
    """three Dense views of the input stacked on axis 0: softmax over the stack weighting them, their sum, mean,
    max, min and log_softmax's middle one, unstacked and indexed back"""
    class Pool(K.layers.Layer):
        def call(self, xs):
            s = K.ops.stack(xs)
            a = K.ops.softmax(s, axis=0)
            parts = K.ops.unstack(a, axis=0)
            mixed = parts[0] * xs[0] + a[1] * xs[1] + a[2, :, :] * xs[2]
            return K.ops.concatenate([mixed, K.ops.sum(s, axis=0), K.ops.mean(s, axis=0), K.ops.max(s, axis=0),
                                      K.ops.min(s, axis=0), K.ops.log_softmax(s, axis=0)[1]], axis=-1)

    i = K.Input((5,))
    views = [K.layers.Dense(4, activation="tanh")(i) for _ in range(3)]
    m = K.Model(i, K.layers.Dense(2)(Pool()(views)))
    m.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    return m


def _heads_model(K):
    """ops.reshape by ops.shape of a variable-length axis (one None: the time axis) into heads and back"""
    class Heads(K.layers.Layer):
        def call(self, x):
            b, t, f = K.ops.shape(x)
            h = K.ops.reshape(x, (b, t, 2, f // 2))
            return K.ops.reshape(K.ops.transpose(h, (0, 1, 3, 2)), (b, t, f))

    i = K.Input((None, 4))
    m = K.Model(i, K.layers.Dense(2)(Heads()(i)))
    m.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    return m


def _endpoint_model(K, weighting):
    """a layer adding BinaryCrossentropy(from_logits=True)(targets, logits, sample_weight) of the model's inputs,
    called with keywords only; sample weights (B, 1) or (B,)"""
    class Endpoint(K.layers.Layer):
        def call(self, logits, targets=None, sample_weight=None):
            w = sample_weight if weighting == "column" else K.ops.squeeze(sample_weight, -1)
            self.add_loss(K.losses.BinaryCrossentropy(from_logits=True)(targets, logits, w))
            return K.ops.sigmoid(logits)

    x, t, sw = K.Input((5,), name="x"), K.Input((1,), name="t"), K.Input((1,), name="sw")
    m = K.Model([x, t, sw], Endpoint()(logits=K.layers.Dense(1)(x), targets=t, sample_weight=sw))
    m.compile(optimizer=K.optimizers.SGD(0.1))
    return m


def _endpoint_data():
    rng = np.random.default_rng(2)
    return {"x": rng.standard_normal((6, 5)).astype("float32"), "t": rng.random((6, 1)).astype("float32"),
            "sw": rng.random((6, 1)).astype("float32")}


@pytest.mark.parametrize("weighting", ["column", "row"])
def test_a_loss_with_sample_weights_added_in_a_call_evaluates_and_trains_as_keras(weighting):
    def compute():
        K = keras_ref.load()
        m = _endpoint_model(K, weighting)
        w0, ev = m.get_weights(), m.evaluate(_endpoint_data(), verbose=0)
        m.fit(_endpoint_data(), batch_size=6, epochs=1, shuffle=False, verbose=0)
        return {"w0": w0, "ev": ev, "w1": m.get_weights()}
    k = keras_recorded.case(compute)
    m = _endpoint_model(bf, weighting)
    m.set_weights(k["w0"])
    np.testing.assert_allclose(m.evaluate(_endpoint_data(), verbose=0), k["ev"], rtol=1e-5)
    m.fit(_endpoint_data(), batch_size=6, epochs=1, shuffle=False, verbose=0)
    for wb, wk in zip(m.get_weights(), k["w1"], strict=True):
        np.testing.assert_allclose(wb, wk, rtol=1e-5, atol=1e-6)


def test_a_layer_called_without_its_inputs_names_them():
    with pytest.raises(TypeError, match="called without inputs .*'inputs'"):
        bf.layers.Dense(2)(training=False)
    y = bf.layers.Dense(2)(inputs=bf.Input((3,)))
    assert y.shape == (None, 2)


def _data(shape, n=6):
    rng = np.random.default_rng(1)
    return rng.standard_normal((n,) + shape).astype("float32"), rng.standard_normal((n, 2)).astype("float32")


CASES = {"weight_whole": (lambda K: _pos_model(K, 0, T=6), (6, 3)),
         "weight_window": (lambda K: _pos_model(K, 1), (4, 3)),
         "stack_axis0": (_stack_model, (5,))}


def _keras_side(build, shape):
    def compute():
        K = keras_ref.load()
        m = build(K)
        x, y = _data(shape)
        w0, pred = m.get_weights(), m.predict(x, verbose=0)
        m.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
        return {"w0": w0, "pred": pred, "w1": m.get_weights()}
    return keras_recorded.case(compute)


@pytest.mark.parametrize("case", sorted(CASES))
def test_ops_in_a_call_compute_and_train_as_keras(case):
    build, shape = CASES[case]
    k = _keras_side(build, shape)
    m = build(bf)
    m.set_weights(k["w0"])
    x, y = _data(shape)
    np.testing.assert_allclose(m.predict(x, verbose=0), k["pred"], rtol=1e-5, atol=1e-6)
    directional_check(m, x.astype(np.float64), y)
    m.set_weights(k["w0"])
    m.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    for wb, wk in zip(m.get_weights(), k["w1"], strict=True):
        np.testing.assert_allclose(wb, wk, rtol=1e-5, atol=1e-6)


def test_reshape_by_the_shape_of_a_variable_length_axis_runs_as_keras_on_each_length():
    def compute():
        K = keras_ref.load()
        m = _heads_model(K)
        return {"w0": m.get_weights(), "preds": [m.predict(_data((t, 4))[0], verbose=0) for t in (3, 7)]}
    k = keras_recorded.case(compute)
    m = _heads_model(bf)
    m.set_weights(k["w0"])
    for t, want in zip((3, 7), k["preds"]):
        np.testing.assert_allclose(m.predict(_data((t, 4))[0], verbose=0), want, rtol=1e-5, atol=1e-6)


def _call_refused(fn, shape=(5,)):
    class L(bf.layers.Layer):
        def call(self, x):
            return fn(x)
    L()(bf.Input(shape))


@pytest.mark.parametrize("fn, match", [
    (lambda x: bf.ops.softmax(bf.ops.stack([x, x]), axis=1), "softmax over axis 1 of a stack along the batch"),
    (lambda x: bf.ops.sum(bf.ops.stack([x, x]), axis=0, keepdims=True), "keepdims=True of a stack"),
    (lambda x: bf.ops.transpose(bf.ops.stack([x, x])), "an op of a stack along the batch axis"),
    (lambda x: bf.ops.stack([x, 2 * x[:, :2]]), "along the batch axis of tensors of different shapes"),
])
def test_a_stack_along_the_batch_axis_refuses_other_ops_by_name(fn, match):
    with pytest.raises(OpNotSupportedError, match=match):
        _call_refused(fn)


def test_a_weight_slice_that_does_not_fit_and_a_weight_outside_a_call_are_refused():
    class Bad(bf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(4, 5))

        def call(self, x):
            return x + bf.ops.slice(self.w, (2, 0), (3, 5))
    with pytest.raises(ValueError, match=r"start_indices \(2, 0\) and shape \(3, 5\) do not fit the weight 'w'"):
        Bad()(bf.Input((4, 5)))
    layer = Bad()
    layer.build((None, 4, 5))
    with pytest.raises(OpNotSupportedError, match="outside a traced call"):
        bf.ops.broadcast_to(layer.w, (None, 4, 5))


def test_a_reshape_with_two_axes_of_unknown_length_is_refused_by_name():
    with pytest.raises(OpNotSupportedError, match="2 axes of unknown length"):
        _call_refused(lambda x: bf.ops.reshape(x, bf.ops.shape(x)[:3] + (2, 2)), shape=(None, None, 4))
