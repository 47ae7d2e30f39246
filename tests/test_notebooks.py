"""Every notebook in notebooks/ runs top to bottom in a fresh Jupyter kernel
(nbclient + ipykernel, this interpreter) without an error, and shows what it is
there to show: the refusal text, the training that finishes, the picture made.
The notebooks are committed without outputs, and the README links each one."""

import base64
import os
import re

import pytest

from notebook_util import _kernel_manager

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = os.path.join(ROOT, "notebooks")
PNG = b"\x89PNG\r\n\x1a\n"


def _execute(name):
    """Run notebooks/<name> in a fresh kernel (cwd: notebooks/); the executed notebook."""
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    client = nbclient.NotebookClient(nb, km=_kernel_manager(None), kernel_name="python3", timeout=300,
                                     startup_timeout=120, resources={"metadata": {"path": NOTEBOOKS}})
    client.execute()   # raises CellExecutionError, naming the cell, when one fails
    return nb


def _outputs(nb):
    """[(cell source, text of its streams and text/plain, its displays' mime types -> data)] of the code cells."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text, data = "", {}
        for o in cell.outputs:
            assert o.output_type != "error", f"{o.ename}: {o.evalue}"
            text += o.get("text", "") + o.get("data", {}).get("text/plain", "") + "\n"
            for mime, value in o.get("data", {}).items():
                data.setdefault(mime, []).append(value)
        out.append((cell.source, text, data))
    return out


def _text(nb):
    return "\n".join(t for _, t, _ in _outputs(nb))


def _pngs(nb):
    return [base64.b64decode(v) for _, _, d in _outputs(nb) for v in d.get("image/png", [])]


def _progress(nb):
    """The notebook progress displays' text (bar, logs, memory against the plan)."""
    return [v for _, _, d in _outputs(nb) if "text/html" in d for v in d["text/plain"] if " [" in v and "plan" in v]


def _check_progress_shows_memory_against_the_plan(nb):
    shown = _progress(nb)
    assert shown, "no notebook progress display"
    for text in shown:
        assert re.search(r"loss: \d", text)
        assert re.search(r"host: run [\d.]+ [KMG]iB of plan [\d.]+ [KMG]iB, budget", text), text


def test_quickstart_refuses_then_trains_in_micro_batches():
    nb = _execute("quickstart.ipynb")
    text = _text(nb)
    assert re.search(r"<MemoryPlan host=6\.\d\d GiB device=0 B", text)   # the DESIGN's example at batch 2048
    assert re.search(r"MemoryBudgetError - needs [\d.]+ [MG]iB on host, [\d.]+ [MG]iB available; "
                     r"batch_size <= \d+ fits, or micro_batch='auto'", text)
    m = re.search(r"micro-batches of (\d+) rows; loss \[([\d.]+)\]", text)
    assert m and 0 < int(m.group(1)) < 128 and 1.0 < float(m.group(2)) < 5.0
    assert re.search(r"batch_size='auto' takes \d+", text) and "boundfit diagnose" in text
    _check_progress_shows_memory_against_the_plan(nb)


def test_batch_too_large_shows_the_plan_picture_the_refusal_and_both_ways_out():
    nb = _execute("batch_too_large.ipynb")
    text = _text(nb)
    assert re.search(r"<MemoryPlan host=6\.\d\d GiB device=0 B fits=False", text)
    pngs = _pngs(nb)
    assert len(pngs) == 2 and all(p.startswith(PNG) for p in pngs)       # the plan at 2048, then micro-batched
    assert re.search(r"MemoryBudgetError - needs 6\.\d\d GiB on host, [\d.]+ GiB available; batch_size <= \d+ fits",
                     text)
    assert re.search(r"micro-batches of \d+ rows; peak [\d.]+ GiB \| fits: True", text)
    assert re.search(r"refused: needs [\d.]+ MiB on host", text)
    m = re.search(r"trained in micro-batches of (\d+) rows", text)
    assert m and 0 < int(m.group(1)) < 32
    m = re.search(r"trained with batch_size='auto' = (\d+) rows", text)
    assert m and 0 < int(m.group(1)) < 32
    _check_progress_shows_memory_against_the_plan(nb)
    # the committed rendering the notebook shows in its markdown
    src = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "](images/plan_cnn_batch2048.png)" in src
    with open(os.path.join(NOTEBOOKS, "images", "plan_cnn_batch2048.png"), "rb") as f:
        assert f.read(8) == PNG


def test_data_larger_than_ram_trains_from_a_memory_mapped_file_and_a_sequence():
    nb = _execute("data_larger_than_ram.ipynb")
    text = _text(nb)
    assert "memmap (98304, 784) float16" in text
    size = int(re.search(r"x.npy: (\d+) MiB on disk", text).group(1))
    assert size > 96                                        # the file is larger than memory_limit='96MiB'
    assert "fits=True" in text
    losses = [float(v) for v in re.search(r"loss per epoch: \[([\d., ]+)\]", text).group(1).split(",")]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert re.search(r"\nloss: [\d.]+", text)               # the Sequence's epoch
    _check_progress_shows_memory_against_the_plan(nb)


def test_device_check_shows_the_report_the_device_error_and_a_device_budget():
    nb = _execute("device_check.ipynb")
    text = _text(nb)
    assert "boundfit diagnose" in text and "CUDA" in text
    assert re.search(r"DeviceError - .*(device='cpu'|nvidia-smi)", text) or "trained on cuda" in text
    assert "trained on the CPU, accuracy per epoch" in text
    assert re.search(r"emu:0 total .* budget 4.00 MiB", text)
    assert re.search(r"MemoryBudgetError - needs [\d.]+ MiB on emu:0, 4.00 MiB available", text)
    assert re.search(r"micro-batches of \d+ rows on emu", text)
    assert any("emu:0: run" in t for t in _progress(nb))


def test_nan_loss_names_the_step_keeps_the_weights_and_shows_the_fixes():
    nb = _execute("nan_loss.ipynb")
    text = _text(nb)
    assert re.search(r"NonFiniteError - epoch 0: non-finite \w+ at step \d+ \(first seen in layer", text)
    fixes = re.findall(r": loss per epoch \[([\d., ]+)\]", text)
    assert len(fixes) == 3
    for f in fixes:
        v = [float(s) for s in f.split(",")]
        assert v[-1] < v[0]
    assert "rows with a NaN in that step: [1000]" in text
    assert "all weights finite: True" in text and "training goes on" in text
    assert "history: [nan] | weights finite: True" in text


def test_image_folder_trains_from_a_folder_larger_than_its_memory_limit_with_the_queue_in_the_plan():
    pytest.importorskip("PIL")
    nb = _execute("image_folder.ipynb")
    text = "".join(t for _, t, _ in _outputs(nb))
    assert "['dark', 'light'] 110 training batches, 28 validation batches" in text
    assert "validation: PyDataset queue (2 batches of 192.06 KiB ahead" in text
    assert "fits: yes" in text and "val_accuracy" in text


def test_shared_machine_lists_the_other_kernel_refuses_sizes_to_what_is_left_and_waits_for_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BOUNDFIT_LEDGER_DIR", str(tmp_path))   # its 3.7 GiB hold of the device: not on the suite's
    monkeypatch.delenv("BOUNDFIT_MEMORY_WAIT", raising=False)   # boundfit's pytest plugin makes fits wait; not this one
    text = _text(_execute("shared_machine.ipynb"))
    pid = re.search(r"the other kernel: (\d+)", text).group(1)
    assert re.search(rf"{pid} +python -c .* fit +running +emu:0 +3\.70 GiB", text)   # the ledger's table
    assert re.search(rf"MemoryBudgetError - needs 64\.\d+ MiB on emu:0, [\d.]+ MiB available; .*other runs on "
                     rf"this machine hold it: pid {pid} \(python -c .*, fit\) reserved 3\.70 GiB on emu:0", text)
    auto = re.search(r"batch_size='auto' takes (\d+) rows: ([\d.]+) MiB on the device, budget ([\d.]+) MiB", text)
    assert 0 < int(auto.group(1)) < 2048 and float(auto.group(2)) <= float(auto.group(3)) < 64
    assert re.search(r"trained after waiting [\d.]+ s; loss \[[\d.]+\]", text)


def test_notebooks_are_committed_without_outputs_and_each_is_tested_and_linked_from_the_readme():
    names = sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb"))
    tested = {"quickstart.ipynb", "batch_too_large.ipynb", "data_larger_than_ram.ipynb", "device_check.ipynb",
              "nan_loss.ipynb", "image_folder.ipynb", "shared_machine.ipynb"}
    assert set(names) == tested
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    for name in names:
        nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
        assert all(not c.outputs and c.execution_count is None for c in nb.cells if c.cell_type == "code"), name
        assert f"(notebooks/{name})" in readme, name
    assert readme.index("notebooks/quickstart.ipynb") <= min(readme.index(f"notebooks/{n}") for n in names)
