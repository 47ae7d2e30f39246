"""The gradient all-reduce with float32 and with bfloat16 on the wire
(DataParallel(gradient_compression="bfloat16")): 2 ranks on this host over
the TCP transport (loopback) and over MPI when mpiexec is found, a gradient
of 25 M floats (100 MB) summed as a training step sums it (_core.dist_sum_gradients:
the same bf_dist_sum_buckets, buckets of 2**20 floats as dist_overlap.c cuts a
model this large), each repeated; the median seconds, the bytes rank 1 handed
to the transport, and the ratio. The bfloat16 time includes both conversions
(rounding before, expanding after) and rank 0's float32 sums.

    python benchmarks/bench_dist_bf16_wire.py [--floats N] [--repeats R] [--tcp-only]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

BUCKET = 1 << 20


def rank_main(floats, repeats):
    import numpy as np
    import boundfit as bf
    from boundfit import _core
    bf.distribution.initialize(timeout=600)
    g = np.random.default_rng(bf.distribution.rank()).standard_normal(floats).astype(np.float32)
    wire = np.empty(floats, np.uint16)
    out = {}
    for name, w in (("float32", None), ("bfloat16", wire), ("float32 again", None), ("bfloat16 again", wire)):
        times = []
        b0 = _core.dist_grad_bytes()
        for _ in range(repeats):
            buf = g.copy()
            _core.dist_agree("benchmark start")   # both ranks start together
            t0 = time.perf_counter()
            _core.dist_sum_gradients(buf, w, BUCKET)
            times.append(time.perf_counter() - t0)
        out[name] = {"median_s": sorted(times)[len(times) // 2], "min_s": min(times),
                     "bytes_per_call": (_core.dist_grad_bytes() - b0) // repeats}
    if bf.distribution.rank() == 1:
        print("RESULT " + json.dumps(out), flush=True)


def _result(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(out[-3000:])


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", BF_DIST_THREADS="1")


def launch_tcp(floats, repeats):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(floats), str(repeats)],
                              env=dict(_env(), RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=1200)[0] for p in procs]
    return _result("\n".join(outs))


def launch_mpi(floats, repeats):
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    exe = exe if os.path.exists(exe) else shutil.which("mpiexec")
    if exe is None:
        return None
    p = subprocess.run([exe, "-n", "2", sys.executable, __file__, "--rank", str(floats), str(repeats)], env=_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    return _result(p.stdout)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--floats", type=int, default=25_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tcp-only", action="store_true")
    a = ap.parse_args()
    print(f"host: {socket.gethostname()}, {os.cpu_count()} cores, load average {os.getloadavg()}")
    for name, fn in (("TCP", launch_tcp), ("MPI", None if a.tcp_only else launch_mpi)):
        if fn is None:
            continue
        r = fn(a.floats, a.repeats)
        if r is None:
            print(f"{name}: no mpiexec")
            continue
        for k, v in r.items():
            print(f"{name} 2 ranks, {a.floats} floats, {k:>15}: median {1e3 * v['median_s']:8.1f} ms, "
                  f"min {1e3 * v['min_s']:8.1f} ms, rank 1 sent {v['bytes_per_call'] / 1e6:7.1f} MB a call")
        f, b = min(r["float32"]["median_s"], r["float32 again"]["median_s"]), \
            min(r["bfloat16"]["median_s"], r["bfloat16 again"]["median_s"])
        nb = r["bfloat16"]["bytes_per_call"] / r["float32"]["bytes_per_call"]
        print(f"{name}: bfloat16 / float32 time {b / f:.2f}, bytes {nb:.3f}")


if __name__ == "__main__":
    main()
