"""Real limits, real kernels: a child Python and a Jupyter kernel inside a
memory-limited cgroup. The oversized fit ends in MemoryBudgetError (caught),
never SIGKILL; batch_size='auto' and micro_batch='auto' complete inside the
limit; a .npy data set of 3x the limit trains memory-mapped."""

import os
import signal
import textwrap

import pytest

from memlimit import memory_cgroup

pytestmark = pytest.mark.cgroup
LIMIT = 352 << 20  # 64 MiB more than before BLAS buffers were counted

PRELUDE = textwrap.dedent("""
    import numpy as np, boundfit as bf
    from boundfit import layers
    bf.utils.set_random_seed(0)
    model = bf.Sequential([layers.Dense(512, activation="relu", input_shape=(256,)),
                           layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.random.default_rng(0).standard_normal((90000, 256), dtype=np.float32)   # 88 MiB
    y = np.random.default_rng(1).integers(0, 10, 90000)
    plan = model.estimate_memory(batch_size=90000)
    assert plan.host_bytes > 2.5 * LIMIT, plan.host_bytes
""").replace("LIMIT", str(LIMIT))


def test_control_a_plain_numpy_overallocation_is_killed_by_the_oom_killer():
    with memory_cgroup(LIMIT) as cg:
        rc, out, err = cg.run_python("import numpy as np; a = np.ones((4 * %d,), np.uint8); print(a.sum())" % LIMIT)
        assert rc == -signal.SIGKILL and cg.oom_killed()


def test_oversized_fit_raises_budget_error_in_a_limited_cgroup_not_sigkill():
    with memory_cgroup(LIMIT) as cg:
        rc, out, err = cg.run_python(PRELUDE + textwrap.dedent("""
            try:
                model.fit(x, y, batch_size=90000, epochs=1, verbose=0)
            except bf.MemoryBudgetError as e:
                print("CAUGHT", e.needed_bytes, e.available_bytes, e.max_batch_size)
            print("ALIVE")
        """))
        assert rc == 0, err
        assert "CAUGHT" in out and "ALIVE" in out
        assert not cg.oom_killed()


@pytest.mark.parametrize("how", ["batch_size='auto'", "batch_size=90000, micro_batch='auto'"])
def test_auto_batch_and_micro_batch_complete_inside_the_limit(how):
    with memory_cgroup(LIMIT) as cg:
        rc, out, err = cg.run_python(PRELUDE + textwrap.dedent(f"""
            h = model.fit(x, y, {how}, epochs=1, verbose=0)
            print("LOSS", h.history["loss"][0], model._last_plan.rows)
        """))
        assert rc == 0, err
        assert "LOSS" in out and not cg.oom_killed()
        assert cg.peak_bytes() is None or cg.peak_bytes() <= LIMIT


def test_memmapped_npy_three_times_the_limit_trains(tmp_path):
    limit = 200 << 20
    xp, yp = tmp_path / "x.npy", tmp_path / "y.npy"
    import numpy as np
    rows, cols = 160_000, 1024                       # 625 MiB of float32 on disk
    xm = np.lib.format.open_memmap(xp, mode="w+", dtype=np.float32, shape=(rows, cols))
    block = np.random.default_rng(0).standard_normal((20_000, cols), dtype=np.float32)
    for i in range(0, rows, 20_000):   # one block drawn, written eight times: the file's pages are what counts
        xm[i:i + 20_000] = block
    del xm, block
    np.save(yp, (np.arange(rows) % 10).astype(np.int64))
    assert xp.stat().st_size > 3 * limit
    with memory_cgroup(limit) as cg:
        rc, out, err = cg.run_python(textwrap.dedent(f"""
            import numpy as np, boundfit as bf
            from boundfit import layers
            x = np.load({str(xp)!r}, mmap_mode="r"); y = np.load({str(yp)!r}, mmap_mode="r")
            m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(1024,)),
                               layers.Dense(10, activation="softmax")])
            m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
            h = m.fit(x, y, batch_size=512, epochs=1, verbose=0)
            print("LOSS", h.history["loss"][0])
        """), timeout=300)
        assert rc == 0, err
        assert "LOSS" in out and not cg.oom_killed()


def test_jupyter_kernel_survives_the_oversized_fit():
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import sys
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    with memory_cgroup(LIMIT) as cg:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(PRELUDE),
                    nbformat.v4.new_code_cell("model.fit(x, y, batch_size=90000, epochs=1, verbose=0)"),
                    nbformat.v4.new_code_cell("print('still alive', model.count_params())"),
                    nbformat.v4.new_code_cell("print(open('/proc/self/cgroup').read())")]
        wrapper = ["/bin/sh", "-c", f'echo $$ > {cg.path}/cgroup.procs && exec "$0" "$@"', sys.executable,
                   "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        km = KernelManager(kernel_cmd=wrapper) if _accepts_kernel_cmd(KernelManager) else KernelManager()
        if not _accepts_kernel_cmd(KernelManager):
            km.kernel_spec.argv = wrapper
        client = NotebookClient(nb, km=km, timeout=120, allow_errors=True)
        client.execute()
        errs = [o for o in nb.cells[1].outputs if o.output_type == "error"]
        assert errs and errs[0].ename == "MemoryBudgetError"
        out = "".join(o.get("text", "") for o in nb.cells[2].outputs)
        assert "still alive" in out
        assert os.path.basename(cg.path) in "".join(o.get("text", "") for o in nb.cells[3].outputs)
        assert not cg.oom_killed()
        del CellExecutionError


def _accepts_kernel_cmd(cls):
    return "kernel_cmd" in getattr(cls, "class_trait_names", lambda: [])()


def test_watchdog_stops_a_leaking_callback_before_the_oom_killer():
    with memory_cgroup(LIMIT) as cg:
        rc, out, err = cg.run_python(textwrap.dedent("""
            import numpy as np, boundfit as bf
            from boundfit import layers
            m = bf.Sequential([layers.Dense(64, activation="relu", input_shape=(256,)), layers.Dense(1)])
            m.compile(optimizer="sgd", loss="mse")
            x = np.random.default_rng(0).standard_normal((4096, 256), dtype=np.float32)
            leak = []
            grow = bf.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: leak.append(np.ones(4 << 20)))
            try:
                m.fit(x, x[:, :1], batch_size=32, epochs=1000, verbose=0, callbacks=[grow])
            except bf.MemoryBudgetError as e:
                print("CAUGHT", str(e))
            leak.clear()
            print("ALIVE", np.isfinite(m.get_weights()[0]).all())
        """))
        assert rc == 0, err
        assert "CAUGHT" in out and "outside the plan" in out and "ALIVE True" in out
        assert not cg.oom_killed()
