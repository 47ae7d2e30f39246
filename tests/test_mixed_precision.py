"""Mixed precision (keras.mixed_precision, docs/mixed-precision.md): the policy API and configs as Keras 3's, the
plan sized by bfloat16 storage, and under mixed_bfloat16 the predictions and two SGD steps of the seed-like MLP
and CNN against Keras 3 (JAX) with the same weights.

Tolerance: bfloat16 keeps 8 significant bits, a rounding is off by at most 2^-9 relative (2^-8 between two
roundings of nearby values). Keras rounds the kernels and each of matmul, bias add and activation; boundfit
multiplies by the float32 kernel and rounds once per layer (docs/mixed-precision.md), so per layer the two differ
by a few roundings: 4 * 2^-8 relative to the largest value, per layer of the model."""

import os
import subprocess
import sys

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from keras_ref import load

BF16_REL = 2.0 ** -8


def _mlp(K, L):
    return K.Sequential([L.Input((12,)), L.Dense(16, activation="relu"), L.Dense(8, activation="tanh"), L.Dense(3)])


def _cnn(K, L):
    return K.Sequential([L.Input((10, 10, 3)), L.Conv2D(6, (3, 3), activation="relu"), L.MaxPooling2D((2, 2)),
                         L.BatchNormalization(), L.Flatten(), L.Dense(16, activation="relu"), L.Dense(3)])


def _seed_cnn(policy):
    bf.mixed_precision.set_global_policy(policy)
    try:
        m = bf.Sequential([layers.Conv2D(32, (3, 3), activation="relu", input_shape=(100, 100, 3)),
                           layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(128, activation="relu"),
                           layers.Dense(10, activation="softmax")])
    finally:
        bf.mixed_precision.set_global_policy("float32")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def _under(policy, fn, *args):
    """fn(*args) with the global policy set in Keras and boundfit, restored after."""
    keras = load()
    keras.mixed_precision.set_global_policy(policy)
    bf.mixed_precision.set_global_policy(policy)
    try:
        return fn(*args)
    finally:
        keras.mixed_precision.set_global_policy("float32")
        bf.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="module")
def pairs():
    """(Keras model, boundfit model, x, y) per architecture, built under mixed_bfloat16 with the same weights."""
    keras = load()
    out = {}
    for name, build, shape in (("mlp", _mlp, (12,)), ("cnn", _cnn, (10, 10, 3))):
        mk, mb = _under("mixed_bfloat16", build, keras, keras.layers), _under("mixed_bfloat16", build, bf, layers)
        rng = np.random.default_rng(3)
        w0 = [(rng.standard_normal(w.shape) * 0.4).astype(np.float32) if w.ndim > 1 or "variance" not in v.path
              else np.abs(rng.standard_normal(w.shape)).astype(np.float32) + 0.5
              for w, v in zip(mk.get_weights(), mk.weights)]
        mk.set_weights(w0)
        mb.set_weights(w0)
        x = rng.standard_normal((16,) + shape).astype(np.float32)
        y = rng.standard_normal((16, 3)).astype(np.float32)
        out[name] = (mk, mb, x, y, len(mk.layers))
    return out


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_mixed_bfloat16_predictions_match_keras_within_bfloat16_roundings(pairs, name):
    mk, mb, x, _, depth = pairs[name]
    ref = np.asarray(mk.predict(x, verbose=0), np.float64)
    got = mb.predict(x, batch_size=16, verbose=0).astype(np.float64)
    top = np.abs(ref).max()
    assert np.abs(ref - got).max() <= 4 * BF16_REL * depth * top
    # the outputs are bfloat16 values (rounded to 8 significant bits), as Keras's are
    assert not np.any(got.astype(np.float32).view(np.uint32) & 0xFFFF)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_mixed_bfloat16_two_sgd_steps_match_keras_losses_and_weights(pairs, name):
    mk, mb, x, y, depth = pairs[name]
    keras = load()
    w0 = mk.get_weights()
    mk.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="mse")
    mb.compile(optimizer=bf.optimizers.SGD(learning_rate=0.05), loss="mse")
    hk = mk.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"]
    hb = mb.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"]
    assert abs(hk[0] - hb[0]) <= 4 * BF16_REL * depth * abs(hk[0])
    for a, b, w in zip(mk.get_weights(), mb.get_weights(), w0):   # the updates, 2 steps of lr * gradient
        step = np.abs(a - w).max()
        assert np.abs(a - b).max() <= 4 * BF16_REL * depth * max(step, 1e-3), (np.abs(a - b).max(), step)


def test_float32_policy_plans_and_numbers_stay_those_of_float32():
    """A float32 model makes no bfloat16 buffer and no conversion: its plan has no conversion buffers and its
    outputs are not rounded."""
    m = bf.Sequential([layers.Input((12,)), layers.Dense(16, activation="relu"), layers.Dense(3)])
    names = [b[0] for b in m._engine.plan("predict", 8)["buffers"]]
    assert not any("conversion" in n for n in names)
    x = np.random.default_rng(0).standard_normal((8, 12)).astype(np.float32)
    assert np.any(m.predict(x, verbose=0).view(np.uint32) & 0xFFFF)


def test_seed_cnn_at_batch_2048_plans_at_most_60_percent_of_its_float32_activations():
    acts = {}
    for policy in ("float32", "mixed_bfloat16"):
        plan = _seed_cnn(policy).estimate_memory(batch_size=2048)
        acts[policy] = sum(e.bytes for e in plan.breakdown if e.category == "activations")
    assert acts["mixed_bfloat16"] <= 0.60 * acts["float32"], acts


def test_batch_size_auto_picks_a_larger_batch_under_mixed_bfloat16():
    best = {p: _seed_cnn(p).estimate_memory(batch_size=64, memory_limit="3GiB").max_batch_size
            for p in ("float32", "mixed_bfloat16")}
    assert best["mixed_bfloat16"] > 1.5 * best["float32"], best


def test_policy_api_is_keras_3s():
    mp = bf.mixed_precision
    assert mp.Policy is mp.DTypePolicy and bf.dtype_policies.DTypePolicy is mp.DTypePolicy
    p = mp.DTypePolicy("mixed_bfloat16")
    assert (p.name, p.compute_dtype, p.variable_dtype, repr(p)) == ("mixed_bfloat16", "bfloat16", "float32",
                                                                    '<DTypePolicy "mixed_bfloat16">')
    assert bf.dtype_policies.serialize(p) == {"module": "keras", "class_name": "DTypePolicy",
                                              "config": {"name": "mixed_bfloat16"}, "registered_name": None}
    assert bf.dtype_policies.get(bf.dtype_policies.serialize(p)) == p
    assert mp.global_policy() == mp.dtype_policy() == mp.DTypePolicy("float32")
    d = layers.Dense(3, dtype=p)
    assert (d.dtype, d.compute_dtype, d.variable_dtype) == ("float32", "bfloat16", "float32")
    assert d.get_config()["dtype"] == bf.dtype_policies.serialize(p)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: bf.mixed_precision.set_global_policy("mixed_float16"), NotImplementedError, "mixed_float16"),
    (lambda: layers.Dense(3, dtype="mixed_float16"), NotImplementedError, "LossScaleOptimizer"),
    (lambda: bf.mixed_precision.LossScaleOptimizer(bf.optimizers.SGD()), NotImplementedError, "LossScaleOptimizer"),
    (lambda: layers.Dense(3, dtype="float64"), ValueError, "dtype"),
    (lambda: layers.Dense(3, dtype=5), ValueError, "dtype"),
    (lambda: bf.mixed_precision.DTypePolicy("int3"), ValueError, "mixed precision DTypePolicy"),
    (lambda: bf.mixed_precision.set_global_policy(3), ValueError, "policy"),
])
def test_what_boundfit_cannot_run_is_refused_by_name(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_keras_files_keep_each_layers_policy_both_ways(tmp_path, pairs):
    keras = load()
    mk, mb, x, _, _ = pairs["mlp"]
    mine = str(tmp_path / "mine.keras")
    mb.save(mine)
    back = keras.models.load_model(mine)
    assert [l.dtype_policy.name for l in back.layers] == ["mixed_bfloat16"] * 3
    theirs = str(tmp_path / "theirs.keras")
    back.save(theirs)
    again = bf.models.load_model(theirs)
    assert [l.dtype_policy.name for l in again.layers] == ["mixed_bfloat16"] * 3
    np.testing.assert_array_equal(again.predict(x, verbose=0), mb.predict(x, verbose=0))


def test_the_seed_cnns_first_fit_under_mixed_bfloat16_stays_within_its_plan():
    """A fresh process: the peak RSS growth of the first fit is at most the plan's new host bytes."""
    code = f"""
import numpy as np, sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_mixed_precision import _seed_cnn
from boundfit.runtime import budget
m = _seed_cnn("mixed_bfloat16")
x = np.random.default_rng(0).random((256, 100, 100, 3), dtype=np.float32); y = np.arange(256) % 10
plan = m.estimate_memory(128, shuffle_rows=256)
new = plan.host_bytes - plan.held_bytes
open("/proc/self/clear_refs", "w").write("5")
r0 = budget.process_usage_bytes()
m.fit(x, y, batch_size=128, verbose=0)
print("GROWTH", new, budget.peak_rss_bytes() - r0)
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    new, grew = (int(v) for v in out.stdout.split("GROWTH")[1].split())
    assert grew <= new, (grew, new)
