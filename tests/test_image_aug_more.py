"""RandomErasing and RandomGaussianBlur (layers/erase_blur.py) on
ImageAugmentation, and the image augmentation layers still refused by name.

Pinned against Keras 3 (recorded): given Keras's own transformation
(get_random_transformation of Keras's layer), boundfit's transform_images of
the same images equals Keras's within 1e-6 of the value range; boundfit's own
draws (seeded) have Keras's form: erased rectangles of the drawn sizes, blur
sigmas in range; the identity outside training; in a model the plan holds a
fit and .keras files hold the layers both ways; bad arguments raise naming
the argument."""

import json

import numpy as np
import pytest

import boundfit as bf
from conftest import assert_plan_equals_arenas
from fresh_names import fresh_layer_names  # noqa: F401
from helpers.keras_recorded import case, keras_file
from keras_ref import load

# (id, layer factory (M: keras.layers or boundfit.layers), value range of the images)
CASES = [
    ("erasing", lambda M, **k: M.RandomErasing(factor=0.8, **k), (0, 255)),
    ("erasing_fill", lambda M, **k: M.RandomErasing(scale=(0.1, 0.5), fill_value=0.3, value_range=(0, 1), **k),
     (0, 1)),
    ("blur", lambda M, **k: M.RandomGaussianBlur(factor=0.9, kernel_size=(3, 5), sigma=(0.3, 0.9), **k), (0, 255)),
    ("blur_unit", lambda M, **k: M.RandomGaussianBlur(kernel_size=5, value_range=(0, 1), **k), (0, 1)),
]
IDS = [c[0] for c in CASES]
SHAPE = (9, 11, 3)


def images(vr, n=6, seed=0):
    return np.random.default_rng(seed).uniform(vr[0], vr[1], (n,) + SHAPE).astype(np.float32)


def _plain(v):
    return json.loads(json.dumps(v))


@pytest.fixture(scope="module")
def keras_side():
    """per case: Keras's transformation of the images and its transform_images of them"""
    def compute():
        keras = load()
        out = {}
        for name, make, vr in CASES:
            layer, x = make(keras.layers, seed=3), images(vr)
            t = {k: np.asarray(v) for k, v in layer.get_random_transformation(x, training=True).items()}
            out[name] = dict(t=t, y=np.asarray(layer.transform_images(x, t, training=True)))
        return out
    return case(compute, "keras_side")


@pytest.mark.parametrize("name, make, vr", CASES, ids=IDS)
def test_transform_images_equals_keras_given_its_transformation(keras_side, name, make, vr):
    k = keras_side[name]
    y = make(bf.layers, seed=3).transform_images(images(vr), k["t"])
    np.testing.assert_allclose(y, k["y"], atol=1e-6 * (vr[1] - vr[0]), rtol=0)
    assert not np.allclose(k["y"], images(vr))   # (the transformation changes something)


@pytest.mark.parametrize("name, make, vr", CASES, ids=IDS)
def test_outside_training_each_is_the_identity(name, make, vr):
    x = images(vr)
    np.testing.assert_array_equal(make(bf.layers)(x), x)


def test_erasing_draws_rectangles_of_the_drawn_scale_filled_in_range():
    x = images((0, 1), n=300)
    layer = bf.layers.RandomErasing(factor=0.5, scale=(0.1, 0.5), value_range=(0, 1), seed=5)
    t = layer.get_random_transformation(x)
    assert 0.15 < t["apply_erasing"].mean() < 0.35                    # P = E[U(0, 0.5)]
    rows, cols = t["batch_masks"][..., 0].any(axis=2), t["batch_masks"][..., 0].any(axis=1)
    for m, r, c in zip(t["batch_masks"][..., 0], rows, cols):
        assert (m == np.outer(r, c)).all()                             # a rectangle
        hr, wc = np.flatnonzero(r), np.flatnonzero(c)
        assert np.all(np.diff(hr) == 1) and np.all(np.diff(wc) == 1)
        assert np.sqrt(0.1) * 9 - 1 <= len(hr) <= np.sqrt(0.5) * 9 + 1  # sides sqrt(U[scale]) of the image's
        assert np.sqrt(0.1) * 11 - 1 <= len(wc) <= np.sqrt(0.5) * 11 + 1
    assert t["fill_value"].min() >= 0 and t["fill_value"].max() <= 1 and t["fill_value"].std() > 0.2
    y = layer.transform_images(x, t)
    keep = ~(t["batch_masks"] & t["apply_erasing"][:, None, None, None])
    np.testing.assert_array_equal(y[keep], x[keep])
    np.testing.assert_array_equal(y[~keep], t["fill_value"][~keep])


def test_blur_draws_sigmas_in_range_per_image_and_takes_a_batch_pair():
    x = images((0, 255), n=200)
    layer = bf.layers.RandomGaussianBlur(factor=(0.2, 0.6), sigma=(0.4, 0.8), seed=4)
    t = layer.get_random_transformation(x)
    assert t["blur_factor"].shape == (200, 2) and 0.25 < t["should_apply_blur"].mean() < 0.55
    assert t["blur_factor"].min() >= 0.4 and t["blur_factor"].max() <= 0.8 + 1e-5
    one = dict(t, blur_factor=t["blur_factor"][0])   # Keras's form: one pair for the batch
    y = layer.transform_images(x[:3], dict(one, should_apply_blur=np.ones(3, bool)))
    np.testing.assert_allclose(y, layer.transform_images(x[:3], dict(
        should_apply_blur=np.ones(3, bool), blur_factor=np.tile(t["blur_factor"][:1], (3, 1)))), atol=0)


def _model(M, cases):
    return M.Sequential([M.Input(SHAPE)] + [make(M.layers, name=name) for name, make, _ in cases]
                        + [M.layers.Conv2D(2, 3), M.layers.Flatten(), M.layers.Dense(2)])


UNIT = [c for c in CASES if c[2] == (0, 1)]


def test_the_plan_holds_a_fit_through_the_layers():
    m = _model(bf, UNIT)
    m.compile(optimizer="adam", loss="mse")
    r = np.random.default_rng(8)
    assert_plan_equals_arenas(m, images((0, 1), n=16), r.standard_normal((16, 2)).astype(np.float32), batch_size=8)
    assert all(np.isfinite(w).all() for w in m.get_weights())
    assert len(m.get_weights()) == 4   # the conv's and the dense's: the layers' grids are no weights


def test_keras_files_hold_the_layers_both_ways(tmp_path):
    x = images((0, 1), n=4)

    def save(p):
        km = _model(load(), UNIT)
        km.set_weights([(np.random.default_rng(2).standard_normal(w.shape) * 0.3).astype(np.float32)
                        for w in km.get_weights()])
        km.save(p)
        return dict(w=km.get_weights(), out=km.predict(x, verbose=0),
                    layers={n: [type(km.get_layer(n)).__name__, _plain(km.get_layer(n).get_config())]
                            for n, _, _ in UNIT})
    k = keras_file(tmp_path / "theirs.keras", save)
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["out"], atol=1e-4)
    bm = _model(bf, UNIT)
    bm.set_weights(k["w"])
    bm.save(tmp_path / "ours.keras")

    def opened():
        km = load().models.load_model(tmp_path / "ours.keras")
        return {n: [type(km.get_layer(n)).__name__, _plain(km.get_layer(n).get_config())] for n, _, _ in UNIT}
    theirs = case(opened, files=[tmp_path / "ours.keras"])
    for n, _, _ in UNIT:
        assert type(ours.get_layer(n)).__name__ == k["layers"][n][0]
        assert theirs[n] == k["layers"][n]


@pytest.mark.parametrize("make, match", [
    (lambda: bf.layers.RandomErasing(factor=1.5), "factor"),
    (lambda: bf.layers.RandomErasing(scale=(0.1, 0.2, 0.3)), "scale"),
    (lambda: bf.layers.RandomErasing(fill_value="red"), "fill_value"),
    (lambda: bf.layers.RandomErasing(value_range=5), "value_range"),
    (lambda: bf.layers.RandomGaussianBlur(kernel_size=4), "kernel_size"),
    (lambda: bf.layers.RandomGaussianBlur(sigma=2.0), "sigma"),
    (lambda: bf.layers.RandomGaussianBlur(seed=-1), "seed"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("name, says", [
    ("RandAugment", "Compose boundfit's augmentation layers"), ("AugMix", "Compose boundfit's augmentation layers"),
    ("ContrastLimitedAdaptiveHistogramEqualization", "histograms.*AutoContrast"),
("RandomPerspective", "warp.*RandomRotation"),
    ("RandomElasticTransform", "warp.*RandomRotation"),
])
def test_layers_boundfit_cannot_run_are_refused_by_name_saying_what_to_use(name, says):
    cls = getattr(bf.layers, name)
    assert cls._boundfit_refused
    with pytest.raises(NotImplementedError, match=rf"keras.layers.{name} is not supported by boundfit: .*{says}"):
        cls()
