"""keras.ops composed in Python of the engine's primitives (ops_shape.py,
ops_stats.py, ops_compose.py, ops_create.py, ops_nn.py, ops_image.py): one
model per family whose output concatenates every case (an op with its
arguments) after a trainable shift x + b, against Keras 3 on JAX on the same
inputs: the values, b's gradient (the batch's sum of the input's), the same
cases on arrays (eager NumPy) against Keras's values, float64 central
differences on the smooth cases, the plan against the arenas, a .keras file
read back by boundfit and by Keras, and what would mix the samples of a
batch refused by name. Keras's results are recorded
(helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from conftest import assert_plan_equals_arenas, directional_check, engine_gradient
from helpers.keras_compare import close
from helpers.keras_recorded import case, recorded
from test_ops_reduce import flat, keras_values_and_grads, shifted

B = 3
A1, A2 = np.linspace(-1.0, 1.0, 6).astype(np.float32), np.linspace(0.5, 2.0, 6).astype(np.float32)


def _ids(o, K, t, n):
    """integer ids in [0, n) from a float tensor (Keras takes int32 ids; boundfit's graphs float32 integers)"""
    y = o.mod(o.floor(o.abs(t) * 3.0), float(n))
    return y if K is bf else o.cast(y, "int32")


def _batchless(o, h, y):
    """a result without a batch axis onto every sample"""
    return h[:, :1, :1] * 0.0 + o.cast(y, "float32")


# (name, fn(o, h, K), smooth: in the central differences (no step or kink near the data), in_file: Keras 3.15
# runs it from a .keras file (not: float ids, list arguments JAX wants as arrays or tuples, a shape with None))
SHAPE = [
    ("flip", lambda o, h, K: o.flip(h, 1), 1, 1), ("flip2", lambda o, h, K: o.flip(h, (1, 2)), 1, 1),
    ("fliplr", lambda o, h, K: o.fliplr(h), 1, 1),
    *[(f"rot90_{k}", lambda o, h, K, k=k: o.rot90(h, k, (1, 2)), 1, 0) for k in (1, 2, 3)],
    ("tril", lambda o, h, K: o.tril(h), 1, 1), ("triu", lambda o, h, K: o.triu(h, 1), 1, 1),
    ("diagonal", lambda o, h, K: o.diagonal(h, 1, 1, 2), 1, 1), ("trace", lambda o, h, K: o.trace(h, -1, 1, 2), 1, 1),
    ("hstack", lambda o, h, K: o.hstack([h, h * 2.0]), 1, 1), ("dstack", lambda o, h, K: o.dstack([h, h]), 1, 1),
    ("split", lambda o, h, K: o.split(h, 2, axis=1)[1], 1, 1),
    ("array_split", lambda o, h, K: o.array_split(h, 4, axis=2)[2], 1, 1),
    ("hsplit", lambda o, h, K: o.hsplit(h, [1, 3])[1], 1, 1), ("dsplit", lambda o, h, K: o.dsplit(h, 3)[2], 1, 1),
    ("unstack", lambda o, h, K: o.unstack(h, axis=1)[3], 1, 1),
    ("moveaxis", lambda o, h, K: o.moveaxis(h, 2, 1), 1, 1), ("swapaxes", lambda o, h, K: o.swapaxes(h, 1, 2), 1, 1),
    ("tile", lambda o, h, K: o.tile(h, (1, 1, 2)), 1, 1), ("tile_int", lambda o, h, K: o.tile(h, 2), 1, 1),
    ("repeat", lambda o, h, K: o.repeat(h, 2, axis=1), 1, 1),
    ("repeat_each", lambda o, h, K: o.repeat(h, np.array([1, 2, 0, 1, 1, 3]), axis=2), 1, 0),
    ("roll", lambda o, h, K: o.roll(h, 2, axis=2), 1, 1),
    ("roll2", lambda o, h, K: o.roll(h, (1, -1), axis=(1, 2)), 1, 1),
    ("pad", lambda o, h, K: o.pad(h, ((0, 0), (1, 2), (0, 1)), constant_values=1.5), 1, 1),
    *[(f"pad_{m}", lambda o, h, K, m=m: o.pad(h, ((0, 0), (2, 1), (1, 2)), mode=m), 1, 1)
      for m in ("reflect", "symmetric", "edge", "wrap")],
    ("append", lambda o, h, K: o.append(h, h * 3.0, axis=1), 1, 1),
    ("slice", lambda o, h, K: o.slice(h, (0, 1, 2), (None, 2, 3)) if K is bf else h[:, 1:3, 2:5], 1, 0),
    ("slice_update", lambda o, h, K: o.slice_update(h, (0, 1, 2), h[:, :2, :3] * 2.0), 1, 1),
    ("extract_sequences", lambda o, h, K: o.extract_sequences(h, 3, 2), 1, 1),
    ("broadcast_to", lambda o, h, K: o.broadcast_to(h[:, :1], (None, 4, 6)) if K is bf else
     h[:, :1] + o.zeros_like(h), 1, 0),
    ("get_item", lambda o, h, K: o.get_item(h, (slice(None), 1)), 1, 1),
]
STATS = [
    ("median", lambda o, h, K: o.median(h, axis=1), 1, 1),
    ("quantile", lambda o, h, K: o.quantile(h, 0.3, axis=(2,)), 1, 0),
    ("quantile2", lambda o, h, K: o.quantile(h, 0.7, axis=(1, 2), keepdims=True), 1, 0),
    ("percentile", lambda o, h, K: o.percentile(h, 40.0, axis=1), 1, 1),
    ("ptp", lambda o, h, K: o.ptp(h, axis=2), 1, 1), ("average", lambda o, h, K: o.average(h, axis=1), 1, 1),
    ("average_w", lambda o, h, K: o.average(h, axis=2, weights=A2), 1, 1),
    ("average_tw", lambda o, h, K: o.average(h, axis=1, weights=h * h + 1.0), 1, 1),
    ("diff", lambda o, h, K: o.diff(h, 1, axis=2), 1, 1), ("diff2", lambda o, h, K: o.diff(h, 2, axis=1), 1, 1),
    ("trapezoid", lambda o, h, K: o.trapezoid(h, axis=2), 1, 1),
    ("trapezoid_x", lambda o, h, K: o.trapezoid(h, x=A2.cumsum(), axis=2), 1, 0),
    ("digitize", lambda o, h, K: o.digitize(h, np.array([-1.0, 0.0, 0.5], np.float32)), 0, 1),
    ("searchsorted", lambda o, h, K: o.searchsorted(np.array([-1.0, 0.0, 0.5], np.float32), h, side="right"), 0, 1),
    ("isin", lambda o, h, K: o.isin(o.round(h), np.array([0.0, 1.0], np.float32)), 0, 1),
    ("cdist", lambda o, h, K: o.cdist(h, h * 0.5 + 1.0), 1, 1),
    ("in_top_k", lambda o, h, K: o.cast(o.in_top_k(_ids(o, K, h[:, 0, 0], 6), h[:, 1], 2), "float32"), 0, 0),
]
NAN = [(name, (lambda o, h, K, name=name, ax=ax, kd=kd: getattr(o, name)(h, axis=ax, keepdims=kd)), 1, 1)
       for name, ax, kd in (("nansum", 1, False), ("nanmean", 2, False), ("nanmax", 2, False),
                            ("nanmin", 1, True), ("nanprod", 2, False), ("nanvar", 1, False), ("nanstd", 2, True))] + [
    ("nanargmax", lambda o, h, K: o.nanargmax(h, axis=2), 0, 1),
    ("nanargmin", lambda o, h, K: o.nanargmin(h, axis=1, keepdims=True), 0, 1),
    ("nancumsum", lambda o, h, K: o.nancumsum(h, axis=2), 1, 1),
    ("nancumprod", lambda o, h, K: o.nancumprod(h, axis=1), 1, 1),
]
COMPOSE = [
    ("inner", lambda o, h, K: o.inner(h, A1), 1, 1),
    ("inner2", lambda o, h, K: o.inner(h, np.stack([A1, A2, A1 * A2])), 1, 1),
    ("cross", lambda o, h, K: o.cross(h[:, :, :3], h[:, :, 3:]), 1, 1),
    ("vander", lambda o, h, K: o.vander(h[:, 0, 0], 3), 1, 1),
    ("vander_inc", lambda o, h, K: o.vander(h[:, 1, 1], 4, increasing=True), 1, 1),
    ("ldexp", lambda o, h, K: o.ldexp(h, np.array([1, -2, 0, 3, 1, 2], np.int32)), 1, 1),
    ("select", lambda o, h, K: o.select([o.greater(h, 0.0), o.less(h, -1.0)], [h, h * 2.0], 0.5), 0, 1),
    ("unravel_index", lambda o, h, K: o.stack(o.unravel_index(_ids(o, K, h[:, 0], 6), (2, 3)), axis=1), 0, 1),
    ("allclose", lambda o, h, K: _batchless(o, h, o.allclose(h, h * 1.0000001)), 0, 0),
    ("empty_like", lambda o, h, K: o.empty_like(h) if K is bf else o.zeros_like(h), 1, 0),
    ("isreal", lambda o, h, K: o.cast(o.isreal(h), "float32"), 1, 1),
]
NN = [
    ("glu", lambda o, h, K: o.nn.glu(h), 1, 1), ("glu1", lambda o, h, K: o.glu(h, axis=1), 1, 1),
    ("sparsemax", lambda o, h, K: o.nn.sparsemax(h * 2.0), 0, 1),
    ("batch_normalization", lambda o, h, K: o.nn.batch_normalization(h, A1, A2, axis=-1, offset=A2, scale=A1), 1, 1),
    ("layer_normalization", lambda o, h, K: o.nn.layer_normalization(h, A2, A1), 1, 1),
    ("layer_normalization2", lambda o, h, K: o.layer_normalization(h, axis=(1, 2), epsilon=1e-3), 1, 1),
    ("rms_normalization", lambda o, h, K: o.nn.rms_normalization(h, A2), 1, 1),
    ("binary_crossentropy", lambda o, h, K: o.nn.binary_crossentropy(o.sigmoid(h * 0.5), o.sigmoid(h)), 1, 1),
    ("binary_crossentropy_logits", lambda o, h, K: o.binary_crossentropy(o.sigmoid(h), h, from_logits=True), 1, 1),
    ("categorical_crossentropy", lambda o, h, K: o.nn.categorical_crossentropy(o.softmax(h), o.softmax(h * 2.0)),
     1, 1),
    ("categorical_crossentropy_logits",
     lambda o, h, K: o.categorical_crossentropy(o.softmax(h * 0.5), h, from_logits=True), 1, 1),
    ("sparse_categorical_crossentropy",
     lambda o, h, K: o.nn.sparse_categorical_crossentropy(_ids(o, K, h[:, :, 0], 6), o.softmax(h)), 0, 1),
    ("sparse_categorical_crossentropy_logits",
     lambda o, h, K: o.sparse_categorical_crossentropy(_ids(o, K, h[:, :, 1], 6), h, from_logits=True), 0, 1),
    ("multi_hot", lambda o, h, K: o.nn.multi_hot(_ids(o, K, h[:, 0], 7), 7), 0, 1),
    ("psnr", lambda o, h, K: _batchless(o, h, o.nn.psnr(h, h * 0.5, 2.0)), 1, 0),
    ("dot_product_attention", lambda o, h, K: o.nn.dot_product_attention(
        *[o.reshape(t, (-1, 4, 2, 3)) for t in (h, h * 0.5, h * h)]), 1, 1),
    ("dot_product_attention_causal", lambda o, h, K: o.nn.dot_product_attention(
        *[o.reshape(t, (-1, 4, 2, 3)) for t in (h, h * 0.5, h * h)], is_causal=True, scale=0.3), 1, 1),
    ("dot_product_attention_mask", lambda o, h, K: o.nn.dot_product_attention(
        *[o.reshape(t, (-1, 4, 2, 3)) for t in (h * 0.5, h, h + 1.0)], bias=np.full((2, 4, 4), 0.1, np.float32),
        mask=np.array([[[[1, 0, 1, 1]] * 4, [[1, 1, 0, 1]] * 4]], bool)), 1, 1),
    ("average_pool", lambda o, h, K: o.nn.average_pool(h, (2,), strides=(2,)), 1, 1),
    ("max_pool", lambda o, h, K: o.max_pool(h, 3, strides=1, padding="same"), 1, 1),
]
IMAGE = [
    ("resize_up", lambda o, h, K: o.image.resize(h, (6, 9)), 1, 1),
    ("resize_down", lambda o, h, K: o.image.resize(h, (3, 4)), 1, 1),
    ("resize_nearest", lambda o, h, K: o.image.resize(h, (7, 4), interpolation="nearest"), 1, 1),
    ("extract_patches", lambda o, h, K: o.image.extract_patches(h, 2), 1, 1),
    ("extract_patches_same", lambda o, h, K: o.image.extract_patches(h, (2, 3), strides=(1, 2), padding="same"),
     1, 1),
    ("depth_to_space", lambda o, h, K: o.nn.depth_to_space(o.concatenate([h, h * 2.0], axis=-1), 2), 1, 1),
    ("space_to_depth", lambda o, h, K: o.space_to_depth(h, 2), 1, 1),
    ("max_pool2d", lambda o, h, K: o.nn.max_pool(h, (2, 2), strides=(2, 2)), 1, 1),
    ("average_pool2d", lambda o, h, K: o.average_pool(h, (2, 2), strides=(1, 1), padding="same"), 1, 1),
]
FAMILIES = {"shape": (SHAPE, (4, 6)), "stats": (STATS, (4, 6)), "nan": (NAN, (4, 6)), "compose": (COMPOSE, (4, 6)),
            "nn": (NN, (4, 6)), "image": (IMAGE, (4, 6, 2))}


def family_model(K, family, only=None):
    cases, shape = FAMILIES[family]
    x = K.Input(shape)
    h = shifted(K)()(x)
    return K.Model(x, flat(K, [fn(K.ops, h, K) for name, fn, smooth, in_file in cases if only is None or only(
        smooth, in_file)]))


def family_parts(family, h):
    """the same cases on an array h with boundfit's eager ops"""
    return flat(bf, [fn(bf.ops, h, bf) for _, fn, _, _ in FAMILIES[family][0]])


def data(family, n=B, seed=0):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n,) + FAMILIES[family][1]).astype(np.float32)
    if family == "nan":
        x.reshape(n, -1)[:, ::5] = np.nan    # a NaN in every row and column, never a whole one
    return x


def target(n, seed=5):
    return np.random.default_rng(seed).standard_normal((B, n)).astype(np.float32)


@pytest.fixture(scope="module")
def keras_refs():
    """Keras's outputs and b's gradients for every family, recorded"""
    def compute():
        keras = keras_ref.load()
        cases = {}
        for fam in FAMILIES:
            mk = family_model(keras, fam)
            cases[fam] = (mk, data(fam), target(mk.output_shape[-1]))
        return {f"{k}/{part}": a for k, (out, (g,)) in keras_values_and_grads(cases).items()
                for part, a in (("out", out), ("grad", g))}
    refs = recorded("ops_composed", __file__, compute)
    return {k.split("/")[0]: (refs[k], refs[k.replace("/out", "/grad")]) for k in refs if k.endswith("/out")}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_composed_ops_match_keras_values_gradients_eager_and_plan(family, keras_refs):
    x, mb = data(family), family_model(bf, family)
    y = target(mb.output_shape[-1])
    want, gk = keras_refs[family]
    got = mb.predict(x, batch_size=B, verbose=0)
    close(want, got, rtol=2e-5)
    close(want, family_parts(family, x), rtol=2e-5)           # on arrays: NumPy, Keras's values
    np.testing.assert_array_equal(mb.predict(x, batch_size=B, verbose=0, device="emu"), got)
    mb.compile(optimizer="sgd", loss="mse")
    gb = engine_gradient(mb, x, y)[0]                          # b's (the constants' stay put)
    close(gk, np.nan_to_num(gb), rtol=5e-5)
    assert_plan_equals_arenas(mb, x, y, batch_size=B)


@pytest.mark.parametrize("family", ["shape", "stats", "compose", "nn", "image"])
def test_composed_op_gradients_match_central_differences(family):
    mb = family_model(bf, family, only=lambda smooth, in_file: smooth)
    x = data(family)
    mb.compile(optimizer="sgd", loss="mse")
    consts = range(1, len(mb.get_weights()))                  # positions, masks, tables stay put
    directional_check(mb, x, target(mb.output_shape[-1], seed=7), eps=1e-2, fixed=consts)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_keras_file_of_composed_ops_round_trips_through_boundfit_and_keras(family, tmp_path):
    """every case read back by boundfit; Keras reads the cases it can run (not float ids, lists where JAX wants
    arrays or tuples, a shape with None)"""
    x = data(family)
    for only in (None, lambda smooth, in_file: in_file):
        mb = family_model(bf, family, only=only)
        got = mb.predict(x, batch_size=B, verbose=0)
        path = str(tmp_path / f"{family}{only is None}.keras")
        mb.save(path)
        np.testing.assert_allclose(bf.models.load_model(path).predict(x, batch_size=B, verbose=0), got, rtol=1e-6,
                                   atol=1e-6)
    ref = case(lambda: np.asarray(keras_ref.load().models.load_model(path).predict(x, verbose=0)), files=[path])
    close(ref, got, rtol=2e-5)


def test_quantile_methods_match_keras_on_arrays():
    """lower / higher / midpoint / nearest as jnp.quantile takes them on arrays (Keras 3.15's Quantile node drops
    `method` in a graph and computes "linear")"""
    methods = ("lower", "higher", "midpoint", "nearest")
    x = data("stats")
    ref = case(lambda: [np.asarray(keras_ref.load().ops.quantile(x, 0.7, axis=(1, 2), method=m, keepdims=True))
                        for m in methods])
    inp = bf.Input((4, 6))
    m = bf.Model(inp, [bf.ops.quantile(inp, 0.7, axis=(1, 2), method=k, keepdims=True) for k in methods])
    for r, g, k in zip(ref, m.predict(x, batch_size=B, verbose=0), methods):
        np.testing.assert_allclose(g, r, rtol=1e-6)
        np.testing.assert_allclose(bf.ops.quantile(x, 0.7, axis=(1, 2), method=k, keepdims=True), r, rtol=1e-6)


@pytest.mark.parametrize("op,call", [
    ("flipud", lambda o, h: o.flipud(h)), ("vstack", lambda o, h: o.vstack([h, h])),
    ("vsplit", lambda o, h: o.vsplit(h, 2)), ("ravel", lambda o, h: o.ravel(h)), ("diag", lambda o, h: o.diag(h)),
    ("diagflat", lambda o, h: o.diagflat(h)), ("outer", lambda o, h: o.outer(h, h)),
    ("kron", lambda o, h: o.kron(h, h)), ("vdot", lambda o, h: o.vdot(h, h)),
    ("convert_to_numpy", lambda o, h: o.convert_to_numpy(h)), ("size", lambda o, h: o.size(h)),
    ("inner", lambda o, h: o.inner(h, h)), ("flip", lambda o, h: o.flip(h)),
    ("tile", lambda o, h: o.tile(h, (2, 1, 1))), ("pad", lambda o, h: o.pad(h, ((1, 0), (0, 0), (0, 0)))),
    ("pad", lambda o, h: o.pad(h, 1, mode="mean")), ("roll", lambda o, h: o.roll(h, 1)),
    ("quantile", lambda o, h: o.quantile(h, [0.2, 0.5], axis=1)), ("nansum", lambda o, h: o.nansum(h, axis=0)),
    ("dot_product_attention", lambda o, h: o.nn.dot_product_attention(*[o.reshape(h, (-1, 4, 2, 3))] * 3,
                                                                       flash_attention=True)),
    ("slice", lambda o, h: o.slice(h, (1, 0, 0), (None, 2, 2))),
    ("broadcast_to", lambda o, h: o.broadcast_to(h, (3, 4, 6))),
    ("linspace", lambda o, h: o.linspace(h, 1.0, 3)),
])
def test_composed_ops_that_mix_the_samples_are_refused_by_name(op, call):
    h = bf.Input((4, 6))
    with pytest.raises(bf.ops.OpNotSupportedError, match=rf"keras\.ops\.{op} "):
        call(bf.ops, h)


@pytest.mark.parametrize("name,args", [
    ("full", ((2, 3), 1.5)), ("empty", ((2, 3),)), ("identity", (3,)), ("tri", (3, 4, 1)),
    ("linspace", (0.0, 2.0, 5)), ("logspace", (0.0, 2.0, 5)), ("geomspace", (1.0, 8.0, 4)),
    ("bartlett", (5,)), ("blackman", (5,)), ("hamming", (5,)), ("hanning", (5,)), ("kaiser", (6, 2.5)),
    ("ndim", (np.zeros((2, 3)),)), ("size", (np.zeros((2, 3)),)), ("dtype", (np.zeros(2, np.float32),)),
    ("convert_to_numpy", ([1.0, 2.0],)), ("saturate_cast", (np.array([-300.0, 5.5, 300.0]), "uint8")),
    ("array", ([1.0, 2.0],)), ("empty_like", (np.ones((2, 2), np.float32),)), ("diag", (np.arange(3.0),)),
    ("diagflat", (np.arange(4.0).reshape(2, 2),)), ("outer", (np.arange(3.0), np.arange(2.0))),
    ("kron", (np.eye(2), np.arange(4.0).reshape(2, 2))), ("vdot", (np.arange(3.0), np.arange(3.0) + 1)),
    ("vstack", ([np.ones((2, 2)), np.zeros((1, 2))],)), ("ravel", (np.arange(6.0).reshape(2, 3),)),
    ("flipud", (np.arange(6.0).reshape(3, 2),)), ("vsplit", (np.arange(8.0).reshape(4, 2), 2)),
])
def test_array_ops_match_keras(name, args):
    """ops that make arrays or read them (no symbolic tensor): the values Keras gives (JAX's float32)"""
    def compute():
        out = getattr(keras_ref.load().ops, name)(*args)
        return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)
    ref = case(compute)
    got = getattr(bf.ops, name)(*args)
    for r, g in zip(ref if isinstance(ref, list) else [ref], got if isinstance(got, list) else [got]):
        if name == "dtype":
            assert g == str(r)
            continue
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(r, np.float64), rtol=1e-6, atol=1e-6)
    assert bf.ops.is_tensor(np.zeros(2)) and bf.ops.is_tensor(bf.Input((2,))) and not bf.ops.is_tensor([1.0])
