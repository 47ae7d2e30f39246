"""Keras layers whose engine kinds were retired as compositions of the primitives (docs/internals.md,
"Primitives and compositions"): Flatten is the engine's Reshape to (-1,), a view; Rescaling traces into Unary
multiply / add, linear maps that keep neither input nor output for backward; RepeatVector is a Gather of its
row; a Const passes its anchor no gradient; a composed layer's compute_output_shape is its traced call()'s.
Their values against Keras and their files are pinned in test_elementwise_layers.py; here what the engine runs
and plans."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import directional_check
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: Keras's layer names from fresh counters


def _buffers(m, batch_size=4):
    return [b[0] for b in m.estimate_memory(batch_size=batch_size).engine_plan["buffers"]]


def _model(x, y):
    m = bf.Model(x, y)
    m.compile(optimizer="sgd", loss="mse")
    return m


def test_flatten_is_a_reshape_view_with_keras_shapes():
    x = layers.Input((3, 4))
    flat = layers.Flatten()
    m = _model(x, layers.Dense(2)(flat(layers.Dense(5)(x))))
    assert [type(n.layer).__name__ for n in m._nodes] == ["Dense", "Flatten", "Dense"]
    assert "flatten output" not in _buffers(m)   # a view: its output is its input's buffer
    assert flat.compute_output_shape((None, 3, 5)) == (None, 15)
    assert layers.Flatten().compute_output_shape((7, 2, 3, 4)) == (7, 24)
    v = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(layers.Flatten()(v), v.reshape(2, 12))


def test_rescaling_traces_into_linear_unary_ops_that_keep_nothing_for_backward():
    x = layers.Input((6,))
    h = layers.Dense(6)(x)
    m = _model(x, layers.Dense(1)(layers.Rescaling(2.5, offset=-0.5)(h)))
    kinds = [(type(n.layer).__name__, getattr(n.layer, "op", None)) for n in m._nodes]
    assert kinds == [("Dense", None), ("Unary", "multiply"), ("Unary", "add"), ("Dense", None)]
    assert [l.name for l in m.layers] == ["input_layer", "dense", "rescaling", "dense_1"]   # one layer to the user
    assert m.layers[2].get_weights() == []
    # the Dense output dies at the multiply, the scaled values at the add: neither is kept for backward
    lives = {b[0]: (b[2], b[3]) for b in m.estimate_memory(batch_size=4).engine_plan["buffers"]}
    assert all(lives[n][1] == lives[n][0] + 1 for n in ("dense output", "rescaling_scale output"))
    rng = np.random.default_rng(1)
    directional_check(m, rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((5, 1)).astype(np.float32))


@pytest.mark.parametrize("scale,offset,ops", [(1.0, 0.0, ["multiply"]), (1.0, 2.0, ["add"]), (3.0, 0.0, ["multiply"])])
def test_rescaling_leaves_out_the_op_that_changes_nothing(scale, offset, ops):
    x = layers.Input((2,))
    m = _model(x, layers.Rescaling(scale, offset=offset)(x))
    assert [n.layer.op for n in m._nodes] == ops
    np.testing.assert_array_equal(m.predict(np.array([[1.0, -2.0]], np.float32), verbose=0),
                                  np.array([[1.0, -2.0]], np.float32) * scale + offset)


def test_a_linear_unary_op_plans_less_than_one_that_reads_its_input():
    def plan(op):
        x = layers.Input((64,))
        h = layers.Dense(64)(x)
        y = bf.ops.multiply(h, 3.0) if op == "multiply" else bf.ops.power(h, 3.0)
        return _model(x, layers.Dense(1)(layers.Dense(64)(y))).estimate_memory(batch_size=32).host_bytes
    assert plan("multiply") < plan("power")


def test_a_constant_passes_its_anchor_no_gradient():
    x = layers.Input((3, 4))
    h = layers.Dense(4)(x)
    m = _model(x, layers.Dense(1)(layers.Flatten()(bf.ops.multiply(h, np.arange(12, dtype=np.float32).reshape(3, 4)))))
    assert "Const" in [type(n.layer).__name__ for n in m._nodes]
    assert not any("to add" in n or n.startswith("constant") and "gradient" in n for n in _buffers(m))
    rng = np.random.default_rng(2)
    directional_check(m, rng.standard_normal((4, 3, 4)).astype(np.float32), rng.standard_normal((4, 1)).astype(np.float32))


def test_repeat_vector_is_a_gather_of_its_row():
    x = layers.Input((6,))
    m = _model(x, layers.Dense(1)(layers.Flatten()(layers.RepeatVector(5)(layers.Dense(8)(x)))))
    assert [type(n.layer).__name__ for n in m._nodes] == ["Dense", "Reshape", "Const", "Gather", "Flatten", "Dense"]
    assert [l.name for l in m.layers] == ["input_layer", "dense_1", "repeat_vector", "flatten", "dense"]
    v = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_array_equal(layers.RepeatVector(3)(v), np.repeat(v[:, None], 3, axis=1))
    rng = np.random.default_rng(4)
    directional_check(m, rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((4, 1)).astype(np.float32))


@pytest.mark.parametrize("make,shape,want", [
    (lambda: layers.RepeatVector(3), (None, 4), (None, 3, 4)),
    (lambda: layers.Cropping2D(((1, 1), (2, 0))), (None, 5, 6, 3), (None, 3, 4, 3)),
    (lambda: layers.ZeroPadding1D(2), (7, 5, 3), (7, 9, 3)),
    (lambda: layers.UpSampling1D(2), (None, 5, 3), (None, 10, 3)),
])
def test_a_composed_layer_computes_keras_output_shape_taking_no_layer_name(make, shape, want):
    assert make().compute_output_shape(shape) == want
    assert layers.ZeroPadding2D(1).name == "zero_padding2d" and layers.Reshape((2,)).name == "reshape"
