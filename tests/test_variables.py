"""Keras 3's variable API on layers and models (layers/variable.py): weights / variables as Variables with
Keras's names, paths, shapes, order and trainable flags; get_weights / set_weights in that order (a custom
layer calling its sublayers in another order than it made them too); layer.kernel / bn.moving_mean /
emb.embeddings / lstm.cell.kernel / mha.query_dense.kernel / bidi.backward_layer.cell.bias as live views:
assign then predict gives Keras's numbers; keras.Variable standalone and as a custom layer's attribute."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import ops

from fresh_names import fresh_layer_names  # noqa: F401 - autouse: names from the start
from helpers.keras_recorded import case
from keras_ref import load

X = np.random.default_rng(0).integers(0, 10, (8, 6)).astype(np.float32)


def pair_layer(M):
    """a custom layer: two sublayers made a then b, called b first; own weights, one of them non-trainable"""
    L = M.layers

    class Pair(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.a = L.Dense(4, name="a")
            self.b = L.Dense(3, name="b")
            self.offset = M.Variable(np.array([0.5, -0.5, 0.25, 0.0], np.float32), name="offset")

        def build(self, input_shape):
            self.scale = self.add_weight(shape=(4,), initializer="ones", name="scale")
            self.shift = self.add_weight(shape=(4,), initializer="zeros", name="shift", trainable=False)

        def call(self, x):
            return self.a(self.b(x)) * self.scale + self.shift + self.offset
    return Pair


def mixed(M):
    """Embedding, MultiHeadAttention, LSTM, Bidirectional GRU, BatchNormalization, the custom layer, Dense"""
    L = M.layers
    inp = M.Input((6,), name="tokens")
    e = L.Embedding(10, 4, name="emb")(inp)
    q = L.MultiHeadAttention(2, 3, name="mha")(e, e)
    r = L.LSTM(5, return_sequences=True, name="lstm")(q)
    g = L.Bidirectional(L.GRU(2, name="gru"), name="bidi")(r)
    n = L.BatchNormalization(name="bn")(g)
    out = L.Dense(2, name="head")(pair_layer(M)(name="pair")(n))
    return M.Model(inp, out, name="mixed")


def seq(M):
    L = M.layers
    return M.Sequential([M.Input((6,)), L.Dense(3, name="d"), L.BatchNormalization(name="bn2")], name="seq")


ATTRS = {"dense": ["kernel", "bias"], "einsum": ["kernel", "bias"], "conv": ["kernel", "bias"],
         "deconv": ["kernel", "bias"], "depthwise": ["kernel", "bias"],
         "separable": ["depthwise_kernel", "pointwise_kernel", "bias"], "ln": ["gamma", "beta"],
         "gn": ["gamma", "beta"], "prelu": ["alpha"], "bn3": ["gamma", "beta", "moving_mean", "moving_variance"]}


def attributed(M):
    """the built-in layers whose variables Keras gives attributes, called on symbolic tensors"""
    L = M.layers
    img = M.Input((5, 5, 2))
    y = L.SeparableConv2D(2, 3, name="separable")(L.DepthwiseConv2D(3, padding="same", name="depthwise")(
        L.Conv2DTranspose(2, 3, padding="same", name="deconv")(L.Conv2D(2, 3, padding="same", name="conv")(img))))
    v = L.BatchNormalization(name="bn3")(L.PReLU(name="prelu")(L.GroupNormalization(2, name="gn")(
        L.LayerNormalization(name="ln")(L.EinsumDense("ab,bc->ac", 4, bias_axes="c", name="einsum")(
            L.Dense(4, name="dense")(L.Flatten()(y)))))))
    return M.Model(img, v)


def attribute_paths(m):
    return {n: [[a, getattr(m.get_layer(n), a).path, list(getattr(m.get_layer(n), a).shape)] for a in attrs]
            for n, attrs in ATTRS.items()}


def assign_all(m):
    """the same writes through Keras's attributes, on Keras's model or boundfit's"""
    g = m.get_layer
    r = np.random.default_rng(5)
    g("head").kernel.assign(np.full((4, 2), 0.1, np.float32))
    g("bn").moving_mean.assign_add(np.full((4,), 0.5, np.float32))
    g("emb").embeddings.assign_sub(0.01 * np.arange(40, dtype=np.float32).reshape(10, 4))
    g("lstm").cell.kernel.assign((r.standard_normal((4, 20)) * 0.3).astype(np.float32))
    g("mha").query_dense.kernel.assign((r.standard_normal((4, 2, 3)) * 0.3).astype(np.float32))
    g("bidi").backward_layer.cell.bias.assign((r.standard_normal((2, 6)) * 0.3).astype(np.float32))
    g("pair").scale.assign(np.full((4,), 2.0, np.float32))


def describe(m):
    return dict(weights=[[v.name, v.path, list(v.shape), bool(v.trainable)] for v in m.weights],
                trainable=[v.path for v in m.trainable_weights], frozen=[v.path for v in m.non_trainable_weights],
                variables=[v.path for v in m.variables if "seed_generator" not in v.path])


@pytest.fixture(scope="module")
def ref():
    def compute():
        keras = load()
        km, ks = mixed(keras), seq(keras)
        out = dict(mixed=describe(km), seq=describe(ks), w=km.get_weights(), p=km.predict(X, verbose=0),
                   attrs=attribute_paths(attributed(keras)))
        assign_all(km)
        out.update(after=km.predict(X, verbose=0), w_after=km.get_weights())
        v = keras.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        added = v.assign_add(np.ones((2, 3), np.float32))
        out["standalone"] = dict(path=v.path, added=np.asarray(added), plus=np.asarray(v + 1),
                                 neg=np.asarray(-v), mm=np.asarray(v @ np.ones((3, 1), np.float32)),
                                 row=np.asarray(v[1]), sub=np.asarray(v.assign_sub(np.full((2, 3), 2.0, np.float32))),
                                 scalar=float(keras.Variable(3.0)), zeros=np.asarray(keras.Variable("zeros", (2,))))
        return out
    return case(compute)


@pytest.fixture(scope="module")
def model(ref):
    from boundfit.layers import layer
    layer._counters.clear()
    return mixed(bf)


def test_weights_are_variables_with_keras_names_paths_shapes_order_and_flags(ref, model):
    got = describe(model)
    assert got["weights"] == [list(w) for w in ref["mixed"]["weights"]]
    assert got["trainable"] == list(ref["mixed"]["trainable"]) and got["frozen"] == list(ref["mixed"]["frozen"])
    assert got["variables"] == list(ref["mixed"]["variables"])   # (Keras's also hold its seed generators' states)
    assert describe(seq(bf)) == {k: [list(x) if isinstance(x, (list, tuple)) else x for x in v]
                                 for k, v in ref["seq"].items()}
    assert [w.shape for w in model.get_weights()] == [tuple(w.shape) for w in ref["w"]]


def test_built_in_layers_have_keras_variable_attributes(ref):
    got = attribute_paths(attributed(bf))
    assert got == {n: [list(x) for x in v] for n, v in ref["attrs"].items()}


def test_set_weights_takes_keras_get_weights_and_predicts_as_keras(ref, model):
    model.set_weights(ref["w"])   # the custom layer's a before b, though its call() runs b first
    np.testing.assert_allclose(model.predict(X, verbose=0), ref["p"], rtol=1e-5, atol=1e-5)
    for got, want in zip(model.get_weights(), ref["w"]):
        np.testing.assert_array_equal(got, want)


def test_assign_through_keras_attributes_then_predict_is_keras(ref, model):
    model.set_weights(ref["w"])
    assign_all(model)
    np.testing.assert_allclose(model.predict(X, verbose=0), ref["after"], rtol=1e-5, atol=1e-5)
    for got, want in zip(model.get_weights(), ref["w_after"]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_variables_read_the_trained_values(model):
    model.compile("sgd", "mse")
    model.fit(X, np.ones((8, 2), np.float32), batch_size=4, epochs=1, verbose=0)
    ws = model.get_weights()
    for v, w in zip(model.weights, ws):
        for got in (v.numpy(), v.value, np.asarray(v), np.array(v), ops.convert_to_numpy(v)):
            np.testing.assert_array_equal(got, w)
    bn = model.get_layer("bn")
    np.testing.assert_array_equal(bn.moving_mean.numpy(), bn.get_weights()[2])
    assert bn.moving_mean.trainable is False and len(model.trainable_weights) == len(ws) - 3   # + the shift
    np.testing.assert_array_equal(model.get_layer("lstm").cell.recurrent_kernel + 1.0,
                                  model.get_layer("lstm").get_weights()[1] + 1.0)


def test_assign_of_another_shape_raises_naming_the_variable(model):
    with pytest.raises(ValueError, match=r"variable 'head/kernel': assign needs a value of shape \(4, 2\)"):
        model.get_layer("head").kernel.assign(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="set the layer's trainable instead"):
        model.get_layer("head").kernel.trainable = False


def test_a_layer_called_on_symbolic_inputs_has_its_variables_before_a_model():
    inp = bf.Input((5,))
    d = bf.layers.Dense(3, name="early")
    out = d(inp)
    k = d.kernel.numpy()
    assert d.kernel.path == "early/kernel" and d.bias.shape == (3,)
    d.bias.assign(np.full((3,), 0.5, np.float32))
    m = bf.Model(inp, out)   # takes the weights over
    np.testing.assert_array_equal(m.get_weights()[0], k)
    np.testing.assert_allclose(m.predict(np.zeros((2, 5), np.float32), verbose=0), 0.5)
    assert bf.layers.Dense(2).weights == [] and not hasattr(bf.layers.Dense(2), "kernel")


def test_keras_variable_standalone_holds_its_value_as_keras(ref):
    want = ref["standalone"]
    v = bf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
    np.testing.assert_array_equal(v.assign_add(np.ones((2, 3), np.float32)), want["added"])
    assert v.path == want["path"] and v.trainable and v.dtype == "float32" and "path=v" in repr(v)
    np.testing.assert_array_equal(v + 1, want["plus"])
    np.testing.assert_array_equal(-v, want["neg"])
    np.testing.assert_array_equal(v @ np.ones((3, 1), np.float32), want["mm"])
    np.testing.assert_array_equal(v[1], want["row"])
    np.testing.assert_array_equal(v.assign_sub(np.full((2, 3), 2.0, np.float32)), want["sub"])
    assert float(bf.Variable(3.0)) == want["scalar"]
    np.testing.assert_array_equal(bf.Variable("zeros", (2,)), want["zeros"])
    with pytest.raises(ValueError, match="has no value yet"):
        bf.Variable("glorot_uniform", shape=(2, 2), name="drawn").numpy()
    with pytest.raises(ValueError, match="dtype 'int32' is not supported"):
        bf.Variable(np.zeros(2), dtype="int32")


def test_a_built_in_layers_variable_in_a_traced_call_is_refused_by_name():
    d = bf.layers.Dense(3, name="outside")
    d.build((None, 3))

    class UsesOther(bf.layers.Layer):
        def call(self, x):
            return x + d.bias
    inp = bf.Input((3,))
    with pytest.raises(ValueError, match="variable 'outside/bias' belongs to the built-in layer 'outside'"):
        UsesOther()(inp)
