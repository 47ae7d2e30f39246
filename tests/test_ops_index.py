"""keras.ops' indexing and scan functions (python/boundfit/ops_index.py) on
the engine's index primitives GATHER, SCAN and ARGSORT: on arrays and in a
graph against Keras 3 (JAX) on the same inputs, gradients against Keras's
and float64 central differences, the plan against the arenas, a .keras
round trip through boundfit and Keras, CUDA (the emulation) against the CPU,
and the forms that would mix the samples of a batch refused by name. One
model holds every op, so the cases share its compiles."""

import os

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.ops import OpNotSupportedError
from conftest import assert_plan_equals_arenas, directional_check
from helpers.keras_compare import against_keras
from keras_ref import load

T, D = 5, 4
IDS = np.array([4, 0, -1, 2, 2])   # a negative one counts from the end; 2 twice: the scatter-add adds


def _ops_model(K, Ls):
    """every index op on one tensor h (B, T, D): take / take_along_axis / a table at symbolic ids (Gather),
    cumsum / cumprod over each sample axis (Scan), sort / top_k values (ArgSort + Gather); argsort's positions
    (no gradient) multiply h so that they reach the loss"""
    x, ids_in = K.Input((T, D)), K.Input((3,))
    h, ids = Ls.Dense(D)(x), ids_in
    o = K.ops
    if K is not bf:   # JAX takes integer indices; boundfit's graphs hold ids as float32 (integers, which it truncates)
        ids = o.cast(ids, "int32")
    near = o.take_along_axis(h, o.expand_dims(ids, -1), axis=1)                           # (B, 3, D): per sample
    table = o.take(np.arange(12, dtype=np.float32).reshape(6, 2) / 6.0, ids, axis=0)     # (B, 3, 2)
    outs = [o.take(h, IDS, axis=1), o.take(h, np.array([[3, 1], [0, 0]]), axis=2), near, table,
            o.cumsum(h, axis=1), o.cumprod(h, axis=2), o.top_k(h, 3)[0],
            o.concatenate([o.sort(h, axis=1), h * o.argsort(h, axis=-1)], axis=-1)]
    return K.Model([x, ids_in], outs)


def _data(n=8, seed=0):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, T, D)).astype(np.float32)
    ids = r.integers(0, T, (n, 3)).astype(np.float32)
    ids[0] = [-1, 0, 4]
    return [x, ids]


def _targets(model, x, seed=1):
    r = np.random.default_rng(seed)
    return [r.standard_normal(o.shape).astype(np.float32) for o in model.predict(x, verbose=0)]


def _dense_weights(mb, weights=None):
    """the Dense layer's weights, Keras's only ones (boundfit's get_weights also holds the constant indices)"""
    dense = next(layer for layer in mb.layers if isinstance(layer, layers.Dense))
    if weights is not None:
        dense.set_weights(weights)
    return dense.get_weights()


@pytest.fixture(scope="module")
def trained():
    """the boundfit model checked against Keras (values, loss, gradients), reused by the other checks"""
    x = _data()
    m = against_keras(_ops_model, x, lambda mb: _targets(mb, x), rtol=2e-5, order=_dense_weights)
    return m, x


def test_index_ops_in_a_graph_match_keras_values_and_gradients(trained):
    m, x = trained
    assert [tuple(o.shape[1:]) for o in m.outputs] == [(5, D), (T, 2, 2), (3, D), (3, 2), (T, D), (T, D), (T, 3),
                                                       (T, 2 * D)]


def test_index_op_gradients_match_central_differences(trained):
    m, x = trained
    m.compile(optimizer="sgd", loss="mse")
    # the index arrays are constants, no weights of get_weights() (as Keras): only the Dense weights move
    assert all(w.shape in ((D, D), (D,)) for w in m.get_weights())
    directional_check(m, x, _targets(m, x, seed=2), rtol=2e-2)


def test_index_ops_plan_equals_the_arenas(trained):
    m, x = trained
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, x, _targets(m, x), batch_size=4)


@pytest.mark.parametrize("op,args", [
    ("take", lambda x: (x, np.array([[5, -6], [1, -1]]), 1)),           # out of range: NaN (mode "fill")
    ("take", lambda x: (x, np.array([7, 0, -3]), None)),                # flattened
    ("take_along_axis", lambda x: (x, np.array([[[0, 9, -2, 1]]]), 2)),  # broadcast over the batch and axis 1
    ("cumsum", lambda x: (x, 1)), ("cumsum", lambda x: (x, None)), ("cumprod", lambda x: (x, -1)),
    ("sort", lambda x: (x, 1)), ("argsort", lambda x: (x, -1)), ("argsort", lambda x: (x, 0)),
    ("top_k", lambda x: (x, 3)),
])
def test_index_ops_on_arrays_match_keras(op, args):
    """eager: NumPy with Keras's semantics on JAX (ties, zeros and a NaN in the data)"""
    keras = load()
    x = np.round(np.random.default_rng(3).standard_normal((2, 3, 4)), 1).astype(np.float32)
    x[0, 0, :2] = x[0, 0, 2]     # ties
    x[1, 1, 1] = 0.0
    x[1, 2, 3] = np.nan
    if op == "take" or op == "cumprod":
        x = np.nan_to_num(x)
    got, ref = getattr(bf.ops, op)(*args(x)), getattr(keras.ops, op)(*args(x))
    for g, r in zip(got if op == "top_k" else [got], ref if op == "top_k" else [ref]):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(r, np.float64), rtol=1e-6, equal_nan=True)


def test_cumprod_gradient_at_zeros_matches_jax():
    """no division in cumprod's gradient: exact where elements are 0 (two zeros in a row too)"""
    keras = load()
    import jax
    import jax.numpy as jnp
    v = np.array([[2.0, 0.0, 3.0, 0.0, 0.0, 5.0], [1.5, -2.0, 0.5, 4.0, 0.0, 1.0]], np.float32)
    x = bf.Input((6,))
    w = layers.Dense(6, use_bias=False)
    m = bf.Model(x, bf.ops.cumprod(w(x), axis=1))
    m.set_weights([np.eye(6, dtype=np.float32)])
    m.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss="mse")
    t = np.zeros_like(v)
    m.fit(v, t, batch_size=2, epochs=1, shuffle=False, verbose=0)
    ref = jax.grad(lambda W: jnp.mean(jnp.cumprod(jnp.asarray(v) @ W, axis=1) ** 2))(jnp.eye(6))
    np.testing.assert_allclose(np.eye(6) - m.get_weights()[0], np.asarray(ref), rtol=1e-5, atol=1e-6)
    assert keras.ops.cumprod is not None


def test_a_keras_file_with_index_ops_round_trips_through_boundfit_and_keras(trained, tmp_path):
    """the ops as Keras's nodes (Take, TakeAlongAxis, Cumsum, Cumprod, Sort, Argsort, TopK with both outputs):
    boundfit reads its file back to the same outputs; Keras reads it to the same values where its indices are
    constants (a Take of symbolic ids needs integer ids in Keras, which boundfit's float32 graphs do not hold)"""
    keras = load()
    m, x = trained
    path = os.path.join(tmp_path, "index_ops.keras")
    m.save(path)
    for a, b in zip(m.predict(x, verbose=0), bf.models.load_model(path).predict(x, verbose=0)):
        np.testing.assert_array_equal(a, b)
    inp = bf.Input((T, D))
    h = layers.Dense(D)(inp)
    values, positions = bf.ops.top_k(h, 2)
    c = bf.Model(inp, [bf.ops.take(h, IDS, axis=1), bf.ops.take_along_axis(h, np.array([[[2], [0]]]), axis=1),
                       bf.ops.cumsum(h, axis=2), bf.ops.cumprod(h, axis=1), bf.ops.sort(h, axis=-1),
                       bf.ops.argsort(h, axis=1), values, positions])
    path = os.path.join(tmp_path, "index_ops_const.keras")
    c.save(path)
    want = c.predict(x[0], verbose=0)
    for a, b, k in zip(want, bf.models.load_model(path).predict(x[0], verbose=0),
                       keras.models.load_model(path).predict(x[0], verbose=0)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, np.asarray(k, np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op,call", [
    ("take", lambda o, x, ids: o.take(x, np.array([0, 1]))),                 # axis=None flattens the batch too
    ("take", lambda o, x, ids: o.take(x, np.array([0, 1]), axis=0)),
    ("take", lambda o, x, ids: o.take(x, ids, axis=1)),                       # two batch axes
    ("take_along_axis", lambda o, x, ids: o.take_along_axis(x, np.zeros((2, 1, 1), int), axis=1)),
    ("cumsum", lambda o, x, ids: o.cumsum(x)),
    ("cumprod", lambda o, x, ids: o.cumprod(x, axis=0)),
    ("sort", lambda o, x, ids: o.sort(x, axis=0)),
    ("argsort", lambda o, x, ids: o.argsort(x, axis=None)),
])
def test_index_ops_that_mix_the_samples_are_refused_by_name(op, call):
    x, ids = bf.Input((T, D)), bf.Input((3,))
    with pytest.raises(OpNotSupportedError, match=rf"keras\.ops\.{op} "):
        call(bf.ops, x, ids)


def test_index_ops_train_to_the_cpu_weights_on_cuda():
    """gather.cu (the scatter-add without atomics), scan.cu, argsort.cu against the CPU: same weights"""
    from test_cuda_backend import _REASON, _assert_weights_close, _train_both
    if _REASON is not None:
        pytest.skip(_REASON)
    x = _data(16, seed=4)

    def build():
        return _ops_model(bf, layers)
    y = _targets(build(), x)
    cpu, gpu, hc, hg = _train_both(build, lambda: dict(optimizer=bf.optimizers.SGD(learning_rate=0.05), loss="mse"),
                                   x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "index ops")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
