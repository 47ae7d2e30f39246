"""Bad arguments raise DataError / ValueError / TypeError naming the argument,
before anything runs, and leave the model and the data unchanged."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers


def model(compiled=True):
    m = bf.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)), layers.Dense(2, activation="softmax")])
    if compiled:
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


X = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
Y = np.arange(10) % 2


def unchanged(m, before):
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_fit_before_compile_raises():
    m = model(False)
    with pytest.raises(RuntimeError, match="compile"):
        m.fit(X, Y)


@pytest.mark.parametrize("x,y,match", [
    (np.zeros((10, 4), np.float32), Y, "x has per-sample shape"),
    (X, np.zeros((9,)), "different lengths"),
    (X[:0], Y[:0], "empty"),
    (X.astype(str), Y, "dtype"),
    (X, np.zeros((10, 3)), "y must hold one class id"),
])
def test_bad_data_raises_data_error_naming_the_argument(x, y, match):
    m = model()
    before = m.get_weights()
    xc = x.copy()
    with pytest.raises(bf.DataError, match=match):
        m.fit(x, y, verbose=0)
    unchanged(m, before)
    np.testing.assert_array_equal(x, xc)


def test_a_bad_label_in_shuffled_data_names_its_sample():
    """the row is within the shuffled batch; the sample is the index into y"""
    m = model()
    y = Y.copy()
    y[6] = 5
    with pytest.raises(bf.DataError, match=r"label 5 in row \d+ \(sample 6 of the data\)"):
        m.fit(X, y, batch_size=4, shuffle=True, verbose=0)


def test_a_bad_label_deep_in_a_large_batch_names_its_row():
    """a batch of 2048 x 64 classes: its loss runs in slices of rows on the pool"""
    m = bf.Sequential([layers.Input((8,)), layers.Dense(64, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(1).standard_normal((4096, 8)).astype(np.float32)
    y = np.arange(4096) % 64
    y[[1500, 1900]] = 70
    with pytest.raises(bf.DataError, match=r"batch 0: label 70 in row 1500 \(sample 1500 of the data\)"):
        m.fit(x, y, batch_size=2048, shuffle=False, verbose=0)


def test_label_out_of_range_names_the_batch():
    m = model()
    y = Y.copy()
    y[7] = 5
    before = m.get_weights()
    with pytest.raises(bf.DataError, match=r"batch 1: label 5 in row 3 \(sample 7 of the data\)") as ei:
        m.fit(X, y, batch_size=4, shuffle=False, verbose=0)
    assert ei.value.batch_index == 1
    # the first step completed; the failing one applied nothing
    after = m.get_weights()
    assert any((a != b).any() for a, b in zip(after, before))


@pytest.mark.parametrize("kw,exc,match", [
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=2.5), ValueError, "batch_size"),
    (dict(epochs=-1), ValueError, "epochs"),
    (dict(validation_split=1.5), ValueError, "validation_split"),
    (dict(micro_batch=-2), ValueError, "micro_batch"),
    (dict(memory_limit="lots"), ValueError, "memory_limit"),
    (dict(device="tpu"), ValueError, "device"),
])
def test_bad_fit_arguments(kw, exc, match):
    m = model()
    before = m.get_weights()
    with pytest.raises(exc, match=match):
        m.fit(X, Y, verbose=0, **kw)
    unchanged(m, before)


def test_unknown_names():
    m = model(False)
    with pytest.raises(ValueError, match="optimizer"):
        m.compile(optimizer="adamz", loss="mse")
    with pytest.raises(ValueError, match="loss"):
        m.compile(optimizer="adam", loss="msq")
    with pytest.raises(ValueError, match="activation"):
        layers.Dense(3, activation="swishy")
    with pytest.raises(ValueError, match="units"):
        layers.Dense(0)


def test_set_weights_is_all_or_nothing():
    m = model()
    before = m.get_weights()
    bad = [w + 1 for w in before]
    bad[-1] = np.zeros(5)
    with pytest.raises(ValueError, match="expected shape"):
        m.set_weights(bad)
    unchanged(m, before)


@pytest.mark.parametrize("dt", [np.float64, np.float16, np.int32, np.int64, np.uint8, np.bool_])
def test_inputs_of_any_real_dtype_train_like_their_float32_copy(dt):
    m = model(False)
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    w0 = m.get_weights()
    x = (X * 3).astype(dt)
    m.fit(x, Y, shuffle=False, verbose=0)
    a = m.get_weights()
    m.set_weights(w0)
    m.fit(x.astype(np.float32), Y.astype(np.float32), shuffle=False, verbose=0)
    for u, v in zip(a, m.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_strided_views_are_used_in_place():
    m = model(False)
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    w0 = m.get_weights()
    wide = np.asfortranarray(np.repeat(X, 2, axis=1))[::1, ::2]
    assert not wide.flags.c_contiguous
    m.fit(wide, Y, shuffle=False, verbose=0)
    a = m.get_weights()
    m.set_weights(w0)
    m.fit(np.ascontiguousarray(wide), Y, shuffle=False, verbose=0)
    for u, v in zip(a, m.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_layers_missing_from_the_backend_raise_instead_of_crashing():
    m = bf.Sequential([layers.MaxPooling2D((2, 2), input_shape=(4, 4, 1)), layers.Flatten(), layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    try:
        m.fit(np.zeros((4, 4, 4, 1)), np.zeros((4, 2)), verbose=0)
    except ValueError as e:
        assert "not implemented" in str(e)


def bn_model(**bn):
    m = bf.Sequential([layers.Dense(4, input_shape=(3,)), layers.BatchNormalization(name="bn", **bn),
                       layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def test_batchnorm_momentum_outside_0_1_raises_before_training_naming_the_layer():
    m = bn_model(momentum=1.5)
    before = m.get_weights()
    with pytest.raises(ValueError, match=r"bn: BatchNormalization momentum must be in \[0, 1\] to train, got 1.5"):
        m.fit(X, Y, epochs=1, verbose=0)
    unchanged(m, before)
    assert m.predict(X, verbose=0).shape == (10, 2)  # inference reads the moving statistics only


def test_batchnorm_negative_epsilon_raises_naming_the_layer():
    with pytest.raises(ValueError, match="bn: BatchNormalization epsilon must be >= 0, got -1"):
        bn_model(epsilon=-1.0).predict(X, verbose=0)
