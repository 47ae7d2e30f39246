"""Integers from Python never truncate or wrap: sizes given to the Keras-facing
constructors, keys of a spec dict built by hand, run-time integers of the
engine's functions, and products of sizes (weights, per-sample outputs, a
batch's buffers) are each range-checked where they are read and refused with
an exception that names the layer or argument and the value, before anything
is allocated."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers

DENSE = _core.LAYER_KINDS["DENSE"]
BIG = 2**32 + 32  # truncated to 32 by a C int before


@pytest.mark.parametrize("make, cls, arg", [
    (lambda v: layers.Dense(v), "Dense", "units"),
    (lambda v: layers.Embedding(v, 4), "Embedding", "input_dim"),
    (lambda v: layers.Embedding(4, v), "Embedding", "output_dim"),
    (lambda v: layers.Conv2D(v, 3), "Conv2D", "filters"),
    (lambda v: layers.Conv1D(v, 3), "Conv1D", "filters"),
    (lambda v: layers.LSTM(v), "LSTM", "units"),
    (lambda v: layers.GRU(v), "GRU", "units"),
    (lambda v: layers.MultiHeadAttention(v, 4), "MultiHeadAttention", "num_heads"),
    (lambda v: layers.RepeatVector(v), "RepeatVector", "n"),
    (lambda v: layers.RandomCrop(v, 2), "RandomCrop", "height"),
    (lambda v: layers.DepthwiseConv2D(3, depth_multiplier=v), "DepthwiseConv2D", "depth_multiplier"),
])
@pytest.mark.parametrize("value", [BIG, 2**31, 0, -1, True, 4.0])
def test_constructors_refuse_a_size_outside_the_engine_range(make, cls, arg, value):
    with pytest.raises(ValueError) as e:
        make(value)
    assert str(e.value) == f"{cls}: {arg} must be a positive integer below 2**31, got {value!r}"


@pytest.mark.parametrize("make, cls, arg", [
    (lambda v: layers.Conv2D(2, v), "Conv2D", "kernel_size"),
    (lambda v: layers.Conv2D(2, 3, strides=(1, v)), "Conv2D", "strides"),
    (lambda v: layers.MaxPooling2D(v), "MaxPooling2D", "pool_size"),
    (lambda v: layers.UpSampling2D(v), "UpSampling2D", "size"),
])
def test_window_sizes_outside_the_engine_range_name_the_layer(make, cls, arg):
    with pytest.raises(ValueError, match=rf"^{cls}: {arg} must be a positive integer below 2\*\*31 or a pair"):
        make(2**31)


def test_numpy_integer_sizes_are_taken_as_ints():
    m = bf.Sequential([bf.Input((np.int64(3),)), layers.Dense(np.int64(4)), layers.Embedding(np.int32(5), np.uint8(2))])
    dense = m.layers[0]
    assert type(dense.units) is int and dense.units == 4
    assert [w.shape for w in m.get_weights()] == [(3, 4), (4,), (5, 2)]


@pytest.mark.parametrize("key, value, message", [
    ("units", BIG, "dense: units must be an integer from 0 to 2147483647, got 4294967328"),
    ("units", -5, "dense: units must be an integer from 0 to 2147483647, got -5"),
    ("use_bias", 2, "dense: use_bias must be an integer from 0 to 1, got 2"),
    ("act", 2**40, "dense: act must be an integer from 0 to"),
    ("inputs", (2**32,), "dense: inputs must be an integer from 0 to 2147483647, got 4294967296"),
    ("units", 3.0, "dense: units must be an integer from 0 to 2147483647, got 3.0"),
])
def test_a_hand_built_spec_never_truncates(key, value, message):
    spec = dict(kind=DENSE, name="dense", units=3)
    spec[key] = value
    with pytest.raises(ValueError) as e:
        _core.Model([spec], (4,))
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("spec, message", [
    (dict(kind="CONV2D", name="conv", filters=2, kh=-1), "conv: kh must be an integer from 0 to 2147483647, got -1"),
    (dict(kind="LSTM", name="lstm", units=2, return_sequences=2),
     "lstm: return_sequences must be an integer from 0 to 1"),
    (dict(kind="PERMUTE", name="perm", perm=(0, 1, 2, 0, 3, 4)), "perm: dims must have 1 to 5 entries"),
    (dict(kind="AUGMENT", name="aug", aug_fill=7), "aug: unknown fill mode 7"),
])
def test_a_hand_built_spec_is_checked_by_its_layer_family(spec, message):
    spec["kind"] = _core.LAYER_KINDS[spec["kind"]]
    with pytest.raises(ValueError) as e:
        _core.Model([spec], (4, 4, 3))
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("shape, message", [
    ((2**33,), "input_shape[0] must be an integer from 1 to 2147483647, got 8589934592"),
    ((4, 0), "input_shape[1] must be an integer from 1 to 2147483647, got 0"),
])
def test_an_input_dimension_outside_int_range_is_named_with_its_value(shape, message):
    with pytest.raises(ValueError) as e:
        _core.Model([dict(kind=DENSE, name="dense", units=3)], shape)
    assert str(e.value) == message
    with pytest.raises(ValueError, match=r"Input: shape must be a tuple of positive ints or None \(a variable length\), each below 2\*\*31"):
        bf.Input(shape)


def test_a_seed_outside_64_bits_is_refused_not_wrapped():
    with pytest.raises(ValueError, match=r"^Model: seed must be an integer from 0 to 2\*\*64 - 1, got -1$"):
        _core.Model([dict(kind=DENSE, name="dense", units=3)], (4,), -1)


def test_weights_beyond_the_machine_are_refused_naming_the_largest_before_mapping():
    # 2**40 parameters: 4 TiB, planned exactly (no wrap), refused before a byte is mapped
    with pytest.raises(bf.MemoryBudgetError) as e:
        bf.Sequential([bf.Input((2**10,)), layers.Dense(2**30)]).get_weights()
    msg = str(e.value)
    assert "the model's weights need 4402341478400 bytes" in msg
    assert "/kernel of shape (1024, 1073741824) 4398046511104 bytes" in msg


@pytest.mark.parametrize("build, message", [
    (lambda: [bf.Input((2**15, 2**15, 1)), layers.Conv2D(1024, 1, name="conv")],  # 2**40 elements per sample
     r"conv: output shape \(32768, 32768, 1024\) is outside the engine's range"),
    (lambda: [bf.Input((2**16, 1, 1)), layers.UpSampling2D((2**16, 1), name="up")],
     r"up: an output dimension of 4294967296 is outside the engine's range 1 to 2147483647"),
    (lambda: [bf.Input((3, 2)), layers.LSTM(2**29, name="lstm")],  # its kernel (2, 4 * units)
     r"lstm: units must be at most 536870911 for this cell \(its 4 gates side by side\), got 536870912"),
    (lambda: [bf.Input((2**31 - 1,)), layers.Dense(2**20, name="wide")],  # 2**51 weights
     r"wide: weight wide/kernel of shape \(2147483647, 1048576\) is outside the engine's range"),
])
def test_products_of_sizes_never_wrap_and_name_the_layer(build, message):
    with pytest.raises(ValueError, match=message):
        bf.Sequential(build()).get_weights()


def test_a_batch_beyond_any_machine_is_a_budget_error_naming_its_buffer():
    m = bf.Sequential([bf.Input((2**30,)), layers.Activation("relu", name="act")])
    m.build()
    with pytest.raises(bf.MemoryBudgetError, match=r"needs 4611686018427387904 bytes for a batch of 1073741824 rows"):
        m._engine.plan("predict", 2**30)


@pytest.mark.parametrize("run", [
    lambda m, x, y: m.fit(x, y, batch_size=BIG, verbose=0),
    lambda m, x, y: m.evaluate(x, y, batch_size=2**33, verbose=0),
    lambda m, x, y: m.predict(x, batch_size=2**31, verbose=0),
])
def test_an_out_of_range_batch_size_leaves_the_model_as_it_was(run):
    m = bf.Sequential([bf.Input((3,)), layers.Dense(2)])
    m.compile("sgd", "mse")
    x, y = np.ones((8, 3), np.float32), np.ones((8, 2), np.float32)
    before = m.get_weights()
    with pytest.raises(ValueError, match=r"^batch_size must be a positive int below 2\*\*31 \(the engine's rows\)"):
        run(m, x, y)
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call, message", [
    (lambda e: e.plan("predict", 2**31), "plan: rows must be an integer from 1 to 2147483647, got 2147483648"),
    (lambda e: e.open_run("predict", 2, seed=-1), "open_run: seed must be an integer from 0 to 2**64 - 1, got -1"),
    (lambda e: e.open_run("predict", 2, host_budget=-1),
     "open_run: host_budget must be an integer from 0 to 9223372036854775807, got -1"),
    (lambda e: e.set_iterations(2**63), "iterations must be an integer from 0 to 9223372036854775807, got "
     "9223372036854775808"),
    (lambda e: _core.set_num_threads(2**32 + 1),
     "set_num_threads: num_threads must be an integer from 1 to 2147483647, got 4294967297"),
    (lambda e: _core.fault_inject(-1), "fault_inject: n must be an integer from 0 to 9223372036854775807, got -1"),
    (lambda e: _core.dist_init_tcp("127.0.0.1", 2**16 + 80, 0, 1, 1.0),
     "distributed: MASTER_PORT must be an integer from 1 to 65535, got 65616"),
    (lambda e: _core.dist_init_tcp("127.0.0.1", 80, 2, 2, 1.0),
     "distributed: RANK must be an integer from 0 to 1, got 2"),
])
def test_run_time_integers_are_refused_by_name(call, message):
    m = bf.Sequential([bf.Input((3,)), layers.Dense(2)])
    m.build()
    with pytest.raises(ValueError) as e:
        call(m._engine)
    assert str(e.value) == message


def test_a_run_refuses_out_of_range_steps_and_rows_by_name():
    m = bf.Sequential([bf.Input((3,)), layers.Dense(2)])
    m.compile("sgd", "mse")
    m.build()
    x, y = np.zeros((4, 3), np.float32), np.zeros((4, 2), np.float32)
    before = m.get_weights()
    run = m._engine.open_run("train", 2)
    try:
        with pytest.raises(ValueError, match=r"^train: batch_size must be an integer from 1 to 2147483647, got 4294967298$"):
            run.train(x, y, None, 4, 2**32 + 2, 0, 1)
        with pytest.raises(ValueError, match=r"^train: steps must be an integer from 0 to \d+, got -1$"):
            run.train(x, y, None, 4, 2, 0, -1)
    finally:
        run.close()
    prun = m._engine.open_run("predict", 2)
    out = np.zeros((4, 2), np.float32)
    try:  # (out_start + n) * 2 outputs wrapped a long before: rows written far outside out
        with pytest.raises(ValueError, match=r"^predict: rows \[0, 2\) out of range$"):
            prun.predict(x, out, 0, 2, 2**62)
    finally:
        prun.close()
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)
