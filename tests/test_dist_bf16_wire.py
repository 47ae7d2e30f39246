"""Data-parallel gradients in bfloat16 on the wire, float32 sums
(DataParallel(gradient_compression="bfloat16"), issue 36). One launch per
transport and rank count, all at once (tests/dist_programs/bf16_wire.py):
TCP on 2 and 3 ranks, MPI on 2 and 3 (skipped without mpiexec). Checked: the
engine's sum equals NumPy's with the same roundings (TCP: every rank's
values rounded to bfloat16 once, summed in float32 in rank order, the sum
rounded once; MPI on 2 ranks the same; on 3, MPICH's reduction tree rounds
each partial sum it sends on, so within the bound below), on odd lengths
across the TCP blocks and a bucket boundary; the gradient bytes sent are
halved; a training step differs from float32 data parallel by at most the
bound; training converges as float32's does; the plan counts the wire buffer
and the arena reaches exactly its plan; bad values and device="cuda" are
refused naming the option.

The bound (u = 2**-8, bfloat16's unit roundoff; e = 2**-24, float32's): each
rank's g_r is rounded once (error <= u |g_r|); each of at most N - 1 rounded
partial sums adds <= u (1 + u)**N sum_r |g_r|; float32 additions add <= 2 N e
(1 + u)**N sum_r |g_r| more, the float32 path's own error included. Divided
by N: |bf16 step - float32 step| <= (u + (N - 1) u (1 + u)**N + 2 N e (1 +
u)**N) * sum_r |g_r| / N, about N * 2**-8 times the ranks' mean |g_r|."""
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import boundfit as bf
from dist_util import HAVE_MPI, MPIEXEC, PROGRAMS, free_port, job_env, run_job

PROGRAM = os.path.join(PROGRAMS, "bf16_wire.py")
LENGTHS = (7, 2 * 32768 + 3)   # the program's: odd, one over two TCP blocks of 32768 values
BUCKET = 40001                 # the program's bucket: the long buffer has a boundary inside a TCP block
FRAME = 16                     # dist_tcp.c's frame header
JOBS = [("tcp", 2, "sums"), ("tcp", 3, "train")] + ([("mpi", 2, "sums"), ("mpi", 3, "train")] if HAVE_MPI else [])
U, E = 2.0 ** -8, 2.0 ** -24


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """{(transport, ranks): [each rank's record]}, all jobs launched at once."""
    root = tmp_path_factory.mktemp("bf16_wire")
    cmds, outs = [], {}
    env = job_env(TEST_TIMEOUT="60")
    for transport, n, mode in JOBS:
        out = root / f"{transport}{n}"
        out.mkdir()
        outs[transport, n] = out
        if transport == "mpi":
            cmds.append(([MPIEXEC, "-n", str(n), sys.executable, PROGRAM, mode, str(out)], env))
            continue
        port = free_port()
        for r in range(n):
            cmds.append(([sys.executable, PROGRAM, mode, str(out)],
                         dict(env, WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), RANK=str(r), LOCAL_RANK=str(r),
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))))
    results = run_job(cmds, env, root)
    assert all(rc == 0 for rc, _ in results), "\n".join(o[-2000:] for _, o in results)
    return {k: [dict(np.load(out / f"rank{r}.npz")) for r in range(k[1])] for k, out in outs.items()}


def _bf16(a):
    return a.astype(ml_dtypes.bfloat16).astype(np.float32)


def _reference(gs):
    """TCP's sum: each rank's values rounded to bfloat16, added in float32 in rank order, the sum rounded."""
    acc = _bf16(gs[0])
    for g in gs[1:]:
        acc = acc + _bf16(g)
    return _bf16(acc)


def _bound(gs):
    n = len(gs)
    total = sum(np.abs(g.astype(np.float64)) for g in gs)
    return (U + (n - 1) * U * (1 + U) ** n + 2 * n * E * (1 + U) ** n) * total


@pytest.mark.parametrize("key", [j[:2] for j in JOBS], ids=[f"{t}-{n}" for t, n, _ in JOBS])
@pytest.mark.parametrize("length", LENGTHS)
def test_bf16_sum_is_numpys_with_the_same_roundings_and_the_same_bits_on_every_rank(jobs, key, length):
    recs = jobs[key]
    gs = [r[f"g{length}"] for r in recs]
    got = recs[0][f"sum_bf16{length}"]
    for r in recs[1:]:
        assert np.array_equal(r[f"sum_bf16{length}"], got)
    if key == ("mpi", 3):   # MPICH's tree rounds every partial sum it sends on: the order is its own
        assert np.all(np.abs(got - sum(g.astype(np.float64) for g in gs)) <= _bound(gs))
    else:
        np.testing.assert_array_equal(got, _reference(gs))


@pytest.mark.parametrize("key", [j[:2] for j in JOBS], ids=[f"{t}-{n}" for t, n, _ in JOBS])
def test_bf16_wire_halves_the_gradient_bytes_sent(jobs, key):
    transport, n = key
    buckets = {length: -(-length // BUCKET) for length in LENGTHS}
    for rank, rec in enumerate(jobs[key]):
        for length in LENGTHS:
            f32, bf16 = int(rec[f"bytes_f32{length}"]), int(rec[f"bytes_bf16{length}"])
            if transport == "mpi":
                assert (f32, bf16) == (4 * length, 2 * length)
            else:   # a peer sends its values once, rank 0 the sum to every peer; one frame per bucket each
                copies = n - 1 if rank == 0 else 1
                assert f32 == copies * (4 * length + FRAME * buckets[length])
                assert bf16 == copies * (2 * length + FRAME * buckets[length])
    for rec in jobs[key]:
        if "fit_bytes_f32" in rec:   # a fit: the same steps and buckets, half the bytes (but the frames)
            assert rec["fit_bytes_bf16"] < 0.52 * rec["fit_bytes_f32"]


def _rows(r, b=8):
    """Rank r's rows of the program's first global batch (its data: seed 0, 240 rows)."""
    x = np.random.default_rng(0).normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    return x[r * b:(r + 1) * b].astype(np.float64), y[r * b:(r + 1) * b]


def _mlp_gradient(w, x, y):
    """The gradient of the program's model (Dense(16, relu), Dense(3, softmax), mean sparse categorical
    cross-entropy) on (x, y) at the flat weights w, in float64."""
    w = w.astype(np.float64)
    w1, b1, w2, b2 = np.split(w, np.cumsum([160, 16, 48]))
    w1, w2 = w1.reshape(10, 16), w2.reshape(16, 3)
    h = np.maximum(x @ w1 + b1, 0)
    z = h @ w2 + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz = (p - np.eye(3)[y]) / len(x)
    dh = (dz @ w2.T) * (h > 0)
    return np.concatenate([(x.T @ dh).ravel(), dh.sum(0), (h.T @ dz).ravel(), dz.sum(0)])


def _train_jobs():
    return [j[:2] for j in JOBS if j[2] == "train"]


@pytest.mark.parametrize("key", _train_jobs(), ids=[f"{t}-{n}" for t, n in _train_jobs()])
def test_a_bf16_step_differs_from_float32_data_parallel_by_at_most_the_rounding_bound(jobs, key):
    recs = jobs[key]
    n, w0 = len(recs), recs[0]["w0"]
    local = [_mlp_gradient(w0, *_rows(r)) for r in range(n)]   # each rank's gradient of its rows
    f32, bf16 = recs[0]["step_f32"], recs[0]["step_bf16"]
    np.testing.assert_allclose(f32, sum(local) / n, rtol=1e-4, atol=1e-6)   # the float32 step: their mean
    assert not np.array_equal(f32, bf16)   # the option did something
    # read back as w0 - w1 with w1 = w0 - g: both float32 subtractions add <= e (|w0| + |g|) each, in both runs
    slack = 4 * E * (np.abs(w0) + np.abs(f32) + np.abs(bf16))
    assert np.all(np.abs(bf16 - f32) <= 1.001 * _bound(local) / n + slack)   # 1.001: local is float64
    for r in recs[1:]:
        assert np.array_equal(r["step_bf16"], bf16) and np.array_equal(r["final_bf16"], recs[0]["final_bf16"])


@pytest.mark.parametrize("key", _train_jobs(), ids=[f"{t}-{n}" for t, n in _train_jobs()])
def test_training_with_bf16_gradients_converges_as_float32_data_parallel(jobs, key):
    rec = jobs[key][0]
    f32, bf16 = rec["loss_f32"], rec["loss_bf16"]
    assert bf16[-1] < 0.7 * bf16[0]
    np.testing.assert_allclose(bf16, f32, rtol=2e-3)
    np.testing.assert_allclose(rec["final_bf16"], rec["final_f32"], atol=2e-2)


@pytest.mark.parametrize("key", _train_jobs(), ids=[f"{t}-{n}" for t, n in _train_jobs()])
def test_the_plan_counts_the_wire_buffer_and_the_arena_reaches_it(jobs, key):
    for rec in jobs[key]:
        wire = -(-2 * int(rec["n_trainable"]) // 64) * 64   # 2 bytes a gradient, the arena's 64-byte alignment
        assert (int(rec["wire_entry_f32"]), int(rec["wire_entry_bf16"])) == (0, wire)
        assert rec["high_is_reserved_f32"] and rec["high_is_reserved_bf16"]
        assert int(rec["run_reserved_bf16"]) - int(rec["run_reserved_f32"]) == wire


def test_bf16_wire_on_a_cuda_device_is_refused_naming_the_option(jobs):
    for rec in jobs["tcp", 3]:
        msg = str(rec["cuda_error"])
        assert "gradient_compression='bfloat16'" in msg and "gradient_compression=None" in msg


@pytest.mark.parametrize("value, match", [
    ("float16", "gradient_compression='float16' is not offered.*use gradient_compression='bfloat16'"),
    ("int8", "gradient_compression must be None or 'bfloat16', got 'int8'"),
    (16, "gradient_compression must be None or 'bfloat16', got 16"),
])
def test_bad_gradient_compression_raises_naming_it(value, match):
    with pytest.raises(ValueError, match=match):
        bf.distribution.DataParallel(gradient_compression=value)


@pytest.mark.parametrize("value, want", [(None, None), ("bfloat16", "bfloat16"), ("bf16", "bfloat16"),
                                         ("float32", None)])
def test_gradient_compression_values(value, want):
    assert bf.distribution.DataParallel(gradient_compression=value).gradient_compression == want
