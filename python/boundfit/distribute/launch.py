"""`python -m boundfit.distribute script.py args...`: the rank wrapper that
lets the survivors of a dead rank raise under hydra's mpiexec."""

import os
import subprocess
import sys
import time

def _launch_main(argv):
    """Run `python script args` as a child and exit with its status, after a
    grace period when it died. hydra's mpiexec (MPICH 5.0.2) kills every rank
    as soon as one exits abnormally, even with -disable-auto-cleanup, and its
    proxy fails when the dead rank's PMI socket closes; this wrapper keeps the
    PMI socket open and holds the dead rank's status back for BF_DIST_GRACE
    seconds (default 5), so that the survivors find the death (the engine's
    heartbeat, every 50 ms) and raise DistributedError themselves."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: mpiexec -disable-auto-cleanup -n N python -m boundfit.distribute script.py [args...]")
        return 0 if argv else 2
    fds = tuple(int(os.environ[k]) for k in ("PMI_FD",) if os.environ.get(k, "").isdigit())
    child = subprocess.Popen([sys.executable] + argv, pass_fds=fds)
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:
            continue   # the child got the signal too; its exit is what counts
    if status != 0:
        sig = -status if status < 0 else None
        what = f"signal {sig}" if sig else f"status {status}"
        sys.stderr.write(f"boundfit.distribute: rank {os.environ.get('PMI_RANK', '?')} ended with {what}\n")
        time.sleep(float(os.environ.get("BF_DIST_GRACE", "5")))
        return 128 + sig if sig else status
    return 0

