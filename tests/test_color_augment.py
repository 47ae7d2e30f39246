"""Keras 3's color augmentation layers composed on ImageAugmentation
(layers/image_aug.py, color_aug.py): RandomInvert, Solarization,
RandomPosterization, RandomColorDegeneration, AutoContrast, RandomSaturation,
RandomHue, RandomSharpness, RandomColorJitter.

Pinned against Keras 3 (recorded): given Keras's own transformation
(get_random_transformation of Keras's layer), boundfit's transform_images of
the same images equals Keras's; boundfit's draws (its own numbers) have
Keras's ranges and means (fixed seeds: deterministic); outside training each
is the identity where Keras's is (AutoContrast applies, as Keras's); in a
model the plan holds a fit; .keras files both ways; bad arguments raise
naming the argument (the layers boundfit cannot run: tests/test_image_aug_more.py)."""

import json

import numpy as np
import pytest

import boundfit as bf
from conftest import assert_plan_equals_arenas
from fresh_names import fresh_layer_names  # noqa: F401
from helpers.keras_recorded import case, keras_file, recorded
from keras_ref import load

# (id, layer factory (M: keras.layers or boundfit.layers), value range of the images, tolerance)
CASES = [
    ("invert", lambda M, **k: M.RandomInvert(factor=0.7, **k), (0, 255), 1e-4),
    ("invert_unit", lambda M, **k: M.RandomInvert(value_range=(0, 1), **k), (0, 1), 1e-6),
    ("solarization", lambda M, **k: M.Solarization(addition_factor=(0.1, 0.3), threshold_factor=(0.3, 0.6),
                                                   value_range=(0, 1), **k), (0, 1), 1e-5),
    ("posterization", lambda M, **k: M.RandomPosterization((2, 6), **k), (0, 255), 1e-4),
    ("degeneration", lambda M, **k: M.RandomColorDegeneration(0.8, **k), (0, 255), 1e-3),
    ("auto_contrast", lambda M, seed=None, **k: M.AutoContrast(value_range=(0, 1), **k), (0, 1), 1e-5),
    ("saturation", lambda M, **k: M.RandomSaturation(0.6, **k), (0, 255), 1e-3),
    ("hue", lambda M, **k: M.RandomHue(0.8, value_range=(0, 1), **k), (0, 1), 1e-5),
    ("sharpness", lambda M, **k: M.RandomSharpness(0.7, **k), (0, 255), 1e-3),
]
SHAPE = (5, 6, 3)
N_DRAWS = 2000


def images(vr, n=4, seed=0):
    """n images in vr, the last with a flat channel (AutoContrast's 0 / 0)"""
    x = np.random.default_rng(seed).uniform(vr[0], vr[1], (n,) + SHAPE).astype(np.float32)
    x[-1, ..., 1] = 0.5 * (vr[0] + vr[1])
    return x


def _plain(v):
    """a config as JSON has it (tuples as lists)"""
    return json.loads(json.dumps(v))


@pytest.fixture(scope="module")
def keras_side():
    """per case: Keras's transformation of the images, its transform_images of them, its call outside training,
    its config, and its draws for N_DRAWS 1x1 images"""
    def compute():
        keras = load()
        out = {}
        for name, make, vr, _ in CASES:
            layer, x = make(keras.layers, seed=3), images(vr)
            t = layer.get_random_transformation(x, training=True)
            t = None if t is None else {k: np.asarray(v) for k, v in t.items()}
            draws = layer.get_random_transformation(np.zeros((N_DRAWS, 1, 1, 3), np.float32), training=True)
            out[name] = dict(t=t, y=np.asarray(layer.transform_images(x, t, training=True)),
                             inference=np.asarray(layer(x, training=False)), config=_plain(layer.get_config()),
                             draws=None if draws is None else {k: np.asarray(v) for k, v in draws.items()})
        return out
    return recorded("color_augment", __file__, compute)


@pytest.mark.parametrize("name, make, vr, tol", CASES, ids=[c[0] for c in CASES])
def test_transform_images_equals_keras_given_its_transformation(keras_side, name, make, vr, tol):
    k = keras_side[name]
    y = make(bf.layers, seed=3).transform_images(images(vr), k["t"])
    np.testing.assert_allclose(y, k["y"], atol=tol * (vr[1] - vr[0]), rtol=0)


@pytest.mark.parametrize("name, make, vr, tol", CASES, ids=[c[0] for c in CASES])
def test_outside_training_each_is_what_keras_computes(keras_side, name, make, vr, tol):
    """the identity (AutoContrast applies, as Keras's), in predict and in a call on arrays"""
    layer, x = make(bf.layers), images(vr)
    np.testing.assert_allclose(layer(x), keras_side[name]["inference"], atol=tol * (vr[1] - vr[0]), rtol=0)
    inp = bf.Input(SHAPE)
    np.testing.assert_allclose(bf.Model(inp, layer(inp)).predict(x, verbose=0), keras_side[name]["inference"],
                               atol=tol * (vr[1] - vr[0]), rtol=0)


def _bounds(name, t):
    """{entry: (low, high, mean)} of the distribution Keras's arguments give (CASES)"""
    return {"invert": {"apply_inversion": (0, 1, 0.35)},                      # P = E[U(0, 0.7)]
            "invert_unit": {"apply_inversion": (0, 1, 0.5)},
            "solarization": {"additions": (0.1, 0.3 * 255, (0.1 + 76.5) / 2),  # Keras's minval is not scaled
                             "thresholds": (0.3, 0.6 * 255, (0.3 + 153) / 2)},
            "posterization": {"shift_factor": (3, 6, 4.5)},                    # 8 - randint(2, 6)
            "degeneration": {"factor": (-0.8, 0.8, 0.0)},
            "saturation": {"factor": (-0.6 / 1.6, 0.6 / 0.4, None)},           # f / (1 - f), f ~ U(-0.6, 0.6)
            "hue": {"factor": (-0.4, 0.4, 0.0)},                               # +-U(0, 0.8) / 2
            "sharpness": {"factor": (0.0, 0.7, 0.35)}}.get(name, {})


@pytest.mark.parametrize("name, make, vr, tol", [c for c in CASES if c[0] != "auto_contrast"],
                         ids=[c[0] for c in CASES if c[0] != "auto_contrast"])
def test_draws_have_keras_ranges_and_means(keras_side, name, make, vr, tol):
    """boundfit's draws (seeded: the same numbers every run) and Keras's recorded ones: in the bounds Keras's
    arguments give, with their mean within 4 standard errors of the distribution's"""
    ours = make(bf.layers, seed=11).get_random_transformation(np.zeros((N_DRAWS, 1, 1, 3), np.float32))
    assert sorted(ours) == sorted(keras_side[name]["draws"])
    for key, (lo, hi, mean) in _bounds(name, ours).items():
        for drawn in (ours[key], keras_side[name]["draws"][key]):
            d = np.asarray(drawn, np.float64).ravel()
            assert d.shape == (N_DRAWS,)
            assert lo - 1e-6 <= d.min() and d.max() <= hi + 1e-6
            assert d.max() - d.min() > 0.8 * (hi - lo)                      # spread over the range
            if mean is not None:
                assert abs(d.mean() - mean) < 4 * (hi - lo) / np.sqrt(12 * N_DRAWS) + 1e-9
    if name == "posterization":
        assert set(np.unique(ours["shift_factor"])) == {3, 4, 5, 6}
    if name == "hue":
        assert 0.45 < (ours["factor"] < 0).mean() < 0.55                  # the fair coin's sign


def test_draws_per_call_are_new_and_a_given_seed_repeats():
    layer, x = bf.layers.RandomSharpness(0.5), np.zeros((50, 1, 1, 3), np.float32)
    a, b = layer.get_random_transformation(x)["factor"], layer.get_random_transformation(x)["factor"]
    assert not np.array_equal(a, b)
    c, d = (layer.get_random_transformation(x, seed=7)["factor"] for _ in range(2))
    np.testing.assert_array_equal(c, d)


def test_in_fit_each_image_is_transformed_by_one_draw():
    """RandomInvert in a call with training=True: each image whole inverted or unchanged, about 35% inverted"""
    x = images((0, 255), n=400)
    y = bf.layers.RandomInvert(factor=0.7, seed=2)(x, training=True)
    inv = np.all(np.isclose(y, 255 - x, atol=1e-4), axis=(1, 2, 3))
    same = np.all(y == x, axis=(1, 2, 3))
    assert (inv | same).all() and 0.25 < inv.mean() < 0.45


def test_color_jitter_applies_its_parts_in_fit_only():
    x = images((0, 255), n=8)
    jitter = bf.layers.RandomColorJitter(brightness_factor=0.2, contrast_factor=0.3, saturation_factor=0.4,
                                         hue_factor=0.2, seed=1)
    np.testing.assert_array_equal(jitter(x), x)
    y = jitter(x, training=True)
    assert y.shape == x.shape and not np.allclose(y, x) and y.min() >= 0 and y.max() <= 255


def _model(M, cases):
    return M.Sequential([M.Input(SHAPE)] + [make(M.layers, name=name) for name, make, _, _ in cases]
                        + [M.layers.Conv2D(2, 3), M.layers.Flatten(), M.layers.Dense(2)])


UNIT = [c for c in CASES if c[2] == (0, 1)]   # the layers of one model: images in [0, 1]


def test_the_plan_holds_a_fit_through_the_layers():
    m = _model(bf, UNIT + [("jitter", lambda M, **k: M.RandomColorJitter(
        value_range=(0, 1), brightness_factor=0.1, contrast_factor=0.2, saturation_factor=0.3, hue_factor=0.1,
        **k), None, None)])
    m.compile(optimizer="adam", loss="mse")
    r = np.random.default_rng(8)
    assert_plan_equals_arenas(m, images((0, 1), n=16), r.standard_normal((16, 2)).astype(np.float32),
                              batch_size=8)
    assert all(np.isfinite(w).all() for w in m.get_weights())


def test_keras_files_hold_the_layers_both_ways(tmp_path):
    x = images((0, 1), n=4)

    def save(p):   # Keras's model, recorded with its file
        km = _model(load(), UNIT)
        km.set_weights([(np.random.default_rng(2).standard_normal(w.shape) * 0.3).astype(np.float32)
                        for w in km.get_weights()])
        km.save(p)
        return dict(w=km.get_weights(), out=km.predict(x, verbose=0),
                    layers={n: [type(km.get_layer(n)).__name__, _plain(km.get_layer(n).get_config())]
                            for n, _, _, _ in UNIT})
    k = keras_file(tmp_path / "theirs.keras", save)
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["out"], atol=1e-4)
    bm = _model(bf, UNIT)
    bm.set_weights(k["w"])
    bm.save(tmp_path / "ours.keras")

    def opened():   # Keras opening boundfit's file, recorded by its contents
        km = load().models.load_model(tmp_path / "ours.keras")
        return {n: [type(km.get_layer(n)).__name__, _plain(km.get_layer(n).get_config())] for n, _, _, _ in UNIT}
    theirs = case(opened, files=[tmp_path / "ours.keras"])
    for n, _, _, _ in UNIT:
        assert type(ours.get_layer(n)).__name__ == k["layers"][n][0]
        assert theirs[n] == k["layers"][n]


@pytest.mark.parametrize("make, match", [
    (lambda: bf.layers.RandomInvert(factor=1.5), "factor"),
    (lambda: bf.layers.RandomInvert(value_range=(0, 1, 2)), "value_range"),
    (lambda: bf.layers.Solarization(addition_factor=2.0), "addition_factor"),
    (lambda: bf.layers.Solarization(threshold_factor=(0.1, 0.2, 0.3)), "threshold_factor"),
    (lambda: bf.layers.RandomPosterization(9), "factor"),
    (lambda: bf.layers.RandomColorDegeneration("a"), "factor"),
    (lambda: bf.layers.AutoContrast(value_range=5), "value_range"),
    (lambda: bf.layers.RandomSaturation(0.5, seed=-1), "seed"),
    (lambda: bf.layers.RandomHue(0.5, data_format="channels_first"), "data_format"),
    (lambda: bf.layers.RandomSharpness((0.1, 0.2, 0.3)), "factor"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make, shape, match", [
    (lambda: bf.layers.RandomSaturation(0.5), (4, 4, 1), "3 channels"),
    (lambda: bf.layers.RandomSharpness(0.5), (4, 3), "images"),
])
def test_bad_inputs_raise_naming_the_fault(make, shape, match):
    with pytest.raises(ValueError, match=match):
        layer = make()
        layer(bf.Input(shape), training=True)


def test_dict_inputs_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="RandomInvert: dict inputs.*bounding boxes"):
        bf.layers.RandomInvert().get_random_transformation({"images": np.zeros((1, 2, 2, 3)), "labels": [0]})


def _pipeline_model(M):
    return M.Sequential([M.Input(SHAPE), M.layers.Pipeline([
        M.layers.RandomInvert(value_range=(0, 1)), M.layers.AutoContrast(value_range=(0, 1)),
        M.layers.RandomFlip(), M.layers.Rescaling(2.0)], name="pipe"), M.layers.Flatten(), M.layers.Dense(2)])


def _stripped(cfg):
    """a Pipeline's config without the names Keras and boundfit count differently"""
    return [dict(s, config={k: v for k, v in s["config"].items() if k != "name"}) for s in cfg["layers"]]


def test_pipeline_applies_its_layers_in_order_and_keras_files_hold_it_both_ways(tmp_path):
    """outside training AutoContrast then Rescaling (the random layers: the identity), as Keras predicts; the
    Pipeline with its layers' configs in both files; in fit its random layers draw"""
    x = images((0, 1), n=4)

    def save(p):
        km = _pipeline_model(load())
        km.set_weights([(np.random.default_rng(2).standard_normal(w.shape) * 0.3).astype(np.float32)
                        for w in km.get_weights()])
        km.save(p)
        return dict(w=km.get_weights(), out=km.predict(x, verbose=0), pipe=_plain(km.get_layer("pipe").get_config()))
    k = keras_file(tmp_path / "theirs.keras", save)
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    assert [type(l).__name__ for l in ours.get_layer("pipe").layers] == [
        "RandomInvert", "AutoContrast", "RandomFlip", "Rescaling"]
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["out"], atol=1e-4)
    bm = _pipeline_model(bf)
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["out"], atol=1e-4)
    bm.save(tmp_path / "ours.keras")

    def opened():
        km = load().models.load_model(tmp_path / "ours.keras")
        return dict(out=km.predict(x, verbose=0), pipe=_plain(km.get_layer("pipe").get_config()))
    theirs = case(opened, files=[tmp_path / "ours.keras"])
    assert _stripped(theirs["pipe"]) == _stripped(k["pipe"])
    np.testing.assert_allclose(theirs["out"], k["out"], atol=1e-4)
    pipe = bm.get_layer("pipe")
    assert not np.allclose(pipe(x, training=True), pipe(x))


def test_pipeline_refuses_layers_with_weights_naming_them():
    with pytest.raises(ValueError, match="Pipeline: layers holds Dense.*Sequential"):
        bf.layers.Pipeline([bf.layers.Dense(3)])
