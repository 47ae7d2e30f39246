"""keras.applications' ConvNeXt, EfficientNetV2, InceptionResNetV2 and NASNet against Keras 3 (JAX), as
test_applications.py checks the other families: Keras builds one small member of each family (weights=None, seed
0; ConvNeXt through its module's builder with small depths and widths and stochastic depth on), patterns its
variables, saves `.weights.h5` and predicts a fixed batch; boundfit builds the same model from that file: the
layers holding variables have Keras's names in Keras's order, the variables Keras's shapes in Keras's order, and
the predictions Keras's (to 1e-4 of their largest magnitude). One larger member per family is built (not run) and
has Keras's parameter count. The pieces they need: Conv2D(groups=C) (ConvNeXt's depthwise convolution), and the
layers Keras's application modules define (LayerScale, StochasticDepth, CustomScaleLayer), which .keras files
hold under Keras's modules, both ways. Keras's results are recorded (helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: Keras's automatic names from the start
from helpers.keras_recorded import case
from test_applications import _batch, _is_subsequence, _patterned, _write

FAMILIES = [
    ("convnext.ConvNeXt", dict(depths=[2, 1, 2, 1], projection_dims=[16, 24, 32, 40], drop_path_rate=0.1,
                               name="convnext_mini", input_shape=(32, 32, 3), classes=3, classifier_activation=None)),
    ("EfficientNetV2B0", dict(input_shape=(32, 32, 3), classes=3, classifier_activation=None)),
    ("InceptionResNetV2", dict(include_top=False, input_shape=(75, 75, 3), pooling="avg")),
    ("NASNetMobile", dict(include_top=False, input_shape=(32, 32, 3), pooling="max")),
]
LARGER = [("ConvNeXtTiny", dict()), ("EfficientNetV2S", dict()), ("NASNetLarge", dict())]


def _fn(module, path):
    """keras.applications.<Name>, or a family builder <module>.<Builder> (keras.src.applications' for Keras)"""
    if "." not in path:
        return getattr(module.applications, path)
    mod, name = path.split(".")
    if module is bf:
        return getattr(getattr(bf.applications, mod), name)
    import importlib
    return getattr(importlib.import_module(f"keras.src.applications.{mod}"), name)


def _keras_vars(layer):
    """a boundfit layer's variables as Keras holds them (a Normalization given its mean and variance: none)"""
    ws = layer.get_weights()
    return layer._to_keras_vars(ws) if hasattr(layer, "_to_keras_vars") else ws


@pytest.mark.parametrize("fn,kwargs", FAMILIES, ids=[f for f, _ in FAMILIES])
def test_application_loads_keras_weights_file_and_predicts_as_keras(tmp_path, fn, kwargs):
    def compute():
        import lzma
        import os
        import tempfile
        keras = keras_ref.load()
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        m = _fn(keras, fn)(weights=None, **kwargs)
        _patterned(m)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.weights.h5")
            m.save_weights(path)
            packed = np.frombuffer(lzma.compress(open(path, "rb").read()), np.uint8)
        x = _batch(m.input_shape[1:])
        return dict(file=packed, x=x, y=np.asarray(m.predict(x, verbose=0)), names=[l.name for l in m.layers],
                    weighted=[l.name for l in m.layers if l.weights], shapes=[list(v.shape) for v in m.weights])
    ref = case(compute)
    m = _fn(bf, fn)(weights=_write(tmp_path, ref["file"]), **kwargs)
    assert [l.name for l in m.layers if _keras_vars(l)] == list(ref["weighted"])
    assert _is_subsequence(list(ref["names"]), [l.name for l in m.layers])   # (+ keras.ops pieces: inputs + x)
    assert [list(np.shape(w)) for l in m.layers for w in _keras_vars(l)] == [list(s) for s in ref["shapes"]]
    y = m.predict(ref["x"], verbose=0)
    assert y.shape == ref["y"].shape
    assert np.abs(y - ref["y"]).max() <= 1e-4 * np.abs(ref["y"]).max()


@pytest.mark.parametrize("fn,kwargs", LARGER, ids=[f for f, _ in LARGER])
def test_larger_family_member_has_keras_parameter_count(fn, kwargs):
    """built (its weights initialized), not run; a Normalization given its mean and variance holds them as
    weights here (7 numbers), as constants in Keras, so the count is of what Keras holds"""
    def compute():
        keras = keras_ref.load()
        keras.backend.clear_session()
        m = getattr(keras.applications, fn)(weights=None, **kwargs)
        return m.count_params()
    ref = case(compute)
    m = getattr(bf.applications, fn)(weights=None, **kwargs)
    assert sum(int(np.size(w)) for l in m.layers for w in _keras_vars(l)) == ref


def _grouped(M):
    i = M.Input((5, 5, 4))
    x = M.layers.Conv2D(8, 3, padding="same", groups=4, name="grouped")(i)
    return M.Model(i, M.layers.Dense(2)(M.layers.GlobalAveragePooling2D()(x)))


def test_conv2d_groups_equal_to_channels_predicts_and_trains_as_keras():
    """Conv2D(8, groups=4) on 4 channels: Keras's kernel (3, 3, 1, 8), the same outputs and two SGD steps"""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((6, 5, 5, 4)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)

    def compute():
        keras = keras_ref.load()
        keras.utils.set_random_seed(0)
        m = _grouped(keras)
        w = [np.asarray(v) for v in m.weights]
        p = np.asarray(m.predict(x, verbose=0))
        m.compile(keras.optimizers.SGD(0.1), "mse")
        m.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
        return dict(w=w, p=p, after=[np.asarray(v) for v in m.weights])
    ref = case(compute)
    m = _grouped(bf)
    assert [w.shape for w in m.get_weights()] == [w.shape for w in ref["w"]]
    m.set_weights(ref["w"])
    np.testing.assert_allclose(m.predict(x, verbose=0), ref["p"], rtol=1e-5, atol=1e-6)
    m.compile(bf.optimizers.SGD(0.1), "mse")
    m.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(m.get_weights(), ref["after"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("make,words", [
    (lambda: bf.layers.Conv2D(6, 3, groups=4), "evenly divisible"),
    (lambda: bf.Model(i := bf.Input((5, 5, 4)), bf.layers.Conv2D(4, 3, groups=2)(i)), "groups=2 on an input of 4"),
    (lambda: bf.layers.Conv2D(4, 3, groups=0), "groups"),
])
def test_conv2d_groups_other_than_the_channels_are_refused_naming_groups(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def _app_layers(M, mods):
    convnext, irv2 = mods
    i = M.Input((4, 4, 3))
    a = convnext.LayerScale(0.5, 3, name="scale")(i)
    b = convnext.StochasticDepth(0.3, name="depth")(a)
    return M.Model(i, irv2.CustomScaleLayer(0.17, name="sum")([i, b]))


def test_application_layers_are_written_under_keras_modules_and_open_in_keras_both_ways(tmp_path):
    """a model of LayerScale, StochasticDepth and CustomScaleLayer saved here opens in Keras as Keras's classes
    and predicts the same; Keras's file of it opens here"""
    x = _batch((4, 4, 3)) / 255.0
    m = _app_layers(bf, (bf.applications.convnext, bf.applications.inception_resnet_v2))
    m.layers[1].set_weights([np.array([0.5, -1.0, 2.0], np.float32)])
    path = str(tmp_path / "m.keras")
    m.save(path)

    def compute():
        keras = keras_ref.load()
        from keras.src.applications import convnext, inception_resnet_v2
        k = keras.saving.load_model(path)
        out = dict(classes=[type(l).__name__ for l in k.layers], y=np.asarray(k.predict(x, verbose=0)))
        keras.backend.clear_session()
        km = _app_layers(keras, (convnext, inception_resnet_v2))
        km.set_weights(k.get_weights())
        km.save(str(tmp_path / "k.keras"))
        out["file"] = np.frombuffer(open(tmp_path / "k.keras", "rb").read(), np.uint8)
        return out
    ref = case(compute, files=[path])
    assert list(ref["classes"]) == ["InputLayer", "LayerScale", "StochasticDepth", "CustomScaleLayer"]
    y = m.predict(x, verbose=0)
    np.testing.assert_allclose(ref["y"], y, rtol=1e-6)
    np.testing.assert_allclose(y, x + 0.17 * x * np.array([0.5, -1.0, 2.0], np.float32), rtol=1e-6)
    (tmp_path / "k.keras").write_bytes(np.asarray(ref["file"]).tobytes())
    back = bf.models.load_model(str(tmp_path / "k.keras"))
    assert [type(l).__name__ for l in back.layers][1:] == ["LayerScale", "StochasticDepth", "CustomScaleLayer"]
    np.testing.assert_allclose(back.predict(x, verbose=0), y, rtol=1e-6)


@pytest.mark.parametrize("module", ["convnext", "efficientnet_v2", "inception_resnet_v2", "nasnet"])
def test_preprocess_input_is_keras_preprocessing(module):
    x = _batch((4, 4, 3))
    ref = case(lambda: np.asarray(getattr(keras_ref.load().applications, module).preprocess_input(x.copy())))
    np.testing.assert_allclose(getattr(bf.applications, module).preprocess_input(x.copy()), ref, rtol=1e-6)


@pytest.mark.parametrize("fn", ["ConvNeXtTiny", "EfficientNetV2B0", "InceptionResNetV2", "NASNetMobile"])
def test_weights_imagenet_is_refused_naming_the_download(fn):
    with pytest.raises(ValueError, match="weights='imagenet' needs a download.*pass its path as weights="):
        getattr(bf.applications, fn)()
