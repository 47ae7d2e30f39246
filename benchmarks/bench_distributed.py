"""Data-parallel scaling on the CPU over MPI and over the TCP transport of a
torchrun-style launch (bf.distribute): one rank against two on this machine
(loopback), each rank with one BLAS thread, an MLP 784 -> 1024 -> 1024 -> 10
(1.9 M parameters, 7.6 MB of gradients a step).

- weak scaling: every rank batch B (global batch N*B): samples/s and speed-up;
- strong scaling: the global batch fixed (one rank 2B, two ranks B each);
- communication share: seconds inside collectives (the gradient all-reduce,
  including any wait for the slower rank) over the fit's time, on rank 0;
- exposed share: the part of it the step waited for. The all-reduce runs in a
  communication thread during backward (csrc/core/dist_overlap.c), so only
  what is left after backward is exposed; BF_DIST_OVERLAP=0 (the "after"
  rows) sums the same buckets after backward, all of it exposed.

    python benchmarks/bench_distributed.py [--quick] [--tcp-only]
        (launches mpiexec itself, and the TCP ranks as plain processes with
        RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT)
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time


def rank_main(batch, steps):
    import numpy as np
    import boundfit as bf
    from boundfit import layers
    bf._core.set_num_threads(1)   # one core per rank, one rank or two
    bf.distribution.set_distribution(bf.distribution.DataParallel())
    n = bf.distribution.num_processes()
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Dense(1024, activation="relu", input_shape=(784,)), layers.Dense(1024, activation="relu"),
                       layers.Dense(10)])
    m.compile(optimizer="adam", loss=bf.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    rows = batch * n * steps
    x = rng.standard_normal((rows, 784)).astype(np.float32)
    y = rng.integers(0, 10, rows)
    m.fit(x[:batch * n * 2], y[:batch * n * 2], batch_size=batch, epochs=1, verbose=0)   # warm-up
    c0 = bf.distribution.comm_seconds() if n > 1 else 0.0
    o0 = bf._core.dist_overlap_counters()
    t0 = time.perf_counter()
    m.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    dt = time.perf_counter() - t0
    comm = (bf.distribution.comm_seconds() - c0) if n > 1 else 0.0
    o1 = bf._core.dist_overlap_counters()
    thread_s, wait_s = o1[4] - o0[4], o1[3] - o0[3]
    exposed = comm - thread_s + wait_s   # the main thread's own collectives plus its waits for the thread
    if bf.distribution.rank() == 0:
        print("RESULT " + json.dumps({"ranks": n, "batch": batch, "steps": steps, "seconds": dt,
                                      "samples_per_s": rows / dt, "step_ms": 1000 * dt / steps,
                                      "comm_share": comm / dt, "exposed_share": exposed / dt,
                                      "overlapped_steps": o1[0] - o0[0], "early_buckets": o1[1] - o0[1],
                                      "buckets": o1[2] - o0[2]}), flush=True)


def _result(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(out[-2000:])


def launch(n, batch, steps, overlap="1"):
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    exe = exe if os.path.exists(exe) else shutil.which("mpiexec")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", BF_DIST_THREADS="1",
               BF_DIST_OVERLAP=overlap)
    p = subprocess.run([exe, "-n", str(n), sys.executable, __file__, "--rank", str(batch), str(steps)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return _result(p.stdout)


def launch_tcp(n, batch, steps, overlap="1"):
    """n plain processes with torchrun's variables: the engine's TCP transport."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if "PMI" not in k and "HYDRA" not in k}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", BF_DIST_THREADS="1", WORLD_SIZE=str(n),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), BF_DIST_OVERLAP=overlap)
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(batch), str(steps)],
                              env=dict(env, RANK=str(r)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(n)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    return _result(outs[0])


def _row(name, r):
    print(f"{name:44s} {r['samples_per_s']:10.0f} {r['step_ms']:8.1f} {100 * r['comm_share']:9.1f}% "
          f"{100 * r.get('exposed_share', 0.0):8.1f}%")


def main():
    quick = "--quick" in sys.argv
    steps = 10 if quick else 40
    b = 64
    load = os.getloadavg()
    print(f"CPU cores: {os.cpu_count()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, one BLAS thread "
          f"per rank, MLP 784-1024-1024-10, {steps} steps")
    print(f"{'run':44s} {'samples/s':>10s} {'step ms':>8s} {'comm share':>10s} {'exposed':>9s}")
    one, one_2b = launch_tcp(1, b, steps), launch_tcp(1, 2 * b, steps)   # one process: no transport at all
    for name, r in ((f"1 rank, batch {b}", one), (f"1 rank, batch {2 * b}", one_2b)):
        _row(name, r)
    transports = [("tcp", launch_tcp)] + ([] if "--tcp-only" in sys.argv else [("mpi", launch)])
    for name, fn in transports:
        for overlap, label in (("0", "after backward"), ("1", "overlapped")):
            two = fn(2, b, steps, overlap)
            _row(f"2 ranks, batch {b} each ({name}, {label})", two)
            print(f"  weak scaling 1 -> 2 ranks: {two['samples_per_s'] / one['samples_per_s']:.2f}x; strong "
                  f"(global batch {2 * b}): {two['samples_per_s'] / one_2b['samples_per_s']:.2f}x; buckets "
                  f"handed over during backward: {two['early_buckets']} of {two['buckets']}")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
