"""Building a model checks its weights against the host budget before a byte
is mapped: a model too large for the limit raises MemoryBudgetError naming its
largest weight, nothing is allocated, and the model it was added to keeps its
layers and weights. For real in a memory-limited cgroup, and in-process with
bf.set_memory_limit(host=...)."""

import textwrap

import numpy as np
import pytest

import boundfit as bf
from boundfit import _core, layers
from boundfit.layers.args import engine_kinds
from boundfit.runtime import budget

from cgroup_util import memory_cgroup

MiB = 1 << 20
BIG = 40000 * 40000 * 4 + 40000 * 4   # Dense(40000) on 40000 inputs: kernel and bias, 6.4 GB
(DENSE,) = engine_kinds("DENSE")


@pytest.fixture
def host_limit():
    budget.set_memory_limit(host="256MiB")
    yield 256 * MiB
    budget.set_memory_limit(host="auto")


def _anon_rss():
    return budget.anon_rss_bytes()


def test_engine_refuses_weights_over_its_host_budget_before_mapping_them():
    dense = dict(kind=DENSE, name="dense", units=40000)
    live = _core.live_reservations
    with pytest.raises(bf.MemoryBudgetError) as e:
        _core.Model([dense], (40000,), 0, host_budget=256 * MiB)
    assert e.value.needed_bytes >= BIG and e.value.available_bytes == 256 * MiB and e.value.where == "host"
    assert "dense/kernel of shape (40000, 40000)" in str(e.value) and "budget is 268435456 bytes" in str(e.value)
    assert _core.live_reservations == live
    small = _core.Model([dict(dense, units=3)], (4,), 0, host_budget=256 * MiB)   # one within it builds
    assert [w.shape for w in small.get_weights()] == [(4, 3), (3,)]


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, "1GiB"])
def test_engine_host_budget_must_be_a_byte_count(bad):
    dense = dict(kind=DENSE, name="dense", units=3)
    with pytest.raises(ValueError, match=r"Model: host_budget must be an integer from 0 to \d+, got " +
                       repr(bad).replace(".", r"\.")):
        _core.Model([dense], (4,), 0, host_budget=bad)


def test_sequential_add_over_the_host_limit_raises_and_keeps_the_model(host_limit):
    model = bf.Sequential([layers.Input((4,)), layers.Dense(40000, name="wide")])
    before = model.get_weights()
    rss = _anon_rss()
    with pytest.raises(bf.MemoryBudgetError, match=r"sequential.*5\.96 GiB of weights on the host, 256\.00 MiB "
                       r"available \(bf\.set_memory_limit\(host=\.\.\.\)\).*the largest dense_big/kernel of shape "
                       r"\(40000, 40000\)") as e:
        model.add(layers.Dense(40000, name="dense_big"))
    assert e.value.needed_bytes >= BIG and e.value.available_bytes == host_limit and e.value.max_batch_size == 0
    assert _anon_rss() - rss < 64 * MiB            # nothing was touched (6.4 GB would be)
    assert [l.name for l in model.layers] == ["wide"]
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert model.predict(np.ones((2, 4), np.float32), verbose=0).shape == (2, 40000)


def test_functional_model_over_the_host_limit_raises_budget_error(host_limit):
    inp = layers.Input((40000,))
    with pytest.raises(bf.MemoryBudgetError, match=r"functional.*dense_big/kernel of shape \(40000, 40000\)"):
        bf.Model(inp, layers.Dense(40000, name="dense_big")(inp))


def test_model_within_the_host_limit_builds_and_trains(host_limit):
    model = bf.Sequential([layers.Input((64,)), layers.Dense(256), layers.Dense(1)])
    model.compile("adam", "mse")
    h = model.fit(np.ones((32, 64), np.float32), np.ones((32, 1), np.float32), epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])


@pytest.mark.cgroup
def test_oversized_model_in_a_limited_cgroup_raises_budget_error_not_sigkill():
    with memory_cgroup(256 * MiB) as cg:
        r = cg.run_python(textwrap.dedent("""
            import boundfit as bf
            from boundfit import layers
            try:
                bf.Sequential([layers.Input((40000,)), layers.Dense(40000)])
            except bf.MemoryBudgetError as e:
                print("CAUGHT", e.needed_bytes, e.available_bytes)
            print("ALIVE")
        """), timeout=120)
        assert r.returncode == 0, r.stderr
        assert "CAUGHT" in r.stdout and "ALIVE" in r.stdout and not r.killed_by_oom
        needed, available = (int(v) for v in r.stdout.split()[1:3])
        assert needed >= BIG and 0 < available < 256 * MiB
