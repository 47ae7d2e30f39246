"""Keras 3 layers boundfit composes from the engine's primitives (issue 34):
UnitNormalization, RMSNormalization, GroupNormalization (layers/norms.py),
SpatialDropout1D / 2D, AlphaDropout (layers/spatial_dropout.py), Cropping1D /
2D, CenterCrop, ZeroPadding1D, UpSampling1D (layers/cropping.py),
RandomBrightness, RandomGrayscale (layers/color.py), Identity and
ActivityRegularization (layers/core.py).

Pinned against Keras 3, all cases as branches of one Functional model (one
compiled Keras step for all), each branch input -> Dense -> the layer ->
Dense: the same weights give the same predictions, two epochs of SGD the
same losses (ActivityRegularization's penalty included) and weights (so the
gradients through each layer); the weighted normalizations against central
differences too; .keras files both ways (Keras opens boundfit's: Keras's
class, config and weights; boundfit opens Keras's and predicts as Keras).
The random layers: the identity outside fit, and in fit whole channels
dropped (SpatialDropout), SELU's mean and variance kept (AlphaDropout), one
clipped delta per image (RandomBrightness), a factor of the images gray
(RandomGrayscale); the plan holds a fit through them; bad arguments and
inputs raise naming the fault (Resizing: tests/test_resizing.py)."""

import os
import tempfile

import numpy as np
import pytest

import boundfit as bf
from conftest import assert_plan_equals_arenas, directional_check
from helpers.keras_compare import close
from helpers.keras_recorded import case, keras_file, recorded
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


# (id, per-sample input shape, layer factory (M: keras.layers or boundfit.layers))
CASES = [
    ("unit_norm", (5, 4), lambda M, **k: M.UnitNormalization(**k)),
    ("unit_norm_axes", (5, 4), lambda M, **k: M.UnitNormalization(axis=[1, 2], **k)),
    ("rms_norm", (5, 4), lambda M, **k: M.RMSNormalization(epsilon=1e-3, **k)),
    ("rms_norm_2axes", (3, 4, 2), lambda M, **k: M.RMSNormalization(axis=[-2, -1], **k)),
    ("group_norm", (3, 3, 4), lambda M, **k: M.GroupNormalization(groups=2, **k)),
    ("instance_norm", (5, 4), lambda M, **k: M.GroupNormalization(groups=-1, center=False, **k)),
    ("identity", (5, 4), lambda M, **k: M.Identity(**k)),
    ("activity_regularization", (5, 4), lambda M, **k: M.ActivityRegularization(l1=0.01, l2=0.1, **k)),
    ("cropping1d", (6, 4), lambda M, **k: M.Cropping1D((1, 2), **k)),
    ("cropping2d", (5, 6, 4), lambda M, **k: M.Cropping2D(((1, 0), (2, 1)), **k)),
    ("center_crop", (5, 6, 4), lambda M, **k: M.CenterCrop(2, 3, **k)),
    ("zero_padding1d", (5, 4), lambda M, **k: M.ZeroPadding1D((2, 1), **k)),
    ("up_sampling1d", (5, 4), lambda M, **k: M.UpSampling1D(3, **k)),
]
# random in fit, the identity otherwise: their draws are checked below, their files here (3 channels: RGB)
DROPOUTS = [
    ("spatial_dropout1d", (5, 4), lambda M, **k: M.SpatialDropout1D(0.5, seed=4, **k)),
    ("spatial_dropout2d", (3, 3, 4), lambda M, **k: M.SpatialDropout2D(0.5, **k)),
    ("alpha_dropout", (5, 4), lambda M, **k: M.AlphaDropout(0.3, **k)),
    ("random_brightness", (3, 3, 4), lambda M, **k: M.RandomBrightness((-0.1, 0.3), value_range=(-1, 1), **k)),
    ("random_grayscale", (3, 3, 4), lambda M, **k: M.RandomGrayscale(0.4, seed=2, **k)),
]
SHAPES = list(dict.fromkeys(c[1] for c in CASES))


def model(M, shape, make):
    """Input -> Dense -> the layer -> Dense, Keras's or boundfit's (M: the keras or boundfit module)"""
    return M.Sequential([M.Input(shape), M.layers.Dense(4), make(M.layers), M.layers.Dense(3)])


def branches(M, cases, width=4):
    """every case as one branch of one Functional model (one compiled Keras step for all): the input of its
    shape -> Dense -> the layer -> Flatten -> Dense, the branches concatenated (a model has at most 8 inputs and
    8 outputs: one per shape, one output whose columns 3k:3k+3 are case k's)"""
    ins = {shape: M.Input(shape) for shape in dict.fromkeys(c[1] for c in cases)}
    outs = [M.layers.Dense(3, name=f"out_{name}")(M.layers.Flatten()(make(M.layers, name=name)(
        M.layers.Dense(width, name=f"dense_{name}")(ins[shape])))) for name, shape, make in cases]
    return M.Model(list(ins.values()), M.layers.Concatenate()(outs))


def batch(shape, n=6, seed=0):
    r = np.random.default_rng(seed)
    return r.standard_normal((n,) + shape).astype(np.float32)


def _layers(km, cases, parts=("dense_{}", "out_{}", "{}")):
    """Keras's side of each case's layers: {name: (class, config, {layer: weights})}"""
    return {name: (type(km.get_layer(name)).__name__, km.get_layer(name).get_config(),
                   {p.format(name): km.get_layer(p.format(name)).get_weights() for p in parts})
            for name, _, _ in cases}


def _saved(m):
    """the bytes of m's .keras file"""
    with tempfile.TemporaryDirectory() as d:
        m.save(os.path.join(d, "m.keras"))
        return np.frombuffer(open(os.path.join(d, "m.keras"), "rb").read(), np.uint8)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same weights and batches in Keras (recorded for the module) and boundfit: predictions, then two
    epochs of SGD with momentum (two batches each: losses, weights), then each one's .keras file opened by the
    other (Keras opening boundfit's: in the test, recorded by the file's contents)"""
    _counters.clear()   # (a module fixture runs before the test's _names_from_zero)
    xs = [batch(shape, n=8, seed=k) for k, shape in enumerate(SHAPES)]
    y = np.random.default_rng(50).standard_normal((8, 3 * len(CASES))).astype(np.float32)

    def compute():
        keras = load()
        km = branches(keras, CASES)
        w0 = [(np.random.default_rng(1).standard_normal(w.shape) * 0.5).astype(np.float32)
              for w in km.get_weights()]
        km.set_weights(w0)
        out = dict(w0=w0, keras_out=km.predict(xs, verbose=0))
        km.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
        out["keras_loss"] = km.fit(xs, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
        return dict(out, layers=_layers(km, CASES), file=_saved(km), keras_trained=km.predict(xs, verbose=0))
    k = recorded("catalogue_layers", __file__, compute)
    bm = branches(bf, CASES)
    bm.set_weights(k["w0"])
    out = dict(k, out=bm.predict(xs, verbose=0))
    bm.compile(optimizer=bf.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    out["loss"] = bm.fit(xs, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    d = tmp_path_factory.mktemp("files")
    bm.save(d / "ours.keras")
    (d / "theirs.keras").write_bytes(k["file"].tobytes())
    ours = bf.models.load_model(d / "theirs.keras")
    return dict(out, bm=bm, ours_file=d / "ours.keras", ours=ours, ours_trained=ours.predict(xs, verbose=0))


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_layer_outputs_and_training_match_keras(runs, k):
    """predictions, then the branch's weights after two epochs (the gradients through the layer)"""
    name = CASES[k][0]
    close(runs["keras_out"][:, 3 * k:3 * k + 3], runs["out"][:, 3 * k:3 * k + 3], 2e-5)
    np.testing.assert_allclose(runs["loss"], runs["keras_loss"], rtol=1e-5)
    bm = runs["bm"]
    for layer, weights in runs["layers"][name][2].items():
        lb = bm.get_layer(layer)
        assert len(weights) == len(lb.get_weights())
        for a, b in zip(weights, lb.get_weights()):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_keras_files_hold_the_layer_both_ways(runs, k):
    """Keras opens boundfit's file: the layer as Keras's class with Keras's config and boundfit's trained
    weights; boundfit opens Keras's and predicts as Keras"""
    name = CASES[k][0]
    want_class, want_config, _ = runs["layers"][name]
    ours = runs["bm"].get_layer(name)

    def opened():   # Keras opening boundfit's file, recorded by its contents
        got = load().models.load_model(runs["ours_file"]).get_layer(name)
        return type(got).__name__, got.get_config(), got.get_weights()
    got_class, got_config, got_weights = case(opened, files=[runs["ours_file"]])
    assert got_class == want_class
    assert got_config == want_config
    for a, b in zip(got_weights, ours.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert type(runs["ours"].get_layer(name)).__name__ == want_class
    close(runs["keras_trained"][:, 3 * k:3 * k + 3], runs["ours_trained"][:, 3 * k:3 * k + 3], 2e-5)


def test_dropout_layers_keras_files_both_ways_and_the_identity_in_predict(tmp_path):
    def save(p):   # Keras's model with the weights, recorded with its file
        km = branches(load(), DROPOUTS, 3)
        w = [np.random.default_rng(2).standard_normal(v.shape).astype(np.float32) for v in km.get_weights()]
        km.set_weights(w)
        km.save(p)
        return dict(w=w, layers=_layers(km, DROPOUTS, ()))
    k = keras_file(tmp_path / "theirs.keras", save)
    bm = branches(bf, DROPOUTS, 3)
    plain = branches(bf, [(n, s, lambda M, **k: M.Identity(**k)) for n, s, _ in DROPOUTS], 3)
    for m in (bm, plain):
        m.set_weights(k["w"])
    xs = [batch(shape, seed=5) for shape in dict.fromkeys(c[1] for c in DROPOUTS)]
    want = plain.predict(xs, verbose=0)
    np.testing.assert_array_equal(bm.predict(xs, verbose=0), want)
    bm.save(tmp_path / "ours.keras")

    def opened():   # Keras opening boundfit's file, recorded by its contents
        return _layers(load().models.load_model(tmp_path / "ours.keras"), DROPOUTS, ())
    theirs, ours = case(opened, files=[tmp_path / "ours.keras"]), bf.models.load_model(tmp_path / "theirs.keras")
    for name, _, _ in DROPOUTS:
        want_class, want_config, _ = k["layers"][name]
        got_class, got_config, _ = theirs[name]
        assert got_class == want_class
        assert got_config == want_config
        assert type(ours.get_layer(name)).__name__ == want_class
    np.testing.assert_array_equal(ours.predict(xs, verbose=0), want)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in ("rms_norm", "group_norm", "unit_norm_axes")],
                         ids=["rms_norm", "group_norm", "unit_norm_axes"])
def test_composed_normalizations_match_central_differences(case):
    _, shape, make = case
    m = model(bf, shape, make)
    m.compile(optimizer="sgd", loss="mse")
    x = batch(shape, seed=3)
    y = np.random.default_rng(4).standard_normal((len(x),) + m.output_shape[1:]).astype(np.float32)
    directional_check(m, x, y)


class _InFit(bf.layers.Layer):
    """calls its layer with training=True (inside a call(), a given mode is fixed): predict runs fit's draws"""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def call(self, x):
        return self.inner(x, training=True)


def _in_fit(layer, shape):
    inp = bf.Input(shape)
    return bf.Model(inp, _InFit(layer)(inp))


def test_spatial_dropout_drops_whole_channels_scaled_in_fit():
    for layer, shape in ((bf.layers.SpatialDropout1D(0.5, seed=3), (5, 4)),
                         (bf.layers.SpatialDropout2D(0.25), (3, 2, 4))):
        x = np.abs(batch(shape, n=200)) + 0.5
        y = _in_fit(layer, shape).predict(x, batch_size=200, verbose=0)
        keep = (y != 0).reshape(200, -1, 4)
        assert (keep == keep[:, :1]).all()                    # a channel is kept or dropped at every step / pixel
        np.testing.assert_allclose(y[y != 0], x[y != 0] / (1 - layer.rate), rtol=1e-6)
        assert abs(1 - keep[:, 0].mean() - layer.rate) < 0.06   # 800 channels drawn


def test_random_brightness_shifts_each_image_by_one_clipped_delta_in_fit():
    layer = bf.layers.RandomBrightness((-0.1, 0.3), value_range=(-1.0, 1.0), seed=5)
    x = np.random.default_rng(3).uniform(-1, 1, (300, 4, 5, 3)).astype(np.float32)
    y = _in_fit(layer, (4, 5, 3)).predict(x, batch_size=300, verbose=0)
    inside = (y > -1) & (y < 1)                          # not clipped
    delta = np.where(inside, y - x, np.nan).reshape(300, -1)
    d = np.nanmedian(delta, axis=1)
    ok = ~np.isnan(delta)
    np.testing.assert_allclose(delta[ok], np.broadcast_to(d[:, None], delta.shape)[ok], atol=1e-6)   # one per image
    np.testing.assert_allclose(y, np.clip(x + d[:, None, None, None], -1, 1), atol=1e-6)
    assert d.min() >= -0.2 - 1e-6 and d.max() <= 0.6 + 1e-6           # U[-0.1, 0.3) * (1 - (-1))
    assert d.min() < -0.1 and d.max() > 0.5                           # 300 draws spread over the range


def test_random_grayscale_turns_a_factor_of_the_images_gray_in_fit():
    x = np.random.default_rng(4).uniform(0, 255, (400, 3, 4, 3)).astype(np.float32)
    y = _in_fit(bf.layers.RandomGrayscale(0.4, seed=1), (3, 4, 3)).predict(x, batch_size=400, verbose=0)
    gray = (x @ np.array([0.2989, 0.5870, 0.1140], np.float32))[..., None]
    turned = np.abs(y - gray).reshape(400, -1).max(1) < 1e-3
    np.testing.assert_array_equal(y[~turned], x[~turned])
    np.testing.assert_allclose(y[turned], np.broadcast_to(gray, x.shape)[turned], atol=1e-3)
    assert abs(turned.mean() - 0.4) < 0.08                           # 400 draws


def test_alpha_dropout_keeps_selu_mean_and_variance_in_fit():
    rate, alpha_p = 0.3, -1.6732632423543772 * 1.0507009873554805
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * rate
    x = batch((50, 40), n=20)
    y = _in_fit(bf.layers.AlphaDropout(rate, seed=1), (50, 40)).predict(x, batch_size=20, verbose=0)
    kept = np.isclose(y, a * x + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y[~kept], a * alpha_p + b, rtol=1e-6)
    assert abs(1 - kept.mean() - rate) < 0.02          # 40000 draws
    assert abs(y.mean()) < 0.03 and abs(y.var() - 1) < 0.05


@pytest.mark.parametrize("make", [lambda M: M.SpatialDropout1D(0.5), lambda M: M.AlphaDropout(0.3)],
                         ids=["spatial_dropout1d", "alpha_dropout"])
def test_dropout_family_draws_in_fit_and_is_the_identity_in_predict(make):
    """one fit step: the loss is fit's (dropout on) and the first Dense gets gradients; predict is unchanged by
    the draws (the identity), so it equals a model without the layer"""
    m = model(bf, (5, 4), make)
    plain = bf.Sequential([bf.Input((5, 4)), bf.layers.Dense(4), bf.layers.Dense(3)])
    w = [np.random.default_rng(2).standard_normal(v.shape).astype(np.float32) for v in m.get_weights()]
    m.set_weights(w)
    plain.set_weights(w)
    x = batch((5, 4), n=32)
    np.testing.assert_array_equal(m.predict(x, verbose=0), plain.predict(x, verbose=0))
    y = np.zeros((32, 5, 3), np.float32)
    m.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
    plain.compile(optimizer=bf.optimizers.SGD(0.1), loss="mse")
    lm = m.fit(x, y, batch_size=32, epochs=1, verbose=0).history["loss"][0]
    lp = plain.fit(x, y, batch_size=32, epochs=1, verbose=0).history["loss"][0]
    assert np.isfinite(lm) and lm != lp                  # fit ran the draws
    assert all(np.isfinite(v).all() for v in m.get_weights())
    assert not np.array_equal(m.get_weights()[0], w[0])


def test_the_plan_holds_a_fit_through_the_composed_layers():
    L = bf.layers
    m = bf.Sequential([bf.Input((7, 6, 3)), L.RandomBrightness(0.2), L.RandomGrayscale(0.5), L.Conv2D(4, 3),
                       L.GroupNormalization(2), L.SpatialDropout2D(0.3), L.Cropping2D(1), L.Reshape((6, 4)),
                       L.RMSNormalization(), L.UpSampling1D(2), L.ZeroPadding1D(1), L.AlphaDropout(0.2),
                       L.UnitNormalization(), L.Flatten(), L.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    r = np.random.default_rng(8)
    assert_plan_equals_arenas(m, r.uniform(0, 255, (16, 7, 6, 3)).astype(np.float32),
                              r.standard_normal((16, 2)).astype(np.float32), batch_size=8)


@pytest.mark.parametrize("make, match", [
    (lambda: bf.layers.GroupNormalization(groups=0), "groups"),
    (lambda: bf.layers.RMSNormalization(epsilon=0), "epsilon"),
    (lambda: bf.layers.UnitNormalization(axis="last"), "axis"),
    (lambda: bf.layers.SpatialDropout1D(1.0), "rate"),
    (lambda: bf.layers.AlphaDropout(0.2, noise_shape=[0]), "noise_shape"),
    (lambda: bf.layers.Cropping1D(-1), "cropping"),
    (lambda: bf.layers.Cropping2D(((1, 2, 3), 1)), "cropping"),
    (lambda: bf.layers.ZeroPadding1D("same"), "padding"),
    (lambda: bf.layers.UpSampling1D(0), "size"),
    (lambda: bf.layers.CenterCrop(0, 2), "height"),
    (lambda: bf.layers.ActivityRegularization(l1=-1.0), "l1"),
    (lambda: bf.layers.RandomBrightness(1.5), "factor"),
    (lambda: bf.layers.RandomBrightness(0.2, value_range=(1, 0)), "value_range"),
    (lambda: bf.layers.RandomGrayscale(2.0), "factor"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


@pytest.mark.parametrize("make, shape, match", [
    (lambda: bf.layers.GroupNormalization(groups=3), (5, 4), "groups=3 must divide"),
    (lambda: bf.layers.GroupNormalization(axis=1), (5, 4), "axis"),
    (lambda: bf.layers.RMSNormalization(axis=1), (5, 4), "axis"),
    (lambda: bf.layers.Cropping1D((3, 3)), (5, 4), "cropping"),
    (lambda: bf.layers.CenterCrop(6, 2), (5, 6, 4), "smart_resize"),
    (lambda: bf.layers.SpatialDropout2D(0.5), (5, 4), "4 axes"),
    (lambda: bf.layers.UpSampling1D(2), (5, 4, 3), "3 axes"),
    (lambda: bf.layers.RandomGrayscale(), (5, 4, 2), "1 or 3 channels"),
    (lambda: bf.layers.RandomBrightness(0.1), (5, 4), "images"),
])
def test_inputs_a_layer_cannot_take_raise_at_the_call(make, shape, match):
    with pytest.raises(ValueError, match=match):
        make()(bf.Input(shape))
