"""Models with more layer calls than the engine's old limit of 128 (a
ResNet50-sized Keras model has ~177 layers; keras.ops calls expand into one or
more engine nodes each): a 300-node residual MLP of Dense, Activation, Add and
keras.ops calls builds, trains and predicts as Keras 3 does from the same
weights, with an exact memory plan, and on CUDA (or its emulation) as on the
CPU; a model of MAX_LAYERS nodes runs, one past boundfit._core.MAX_LAYERS is
refused with an error that says what to do, by the graph compiler and by the
engine itself; a step that needs more planned buffers than the planner holds
is refused the same way, the model unchanged."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, graph
from conftest import assert_plan_equals_arenas
from test_cuda_backend import _REASON, _assert_weights_close, _train_both

from helpers.keras_recorded import case
from keras_ref import load

BLOCKS = 60  # 5 nodes a block: Dense, Activation, Add, then ops.multiply and ops.add


def deep_mlp(M=bf, blocks=BLOCKS, width=3):
    """h + tanh(Dense(h)), then h + 0.5 * h in keras.ops, `blocks` times (tiny widths)."""
    L = M.layers
    inp = L.Input((width,))
    h = inp
    for _ in range(blocks):
        h = L.Add()([h, L.Activation("tanh")(L.Dense(width, kernel_initializer="random_normal")(h))])
        h = M.ops.add(h, M.ops.multiply(h, -0.45))  # keeps the values small over 60 blocks
    return M.Model(inp, L.Dense(1)(h))


def test_engine_limit_is_exposed_and_at_least_512():
    assert _core.MAX_LAYERS >= 512


def test_a_model_of_300_layer_calls_trains_and_predicts_as_keras():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)

    def compute():
        keras = load()
        km = deep_mlp(keras)
        w, p0 = km.get_weights(), km.predict(x, verbose=0)
        km.compile(keras.optimizers.Adam(0.01), "mse")
        hk = km.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)  # two steps
        return dict(w=w, p0=p0, loss=hk.history["loss"], w1=km.get_weights(), p1=km.predict(x, verbose=0))
    k = case(compute)
    bm = deep_mlp(bf)
    nodes = len(graph.compile_graph(bm).specs)
    assert 300 <= nodes <= _core.MAX_LAYERS
    assert [w.shape for w in bm.get_weights()] == [w.shape for w in k["w"]]
    bm.set_weights(k["w"])
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p0"], rtol=1e-5, atol=1e-6)
    bm.compile(bf.optimizers.Adam(0.01), "mse")
    hb = bm.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], k["loss"], rtol=1e-4)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(bm.predict(x, verbose=0), k["p1"], rtol=1e-4, atol=1e-5)
    assert_plan_equals_arenas(bm, x, y, batch_size=8)


@pytest.mark.gpu
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_a_deep_model_trains_on_cuda_as_on_the_cpu():
    """the step statistics hold one entry per node (guard bounds of 61 Dense
    layers), then the metric statistics: both read back right on a device"""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = rng.standard_normal((32, 1)).astype(np.float32)
    kw = lambda: dict(optimizer=bf.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    cpu, gpu, hc, hg = _train_both(deep_mlp, kw, x, y, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "deep mlp")
    for k in ("loss", "mae"):
        np.testing.assert_allclose(hg.history[k], hc.history[k], rtol=1e-4)


def test_a_model_at_the_limit_runs_and_one_past_it_is_refused_with_what_to_do():
    inp = bf.Input((2,))
    h = inp
    for _ in range(_core.MAX_LAYERS):
        h = bf.layers.Activation("relu")(h)
    x = np.array([[1.5, -2.0]], np.float32)
    np.testing.assert_array_equal(bf.Model(inp, h).predict(x, verbose=0), [[1.5, 0.0]])
    h = bf.layers.Activation("relu")(h)
    with pytest.raises(ValueError, match=rf"{_core.MAX_LAYERS + 1} layer calls .*at most {_core.MAX_LAYERS} "
                                         r"are supported: give layers their activation="):
        bf.Model(inp, h)


def test_the_engine_refuses_too_many_nodes_itself():
    """the C module's own check, for a node list that did not come through the graph compiler"""
    inp = bf.Input((2,))
    spec = graph.compile_graph(bf.Model(inp, bf.layers.Activation("relu")(inp))).specs[0]
    with pytest.raises(ValueError, match=rf"{_core.MAX_LAYERS + 1} layer calls, at most {_core.MAX_LAYERS}"):
        _core.Model([spec] * (_core.MAX_LAYERS + 1), (2,), 0)
    chain = [dict(spec, name=f"a{i}", inputs=[i]) for i in range(_core.MAX_LAYERS)]  # node i reads tensor i
    assert len(_core.Model(chain, (2,), 0).layers_info()) == _core.MAX_LAYERS


def test_a_step_past_the_planner_s_buffers_is_refused_with_what_to_do_and_the_model_still_predicts():
    """500 Bidirectional LSTMs (with dropout) are within MAX_LAYERS, but training them needs ~5 planned buffers a
    node, more than the planner holds; prediction needs ~3 a node and runs"""
    inp = bf.Input((2, 1))
    h = inp
    for _ in range(500):
        h = bf.layers.Bidirectional(bf.layers.LSTM(1, return_sequences=True, dropout=0.1), merge_mode="sum")(h)
    m = bf.Model(inp, bf.layers.Dense(1)(h))
    m.compile("adam", "mse")
    x = np.ones((4, 2, 1), np.float32)
    w0 = m.get_weights()
    with pytest.raises(ValueError, match="model too large for the planner: its step needs more than 2048 buffers "
                                         r"\(BF_PLAN_MAX in csrc/core/planner.h\); use fewer layer calls"):
        m.fit(x, np.ones((4, 2, 1), np.float32), verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(m.get_weights(), w0))
    assert m.predict(x, verbose=0).shape == (4, 2, 1)
