"""A Keras-style progress bar for fit / evaluate / predict."""

import sys
import time


class Progbar:
    def __init__(self, target, verbose=1, width=30, stream=None):
        self.target, self.verbose, self.width = target, verbose, width
        self.stream = stream or sys.stdout
        self.start = time.monotonic()
        self._last_len = 0

    def _fmt_logs(self, logs):
        return "".join(f" - {k}: {v:.4f}" for k, v in logs.items())

    def update(self, current, logs=None, finalize=False):
        if self.verbose != 1 and not finalize:
            return
        if self.verbose == 0:
            return
        elapsed = time.monotonic() - self.start
        logs = logs or {}
        if self.target:
            done = int(self.width * current / self.target)
            bar = "=" * max(done - 1, 0) + (">" if done < self.width else "=") + "." * (self.width - done)
            head = f"{current}/{self.target} [{bar}]"
        else:
            head = f"{current}"
        if finalize:
            per = elapsed / max(current, 1)
            tail = f" - {elapsed:.0f}s {per * 1e3:.0f}ms/step"
        else:
            eta = elapsed / max(current, 1) * (self.target - current) if self.target else 0
            tail = f" - ETA: {eta:.0f}s"
        line = head + tail + self._fmt_logs(logs)
        pad = " " * max(self._last_len - len(line), 0)
        self._last_len = len(line)
        if self.verbose == 1:
            self.stream.write("\r" + line + pad + ("\n" if finalize else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
