"""Waiting for the ranks a launcher started (launch.py), never forever: once
the job has failed (a rank ended abnormally, or mpiexec said another rank
did), the ranks still running get BF_DIST_GRACE seconds (default 5) to end on
their own (a rank waiting on a collective raises DistributedError at once or
at its deadline), then each one left is stuck: it is ended (SIGTERM, with
SIGCONT for a stopped one; SIGKILL 5 s later) and named on stderr."""

import os
import signal
import sys
import time

_POLL_S = 0.05     # how often the ranks' states are read while waiting
_KILL_AFTER_S = 5.0   # SIGTERM, then SIGKILL this much later


def grace_seconds():
    """BF_DIST_GRACE: seconds the other ranks get to end on their own once the job failed."""
    raw = os.environ.get("BF_DIST_GRACE", "5")
    try:
        grace = float(raw)
    except ValueError:
        grace = -1.0
    if not grace >= 0:
        raise SystemExit(f"boundfit.distribute: BF_DIST_GRACE must be a number of seconds >= 0, got {raw!r}")
    return grace


def describe(status):
    """A Popen returncode in words: "status 1", "signal 9 (SIGKILL)"."""
    if status >= 0:
        return f"status {status}"
    try:
        return f"signal {-status} ({signal.Signals(-status).name})"
    except ValueError:
        return f"signal {-status}"


def shell_status(status):
    """The exit status a shell gives a child that ended so: 128 + N for signal N."""
    return 128 - status if status < 0 else status


def say(line):
    sys.stderr.write(f"boundfit.distribute: {line}\n")
    sys.stderr.flush()


def _end(proc, sig):
    try:
        proc.send_signal(sig)
        if sig != signal.SIGKILL:
            proc.send_signal(signal.SIGCONT)   # a stopped rank gets the signal now, not when it is continued
    except ProcessLookupError:
        pass


def wait_ranks(procs, failed_elsewhere=lambda: None):
    """procs: {rank: Popen}. Waits until every one has ended, saying each
    abnormal end on stderr; once one ended abnormally, or failed_elsewhere() returns a reason (a str), those left
    get the grace period, then are ended. Returns ({rank: returncode} in
    the order they ended, the first failure in words or None, [ranks ended
    here as stuck])."""
    grace = grace_seconds()
    status, failure, since, stuck, killed_at = {}, None, None, [], None
    while len(status) < len(procs):
        try:
            for r, p in procs.items():
                if r not in status and p.poll() is not None:
                    status[r] = p.returncode
                    if p.returncode != 0:
                        say(f"rank {r} ended with {describe(p.returncode)}" + (" (stuck)" if r in stuck else ""))
                        failure = failure or f"rank {r} ended with {describe(p.returncode)}"
            if failure is None:
                failure = failed_elsewhere()
            now = time.monotonic()
            if failure is not None and since is None:
                since = now
            if since is not None and not stuck and now - since >= grace:
                stuck = [r for r in procs if r not in status]
                for r in stuck:
                    say(f"rank {r} (pid {procs[r].pid}) was still running {grace:g} s after {failure}: "
                        f"it is stuck; ending it (SIGTERM)")
                    _end(procs[r], signal.SIGTERM)
                killed_at = now
            if killed_at is not None and now - killed_at >= _KILL_AFTER_S:
                for r in stuck:
                    if r not in status:
                        say(f"rank {r} (pid {procs[r].pid}) ignored SIGTERM: SIGKILL")
                        _end(procs[r], signal.SIGKILL)
                killed_at = float("inf")
            if len(status) < len(procs):
                time.sleep(_POLL_S)
        except KeyboardInterrupt:
            continue   # the ranks got the signal too; their ends are what counts
    return status, failure, stuck
