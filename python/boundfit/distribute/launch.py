"""`python -m boundfit.distribute script.py args...`: the rank wrapper that
lets the survivors of a dead rank raise under hydra's mpiexec; and
`python -m boundfit.distribute --nproc-per-node N script.py args...`: a
small torchrun for one host without MPI (N processes with RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT: the TCP transport)."""

import os
import signal
import socket
import subprocess
import sys
import time

from . import reap

_USAGE = ("usage: mpiexec -disable-auto-cleanup -n N python -m boundfit.distribute script.py [args...]\n"
          "       python -m boundfit.distribute --nproc-per-node N [--master-port P] script.py [args...]")


def _option(argv, names):
    """(value, rest of argv) for a leading `--name V` / `--name=V`; (None, argv) when absent."""
    for name in names:
        if argv and argv[0] == name:
            if len(argv) < 2:
                raise SystemExit(f"boundfit.distribute: {name} needs a value\n{_USAGE}")
            return argv[1], argv[2:]
        if argv and argv[0].startswith(name + "="):
            return argv[0].split("=", 1)[1], argv[1:]
    return None, argv


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _local_main(nproc, port, argv):
    """N ranks on this host over TCP; exits with the first failing rank's
    status. The others raise DistributedError on their own (a closed
    connection is found at once, a stuck rank at the deadline); any still
    running BF_DIST_GRACE seconds after the first failure is stuck and is
    ended here (reap.py)."""
    try:
        n = int(nproc)
    except ValueError:
        n = 0
    if n < 1:
        raise SystemExit(f"boundfit.distribute: --nproc-per-node must be a positive integer, got {nproc!r}")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise SystemExit(f"boundfit.distribute: --master-port must be a TCP port, got {port!r}")
    reap.grace_seconds()   # a bad BF_DIST_GRACE is refused before any rank starts
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_", "HYDRA_"))}
    env.update(WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port or _free_port()))
    kids = {r: subprocess.Popen([sys.executable] + argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
            for r in range(n)}
    status, failure, stuck = reap.wait_ranks(kids)
    if failure is None:
        return 0
    if stuck:
        reap.say(f"the job failed ({failure}); ended stuck rank{'s' if len(stuck) > 1 else ''} "
                 + ", ".join(map(str, stuck)))
    return reap.shell_status(next(s for s in status.values() if s != 0))


def _launch_main(argv):
    """Run `python script args` as a child and exit with its status, after a
    grace period when it died. hydra's mpiexec (MPICH 5.0.2) kills every rank
    as soon as one exits abnormally, even with -disable-auto-cleanup, and its
    proxy fails when the dead rank's PMI socket closes; this wrapper keeps the
    PMI socket open and holds the dead rank's status back for BF_DIST_GRACE
    seconds (default 5), so that the survivors find the death (the engine's
    heartbeat, every 50 ms) and raise DistributedError themselves. Under
    -disable-auto-cleanup, hydra tells the other ranks' wrappers with SIGUSR1
    that a rank failed: a child still running BF_DIST_GRACE seconds later is
    stuck and is ended (reap.py), so that mpiexec ends too."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    nproc, rest = _option(argv, ("--nproc-per-node", "--nproc_per_node"))
    if nproc is not None:
        port, rest = _option(rest, ("--master-port", "--master_port"))
        if not rest:
            raise SystemExit(f"boundfit.distribute: no script to run\n{_USAGE}")
        return _local_main(nproc, port, rest)
    grace = reap.grace_seconds()
    notice = []
    signal.signal(signal.SIGUSR1, lambda *_: notice.append("mpiexec said another rank failed (SIGUSR1)"))
    fds = tuple(int(os.environ[k]) for k in ("PMI_FD",) if os.environ.get(k, "").isdigit())
    rank = os.environ.get("PMI_RANK", "?")
    child = subprocess.Popen([sys.executable] + argv, pass_fds=fds)
    status, _, stuck = reap.wait_ranks({rank: child}, lambda: notice[0] if notice else None)
    s = status[rank]
    if s != 0 and not stuck and not notice:   # (after hydra's notice the others know already)
        time.sleep(grace)   # the PMI socket held open: the others find the death themselves
    return reap.shell_status(s)
