"""keras.ops math on symbolic tensors (the engine's UNARY / BINARY / WEIGHT /
BMM kinds, csrc/core/layers/emath.c, bmm.c) and layers.Dot: the same weights
and batch give Keras 3's predictions and training, gradients agree with
finite differences, the plan is exact, and what stays unsupported raises
OpNotSupportedError naming the op."""

import json
import os
import zipfile

import numpy as np
import pytest

import boundfit as bf
from boundfit.ops import OpNotSupportedError
from conftest import directional_check

from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


rng = np.random.default_rng(0)
X = rng.standard_normal((12, 3, 4)).astype(np.float32)
Y = rng.standard_normal((12, 1)).astype(np.float32)


def unary_math(o):
    """sqrt, log, abs, exp, square, max / min with a scalar, c / x, a comparison inside where"""
    def f(t):
        p = o.sqrt(o.maximum(o.square(t), 0.05)) + o.log(o.abs(t) + 1.5)
        q = o.where(t > 0.1, o.exp(o.minimum(t, 1.0)), 2.0 / (o.abs(t) + 1.0))
        return p - q
    return f


def broadcast_math(o):
    """(T, D) with (T, 1), (1, D) and (D,); divide and maximum across ranks; min; x @ a 2-D array"""
    def f(t):
        row = o.sum(t, axis=-1, keepdims=True)          # (T, 1)
        u = t / (o.abs(row) + 1.0) - o.maximum(t, row)
        v = o.minimum(u, o.mean(t, axis=1, keepdims=True))  # (1, D)
        w = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4)
        return v * np.array([1.0, -2.0, 0.5, 3.0], np.float32) + o.min(t, axis=-1, keepdims=True) + o.matmul(t, w)
    return f


def batched_matmul(o):
    """per-sample (T, D) @ (D, T) and (T, T) @ (T, D)"""
    def f(t):
        s = o.matmul(t, o.transpose(t, (0, 2, 1)))
        return o.matmul(o.softmax(s), t)
    return f


def model(M, fn):
    inp = M.Input(shape=(3, 4))
    h = M.layers.Dense(4, name="d1")(inp)
    y = M.layers.Lambda(fn)(h)
    out = M.layers.Dense(1, name="d2")(M.layers.Flatten()(y))
    return M.Model(inp, out)


def dense_layers(m):
    return [l for l in m.layers if type(l).__name__ == "Dense"]


def dense_weights(m):
    return [w for l in dense_layers(m) for w in l.get_weights()]


def keras_trains(build, x, y=None, batch_size=None, path=None):
    """Keras's side, recorded: build(keras)'s Dense weights per layer (dense, and by name: named) and
    predictions of x (p); y given,
    its Dense weights after one unshuffled SGD epoch of MSE (dense1); path given, the model saved there first (a
    recorded Keras file)"""
    def run(p):
        keras = load()
        km = build(keras)
        out = dict(dense=[l.get_weights() for l in dense_layers(km)], p=km.predict(x, verbose=0),
                   named={l.name: l.get_weights() for l in dense_layers(km)})
        if p is not None:
            km.save(p)
        if y is not None:
            km.compile(keras.optimizers.SGD(0.05), "mse")
            km.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
            out["dense1"] = dense_weights(km)
        return out
    return keras_file(path, run) if path is not None else case(lambda: run(None))


def keras_predicts(path, x):
    """Keras's predictions of the model in a file (boundfit's), recorded by the file's contents"""
    return case(lambda: load().models.load_model(path).predict(x, verbose=0), label=os.path.basename(path),
                files=[path])


def copy_dense(k, bm):
    """Keras's Dense weights (k["dense"]) into boundfit's (constants and one_hot tables are weights of
    boundfit's graph pieces, not of Keras's model)"""
    bd = dense_layers(bm)
    assert len(k["dense"]) == len(bd) > 0
    for w, b in zip(k["dense"], bd):
        b.set_weights(w)


def sgd_epoch_alike(k, bm, x, y, batch_size):
    """one unshuffled SGD epoch of MSE as Keras's (k["dense1"]): the Dense weights stay equal"""
    bm.compile(bf.optimizers.SGD(0.05), "mse")
    bm.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(dense_weights(bm), k["dense1"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("which", [unary_math, broadcast_math, batched_matmul])
def test_ops_predict_and_train_as_keras(which):
    k, bm = keras_trains(lambda keras: model(keras, which(keras.ops)), X, Y, 6), model(bf, which(bf.ops))
    copy_dense(k, bm)
    np.testing.assert_allclose(bm.predict(X, verbose=0), k["p"], rtol=1e-4, atol=1e-5)
    sgd_epoch_alike(k, bm, X, Y, 6)


def smooth_unary(o):
    """the unary ops away from kinks (max / min / abs / where are checked against Keras's gradients above)"""
    def f(t):
        s = o.square(t) + 0.5
        return o.sqrt(s) + o.log(s) * o.exp(t * 0.3) - 2.0 / s
    return f


def smooth_broadcast(o):
    """(T, D) with (T, 1) and (1, D) in multiply, divide, subtract (an array operand is a Const, a weight of
    boundfit's model that the directions here would move: checked against Keras above)"""
    def f(t):
        row = o.square(o.sum(t, axis=-1, keepdims=True)) + 1.0        # (T, 1)
        col = o.mean(t, axis=1, keepdims=True)                         # (1, D)
        return t / row - col * t - col / row
    return f


@pytest.mark.parametrize("which", [smooth_unary, smooth_broadcast, batched_matmul])
def test_ops_gradients_match_finite_differences(which):
    m = model(bf, which(bf.ops))
    m.compile(optimizer="sgd", loss="mse")
    x, y = X[:6].astype(np.float64).astype(np.float32), Y[:6]
    directional_check(m, x, y, n_dirs=2, rtol=3e-2, seed=3)


def custom_weights(M):
    class Affine(M.layers.Layer):
        """x * w + b with its own weights (add_weight): (T, D) with (D,) and (T, D)"""
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="w")
            self.b = self.add_weight(shape=(input_shape[1], input_shape[-1]), initializer="random_normal",
                                     name="b")

        def call(self, x):
            return M.ops.maximum(x * self.w + self.b, 0.1 * x)

    inp = M.Input(shape=(3, 4))
    aff = Affine(name="affine")
    out = M.layers.Dense(1)(M.layers.Flatten()(aff(M.layers.Dense(4)(inp))))
    return M.Model(inp, out), aff


def test_custom_layer_weights_used_elementwise_train_as_keras(tmp_path):
    def compute():
        keras = load()
        km, ka = custom_weights(keras)
        w, p = km.get_weights(), km.predict(X, verbose=0)
        km.compile(keras.optimizers.Adam(0.02), "mse")
        km.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        return dict(w=w, p=p, a1=ka.get_weights(), w1=km.get_weights())
    k = case(compute)
    bm, ba = custom_weights(bf)
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(X, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    bm.compile(bf.optimizers.Adam(0.02), "mse")
    bm.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(ba.get_weights(), k["a1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(bm.get_weights(), k["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    path = str(tmp_path / "m.npz")
    bm.save(path)
    np.testing.assert_allclose(bf.load_model(path).predict(X, verbose=0), bm.predict(X, verbose=0), rtol=1e-6)


def dot_model(M, axes, normalize, shapes):
    a, b = M.Input(shape=shapes[0]), M.Input(shape=shapes[1])
    ha, hb = M.layers.Dense(shapes[0][-1])(a), M.layers.Dense(shapes[1][-1])(b)
    d = M.layers.Dot(axes=axes, normalize=normalize)([ha, hb])
    out = M.layers.Dense(1)(M.layers.Flatten()(d) if len(d.shape) > 2 else d)
    return M.Model([a, b], out)


@pytest.mark.parametrize("axes,normalize,shapes,train", [
    (1, False, [(4,), (4,)], False), (1, True, [(4,), (4,)], True), ((2, 2), False, [(3, 4), (5, 4)], False),
    ((2, 1), False, [(5, 3), (3, 3)], True), ((1, 1), True, [(3, 4), (3, 2)], True),
    (-1, False, [(4,), (3, 4)], False)])
def test_dot_layer_as_keras(axes, normalize, shapes, train):
    r = np.random.default_rng(5)
    xs = [r.standard_normal((8,) + s).astype(np.float32) for s in shapes]
    y = r.standard_normal((8, 1)).astype(np.float32)
    # (the products without transposes are trained by batched_matmul above)
    k = keras_trains(lambda keras: dot_model(keras, axes, normalize, shapes), xs, y if train else None, 4)
    bm = dot_model(bf, axes, normalize, shapes)
    copy_dense(k, bm)
    np.testing.assert_allclose(bm.predict(xs, verbose=0), k["p"], rtol=1e-4, atol=1e-5)
    if train:
        sgd_epoch_alike(k, bm, xs, y, 4)


def test_one_hot_and_take_as_keras():
    def build(M):
        ids = M.Input(shape=(5,), dtype="int32")
        x = M.Input(shape=(3, 4))
        oh = M.ops.one_hot(ids, 6)                                      # (5, 6)
        t1 = M.ops.take(x, np.array([3, 0, 0]), axis=2)                 # (3, 3)
        t2 = M.ops.take(x, np.array([2, 1]), axis=1)                    # (2, 4)
        z = M.layers.Concatenate()([M.layers.Flatten()(oh), M.layers.Flatten()(t1), M.layers.Flatten()(t2)])
        return M.Model([ids, x], M.layers.Dense(2)(z))
    ids = np.random.default_rng(2).integers(0, 6, (7, 5)).astype(np.float32)
    xs = [ids, X[:7]]
    k, bm = keras_trains(build, xs), build(bf)
    copy_dense(k, bm)
    np.testing.assert_allclose(bm.predict(xs, verbose=0), k["p"], rtol=1e-5, atol=1e-6)


def test_plan_is_exact_for_the_new_kinds():
    m = model(bf, broadcast_math(bf.ops))
    m.compile(optimizer="sgd", loss="mse")
    plan = m.estimate_memory(batch_size=6)
    m.fit(X, Y, batch_size=6, epochs=1, verbose=0)
    stats = m._last_run_stats
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(s["run_high_water"] for s in stats)
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas


def test_what_stays_unsupported_raises_naming_the_op():
    inp = bf.Input(shape=(4,))
    with pytest.raises(OpNotSupportedError, match="tensordot.*keeps both batch axes"):
        bf.layers.Lambda(lambda t: bf.ops.tensordot(t, t, 1), name="td")(inp)
    with pytest.raises(OpNotSupportedError, match="layer 'td2'"):
        bf.layers.Lambda(lambda t: bf.ops.tensordot(t, t, ([0], [0])), name="td2")(inp)
    with pytest.raises(OpNotSupportedError, match="do not broadcast"):
        bf.ops.maximum(inp, bf.Input(shape=(3,)))
    with pytest.raises(OpNotSupportedError, match="do not broadcast"):
        bf.ops.divide(bf.Input(shape=(2, 4)), bf.Input(shape=(3, 4)))
    with pytest.raises(OpNotSupportedError, match="where"):
        bf.ops.where(inp > 0.0)
    with pytest.raises(OpNotSupportedError, match="matmul"):
        bf.ops.matmul(inp, bf.Input(shape=(3, 2)))
    with pytest.raises(ValueError, match="axis sizes differ"):
        bf.layers.Dot(axes=1)([inp, bf.Input(shape=(3,))])


def test_a_constant_array_initializer_fills_the_weight_as_keras():
    """keras.io's PointNet T-net: Dense(9, kernel_initializer='zeros', bias_initializer=Constant(eye(3).flatten()))"""
    def build(M):
        inp = M.Input(shape=(4,))
        bias = M.initializers.Constant(np.eye(3).flatten())
        return M.Model(inp, M.layers.Dense(9, kernel_initializer="zeros", bias_initializer=bias)(inp))
    x = X[:3, 0]
    np.testing.assert_array_equal(build(bf).predict(x, verbose=0), case(lambda: build(load()).predict(x, verbose=0)))
    with pytest.raises(ValueError, match="Constant of 9 values for a weight of shape \\(4,\\)"):
        inp = bf.Input(shape=(4,))
        bf.Model(inp, bf.layers.Dense(4, bias_initializer=bf.initializers.Constant(np.eye(3).flatten()))(inp))


def test_rank_3_broadcasts_and_custom_weights_predict_and_train_as_keras():
    """per-sample (2, 3, 4) with weights (3, 1) and (4,), a (1, 1, 4) mean and a (1, 3, 1) array on the left"""
    def build(M):
        class Mix(M.layers.Layer):
            def build(self, input_shape):
                self.a = self.add_weight(shape=(3, 1), initializer="random_normal", name="a")
                self.c = self.add_weight(shape=(4,), initializer="random_normal", name="c")

            def call(self, x):
                m = M.ops.reshape(M.ops.mean(M.ops.reshape(x, (-1, 2 * 3, 4)), axis=1), (-1, 1, 1, 4))  # (1, 1, 4)
                k = np.array([1.0, -0.5, 2.0], np.float32).reshape(1, 3, 1)
                return (x * self.a + self.c) / (M.ops.square(m) + 1.0) - k * x

        inp, mix = M.Input(shape=(2, 3, 4)), Mix(name="mix")
        y = mix(M.layers.Reshape((2, 3, 4))(M.layers.Dense(24)(M.layers.Flatten()(inp))))
        return M.Model(inp, M.layers.Dense(1)(M.layers.Flatten()(y))), mix
    r = np.random.default_rng(8)
    x = r.standard_normal((6, 2, 3, 4)).astype(np.float32)
    y = r.standard_normal((6, 1)).astype(np.float32)

    def compute():
        keras = load()
        km, kmix = build(keras)
        out = dict(dense=[l.get_weights() for l in dense_layers(km)], mix=kmix.get_weights(),
                   p=km.predict(x, verbose=0))
        km.compile(keras.optimizers.SGD(0.05), "mse")
        km.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
        return dict(out, w1=kmix.get_weights() + dense_weights(km))
    k = case(compute)
    bm, bmix = build(bf)
    copy_dense(k, bm)
    bmix.set_weights(k["mix"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p"], rtol=1e-4, atol=1e-5)
    bm.compile(bf.optimizers.SGD(0.05), "mse")
    bm.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(bmix.get_weights() + dense_weights(bm), k["w1"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)


# ---- .keras files: the math as Keras's operation nodes, both ways ----

def math_graph(M):
    """keras.ops on the tensors of a functional graph (Keras writes them as operation nodes): unary ops, numbers,
    where / comparisons, broadcasting divide and comparison of (3, 4) with (3, 1), per-sample products"""
    o, L = M.ops, M.layers
    inp = M.Input(shape=(3, 4))
    h = L.Dense(4, name="d1")(inp)
    g = L.Dense(1, name="g")(inp)                                                       # (3, 1)
    p = o.sqrt(o.maximum(o.square(h), 0.05)) + o.log(o.abs(h) + 1.5)
    q = o.where(h > 0.1, o.exp(o.minimum(h, 1.0)), 2.0 / (o.abs(h) + 1.0))
    r = h / (o.abs(g) + 1.0) - o.cast(h > g, "float32")
    s = o.matmul(L.Activation("tanh")(o.matmul(h, o.transpose(h, (0, 2, 1)))), h)      # (3, 3) @ (3, 4)
    return M.Model(inp, L.Dense(1, name="d2")(L.Flatten()((p - q) + r * s)))


def _kinds(m):
    names = [type(n.layer).__name__ for n in m._nodes]
    return {k: names.count(k) for k in ("Unary", "Binary", "MatMul")}


def _same_dense(k, bm, names):
    for n in names:
        bm.get_layer(n).set_weights(k["named"][n])


def test_math_ops_keras_files_both_ways(tmp_path):
    k, bm = keras_trains(math_graph, X, path=tmp_path / "theirs.keras"), math_graph(bf)
    _same_dense(k, bm, ("d1", "g", "d2"))
    want = k["p"]
    np.testing.assert_allclose(bm.predict(X, verbose=0), want, rtol=1e-5, atol=1e-6)
    kinds = _kinds(bm)
    assert kinds == {"Unary": 13, "Binary": 2, "MatMul": 2}   # a number added to a tensor: a Unary too
    bm.save(tmp_path / "ours.keras")                      # Keras opens it without boundfit and predicts alike
    np.testing.assert_allclose(keras_predicts(tmp_path / "ours.keras", X), want, rtol=1e-5, atol=1e-6)
    for name in ("ours.keras", "theirs.keras"):           # boundfit reads both into its engine kinds
        m = bf.models.load_model(tmp_path / name)
        np.testing.assert_allclose(m.predict(X, verbose=0), want, rtol=1e-5, atol=1e-6)
        assert _kinds(m) == kinds, name
        for a, b in zip(dense_weights(m), dense_weights(bm)):
            np.testing.assert_array_equal(a, b)
    m = bf.models.load_model(tmp_path / "ours.keras")     # and trains on as the model it was saved from
    for x in (m, bm):
        x.compile(bf.optimizers.SGD(0.05), "mse")
        x.fit(X, Y, batch_size=6, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(dense_weights(m), dense_weights(bm)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_transposed_products_and_dot_layers_keras_files(tmp_path):
    """MatMul(transpose_a / transpose_b) as Transpose + Matmul; layers.Dot as Keras's Dot layer, both ways"""
    a = bf.Input(shape=(3, 4))
    h = bf.layers.Dense(4, name="d1")(a)
    y = bf.layers.MatMul(transpose_a=True)([h, bf.layers.MatMul(transpose_b=True)([h, h])])   # (4, 3)
    m = bf.Model(a, y)
    m.save(tmp_path / "mm.keras")
    np.testing.assert_allclose(keras_predicts(tmp_path / "mm.keras", X), m.predict(X, verbose=0), rtol=1e-5,
                               atol=1e-5)
    back = bf.models.load_model(tmp_path / "mm.keras")
    np.testing.assert_allclose(back.predict(X, verbose=0), m.predict(X, verbose=0), rtol=1e-6, atol=1e-6)

    shapes = [(3, 4), (3, 2)]
    r = np.random.default_rng(5)
    xs = [r.standard_normal((5,) + s).astype(np.float32) for s in shapes]
    k = keras_trains(lambda keras: dot_model(keras, (1, 1), True, shapes), xs, path=tmp_path / "kdot.keras")
    bm = dot_model(bf, (1, 1), True, shapes)
    copy_dense(k, bm)
    want = k["p"]
    bm.save(tmp_path / "dot.keras")
    np.testing.assert_allclose(keras_predicts(tmp_path / "dot.keras", xs), want, rtol=1e-5, atol=1e-6)
    for name in ("dot.keras", "kdot.keras"):
        back = bf.models.load_model(tmp_path / name)
        assert "Dot" in [type(l).__name__ for l in back.layers]
        np.testing.assert_allclose(back.predict(xs, verbose=0), want, rtol=1e-5, atol=1e-6)


def test_one_hot_and_take_keras_files_both_ways(tmp_path):
    def build(M):
        ids, x = M.Input(shape=(5,), dtype="int32"), M.Input(shape=(3, 4))
        t = M.ops.take(x, np.array([3, 0, 0]), axis=2)                                  # (3, 3)
        z = M.layers.Concatenate()([M.layers.Flatten()(M.ops.one_hot(ids, 6)), M.layers.Flatten()(t)])
        return M.Model([ids, x], M.layers.Dense(2)(z))
    xs = [np.random.default_rng(2).integers(0, 6, (7, 5)).astype(np.float32), X[:7]]
    k, bm = keras_trains(build, xs, path=tmp_path / "theirs.keras"), build(bf)
    copy_dense(k, bm)
    want = k["p"]
    bm.save(tmp_path / "ours.keras")
    np.testing.assert_allclose(keras_predicts(tmp_path / "ours.keras", xs), want, rtol=1e-5, atol=1e-6)
    for name in ("theirs.keras", "ours.keras"):
        np.testing.assert_allclose(bf.models.load_model(tmp_path / name).predict(xs, verbose=0), want,
                                   rtol=1e-5, atol=1e-6)
    bf.models.load_model(tmp_path / "theirs.keras").save(tmp_path / "again.keras")   # Keras's OneHot stays one
    cfg = json.loads(zipfile.ZipFile(tmp_path / "again.keras").read("config.json"))
    assert [e["class_name"] for e in cfg["config"]["layers"]].count("OneHot") == 1
    np.testing.assert_allclose(keras_predicts(tmp_path / "again.keras", xs), want, rtol=1e-5, atol=1e-6)


def test_custom_layer_weights_used_elementwise_keras_file_both_ways(tmp_path):
    """a custom layer's own weights used elementwise (Weight nodes) as Keras Embeddings of constant ids: Keras
    opens the file without the custom class, predicts and trains on alike; boundfit reads back the Weights"""
    bm, _ = custom_weights(bf)
    bm.set_weights(case(lambda: custom_weights(load())[0].get_weights()))
    bm.compile(bf.optimizers.Adam(0.02), "mse")
    bm.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    bm.save(tmp_path / "w.keras")

    def opened():   # Keras's side, recorded by the file's contents
        theirs = load().models.load_model(tmp_path / "w.keras")
        p = theirs.predict(X, verbose=0)
        hk = theirs.fit(X, Y, batch_size=12, epochs=1, shuffle=False, verbose=0).history   # from the Adam state here
        return dict(p=p, loss=hk["loss"], p1=theirs.predict(X, verbose=0))
    k = case(opened, files=[tmp_path / "w.keras"])
    np.testing.assert_allclose(k["p"], bm.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    ours = bf.models.load_model(tmp_path / "w.keras")
    assert [type(n.layer).__name__ for n in ours._nodes].count("Weight") == 2
    for a, b in zip(ours.get_weights(), bm.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ours.predict(X, verbose=0), bm.predict(X, verbose=0), rtol=1e-6, atol=1e-7)
    hb = bm.fit(X, Y, batch_size=12, epochs=1, shuffle=False, verbose=0).history
    np.testing.assert_allclose(k["loss"], hb["loss"], rtol=1e-5)
    np.testing.assert_allclose(k["p1"], bm.predict(X, verbose=0), rtol=1e-4, atol=1e-5)


def test_keras_file_operations_boundfit_does_not_read_are_named(tmp_path):
    def save(p):
        keras = load()
        inp = keras.Input((3, 4))
        keras.Model(inp, keras.ops.take(inp, np.array([0, 1]), axis=0)).save(p)
        return {}
    keras_file(tmp_path / "t2.keras", save)
    with pytest.raises(ValueError, match="Take.*batch axis"):   # along the batch axis: named, not guessed
        bf.models.load_model(tmp_path / "t2.keras")
    x = bf.Input((3, 4))
    bf.Model(x, bf.ops.sqrt(bf.layers.Dense(4)(x))).save(tmp_path / "sqrt.keras")
    with zipfile.ZipFile(tmp_path / "sqrt.keras") as z:
        parts = {n: z.read(n) for n in z.namelist()}
    cfg = json.loads(parts["config.json"])
    node = next(e for e in cfg["config"]["layers"] if e["class_name"] == "Sqrt")["inbound_nodes"][0]
    node["args"] = node["args"] * 2                        # sqrt(x, x): not a call boundfit reads
    parts["config.json"] = json.dumps(cfg)
    with zipfile.ZipFile(tmp_path / "sqrt2.keras", "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)
    with pytest.raises(ValueError, match="operation 'unary.*' \\(Sqrt\\): arguments"):
        bf.models.load_model(tmp_path / "sqrt2.keras")


def test_math_ops_are_written_as_keras_writes_them(tmp_path):
    """where boundfit's graph and Keras's coincide, the file has Keras's operation nodes in Keras's order with
    Keras's arguments (only the generated names differ)"""
    def build(M):
        o, L = M.ops, M.layers
        inp = M.Input(shape=(3, 4))
        h, g = L.Dense(4, name="d1")(inp), L.Dense(1, name="g")(inp)
        u = o.log(o.abs(o.minimum(o.sqrt(o.maximum(o.square(h), 0.05)), 3.0)))
        v = o.matmul(o.divide(u, g), L.Reshape((4, 3))(o.divide(2.0, o.abs(h))))          # (3, 4) @ (4, 3)
        w = o.cast(o.greater(h, g), "float32")                                          # (3, 4) > (3, 1)
        return M.Model(inp, L.Dense(1, name="d2")(L.Concatenate()([L.Flatten()(v), L.Flatten()(w)])))

    def nodes(path):
        cfg = json.loads(zipfile.ZipFile(path).read("config.json"))["config"]
        names = {e["name"]: i for i, e in enumerate(cfg["layers"])}

        def arg(a):
            if isinstance(a, dict) and a.get("class_name") == "__keras_tensor__":
                h = a["config"]["keras_history"]
                return ("tensor", names[h[0]], h[1], h[2], tuple(a["config"]["shape"]))
            return [arg(x) for x in a] if isinstance(a, list) else a
        return [(e["class_name"], e["module"], [arg(n["args"]) for n in e["inbound_nodes"]]) for e in cfg["layers"]]
    k, bm = keras_trains(build, X, path=tmp_path / "theirs.keras"), build(bf)
    _same_dense(k, bm, ("d1", "g", "d2"))
    bm.save(tmp_path / "ours.keras")
    assert nodes(tmp_path / "ours.keras") == nodes(tmp_path / "theirs.keras")
    np.testing.assert_allclose(keras_predicts(tmp_path / "ours.keras", X), k["p"], rtol=1e-5, atol=1e-6)
