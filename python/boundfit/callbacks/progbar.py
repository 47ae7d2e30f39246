"""A Keras-style progress bar for fit / evaluate / predict. In a terminal it
prints Keras's line. In a Jupyter notebook (an ipykernel shell) verbose=1
shows one display per epoch, updated in place: the bar, the logs, and the
memory in use against the run's plan (process RSS; on a device, its bytes in
use), so a run that stays inside its plan is seen to do so."""

import html
import logging
import sys
import time

import numpy as np

from .. import _core
from ..runtime.budget import anon_rss_bytes, process_usage_bytes
from ..sizes import format_bytes

_MIN_INTERVAL = 0.2  # seconds between notebook display updates (the last one always shows)
_INTERACTIVE = [True]  # keras.utils.disable_interactive_logging(): progress lines go to logging.info instead


def enable_interactive_logging():
    _INTERACTIVE[0] = True


def disable_interactive_logging():
    """Progress bars and messages go to Python's logging (logger "boundfit", INFO), one line per finished
    bar, instead of being redrawn on stdout (Keras sends them to absl logging)."""
    _INTERACTIVE[0] = False


def is_interactive_logging_enabled():
    return _INTERACTIVE[0]


def in_notebook():
    """True inside a Jupyter kernel (ipykernel's shell); IPython is not imported for it."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def memory_report(plan):
    """[(where, bytes the run uses now or None, plan bytes, budget bytes or None, note)]. Host: the growth
    of the process's anonymous resident memory since the plan was made, plus what the run held already (the
    model's weights), against the plan's host total; the note gives the process's RSS. A device run adds the
    device's bytes in use."""
    anon, base, rss = anon_rss_bytes(), getattr(plan, "anon_rss_at_plan", None), process_usage_bytes()
    used = None if anon is None or base is None else max(anon - base, 0) + plan.held_bytes
    note = "" if rss is None else f"process RSS {format_bytes(rss)}"
    out = [("host", used, plan.host_bytes, plan.budget_host_bytes, note)]
    if plan.device not in ("cpu", "host"):
        try:
            free, total = _core.device_mem_info(plan.device)
            dev = total - free
        except Exception:  # noqa: BLE001 - a display never stops a run
            dev = None
        if used is not None and dev is not None and plan.device.startswith("emu"):
            out[0] = ("host", max(used - dev, 0), *out[0][2:])   # the emulated device's memory is this process's
        out.append((plan._device_name(), dev, plan.device_bytes, plan.budget_device_bytes, "device memory in use"))
    return out


class Progbar:
    """Keras's `Progbar(target, width=20, verbose=1, interval=0.05, stateful_metrics=None, unit_name="step")`:
    a text progress bar. `update(current, values, finalize)` takes Keras's list of (name, value) pairs, each
    shown as its mean over the steps seen unless its name is in `stateful_metrics` (shown as given); a dict
    (fit's logs) is shown as given. `add(n, values)` advances by n. verbose=2 prints at the end only; the
    terminal line is redrawn at most every `interval` seconds (the last update always shows)."""
    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None, unit_name="step", *,
                 stream=None, plan=None):
        if target is not None and (isinstance(target, bool) or not isinstance(target, (int, np.integer))
                                   or target < 0):
            raise ValueError(f"Progbar: target must be a non-negative int or None, got {target!r}")
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
            raise ValueError(f"Progbar: width must be a positive int, got {width!r}")
        if verbose not in (0, 1, 2):
            raise ValueError(f"Progbar: verbose must be 0, 1 or 2, got {verbose!r}")
        self.target, self.verbose, self.width = target, verbose, int(width)
        self.interval, self.unit_name = float(interval), unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self.stream = stream or sys.stdout
        self.start = time.monotonic()
        self._last_len, self._last_update, self._seen_so_far = 0, 0.0, 0
        self._values, self._values_order = {}, []
        self.plan = plan
        self._handle, self._shown = None, 0.0
        self.notebook = stream is None and verbose == 1 and in_notebook()

    def _accumulate(self, current, values):
        """Keras's running means: each value weighted by the steps it covers (current - steps seen before)."""
        base = max(current - self._seen_so_far, 1)
        for k, v in values:
            if k not in self._values_order:
                self._values_order.append(k)
            if k in self.stateful_metrics:
                self._values[k] = [v, 1]
            elif k in self._values:
                self._values[k][0] += np.asarray(v) * base
                self._values[k][1] += base
            else:
                self._values[k] = [np.asarray(v) * base, base]
        return {k: np.asarray(self._values[k][0]) / self._values[k][1] for k in self._values_order}

    def _fmt_logs(self, logs):
        # a vector value (F1Score(average=None)) shows its mean, as Keras's Progbar does
        return "".join(f" - {k}: {float(np.mean(v)):.4f}" for k, v in logs.items())

    def add(self, n, values=None):
        """Advance by n steps (Keras's Progbar.add)."""
        self.update(self._seen_so_far + n, values)

    def update(self, current, values=None, finalize=None):
        if current is None:          # a source of unknown length ending: the steps seen
            current = self._seen_so_far
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        logs = dict(values or {}) if isinstance(values, dict) else self._accumulate(current, values or [])
        self._seen_so_far = current
        if self.verbose == 0 or (self.verbose == 2 and not finalize):
            return
        now = time.monotonic()
        if not finalize and self.interval and now - self._last_update < self.interval and self._last_update:
            return
        self._last_update = now
        elapsed = now - self.start
        if self.target:
            done = int(self.width * current / self.target)
            bar = "=" * max(done - 1, 0) + (">" if done < self.width else "=") + "." * (self.width - done)
            head = f"{current}/{self.target} [{bar}]"
        else:
            head = f"{current}"
        if finalize:
            per = elapsed / max(current, 1)
            tail = f" - {elapsed:.0f}s {per * 1e3:.0f}ms/{self.unit_name}"
        else:
            eta = elapsed / max(current, 1) * (self.target - current) if self.target else 0
            tail = f" - ETA: {eta:.0f}s"
        line = head + tail + self._fmt_logs(logs)
        if not _INTERACTIVE[0]:
            if finalize or self.verbose == 2:
                logging.getLogger("boundfit").info(line)
            return
        if self.notebook:
            count = f"{current}/{self.target}" if self.target else f"{current}"
            return self._display(current, line, count + tail + self._fmt_logs(logs), finalize)
        pad = " " * max(self._last_len - len(line), 0)
        self._last_len = len(line)
        if self.verbose == 1:
            self.stream.write("\r" + line + pad + ("\n" if finalize else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _display(self, current, line, short, finalize):
        """Show (first call) or update this epoch's display: the bar drawn in HTML next to `short` (the line
        without its text bar), and the memory in use against the plan; `line` and the memory as text/plain."""
        now = time.monotonic()
        if not finalize and self._handle is not None and now - self._shown < _MIN_INTERVAL:
            return
        self._shown = now
        from IPython.display import display
        mem = memory_report(self.plan) if self.plan is not None else []
        text = line + "".join(f"\n{_mem_text(*m)}" for m in mem)
        obj = _Html(_html(current, self.target, short, mem), text)
        if self._handle is None:
            self._handle = display(obj, display_id=True)
        else:
            self._handle.update(obj)


class _Html:
    """Shown as HTML in a notebook, as text elsewhere (and in saved notebooks' text/plain)."""

    def __init__(self, markup, text):
        self.markup, self.text = markup, text

    def _repr_html_(self):
        return self.markup

    def __repr__(self):
        return self.text


def _bar(frac, color, width=160):
    frac = min(max(frac, 0.0), 1.0)
    return (f"<span style='display:inline-block;width:{width}px;height:9px;background:#e0e0e0;"
            f"vertical-align:middle'><span style='display:block;height:9px;width:{frac * width:.0f}px;"
            f"background:{color}'></span></span>")


def _mem_text(where, used, planned, budget, note):
    """'host: run 790.00 MiB of plan 835.24 MiB, budget 869.88 MiB (process RSS 931.34 MiB)'"""
    return (f"{where}: run {'?' if used is None else format_bytes(used)} of plan {format_bytes(planned)}"
            + (f", budget {format_bytes(budget)}" if budget is not None else "") + (f" ({note})" if note else ""))


def _html(current, target, line, mem):
    frac = current / target if target else 1.0
    rows = [f"<div style='font-family:monospace'>{_bar(frac, '#1976d2', 240)} {html.escape(line)}</div>"]
    for where, used, planned, budget, note in mem:
        scale = max(used or 0, planned, budget or 0)
        over = used is not None and budget is not None and used > budget
        fill = _bar((used or 0) / scale if scale else 0, "#c62828" if over else "#2e7d32")
        rows.append(f"<div style='font-family:monospace;font-size:90%'>{fill} "
                    f"{html.escape(_mem_text(where, used, planned, budget, note))}</div>")
    return "<div class='boundfit-progress'>" + "".join(rows) + "</div>"
