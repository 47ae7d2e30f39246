"""DepthwiseConv2D added through the layer registry (CONTRIBUTING.md): its C
file csrc/core/layers/depthwise.c, its kernels csrc/cpu/depthwise.c and
csrc/cuda/depthwise.cu, its class in python/boundfit/layers/conv.py.
Pinned: the forward against a NumPy reference (Keras 3 semantics:
depthwise_kernel (kh, kw, C, M), output channel c*M + m, 'valid' / 'same'
padding, strides, bias, activation), the gradients against finite
differences, the weights' Keras names and shapes, the plan against the
arenas, and Keras 3 itself: same weights, same predictions and training, files
that open in both."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers
from boundfit._core import LAYER_KINDS
from conftest import engine_gradient


DepthwiseConv2D = layers.DepthwiseConv2D


def reference(x, w, b, strides, padding, act=None):
    """NumPy DepthwiseConv2D: x (B,H,W,C), w (kh,kw,C,M) -> (B,OH,OW,C*M)"""
    B, H, W, C = x.shape
    kh, kw, _, M = w.shape
    sh, sw = strides
    if padding == "same":
        oh, ow = -(-H // sh), -(-W // sw)
        ph, pw = max((oh - 1) * sh + kh - H, 0), max((ow - 1) * sw + kw - W, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (H - kh) // sh + 1, (W - kw) // sw + 1
    out = np.zeros((B, oh, ow, C, M), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i:i + sh * oh:sh, j:j + sw * ow:sw, :].astype(np.float64)  # (B,oh,ow,C)
            out += patch[..., None] * w[i, j].astype(np.float64)
    out = out.reshape(B, oh, ow, C * M)
    if b is not None:
        out += b
    return np.maximum(out, 0) if act == "relu" else out


CASES = [((3, 3), (1, 1), "valid", 1, True), ((3, 3), (2, 2), "same", 2, True), ((2, 3), (1, 2), "same", 3, False),
         ((3, 2), (2, 1), "valid", 2, True)]


@pytest.mark.parametrize("kernel,strides,padding,dm,use_bias", CASES)
def test_depthwise_forward_matches_numpy(kernel, strides, padding, dm, use_bias):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 7, 8, 3)).astype(np.float32)
    layer = DepthwiseConv2D(kernel, strides=strides, padding=padding, depth_multiplier=dm, use_bias=use_bias,
                            activation="relu")
    m = bf.Sequential([bf.Input((7, 8, 3)), layer])
    ws = m.get_weights()
    assert ws[0].shape == (kernel[0], kernel[1], 3, dm)
    if use_bias:
        assert ws[1].shape == (3 * dm,)
        ws[1] = rng.standard_normal(3 * dm).astype(np.float32)
        m.set_weights(ws)
    want = reference(x, ws[0], ws[1] if use_bias else None, strides, padding, "relu")
    got = m.predict(x, verbose=0)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel,strides,padding,dm,use_bias", CASES)
def test_depthwise_gradients_match_finite_differences(kernel, strides, padding, dm, use_bias):
    """engine gradients of an MSE loss against central differences of the
    NumPy reference in float64: the depthwise kernel and bias directly, and
    the input's gradient through a 1x1 Conv2D in front (its kernel's)"""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 7, 8, 3)).astype(np.float32)
    m = bf.Sequential([bf.Input((7, 8, 3)), layers.Conv2D(3, 1, use_bias=False),
                       DepthwiseConv2D(kernel, strides=strides, padding=padding, depth_multiplier=dm,
                                       use_bias=use_bias, activation="tanh")])
    y = rng.standard_normal(m.predict(x, verbose=0).shape).astype(np.float32)
    m.compile(optimizer="sgd", loss="mse")
    got = engine_gradient(m, x, y)
    w0 = [a.astype(np.float64) for a in m.get_weights()]
    x64 = x.astype(np.float64)

    def loss(ws):
        h = np.einsum("bhwc,cd->bhwd", x64, ws[0][0, 0])
        out = np.tanh(reference(h, ws[1], ws[2] if use_bias else None, strides, padding))
        return np.mean((out - y) ** 2)

    eps = 1e-5
    for k, w in enumerate(w0):
        want = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            wp = [a.copy() for a in w0]
            wm = [a.copy() for a in w0]
            wp[k][idx] += eps
            wm[k][idx] -= eps
            want[idx] = (loss(wp) - loss(wm)) / (2 * eps)
        np.testing.assert_allclose(got[k], want, rtol=1e-3, atol=1e-5 * np.abs(want).max())


def test_depthwise_rejects_a_window_larger_than_its_input():
    with pytest.raises(ValueError, match="does not fit"):
        bf.Sequential([bf.Input((2, 2, 3)), DepthwiseConv2D((3, 3))])


def test_depthwise_runs_the_same_on_the_emu_device():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 6, 6, 2)).astype(np.float32)
    m = bf.Sequential([bf.Input((6, 6, 2)), DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)])
    np.testing.assert_array_equal(m.predict(x, verbose=0), m.predict(x, verbose=0, device="emu"))


def test_depthwise_plan_holds_its_fit():
    from conftest import assert_plan_equals_arenas
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 9, 9, 4)).astype(np.float32)
    y = rng.integers(0, 3, 32)
    m = bf.Sequential([bf.Input((9, 9, 4)), DepthwiseConv2D(3, padding="same", depth_multiplier=2, activation="relu"),
                       layers.GlobalAveragePooling2D(), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert_plan_equals_arenas(m, x, y, batch_size=16)


def test_depthwise_conv2d_matches_keras_and_its_files_open_in_both(tmp_path):
    keras = keras_ref.load()

    def build(M):
        return M.Sequential([M.Input((9, 8, 4)),
                             M.layers.DepthwiseConv2D((3, 3), strides=2, padding="same", depth_multiplier=2,
                                                      activation="relu"),
                             M.layers.DepthwiseConv2D(2, use_bias=False), M.layers.Flatten(), M.layers.Dense(3)])
    km, bm = build(keras), build(bf)
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in km.get_weights()]
    bm.set_weights(km.get_weights())
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((32, 9, 8, 4)).astype(np.float32), rng.standard_normal((32, 3)).astype(np.float32)
    np.testing.assert_allclose(bm.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    km.compile(keras.optimizers.SGD(0.05), "mse")
    bm.compile(bf.optimizers.SGD(0.05), "mse")
    hk = km.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    hb = bm.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], hk.history["loss"], rtol=1e-4)
    for a, b in zip(km.get_weights(), bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    bm.save(tmp_path / "dw.keras")
    theirs = keras.models.load_model(tmp_path / "dw.keras")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), bm.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    km.save(tmp_path / "k.keras")
    ours = bf.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-5, atol=1e-5)

