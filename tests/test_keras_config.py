"""keras.config: the settings mirror keras.backend / keras.mixed_precision,
the debugging caps cut fit's epochs and each run's steps as Keras's do (and
evaluate / predict of arrays with `steps` read the first batches, as
Keras), the flags keep what is set, and set_backend is refused by name."""

import warnings

import numpy as np
import pytest

import boundfit as bf
from boundfit import config
from helpers.keras_recorded import case
from keras_ref import load


@pytest.fixture
def caps():
    yield
    config.set_max_epochs(None)
    config.set_max_steps_per_epoch(None)


def _model():
    m = bf.Sequential([bf.layers.Input((3,)), bf.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m


def _xy():
    rng = np.random.default_rng(0)
    return rng.normal(size=(100, 3)).astype("float32"), rng.normal(size=(100, 1)).astype("float32")


def test_caps_cut_epochs_and_steps_with_keras_warning(caps):
    x, y = _xy()
    m = _model()
    config.set_max_epochs(2)
    config.set_max_steps_per_epoch(3)
    assert (config.max_epochs(), config.max_steps_per_epoch()) == (2, 3)
    with pytest.warns(UserWarning, match="Limiting steps_per_epoch to 3"):
        hist = m.fit(x, y, batch_size=10, epochs=5, verbose=0)
    assert len(hist.history["loss"]) == 2 and m.optimizer.iterations == 6
    with pytest.warns(UserWarning, match="Limiting"):
        assert m.predict(x, batch_size=10, verbose=0).shape == (30, 1)
    config.set_max_steps_per_epoch(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.fit(x, y, batch_size=10, epochs=1, verbose=0)
    assert m.optimizer.iterations == 16
    with pytest.raises(ValueError, match="max_epochs"):
        config.set_max_epochs(0)


def test_evaluate_and_predict_of_arrays_with_steps_read_the_first_batches_as_keras():
    x, y = _xy()

    def compute():
        keras = load()
        km = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        return [np.asarray(km.predict(x, batch_size=10, steps=3, verbose=0)).shape[0]]

    rows = case(compute)[0]
    m = _model()
    got = m.predict(x, batch_size=10, steps=3, verbose=0)
    assert got.shape[0] == rows == 30
    np.testing.assert_allclose(got, m.predict(x[:30], verbose=0), rtol=1e-6)
    assert m.evaluate(x, y, batch_size=10, steps=3, verbose=0) == pytest.approx(
        m.evaluate(x[:30], y[:30], batch_size=10, verbose=0), rel=1e-6)
    with pytest.raises(ValueError, match="steps"):
        m.predict(x, steps=0, verbose=0)


def test_settings_flags_and_refusals():
    assert (config.floatx(), config.epsilon(), config.image_data_format(), config.backend()) == \
        ("float32", 1e-7, "channels_last", "boundfit")
    assert config.dtype_policy().name == "float32"
    config.set_dtype_policy("mixed_bfloat16")
    try:
        assert bf.mixed_precision.global_policy().name == "mixed_bfloat16"
    finally:
        config.set_dtype_policy("float32")
    assert config.is_flash_attention_enabled() is None
    config.enable_flash_attention()
    assert config.is_flash_attention_enabled() is True
    config.disable_flash_attention()
    assert config.is_flash_attention_enabled() is False
    config.disable_traceback_filtering()
    assert not config.is_traceback_filtering_enabled()
    config.enable_traceback_filtering()
    assert config.is_traceback_filtering_enabled() and config.is_nnx_enabled() is False
    with pytest.raises(NotImplementedError, match="set_backend"):
        config.set_backend("jax")
    with pytest.raises(NotImplementedError, match="set_floatx"):
        config.set_floatx("float64")
