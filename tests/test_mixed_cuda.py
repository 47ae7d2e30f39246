"""Mixed precision and TF32 on the CUDA backend (docs/mixed-precision.md, "CUDA"): under mixed_bfloat16 and
mixed_float16 a CNN, a recurrent and an attention model train on CUDA to the CPU's mixed weights within the
16-bit types' roundings; the plans hold every byte the runs touch (the arenas' high-water marks); the
LossScaleOptimizer skips the same steps and changes its scale as on the CPU; bf.config's TF32 switch moves
float32 GEMMs between exact float32 and TF32 operands. Skipped without a usable GPU; run on the device emulation
by tests/test_cuda_sim.py (its cuBLAS GemmEx and cuDNN stand-ins round the operands as the tensor cores take
them).

Tolerance: the CPU multiplies by the float32 kernels, CUDA rounds them to the compute dtype on the tensor cores
(as Keras casts them), so each layer differs by a few roundings of the type: 4 * 2^-(p-1) relative per layer (p
significant bits: bfloat16 8, float16 11), as tests/test_mixed_precision.py allows against Keras."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from conftest import assert_plan_equals_arenas
from test_cuda_backend import _REASON
from test_mixed_precision import REL, _lso_model, _lso_trajectory, _under
from test_mixed_storage import _block

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _cnn():
    return bf.Sequential([layers.Input((8, 8, 3)), layers.Conv2D(6, 3, activation="relu"), layers.MaxPooling2D(),
                          layers.Flatten(), layers.Dense(16, activation="relu"), layers.Dense(3)])


def _text():
    x = bf.Input((6,))
    e = layers.Embedding(20, 8)(x)
    a = layers.MultiHeadAttention(2, 4)(e, e)
    h = layers.LayerNormalization()(layers.Add()([e, a]))
    s = layers.LSTM(8, return_sequences=True)(h)
    return bf.Model(x, layers.Dense(3)(layers.GlobalAveragePooling1D()(s)))


ARCH = {"cnn": (_cnn, lambda r: r.standard_normal((32, 8, 8, 3))),
        "text": (_text, lambda r: r.integers(0, 20, (32, 6)))}


def _data(arch):
    r = np.random.default_rng(5)
    return ARCH[arch][1](r).astype(np.float32), r.standard_normal((32, 3)).astype(np.float32)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("arch", ["cnn", "text"])
def test_mixed_training_on_cuda_matches_the_cpus_mixed_run_within_16_bit_roundings(arch, policy):
    x, y = _data(arch)
    cpu, gpu = (_under(bf, policy, ARCH[arch][0]) for _ in range(2))
    gpu.set_weights(cpu.get_weights())
    w0 = cpu.get_weights()
    for m in (cpu, gpu):
        m.compile(optimizer=bf.optimizers.SGD(learning_rate=0.05), loss="mse")
    preds = [m.predict(x, batch_size=16, verbose=0, device=d) for m, d in ((cpu, "cpu"), (gpu, "cuda"))]
    tol = 4 * REL[policy] * len(cpu.layers)
    assert np.abs(preds[0] - preds[1]).max() <= tol * np.abs(preds[0]).max()
    hist = [m.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, device=d).history["loss"]
            for m, d in ((cpu, "cpu"), (gpu, "cuda"))]
    np.testing.assert_allclose(hist[1], hist[0], rtol=tol)
    for a, b, w in zip(cpu.get_weights(), gpu.get_weights(), w0):   # 4 steps of lr * gradient
        assert np.abs(a - b).max() <= tol * max(np.abs(a - w).max(), 1e-3)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_plans_on_cuda_hold_every_byte_and_shrink_the_activations(policy):
    r = np.random.default_rng(6)
    x, y = r.integers(0, 100, (8, 16)).astype(np.float32), r.standard_normal((8, 3)).astype(np.float32)
    plans = {}
    for p in ("float32", policy):
        m = _under(bf, p, _block, bf, layers)   # two transformer blocks
        m.compile(optimizer="sgd", loss="mse")
        plans[p] = assert_plan_equals_arenas(m, x, y, batch_size=8, device="cuda")
    act = {p: sum(e.bytes for e in plan.breakdown if e.category == "activations" and e.where != "host")
           for p, plan in plans.items()}
    assert act[policy] < act["float32"], act


def test_loss_scale_trajectory_on_cuda_is_the_cpus():
    """Forced float16 overflows skip the same steps, halve and double the scale at the same steps."""
    runs = {}
    for dev in ("cpu", "cuda"):
        with _on(dev):
            runs[dev] = _lso_trajectory(_lso_model(bf), bf)
    assert [t[:3] for t in runs["cuda"]] == [t[:3] for t in runs["cpu"]]
    np.testing.assert_allclose([t[3] for t in runs["cuda"]], [t[3] for t in runs["cpu"]], rtol=4 * REL["mixed_float16"])


class _on:
    """fit's device for the block (bf.set_default_device), restored after"""

    def __init__(self, dev):
        self.dev = dev

    def __enter__(self):
        bf.set_default_device(self.dev)

    def __exit__(self, *exc):
        bf.set_default_device(None)


def _tf32(v):
    u = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def test_tf32_switch_rounds_float32_gemm_operands_on_cuda_only_when_enabled():
    r = np.random.default_rng(2)
    x = r.standard_normal((16, 64)).astype(np.float32)
    m = bf.Sequential([layers.Input((64,)), layers.Dense(8, use_bias=False)])
    w = m.get_weights()[0]
    exact = x.astype(np.float64) @ w
    assert not bf.config.is_tf32_enabled()   # the suite runs exact (conftest); the library's default is on
    got = {}
    for on in (False, True):
        (bf.config.enable_tf32 if on else bf.config.disable_tf32)()
        assert bf.config.is_tf32_enabled() == on
        got[on] = m.predict(x, verbose=0, device="cuda").astype(np.float64)
    scale = np.abs(exact).max()
    np.testing.assert_allclose(got[False], exact, atol=1e-5 * scale)
    np.testing.assert_allclose(got[True], _tf32(x).astype(np.float64) @ _tf32(w), atol=2 ** -10 * scale)
    assert np.abs(got[True] - exact).max() <= 2 ** -9 * scale
    np.testing.assert_array_equal(m.predict(x, verbose=0, device="cpu"), m.predict(x, verbose=0))
