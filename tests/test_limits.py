"""The engine's fixed limits are large and stated (boundfit._core.MAX_INPUTS, MAX_NODE_INPUTS,
MAX_NODE_INPUTS_TOTAL, MAX_OUTPUTS, MAX_RANK; csrc/core/model.h): a tabular model with one Input per feature
column (40 of them), merged by a Concatenate and an Add of more than 16 tensors, trains as Keras 3 on the same
weights with an exact plan and a .keras round trip; past each limit the model is refused with the limit's name
and number."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, graph, layers
from conftest import assert_plan_equals_arenas
from helpers.keras_compare import against_keras
from keras_ref import load

NF, NADD = 40, 20   # feature columns; the first NADD go through their own Dense into one Add


def _tabular(K, Ls):
    """40 inputs (one feature column each); columns 0..19 each through a Dense(3), the 20 added; the Add and all
    40 columns concatenated (41 tensors) into the head"""
    ins = [K.Input((1,), name=f"f{k}") for k in range(NF)]
    added = Ls.Add()([Ls.Dense(3, name=f"d{k}")(ins[k]) for k in range(NADD)])
    h = Ls.Concatenate()([added] + ins)
    return K.Model(ins, Ls.Dense(1, name="head")(Ls.Dense(4, activation="tanh", name="mix")(h)))


def _columns(n=12, seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal((n, 1)).astype(np.float32) for _ in range(NF)]


def test_forty_inputs_merged_by_concatenate_and_add_of_more_than_16_equal_keras_values_and_gradients():
    x = _columns()
    y = np.random.default_rng(1).standard_normal((12, 1)).astype(np.float32)
    mb = against_keras(_tabular, x, y, rtol=2e-5)
    assert len(mb.inputs) == NF


def test_forty_inputs_train_with_an_exact_plan_and_round_trip_through_keras_files(tmp_path):
    keras = load()
    x = _columns(16)
    y = np.random.default_rng(2).standard_normal((16, 1)).astype(np.float32)
    m = _tabular(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, x, y, batch_size=8)
    m.save(tmp_path / "tab.keras")
    k = keras.saving.load_model(tmp_path / "tab.keras")
    np.testing.assert_allclose(k.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    back = bf.models.load_model(tmp_path / "tab.keras")
    np.testing.assert_array_equal(back.predict(x, verbose=0), m.predict(x, verbose=0))


def test_the_limits_are_stated_as_core_constants():
    assert (_core.MAX_INPUTS, _core.MAX_NODE_INPUTS, _core.MAX_OUTPUTS, _core.MAX_RANK) == (256, 256, 8, 5)
    assert _core.MAX_NODE_INPUTS_TOTAL == 16 * _core.MAX_LAYERS


def _too_many_inputs():
    ins = [bf.Input((1,)) for _ in range(_core.MAX_INPUTS + 1)]
    return bf.Model(ins, layers.Concatenate()([layers.Concatenate()(ins[:200]), layers.Concatenate()(ins[200:])]))


def _too_many_merged():
    x = bf.Input((1,))
    return layers.Concatenate()([x] * (_core.MAX_NODE_INPUTS + 1))


def _too_many_in_all():
    """MAX_NODE_INPUTS_TOTAL + 256 input ids (Concatenates of 256), counted by the engine before any node is read"""
    x = bf.Input((1,))
    spec = graph.compile_graph(bf.Model(x, layers.Concatenate()([x, x]))).specs[0]
    return _core.Model([dict(spec, inputs=[0] * 256)] * (_core.MAX_NODE_INPUTS_TOTAL // 256 + 1), (1,), 0)


def _too_many_outputs():
    x = bf.Input((2,))
    return bf.Model(x, [layers.Dense(1)(x) for _ in range(_core.MAX_OUTPUTS + 1)]).estimate_memory(batch_size=2)


@pytest.mark.parametrize("build, message", [
    (_too_many_inputs, r"1 to 256 inputs \(boundfit._core.MAX_INPUTS\), got 257"),
    (_too_many_merged, r"1 to 256 input tensors, got 257 \(boundfit._core.MAX_NODE_INPUTS\)"),
    (_too_many_in_all, r"1048832 input tensors in all, at most 1048576 \(boundfit._core.MAX_NODE_INPUTS_TOTAL\)"),
    (_too_many_outputs, r"1 to 8 outputs \(boundfit._core.MAX_OUTPUTS\), got 9"),
], ids=["inputs", "node_inputs", "node_inputs_total", "outputs"])
def test_a_model_past_a_limit_is_refused_naming_the_limit(build, message):
    with pytest.raises(ValueError, match=message):
        build()


# ---- rank-4 samples (a video's (T, H, W, C)) through the rank-generic kinds ----

SAMPLE = (2, 3, 4, 2)


def _video(K, Ls):
    """Dense on the last axis, Permute, Reshape, Add, keras.ops elementwise, slicing and a mean over the last axis,
    Flatten: every tensor but the last ones of rank 4 per sample"""
    o = K.ops
    x = K.Input(SAMPLE)
    h = Ls.Dense(3, activation="tanh")(x)                               # (2, 3, 4, 3)
    p = Ls.Permute((3, 1, 4, 2))(h)                                     # (4, 2, 3, 3)
    r = Ls.Reshape((2, 4, 3, 3))(p)                                     # (2, 4, 3, 3)
    s = Ls.Add()([r, Ls.Dense(3)(Ls.Reshape((2, 4, 3, 3))(h))])
    e = o.exp(0.5 * s) - o.square(s) * s + o.maximum(s, 0.1)
    m = o.mean(e, axis=-1)                                              # (2, 4, 3)
    cut = e[:, 1, ::2, 1:3]                                             # (2, 2, 3)
    return K.Model(x, Ls.Dense(2)(Ls.Concatenate()([Ls.Flatten()(e), Ls.Flatten()(m), Ls.Flatten()(cut)])))


def test_rank4_samples_through_reshape_permute_dense_add_flatten_and_ops_equal_keras():
    r = np.random.default_rng(3)
    x = r.standard_normal((6,) + SAMPLE).astype(np.float32)
    y = r.standard_normal((6, 2)).astype(np.float32)
    against_keras(_video, x, y, rtol=3e-5)


def test_rank4_samples_train_with_an_exact_plan_and_round_trip_through_keras_files(tmp_path):
    keras = load()
    r = np.random.default_rng(4)
    x = r.standard_normal((16,) + SAMPLE).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)
    m = _video(bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert_plan_equals_arenas(m, x, y, batch_size=8)
    m.save(tmp_path / "video.keras")
    k = keras.saving.load_model(tmp_path / "video.keras")
    np.testing.assert_allclose(k.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    back = bf.models.load_model(tmp_path / "video.keras")
    np.testing.assert_array_equal(back.predict(x, verbose=0), m.predict(x, verbose=0))


ENGINE = r" \({}\) takes samples of at most 3 axes, got a rank-4 sample \(2, 3, 4, 2\)"


@pytest.mark.parametrize("make, message", [
    (lambda: layers.Conv2D(2, 3), ENGINE.format("CONV2D")),
    (lambda: layers.LayerNormalization(), ENGINE.format("LAYERNORM")),
    (lambda: layers.BatchNormalization(), ENGINE.format("BATCHNORM")),
    (lambda: layers.MaxPooling2D(), r": expects input of rank 3 \(H, W, C\) per sample, got shape \(None, 2, 3, 4, 2\)"),
], ids=["Conv2D", "LayerNormalization", "BatchNormalization", "MaxPooling2D"])
def test_a_kind_of_lower_rank_refuses_a_rank4_sample_by_name(make, message):
    layer = make()
    with pytest.raises(ValueError, match=rf"^{layer.name}{message}"):
        layer(bf.Input(SAMPLE))


def test_a_sample_of_more_than_max_rank_axes_is_refused_naming_the_limit():
    with pytest.raises(ValueError, match=r"0 to 5 dimensions \(excluding the batch axis; boundfit._core.MAX_RANK\), "
                                         "got 6"):
        bf.Sequential([layers.Input((1,) * 6), layers.Flatten()]).predict(np.zeros((1,) + (1,) * 6), verbose=0)
