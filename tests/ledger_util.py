"""Another process holding a reservation on the machine's memory ledger, for tests.

    with holder({"emu:0": 3 << 30}) as h:     # a forked child reserves, then waits
        h.pid; h.release(); h.kill()

The child only reserves (nothing is allocated) and waits on a pipe: release()
makes it drop the reservation and exit, kill() SIGKILLs it (the OS drops its
lock). The emulated device's 4 GiB are a fixed reading, so budgets computed
beside such a holder are exact numbers."""

import contextlib
import os
import signal
import time

from boundfit.runtime import ledger

HANG_GUARD = 120.0   # seconds: only ever reached when something is broken


class Holder:
    def __init__(self, pid, cmd):
        self.pid, self._cmd = pid, cmd

    def release(self):
        os.write(self._cmd, b"r")
        os.waitpid(self.pid, 0)
        self.pid = None

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.pid = None


@contextlib.contextmanager
def holder(nbytes, what="fit"):
    """A child process holding a reservation of nbytes ({location: bytes}) on the ledger."""
    cmd_r, cmd_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: reserve, say so, wait for the word
        code = 1
        try:
            os.close(cmd_w)
            os.close(ready_r)
            hold = ledger.reserve(what, nbytes)
            os.write(ready_w, b"1")
            os.read(cmd_r, 1)
            hold.release()
            code = 0
        finally:
            os._exit(code)
    os.close(cmd_r)
    os.close(ready_w)
    h = Holder(pid, cmd_w)
    try:
        if os.read(ready_r, 1) != b"1":
            raise RuntimeError("the holder process did not reserve")
        yield h
    finally:
        if h.pid is not None:
            h.kill()
        os.close(cmd_w)
        os.close(ready_r)


def wait_until(cond, what):
    """Poll cond() until true (hang guard: HANG_GUARD seconds, then fail naming `what`)."""
    end = time.monotonic() + HANG_GUARD
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"hang guard: {what} did not happen in {HANG_GUARD:.0f} s")
        time.sleep(0.02)


def waiting_pids():
    return {r.pid for r in ledger.ledger() if r.state == "waiting"}
