"""Shared fixtures: a fixed seed per test, a device memory limit, and small reference helpers."""

import gc
import os

# Keras 3 on JAX (CPU) is the reference (keras_ref.py), chosen before any test module runs: a test that
# imports TensorFlow imports Keras with it, on the backend set at that moment.
os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The reference's numbers do not need XLA's most optimizing CPU backend: each small Keras program is compiled once
# and run a few times, and compiling was about half of the suite's CPU time. At LLVM -O1, without its expensive passes
# and XLA's fusion emitters, test_conv_layers.py takes 31 instead of 66 CPU-s. XLA keeps IEEE float semantics (no
# fast-math) either way; -O0 (29 CPU-s) rounded differently enough that Adam, which scales gradients of rounding
# noise to full steps, took PointNet's zero-initialized T-nets elsewhere (0.7% in the second epoch's loss).
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=1 --xla_llvm_disable_expensive_passes=true "
                                   "--xla_cpu_use_fusion_emitters=false")

import numpy as np  # noqa: E402
import pytest

import boundfit as bf


# The files whose tests take the longest (tens of seconds: a wheel build and its demo, the emulated CUDA runs, the docs
# site, the mutants, the launched ranks) run first: under `-n 2 --dist worksteal` (README's command) the worker that
# is done steals the other's pending tests, so the run ends on short tests instead of one worker alone on a long one.
SLOW_FIRST = ("test_wheel.py", "test_cuda_sim.py", "test_docs.py", "test_cuda_mutants.py", "test_pytest_plugin.py",
              "test_gpu_check.py", "test_blas_thread_modes.py", "test_distributed.py", "test_dist_launchers.py",
              "test_distributed_nccl.py", "test_cgroup_limits.py", "test_first_fit.py", "test_conv_direct_isa.py")


def pytest_collection_modifyitems(items):
    rank = {name: k for k, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))   # stable: each file keeps its order


@pytest.fixture(autouse=True)
def _fresh_metric_names():
    """Metrics made without a name are 'auc', 'auc_1', ... per process, as Keras's: each test counts from the
    start, so a history's keys do not depend on which tests ran before it in the worker."""
    from boundfit.metrics import engine
    engine._UIDS.clear()


@pytest.fixture(autouse=True)
def _seed():
    bf.utils.set_random_seed(1234)
    yield


@pytest.fixture(autouse=True)
def _exact_float32():
    """CUDA's float32 GEMMs and convolutions exact (TF32 is on by default, as JAX's default precision): the CUDA
    tests compare with the CPU's float32 to 1e-4, TF32 rounds operands to 2^-11; tests of TF32 enable it."""
    bf.config.disable_tf32()
    yield
    bf.config.disable_tf32()


@pytest.fixture
def frozen_gc():
    """One full collection, then what exists is frozen (gc.freeze): the test's own gc.collect() calls scan only
    the objects it made. A worker that has imported Keras holds 10^5-10^6 objects, 0.5-1 s a full collection:
    an allocation-failure sweep collecting twice per site spent a minute there."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def device_limit():
    """Call it with a device memory limit ("8MiB", bytes); "auto" again after the test."""
    def set_(v):
        bf.set_memory_limit(device=v)
    yield set_
    bf.set_memory_limit(device="auto")


def n_samples(x):
    """Samples in x: an array, or a list / tuple / dict of arrays (one per model input)."""
    if isinstance(x, dict):
        x = list(x.values())
    return len(x[0]) if isinstance(x, (list, tuple)) else len(x)


def numeric_loss(model, x, y):
    return model.evaluate(x, y, batch_size=n_samples(x), verbose=0, return_dict=True)["loss"]


def engine_gradient(model, x, y):
    """Gradient of the mean loss on (x, y) as the engine computes it: one SGD
    step with learning rate 1 and no momentum moves the weights by -grad."""
    w0 = model.get_weights()
    opt, loss = model.optimizer, model.loss
    metrics = dict(metrics=model._metrics_arg, weighted_metrics=model._weighted_metrics_arg)
    model.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss=loss, **metrics)
    model.fit(x, y, batch_size=n_samples(x), epochs=1, shuffle=False, verbose=0)
    w1 = model.get_weights()
    model.set_weights(w0)
    model.compile(optimizer=opt, loss=loss, **metrics)
    return [a.astype(np.float64) - b for a, b in zip(w0, w1)]


def assert_plan_equals_arenas(m, x, y, batch_size, device=None):
    """Fit one epoch and hold the plan to the arenas: every run arena's high-water
    mark is what it reserved, and the plan's bytes (less runtime / measured
    entries) are the weights, the optimizer state, the run arenas and, on a
    device, the pinned host batch slots. Returns the plan."""
    plan = m.estimate_memory(batch_size=batch_size, device=device)
    m.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, device=device)
    ran = m._loss_trainer[1] if getattr(m, "_loss_trainer", None) else m   # a custom loss: its training graph
    stats = ran._last_run_stats
    assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
    weights = ran._engine.weights_base() or ran._engine   # a training graph computes on its model's weights
    arenas = weights.weight_arena_bytes + ran._engine.optimizer_arena_bytes + sum(
        s["run_high_water"] + s.get("host_slots_high_water", 0) for s in stats)
    assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    return plan


def directional_check(model, x, y, n_dirs=3, eps=1e-2, rtol=3e-2, fixed=(), seed=0):
    """Central differences of the loss along random directions of all the
    weights at once (those at indices `fixed` stay put: frozen) against the
    engine's gradient. The difference is Richardson-extrapolated from steps eps
    and eps / 2, so its error is O(eps^4): one direction over every weight
    moves the loss far from linear (curvature summed over all the weights),
    and the plain O(eps^2) error decided the outcome by the initial weights."""
    g = engine_gradient(model, x, y)
    w0 = model.get_weights()
    r = np.random.default_rng(seed)

    def central(d, h):
        model.set_weights([w + h * di for w, di in zip(w0, d)])
        lp = numeric_loss(model, x, y)
        model.set_weights([w - h * di for w, di in zip(w0, d)])
        lm = numeric_loss(model, x, y)
        model.set_weights(w0)
        return (lp - lm) / (2 * h)

    for _ in range(n_dirs):
        d = [np.zeros(w.shape) if k in fixed else r.standard_normal(w.shape) for k, w in enumerate(w0)]
        fd = (4 * central(d, eps / 2) - central(d, eps)) / 3
        an = sum(float((gi * di).sum()) for gi, di in zip(g, d))
        assert abs(fd - an) <= rtol * max(abs(fd), abs(an), 1e-2), (fd, an)


def directional_check_per_array(model, x, y, eps=3e-3, rtol=2e-2):
    """Finite differences along a random direction in each weight array in turn
    (one direction over all weights can nearly cancel, and then the central
    difference's truncation error, not the gradient, decides)."""
    g = engine_gradient(model, x, y)
    w0 = model.get_weights()
    r = np.random.default_rng(0)
    for k, gk in enumerate(g):
        dk = r.standard_normal(w0[k].shape)
        shifted = lambda s: [w + s * eps * dk if j == k else w for j, w in enumerate(w0)]
        model.set_weights(shifted(1.0))
        lp = numeric_loss(model, x, y)
        model.set_weights(shifted(-1.0))
        lm = numeric_loss(model, x, y)
        model.set_weights(w0)
        fd, an = (lp - lm) / (2 * eps), float((gk * dk).sum())
        assert abs(fd - an) <= rtol * max(abs(fd), abs(an), 1e-2), (k, fd, an)
