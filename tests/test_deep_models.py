"""Models with more layer calls than the engine's old limit of 128 (a
ResNet50-sized Keras model has ~177 layers; keras.ops calls expand into one or
more engine nodes each): a 300-node residual MLP of Dense, Activation, Add and
keras.ops calls builds, trains and predicts as Keras 3 does from the same
weights, with an exact memory plan, and on CUDA (or its emulation) as on the
CPU; a model of 2000 layers predicts and fits with an exact plan, its tables
sized by its own counts; one past boundfit._core.MAX_LAYERS (a stated bound,
1 << 16) is refused with an error that says what to do, by the graph compiler
and by the engine itself."""

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


def test_engine_limit_is_exposed_and_large():
    """a stated bound (the tables are sized by each model's own counts), not a size"""
    assert _core.MAX_LAYERS == 1 << 16 and _core.MAX_NODE_INPUTS_TOTAL == 16 * _core.MAX_LAYERS


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


DEEP = 2000


@pytest.fixture(scope="module")
def deep_chain():
    """DEEP Dense(2, tanh) layers: its tables and buffer table sized by its own counts, ~4 planned buffers a node"""
    inp = bf.Input((2,))
    h = inp
    for _ in range(DEEP):
        h = bf.layers.Dense(2, activation="tanh")(h)
    return bf.Model(inp, h)


def test_a_model_of_2000_layers_predicts_as_numpy_and_fits_with_an_exact_plan(deep_chain):
    m = deep_chain
    assert len(graph.compile_graph(m).specs) == DEEP
    x = np.array([[0.5, -1.0], [2.0, 0.25], [-0.3, 0.7], [1.0, 1.0]], np.float32)
    w = m.get_weights()
    want = x.astype(np.float64)
    for k, b in zip(w[0::2], w[1::2]):
        want = np.tanh(want @ k + b)
    np.testing.assert_allclose(m.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)
    m.compile(bf.optimizers.SGD(0.1), "mse")
    assert_plan_equals_arenas(m, x, np.zeros((4, 2), np.float32), batch_size=2)
    assert np.isfinite(m.evaluate(x, np.zeros((4, 2), np.float32), verbose=0))


def test_a_model_of_2000_layers_saves_loads_and_lists_its_variables(deep_chain, tmp_path):
    """the .keras writer walks the graph on a stack of its own (it was a Python recursion: RecursionError), and
    the variables, summary rows and weights read the engine's layer table once, not once per layer"""
    m = deep_chain
    x = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    m.save(tmp_path / "deep.keras")
    back = bf.saving.load_model(tmp_path / "deep.keras")
    np.testing.assert_array_equal(back.predict(x, verbose=0), m.predict(x, verbose=0))
    vs = m.trainable_weights
    assert len(vs) == 2 * DEEP and [v.path for v in vs[:2]] == [f"{m.layers[1].name}/kernel", f"{m.layers[1].name}/bias"]
    lines = []
    m.summary(print_fn=lines.append)
    assert f"Total params: {6 * DEEP:,}" in "\n".join(lines)


def test_a_run_s_tables_grow_with_the_model_not_with_the_limit(deep_chain):
    small = bf.Sequential([bf.Input((2,)), bf.layers.Dense(2)])
    big, one = deep_chain._engine.run_tables_bytes, small._engine.run_tables_bytes
    assert one < 256 << 10 and big > 10 * one
    assert deep_chain._engine.tables_bytes < 3000 * DEEP < 1 << 24   # ~2.3 KB a node


def test_a_model_past_the_limit_is_refused_with_what_to_do(monkeypatch):
    """the graph compiler's check (at a lowered limit: a model of MAX_LAYERS nodes takes seconds to build)"""
    monkeypatch.setattr(graph, "MAX_LAYERS", 3)
    inp = bf.Input((2,))
    h = inp
    for _ in range(4):
        h = bf.layers.Activation("relu")(h)
    with pytest.raises(ValueError, match=r"4 layer calls .*at most 3 are supported: give layers their activation="):
        bf.Model(inp, h)


def test_the_engine_refuses_too_many_nodes_itself():
    """the C module's own check, for a node list that did not come through the graph compiler"""
    inp = bf.Input((2,))
    spec = graph.compile_graph(bf.Model(inp, bf.layers.Activation("relu")(inp))).specs[0]
    with pytest.raises(ValueError, match=rf"{_core.MAX_LAYERS + 1} layer calls, at most {_core.MAX_LAYERS}"):
        _core.Model([spec] * (_core.MAX_LAYERS + 1), (2,), 0)
    chain = [dict(spec, name=f"a{i}", inputs=[i]) for i in range(DEEP)]  # node i reads tensor i
    assert len(_core.Model(chain, (2,), 0).layers_info()) == DEEP
