"""MemoryBudgetError and the plan's table say what the limit is and what the
process already holds (the model's weights, BLAS buffers) apart: the
"available" figure is the limit, never the limit plus memory already held."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.engine.plan import MemoryPlan, PlanEntry, budget_error
from boundfit.sizes import format_bytes

MiB = 1 << 20


def held_plan(run_bytes, limit=512 * MiB, held=80 * MiB):
    """A host plan whose process already holds `held` bytes, against a limit on what the run adds."""
    p = MemoryPlan([PlanEntry("BLAS packing buffers", held, "host", "runtime", "resident"),
                    PlanEntry("input batches", run_bytes, "host", "input batches")],
                   budget_host_bytes=limit + held, max_batch_size=64, batch_size=128,
                   budget_host_source="memory_limit='512MiB'")
    p.held_bytes = held
    return p


def test_budget_error_gives_the_limit_as_available_and_the_held_bytes_apart():
    e = budget_error(held_plan(600 * MiB))
    assert str(e) == ("needs 600.00 MiB on host, 512.00 MiB available; batch_size <= 64 fits, or "
                      "micro_batch='auto' (memory_limit='512MiB': the limit on what the run adds; this process already "
                      "holds another 80.00 MiB: the model's weights, BLAS buffers)")
    assert (e.needed_bytes, e.available_bytes, e.where) == (600 * MiB, 512 * MiB, "host")


def test_plan_table_splits_the_host_budget_into_held_and_the_limit():
    p = held_plan(600 * MiB)
    split = "budget 592.00 MiB = 80.00 MiB already held by this process + 512.00 MiB for the run (memory_limit="
    assert split in str(p) and "short by 88.00 MiB on host" in str(p)
    assert split in p._repr_html_().replace("&#x27;", "'")
    fits = held_plan(500 * MiB)
    assert fits.fits and split in str(fits)


def test_fit_over_a_memory_limit_reports_the_limit_not_the_limit_plus_held_memory():
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(64,)), layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    w0 = m.get_weights()
    n = 1 << 19
    x, y = np.zeros((n, 64), np.float32), np.zeros(n, np.int64)
    with pytest.raises(bf.MemoryBudgetError) as ei:
        m.fit(x, y, batch_size=n, memory_limit="256MiB", verbose=0)
    e, plan = ei.value, ei.value.plan
    assert plan.held_bytes > 0   # at least the model's weights
    assert e.available_bytes == 256 * MiB and "256.00 MiB available" in str(e)
    assert e.needed_bytes == plan.host_bytes - plan.held_bytes
    assert f"this process already holds another {format_bytes(plan.held_bytes)}" in str(e)
    assert f"{format_bytes(256 * MiB + plan.held_bytes)} available" not in str(e)
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)
