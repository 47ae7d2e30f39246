"""The sequence layers on a GPU against the CPU (skipped without one, with
the CUDA report's reason): Embedding with masks, every cell, Bidirectional in
every merge mode, trained from the same weights on both devices; the device
plan equals the device arena; a bad id is a DataError on the GPU too;
dropout / recurrent_dropout draw the CPU's masks on the GPU."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from test_cuda_backend import _REASON, _assert_weights_close, _train_both

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

T, V = 7, 15
rng = np.random.default_rng(4)
IDS = rng.integers(1, V, (48, T))
IDS[::3, 4:] = 0
IDS[1::5, :2] = 0
YS = rng.standard_normal((48, 2)).astype(np.float32)


def _seq_model():
    i = bf.Input((T,))
    h = layers.Embedding(V, 6, mask_zero=True)(i)
    h = layers.Bidirectional(layers.SimpleRNN(5, return_sequences=True))(h)
    h = layers.Bidirectional(layers.LSTM(5, return_sequences=True), merge_mode="sum")(h)
    h = layers.Bidirectional(layers.GRU(5, return_sequences=True), merge_mode="mul")(h)
    h = layers.Bidirectional(layers.LSTM(4, return_sequences=True), merge_mode="ave")(h)
    h = layers.GRU(6, go_backwards=True, return_sequences=True)(h)
    h = layers.LSTM(6, go_backwards=True)(h)
    return bf.Model(i, layers.Dense(2)(h))


def test_sequence_model_trains_to_the_cpu_weights_on_cuda():
    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss="mse")

    cpu, gpu, hc, hg = _train_both(_seq_model, compile_kw, IDS, YS, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "sequence model")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
    np.testing.assert_allclose(gpu.predict(IDS, verbose=0, device="cuda"), cpu.predict(IDS, verbose=0), rtol=1e-4,
                               atol=1e-5)


def test_sequence_plan_equals_the_device_arena_and_bad_ids_raise():
    m = _seq_model()
    m.compile(optimizer="adam", loss="mse")
    plan = m.estimate_memory(batch_size=16, device="cuda")
    m.fit(IDS, YS, batch_size=16, epochs=1, verbose=0, device="cuda")
    stats = m._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    assert plan.device_bytes > 0
    x = IDS.copy()
    x[20, 3] = V
    with pytest.raises(bf.DataError, match=rf"batch 1: id {V} at row 4 \(sample 20 of the data\), position 3"):
        m.fit(x, YS, batch_size=16, epochs=1, verbose=0, shuffle=False, device="cuda")


ZS = rng.standard_normal((48, 3)).astype(np.float32)


def _state_model():
    """Initial states from a second input, final states out (return_state), a masked
    sequence, Bidirectional with merge_mode=None: every new argument of the kernels."""
    i, z = bf.Input((T,)), bf.Input((3,))
    h = layers.Embedding(V, 6, mask_zero=True)(i)
    s0 = [layers.Dense(5, activation="tanh")(z) for _ in range(4)]
    a, b, fh, fc, bh, bc = layers.Bidirectional(layers.LSTM(5, return_sequences=True, return_state=True),
                                                merge_mode=None)(h, initial_state=s0)
    g, gh = layers.GRU(5, go_backwards=True, return_state=True)(layers.Add()([a, b]), initial_state=[fh])
    r = layers.SimpleRNN(5, return_sequences=True)(b, initial_state=[bh])
    out = layers.Concatenate()([g, gh, fc, bc, layers.GlobalAveragePooling1D()(r)])
    return bf.Model([i, z], layers.Dense(2)(out))


def test_states_in_and_out_train_to_the_cpu_weights_on_cuda():
    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss="mse")

    cpu, gpu, hc, hg = _train_both(_state_model, compile_kw, [IDS, ZS], YS, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "state model")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
    np.testing.assert_allclose(gpu.predict([IDS, ZS], verbose=0, device="cuda"), cpu.predict([IDS, ZS], verbose=0),
                               rtol=1e-4, atol=1e-5)
    m = _state_model()
    m.compile(optimizer="adam", loss="mse")
    m.estimate_memory(batch_size=16, device="cuda")
    m.fit([IDS, ZS], YS, batch_size=16, epochs=1, verbose=0, device="cuda")
    assert all(s["run_high_water"] == s["run_reserved"] for s in m._last_run_stats)


def _dropout_model():
    """Every dropout form: shared masks, per-gate masks (recurrent_dropout), state
    masks only, each direction of a Bidirectional, over a masked sequence."""
    i = bf.Input((T,))
    h = layers.Embedding(V, 6, mask_zero=True)(i)
    h = layers.Bidirectional(layers.LSTM(5, dropout=0.3, recurrent_dropout=0.2, return_sequences=True))(h)
    h = layers.SimpleRNN(5, dropout=0.2, recurrent_dropout=0.3, return_sequences=True, go_backwards=True)(h)
    h = layers.GRU(5, recurrent_dropout=0.25, return_sequences=True)(h)
    h = layers.LSTM(6, dropout=0.4)(h)
    return bf.Model(i, layers.Dense(2)(layers.GRU(4, dropout=0.2, recurrent_dropout=0.2)(
        layers.RepeatVector(3)(h))))


def test_dropout_masks_and_training_match_the_cpu_on_cuda():
    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss="mse")

    cpu, gpu, hc, hg = _train_both(_dropout_model, compile_kw, IDS, YS, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "recurrent dropout model")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
    np.testing.assert_allclose(gpu.predict(IDS, verbose=0, device="cuda"), cpu.predict(IDS, verbose=0), rtol=1e-4,
                               atol=1e-5)
    m = _dropout_model()
    m.compile(optimizer="adam", loss="mse")
    m.estimate_memory(batch_size=16, device="cuda")
    m.fit(IDS, YS, batch_size=16, epochs=1, verbose=0, device="cuda")
    assert all(s["run_high_water"] == s["run_reserved"] for s in m._last_run_stats)
