"""The elementwise primitives (csrc/core/layers/emath.c's UNARY and BINARY,
ops and derivatives in csrc/core/emap_ops.h / emap_math.h) through keras.ops
(python/boundfit/ops_elementwise.py): every op's values against Keras 3 on
the same inputs (smooth domains, and special values: NaN, inf, ties, zeros,
negative divisors), its gradient against Keras's (jax.vjp) and float64
central differences, NumPy's broadcasting across per-sample ranks 1-3 with
gradients summed over the broadcast axes, a .keras file both ways, the plan
against the arenas, and the emulated CUDA backend against the CPU. All ops
share one model: one predict and one SGD step give every value and
gradient."""

import numpy as np
import pytest

import boundfit as bf
from boundfit.ops import OpNotSupportedError
from conftest import assert_plan_equals_arenas, engine_gradient
from test_cuda_backend import _REASON

from helpers.keras_recorded import case, recorded
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


B, D = 6, 4
# (id, f(ops, a) or f(ops, a, b), domain of a, domain of b)
UNARY = [(n, (lambda n: lambda o, a: getattr(o, n)(a))(n), dom) for n, dom in [
    ("sqrt", (0.2, 3)), ("square", (-2, 2)), ("abs", (-2, 2)), ("log", (0.2, 3)), ("reciprocal", (0.5, 3)),
    ("rsqrt", (0.3, 3)), ("sin", (-3, 3)), ("cos", (-3, 3)), ("tan", (-1.2, 1.2)), ("arcsin", (-0.9, 0.9)),
    ("arccos", (-0.9, 0.9)), ("arctan", (-3, 3)), ("sinh", (-2, 2)), ("cosh", (-2, 2)), ("arcsinh", (-3, 3)),
    ("arccosh", (1.2, 4)), ("arctanh", (-0.9, 0.9)), ("exp2", (-2, 2)), ("expm1", (-2, 2)), ("log1p", (-0.5, 3)),
    ("log2", (0.2, 3)), ("log10", (0.2, 3)), ("cbrt", (0.3, 3)), ("sign", (-2, 2)), ("floor", (-3, 3)),
    ("ceil", (-3, 3)), ("trunc", (-3, 3)), ("round", (-3, 3)), ("deg2rad", (-3, 3)), ("rad2deg", (-3, 3)),
    ("erf", (-2, 2)), ("erfc", (-2, 2)), ("erfinv", (-0.9, 0.9)), ("sinc", (-2, 2)), ("signbit", (-2, 2)),
    ("isnan", (-2, 2)), ("isinf", (-2, 2)), ("isfinite", (-2, 2)), ("isneginf", (-2, 2)), ("isposinf", (-2, 2)),
    ("logical_not", (-2, 2)), ("nan_to_num", (-2, 2)), ("angle", (-2, 2)), ("imag", (-2, 2)),
    ("stop_gradient", (-2, 2)), ("hard_tanh", (-2, 2)), ("tanh_shrink", (-2, 2)), ("log_sigmoid", (-4, 4)),
    ("sparse_plus", (-2, 2)), ("sparse_sigmoid", (-2, 2)), ("hard_silu", (-5, 5)), ("hard_shrink", (-2, 2)),
    ("soft_shrink", (-2, 2)), ("squareplus", (-2, 2)), ("celu", (-2, 2)), ("negative", (-2, 2)),
    ("absolute", (-2, 2)), ("fabs", (-2, 2))]] + [
    ("round_decimals", lambda o, a: o.round(a, decimals=1), (-3, 3)),
    ("threshold", lambda o, a: o.threshold(a, 0.3, -1.5), (-2, 2)),
    ("celu_alpha", lambda o, a: o.celu(a, alpha=0.7), (-2, 2)),
    ("squareplus_b", lambda o, a: o.squareplus(a, b=2), (-2, 2)),
    ("soft_shrink_t", lambda o, a: o.soft_shrink(a, threshold=0.8), (-2, 2)),
    ("mod_number", lambda o, a: o.mod(a, 1.3), (-3, 3)), ("number_mod", lambda o, a: o.mod(2.5, a), (0.6, 2)),
    ("power_number", lambda o, a: o.power(a, 1.7), (0.2, 2)), ("number_power", lambda o, a: o.power(2.0, a), (-2, 2)),
    ("x_pow_3", lambda o, a: a ** 3, (-2, 2)), ("number_rpow", lambda o, a: 1.5 ** a, (-2, 2)),
    ("number_minus", lambda o, a: 2.0 - a, (-2, 2)), ("number_divide", lambda o, a: 3.0 / a, (0.5, 2)),
    ("arctan2_number", lambda o, a: o.arctan2(a, -0.7), (-2, 2)),
    ("number_arctan2", lambda o, a: o.arctan2(0.6, a), (-2, 2)),
    ("floor_divide_number", lambda o, a: a // 0.7, (-3, 3)), ("hypot_number", lambda o, a: o.hypot(a, np.float32(1.2)), (-2, 2)),
    ("logaddexp_number", lambda o, a: o.logaddexp(0.3, a), (-2, 2)),
    ("maximum_number", lambda o, a: o.maximum(a, 0.4), (-2, 2)), ("minimum_number", lambda o, a: o.minimum(-0.3, a),
                                                                   (-2, 2)),
    ("number_greater", lambda o, a: o.greater(0.5, a), (-2, 2)), ("less_equal_number", lambda o, a: a <= 0.1, (-2, 2)),
    ("not_equal_number", lambda o, a: o.not_equal(a, 0.5), (-2, 2)),
    ("heaviside_number", lambda o, a: o.heaviside(a, np.float32(0.5)), (-2, 2)),
    ("divide_no_nan_number", lambda o, a: o.divide_no_nan(1.0, a), (0.5, 2))]
BINARY = [(n, (lambda n: lambda o, a, b: getattr(o, n)(a, b))(n), da, db) for n, da, db in [
    ("power", (0.3, 2), (-2, 2)), ("arctan2", (-2, 2), (-2, 2)), ("mod", (-3, 3), (0.7, 2)),
    ("fmod", (-3, 3), (0.7, 2)), ("floor_divide", (-3, 3), (0.7, 2)), ("hypot", (-2, 2), (-2, 2)),
    ("logaddexp", (-2, 2), (-2, 2)), ("logaddexp2", (-2, 2), (-2, 2)), ("logical_and", (-2, 2), (-2, 2)),
    ("logical_or", (-2, 2), (-2, 2)), ("logical_xor", (-2, 2), (-2, 2)), ("divide_no_nan", (-2, 2), (0.5, 2)),
    ("heaviside", (-2, 2), (-2, 2)), ("equal", (-2, 2), (-2, 2)), ("not_equal", (-2, 2), (-2, 2)),
    ("greater", (-2, 2), (-2, 2)), ("less_equal", (-2, 2), (-2, 2)), ("divide", (-2, 2), (0.5, 2)),
    ("maximum", (-2, 2), (-2, 2)), ("subtract", (-2, 2), (-2, 2)), ("multiply", (-2, 2), (-2, 2)),
    ("fmax", (-2, 2), (-2, 2)), ("fmin", (-2, 2), (-2, 2))]] + [
    ("nn_hard_swish", lambda o, a, b: o.nn.hard_swish(a) + o.nn.celu(b), (-5, 5), (-2, 2)),
    ("isclose", lambda o, a, b: o.isclose(a, b, atol=0.5), (-2, 2), (-2, 2)),
    ("x_mod_y", lambda o, a, b: a % b, (-3, 3), (-2, -0.7))]
CASES = [(i, f, (da,)) for i, f, da in UNARY] + [(i, f, (da, db)) for i, f, da, db in BINARY]
IDS = [c[0] for c in CASES]

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (B, D)).astype(np.float32)


def _build(M):
    """Input (D,) -> per case and operand a Dense(D) (its kernel diag(s), bias c: the operand spans the case's
    domain) -> the op -> every case's output side by side: (B, D * cases)"""
    x = M.Input((D,))
    outs = []
    for k, (name, f, doms) in enumerate(CASES):
        ops = [M.layers.Dense(D, name=f"c{k}_{j}")(x) for j in range(len(doms))]
        y = f(M.ops, *ops)
        outs.append(M.ops.cast(y, "float32"))
    while len(outs) > 1:     # concatenated 8 at a time
        outs = [M.ops.concatenate(outs[i:i + 8], axis=-1) if len(outs[i:i + 8]) > 1 else outs[i]
                for i in range(0, len(outs), 8)]
    return M.Model(x, outs[0])


def _set_weights(m):
    """each operand's Dense c<k>_<j>: diag(s) and c, so that x in [-1, 1] maps onto its domain (lo, hi)"""
    for k, (_, _, doms) in enumerate(CASES):
        for j, (lo, hi) in enumerate(doms):
            m.get_layer(f"c{k}_{j}").set_weights([np.roll(np.eye(D, dtype=np.float32), j, 1) * np.float32((hi - lo) / 2),
                                                  np.full(D, (hi + lo) / 2, np.float32)])
    return m


def _bias_index(m):
    """the index in get_weights() of each Dense's bias, by name"""
    at, out = 0, {}
    for layer in m.layers:
        n = len(layer.get_weights())
        if n:
            out[layer.name] = at + 1
        at += n
    return out


def _operands(k):
    """case k's operands as its Dense layers make them (operand j: the columns of x rolled by j)"""
    return [np.roll(X, j, 1) * np.float32((hi - lo) / 2) + np.float32((hi + lo) / 2)
            for j, (lo, hi) in enumerate(CASES[k][2])]


@pytest.fixture(scope="module")
def engine():
    """boundfit's values and its gradient of a mean squared error over every case, one predict and one step"""
    m = _set_weights(_build(bf))
    m.compile(optimizer="sgd", loss="mse")
    t = rng.standard_normal((B, D * len(CASES))).astype(np.float32)
    y = m.predict(X, batch_size=B, verbose=0)
    return m, y, t, engine_gradient(m, X, t)


SPECIAL_A = np.array([[np.nan, np.inf, -np.inf, 0.0], [-0.0, 1.0, -1.0, 2.5], [0.5, -0.5, 1.5, -2.5],
                      [3.0, -3.0, 1e-3, 7.0], [0.5, 1.5, 2.5, -0.5], [1.0, 2.0, -3.0, 4.0]], np.float32)
SPECIAL_B = np.array([[1.0, 2.0, -2.0, 0.0], [0.0, 1.0, -1.0, 2.5], [-0.5, 0.5, -1.5, 2.0],
                      [-2.0, 2.0, -1e-3, 7.0], [np.nan, 1.5, -0.0, 0.5], [1.0, -2.0, 3.0, np.inf]], np.float32)


@pytest.fixture(scope="module")
def reference(engine):
    """Keras's values of every case and the gradients of the same loss with respect to its operands (jax.vjp),
    all in one jitted call: ref(operands, targets) -> (values, gradients); and its values on SPECIAL_A / _B
    (recorded for the module)"""
    return recorded("ops_elementwise", __file__, lambda: _keras_reference(engine[2]))


def _keras_reference(t):
    keras = load()
    import jax
    import jax.numpy as jnp

    def all_cases(operands, targets):
        vals, grads = [], []
        for (name, f, _), zs, tk in zip(CASES, operands, targets):
            v, vjp = jax.vjp(lambda *a: f(keras.ops, *a).astype(jnp.float32), *zs)
            vals.append(v)
            grads.append(vjp(2.0 * (v - tk) / t.size))
        return vals, grads
    ref = jax.jit(all_cases)
    tk = [t[:, k * D:(k + 1) * D] for k in range(len(CASES))]
    vals, grads = ref([_operands(k) for k in range(len(CASES))], tk)
    special = [[SPECIAL_A, SPECIAL_B][:len(c[2])] for c in CASES]
    return ([np.asarray(v) for v in vals], [[np.asarray(gj, np.float64) for gj in g] for g in grads],
            [np.asarray(v) for v in ref(special, tk)[0]])


def _case_grads(m, g, k):
    """the engine's gradients of case k's operands: d loss / d c_j (the biases) per operand"""
    at = _bias_index(m)
    return [g[at[f"c{k}_{j}"]] for j in range(len(CASES[k][2]))]


@pytest.mark.parametrize("k", range(len(CASES)), ids=IDS)
def test_each_op_gives_keras_values_and_gradients(engine, reference, k):
    """values against keras.ops on JAX; the gradient of the loss with respect to each operand (summed over the
    batch: its Dense bias) against jax.vjp of the same op and float64 central differences of boundfit's eager
    NumPy form"""
    m, y, t, g = engine
    vals, grads, _ = reference
    name, f, doms = CASES[k]
    got = y[:, k * D:(k + 1) * D]
    np.testing.assert_allclose(got, vals[k], rtol=2e-5, atol=2e-6, err_msg=name)
    w = 2.0 * (got - t[:, k * D:(k + 1) * D]) / t.size                   # d loss / d output
    zs, h = _operands(k), 1e-6
    for j, gj in enumerate(_case_grads(m, g, k)):
        ref = grads[k][j].sum(0)
        np.testing.assert_allclose(gj, ref, atol=2e-4 * max(np.abs(ref).max(), 1e-9),
                                   err_msg=f"{name}: operand {j} against jax")
        if name == "stop_gradient":      # its value moves; its gradient is 0 by definition
            continue

        def at(d):
            args = [z.astype(np.float64) + (d if i == j else 0.0) for i, z in enumerate(zs)]
            return np.asarray(f(bf.ops, *args), np.float64)
        fd = ((at(h) - at(-h)) / (2 * h) * w).sum(0)
        scale = max(np.abs(ref).max(), np.abs(fd).max(), 1e-9)
        np.testing.assert_allclose(gj, fd, atol=2e-3 * scale, err_msg=f"{name}: operand {j} against differences")


def _special_model():
    a, b = bf.Input((D,)), bf.Input((D,))
    outs = [bf.ops.cast(f(bf.ops, *(a, b)[:len(doms)]), "float32") for _, f, doms in CASES]
    while len(outs) > 1:
        outs = [bf.ops.concatenate(outs[i:i + 8], axis=-1) if len(outs[i:i + 8]) > 1 else outs[i]
                for i in range(0, len(outs), 8)]
    return bf.Model([a, b], outs[0])


def test_special_values_give_keras_values(reference):
    """NaN, +-inf, signed zeros, ties, half-way rounding, negative divisors and exact equality: every op's values
    as Keras's (NaN where Keras gives NaN)"""
    got = _special_model().predict([SPECIAL_A, SPECIAL_B], batch_size=len(SPECIAL_A), verbose=0)
    want = reference[2]
    wrong = [name for k, (name, _, _) in enumerate(CASES) if not np.allclose(
        got[:, k * D:(k + 1) * D], want[k], rtol=2e-5, atol=2e-6, equal_nan=True)]
    assert wrong == [], wrong


def test_eager_calls_on_arrays_give_keras_values(reference):
    """on NumPy arrays the ops compute in NumPy with Keras's semantics"""
    wrong = []
    for k, (name, f, doms) in enumerate(CASES):
        got = np.asarray(f(bf.ops, *[SPECIAL_A, SPECIAL_B][:len(doms)])).astype(np.float32)
        if not np.allclose(got, reference[2][k], rtol=1e-5, atol=1e-6, equal_nan=True):
            wrong.append(name)
    assert wrong == [], wrong


# (tensor a's per-sample shape, b's: a second tensor of a's rank, or an array right-aligned)
BROADCASTS = [((2, 3, 4), (2, 1, 4), False), ((2, 3, 4), (1, 3, 1), False), ((3, 1), (1, 4), False),
              ((2, 3, 4), (4,), True), ((2, 3, 4), (3, 1), True), ((4,), (1,), True)]


def _broadcast_model(M, sa, sb, const):
    """a (sa) op b: b a second input of per-sample shape sb (both with batch axes: one rank), or a constant array
    of shape sb (no batch axis: NumPy's right alignment across ranks)"""
    a = M.Input(sa)
    ins = [a]
    if const:
        b = np.linspace(0.5, 2.0, int(np.prod(sb)), dtype=np.float32).reshape(sb)
    else:
        b = M.Input((1,) * (len(sa) - len(sb)) + sb)
        ins.append(b)
    a2 = M.layers.Dense(sa[-1], name="da")(a)
    b2 = b if const else M.layers.Dense(b.shape[-1], name="db")(b)
    y = M.ops.add(M.ops.logaddexp(a2, b2), M.ops.arctan2(b2, a2))
    return M.Model(ins, M.layers.Flatten()(y) if len(sa) > 1 or const else y)


@pytest.mark.parametrize("sa,sb,const", BROADCASTS, ids=[f"{a}-{'array ' if c else ''}{b}" for a, b, c in BROADCASTS])
def test_broadcasting_across_ranks_gives_keras_values_and_gradients(sa, sb, const):
    """two tensors with batch axes broadcast size-1 axes of one rank; a constant array of any rank up to the
    tensor's broadcasts right-aligned; gradients (both operands' Dense weights) summed over the broadcast axes,
    against Keras's through one jitted JAX call"""
    from helpers.keras_compare import against_keras
    r = np.random.default_rng(3)
    xa = r.standard_normal((5,) + sa).astype(np.float32)
    x = [xa] if const else [xa, r.standard_normal((5,) + (1,) * (len(sa) - len(sb)) + sb).astype(np.float32)]
    m = _broadcast_model(bf, sa, sb, const)
    y = r.standard_normal((5,) + tuple(m.outputs[0].shape[1:])).astype(np.float32)
    dense = ["da"] if const else ["da", "db"]

    def order(mb, w=None):   # the Dense layers' weights (a constant array is a weight of boundfit's graph only)
        if w is not None:
            for i, name in enumerate(dense):
                mb.get_layer(name).set_weights(w[2 * i:2 * i + 2])
        return [v for name in dense for v in mb.get_layer(name).get_weights()]
    against_keras(lambda K, Ls: _broadcast_model(K, sa, sb, const), x if len(x) > 1 else x[0], y, rtol=1e-4,
                  order=order)


def test_tensors_of_different_ranks_with_batch_axes_are_refused_naming_the_op():
    """NumPy would line one's batch axis up with the other's sample axis: refused as before"""
    a, b = bf.Input((3, 4)), bf.Input((4,))
    with pytest.raises(OpNotSupportedError, match="keras.ops.arctan2"):
        bf.ops.arctan2(a, b)
    with pytest.raises(OpNotSupportedError, match="keras.ops.mod.*do not broadcast"):
        bf.ops.mod(bf.Input((3, 4)), bf.Input((2, 4)))
    with pytest.raises(ValueError, match="per-sample shapes \\(3, 4\\) and \\(2, 4\\) do not broadcast"):
        bf.layers.Binary("mod")([bf.Input((3, 4)), bf.Input((2, 4))])   # the engine's own check


def test_a_model_of_several_ops_round_trips_through_a_keras_file(tmp_path):
    """written as Keras's operation nodes (a bool result then Cast), opened by Keras with the same predictions,
    and read back into the same engine ops"""
    def build(M):
        x = M.Input((3, 4))
        h = M.layers.Dense(4)(x)
        y = M.ops.sin(h) + M.ops.round(h, decimals=1) * M.ops.mod(h, 0.7) + M.ops.arctan2(h, x)
        y = y + M.ops.cast(M.ops.isnan(M.ops.log(h)), "float32") + M.ops.nan_to_num(M.ops.log(h), nan=-2.0)
        y = M.ops.logaddexp(y, np.array([0.5, -1.0, 2.0, 0.0], np.float32)) + 2.0 ** M.ops.hard_tanh(h)
        y = y + M.ops.cast(M.ops.isclose(h, x, rtol=0.2, atol=0.3), "float32") * M.ops.fmax(h, M.ops.ones_like(x))
        return M.Model(x, M.layers.Flatten()(M.ops.erf(y) + M.ops.squareplus(h, b=2)))
    m = build(bf)
    x = np.random.default_rng(5).standard_normal((7, 3, 4)).astype(np.float32)
    want = m.predict(x, verbose=0)
    path = str(tmp_path / "m.keras")
    m.save(path)
    theirs = case(lambda: load().models.load_model(path).predict(x, verbose=0), files=[path])   # by contents
    np.testing.assert_allclose(np.asarray(theirs), want, rtol=1e-5, atol=1e-5)
    back = bf.models.load_model(path)
    np.testing.assert_allclose(back.predict(x, verbose=0), want, rtol=1e-6, atol=1e-6)
    kinds = sorted({type(layer).__name__ for layer in back.layers})
    assert "Unary" in kinds and "Binary" in kinds, kinds


def test_the_plan_equals_the_arenas(engine):
    """no workspace of their own: the broadcasting binary op reads its operands through strides"""
    m, _, t, _ = engine
    assert_plan_equals_arenas(m, X, t, batch_size=3)


def test_bad_options_are_named():
    x = bf.Input((4,))
    with pytest.raises(TypeError, match="keras.ops.round: unexpected argument 'bogus'"):
        bf.ops.round(x, bogus=1)
    with pytest.raises(ValueError, match="decimals"):
        bf.ops.round(x, decimals=0.5)
    with pytest.raises(OpNotSupportedError, match="keras.ops.isclose"):
        bf.ops.isclose(x, x, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_every_op_runs_on_cuda_as_on_the_cpu(engine):
    """emap.cu against emap.c: the values and one SGD step of the model of every case (run on the device
    emulation by tests/test_cuda_sim.py)"""
    m, y, t, _ = engine
    gpu = _set_weights(_build(bf))
    gpu.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss="mse")
    np.testing.assert_allclose(gpu.predict(X, batch_size=B, verbose=0, device="cuda"), y, rtol=1e-5, atol=1e-6)
    cpu = _set_weights(_build(bf))
    cpu.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss="mse")
    for mm, dev in ((cpu, "cpu"), (gpu, "cuda")):
        mm.fit(X, t, batch_size=B, epochs=1, shuffle=False, verbose=0, device=dev)
    for a, b in zip(gpu.get_weights(), cpu.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
