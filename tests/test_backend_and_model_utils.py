"""keras.backend's dtype helpers, setters and counters, and keras.models'
clone_model / model_from_json / save_model, as Keras 3's (the values Keras
gives are written here: they are Keras's documented results)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers

B = bf.backend


@pytest.mark.parametrize("dtype, name", [(None, "float32"), (np.float32, "float32"), (np.dtype("int64"), "int64"),
                                         (int, "int32"), (float, "float32"), (bool, "bool"), ("bfloat16", "bfloat16"),
                                         ("uint8", "uint8")])
def test_standardize_dtype_names_as_keras(dtype, name):
    assert B.standardize_dtype(dtype) == name
    assert B.is_float_dtype(dtype) == name.startswith(("float", "bfloat"))
    assert B.is_int_dtype(dtype) == name.startswith(("int", "uint"))


def test_bad_dtype_and_other_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="Invalid dtype"):
        B.standardize_dtype("float12")
    B.set_floatx("float32"), B.set_epsilon(1e-7), B.set_image_data_format("channels_last")   # the values it has
    for setter, value, says in ((B.set_floatx, "float16", "mixed_bfloat16"), (B.set_epsilon, 1e-3, "1e-07"),
                                (B.set_image_data_format, "channels_first", "data_format=")):
        with pytest.raises(NotImplementedError, match=says):
            setter(value)


def test_clear_session_restarts_names_and_get_uid_counts_per_prefix():
    layers.Dense(2), layers.Dense(2)
    B.clear_session()
    assert layers.Dense(2).name == "dense" and layers.Dense(2).name == "dense_1"
    assert B.get_uid("demo_prefix") == 1 and B.get_uid("demo_prefix") == 2
    assert B.is_keras_tensor(bf.Input((3,))) and not B.is_keras_tensor(np.ones(3))


def _models():
    seq = bf.Sequential([layers.Input((4,)), layers.Dense(3, activation="relu"), layers.Dense(1)])
    i = bf.Input((4,))
    h = layers.Dense(3, activation="tanh")(i)
    fun = bf.Model(i, layers.Concatenate()([h, layers.Dense(2)(i)]))
    return seq, fun


@pytest.mark.parametrize("which", [0, 1], ids=["sequential", "functional"])
def test_clone_model_is_the_same_architecture_with_new_weights(which):
    m = _models()[which]
    c = bf.models.clone_model(m)
    assert type(c) is type(m) and c.to_json() != "" and len(c.layers) == len(m.layers)
    assert [w.shape for w in c.get_weights()] == [w.shape for w in m.get_weights()]
    assert not np.allclose(c.get_weights()[0], m.get_weights()[0])   # initialized anew, as Keras's clone
    c.set_weights(m.get_weights())
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(c.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)
    before = [w.copy() for w in m.get_weights()]
    c.compile("sgd", "mse")
    c.fit(x, np.ones((5,) + c.output_shape[1:], np.float32), verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, m.get_weights()))   # the original is untouched


def test_model_from_json_and_save_model(tmp_path):
    seq, fun = _models()
    for m in (seq, fun):
        r = bf.models.model_from_json(m.to_json())
        assert type(r) is type(m) and r.count_params() == m.count_params()
    bf.models.save_model(fun, tmp_path / "f.keras")
    assert bf.models.load_model(tmp_path / "f.keras").count_params() == fun.count_params()
    with pytest.raises(ValueError, match="json_string"):
        bf.models.model_from_json("{not json")
    with pytest.raises(NotImplementedError, match="clone_function"):
        bf.models.clone_model(seq, clone_function=lambda layer: layer)


def test_data_tuples_pack_and_unpack_as_keras():
    x, y, w = np.ones(2), np.zeros(2), np.full(2, 0.5)
    assert bf.utils.pack_x_y_sample_weight(x) is x
    assert bf.utils.pack_x_y_sample_weight((x, x)) == ((x, x),)
    assert bf.utils.pack_x_y_sample_weight(x, y) == (x, y) and bf.utils.pack_x_y_sample_weight(x, y, w) == (x, y, w)
    assert bf.utils.unpack_x_y_sample_weight(x) == (x, None, None)
    assert bf.utils.unpack_x_y_sample_weight([x, y]) == (x, y, None)
    assert bf.utils.unpack_x_y_sample_weight((x, y, w)) == (x, y, w)
    with pytest.raises(ValueError, match="sample_weight"):
        bf.utils.unpack_x_y_sample_weight((x, y, w, w))


def test_normalize_divides_by_the_norm_and_leaves_zero_rows():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(bf.utils.normalize(x), [[0.6, 0.8], [0, 0], [1, 0]])
    np.testing.assert_allclose(bf.utils.normalize(x, axis=0, order=1), x / [4.0, 4.0])
    with pytest.raises(TypeError, match="ops.normalize"):
        bf.utils.normalize(bf.Input((2,)))


def test_top_level_names_are_the_base_classes():
    assert bf.Layer is bf.layers.Layer and bf.Loss is bf.losses.Loss and bf.Metric is bf.metrics.Metric
    assert bf.Optimizer is bf.optimizers.Optimizer and isinstance(bf.Input((2,)), bf.KerasTensor)
    assert bf.version() == bf.__version__
