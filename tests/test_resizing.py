"""layers.Resizing and keras.ops.image.resize (layers/resize.py: per axis a
product with a constant matrix built as jax.image.resize builds it).

Pinned against Keras 3 (recorded): every interpolation (bilinear, nearest,
bicubic, lanczos3, lanczos5; 'area' against Keras's TensorFlow backend's
tf.image.resize, which Keras's JAX backend refuses), antialias on and off,
up and down, crop and pad to the aspect ratio (a fill value), channels_first:
the same images give Keras's values within 2e-5 (float32 sums in another
order), eagerly on arrays, in a model and through keras.ops.image.resize;
gradients through Resizing against central differences; in a model the plan
holds a fit, the model has Keras's weights (the matrices are none), and
.keras files hold Resizing both ways; bad arguments raise naming them."""

import json

import numpy as np
import pytest

import boundfit as bf
from conftest import assert_plan_equals_arenas, directional_check
from fresh_names import fresh_layer_names  # noqa: F401
from helpers.keras_recorded import case, keras_file
from keras_ref import load

IMAGES = np.random.default_rng(0).uniform(0, 1, (2, 9, 12, 3)).astype(np.float32)

# (id, height, width, Resizing's keyword arguments)
CASES = [
    ("bilinear_down", 5, 7, {}),
    ("bilinear_up", 13, 17, {}),
    ("nearest", 6, 19, dict(interpolation="nearest")),
    ("bicubic", 7, 5, dict(interpolation="bicubic")),
    ("lanczos3", 11, 8, dict(interpolation="lanczos3")),
    ("lanczos5", 4, 14, dict(interpolation="lanczos5")),
    ("area", 4, 5, dict(interpolation="area")),
    ("area_up", 14, 12, dict(interpolation="area")),
    ("bilinear_antialias", 4, 5, dict(antialias=True)),
    ("bicubic_antialias", 5, 13, dict(interpolation="bicubic", antialias=True)),
    ("lanczos3_antialias", 3, 7, dict(interpolation="lanczos3", antialias=True)),
    ("crop_to_aspect_ratio", 6, 5, dict(crop_to_aspect_ratio=True)),
    ("crop_wide", 4, 9, dict(interpolation="bicubic", crop_to_aspect_ratio=True)),
    ("pad_to_aspect_ratio", 10, 6, dict(pad_to_aspect_ratio=True, fill_value=0.25)),
    ("pad_wide", 5, 14, dict(pad_to_aspect_ratio=True, interpolation="lanczos3")),
    ("channels_first", 5, 4, dict(data_format="channels_first", interpolation="bicubic")),
]
IDS = [c[0] for c in CASES]
TOL = 2e-5


def _input(kw):
    return IMAGES.transpose(0, 3, 1, 2) if kw.get("data_format") == "channels_first" else IMAGES


def _plain(v):
    return json.loads(json.dumps(v))


@pytest.fixture(scope="module")
def keras_side():
    """per case Keras's Resizing of the images (for 'area' Keras's TensorFlow backend: tf.image.resize)"""
    def compute():
        keras = load()
        out = {}
        for name, h, w, kw in CASES:
            if kw.get("interpolation") == "area":
                import tensorflow as tf
                out[name] = tf.image.resize(IMAGES, (h, w), method="area", antialias=kw.get("antialias", False)).numpy()
            else:
                out[name] = np.asarray(keras.layers.Resizing(h, w, **kw)(_input(kw)))
        return out
    return case(compute, "keras_side")


@pytest.mark.parametrize("name, h, w, kw", CASES, ids=IDS)
def test_resizing_equals_keras_on_arrays_and_ops_image_resize_too(keras_side, name, h, w, kw):
    x = _input(kw)
    np.testing.assert_allclose(bf.layers.Resizing(h, w, **kw)(x), keras_side[name], atol=TOL, rtol=0)
    np.testing.assert_allclose(bf.layers.Resizing(h, w, **kw)(x[0]), keras_side[name][0], atol=TOL, rtol=0)
    np.testing.assert_allclose(bf.ops.image.resize(x, (h, w), **kw), keras_side[name], atol=TOL, rtol=0)


def test_in_a_model_every_case_equals_keras_and_the_model_has_no_weights(keras_side):
    """one functional model: each case as a Resizing layer and as keras.ops.image.resize; the matrices are no
    weights of the model (Keras's Resizing has none)"""
    ins = {"channels_last": bf.Input(IMAGES.shape[1:]), "channels_first": bf.Input(_input(
        {"data_format": "channels_first"}).shape[1:])}
    outs = []
    for _, h, w, kw in CASES:
        x = ins[kw.get("data_format", "channels_last")]
        outs += [bf.layers.Resizing(h, w, **kw)(x), bf.ops.image.resize(x, (h, w), **kw)]
    m = bf.Model([ins["channels_last"], ins["channels_first"]],
                 bf.layers.Concatenate()([bf.layers.Flatten()(y) for y in outs]))   # (one output: at most 8)
    assert m.get_weights() == [] and m.count_params() == 0
    got = m.predict([IMAGES, _input({"data_format": "channels_first"})], verbose=0)
    at = 0
    for name, _, _, _ in CASES:
        for _ in range(2):
            n = keras_side[name][0].size
            np.testing.assert_allclose(got[:, at:at + n].reshape(keras_side[name].shape), keras_side[name], atol=TOL,
                                       rtol=0, err_msg=name)
            at += n


def _model(M, kw):
    L = M.layers
    return M.Sequential([M.Input((6, 7, 2)), L.Conv2D(2, 1, name="conv"), L.Resizing(4, 9, name="resize", **kw),
                         L.Flatten(), L.Dense(1, name="dense")])


@pytest.mark.parametrize("kw", [dict(interpolation="bicubic"), dict(interpolation="area", pad_to_aspect_ratio=True,
                                                                      fill_value=0.5)], ids=["bicubic", "area_pad"])
def test_gradients_through_resizing_match_central_differences(kw):
    m = _model(bf, kw)
    m.compile(optimizer="sgd", loss="mse")
    r = np.random.default_rng(1)
    directional_check(m, r.standard_normal((4, 6, 7, 2)).astype(np.float32),
                      r.standard_normal((4, 1)).astype(np.float32))


def test_the_plan_holds_a_fit_through_resizing():
    m = _model(bf, dict(interpolation="lanczos3", antialias=True))
    m.compile(optimizer="adam", loss="mse")
    r = np.random.default_rng(2)
    assert_plan_equals_arenas(m, r.standard_normal((16, 6, 7, 2)).astype(np.float32),
                              r.standard_normal((16, 1)).astype(np.float32), batch_size=8)


def test_keras_files_hold_resizing_both_ways(tmp_path):
    kw = dict(interpolation="bicubic", crop_to_aspect_ratio=True)
    x = np.random.default_rng(3).standard_normal((3, 6, 7, 2)).astype(np.float32)

    def save(p):
        km = _model(load(), kw)
        km.set_weights([(np.random.default_rng(2).standard_normal(w.shape) * 0.3).astype(np.float32)
                        for w in km.get_weights()])
        km.save(p)
        return dict(w=km.get_weights(), out=km.predict(x, verbose=0),
                    config=_plain(km.get_layer("resize").get_config()))
    k = keras_file(tmp_path / "theirs.keras", save)
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    assert type(ours.get_layer("resize")).__name__ == "Resizing"
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["out"], atol=1e-4)
    bm = _model(bf, kw)
    bm.set_weights(k["w"])   # Keras's weights list as it is
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["out"], atol=1e-4)
    assert _plain(bm.get_layer("resize").get_config()) == k["config"]
    bm.save(tmp_path / "ours.keras")

    def opened():
        km = load().models.load_model(tmp_path / "ours.keras")
        return dict(out=km.predict(x, verbose=0), config=_plain(km.get_layer("resize").get_config()))
    theirs = case(opened, files=[tmp_path / "ours.keras"])
    assert theirs["config"] == k["config"]
    np.testing.assert_allclose(theirs["out"], k["out"], atol=1e-4)


@pytest.mark.parametrize("make, match", [
    (lambda: bf.layers.Resizing(0, 4), "height"),
    (lambda: bf.layers.Resizing(4, 2.5), "width"),
    (lambda: bf.layers.Resizing(4, 4, interpolation="cubic"), "interpolation"),
    (lambda: bf.layers.Resizing(4, 4, fill_mode="reflect"), "fill_mode"),
    (lambda: bf.layers.Resizing(4, 4, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True), "pad_to_aspect_ratio"),
    (lambda: bf.layers.Resizing(4, 4, fill_value="zero"), "fill_value"),
    (lambda: bf.layers.Resizing(4, 4, data_format="nhwc"), "data_format"),
    (lambda: bf.ops.image.resize(IMAGES, (3, 3), interpolation="gaussian"), "interpolation"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_inputs_that_are_no_images_are_refused_naming_the_shape():
    with pytest.raises(ValueError, match=r"\(batch, H, W, C\)"):
        bf.Sequential([bf.Input((5, 4)), bf.layers.Resizing(3, 3)])


def test_boundfit_graph_files_keep_the_matrices_out_of_the_weights(tmp_path):
    inp = bf.Input((6, 7, 2))
    m = bf.Model(inp, bf.layers.Dense(2)(bf.layers.Flatten()(bf.layers.Resizing(4, 5, interpolation="lanczos5")(inp))))
    x = np.random.default_rng(4).standard_normal((3, 6, 7, 2)).astype(np.float32)
    m.save(tmp_path / "m.npz")
    back = bf.models.load_model(tmp_path / "m.npz")
    assert [w.shape for w in back.get_weights()] == [(40, 2), (2,)]
    np.testing.assert_array_equal(back.predict(x, verbose=0), m.predict(x, verbose=0))
