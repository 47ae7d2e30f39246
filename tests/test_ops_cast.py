"""keras.ops.cast on symbolic tensors (python/boundfit/ops_cast.py): float ->
int truncates toward zero and saturates, int -> a narrower int wraps, -> bool
is x != 0, the results report Keras's dtypes and later ops promote them as
Keras does; no gradient through an integer cast. Against Keras 3 (JAX,
recorded) on a model and on a custom loss, gradients by central differences."""

import numpy as np

import boundfit as bf
import keras_ref
from conftest import directional_check
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case

X = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
X[0, :3] = [np.nan, np.inf, -np.inf]
TARGETS = ["int32", "int8", "uint8", "int16", "bool", "uint32"]


def casts(M):
    """per target dtype the cast of 300 * x, then casts between integer types and to float, and ops on them"""
    o, x = M.ops, M.Input((5,))
    h = x * 300.0
    outs = {d: o.cast(h, d) for d in TARGETS}
    c = outs["int32"]
    small = o.cast(o.clip(h, -1e6, 1e6), "int32")   # (an int32 beyond 2**24 is float32's nearest in the engine)
    outs.update(wrap8=o.cast(small, "int8"), wrapu8=o.cast(small, "uint8"), bool_int=o.cast(outs["bool"], "int32"),
                argmax=o.cast(o.argmax(x, axis=-1, keepdims=True), "float32"), positive=o.cast(x > 0, "float32"),
                one_hot=o.one_hot(o.cast(o.clip(o.abs(x), 0.0, 3.5), "int32"), 4))
    dtypes = [t.dtype for t in [c + 1, c * 0.5, c / c, c + x, o.argmax(x, -1), o.sum(c, -1), o.mean(c, -1),
                                o.abs(c), o.where(outs["bool"], c, 0), outs["int8"] + c, outs["bool"] * x,
                                o.one_hot(c, 3), o.cast(x, "int64")]]
    flat = [o.cast(o.reshape(t, (-1, 20)) if name == "one_hot" else t, "float32") for name, t in outs.items()]
    return M.Model(x, o.concatenate(flat, axis=-1)), dtypes + [outs[d].dtype for d in TARGETS]


def test_casts_match_keras_values_and_dtypes():
    def keras_side():
        km, dtypes = casts(keras_ref.load())
        return {"out": km.predict(X, verbose=0), "dtypes": dtypes}
    k = case(keras_side)
    bm, dtypes = casts(bf)
    assert dtypes == k["dtypes"]
    np.testing.assert_array_equal(bm.predict(X, verbose=0), k["out"])


def result_dtypes(M):
    """the dtypes of ops on bool and integer tensors of several widths"""
    o, x = M.ops, M.Input((3,))
    fns = (lambda c: o.sum(c, -1), lambda c: o.prod(c, -1), lambda c: o.cumsum(c, -1), lambda c: o.max(c, -1),
           o.abs, o.square, o.negative, o.sign, lambda c: o.clip(c, 0, 1), lambda c: c + 1, lambda c: c * 2,
           lambda c: c * 2.0, lambda c: o.mod(c, 2), lambda c: c // 2, lambda c: o.power(c, 2),
           lambda c: o.maximum(c, 0), lambda c: o.reshape(c, (-1, 3)), lambda c: o.concatenate([c, c], -1))
    return [[f(o.cast(x, d)).dtype for f in fns] for d in ("bool", "int8", "uint8", "int16", "int32")]


def test_ops_on_integer_and_bool_tensors_report_keras_dtypes():
    assert result_dtypes(bf) == case(lambda: result_dtypes(keras_ref.load()))


def gated(M):
    """a model whose forward pass goes through integer and bool casts (no gradient there, as Keras's)"""
    o, x = M.ops, M.Input((5,))
    d = M.layers.Dense(4, name="d")(x)
    q = o.cast(o.cast(d * 3.0, "int32"), "float32")             # integral, no gradient
    g = d * o.cast(d > 0, "float32") + q * 0.1 + o.cast(d, "float32")
    return M.Model(x, M.layers.Dense(3, name="out")(g))


def one_hot_loss(M):
    def loss(y_true, y_pred):   # class ids as floats, one-hot after a cast to int
        return M.ops.mean(M.ops.square(M.ops.softmax(y_pred) - M.ops.one_hot(M.ops.cast(y_true, "int32"), 3)),
                          axis=-1)
    return loss


def test_a_model_and_a_custom_loss_with_casts_train_as_keras():
    y = np.random.default_rng(1).integers(0, 3, (6,)).astype(np.float32)
    x = np.nan_to_num(X, posinf=1.0, neginf=-1.0)

    def keras_side():
        keras = keras_ref.load()
        km = gated(keras)
        w0 = km.get_weights()
        km.compile(keras.optimizers.Adam(0.05), loss=one_hot_loss(keras))
        h = km.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
        return {"w0": w0, "loss": h.history["loss"], "w": km.get_weights()}
    k = case(keras_side)
    bm = gated(bf)
    bm.set_weights(k["w0"])
    bm.compile(bf.optimizers.Adam(0.05), loss=one_hot_loss(bf))
    h = bm.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], k["loss"], rtol=1e-5)
    for a, b in zip(bm.get_weights(), k["w"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_gradients_through_float_casts_match_central_differences():
    o, x = bf.ops, bf.Input((5,))
    d = bf.layers.Dense(4)(x)
    keep = o.cast(o.cast(o.exp(d), "bool"), "float32")          # 1 everywhere: no gradient, no kink
    m = bf.Model(x, bf.layers.Dense(2)(o.cast(d, "float32") * keep + o.cast(o.cast(d, "float16"), "float32")))
    m.compile(optimizer="sgd", loss="mse")
    directional_check(m, np.nan_to_num(X, posinf=1.0, neginf=-1.0), np.ones((6, 2), np.float32))


def test_float_casts_keep_the_tensor_in_float32():
    x = bf.Input((3,))
    assert bf.ops.cast(x, "float16") is x and bf.ops.cast(x, "bfloat16").dtype == "float32"


def test_a_keras_file_of_casts_round_trips_through_boundfit_and_keras(tmp_path):
    """each cast written as Keras's Cast(dtype) node: boundfit and Keras 3 read it back to the same values"""
    bm, _ = casts(bf)
    path = str(tmp_path / "casts.keras")
    bm.save(path)
    got = bm.predict(X, verbose=0)
    np.testing.assert_array_equal(bf.models.load_model(path).predict(X, verbose=0), got)
    ref = case(lambda: np.asarray(keras_ref.load().models.load_model(path).predict(X, verbose=0)), files=[path])
    np.testing.assert_array_equal(ref, got)
