"""MixUp, CutMix, MaxNumBoundingBoxes (layers/batch_mix.py) and Equalization
(layers/equalize.py): data-side layers in NumPy, refused by name inside a
model; RandomShear (layers/shear.py): a gather-based warp in the graph.

Pinned against Keras 3 (recorded): given Keras's own transformation
(get_random_transformation of Keras's layer), boundfit's transform_images and
transform_labels equal Keras's exactly (atol 1e-6 of the value range: the same
float32 formula); Equalization on the same images equals Keras's (atol 1e-6 of
the value range); RandomShear given Keras's shear_factor equals Keras's
(atol 1e-6 of the value range; nearest exactly) for each fill_mode and
interpolation, and holds a planned fit in a model; MaxNumBoundingBoxes on Keras's dict equals Keras's (exact);
boundfit's own draws have Keras's keys, shapes, dtypes and form; configs
equal Keras's and round-trip; bad arguments raise naming the argument."""

import json

import numpy as np
import pytest

import boundfit as bf
from conftest import assert_plan_equals_arenas
from helpers.keras_recorded import case
from keras_ref import load

MIX = [
    ("mixup", lambda M, **k: M.MixUp(alpha=0.4, **k)),
    ("cutmix", lambda M, **k: M.CutMix(factor=0.8, **k)),
    ("cutmix_default", lambda M, **k: M.CutMix(**k)),
]
IDS = [c[0] for c in MIX]
BOXES = [("pad", 5, -1), ("cut", 2, -3)]   # (id, max_number, fill_value)
EQ = [("eq_default", {}, (0, 255)), ("eq_unit_64", dict(value_range=(1, -1), bins=64), (-1, 1)),
      ("eq_flat_channel", dict(bins=16), (0, 255))]   # (id, Equalization's arguments, the images' value range)
SHEAR = [("shear_reflect", dict(x_factor=0.6, y_factor=(0.2, 0.9))),
         ("shear_nearest_constant", dict(x_factor=0.5, y_factor=0.5, interpolation="nearest", fill_mode="constant",
                                         fill_value=7.0)),
         ("shear_wrap", dict(y_factor=0.7, fill_mode="wrap")),
         ("shear_nearest_fill", dict(x_factor=(0.3, 0.8), fill_mode="nearest"))]


def eq_images(name, vr):
    """integer levels of the value range (a histogram with empty bins); one constant channel for eq_flat_channel"""
    r = np.random.default_rng(5)
    x = vr[0] + (vr[1] - vr[0]) * r.integers(0, 60, (3, 5, 6, 3)).astype(np.float32) ** 1.3 / 60 ** 1.3
    if name == "eq_flat_channel":
        x[..., 1] = 17.0
    return x.astype(np.float32)


def data(n=6, seed=0):
    r = np.random.default_rng(seed)
    return (r.uniform(0, 255, (n, 7, 9, 3)).astype(np.float32),
            np.eye(4, dtype=np.float32)[r.integers(0, 4, n)])


def boxes(n=3, k=3):
    r = np.random.default_rng(1)
    return {"boxes": r.uniform(0, 9, (n, k, 4)).astype(np.float32), "labels": r.integers(0, 4, (n, k))}


def _plain(v):
    return json.loads(json.dumps(v))


@pytest.fixture(scope="module")
def keras_side():
    """per case: Keras's transformation, its transform_images / transform_labels, its config"""
    def compute():
        keras = load()
        out = {}
        x, y = data()
        for name, make in MIX:
            layer = make(keras.layers, seed=3)
            t = {k: np.asarray(v) for k, v in layer.get_random_transformation(x, training=True).items()}
            out[name] = dict(t=t, x=np.asarray(layer.transform_images(x, t)),
                             y=np.asarray(layer.transform_labels(y, t)), cfg=_plain(layer.get_config()))
        for name, m, fill in BOXES:
            layer = keras.layers.MaxNumBoundingBoxes(m, fill_value=fill, bounding_box_format="xyxy")
            o = layer({"images": x[:3], "bounding_boxes": boxes()})
            out[name] = dict(boxes=np.asarray(o["bounding_boxes"]["boxes"]),
                             labels=np.asarray(o["bounding_boxes"]["labels"]), cfg=_plain(layer.get_config()))
        for name, kw in SHEAR:
            layer = keras.layers.RandomShear(seed=3, **kw)
            t = {k: np.asarray(v) for k, v in layer.get_random_transformation(x, training=True).items()}
            out[name] = dict(t=t, x=np.asarray(layer.transform_images(x, t)), cfg=_plain(layer.get_config()))
        for name, kw, vr in EQ:
            layer = keras.layers.Equalization(**kw)
            out[name] = dict(y=np.asarray(layer(eq_images(name, vr))), cfg=_plain(layer.get_config()))
        return out
    return case(compute, "keras_side")


@pytest.mark.parametrize("name, make", MIX, ids=IDS)
def test_mixing_equals_keras_given_its_transformation(keras_side, name, make):
    k, (x, y) = keras_side[name], data()
    layer = make(bf.layers, seed=3)
    np.testing.assert_allclose(layer.transform_images(x, k["t"]), k["x"], atol=1e-6 * 255, rtol=0)
    np.testing.assert_allclose(layer.transform_labels(y, k["t"]), k["y"], atol=1e-6, rtol=0)
    assert not np.allclose(k["x"], x)   # (the transformation changes something)


@pytest.mark.parametrize("name, make", MIX, ids=IDS)
def test_own_draws_have_keras_keys_shapes_and_dtypes(keras_side, name, make):
    t = make(bf.layers, seed=1).get_random_transformation(data()[0])
    k = keras_side[name]["t"]
    assert {n: (v.shape, v.dtype) for n, v in t.items()} == {n: (v.shape, v.dtype) for n, v in k.items()}
    assert sorted(t["permutation_order"]) == list(range(6))
    assert ((0 <= t["mix_weight"]) & (t["mix_weight"] <= 1)).all()


def test_cutmix_pastes_a_rectangle_of_the_partner_and_mixes_labels_by_the_area_kept():
    x, y = data(n=40)
    layer = bf.layers.CutMix(seed=2)
    t = layer.get_random_transformation(x)
    xs, ys = layer.transform_images(x, t), layer.transform_labels(y, t)
    for i, (m, p) in enumerate(zip(t["batch_masks"][..., 0], t["permutation_order"])):
        rows, cols = m.any(axis=1), m.any(axis=0)
        assert (m == np.outer(rows, cols)).all()                       # a rectangle
        np.testing.assert_array_equal(xs[i][m], x[p][m])
        np.testing.assert_array_equal(xs[i][~m], x[i][~m])
    w = t["mix_weight"].reshape(-1, 1)
    np.testing.assert_allclose(ys, w * y + (1 - w) * y[t["permutation_order"]], atol=1e-6)


@pytest.mark.parametrize("name, make", MIX, ids=IDS)
def test_called_on_a_dict_they_transform_images_and_labels_with_one_draw(name, make):
    x, y = data(n=8)
    t = make(bf.layers, seed=4).get_random_transformation(x)   # the same seed: the call's draw
    out = make(bf.layers, seed=4)({"images": x, "labels": y})
    assert set(out) == {"images", "labels"}
    ref = make(bf.layers, seed=4)
    np.testing.assert_array_equal(out["images"], ref.transform_images(x, t))
    np.testing.assert_array_equal(out["labels"], ref.transform_labels(y, t))
    np.testing.assert_allclose(out["labels"].sum(axis=1), 1, atol=1e-6)
    np.testing.assert_array_equal(make(bf.layers, seed=4)(x, training=False), x)


@pytest.mark.parametrize("name, m, fill", BOXES, ids=[b[0] for b in BOXES])
def test_max_num_bounding_boxes_pads_or_cuts_as_keras(keras_side, name, m, fill):
    x = data()[0][:3]
    out = bf.layers.MaxNumBoundingBoxes(m, fill_value=fill, bounding_box_format="xyxy")(
        {"images": x, "bounding_boxes": boxes()})
    np.testing.assert_array_equal(out["bounding_boxes"]["boxes"], keras_side[name]["boxes"])
    np.testing.assert_array_equal(out["bounding_boxes"]["labels"], keras_side[name]["labels"])
    np.testing.assert_array_equal(out["images"], x)


@pytest.mark.parametrize("name, kw, vr", EQ, ids=[e[0] for e in EQ])
def test_equalization_equals_keras(keras_side, name, kw, vr):
    x = eq_images(name, vr)
    y = bf.layers.Equalization(**kw)(x)
    np.testing.assert_allclose(y, keras_side[name]["y"], atol=1e-6 * (vr[1] - vr[0]), rtol=0)
    assert not np.allclose(y, x)
    np.testing.assert_array_equal(bf.layers.Equalization(**kw)(x, training=False), x)
    cfg = _plain(bf.layers.Equalization(**kw).get_config())
    assert cfg == dict(keras_side[name]["cfg"], name=cfg["name"])
    assert _plain(bf.layers.Equalization.from_config(cfg).get_config()) == cfg


def test_equalization_counts_each_channel_over_the_batch_as_keras():
    x = eq_images("eq_default", (0, 255))
    whole = bf.layers.Equalization()(x)
    assert not np.allclose(whole[:1], bf.layers.Equalization()(x[:1]))   # image 0 depends on the others
    np.testing.assert_array_equal(bf.layers.Equalization()({"images": x, "labels": np.ones(3)})["images"], whole)


@pytest.mark.parametrize("name, kw", SHEAR, ids=[c[0] for c in SHEAR])
def test_shear_equals_keras_given_its_transformation(keras_side, name, kw):
    k, x = keras_side[name], data()[0]
    layer = bf.layers.RandomShear(seed=3, **kw)
    np.testing.assert_allclose(layer.transform_images(x, k["t"]), k["x"], atol=1e-6 * 255, rtol=0)
    assert not np.allclose(k["x"], x)
    cfg = _plain(layer.get_config())
    assert cfg == dict(k["cfg"], name=cfg["name"])
    assert _plain(bf.layers.RandomShear.from_config(cfg).get_config()) == cfg


def test_shear_draws_both_factors_in_range_with_one_sign_per_image():
    x = data(n=200)[0][:, :3, :4]
    t = bf.layers.RandomShear(x_factor=(0.2, 0.5), y_factor=(0.1, 0.3), seed=6).get_random_transformation(x)
    f = t["shear_factor"]
    assert f.shape == (200, 2) and f.dtype == np.float32 and tuple(t["input_shape"]) == x.shape
    assert ((0.2 <= abs(f[:, 0])) & (abs(f[:, 0]) <= 0.5) & (0.1 <= abs(f[:, 1])) & (abs(f[:, 1]) <= 0.3)).all()
    assert (np.sign(f[:, 0]) == np.sign(f[:, 1])).all() and 0.35 < (f[:, 0] < 0).mean() < 0.65


def test_shear_in_a_model_holds_a_planned_fit_and_is_the_identity_in_predict():
    m = bf.Sequential([bf.Input((7, 9, 3)), bf.layers.RandomShear(0.4, 0.3, seed=1),
                       bf.layers.Conv2D(2, 3), bf.layers.Flatten(), bf.layers.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    x, y = data(n=16)[0] / 255, np.random.default_rng(8).standard_normal((16, 2)).astype(np.float32)
    assert_plan_equals_arenas(m, x, y, batch_size=8)
    assert all(np.isfinite(w).all() for w in m.get_weights())
    np.testing.assert_array_equal(bf.layers.RandomShear(0.4)(x), x)


@pytest.mark.parametrize("name, make", MIX + [
    ("pad", lambda M, **k: M.MaxNumBoundingBoxes(5, fill_value=-1, bounding_box_format="xyxy")),
    ("cut", lambda M, **k: M.MaxNumBoundingBoxes(2, fill_value=-3, bounding_box_format="xyxy"))],
    ids=IDS + ["pad", "cut"])
def test_configs_equal_keras_and_round_trip(keras_side, name, make):
    layer = make(bf.layers, **({"seed": 3} if name in IDS else {}))
    cfg = _plain(layer.get_config())
    want = dict(keras_side[name]["cfg"], name=cfg["name"])
    assert cfg == want
    assert _plain(type(layer).from_config(cfg).get_config()) == cfg


@pytest.mark.parametrize("make", [m for _, m in MIX] + [lambda M, **k: M.MaxNumBoundingBoxes(3),
                                                         lambda M, **k: M.Equalization()])
def test_inside_a_model_they_are_refused_by_name(make):
    with pytest.raises(NotImplementedError, match=r"keras.layers.\w+ inside a boundfit model is not supported"):
        bf.Sequential([bf.Input((7, 9, 3)), make(bf.layers)])


@pytest.mark.parametrize("make, match", [
    (lambda: bf.layers.MixUp(alpha=0), "alpha"),
    (lambda: bf.layers.MixUp(seed=-1), "seed"),
    (lambda: bf.layers.CutMix(factor=1.5), "factor"),
    (lambda: bf.layers.CutMix(data_format="channels_first"), "data_format"),
    (lambda: bf.layers.MaxNumBoundingBoxes(0), "max_number"),
    (lambda: bf.layers.MaxNumBoundingBoxes(2, fill_value=0.5), "fill_value"),
    (lambda: bf.layers.MaxNumBoundingBoxes(2)({"images": data()[0], "bounding_boxes": boxes()}),
     "bounding_box_format"),
    (lambda: bf.layers.MixUp()({"pictures": data()[0]}), "images"),
    (lambda: bf.layers.Equalization(bins=1), "bins"),
    (lambda: bf.layers.RandomShear(x_factor=1.5), "x_factor"),
    (lambda: bf.layers.RandomShear(y_factor=(0.1, 0.2, 0.3)), "y_factor"),
    (lambda: bf.layers.RandomShear(fill_mode="mirror"), "fill_mode"),
    (lambda: bf.layers.RandomShear(interpolation="bicubic"), "interpolation"),
    (lambda: bf.layers.RandomShear(fill_value="red"), "fill_value"),
    (lambda: bf.layers.Equalization(value_range=(0, 255, 3)), "value_range"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bounding_boxes_through_mixing_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="MixUp: bounding boxes"):
        bf.layers.MixUp()({"images": data()[0][:3], "bounding_boxes": boxes()})
