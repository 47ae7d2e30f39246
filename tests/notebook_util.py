"""Run a notebook built in memory (nbformat) in a real Jupyter kernel (nbclient +
ipykernel), optionally started inside a memory cgroup (cgroup_util), cell by
cell, and report each cell's fate:

    results = run_notebook(["import numpy as np", "np.ones(1 << 30)"], cgroup=cg)
    [r.status for r in results]      # "ok" | "error" (r.ename, r.evalue) | "died" | "not run"

"died" is nbclient's DeadKernelError: the kernel process vanished, as when the
OOM killer SIGKILLs it ("The kernel appears to have died"). The kernel is
`sys.executable -m ipykernel_launcher -f {connection_file}`, behind the
cgroup's shell wrapper (echo $$ > cgroup.procs; exec ...) when a cgroup is
given. Skips the test if nbclient, nbformat or ipykernel is missing."""

from collections import namedtuple
import contextlib
import gc
import sys

import pytest

CellResult = namedtuple("CellResult", "index status ename evalue text")


def _kernel_manager(cgroup):
    from jupyter_client import AsyncKernelManager

    class CgroupKernelManager(AsyncKernelManager):
        """Launches ipykernel with this interpreter, through the cgroup's wrapper if any."""

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file] + list(extra_arguments or [])
            return cgroup.wrap(cmd) if cgroup is not None else cmd

    return CgroupKernelManager(kernel_name="python3")


def _text(cell):
    return "".join(o.get("text", "") or "".join(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


def run_notebook(cells, cgroup=None, timeout=60, startup_timeout=60):
    """Execute code cells (strings) in a fresh kernel; [CellResult(index, status, ename, evalue, text)]."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from nbclient.exceptions import DeadKernelError

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    client = nbclient.NotebookClient(nb, km=_kernel_manager(cgroup), timeout=timeout, allow_errors=True,
                                     startup_timeout=startup_timeout, kernel_name="python3")
    results, dead = [], False
    with contextlib.ExitStack() as stack:
        stack.enter_context(client.setup_kernel())
        for i, cell in enumerate(nb.cells):
            if dead:
                results.append(CellResult(i, "not run", None, None, ""))
                continue
            try:
                client.execute_cell(cell, i)
            except DeadKernelError as e:
                dead = True
                results.append(CellResult(i, "died", "DeadKernelError", str(e), _text(cell)))
                continue
            err = next((o for o in cell.outputs if o.output_type == "error"), None)
            results.append(CellResult(i, "error", err.ename, err.evalue, _text(cell)) if err else
                           CellResult(i, "ok", None, None, _text(cell)))
    del client
    gc.collect()                  # the client's cycles (zmq sockets, asyncio) are gone before the next test
    return results
