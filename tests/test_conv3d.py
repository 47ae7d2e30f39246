"""The 3D convolution / pooling family and the 1D depthwise ones (issue 34):
Conv3D and Conv3DTranspose (the engine's CONV3D / CONV3DT, csrc/cpu/conv3d.c:
Conv2D's im2col walk per depth plane), MaxPooling3D / AveragePooling3D (two
passes of the 2D pooling ops, csrc/core/layers/pool3d.c), the global 3D
poolings, Cropping3D / ZeroPadding3D / UpSampling3D / SpatialDropout3D and the
adaptive poolings (composed), DepthwiseConv1D / SeparableConv1D, and Keras's
aliases. Against Keras 3 (recorded): outputs, loss and every gradient for
padding 'valid' / 'same', strides and data_format both ways where boundfit
takes it; Conv3D's gradients against float64 central differences of a NumPy
convolution; two epochs of Adam; .keras files both ways; the plan against
the arenas; bad arguments raise naming the argument."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import assert_plan_equals_arenas, directional_check, engine_gradient
from fresh_names import fresh_layer_names  # noqa: F401
from helpers.keras_compare import against_keras
from helpers.keras_recorded import case, keras_file
from keras_ref import load

R = np.random.default_rng(0)
X5 = R.standard_normal((3, 4, 5, 6, 2)).astype(np.float32)        # (B, D, H, W, C)
X5F = np.ascontiguousarray(np.moveaxis(X5, -1, 1))                 # (B, C, D, H, W)


def _around(*make, shape=(4, 5, 6, 2)):
    """Input -> Dense over the last axis (gradients reach the layer's input) -> the layers"""
    return lambda K, Ls: K.Sequential([K.Input(shape), Ls.Dense(shape[-1])] + [m(Ls) for m in make])


CASES = {
    "conv3d-valid": _around(lambda L: L.Conv3D(3, (2, 3, 2))),
    "conv3d-same-strides": _around(lambda L: L.Conv3D(4, (3, 2, 3), strides=(2, 1, 2), padding="same",
                                                      activation="relu")),
    "conv3d-1x1x1-nobias": _around(lambda L: L.Conv3D(3, 1, use_bias=False)),
    "conv3dT-valid-strides": _around(lambda L: L.Conv3DTranspose(3, (2, 3, 2), strides=(2, 1, 3))),
    "conv3dT-same": _around(lambda L: L.Conv3DTranspose(2, (3, 3, 2), strides=(1, 2, 2), padding="same",
                                                        activation="tanh")),
    "maxpool3d-valid": _around(lambda L: L.MaxPooling3D((2, 2, 3))),
    "maxpool3d-same-strides": _around(lambda L: L.MaxPooling3D((2, 3, 2), strides=(1, 2, 3), padding="same")),
    "avgpool3d-same": _around(lambda L: L.AveragePooling3D((3, 2, 4), strides=(2, 1, 2), padding="same")),
    "avgpool3d-valid": _around(lambda L: L.AveragePooling3D(2)),
    "gap3d": _around(lambda L: L.GlobalAveragePooling3D()),
    "gmp3d-keepdims": _around(lambda L: L.GlobalMaxPooling3D(keepdims=True)),
    "crop-pad-up3d": _around(lambda L: L.Cropping3D(((1, 0), (0, 2), (1, 1))), lambda L: L.ZeroPadding3D((1, 0, 2)),
                             lambda L: L.UpSampling3D((1, 2, 3))),
    "adaptive-avg3d": _around(lambda L: L.AdaptiveAveragePooling3D((3, 2, 4))),
    "adaptive-max3d": _around(lambda L: L.AdaptiveMaxPooling3D((2, 3, 4))),
    "adaptive-avg2d": _around(lambda L: L.AdaptiveAveragePooling2D((3, 4)), shape=(7, 5, 3)),
    "adaptive-max1d": _around(lambda L: L.AdaptiveMaxPooling1D(3), shape=(8, 3)),
    "adaptive-avg1d-up": _around(lambda L: L.AdaptiveAveragePooling1D(5), shape=(3, 2)),
    "depthwise1d": _around(lambda L: L.DepthwiseConv1D(3, strides=2, padding="same", depth_multiplier=2),
                           shape=(9, 3)),
    "separable1d": _around(lambda L: L.SeparableConv1D(4, 2, depth_multiplier=2, activation="relu"), shape=(9, 3)),
}
FIRST = {   # channels_first: the Dense in front maps the last axis (W), and gradients reach the pooling's input
    "maxpool3d-first": lambda L: L.MaxPooling3D((2, 2, 3), strides=(1, 2, 2), padding="same",
                                               data_format="channels_first"),
    "avgpool3d-first": lambda L: L.AveragePooling3D(2, data_format="channels_first"),
    "gap3d-first": lambda L: L.GlobalAveragePooling3D(data_format="channels_first"),
    "gmp3d-first": lambda L: L.GlobalMaxPooling3D(data_format="channels_first"),
    "adaptive-max3d-first": lambda L: L.AdaptiveMaxPooling3D((3, 2, 4), data_format="channels_first"),
}


def _x(build):
    shape = build(bf, layers).inputs[0].shape[1:]
    return X5 if len(shape) == 4 else R.standard_normal((3,) + tuple(shape)).astype(np.float32)


def _y(m):
    return np.random.default_rng(1).standard_normal((3,) + tuple(m.outputs[0].shape[1:])).astype(np.float32)


@pytest.mark.parametrize("name", list(CASES))
def test_3d_and_1d_depthwise_layers_match_keras_values_loss_and_gradients(name):
    build = CASES[name]
    against_keras(build, _x(build), _y, rtol=2e-5)


@pytest.mark.parametrize("name", list(FIRST))
def test_3d_poolings_channels_first_match_keras(name):
    make = FIRST[name]
    build = lambda K, Ls: K.Sequential([K.Input((2, 4, 5, 6)), Ls.Dense(6), make(Ls)])   # noqa: E731
    against_keras(build, X5F, _y, rtol=2e-5)


def _np_conv3d(x, w, b, strides, same):
    """float64 NumPy Conv3D, NDHWC, Keras's 'same' split (the smaller half in front)"""
    k = w.shape[:3]
    if same:
        pads = []
        for n, kk, s in zip(x.shape[1:4], k, strides):
            out = -(-n // s)
            t = max((out - 1) * s + kk - n, 0)
            pads.append((t // 2, t - t // 2))
        x = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    o = [(n - kk) // s + 1 for n, kk, s in zip(x.shape[1:4], k, strides)]
    y = np.zeros((x.shape[0], *o, w.shape[-1])) + b
    for i, j, l in np.ndindex(*k):
        sl = x[:, i:i + strides[0] * (o[0] - 1) + 1:strides[0], j:j + strides[1] * (o[1] - 1) + 1:strides[1],
               l:l + strides[2] * (o[2] - 1) + 1:strides[2]]
        y += sl @ w[i, j, l]
    return y


@pytest.mark.parametrize("strides,padding", [((1, 1, 1), "valid"), ((2, 1, 2), "same")])
def test_conv3d_gradients_match_float64_central_differences(strides, padding):
    x = X5[:2, :, :4, :5]
    m = bf.Sequential([bf.Input(x.shape[1:]), layers.Conv3D(2, (2, 3, 2), strides=strides, padding=padding)])
    r = np.random.default_rng(2)
    w0 = [(r.standard_normal(w.shape) * 0.5).astype(np.float32) for w in m.get_weights()]
    m.set_weights(w0)
    y = r.standard_normal((2,) + tuple(m.outputs[0].shape[1:])).astype(np.float32)
    np.testing.assert_allclose(m.predict(x, verbose=0), _np_conv3d(x.astype(np.float64), *w0, strides,
                                                                   padding == "same"), rtol=1e-5, atol=1e-5)
    m.compile(optimizer="sgd", loss="mse")
    got = engine_gradient(m, x, y)
    x64, y64, eps = x.astype(np.float64), y.astype(np.float64), 1e-6

    def loss(ws):
        return np.mean((_np_conv3d(x64, *ws, strides, padding == "same") - y64) ** 2)

    w64 = [w.astype(np.float64) for w in w0]
    for k, w in enumerate(w64):
        want = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            wp, wm = [a.copy() for a in w64], [a.copy() for a in w64]
            wp[k][idx] += eps
            wm[k][idx] -= eps
            want[idx] = (loss(wp) - loss(wm)) / (2 * eps)
        np.testing.assert_allclose(got[k], want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_conv3d_transpose_and_3d_poolings_gradients_match_central_differences():
    """the input gradients of Conv3DTranspose and the poolings through Conv3Ds in front (float32 differences,
    Richardson-extrapolated: conftest.directional_check); a global maximum over 120 voxels would switch its
    argmax within the differences' steps (its gradient is pinned against Keras above)"""
    m = bf.Sequential([bf.Input((4, 5, 6, 2)), layers.Conv3D(3, 2, padding="same"), layers.MaxPooling3D(2, padding="same"),
                       layers.Conv3DTranspose(2, (2, 2, 3), strides=(1, 2, 1)), layers.AveragePooling3D(2, strides=1),
                       layers.GlobalAveragePooling3D()])
    m.compile(optimizer="sgd", loss="mse")
    directional_check(m, X5, np.random.default_rng(3).standard_normal((3, 2)).astype(np.float32))


def _trained(M, L):
    return M.Sequential([M.Input((4, 5, 6, 2)), L.Conv3D(3, (2, 2, 2), padding="same", activation="relu"),
                         L.MaxPooling3D((1, 2, 2)), L.Conv3DTranspose(2, (2, 1, 2), strides=(2, 1, 1)),
                         L.AveragePooling3D(2, padding="same"), L.ZeroPadding3D(1), L.Cropping3D(((1, 0), (0, 1), (1, 1))),
                         L.UpSampling3D((1, 2, 1)), L.SpatialDropout3D(0.0), L.AdaptiveMaxPooling3D((2, 2, 3)),
                         L.GlobalAveragePooling3D(), L.Dense(3)])


def test_3d_model_trains_as_keras_and_its_files_open_in_both(tmp_path):
    """two epochs of Adam: the same losses and weights; .keras files of each open in the other with the same
    predictions and layer classes"""
    x, y = X5, np.random.default_rng(4).standard_normal((3, 3)).astype(np.float32)
    bm = _trained(bf, layers)
    r = np.random.default_rng(5)
    w0 = [(r.standard_normal(w.shape) * 0.5).astype(np.float32) for w in bm.get_weights()]

    def save(p):
        keras = load()
        km = _trained(keras, keras.layers)
        km.set_weights(w0)
        km.compile(keras.optimizers.Adam(0.01), "mse")
        hk = km.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        km.save(p)
        return dict(loss=hk.history["loss"], w1=km.get_weights(), p=km.predict(x, verbose=0),
                    classes=[type(l).__name__ for l in km.layers])
    k = keras_file(tmp_path / "theirs.keras", save)
    bm.set_weights(w0)
    bm.compile(bf.optimizers.Adam(0.01), "mse")
    hb = bm.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=2e-5)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    bm.save(tmp_path / "ours.keras")

    def opened():
        theirs = load().models.load_model(tmp_path / "ours.keras")
        return theirs.predict(x, verbose=0), [type(l).__name__ for l in theirs.layers]
    theirs, classes = case(opened, files=[tmp_path / "ours.keras"])
    np.testing.assert_allclose(theirs, bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert classes == k["classes"] == [type(l).__name__ for l in bm.layers]
    ours = bf.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), k["p"], rtol=1e-5, atol=1e-6)
    assert [type(l).__name__ for l in ours.layers] == k["classes"]


def test_1d_depthwise_and_separable_files_open_in_keras_and_back(tmp_path):
    x = np.random.default_rng(6).standard_normal((2, 9, 3)).astype(np.float32)
    mk = lambda M, L: M.Sequential([M.Input((9, 3)), L.DepthwiseConv1D(3, depth_multiplier=2),   # noqa: E731
                                    L.SeparableConv1D(4, 2, strides=2, padding="same"),
                                    L.AdaptiveAveragePooling1D(2, data_format="channels_first")])
    bm = mk(bf, layers)
    bm.set_weights([np.random.default_rng(7).standard_normal(w.shape).astype(np.float32) for w in bm.get_weights()])
    bm.save(tmp_path / "ours.keras")

    def opened():
        theirs = load().models.load_model(tmp_path / "ours.keras")
        return theirs.predict(x, verbose=0), [w.shape for w in theirs.get_weights()]
    theirs, shapes = case(opened, files=[tmp_path / "ours.keras"])
    np.testing.assert_allclose(theirs, bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert [tuple(s) for s in shapes] == [w.shape for w in bm.get_weights()] == [(3, 3, 2), (6,), (2, 6, 1),
                                                                               (1, 6, 4), (4,)]
    again = bf.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_array_equal(again.predict(x, verbose=0), bm.predict(x, verbose=0))


def test_3d_model_plan_holds_its_fit():
    x, y = np.concatenate([X5] * 6), np.random.default_rng(8).standard_normal((18, 3)).astype(np.float32)
    m = _trained(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert assert_plan_equals_arenas(m, x, y, batch_size=6).fits


def test_spatial_dropout3d_drops_whole_channels_in_fit_only():
    m = bf.Sequential([bf.Input((2, 3, 4, 8)), layers.SpatialDropout3D(0.5, seed=1)])
    x = np.ones((4, 2, 3, 4, 8), np.float32)
    np.testing.assert_array_equal(m.predict(x, verbose=0), x)
    y = m(x, training=True)
    y = np.asarray(y)
    per_channel = y.reshape(4, -1, 8)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(axis=1) == per_channel.max(axis=1)).all()   # one value per sample and channel
    assert 0 < (per_channel[:, 0] == 0).sum() < 32


def test_keras_aliases_are_the_layers():
    L = layers
    assert (L.Convolution2D, L.Convolution3D, L.Convolution3DTranspose) == (L.Conv2D, L.Conv3D, L.Conv3DTranspose)
    assert (L.SeparableConvolution1D, L.SeparableConvolution2D) == (L.SeparableConv1D, L.SeparableConv2D)
    assert (L.MaxPool2D, L.MaxPool3D, L.AvgPool2D, L.AvgPool3D) == (L.MaxPooling2D, L.MaxPooling3D,
                                                                   L.AveragePooling2D, L.AveragePooling3D)
    assert (L.GlobalAvgPool2D, L.GlobalAvgPool3D, L.GlobalMaxPool3D) == (
        L.GlobalAveragePooling2D, L.GlobalAveragePooling3D, L.GlobalMaxPooling3D)


@pytest.mark.parametrize("make,match", [
    (lambda: layers.Conv3D(2, 3, dilation_rate=2), "dilation_rate"),
    (lambda: layers.Conv3D(2, 3, data_format="channels_first"), "data_format"),
    (lambda: layers.Conv3D(2, (1, 2)), "kernel_size"),
    (lambda: layers.Conv3D(2, 3, groups=2), "groups"),
    (lambda: layers.Conv3DTranspose(2, 3, output_padding=1), "output_padding"),
    (lambda: layers.MaxPooling3D(pool_size=0), "pool_size"),
    (lambda: layers.AveragePooling3D(2, data_format="nchw"), "data_format"),
    (lambda: layers.Cropping3D(cropping=(1, 2)), "cropping"),
    (lambda: layers.UpSampling3D(size=(1, 0, 1)), "size"),
    (lambda: layers.DepthwiseConv1D(3, dilation_rate=2), "dilation_rate"),
    (lambda: layers.AdaptiveMaxPooling2D((2, 2, 2)), "output_size"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_3d_layers_refuse_inputs_of_another_rank_and_windows_that_do_not_fit():
    with pytest.raises(ValueError, match=r"rank 4 \(D, H, W, C\)"):
        bf.Sequential([bf.Input((5, 6, 2)), layers.Conv3D(2, 2)])
    with pytest.raises(ValueError, match="rank 4"):
        bf.Sequential([bf.Input((5, 6, 2)), layers.MaxPooling3D()])
    with pytest.raises(ValueError, match="does not fit"):
        bf.Sequential([bf.Input((2, 6, 6, 1)), layers.Conv3D(2, 3)])
