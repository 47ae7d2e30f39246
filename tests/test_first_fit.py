"""The first-fit rule (docs/memory-plans.md), each case in a fresh child process:
- the first fit / evaluate / predict grows peak RSS by at most the plan's new
  host bytes, and by at least 97% of them when that is above 100 MiB (Dense,
  the seed CNN, the seed MLP, data from a Sequence, a small ResNet, an
  Embedding + LSTM text model, a Transformer block, an LSTM encoder-decoder
  with states and dropout, a masked sequence tagger, a custom loss with an
  activity regularizer: its training graph, made at compile; a subclassed
  model with a custom loss, built by its first fit, whose training graph
  computes on the model's weights: one copy, in the plan);
- under real cgroup limits, batch_size='auto' and micro_batch='auto' train
  the seed CNN and an MLP to the end with the peak under the limit and no
  watchdog stop (the engine's own runtime never trips it), down to a limit
  just above the least that fits."""

import subprocess
import sys
import textwrap

import pytest

from memlimit import memory_cgroup

MODELS = {
    "dense": """
        m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(100,)), layers.Dense(1)])
        m.compile(optimizer="adam", loss="mse")
        x = rng.standard_normal((320, 100), dtype=np.float32); y = rng.standard_normal((320, 1), dtype=np.float32)
        bs = 32""",
    "cnn": """
        m = bf.Sequential([layers.Conv2D(32, (3, 3), activation="relu", input_shape=(100, 100, 3)),
                           layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(128, activation="relu"),
                           layers.Dense(10, activation="softmax")])
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        x = rng.standard_normal((NROWS, 100, 100, 3), dtype=np.float32); y = np.arange(NROWS) % 10
        bs = 64""",
    "mlp": """
        m = bf.Sequential([layers.Dense(5000, activation="relu", input_shape=(10000,)),
                           layers.Dense(2000, activation="relu"), layers.Dense(10, activation="softmax")])
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        x = rng.standard_normal((NROWS, 10000), dtype=np.float32); y = np.arange(NROWS) % 10
        bs = 256""",
    "resnet": """
        inp = bf.Input((32, 32, 3)); h = inp
        for f in (16, 32, 32):
            a = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(f, 3, padding="same")(h)))
            a = layers.BatchNormalization()(layers.Conv2D(f, 3, padding="same")(a))
            h = layers.Activation("relu")(layers.Add()([a, layers.Conv2D(f, 1)(h)]))
        m = bf.Model(inp, layers.Dense(10, activation="softmax")(layers.GlobalAveragePooling2D()(h)))
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        x = rng.standard_normal((NROWS, 32, 32, 3), dtype=np.float32); y = np.arange(NROWS) % 10
        bs = 64""",
    "lstm": """
        tok = bf.Input((60,))
        h = layers.LSTM(64)(layers.Embedding(1000, 32, mask_zero=True)(tok))
        m = bf.Model(tok, layers.Dense(2, activation="softmax")(h))
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        x = rng.integers(0, 1000, (NROWS, 60)).astype(np.float32); y = np.arange(NROWS) % 2
        bs = 64""",
    "transformer": """
        inp = bf.Input((64, 64))
        h = layers.LayerNormalization()(layers.Add()([inp, layers.MultiHeadAttention(4, 16)(inp, inp)]))
        f = layers.Dense(64)(layers.Dense(256, activation="gelu")(h))
        h = layers.GlobalAveragePooling1D()(layers.LayerNormalization()(layers.Add()([h, f])))
        m = bf.Model(inp, layers.Dense(3, activation="softmax")(h))
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        x = rng.standard_normal((NROWS, 64, 64), dtype=np.float32); y = np.arange(NROWS) % 3
        bs = 32""",
    "seq2seq": """
        e, d = bf.Input((40, 16)), bf.Input((20, 16))
        _, h, c = layers.LSTM(64, return_state=True, dropout=0.2, recurrent_dropout=0.2)(e)
        s = layers.LSTM(64, return_sequences=True, dropout=0.2)(d, initial_state=[h, c])
        m = bf.Model([e, d], layers.Dense(16)(s))
        m.compile(optimizer="adam", loss="mse")
        x = [rng.standard_normal((NROWS, 40, 16), dtype=np.float32), rng.standard_normal((NROWS, 20, 16), dtype=np.float32)]
        y = rng.standard_normal((NROWS, 20, 16), dtype=np.float32)
        bs = 64""",
    "tagger": """
        tok = bf.Input((50,))
        h = layers.Bidirectional(layers.LSTM(32, return_sequences=True))(layers.Embedding(500, 16, mask_zero=True)(tok))
        m = bf.Model(tok, layers.Dense(5, activation="softmax")(h))
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        x = rng.integers(0, 500, (NROWS, 50)).astype(np.float32); y = rng.integers(0, 5, (NROWS, 50))
        bs = 64""",
    "custom_loss": """
        inp = bf.Input((2000,))
        h = layers.Dense(512, activation="relu", activity_regularizer=bf.regularizers.l2(1e-4))(inp)
        m = bf.Model(inp, layers.Dense(8)(h))
        m.compile(optimizer="adam", loss=lambda t, p: bf.ops.mean(bf.ops.abs(t - p), axis=-1))
        x = rng.standard_normal((NROWS, 2000), dtype=np.float32); y = rng.standard_normal((NROWS, 8), dtype=np.float32)
        bs = 64""",
}

HEAD = """
import numpy as np, boundfit as bf
from boundfit import layers
from boundfit.runtime import budget
bf.utils.set_random_seed(0)
rng = np.random.default_rng(0)
"""

# a Keras Sequence over the arrays: batches are made on demand (Python objects per batch)
SEQUENCE = """
class Batches(bf.utils.Sequence):
    def __len__(self):
        return len(x) // bs
    def __getitem__(self, i):
        return x[i * bs:(i + 1) * bs], y[i * bs:(i + 1) * bs]
seq = Batches()
"""

FIRST_CALL = """
mode, source = MODE, SOURCE
rows = len(x[0]) if isinstance(x, list) else len(x)
if mode == "fit":
    plan = m.estimate_memory(bs, shuffle_rows=0 if source == "sequence" else rows)
else:
    plan = m.estimate_memory(bs, mode=mode)
new = plan.host_bytes - plan.held_bytes
if mode == "predict":
    new += rows * int(np.prod(m.output_shape[1:])) * 4     # the returned array
data = seq if source == "sequence" else x
open("/proc/self/clear_refs", "w").write("5")               # peak RSS := RSS now
r0 = budget.process_usage_bytes()
if mode == "fit":
    m.fit(data, None if source == "sequence" else y, batch_size=None if source == "sequence" else bs, verbose=0)
elif mode == "evaluate":
    m.evaluate(data, None if source == "sequence" else y, batch_size=None if source == "sequence" else bs, verbose=0)
else:
    m.predict(data, batch_size=None if source == "sequence" else bs, verbose=0)
print("GROWTH", new, budget.peak_rss_bytes() - r0)
"""


def test_a_subclassed_models_custom_loss_fit_builds_one_copy_of_the_weights_within_its_plan():
    """A subclassed model is built by its first fit: the model's weights and its training graph's run are new
    there, and the graph computes on the model's weights, so the process grows by the plan (the BLAS buffers,
    brought up by a fit before, aside) and not by a second copy (32 MiB here). The two engine objects the fit
    builds (the model's and its training graph's descriptions, ~0.3 MiB each) are not in the plan."""
    out = _child(HEAD + textwrap.dedent("""
        w = bf.Sequential([layers.Dense(8, input_shape=(2000,))]); w.compile("adam", "mse")
        w.fit(np.ones((256, 2000), np.float32), np.ones((256, 8), np.float32), batch_size=64, verbose=0)
        class Net(bf.Model):
            def __init__(self):
                super().__init__()
                self.d1, self.d2 = layers.Dense(4096, activation="relu"), layers.Dense(8)
            def call(self, x):
                return self.d2(self.d1(x))
        m = Net()
        m.compile(optimizer="adam", loss=lambda t, p: bf.ops.mean(bf.ops.abs(t - p), axis=-1))
        x = rng.standard_normal((256, 2000), dtype=np.float32); y = rng.standard_normal((256, 8), dtype=np.float32)
        open("/proc/self/clear_refs", "w").write("5")
        r0 = budget.process_usage_bytes()
        m.fit(x, y, batch_size=64, verbose=0)
        plan = m._last_plan
        blas = sum(e.bytes for e in plan.breakdown if e.name.startswith("BLAS"))
        print("GROWTH", plan.host_bytes - blas, budget.peak_rss_bytes() - r0)
        """))
    new, grown = map(int, out.split("GROWTH")[1].split())
    assert grown <= new + (1 << 20), f"grew {grown} bytes, plan says {new} new"
    assert grown >= 0.97 * new, f"grew {grown} bytes, plan says {new}: an over-estimate"


def _child(code, timeout=300):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _first_call_code(model, mode, source, nrows):
    body = textwrap.dedent(MODELS[model]).replace("NROWS", str(nrows))
    code = HEAD + body + (SEQUENCE if source == "sequence" else "")
    return code + FIRST_CALL.replace("MODE", repr(mode)).replace("SOURCE", repr(source))


@pytest.mark.parametrize("model,source,nrows,mode", [
    (model, source, nrows, mode) for model, source, nrows in [("dense", "array", 0), ("dense", "sequence", 0),
                                                             ("cnn", "array", 128)]
    for mode in ("fit", "evaluate", "predict")] + [("mlp", "array", 512, "fit"), ("resnet", "array", 256, "fit"),
                                                   ("lstm", "array", 256, "fit"), ("transformer", "array", 128, "fit"),
                                                   ("transformer", "array", 128, "predict"),
                                                   ("seq2seq", "array", 256, "fit"), ("tagger", "array", 256, "fit"),
                                                   ("custom_loss", "array", 512, "fit"),
                                                   ("custom_loss", "array", 512, "evaluate")])
def test_first_call_of_a_fresh_process_grows_rss_by_at_most_its_plan(model, source, nrows, mode):
    out = _child(_first_call_code(model, mode, source, nrows))
    new, grown = map(int, out.split("GROWTH")[1].split())
    print(f"{model} {mode}: grew {grown / 2**20:.2f} MiB, plan {new / 2**20:.2f} MiB new")
    assert grown <= new, f"grew {grown} bytes, plan says {new} new"
    if new > 100 << 20:
        assert grown >= 0.97 * new, f"grew {grown} bytes, plan says {new}: an over-estimate"


def test_the_plan_states_the_blas_buffers_it_brought_up_and_a_big_gemm_then_adds_nothing():
    out = _child(HEAD + textwrap.dedent("""
        from boundfit import _core
        m = bf.Sequential([layers.Dense(8, input_shape=(4,))]); m.compile("sgd", "mse")
        plan = m.estimate_memory(4)
        blas = [e for e in plan.breakdown if e.name.startswith("BLAS packing buffers")]
        print("ENTRY", blas[0].bytes, blas[0].where, blas[0].category)
        r0 = budget.process_usage_bytes()
        _core.blas_probe(1 << 16, 512, 1024)  # on every thread: 256 MiB of zero-page A, 128 MiB of C each (released)
        print("AFTER", budget.process_usage_bytes() - r0)
        print(plan)
    """))
    entry = out.split("ENTRY")[1].split()
    assert int(entry[0]) > 0 and entry[1:3] == ["host", "runtime"]
    assert int(out.split("AFTER")[1].split()[0]) < (1 << 20)
    assert "BLAS packing buffers" in out


def test_blas_threads_are_lowered_to_what_memory_allows_and_too_little_is_refused():
    out = _child(HEAD + textwrap.dedent("""
        from boundfit.runtime import blas_runtime
        print("START", blas_runtime.threads())              # the engine's pool: the cores (2 in CI)
        budget.raw_headroom = lambda root="/": 160 << 20     # room for one thread (buffer + probe output)
        m = bf.Sequential([layers.Dense(8, input_shape=(4,))]); m.compile("sgd", "mse")
        plan = m.estimate_memory(4)
        print("THREADS", blas_runtime.threads(), blas_runtime.resident_bytes())
        print(plan)
    """))
    start = int(out.split("START")[1].split()[0])
    threads, resident = map(int, out.split("THREADS")[1].split()[:2])
    assert threads == 1 and resident > 0
    if start > 1:
        assert f"threads lowered from {start}" in out
    out = _child(HEAD + textwrap.dedent("""
        budget.raw_headroom = lambda root="/": 40 << 20
        m = bf.Sequential([layers.Dense(8, input_shape=(4,))]); m.compile("sgd", "mse")
        try:
            m.fit(np.ones((8, 4), np.float32), np.ones((8, 8), np.float32), verbose=0)
        except bf.MemoryBudgetError as e:
            print("REFUSED", e.where, e.needed_bytes > e.available_bytes, e)
    """))
    assert "REFUSED host True the BLAS runtime needs" in out


def test_blas_probe_rejects_bad_sizes():
    from boundfit import _core
    with pytest.raises(ValueError, match="blas_probe: M must be an integer from 1 to 2147483647, got 0"):
        _core.blas_probe(0, 4, 4)


# ---------------------------------------------------------------- real limits

AUTO_RUN = """
try:
    h = m.fit(x, y, HOW, epochs=1, steps_per_epoch=1, verbose=0)
    p = m._last_plan
    print("TRAINED", p.rows, p.batch_size, h.history["loss"][0])
except bf.MemoryBudgetError as e:
    print("REFUSED", e)
"""


def _auto_in_cgroup(model, nrows, limit, how):
    body = textwrap.dedent(MODELS[model]).replace("NROWS", str(nrows))
    with memory_cgroup(limit) as cg:
        rc, out, err = cg.run_python(HEAD + body + AUTO_RUN.replace("HOW", how), timeout=300)
        return rc, out, err, cg.oom_killed(), cg.peak_bytes()


def _assert_trained(limit, rc, out, err, oom, peak):
    assert rc == 0 and not oom, err[-3000:]
    assert "TRAINED" in out, out  # no watchdog stop, no refusal
    assert peak is None or peak <= limit


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.parametrize("gib,how", [(gib, "batch_size='auto'") for gib in (1, 1.5, 2, 3)] +
                         # at 2 GiB and more, 512 rows fit whole: micro-batches only below
                         [(gib, "batch_size=512, micro_batch='auto'") for gib in (1, 1.5)])
def test_seed_cnn_auto_choices_train_under_real_limits_without_a_watchdog_stop(gib, how):
    limit = int(gib * (1 << 30))
    _assert_trained(limit, *_auto_in_cgroup("cnn", 2048, limit, how))


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.parametrize("gib,how", [(1.5, "batch_size='auto'"), (3, "batch_size='auto'"),
                                     (1.5, "batch_size=512, micro_batch='auto'")])
def test_seed_mlp_auto_choices_train_under_real_limits_without_a_watchdog_stop(gib, how):
    limit = int(gib * (1 << 30))
    _assert_trained(limit, *_auto_in_cgroup("mlp", 1024, limit, how))


@pytest.mark.cgroup
@pytest.mark.slow
def test_seed_mlp_at_one_gib_is_refused_before_the_first_step():
    rc, out, err, oom, _ = _auto_in_cgroup("mlp", 1024, 1 << 30, "batch_size='auto'")
    assert rc == 0 and not oom, err[-3000:]
    assert "REFUSED needs" in out and "on host" in out


@pytest.mark.cgroup
@pytest.mark.slow
def test_auto_batch_trains_at_a_limit_just_above_the_least_that_fits():
    # the least limit that fits: usage once everything but the run is resident,
    # plus the run's new bytes at batch 1, the margin and the watchdog's tolerance
    body = textwrap.dedent(MODELS["cnn"]).replace("NROWS", "512")
    probe = HEAD + body + textwrap.dedent("""
        plan = m.estimate_memory(1, shuffle_rows=len(x))
        print("NEED", budget.cgroup_usage().working_set, plan.host_bytes - plan.held_bytes)
    """)
    with memory_cgroup(4 << 30) as cg:
        rc, out, err = cg.run_python(probe, timeout=300)
    assert rc == 0, err[-3000:]
    used, new1 = map(int, out.split("NEED")[1].split())
    from boundfit.runtime import budget
    limit = used + new1 + budget.margin(0) + budget.watchdog_tolerance(0) + (24 << 20)
    rc, out, err, oom, peak = _auto_in_cgroup("cnn", 512, limit, "batch_size='auto'")
    _assert_trained(limit, rc, out, err, oom, peak)
    rows = int(out.split("TRAINED")[1].split()[0])
    assert rows < 64, f"a limit just above the least that fits should allow only small batches, got {rows}"


def test_diagnose_reports_the_resident_blas_buffers():
    out = _child(HEAD + textwrap.dedent("""
        print(bf.diagnose(print_fn=None))
        m = bf.Sequential([layers.Dense(8, input_shape=(4,))]); m.compile("sgd", "mse")
        m.estimate_memory(4)
        print(bf.diagnose(print_fn=None))
    """))
    first, second = out.split("boundfit diagnose")[1:3]
    assert "BLAS buffers" in first and "not brought up yet" in first
    assert "resident (BLAS packing buffers" in second
