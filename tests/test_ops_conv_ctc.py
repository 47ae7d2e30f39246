"""The last keras.ops names (ops_conv.py, ops_ctc.py, ops_special.py,
ops_rearrange.py, keras.ops.numpy) and keras.losses.CTC, against Keras 3 on
JAX: one model of the symbolic cases after a trainable shift x + b (values,
b's gradient, the same cases on arrays, the plan against the arenas, central
differences); a convolution whose kernel is a custom layer's weight trained a
step; ctc_loss in a model and CTC trained in compile() (losses and weights
after two steps, central differences); the cases on arrays only; refusals.
Keras's results are recorded (helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: names counted from each test's start
from conftest import assert_plan_equals_arenas, directional_check, engine_gradient
from helpers.keras_compare import close
from helpers.keras_recorded import case
from test_ops_reduce import flat, keras_values_and_grads, shifted

B = 3
R = np.random.default_rng(11)
K2, K2T = R.standard_normal((3, 3, 4, 5)).astype(np.float32), R.standard_normal((3, 3, 5, 4)).astype(np.float32)
K1, K1T = R.standard_normal((3, 4, 2)).astype(np.float32), R.standard_normal((2, 3, 4)).astype(np.float32)
K3 = R.standard_normal((2, 2, 2, 4, 3)).astype(np.float32)
DW2, DW1 = R.standard_normal((3, 3, 4, 2)).astype(np.float32), R.standard_normal((3, 4, 1)).astype(np.float32)
PW2 = R.standard_normal((1, 1, 8, 3)).astype(np.float32)

def _swapped(fn):
    """Keras 3.15's symbolic ConvTranspose passes its output_padding as its padding: on Keras's side the op runs
    inside a Lambda, on JAX arrays"""
    return lambda o, h: fn(o, h) if o is bf.ops else keras_ref.load().layers.Lambda(lambda t: fn(o, t))(h)


# (name, fn(o, h)) on h (B, 6, 6, 4); each output flattened and concatenated
CASES = [
    ("i0", lambda o, h: o.i0(h * 3.0)),
    ("rearrange", lambda o, h: o.rearrange(h, "b h w c -> b c (h w)")),
    ("rearrange_split", lambda o, h: o.rearrange(h, "b (h a) w c -> b h w (a c)", a=2)),
    ("conv2d", lambda o, h: o.conv(h, K2)), ("conv2d_same_s2", lambda o, h: o.conv(h, K2, 2, "same")),
    ("conv1d_dilated", lambda o, h: o.nn.conv(o.reshape(h, (-1, 36, 4)), K1, 1, "same", dilation_rate=2)),
    ("conv3d", lambda o, h: o.conv(o.reshape(h, (-1, 3, 2, 6, 4)), K3, (1, 1, 2))),
    ("conv_transpose2d", _swapped(lambda o, h: o.conv_transpose(h, K2T, 2, "same"))),
    ("conv_transpose1d", _swapped(lambda o, h: o.conv_transpose(o.reshape(h, (-1, 36, 4)), K1T, 2))),
    ("depthwise2d", lambda o, h: o.depthwise_conv(h, DW2, 1, "same")),
    ("depthwise1d", lambda o, h: o.depthwise_conv(o.reshape(h, (-1, 36, 4)), DW1, 2)),
    ("separable2d", lambda o, h: o.separable_conv(h, DW2, PW2, 2, "same")),
]
SHAPE = (6, 6, 4)


def ops_model(K, cases=CASES):
    x = K.Input(SHAPE, batch_size=None if K is bf else B)   # Keras 3.15's symbolic rearrange needs a batch size
    h = shifted(K)()(x)
    return K.Model(x, flat(K, [fn(K.ops, h) for _, fn in cases]))


def on_arrays(x):
    return np.concatenate([np.asarray(fn(bf.ops, x), np.float32).reshape(len(x), -1) for _, fn in CASES], axis=1)


def data(seed=0):
    return np.random.default_rng(seed).standard_normal((B,) + SHAPE).astype(np.float32) * 0.5


def target(n, seed=5):
    return np.random.default_rng(seed).standard_normal((B, n)).astype(np.float32)


@pytest.fixture(scope="module")
def model():
    return ops_model(bf)


def test_conv_i0_rearrange_match_keras_values_gradient_arrays_and_plan(model):
    x = data()
    y = target(model.output_shape[-1])

    def compute():
        (out, (g,)), = keras_values_and_grads({"ops": (ops_model(keras_ref.load()), x, y)}).values()
        return out, g
    want, gk = case(compute)
    got = model.predict(x, batch_size=B, verbose=0)
    close(want, got, rtol=2e-5)
    close(want, on_arrays(x), rtol=2e-5)                      # on arrays: NumPy, Keras's values
    model.compile(optimizer="sgd", loss="mse")
    close(gk, engine_gradient(model, x, y)[0], rtol=5e-5)      # b's gradient, through the frozen kernels
    assert_plan_equals_arenas(model, x, y, batch_size=B)


def test_conv_i0_rearrange_gradients_match_central_differences(model):
    model.compile(optimizer="sgd", loss="mse")
    directional_check(model, data(1), target(model.output_shape[-1], seed=7), eps=1e-2,
                      fixed=range(1, len(model.get_weights())))


def test_a_keras_file_of_the_symbolic_cases_round_trips_through_boundfit_and_keras(tmp_path):
    """every case read back by boundfit; by Keras those Keras 3.15 reads (its Rearrange fails on a batch axis of
    unknown size, its ConvTranspose swaps padding and output_padding)"""
    x = data()
    for name, cases in (("all", CASES), ("keras", [c for c in CASES if not c[0].startswith(("rearr", "conv_t"))])):
        mb = ops_model(bf, cases)
        got = mb.predict(x, batch_size=B, verbose=0)
        path = str(tmp_path / f"{name}.keras")
        mb.save(path)
        np.testing.assert_array_equal(bf.models.load_model(path).predict(x, batch_size=B, verbose=0), got)
    ref = case(lambda: np.asarray(keras_ref.load().models.load_model(path).predict(x, verbose=0)), files=[path])
    close(ref, got, rtol=2e-5)


def kernel_model(K):
    """ops.conv with a custom layer's own weight as its kernel (trainable)"""
    class KernelConv(K.layers.Layer):
        def build(self, shape):
            self.k = self.add_weight(shape=(3, 3, 4, 2), initializer="glorot_uniform", name="k")

        def call(self, x):
            return K.ops.conv(x, self.k, 1, "same")
    x = K.Input(SHAPE)
    return K.Model(x, K.layers.Flatten()(KernelConv()(x)))


def test_a_conv_kernel_that_is_a_custom_layers_weight_trains_as_in_keras():
    x, mb = data(2), kernel_model(bf)
    y = target(mb.output_shape[-1], seed=3)
    w0 = [np.asarray(w) for w in mb.get_weights()]

    def compute():
        keras = keras_ref.load()
        mk = kernel_model(keras)
        mk.set_weights(w0)
        mk.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
        out = np.asarray(mk.predict(x, verbose=0))
        hist = mk.fit(x, y, batch_size=B, epochs=2, shuffle=False, verbose=0).history["loss"]
        return out, hist, mk.get_weights()[0]
    out, hist, w = case(compute)
    close(out, mb.predict(x, batch_size=B, verbose=0), rtol=2e-5)
    mb.compile(optimizer=bf.optimizers.SGD(0.05), loss="mse")
    h = mb.fit(x, y, batch_size=B, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h, hist, rtol=2e-5)
    close(w, mb.get_weights()[0], rtol=2e-4)


# ---- CTC ----
T, C, N = 6, 5, 3
CTC_X = np.random.default_rng(4).standard_normal((4, T, 3)).astype(np.float32)
LABELS = np.array([[2, 2, 1], [3, 4, 0], [1, 0, 0], [4, 1, 3]], np.float32)
LOGITS = np.random.default_rng(6).standard_normal((4, T, C)).astype(np.float32)


def test_ctc_loss_on_symbolic_tensors_is_keras_ctc_loss_per_sample():
    ti, oi, li, si = bf.Input((N,)), bf.Input((T, C)), bf.Input(()), bf.Input(())
    m = bf.Model([ti, oi, li, si], bf.ops.ctc_loss(ti, oi, li, si))
    m2 = bf.Model([ti, oi, li], bf.ops.ctc_loss(ti, oi, li, T))          # a number: every output length
    lens, steps = np.array([3, 2, 1, 3], np.float32), np.array([6, 4, 5, 6], np.float32)

    def compute():
        o = keras_ref.load().ops
        full = o.ctc_loss(LABELS, LOGITS, lens, np.full(4, T))
        return np.asarray(o.ctc_loss(LABELS, LOGITS, lens, steps)), np.asarray(full)
    want, want_full = case(compute)
    close(want, m.predict([LABELS, LOGITS, lens, steps], batch_size=4, verbose=0), rtol=2e-5)
    close(want, bf.ops.ctc_loss(LABELS, LOGITS, lens, steps), rtol=2e-5)
    close(want_full, m2.predict([LABELS, LOGITS, lens], batch_size=4, verbose=0), rtol=2e-5)


def ctc_model(K):
    return K.Sequential([K.Input((T, 3)), K.layers.Dense(C)])


def test_ctc_loss_in_compile_trains_as_keras_and_its_gradient_matches_central_differences():
    y = np.concatenate([LABELS, np.zeros((4, T - N), np.float32)], axis=1)   # labels padded to T with 0
    mb = ctc_model(bf)
    w0 = mb.get_weights()

    def compute():
        keras = keras_ref.load()
        mk = ctc_model(keras)
        mk.set_weights(w0)
        mk.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.CTC())
        return mk.fit(CTC_X, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"], mk.get_weights()
    hist, wk = case(compute)
    mb.compile(optimizer=bf.optimizers.SGD(0.1), loss=bf.losses.CTC())
    np.testing.assert_allclose(bf.losses.CTC()(y, mb.predict(CTC_X, verbose=0)), hist[0], rtol=2e-5)
    np.testing.assert_allclose(mb.fit(CTC_X, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"],
                               hist, rtol=2e-5)
    for a, b in zip(wk, mb.get_weights()):
        close(a, b, rtol=2e-4)
    mb.compile(optimizer="sgd", loss="ctc")
    assert_plan_equals_arenas(mb, CTC_X, y, batch_size=4)
    directional_check(mb, CTC_X, y, eps=1e-2)


# ---- on arrays only ----
NANS = np.array([[1.0, np.nan, 3.0, 4.0, -2.0], [np.nan, 0.5, 0.25, np.nan, 8.0]], np.float32)
ARRAY_CASES = [
    ("nanmedian", (NANS,), {"axis": 1}), ("nanmedian_all", (NANS,), {}),
    ("nanquantile", (NANS, 0.3), {"axis": 1, "keepdims": True}),
    ("nanquantile_qs", (NANS, np.array([0.1, 0.9])), {"axis": 1, "method": "midpoint"}),
    ("nanpercentile", (NANS, 70.0), {"axis": 0, "method": "nearest"}), ("i0", (NANS * 4,), {}),
    ("rearrange", (np.arange(24.0).reshape(2, 3, 4), "a b (c d) -> (d a) c b"), {"d": 2}),
    ("conv_groups", (np.ones((1, 5, 5, 4), np.float32) * np.arange(4), K2[:, :, :2, :4], 1, "same"), {}),
    ("conv_dilated2d", (np.arange(200.0).reshape(2, 5, 5, 4) / 100, K2, 1, "same"), {"dilation_rate": 2}),
    ("conv_transpose_output_padding", (np.arange(100.0).reshape(1, 5, 5, 4) / 50, K2T, 2), {"output_padding": 1}),
    ("conv_transpose3d", (np.arange(48.0).reshape(1, 2, 2, 3, 4) / 20, K3.transpose(0, 1, 2, 4, 3), 2, "same"),
     {}),
    ("ctc_decode_greedy", (LOGITS, np.array([6, 4, 5, 2])), {}),
    ("ctc_decode_unmerged", (LOGITS, np.array([6, 4, 5, 2])), {"merge_repeated": False, "mask_index": 2}),
    ("ctc_decode_beam", (LOGITS, np.array([6, 4, 5, 2])), {"strategy": "beam_search", "beam_width": 4,
                                                            "top_paths": 2}),
]


def _arrays(out):
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _arrays(o)]
    return [np.asarray(out)]


@pytest.mark.parametrize("name,args,kwargs", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_ops_match_keras_on_arrays(name, args, kwargs):
    op = {"conv_groups": "conv", "conv_dilated2d": "conv", "conv_transpose_output_padding": "conv_transpose",
          "conv_transpose3d": "conv_transpose"}.get(name, name.split("_")[0] if not name.startswith("ctc") else
                                                    "ctc_decode")
    ref = case(lambda: _arrays(getattr(keras_ref.load().ops, op)(*args, **kwargs)))
    got = _arrays(getattr(bf.ops, op)(*args, **kwargs))
    assert len(got) == len(ref)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(np.asarray(g, r.dtype), r, rtol=2e-5, atol=1e-5)


def test_keras_ops_numpy_is_the_numpy_ops_of_keras_ops():
    assert bf.ops.numpy.i0 is bf.ops.i0 and bf.ops.numpy.nanmedian is bf.ops.nanmedian
    assert len(vars(bf.ops.numpy)) == 220 and all(vars(bf.ops.numpy)[n] is getattr(bf.ops, n)
                                                  for n in vars(bf.ops.numpy))
    assert bf.ops.nn.conv is bf.ops.conv and bf.ops.nn.ctc_loss is bf.ops.ctc_loss


class HoldsKernel(bf.layers.Layer):
    def build(self, shape):
        self.k = self.add_weight(shape=(3, 3, 4, 2), name="k")

    def call(self, x):
        return bf.ops.matmul(bf.ops.reshape(bf.ops.conv(x, self.k), (-1, 32)), self.k)


@pytest.mark.parametrize("op,call", [
    ("conv", lambda o, h: o.conv(h, h)),
    ("conv", lambda o, h: o.conv(h, K2, dilation_rate=2)),
    ("conv", lambda o, h: o.conv(h, K2[:, :, :2, :4])),
    ("depthwise_conv", lambda o, h: o.depthwise_conv(o.reshape(h, (-1, 3, 2, 6, 4)), K3[..., :1])),
    ("conv_transpose", lambda o, h: o.conv_transpose(h, K2T, 2, output_padding=1)),
    ("nanmedian", lambda o, h: o.nanmedian(h)), ("nanquantile", lambda o, h: o.nanquantile(h, 0.5)),
    ("nanpercentile", lambda o, h: o.nanpercentile(h, 5)), ("ctc_decode", lambda o, h: o.ctc_decode(h[:, 0], 3)),
    ("ctc_loss", lambda o, h: o.ctc_loss(h[:, 0, :, 0], h[:, 0], np.array([1, 2]), 6)),
    ("ctc_loss", lambda o, h: o.ctc_loss(bf.Input((3,)), bf.Input((40, 5)), 3, 40)),   # 40 steps: over 512 calls
    ("rearrange", lambda o, h: o.rearrange(h, "b h w c -> h b w c")),
    ("matmul", lambda o, h: HoldsKernel()(h)),
])
def test_what_the_engine_cannot_take_is_refused_by_name_on_symbolic_tensors(op, call):
    h = bf.Input(SHAPE)
    with pytest.raises(bf.ops.OpNotSupportedError, match=rf"keras\.ops\.{op} "):
        call(bf.ops, h)


@pytest.mark.parametrize("call,arg", [
    (lambda: bf.ops.conv(np.ones((1, 5, 4)), K1, padding="full"), "padding"),
    (lambda: bf.ops.conv(np.ones((1, 5, 4)), K1, strides=0), "strides"),
    (lambda: bf.ops.conv(np.ones((1, 5, 4)), K1, data_format="channels_first"), "data_format"),
    (lambda: bf.ops.conv(np.ones((1, 5, 4)), np.ones((4, 2))), "kernel"),
    (lambda: bf.ops.ctc_decode(LOGITS, np.ones(4), strategy="best"), "strategy"),
    (lambda: bf.ops.ctc_decode(LOGITS, np.ones(4), "beam_search", 2, 3), "top_paths"),
    (lambda: bf.ops.ctc_loss(LABELS, LOGITS[0], 1, 1), "target"),
    (lambda: bf.ops.rearrange(np.ones((2, 6)), "a (b c) -> a b c"), "axes_lengths"),
    (lambda: bf.ops.rearrange(np.ones((2, 6)), "a b c -> a b c"), "pattern"),
    (lambda: bf.losses.ctc(LABELS[0], LOGITS), "y_true"),
])
def test_bad_arguments_raise_naming_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
