"""plan.plot() and the engine's step timeline it draws (csrc/core/timeline.c via
Model.plan()['ops']), and the progress display's memory report. Plots use Agg
(no pyplot); matplotlib is optional, so its absence is tested too."""

import io
import sys

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers
from boundfit.callbacks import progbar as progress
from boundfit.engine import plan_plot
from boundfit.engine.plan import MemoryPlan

pytest.importorskip("matplotlib")


def _cnn():
    m = bf.Sequential([layers.Conv2D(32, (3, 3), activation="relu", input_shape=(100, 100, 3)),
                       layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(128, activation="relu"),
                       layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def _mlp():
    m = bf.Sequential([layers.Dense(32, activation="relu", input_shape=(20,)), layers.BatchNormalization(),
                       layers.Dropout(0.3), layers.Dense(16, activation="tanh"), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return m


def _two_inputs():
    a, b = bf.Input((8,), name="a"), bf.Input((5,), name="b")
    h = layers.Concatenate()([layers.Dense(6, activation="relu")(a), b])
    shared = layers.Dense(4, activation="relu")
    out = layers.Dense(1)(layers.Add()([shared(h), shared(h)]))
    m = bf.Model([a, b], out)
    m.compile(optimizer="adam", loss="mse")
    return m


def _align(n):
    return (n + 63) // 64 * 64


@pytest.mark.parametrize("make", [_cnn, _mlp, _two_inputs])
@pytest.mark.parametrize("mode", ["train", "evaluate", "predict"])
def test_timeline_peak_equals_the_planned_region_and_live_bytes_match_the_buffers(make, mode):
    m = make()
    p = m._engine.plan(mode, 64)
    ops, bufs = p["ops"], p["buffers"]
    nodes = len(ops) - 2 if mode != "train" else (len(ops) - 2) // 2
    assert len(ops) == (2 * nodes + 2 if mode == "train" else nodes + 2)
    assert max(top for _, _, top in ops) == p["scratch_bytes"]
    for t, (label, live, top) in enumerate(ops):
        assert live == sum(_align(b) for _, b, first, last, _ in bufs if first <= t <= last)
        assert live <= top
        assert top == max([off + _align(b) for _, b, first, last, off in bufs if first <= t <= last and b] or [0])
    labels = [o[0] for o in ops]
    assert labels[0] in ("batch", "split inputs") and labels[nodes + 1] in ("loss", "outputs")
    assert all(lb.startswith("forward ") for lb in labels[1:nodes + 1])
    assert all(lb.startswith("backward ") for lb in labels[nodes + 2:])


def test_plot_timeline_tops_out_at_the_plans_host_total_to_the_byte():
    plan = _cnn().estimate_memory(batch_size=2048, memory_limit="4GiB")
    d = plan_plot.timeline(plan)
    assert d["where"] == "host" and d["total"] == plan.host_bytes and d["budget"] == plan.budget_host_bytes
    assert sum(n for _, n in d["held"]) + max(d["top"]) == plan.host_bytes
    assert d["ops"][max(range(len(d["ops"])), key=d["top"].__getitem__)].startswith("backward max_pooling2d")


def test_plot_draws_the_step_the_peak_and_the_budget_line():
    plan = _cnn().estimate_memory(batch_size=2048, memory_limit="4GiB")
    fig = plan.plot()
    ax = fig.axes[0]
    gib = 2 ** 30
    # the tallest stacked bar is the plan's total; the horizontal lines are the peak and the budget
    tops = {}
    for bar in ax.patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        tops[x] = max(tops.get(x, 0), bar.get_y() + bar.get_height())
    assert max(tops.values()) == pytest.approx(plan.host_bytes / gib, rel=1e-9)
    hlines = sorted(line.get_ydata()[0] for line in ax.get_lines())
    assert hlines == pytest.approx(sorted([plan.host_bytes / gib, plan.budget_host_bytes / gib]))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("conv2d") and " output: 2.34 GiB" in t for t in legend)   # 2048 x 98 x 98 x 32 floats
    assert any(t.startswith("parameters:") and "whole run" in t for t in legend)
    assert "does not fit" in ax.get_title() and "batch_size=2048" in ax.get_title()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0] == "batch" and ticks[1].startswith("forward conv2d") and ticks[-1].startswith("backward conv2d")
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_a_device_plan_defaults_to_the_device_and_draws_the_host_on_request(device_limit):
    device_limit("64MiB")
    m = _mlp()
    plan = m.estimate_memory(batch_size=512, device="emu")
    d = plan_plot.timeline(plan)
    assert d["where"] == "emu:0" and sum(n for _, n in d["held"]) + max(d["top"]) == plan.device_bytes
    h = plan_plot.timeline(plan, where="host")
    assert max(h["top"]) == 0 and sum(n for _, n in h["held"]) == plan.host_bytes
    assert plan.plot(where="host").axes[0].get_ylabel().endswith("on host")
    with pytest.raises(ValueError, match="where must be one of"):
        plan.plot(where="cuda:3")


def test_plot_draws_into_given_axes():
    from matplotlib.figure import Figure
    fig = Figure()
    ax = fig.add_subplot()
    assert _mlp().estimate_memory(batch_size=64).plot(ax=ax) is fig and ax.patches


def test_plot_of_a_plan_without_a_step_program_raises_value_error():
    with pytest.raises(ValueError, match="no step program"):
        MemoryPlan([("x", 10, "host", "params")], 100).plot()


def test_plot_without_matplotlib_raises_import_error_naming_the_extra(monkeypatch):
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r'pip install "boundfit\[plot\]"'):
        _mlp().estimate_memory(batch_size=64).plot()


def test_memory_report_puts_the_runs_memory_against_its_plan():
    m = _mlp()
    x = np.random.default_rng(0).standard_normal((256, 20)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 3, 256)
    m.fit(x, y, batch_size=64, epochs=1, verbose=0)
    plan = m._last_plan
    (where, used, planned, budget, note), = progress.memory_report(plan)
    assert where == "host" and planned == plan.host_bytes and budget == plan.budget_host_bytes
    assert used is not None and used >= plan.held_bytes and note.startswith("process RSS")
    html = progress._html(4, 4, "4/4 [====] - loss: 1.0", progress.memory_report(plan))
    assert "host: run" in html and "of plan" in html and "budget" in html


def test_memory_report_of_a_device_run_has_the_device_line(device_limit):
    device_limit("64MiB")
    m = _mlp()
    x = np.random.default_rng(0).standard_normal((256, 20)).astype(np.float32)
    m.fit(x, np.zeros(256), batch_size=64, epochs=1, verbose=0, device="emu")
    rows = progress.memory_report(m._last_plan)
    assert [r[0] for r in rows] == ["host", "emu:0"] and rows[1][2] == m._last_plan.device_bytes


def test_terminal_progress_bar_is_unchanged_outside_a_notebook():
    assert not progress.in_notebook()
    out = io.StringIO()
    bar = progress.Progbar(4, width=30, verbose=1, stream=out, plan=None)   # fit's width
    bar.update(2, {"loss": 0.5})
    bar.update(4, {"loss": 0.25}, finalize=True)
    text = out.getvalue()
    assert "\r2/4 [==============>...............] - ETA:" in text and " - loss: 0.5000" in text
    assert text.endswith(" - loss: 0.2500\n") and "4/4 [==============================]" in text


def test_plot_of_a_fit_with_validation_holds_the_validation_run_for_the_whole_step():
    plan = _mlp().estimate_memory(batch_size=256, validation_batch_size=128)
    d = plan_plot.timeline(plan)
    held = dict(d["held"])
    assert held["validation run"] == sum(e.bytes for e in plan.breakdown if e.name.startswith("validation: "))
    assert sum(held.values()) + max(d["top"]) == plan.host_bytes


def test_plot_of_a_deep_model_names_at_most_forty_ops_on_the_axis():
    m = bf.Sequential([layers.Dense(8, activation="relu", input_shape=(8,))] +
                      [layers.Dense(8, activation="relu") for _ in range(40)] + [layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    plan = m.estimate_memory(batch_size=32)
    assert len(plan_plot.timeline(plan)["ops"]) == 2 * 42 + 2
    ax = plan.plot().axes[0]
    assert 20 <= len(ax.get_xticklabels()) <= 40 and len(ax.patches) > 86
