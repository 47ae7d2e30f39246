"""Mixed precision (keras.mixed_precision, docs/mixed-precision.md): the policy API and configs as Keras 3's; the
plan sized by 16-bit storage and never above the float32 plan; under mixed_bfloat16 and mixed_float16 the
predictions and two SGD steps of a small MLP and CNN against Keras 3 (JAX) with the same weights; Keras's
LossScaleOptimizer (the loss-scale trajectory with forced overflows, skipped steps, configs, .keras files both
ways); float16's roundings against NumPy's on both conversion paths. Keras's side is recorded
(tests/helpers/keras_recorded.py) except where Keras reads or writes a file.

Tolerance: a 16-bit type keeps p significant bits (bfloat16 8, float16 11), a rounding is off by at most 2^-p
relative. Keras rounds the kernels and each of matmul, bias add and activation; boundfit multiplies by the float32
kernel and rounds once per layer (docs/mixed-precision.md), so per layer the two differ by a few roundings:
4 * 2^-(p-1) relative to the largest value, per layer of the model."""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from helpers.keras_recorded import case
from keras_ref import load

REL = {"mixed_bfloat16": 2.0 ** -7, "mixed_float16": 2.0 ** -10}   # 2 roundings of the type


def _mlp(K, L):
    return K.Sequential([L.Input((12,)), L.Dense(16, activation="relu"), L.Dense(8, activation="tanh"), L.Dense(3)])


def _cnn(K, L):
    return K.Sequential([L.Input((10, 10, 3)), L.Conv2D(6, (3, 3), activation="relu"), L.MaxPooling2D((2, 2)),
                         L.BatchNormalization(), L.Flatten(), L.Dense(16, activation="relu"), L.Dense(3)])


ARCH = {"mlp": (_mlp, (12,)), "cnn": (_cnn, (10, 10, 3))}


def _under(K, policy, fn, *args):
    """fn(*args) with K's global policy set, restored after."""
    K.mixed_precision.set_global_policy(policy)
    try:
        return fn(*args)
    finally:
        K.mixed_precision.set_global_policy("float32")


def _data(arch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16,) + ARCH[arch][1]).astype(np.float32)
    return x, rng.standard_normal((16, 3)).astype(np.float32)


def _weights_for(model):
    rng = np.random.default_rng(4)
    return [np.abs(rng.standard_normal(w.shape)).astype(np.float32) + 0.5 if "variance" in v.path
            else (rng.standard_normal(w.shape) * 0.4).astype(np.float32) for w, v in zip(model.get_weights(),
                                                                                    model.weights)]


def _keras_run(arch, policy):
    """Keras's predictions, then the losses and weights after 2 SGD steps (and its loss scale), from its weights."""
    keras = load()
    m = _under(keras, policy, ARCH[arch][0], keras, keras.layers)
    w0 = _weights_for(m)
    m.set_weights(w0)
    x, y = _data(arch)
    pred = np.asarray(m.predict(x, verbose=0), np.float32)
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="mse")
    loss = m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    opt = m.optimizer
    scale = float(opt.dynamic_scale) if hasattr(opt, "dynamic_scale") else 0.0
    return {"w0": w0, "pred": pred, "loss": loss, "w": m.get_weights(), "opt": type(opt).__name__, "scale": scale,
            "it": int(opt.iterations)}


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_predictions_and_two_sgd_steps_match_keras_within_16_bit_roundings(arch, policy):
    ref = case(lambda: _keras_run(arch, policy))
    mb = _under(bf, policy, ARCH[arch][0], bf, layers)
    mb.set_weights(ref["w0"])
    x, y = _data(arch)
    depth, rel = len(mb.layers), REL[policy]
    got = mb.predict(x, batch_size=16, verbose=0).astype(np.float64)
    assert np.abs(ref["pred"] - got).max() <= 4 * rel * depth * np.abs(ref["pred"]).max()
    # the outputs hold the 16-bit type's values, as Keras's do
    half = np.float16 if policy == "mixed_float16" else None
    assert np.array_equal(got.astype(np.float32), got.astype(half).astype(np.float32)) if half else \
        not np.any(got.astype(np.float32).view(np.uint32) & 0xFFFF)
    mb.compile(optimizer=bf.optimizers.SGD(learning_rate=0.05), loss="mse")
    assert type(mb.optimizer).__name__ == ref["opt"]   # Keras's compile wraps it under mixed_float16
    loss = mb.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    assert abs(ref["loss"] - loss) <= 4 * rel * depth * abs(ref["loss"])
    if ref["scale"]:
        assert (mb.optimizer.dynamic_scale, mb.optimizer.iterations) == (ref["scale"], ref["it"])
    for a, b, w in zip(ref["w"], mb.get_weights(), ref["w0"]):   # the updates, 2 steps of lr * gradient
        step = np.abs(a - w).max()
        assert np.abs(a - b).max() <= 4 * rel * depth * max(step, 1e-3), (np.abs(a - b).max(), step)


def _lso_model(K, initial_scale=2.0 ** 15):
    m = _under(K, "mixed_float16", lambda: K.Sequential([K.layers.Input((6,)), K.layers.Dense(8, activation="relu"),
                                                          K.layers.Dense(2, dtype="float32")]))
    m.compile(optimizer=K.mixed_precision.LossScaleOptimizer(K.optimizers.SGD(0.01), initial_scale=initial_scale,
                                                             dynamic_growth_steps=2), loss="mse")
    return m


def _lso_data():
    rng = np.random.default_rng(0)
    w = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((6, 8), (8,), (8, 2), (2,))]
    x = rng.standard_normal((32, 6)).astype(np.float32)
    y = rng.standard_normal((32, 2)).astype(np.float32)
    y[8:12] *= 1e4   # batches 3 (and the loss's gradient with them) overflow float16 at the larger scales
    return w, x, y


def _lso_trajectory(m, K):
    """(dynamic_scale, step_counter, iterations, loss) after each of two epochs of 8 steps"""
    w, x, y = _lso_data()
    m.set_weights(w)
    out = []
    for _ in range(2):
        loss = m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"][0]
        o = m.optimizer
        out.append((float(o.dynamic_scale), int(o.step_counter), int(o.iterations), float(loss)))
    return out


def test_loss_scale_trajectory_matches_keras_with_forced_overflows():
    ref = case(lambda: (lambda k: _lso_trajectory(_lso_model(k), k))(load()))
    got = _lso_trajectory(_lso_model(bf), bf)
    assert [g[:3] for g in got] == [tuple(r[:3]) for r in ref]   # skipped steps and scale changes: Keras's
    assert ref[0][2] < 8   # some steps were skipped
    for g, r in zip(got, ref):
        assert abs(g[3] - r[3]) <= 1e-3 * abs(r[3])


def test_a_skipped_step_keeps_the_weights_and_is_no_nonfinite_error():
    m = _lso_model(bf, initial_scale=2.0 ** 100)   # every gradient overflows float16 until the scale is small
    w, x, y = _lso_data()
    m.set_weights(w)
    m.fit(x[:4], y[:4] / 1e4, batch_size=4, epochs=1, verbose=0)
    for a, b in zip(m.get_weights(), w):
        np.testing.assert_array_equal(a, b)
    assert (m.optimizer.dynamic_scale, m.optimizer.step_counter, m.optimizer.iterations) == (2.0 ** 99, 0, 0)


def test_float16_overflow_in_the_forward_pass_raises_nonfinite_error_naming_the_layer():
    m = _lso_model(bf)
    w, x, y = _lso_data()
    m.set_weights(w)
    with pytest.raises(bf.NonFiniteError, match="dense"):
        m.fit(x * 1e5, y, batch_size=4, epochs=1, verbose=0)   # 65504 is float16's largest


def test_loss_scale_optimizer_api_and_config_are_keras_3s():
    ref = case(lambda: (lambda k: (k.mixed_precision.LossScaleOptimizer(k.optimizers.SGD(0.5)).get_config(),
                                   type(_lso_model(k).optimizer).__name__))(load()))
    opt = bf.mixed_precision.LossScaleOptimizer(bf.optimizers.SGD(0.5))
    assert bf.optimizers.LossScaleOptimizer is bf.mixed_precision.LossScaleOptimizer
    cfg = opt.get_config()
    keys = ("initial_scale", "dynamic_growth_steps")   # (Keras numbers the default name per process)
    assert cfg["name"] == "loss_scale_optimizer" and ref[0]["name"].startswith(cfg["name"])
    assert {k: cfg[k] for k in keys} == {k: ref[0][k] for k in keys}
    assert cfg["inner_optimizer"]["class_name"] == ref[0]["inner_optimizer"]["class_name"] == "SGD"
    back = bf.optimizers.LossScaleOptimizer.from_config(cfg)
    assert (back.inner_optimizer.learning_rate, back.dynamic_scale, back.step_counter) == (0.5, 2.0 ** 15, 0)
    m = _under(bf, "mixed_float16", _mlp, bf, layers)
    m.compile(optimizer="adam", loss="mse")
    assert type(m.optimizer).__name__ == ref[1] and m.optimizer.name == "loss_scale_optimizer"
    assert m.optimizer.inner_optimizer.name == "adam" and m.optimizer.learning_rate == 0.001
    m.compile(optimizer="adam", loss="mse", auto_scale_loss=False)
    assert type(m.optimizer).__name__ == "Adam"


@pytest.mark.parametrize("kw, words", [
    (dict(initial_scale=0.0), "initial_scale"), (dict(initial_scale="x"), "initial_scale"),
    (dict(dynamic_growth_steps=0), "dynamic_growth_steps"), (dict(clipnorm=1.0), "clipnorm"),
    (dict(dynamic=False), "dynamic"), (dict(spin=1), "spin"),
])
def test_loss_scale_optimizer_bad_arguments_raise_naming_them(kw, words):
    with pytest.raises(ValueError, match=words):
        bf.mixed_precision.LossScaleOptimizer(bf.optimizers.SGD(), **kw)
    with pytest.raises(TypeError, match="inner_optimizer"):
        bf.mixed_precision.LossScaleOptimizer("sgd")


def test_keras_files_keep_policies_and_the_loss_scale_both_ways(tmp_path):
    keras = load()
    m = _lso_model(bf)
    w, x, y = _lso_data()
    m.set_weights(w)
    m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    state = (m.optimizer.dynamic_scale, m.optimizer.step_counter, m.optimizer.iterations)
    mine = str(tmp_path / "mine.keras")
    m.save(mine)
    back = keras.models.load_model(mine)
    assert [l.dtype_policy.name for l in back.layers] == ["mixed_float16", "float32"]
    o = back.optimizer
    assert (float(o.dynamic_scale), int(o.step_counter), int(o.iterations)) == state
    theirs = str(tmp_path / "theirs.keras")
    back.save(theirs)
    again = bf.models.load_model(theirs)
    assert [l.dtype_policy.name for l in again.layers] == ["mixed_float16", "float32"]
    assert (again.optimizer.dynamic_scale, again.optimizer.step_counter, again.optimizer.iterations) == state
    np.testing.assert_array_equal(again.predict(x, verbose=0), m.predict(x, verbose=0))


_F16_SWEEP = np.concatenate([np.float32([0.0, -0.0, np.inf, -np.inf, 65504.0, 65519.0, 65520.0, 1e5, -7e4,
                                         6e-8, 2.9802322e-08, 2.9802326e-08, 1e-9, -3e-6, 1.0 + 2.0 ** -11,
                                         1.0 + 3 * 2.0 ** -11]),
                             np.random.default_rng(1).standard_normal(997).astype(np.float32) *
                             np.float32(10.0) ** np.random.default_rng(2).integers(-9, 6, 997)])


def test_float16_roundings_are_numpys_on_f16c_and_scalar_paths(tmp_path):
    """A float16 layer's input cast and output (a leaky ReLU of slope 1, the model's output) are numpy's
    astype(float16) values, on this CPU's path (F16C where it has it) and the scalar one (BF_CPU_ISA=scalar, in a
    child: the instruction set is read once per process)."""
    x = np.resize(_F16_SWEEP, (8, 127)).astype(np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(np.float32)   # (the ReLU makes -0 +0: values compared, not bits)
    np.testing.assert_array_equal(_f16_relu(x), want)
    path = str(tmp_path / "x.npy")
    np.save(path, x)
    code = (f"import sys, numpy as np; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
            "from test_mixed_precision import _f16_relu; np.save(sys.argv[1], _f16_relu(np.load(sys.argv[1])))")
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                         env=dict(os.environ, BF_CPU_ISA="scalar"), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    np.testing.assert_array_equal(np.load(path), want, err_msg="scalar")


def _f16_relu(x):
    m = bf.Sequential([layers.Input((x.shape[1],)), layers.ReLU(negative_slope=1.0, dtype="mixed_float16")])
    return m.predict(x, verbose=0)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_embedding_ids_are_not_rounded_to_the_compute_dtype(policy):
    m = bf.Sequential([layers.Input((3,)), layers.Embedding(5000, 1, dtype=policy)])
    m.set_weights([(np.arange(5000) % 64).astype(np.float32).reshape(5000, 1)])
    ids = np.float32([[257, 2049, 4097]])   # not bfloat16 / float16 values: their neighbours' rows are 0
    np.testing.assert_array_equal(m.predict(ids, verbose=0).ravel(), [1, 1, 1])


@functools.lru_cache(maxsize=None)
def _seed(make, policy):
    """The seed model under policy, compiled (shared: the tests only plan it, except in a child process)"""
    m = _under(bf, policy, lambda: bf.Sequential(make()))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def _seed_mlp():
    return [layers.Dense(5000, activation="relu", input_shape=(10000,)), layers.Dense(2000, activation="relu"),
            layers.Dense(10, activation="softmax")]


def _seed_cnn():
    return [layers.Conv2D(32, (3, 3), activation="relu", input_shape=(100, 100, 3)), layers.MaxPooling2D((2, 2)),
            layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")]


def _cnn_bn():   # a kind without chunks of rows (BatchNormalization) reading a 16-bit layer's output
    return [layers.Conv2D(16, 3, activation="relu", input_shape=(32, 32, 3)), layers.BatchNormalization(),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dense(10)]


def _activations(plan):
    return sum(e.bytes for e in plan.breakdown if e.category == "activations")


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("name, make, batches", [("seed MLP", _seed_mlp, (32, 256, 1024)),
                                                 ("seed CNN", _seed_cnn, (32, 128, 2048)),
                                                 ("CNN + BatchNormalization", _cnn_bn, (8, 512))])
def test_mixed_plan_is_never_larger_than_the_float32_plan_and_smaller_where_activations_dominate(
        name, make, batches, policy):
    m32, m16 = _seed(make, "float32"), _seed(make, policy)
    for b in batches:
        p32, p16 = m32.estimate_memory(batch_size=b), m16.estimate_memory(batch_size=b)
        a32, a16 = _activations(p32), _activations(p16)
        assert a16 <= a32 and p16.host_bytes <= p32.host_bytes, (name, b, a32, a16)
        if a32 > p32.host_bytes / 2 and make is not _cnn_bn:   # activations dominate: 16-bit storage shows
            # (not behind BatchNormalization: what it reads stays float32, docs/mixed-precision.md)
            assert a16 <= 0.80 * a32, (name, b, a32, a16)
        if name == "seed CNN" and b == 2048:   # the check
            assert a16 <= 0.60 * a32, (a32, a16)


def test_batch_size_auto_picks_a_larger_batch_under_mixed_bfloat16():
    best = {p: _seed(_seed_cnn, p).estimate_memory(batch_size=64, memory_limit="3GiB").max_batch_size
            for p in ("float32", "mixed_bfloat16")}
    assert best["mixed_bfloat16"] > 1.5 * best["float32"], best


def test_float32_policy_plans_and_numbers_stay_those_of_float32():
    """A float32 model makes no 16-bit buffer and no conversion: its plan has no conversion buffers and its
    outputs are not rounded."""
    m = bf.Sequential([layers.Input((12,)), layers.Dense(16, activation="relu"), layers.Dense(3)])
    names = [b[0] for b in m._engine.plan("predict", 8)["buffers"]]
    assert not any("conversion" in n for n in names)
    x = np.random.default_rng(0).standard_normal((8, 12)).astype(np.float32)
    assert np.any(m.predict(x, verbose=0).view(np.uint32) & 0xFFFF)


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
    assert layers.Dense(3, dtype="mixed_float16").compute_dtype == "float16"
    m = _under(bf, "mixed_float16", _mlp, bf, layers)
    assert m.dtype_policy.name == "mixed_float16" and bf.Sequential([]).dtype_policy.name == "float32"


@pytest.mark.parametrize("call, exc, words", [
    (lambda: layers.Dense(3, dtype="float64"), ValueError, "dtype"),
    (lambda: layers.Dense(3, dtype="float16"), ValueError, "dtype"),
    (lambda: layers.Dense(3, dtype=5), ValueError, "dtype"),
    (lambda: bf.mixed_precision.DTypePolicy("int3"), ValueError, "mixed precision DTypePolicy"),
    (lambda: bf.mixed_precision.set_global_policy(3), ValueError, "policy"),
    (lambda: bf.mixed_precision.set_global_policy("bfloat16"), ValueError, "policy"),
])
def test_what_boundfit_cannot_run_is_refused_by_name(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_the_seed_cnns_first_fit_under_mixed_bfloat16_stays_within_its_plan():
    """A fresh process: the peak RSS growth of the first fit is at most the plan's new host bytes."""
    code = f"""
import numpy as np, sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_mixed_precision import _seed, _seed_cnn
from boundfit.runtime import budget
m = _seed(_seed_cnn, "mixed_bfloat16")
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
