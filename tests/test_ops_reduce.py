"""keras.ops' reductions on symbolic tensors through the engine's one REDUCE
kind (csrc/core/layers/reduce.c; BATCH_REDUCE with the batch axis; the
reduce_forward / reduce_backward ops of csrc/cpu/reduce_axes.c and
csrc/cuda/reduce_axes.cu, the latter against the CPU in
tests/c_cuda/test_cuda_ops.c on the emulation) and what keras.ops composes
of them (var, std, count_nonzero, linalg.norm, nn.moments, nn.log_softmax,
softmax over any axis, nn.normalize).

Each op is one model over rank-3 samples (3, 4, 5) whose output concatenates
the op over every axis set (None, 0, -1, (1, 2), (1, 3), ... with and
without keepdims; the batch axis with keepdims, whose result is the same in
every sample), after a trainable shift x + b: its values and b's gradient
(the sum over the batch of the input's) against Keras 3 on JAX on the same
inputs, the gradient against float64 central differences, the plan against
the arenas and the emu device against the CPU. max / min / argmax / argmin
run on integer data full of ties (the gradient is split equally among the
maximal elements, as JAX's; argmax takes the first); prod on data with
zeros (the product of the others). The compositions' model is also written
to a .keras file, opened in Keras and read back."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from conftest import assert_plan_equals_arenas, directional_check, engine_gradient
from helpers.keras_compare import close
from helpers.keras_recorded import recorded

SHAPE = (3, 4, 5)
B = 3
AXES = [(None, True), (0, False), (-1, False), ((1, 2), True), ((1, 3), False), ((1, 2, 3), False), ((2, 0), True)]
ARG_AXES = [(None, True), (0, False), (-1, True), (1, False)]
OPS = ["sum", "mean", "max", "min", "amax", "prod", "argmax", "argmin", "any", "all", "logsumexp"]
TIES = ("max", "min", "amax", "argmax", "argmin")   # integer data: ties everywhere, no central differences
NO_GRAD = ("argmax", "argmin", "any", "all")


def shifted(K):
    """x + b, b a trainable weight of a sample's shape (zeros): b's gradient is the batch's sum of x's"""
    class Shift(K.layers.Layer):
        def build(self, shape):
            self.b = self.add_weight(shape=tuple(shape[1:]), initializer="zeros", name="b")

        def call(self, x):
            return x + self.b
    return Shift


def flat(K, parts):
    """each part (B, ...) as float32 (B, n), concatenated"""
    o = K.ops
    return o.concatenate([o.reshape(o.cast(p, "float32"), (-1, int(np.prod(p.shape[1:])))) for p in parts],
                         axis=-1)


def op_model(K, op):
    x = K.Input(SHAPE)
    h = shifted(K)()(x)
    fn = getattr(K.ops, op)
    cases = ARG_AXES if op.startswith("arg") else AXES
    parts = []
    for axis, keep in cases:
        y = fn(h, axis=axis, keepdims=keep)
        if axis is None or 0 in [a % 4 for a in np.atleast_1d(axis)]:   # over the batch: onto every sample
            y = h[:, :1, :1, :1] * 0.0 + y
        parts.append(y)
    return K.Model(x, flat(K, parts))


def data(op, n=B, seed=0):
    r = np.random.default_rng(seed)
    if op in TIES:
        return r.integers(-2, 3, (n,) + SHAPE).astype(np.float32)
    x = r.standard_normal((n,) + SHAPE).astype(np.float32)
    if op in ("any", "all", "prod"):
        x.reshape(-1)[::9] = 0.0
    if op == "all":
        x[0, 0] = 1.0      # a set with no zero
    if op == "any":
        x[1, :, 0] = 0.0   # sets of zeros only
    return x


def keras_values_and_grads(cases):
    """{key: (Keras's output, [b's gradient])} of {key: (keras model, x, y)} with loss mean((out - y) ** 2), in one
    JAX call (eager: Keras's Norm(axis=int) fails under jit, its axis made a list)"""
    import jax
    import jax.numpy as jnp

    keys = list(cases)

    def losses(tvs):
        outs = []
        for k, tv in zip(keys, tvs):
            mk, x, y = cases[k]
            outs.append(mk.stateless_call(tv, [], jnp.asarray(x))[0])
        return sum(jnp.mean((o - cases[k][2]) ** 2) for k, o in zip(keys, outs)), outs

    tvs = [[v.value for v in cases[k][0].trainable_variables] for k in keys]
    (_, outs), grads = jax.value_and_grad(losses, has_aux=True)(tvs)
    return {k: (np.asarray(o), [np.asarray(a) for a in g]) for k, o, g in zip(keys, outs, grads)}


def target(n, seed=5):
    return np.random.default_rng(seed).standard_normal((B, n)).astype(np.float32)


def batch_model(K):
    x = K.Input(SHAPE)
    h = shifted(K)()(x)
    return K.Model(x, K.ops.reshape(h - K.ops.max(h, axis=0) * K.ops.mean(h, axis=(0, 1)), (-1, 60)))


def composition_data():
    r = np.random.default_rng(3)
    x = r.standard_normal((B,) + SHAPE).astype(np.float32)
    return x, r


def batch_data():
    return np.random.default_rng(4).standard_normal((4,) + SHAPE).astype(np.float32), np.zeros((4, 60), np.float32)


@pytest.fixture(scope="module")
def keras_refs():
    """Keras's outputs and gradients of every model here, recorded (helpers/keras_recorded.py: ~35 s of eager JAX
    to compute): {key: (output, [gradient])}, keys the ops, compositions and batch"""
    def compute():
        keras = keras_ref.load()
        cases = {}
        for op in OPS:
            mk = op_model(keras, op)
            cases[op] = (mk, data(op), target(mk.output_shape[-1]))
        mk = compositions(keras)
        x, r = composition_data()
        cases["compositions"] = (mk, x, r.standard_normal((B,) + mk.output_shape[1:]).astype(np.float32))
        cases["batch"] = (batch_model(keras),) + batch_data()
        return {f"{k}/{part}": a for k, (out, (g,)) in keras_values_and_grads(cases).items()
                for part, a in (("out", out), ("grad", g))}
    refs = recorded("ops_reduce", __file__, compute)
    return {k.split("/")[0]: (refs[k], [refs[k.replace("/out", "/grad")]]) for k in refs if k.endswith("/out")}


@pytest.mark.parametrize("op", OPS)
def test_reduction_over_any_axes_matches_keras_values_gradients_and_plan(op, keras_refs):
    x, mb = data(op), op_model(bf, op)
    y = target(mb.output_shape[-1])
    want, (gk,) = keras_refs[op]
    got = mb.predict(x, batch_size=B, verbose=0)
    close(want, got, rtol=1e-5)
    mb.compile(optimizer="sgd", loss="mse")
    (gb,) = engine_gradient(mb, x, y)
    if op in NO_GRAD:
        assert not gk.any() and not gb.any()
    else:
        assert np.abs(gk).max() > 0
        close(gk, gb, rtol=2e-5)
    if op not in TIES and op not in NO_GRAD:
        directional_check(mb, x.astype(np.float32), y, eps=1e-2)
    np.testing.assert_array_equal(mb.predict(x, batch_size=B, verbose=0, device="emu"), got)
    assert_plan_equals_arenas(mb, x, y, batch_size=B)


def compositions(K, norms=True, counts=True):
    o = K.ops
    x = K.Input(SHAPE)
    h = shifted(K)()(x)
    m, v = o.nn.moments(h, axes=(1, 2))
    parts = [o.var(h, axis=-1), o.std(h, axis=(1, 3), keepdims=True), m, v,
             o.nn.log_softmax(h, axis=1), o.softmax(h, axis=2), o.nn.normalize(h, axis=-1),
             o.nn.normalize(h, axis=1, order=1), o.prod(h, axis=1)]
    if counts:   # a step function: not for central differences
        parts.append(o.count_nonzero(o.relu(h), axis=2))
    if norms:   # axes as tuples: Keras 3.15's Norm(axis=int) makes it a list, which jnp.linalg.norm refuses
        parts += [o.linalg.norm(h, axis=(-1,)), o.linalg.norm(h, ord=1, axis=(1,)),
                  o.linalg.norm(h, ord=3, axis=(-1,), keepdims=True), o.linalg.norm(h, axis=(1, 2))]
    return K.Model(x, flat(K, parts))


def test_compositions_match_keras_and_round_trip_keras_files(tmp_path, keras_refs):
    x, r = composition_data()
    mb = compositions(bf)
    y = r.standard_normal((B,) + mb.output_shape[1:]).astype(np.float32)
    want, (gk,) = keras_refs["compositions"]
    got = mb.predict(x, batch_size=B, verbose=0)
    close(want, got, rtol=2e-5)
    mb.compile(optimizer="sgd", loss="mse")
    (gb,) = engine_gradient(mb, x, y)
    close(gk, gb, rtol=5e-5)
    smooth = compositions(bf, counts=False)
    smooth.compile(optimizer="sgd", loss="mse")
    directional_check(smooth, x, y[:, :smooth.output_shape[-1]], eps=1e-2)
    for norms in (True, False):   # Keras reads no Norm node back (its axis a list: above)
        path = str(tmp_path / f"reduce{norms}.keras")
        mb = compositions(bf, norms)
        mb.set_weights([r.standard_normal(SHAPE).astype(np.float32) * 0.1])
        got = mb.predict(x, batch_size=B, verbose=0)
        mb.save(path)
        back = bf.models.load_model(path)
        np.testing.assert_allclose(back.predict(x, batch_size=B, verbose=0), got, rtol=1e-6, atol=1e-6)
    keras = keras_ref.load()
    close(np.asarray(keras.models.load_model(path).predict(x, verbose=0)), got, rtol=2e-5)


def test_reduction_over_the_batch_axis_broadcasts_back_like_keras(keras_refs):
    """x - mean(x, axis=0) (a batch normalization's centring): the mean has no batch axis and is the same for
    every sample; its gradient sums over the batch"""
    x, y = batch_data()
    mb = batch_model(bf)
    want, (gk,) = keras_refs["batch"]
    close(want, mb.predict(x, batch_size=4, verbose=0))
    mb.compile(optimizer="sgd", loss="mse")
    close(gk, engine_gradient(mb, x, y)[0], rtol=2e-5)
    with pytest.raises(ValueError, match="mixes the samples of a batch"):
        mb.fit(x, y, batch_size=4, micro_batch=2, verbose=0)


def test_reductions_refuse_what_they_cannot_do_by_name():
    x = bf.Input(SHAPE)
    for call, what in ((lambda: bf.ops.linalg.norm(x, ord="nuc", axis=(1, 2)), "linalg.norm"),
                       (lambda: bf.ops.max(x, axis=1, initial=0.0), "max"),
                       (lambda: bf.ops.nn.moments(x, axes=(1,), synchronized=True), "nn.moments"),
                       (lambda: bf.ops.linalg.norm(x, ord=1), "linalg.norm")):
        with pytest.raises(bf.ops.OpNotSupportedError, match=f"keras.ops.{what} "):
            call()
    with pytest.raises(ValueError, match="axis 4 is out of range"):
        bf.ops.sum(x, axis=4)
    with pytest.raises(ValueError, match="axis must be an int or None"):
        bf.ops.argmax(x, axis=(1, 2))
    with pytest.raises(ValueError, match="raxes"):
        bf.layers.Reduce("sum", axis=(3,)).compute_output_shape((None, 4, 5))
