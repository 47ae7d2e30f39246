"""RandomRotation, RandomZoom and RandomContrast: the transform for a fixed
draw (a degenerate factor range) against Keras 3's layers themselves (its
affine matrices, map_coordinates sampling and fill modes; its contrast
formula), the draws (inside their ranges, one per sample, reproducible per
seed), the identity outside training, gradients through them against finite
differences, exact plans, Keras files both ways, and the failure paths. The
CUDA kernels are checked against the CPU in tests/test_cuda_kernel_files.py."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers
from conftest import engine_gradient
from test_elementwise_layers import fd_check, probe, train_mode_loss


@pytest.fixture(scope="module")
def keras():
    return keras_ref.load()


def probe_x(aug, x):
    """probe (test_elementwise_layers) on given images x (n, H, W, C): aug's training-mode output"""
    n, shape = len(x), x.shape[1:]
    m = bf.Sequential([layers.Input(shape), aug, layers.Flatten(), layers.Dense(n, use_bias=False)])
    m.compile(optimizer="sgd", loss="mse")
    m.set_weights([np.zeros_like(w) for w in m.get_weights()])
    g = engine_gradient(m, x, -np.eye(n, dtype=np.float32))[0]
    return (g.T * (n * n / 2.0)).reshape(x.shape).astype(np.float32)


def coordinate_images(n, h, w):
    """channel 0: the column index, channel 1: the row index; bilinear sampling reproduces a linear
    image exactly, so an output pixel holds its source coordinates"""
    yy, xx = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    return np.broadcast_to(np.stack([xx, yy], -1), (n, h, w, 2)).copy()


def local_matrix(out, y, x):
    """(d src_x / dx, d src_x / dy, d src_y / dx, d src_y / dy) at pixel (y, x) of coordinate images"""
    return (out[:, y, x + 1, 0] - out[:, y, x, 0], out[:, y + 1, x, 0] - out[:, y, x, 0],
            out[:, y, x + 1, 1] - out[:, y, x, 1], out[:, y + 1, x, 1] - out[:, y, x, 1])


# ---- the transform for a fixed draw, against Keras ----

FIXED = {
    "rotation": lambda L, f, i: L.RandomRotation((0.1, 0.1), fill_mode=f, interpolation=i, fill_value=2.5, seed=1),
    "rotation_large": lambda L, f, i: L.RandomRotation((-0.3, -0.3), fill_mode=f, interpolation=i, seed=1),
    "zoom": lambda L, f, i: L.RandomZoom((0.3, 0.3), (-0.2, -0.2), fill_mode=f, interpolation=i, fill_value=2.5,
                                         seed=1),
    "zoom_same": lambda L, f, i: L.RandomZoom((-0.3, -0.3), fill_mode=f, interpolation=i, fill_value=-1.0, seed=1),
}


@pytest.mark.parametrize("fill", ["reflect", "constant", "nearest", "wrap"])
@pytest.mark.parametrize("interp", ["bilinear", "nearest"])
def test_rotation_and_zoom_sample_as_keras_affine_transform(keras, fill, interp):
    # a degenerate factor range fixes the draw: the same angle / zoom in Keras and here
    for name, make in FIXED.items():
        x, out = probe(make(layers, fill, interp), (5, 6, 2), 3)
        ref = np.asarray(make(keras.layers, fill, interp)(x, training=True))
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("value_range", [(0, 255), (10, 60)])
def test_random_contrast_matches_keras_for_a_fixed_factor(keras, value_range):
    # factor (-0.3, 0.3): Keras draws from [1 + 0.3, 1 + 0.3]; (10, 60) clips many of the pixels (data 1..99)
    x, out = probe(layers.RandomContrast((-0.3, 0.3), value_range=value_range, seed=2), (4, 5, 3), 3)
    ref = np.asarray(keras.layers.RandomContrast((-0.3, 0.3), value_range=value_range)(x, training=True))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-5)
    assert not np.allclose(out, x)


# ---- the draws ----

def test_rotation_draws_one_angle_per_sample_inside_its_range():
    x = coordinate_images(48, 9, 9)
    out = probe_x(layers.RandomRotation((-0.05, 0.1), fill_mode="nearest", seed=3), x)
    a0, a1, b0, b1 = local_matrix(out, 4, 4)
    np.testing.assert_allclose(a0, b1, atol=1e-4)      # a rotation: [[c, -s], [s, c]]
    np.testing.assert_allclose(a1, -b0, atol=1e-4)
    deg = np.degrees(np.arctan2(b0, a0))
    assert deg.min() >= -18.0 - 1e-3 and deg.max() <= 36.0 + 1e-3
    assert deg.min() < -10.0 and deg.max() > 28.0       # spread over the range
    assert len(np.unique(np.round(deg, 3))) == len(deg)  # one draw per sample
    again = probe_x(layers.RandomRotation((-0.05, 0.1), fill_mode="nearest", seed=3), x)
    np.testing.assert_array_equal(again, out)
    other = probe_x(layers.RandomRotation((-0.05, 0.1), fill_mode="nearest", seed=4), x)
    assert not np.allclose(other, out)


@pytest.mark.parametrize("width_factor", [None, (0.1, 0.3)])
def test_zoom_draws_per_axis_inside_its_ranges(width_factor):
    x = coordinate_images(48, 9, 9)
    out = probe_x(layers.RandomZoom((-0.2, 0.1), width_factor, fill_mode="nearest", seed=5), x)
    zx, a1, b0, zy = local_matrix(out, 4, 4)
    np.testing.assert_allclose(a1, 0.0, atol=1e-5)
    np.testing.assert_allclose(b0, 0.0, atol=1e-5)
    assert zy.min() >= 0.8 - 1e-5 and zy.max() <= 1.1 + 1e-5 and zy.min() < 0.85 and zy.max() > 1.05
    if width_factor is None:
        np.testing.assert_allclose(zx, zy, atol=1e-6)
    else:
        assert zx.min() >= 1.1 - 1e-5 and zx.max() <= 1.3 + 1e-5
        assert abs(np.corrcoef(zx, zy)[0, 1]) < 0.5       # drawn apart
    np.testing.assert_allclose(out[:, 4, 4], x[:, 4, 4], atol=1e-5)  # about the centre


def test_contrast_draws_one_factor_per_sample_for_all_its_channels():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 4, 4, 3)).astype(np.float32)
    out = probe_x(layers.RandomContrast((0.2, 0.5), value_range=(-1e6, 1e6), seed=6), x)
    xc = x - x.mean((1, 2), keepdims=True)
    oc = out - out.mean((1, 2), keepdims=True)
    f = (oc * xc).sum((1, 2)) / (xc * xc).sum((1, 2))           # (n, C)
    np.testing.assert_allclose(oc, xc * f[:, None, None, :], atol=1e-4)
    np.testing.assert_allclose(f, np.repeat(f[:, :1], 3, 1), rtol=1e-4)
    np.testing.assert_allclose(out.mean((1, 2)), x.mean((1, 2)), atol=1e-5)  # the mean stays
    assert f.min() >= 0.8 - 1e-4 and f.max() <= 1.5 + 1e-4 and f.min() < 0.9 and f.max() > 1.4


# ---- outside training, gradients, plans ----

def stack(L):
    return [L.RandomRotation(0.2, seed=1), L.RandomZoom(0.2, 0.3, fill_mode="constant", seed=2),
            L.RandomContrast(0.4, value_range=(-3, 3), seed=3)]


def test_the_layers_are_the_identity_outside_training(keras):
    x = np.random.default_rng(2).standard_normal((3, 5, 6, 2)).astype(np.float32)
    m = bf.Sequential([layers.Input((5, 6, 2))] + stack(layers))
    np.testing.assert_array_equal(m.predict(x, verbose=0), x)
    km = keras.Sequential([keras.Input((5, 6, 2))] + stack(keras.layers))
    np.testing.assert_allclose(np.asarray(km(x, training=False)), x)
    m.compile(optimizer="sgd", loss="mse")
    assert m.evaluate(x, x, verbose=0) == 0.0


@pytest.mark.parametrize("aug", ["rotation", "zoom", "contrast"])
def test_gradients_pass_through_as_finite_differences_say(aug):
    make = {"rotation": lambda: layers.RandomRotation(0.2, fill_mode="reflect", seed=5),
            "zoom": lambda: layers.RandomZoom((-0.3, 0.2), 0.3, fill_mode="constant", fill_value=0.5, seed=5),
            "contrast": lambda: layers.RandomContrast(0.5, value_range=(-1.2, 1.2), seed=5)}[aug]
    m = bf.Sequential([layers.Input((5,)), layers.Dense(32), layers.Reshape((4, 4, 2)), make(), layers.Flatten(),
                       layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
    fd_check(m, x, y, eps=1e-3, loss=train_mode_loss)


def test_a_model_with_the_layers_trains_with_an_exact_plan():
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((32, 6, 6, 2)).astype(np.float32), rng.standard_normal((32, 2)).astype(np.float32)
    m = bf.Sequential([layers.Input((6, 6, 2))] + stack(layers) + [layers.Conv2D(3, 3), layers.Flatten(),
                                                                   layers.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    plan = m.estimate_memory(batch_size=8)
    h = m.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert np.all(np.isfinite(h.history["loss"]))
    arenas = m._engine.weight_arena_bytes + m._engine.optimizer_arena_bytes + sum(
        s["run_high_water"] for s in m._last_run_stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas


# ---- Keras files ----

def file_stack(L):
    return [L.RandomRotation((-0.1, 0.2), fill_mode="wrap", interpolation="nearest", seed=4, fill_value=1.5),
            L.RandomZoom(0.2, seed=5), L.RandomZoom((-0.1, 0.3), (0.1, 0.2), fill_mode="constant", seed=6),
            L.RandomContrast(0.3, value_range=(0, 1), seed=7), L.RandomContrast((0.1, 0.2)),
            L.Flatten(), L.Dense(3)]


def configs(model):
    keys = ("factor", "height_factor", "width_factor", "fill_mode", "interpolation", "seed", "fill_value",
            "value_range")
    out = []
    for l in model.layers:
        c = l.get_config()
        out.append({k: (list(c[k]) if isinstance(c[k], (tuple, list)) else c[k]) for k in keys if k in c})
    return out


def test_keras_file_with_these_layers_opens_in_keras_and_back(keras, tmp_path):
    bm = bf.Sequential([layers.Input((5, 5, 2))] + file_stack(layers))
    bm.save(tmp_path / "m.keras")
    km = keras.saving.load_model(tmp_path / "m.keras")
    ref = keras.Sequential([keras.Input((5, 5, 2))] + file_stack(keras.layers))
    assert configs(km) == configs(ref)
    assert [type(l).__name__ for l in km.layers] == [type(l).__name__ for l in bm.layers]
    x = np.random.default_rng(2).random((3, 5, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(km(x, training=False)), bm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    km.save(tmp_path / "k.keras")
    back = bf.models.load_model(tmp_path / "k.keras")
    assert configs(back) == configs(bm) == configs(km)
    np.testing.assert_allclose(back.predict(x, verbose=0), bm.predict(x, verbose=0), rtol=1e-6)


# ---- failure paths ----

@pytest.mark.parametrize("make,words", [
    (lambda: layers.RandomRotation(1.5), "factor"),
    (lambda: layers.RandomRotation((0.1, 0.2, 0.3)), "factor"),
    (lambda: layers.RandomRotation("a"), "factor"),
    (lambda: layers.RandomRotation(0.1, fill_mode="mirror"), "fill_mode"),
    (lambda: layers.RandomRotation(0.1, interpolation="bicubic"), "interpolation"),
    (lambda: layers.RandomRotation(0.1, seed=-2), "seed"),
    (lambda: layers.RandomRotation(0.1, data_format="channels_first"), "data_format"),
    (lambda: layers.RandomZoom(-1.0), "height_factor"),
    (lambda: layers.RandomZoom(0.1, (0.1, 1.5)), "width_factor"),
    (lambda: layers.RandomZoom(0.1, fill_value="x"), "fill_value"),
    (lambda: layers.RandomContrast(1.5), "factor"),
    (lambda: layers.RandomContrast(-0.1), "factor"),
    (lambda: layers.RandomContrast((0.5, -0.1)), "factor"),
    (lambda: layers.RandomContrast(0.1, value_range=(1, 0)), "value_range"),
    (lambda: layers.RandomContrast(0.1, value_range=5), "value_range"),
])
def test_bad_arguments_raise_naming_the_argument(make, words):
    with pytest.raises(ValueError, match=words):
        make()


@pytest.mark.parametrize("layer", [lambda: layers.RandomRotation(0.1), lambda: layers.RandomZoom(0.1),
                                   lambda: layers.RandomContrast(0.1)])
def test_the_layers_refuse_inputs_that_are_not_images(layer):
    with pytest.raises(ValueError, match="rank 3"):
        bf.Sequential([layers.Input((4, 4)), layer()])
