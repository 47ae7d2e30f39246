"""keras.ops names composed of the engine's primitives in ops_fft.py,
ops_bitwise.py, ops_windows.py and ops_control.py, against Keras 3 on JAX:
one model per family whose output concatenates every case after a trainable
shift x + b (values, b's gradient, the same cases on arrays, the emu device,
the plan against the arenas, central differences on the smooth families, a
.keras file read back by boundfit and by Keras); the ops boundfit computes
on arrays only (ops_linalg.py, ops_arrays.py, the loops over a leading
axis) against Keras on arrays, and refused by name on symbolic tensors.
Keras's results are recorded (helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from conftest import assert_plan_equals_arenas, directional_check, engine_gradient
from helpers.keras_compare import close
from helpers.keras_recorded import case
from test_ops_reduce import flat, keras_values_and_grads, shifted

B = 3


def _int(o, K, t):
    return t if K is bf else o.cast(t, "int32")


def _c(h, K, c):
    """a number: boundfit's constant operand; Keras's symbolic bitwise ops take only tensors"""
    return c if K is bf else h * 0 + c


def _bits(fn):
    """an integer op in Keras (int32 in, float32 out); boundfit's float32 integers"""
    return lambda o, h, K: o.cast(fn(o, _int(o, K, h), K), "float32")


# (name, fn(o, h, K)); a family: (cases, sample shape, smooth (central differences), in a .keras file)
FFT = [
    ("fft", lambda o, h, K: o.fft((h, h * 0.5))), ("fft2", lambda o, h, K: o.fft2((h * 0.5, h))),
    ("ifft2", lambda o, h, K: o.ifft2((h, h * h))), ("rfft", lambda o, h, K: o.rfft(h)),
    ("rfft8", lambda o, h, K: o.rfft(h, 8)), ("rfft5", lambda o, h, K: o.rfft(h, 5)),
    ("irfft", lambda o, h, K: o.irfft((h, h * 0.5))), ("irfft7", lambda o, h, K: o.irfft((h, h * 0.5), 7)),
    ("stft", lambda o, h, K: o.stft(h, 4, 2, 4)),
    ("stft_hamming", lambda o, h, K: o.stft(h, 3, 1, 4, window="hamming", center=False)),
    ("istft", lambda o, h, K: o.istft((h, h * 0.3), 8, 3, 10)),
    ("istft_plain", lambda o, h, K: o.istft((h, h * 0.3), 10, 4, 10, window=None, center=False)),
    ("istft_length", lambda o, h, K: o.istft((h, h * 0.3), 10, 4, 10, length=9)),
]
BITS = [
    ("and", _bits(lambda o, h, K: o.bitwise_and(h, o.abs(h) * 3 - 7))),
    ("or", _bits(lambda o, h, K: o.bitwise_or(h, o.abs(h) * 3 - 7))),
    ("xor", _bits(lambda o, h, K: o.bitwise_xor(h, o.abs(h) * 3 - 7))),
    ("and_c", _bits(lambda o, h, K: o.bitwise_and(h, _c(h, K, 13)))),
    ("or_c", _bits(lambda o, h, K: o.bitwise_or(h, _c(h, K, -6)))),
    ("xor_c", _bits(lambda o, h, K: o.bitwise_xor(h, _c(h, K, 21)))),
    ("invert", _bits(lambda o, h, K: o.bitwise_invert(h))), ("not", _bits(lambda o, h, K: o.bitwise_not(h))),
    ("left_shift", _bits(lambda o, h, K: o.left_shift(h, _c(h, K, 2)))),
    ("bitwise_left_shift", _bits(lambda o, h, K: o.bitwise_left_shift(h, o.abs(h) % 3))),
    ("right_shift", _bits(lambda o, h, K: o.right_shift(h, _c(h, K, 1)))),
    ("bitwise_right_shift", _bits(lambda o, h, K: o.bitwise_right_shift(h, _c(h, K, 3)))),
]
WINDOWS = [
    # channels_first: Keras 3.15's symbolic channels_last shape is wrong (its eager one is right: below)
    ("adaptive_average_pool", lambda o, h, K: o.adaptive_average_pool(h, (2, 3), "channels_first")),
    ("adaptive_max_pool", lambda o, h, K: o.nn.adaptive_max_pool(h, (3, 4), "channels_first")),
    ("adaptive_max_pool_1d", lambda o, h, K: o.adaptive_max_pool(o.reshape(h, (-1, 10, 6)), (4,), "channels_first")),
    ("unfold", lambda o, h, K: o.unfold(h, 2, 1, 1, 2)),
    ("unfold_dilated", lambda o, h, K: o.nn.unfold(h, (2, 3), 2)),
    ("fold", lambda o, h, K: o.fold(o.unfold(h, 2, 1, 1, 2), (5, 6), 2, 1, 1, 2)),
    ("fold_dilated", lambda o, h, K: o.nn.fold(o.unfold(h, (2, 2), 2) * 0.5, (5, 6), (2, 2), 2)),
]
CONTROL = [
    ("fori_loop", lambda o, h, K: o.fori_loop(0, 3, lambda i, v: v * 0.5 + o.sin(v), h)),
    ("associative_scan", lambda o, h, K: o.associative_scan(lambda a, b: a + b, h, axis=2)),
    ("associative_scan_rev", lambda o, h, K: o.associative_scan(lambda a, b: o.maximum(a, b), h, True, axis=1)),
    # Keras 3.15's Cond / Switch fail on a functional model's tensors: its side is the branch they pick
    ("cond", lambda o, h, K: o.cond(True, lambda: h * 2.0, lambda: h) if K is bf else h * 2.0),
    ("switch", lambda o, h, K: o.switch(1, [lambda x: x, lambda x: o.tanh(x)], h) if K is bf else o.tanh(h)),
]
# (cases, sample shape, smooth, Keras reads its .keras file: not the bits' number operands, which Keras's
# symbolic bitwise ops refuse, nor Keras 3.15's AdaptiveAveragePool / Fold read from a file, which fail there)
FAMILIES = {"fft": (FFT, (4, 6), True, True), "bits": (BITS, (4, 6), False, False),
            "windows": (WINDOWS, (2, 5, 6), True, False), "control": (CONTROL, (4, 6), False, None)}


def family_model(K, family):
    cases, shape = FAMILIES[family][:2]
    x = K.Input(shape)
    h = shifted(K)()(x)
    outs = []
    for _, fn in cases:
        y = fn(K.ops, h, K)
        outs += list(y) if isinstance(y, tuple) else [y]
    return K.Model(x, flat(K, outs))


def family_parts(family, x):
    outs = []
    for _, fn in FAMILIES[family][0]:
        y = fn(bf.ops, x, bf)
        outs += list(y) if isinstance(y, tuple) else [y]
    return np.concatenate([np.asarray(o, np.float32).reshape(len(x), -1) for o in outs], axis=1)


def data(family, seed=0):
    r = np.random.default_rng(seed)
    shape = (B,) + FAMILIES[family][1]
    if family == "bits":
        return r.integers(-40, 40, shape).astype(np.float32)
    return r.standard_normal(shape).astype(np.float32)


def target(n, seed=5):
    return np.random.default_rng(seed).standard_normal((B, n)).astype(np.float32)


@pytest.fixture(scope="module")
def models():
    return {f: family_model(bf, f) for f in FAMILIES}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_new_ops_match_keras_values_gradients_eager_emu_and_plan(family, models):
    x, mb = data(family), models[family]
    y = target(mb.output_shape[-1])

    def compute():
        mk = family_model(keras_ref.load(), family)
        (out, (g,)), = keras_values_and_grads({family: (mk, x, y)}).values()
        return out, g
    want, gk = case(compute)
    got = mb.predict(x, batch_size=B, verbose=0)
    close(want, got, rtol=2e-5)
    close(want, family_parts(family, x), rtol=2e-5)            # on arrays: NumPy, Keras's values
    np.testing.assert_array_equal(mb.predict(x, batch_size=B, verbose=0, device="emu"), got)
    mb.compile(optimizer="sgd", loss="mse")
    close(gk, engine_gradient(mb, x, y)[0], rtol=5e-5)         # b's gradient (zero through integer ops)
    assert_plan_equals_arenas(mb, x, y, batch_size=B)


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f][2]])
def test_new_op_gradients_match_central_differences(family, models):
    mb = models[family]
    x = data(family)
    mb.compile(optimizer="sgd", loss="mse")
    directional_check(mb, x, target(mb.output_shape[-1], seed=7), eps=1e-2, fixed=range(1, len(mb.get_weights())))


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f][3] is not None])
def test_a_keras_file_of_the_new_ops_round_trips_through_boundfit_and_keras(family, tmp_path):
    """read back by boundfit; by Keras where Keras can (control flow calls Python functions: no file); the model
    built afresh, its names (in the file, which keys Keras's record) counted from the test's start"""
    x = data(family)
    mb = family_model(bf, family)
    got = mb.predict(x, batch_size=B, verbose=0)
    path = str(tmp_path / f"{family}.keras")
    mb.save(path)
    np.testing.assert_allclose(bf.models.load_model(path).predict(x, batch_size=B, verbose=0), got, rtol=1e-6,
                               atol=1e-6)
    if not FAMILIES[family][3]:
        return
    ref = case(lambda: np.asarray(keras_ref.load().models.load_model(path).predict(x, verbose=0)), files=[path])
    close(ref, got, rtol=2e-5)


SPD = (lambda a: a @ a.T + 3 * np.eye(3, dtype=np.float32))(np.arange(9, dtype=np.float32).reshape(3, 3) / 7)
M = np.array([[2.0, -1.0, 0.5], [1.0, 3.0, -2.0], [0.5, 0.25, 1.5]], np.float32)
V = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], np.float32)
IDS = np.array([0, 2, 0, 1, 2], np.int32)
ROWS = np.arange(10, dtype=np.float32).reshape(5, 2) - 4.0
ARRAY_CASES = [
    ("cholesky", (SPD,)), ("cholesky_inverse", (np.linalg.cholesky(SPD),)), ("det", (M,)), ("eigh", (SPD,)),
    ("inv", (M,)), ("lstsq", (V, M[:, 0])), ("lu_factor", (M,)), ("qr", (V,)), ("slogdet", (M,)), ("logdet", (SPD,)),
    ("solve", (M, V)), ("solve_triangular", (M, V, True)), ("svd", (V,)), ("matrix_rank", (V,)), ("pinv", (V,)),
    ("segment_sum", (ROWS, IDS, 4)), ("segment_max", (ROWS, IDS, 4)), ("segment_min", (ROWS, IDS, 4)),
    ("segment_prod", (ROWS, IDS, 3)),
    ("scatter", (np.array([[0, 1], [2, 0], [0, 1]]), np.array([1.0, 2.0, 3.0], np.float32), (3, 2))),
    ("scatter_update", (np.zeros((3, 2), np.float32), np.array([[1, 1], [2, 0]]), np.array([5.0, 6.0], np.float32))),
    ("bincount", (np.array([1, 3, 1, 0], np.int32),)), ("histogram", (ROWS.ravel(), 4)),
    ("corrcoef", (V.T,)), ("correlate", (M[0], M[1, :2])), ("unique", (IDS,)), ("nonzero", (IDS,)),
    ("argpartition", (np.array([3.0, 1.0, 2.0, 1.0, 0.5, 4.0], np.float32), 2)),
    ("meshgrid", (np.arange(3.0, dtype=np.float32), np.arange(2.0, dtype=np.float32))),
    ("gcd", (np.array([12, 18, -8]), np.array([8, 27, 6]))), ("lcm", (np.array([4, 6, 5]), np.array([6, 4, 3]))),
    ("nextafter", (M[0], np.float32(10.0))), ("polar", (V[:, 0], V[:, 1])),
    ("view", (np.array([1.0, -2.0], np.float32), "int32")), ("view_as_complex", (V[:2],)),
    ("view_as_real", (np.array([1 + 2j, 3 - 1j], np.complex64),)),
    ("adaptive_average_pool", (np.arange(60, dtype=np.float32).reshape(1, 5, 6, 2) % 7, (2, 4))),
    ("adaptive_max_pool", (np.arange(60, dtype=np.float32).reshape(1, 10, 6) % 7, 4)),
    ("map", (lambda v: v * 2.0, M)), ("vectorized_map", (lambda v: v.sum(), M)),
    ("scan", (lambda c, v: (c + v, c * v), np.float32(1.0), M[0])),
    ("while_loop", (lambda i, v: i < 4, lambda i, v: (i + 1, v * 1.5), (0, M[0]))),
]


def _arrays(out):
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _arrays(o)]
    return [np.asarray(out)]


@pytest.mark.parametrize("name,args", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_array_only_ops_match_keras_on_arrays(name, args):
    ref = case(lambda: _arrays(getattr(keras_ref.load().ops, name)(*args)))
    got = _arrays(getattr(bf.ops, name)(*args))
    assert len(got) == len(ref)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(np.asarray(g), r, rtol=2e-5, atol=2e-6)


def test_eig_and_vectorize_match_keras_on_arrays():
    """eig's eigenvalues (ascending, complex) and a vectorized Python function"""
    def compute():
        k = keras_ref.load().ops
        return np.sort_complex(np.asarray(k.eig(M)[0])), np.asarray(k.vectorize(lambda a, b: a * b + 1.0)(M, M[0]))
    w, v = case(compute)
    np.testing.assert_allclose(np.sort_complex(bf.ops.eig(M)[0]), w, rtol=1e-5)
    np.testing.assert_allclose(bf.ops.vectorize(lambda a, b: a * b + 1.0)(M, M[0]), v, rtol=1e-6)
    assert bf.ops.linalg.solve is bf.ops.solve and bf.ops.linalg.norm is bf.ops.norm


@pytest.mark.parametrize("op,call", [
    *[(n, lambda o, h, n=n: getattr(o, n)(h)) for n in (
        "cholesky", "det", "eig", "eigh", "inv", "lu_factor", "qr", "slogdet", "logdet", "svd", "matrix_rank",
        "pinv", "nonzero", "unique", "corrcoef", "view_as_real")],
    ("solve", lambda o, h: o.linalg.solve(h, h)), ("segment_sum", lambda o, h: o.segment_sum(h, IDS[:3], 3)),
    ("scatter_update", lambda o, h: o.scatter_update(h, [[0, 0, 0]], [1.0])),
    ("bincount", lambda o, h: o.bincount(h)), ("histogram", lambda o, h: o.histogram(h)),
    ("gcd", lambda o, h: o.gcd(h, 2)), ("argpartition", lambda o, h: o.argpartition(h, 1)),
    ("map", lambda o, h: o.map(lambda v: v, h)), ("scan", lambda o, h: o.scan(lambda c, v: (c, v), 0.0, h)),
    ("scan", lambda o, h: o.scan(lambda c, v: (c, c), h, length=2)),
    ("cond", lambda o, h: o.cond(o.any(h > 0), lambda: h, lambda: h)),
    ("while_loop", lambda o, h: o.while_loop(lambda v: o.all(v > 0), lambda v: v, h)),
    ("fori_loop", lambda o, h: o.fori_loop(0, 5000, lambda i, v: v, h)),
    ("custom_gradient", lambda o, h: o.custom_gradient(lambda v: (v, lambda g: g))(h)),
    ("vectorize", lambda o, h: o.vectorize(lambda v: v)(h)),
    ("fft", lambda o, h: o.fft((h, np.zeros((3, 3), np.float32)))), ("rfft", lambda o, h: o.rfft(h[:, 0, 0])),
])
def test_ops_on_arrays_only_are_refused_by_name_on_symbolic_tensors(op, call):
    h = bf.Input((3, 3))
    with pytest.raises(bf.ops.OpNotSupportedError, match=rf"keras\.ops\.{op} "):
        call(bf.ops, h)


def test_jvp_is_refused_by_name():
    with pytest.raises(bf.ops.OpNotSupportedError, match=r"keras\.ops\.jvp is not supported"):
        bf.ops.jvp(lambda v: v * 2.0, (np.ones(2),), (np.ones(2),))
    assert bf.ops.jvp._boundfit_refused and bf.ops.det._boundfit_arrays_only


@pytest.mark.parametrize("call,arg", [
    (lambda: bf.ops.stft(np.ones(8), 4, 0, 4), "sequence_stride"),
    (lambda: bf.ops.stft(np.ones(8), 4, 2, 4, window="kaiser"), "window"),
    (lambda: bf.ops.fft(np.ones(4)), "x"), (lambda: bf.ops.segment_sum(ROWS, IDS), "num_segments"),
    (lambda: bf.ops.qr(M, mode="full"), "mode"), (lambda: bf.ops.adaptive_max_pool(np.ones((1, 4, 4, 1)), 0),
                                                  "output_size"),
])
def test_bad_arguments_raise_naming_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
