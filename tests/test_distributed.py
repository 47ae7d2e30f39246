"""Data-parallel training over MPI (bf.distribute, issue 26, CPU path): 2 and
3 ranks launched with `mpiexec` on loopback match one process with N times
the batch; a rank short of memory makes every rank raise the same
MemoryBudgetError before step one; batch_size="auto" agrees on the smallest
rank's batch; a rank that dies or raises (mid-epoch or before step one)
makes the others raise DistributedError within seconds, and a stuck one at
the deadline. Runs that lose a rank go through the `python -m
boundfit.distribute` wrapper with -disable-auto-cleanup: hydra kills every
rank as soon as one ends abnormally otherwise. The rank programs are
tests/dist_programs/train.py. The MPI tests are skipped without mpiexec /
libmpi_abi.so (pip install boundfit[distributed]). The torchrun-style tests
launch the same program as plain subprocesses with RANK / WORLD_SIZE /
MASTER_ADDR / MASTER_PORT (the engine's TCP transport, no MPI needed), or
through `python -m boundfit.distribute --nproc-per-node N`: equal to one
process on 2 and 3 ranks, a killed, raising or stuck rank, a rank short of
memory, and bad variables named; and over TCP too: evaluate / predict split
by rank and equal to one process, BatchNormalization's moving statistics
averaged over ranks; a job that lost a rank resumes from BackupAndRestore."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import boundfit as bf
from boundfit import distribute, layers

PROGRAM = os.path.join(os.path.dirname(__file__), "dist_programs", "train.py")


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
needs_mpi = pytest.mark.skipif(MPIEXEC is None or distribute.find_mpi_library() is None,
                               reason="needs mpiexec and libmpi_abi.so (pip install mpich)")


def _launch(tmp_path, n, mode, batch=8, wrapper=False, timeout=20, sub=None, program=PROGRAM, **extra):
    """Run the program on n ranks; {rank: its record}, and the seconds it took."""
    out = tmp_path / (sub or mode)
    out.mkdir()
    env = dict(os.environ, TEST_TIMEOUT=str(timeout), OMP_NUM_THREADS="1", BF_DIST_GRACE="5", **extra)
    env.pop("PMI_RANK", None)
    cmd = [MPIEXEC]
    if wrapper:
        cmd += ["-disable-auto-cleanup"]
    cmd += ["-n", str(n), sys.executable]
    if wrapper:
        cmd += ["-m", "boundfit.distribute"]
    cmd += [program, mode, str(out), str(batch)]
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, cwd=str(out))
    took = time.time() - t0
    recs = {}
    for r in range(n):
        f = out / f"rank{r}.json"
        if f.exists():
            recs[r] = json.loads(f.read_text())
    return recs, took, out, p.stdout.decode(errors="replace")[-3000:]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch_tcp(tmp_path, n, mode, batch=8, timeout=20, launcher=False, program=PROGRAM, **env):
    """The program on n ranks as plain subprocesses with torchrun's variables
    (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; no mpiexec), or
    through `python -m boundfit.distribute --nproc-per-node n` (launcher=True),
    or with Keras's KERAS_DISTRIBUTION_* variables (launcher="keras")."""
    out = tmp_path / mode
    out.mkdir()
    port = _free_port()
    base = {k: v for k, v in os.environ.items() if "PMI" not in k and "HYDRA" not in k}
    base.update(TEST_TIMEOUT=str(timeout), OMP_NUM_THREADS="1", **env)
    args = [program, mode, str(out), str(batch)]
    t0 = time.time()
    if launcher is True:
        procs = [subprocess.Popen([sys.executable, "-m", "boundfit.distribute", "--nproc-per-node", str(n),
                                   "--master-port", str(port)] + args, cwd=str(out), env=base,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)]
    elif launcher == "keras":   # Keras 3's initialize() variables, no torchrun ones
        base.update(KERAS_DISTRIBUTION_JOB_ADDRESSES=",".join(f"127.0.0.1:{port + i}" for i in range(n)),
                    KERAS_DISTRIBUTION_NUM_PROCESSES=str(n))
        procs = [subprocess.Popen([sys.executable] + args, cwd=str(out),
                                  env=dict(base, KERAS_DISTRIBUTION_PROCESS_ID=str(r)), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT) for r in range(n)]
    else:
        base.update(WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs = [subprocess.Popen([sys.executable] + args, cwd=str(out),
                                  env=dict(base, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT) for r in range(n)]
    logs = [p.communicate(timeout=120)[0].decode(errors="replace")[-1500:] for p in procs]
    took = time.time() - t0
    recs = {}
    for r in range(n):
        f = out / f"rank{r}.json"
        if f.exists():
            recs[r] = json.loads(f.read_text())
    return recs, took, out, "\n".join(logs)


def _single_process(out, n, batch):
    """The program's model and data in this process, from rank 0's initial weights, batch n * batch."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    xv, yv = x[:50] * 0.5, y[:50]
    model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)),
                           layers.Dense(3, activation="softmax")])
    model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.build((None, 10))
    init = np.load(out / "init.npz")
    model.set_weights([init[f"arr_{i}"] for i in range(len(init.files))])
    h = model.fit(x, y, batch_size=n * batch, epochs=2, shuffle=False, verbose=0, validation_data=(xv, yv))
    return model.get_weights(), h.history


def _weights(path):
    z = np.load(path)
    return [z[f"arr_{i}"] for i in range(len(z.files))]


def _check_equal_to_one_process(recs, out, n, log):
    assert sorted(recs) == list(range(n)), log
    assert all("error" not in r for r in recs.values()), recs
    want_w, want_h = _single_process(out, n, 8)
    for r in range(n):   # every rank ends with the same weights as the single process
        for a, b in zip(_weights(out / f"final{r}.npz"), want_w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        # callbacks and History see the global logs: the single process's
        hist = recs[r]["history"]
        assert sorted(hist) == sorted(want_h)
        for k in want_h:
            np.testing.assert_allclose(hist[k], want_h[k], rtol=1e-5, atol=1e-6, err_msg=k)
        assert recs[r]["epoch_logs"][-1]["val_loss"] == pytest.approx(want_h["val_loss"][-1], rel=1e-5)
    # rank 0 saves, the others do not
    assert (out / "final_from_rank0.weights.h5").exists()
    assert not any((out / f"final_from_rank{r}.weights.h5").exists() for r in range(1, n))
    assert (out / "ckpt_rank0.weights.h5").exists()   # ModelCheckpoint: rank 0 too
    assert not any((out / f"ckpt_rank{r}.weights.h5").exists() for r in range(1, n))


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_n_ranks_with_batch_b_match_one_process_with_batch_n_times_b(tmp_path, n):
    recs, _, out, log = _launch(tmp_path, n, "equal", batch=8)
    _check_equal_to_one_process(recs, out, n, log)


@needs_mpi
def test_the_all_reduce_overlapped_with_backward_gives_the_same_bits_as_after_it(tmp_path):
    # 3 ranks, buckets of about 50 floats (the model's 227 gradients in 5, one layer split): the
    # communication thread sums them during backward, or the main thread after it
    runs = {}
    for overlap in ("1", "0"):
        recs, _, out, log = _launch(tmp_path, 3, "equal", sub=f"overlap{overlap}", BF_DIST_OVERLAP=overlap,
                                    BF_DIST_BUCKET="50")
        assert sorted(recs) == [0, 1, 2] and all("error" not in r for r in recs.values()), log
        runs[overlap] = [_weights(out / f"final{r}.npz") for r in range(3)]
        steps, early, buckets = recs[0]["overlap"][:3]
        if overlap == "1":
            _check_equal_to_one_process(recs, out, 3, log)
            assert steps == 20 and buckets == 5 * steps and early >= 4 * steps   # 240 rows / 24 a step, 2 epochs
        else:
            assert steps == 0
    for r in range(3):
        for a, b in zip(runs["1"][r], runs["0"][r]):
            assert np.array_equal(a, b)
        for a, b in zip(runs["1"][r], runs["1"][0]):
            assert np.array_equal(a, b)


@needs_mpi
def test_a_shared_layers_bucket_is_summed_only_once_backward_has_passed_both_its_calls(tmp_path):
    # the shared kernel's gradients add up from both calls; its bucket goes only once backward has
    # passed the lower-indexed of them (dist_overlap.c's `last`), else the sum would miss a contribution
    runs = {}
    for overlap in ("1", "0"):
        recs, _, out, log = _launch(tmp_path, 2, "equal", sub=f"shared{overlap}", BF_DIST_OVERLAP=overlap,
                                    BF_DIST_BUCKET="40", TEST_SHARED="1")
        assert sorted(recs) == [0, 1] and all("error" not in r for r in recs.values()), log
        runs[overlap] = [_weights(out / f"final{r}.npz") for r in range(2)]
        assert (recs[0]["overlap"][1] > 0) == (overlap == "1")
    for r in range(2):
        for a, b in zip(runs["1"][r], runs["0"][r]):
            assert np.array_equal(a, b)


@needs_mpi
def test_memmaps_and_sequences_are_sharded_by_rank(tmp_path):
    """from_npy memmaps: global batch split by rank; a Sequence of batch B: rank r
    takes batches r, r + N, ... Both equal one process with batch N * B."""
    recs, _, out, log = _launch(tmp_path, 2, "sources", batch=8)
    assert sorted(recs) == [0, 1] and all(r.get("ok") for r in recs.values()), (recs, log)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)),
                           layers.Dense(3, activation="softmax")])
    model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.build((None, 10))
    model.set_weights(_weights(out / "init.npz"))
    for what in ("memmap", "seq"):
        model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        for r in range(2):
            for a, b in zip(_weights(out / f"{what}{r}.npz"), model.get_weights()):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=what)


@needs_mpi
def test_one_rank_short_of_memory_makes_every_rank_raise_before_step_one(tmp_path):
    recs, _, _, log = _launch(tmp_path, 2, "budget")
    assert sorted(recs) == [0, 1], log
    msgs = {r["message"] for r in recs.values()}
    assert len(msgs) == 1, msgs   # the same error on every rank
    for r in recs.values():
        assert r["error"] == "MemoryBudgetError"
        assert r["e_rank"] == 1 and r["e_host"] == r["host"]
        assert "ok" not in r
    msg = msgs.pop()
    assert "rank 1 on host" in msg and "needs" in msg and "available" in msg


@needs_mpi
def test_auto_batch_is_the_largest_that_fits_on_the_smallest_rank(tmp_path):
    recs, _, _, log = _launch(tmp_path, 2, "auto")
    assert sorted(recs) == [0, 1] and all(r.get("ok") for r in recs.values()), (recs, log)
    b0, b1 = recs[0]["batch_size"], recs[1]["batch_size"]
    assert b0 == b1
    assert b1 <= recs[1]["alone"] < recs[0]["alone"]   # rank 1's budget decides
    assert b1 >= 0.8 * recs[1]["alone"]                 # ... less only the all-reduce's scratch


@needs_mpi
def test_rank_killed_mid_epoch_makes_the_others_raise_within_seconds(tmp_path):
    recs, took, _, log = _launch(tmp_path, 3, "kill", wrapper=True, timeout=20)
    assert 1 not in recs, recs            # SIGKILLed: it wrote nothing
    assert sorted(recs) == [0, 2], log
    for r in recs.values():
        assert r["error"] == "DistributedError", r
        assert "rank 1" in r["message"] and "died" in r["message"]


@needs_mpi
def test_job_that_lost_a_rank_resumes_from_backup_and_restore(tmp_path):
    """Under mpiexec, rank 1 dies in epoch 2 of 3; rank 0 raises; the whole
    job launched again resumes from rank 0's backup of epoch 1 and ends with
    the weights of one uninterrupted process with batch 2B."""
    recs, took, _, log = _launch(tmp_path, 2, "resume_kill", wrapper=True, timeout=10)
    assert sorted(recs) == [0], log
    assert recs[0]["error"] == "DistributedError" and "rank 1" in recs[0]["message"], recs
    assert (tmp_path / "backup").is_dir()
    recs, took, out, log = _launch(tmp_path, 2, "resume", timeout=20)
    assert sorted(recs) == [0, 1] and all(r.get("ok") for r in recs.values()), (recs, log)
    assert [r["epochs_run"] for r in recs.values()] == [2, 2]   # epochs 2 and 3 only
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)), layers.Dense(3, activation="softmax")])
    model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.build((None, 10))
    model.set_weights(_weights(tmp_path / "init.npz"))
    model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    for r in range(2):
        for a, b in zip(_weights(out / f"final{r}.npz"), model.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not (tmp_path / "backup").exists() or not any((tmp_path / "backup").iterdir())   # deleted at the end


@needs_mpi
def test_rank_raising_mid_epoch_makes_the_others_raise_at_once(tmp_path):
    recs, took, _, log = _launch(tmp_path, 2, "raise", timeout=30)
    assert sorted(recs) == [0, 1], log
    assert recs[1]["error"] == "RuntimeError"
    assert recs[0]["error"] == "DistributedError"
    assert "rank 1" in recs[0]["message"] and "stopped with an error" in recs[0]["message"]


@needs_mpi
def test_stuck_rank_makes_the_others_raise_at_the_deadline(tmp_path):
    recs, took, _, log = _launch(tmp_path, 2, "stuck", wrapper=True, timeout=2)   # rank 1 sleeps 6 s
    assert sorted(recs) == [0, 1], log
    r0 = recs[0]
    assert r0["error"] == "DistributedError", r0
    assert "did not complete within 2.0 s" in r0["message"]
    assert r0["t_error"] - r0["t0"] >= 2   # never before the deadline
    assert recs[1]["error"] == "DistributedError"   # it wakes to a group without rank 0


@needs_mpi
def test_rank_raising_before_step_one_makes_the_others_raise_at_once(tmp_path):
    recs, took, _, log = _launch(tmp_path, 2, "early", timeout=30)
    assert sorted(recs) == [0, 1], log
    assert recs[1]["error"] == "DataError"
    assert recs[0]["error"] == "DistributedError", recs[0]
    assert "rank 1" in recs[0]["message"] and "before the memory plan" in recs[0]["message"]


# ---- one process: no launcher needed ----

def test_keras_names_and_a_group_of_one():
    assert bf.distribution is bf.distribute
    for name in ("DataParallel", "initialize", "set_distribution", "distribution", "list_devices"):
        assert callable(getattr(bf.distribution, name))
    assert issubclass(bf.DistributedError, bf.BoundfitError)
    if "PMI_RANK" in os.environ:
        pytest.skip("running under mpiexec")
    dp = bf.distribution.DataParallel()
    assert dp.num_processes == 1 and bf.distribution.list_devices() == ["cpu:0"]
    x = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    m = bf.Sequential([layers.Dense(1, input_shape=(4,))])
    m.compile("sgd", "mse")
    with dp.scope():
        assert bf.distribution.distribution() is dp
        h = m.fit(x, y, batch_size=8, epochs=1, verbose=0)   # a group of one trains as before
    assert bf.distribution.distribution() is None
    assert len(h.history["loss"]) == 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="timeout"):
        bf.distribution.initialize(timeout=-1)
    with pytest.raises(ValueError, match="set_distribution"):
        bf.distribution.set_distribution("data")
    with pytest.raises(ValueError, match="device_type"):
        bf.distribution.list_devices("gpu")


# ---- torchrun-style launch: TCP transport (csrc/core/dist_tcp.c), no mpiexec ----

@pytest.mark.parametrize("n", [2, 3])
def test_torchrun_style_n_ranks_over_tcp_match_one_process(tmp_path, n):
    # 3 ranks through the launcher (python -m boundfit.distribute --nproc-per-node 3: torchrun's variables),
    # 2 as bare processes given Keras's KERAS_DISTRIBUTION_JOB_ADDRESSES / _NUM_PROCESSES / _PROCESS_ID
    recs, _, out, log = _launch_tcp(tmp_path, n, "equal", batch=8, launcher=True if n == 3 else "keras")
    _check_equal_to_one_process(recs, out, n, log)


def test_torchrun_style_killed_rank_makes_the_others_raise_within_seconds(tmp_path):
    recs, took, _, log = _launch_tcp(tmp_path, 3, "kill", timeout=30)
    assert 1 not in recs, recs            # SIGKILLed: it wrote nothing
    assert sorted(recs) == [0, 2], log
    for r in recs.values():
        assert r["error"] == "DistributedError", r
        assert "rank 1" in r["message"] and "died" in r["message"]


def test_torchrun_style_rank_raising_makes_the_others_raise_at_once(tmp_path):
    recs, _, _, log = _launch_tcp(tmp_path, 2, "raise", timeout=30)
    assert sorted(recs) == [0, 1], log
    assert recs[1]["error"] == "RuntimeError"
    assert recs[0]["error"] == "DistributedError"
    assert "rank 1" in recs[0]["message"] and "stopped with an error" in recs[0]["message"]


def test_torchrun_style_stuck_rank_makes_the_others_raise_at_the_deadline(tmp_path):
    recs, took, _, log = _launch_tcp(tmp_path, 2, "stuck", timeout=1.5, TEST_STUCK="3")
    assert sorted(recs) == [0, 1], log
    r0 = recs[0]
    assert r0["error"] == "DistributedError", r0
    assert "did not complete within 1.5 s" in r0["message"]   # the deadline, not rank 1 waking (3 s)
    assert r0["t_error"] - r0["t0"] >= 1.5   # never before the deadline (the message says it was the deadline)
    assert recs[1]["error"] == "DistributedError"   # it wakes to rank 0's closed connection
    assert "rank 0" in recs[1]["message"]


def test_torchrun_style_rank_short_of_memory_makes_every_rank_raise_before_step_one(tmp_path):
    recs, _, _, log = _launch_tcp(tmp_path, 2, "budget")
    assert sorted(recs) == [0, 1], log
    msgs = {r["message"] for r in recs.values()}
    assert len(msgs) == 1, msgs
    for r in recs.values():
        assert r["error"] == "MemoryBudgetError" and r["e_rank"] == 1 and "ok" not in r
    assert "rank 1 on host" in msgs.pop()


def test_evaluate_and_predict_split_rows_by_rank_and_return_the_full_result(tmp_path):
    """3 ranks (TCP): predict of 53 rows (blocks of 18) and evaluate of 50
    (slices of 16/17/17), before any fit: rank 0's weights, every rank gets
    what one process gets."""
    recs, _, out, log = _launch_tcp(tmp_path, 3, "evalpred")
    assert sorted(recs) == [0, 1, 2] and all(r.get("ok") for r in recs.values()), (recs, log)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)),
                           layers.Dense(3, activation="softmax")])
    model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.build((None, 10))
    model.set_weights(_weights(out / "init.npz"))
    want_p = model.predict(x[:53], batch_size=8, verbose=0)
    want_e = model.evaluate(x[:50] * 0.5, y[:50], batch_size=8, verbose=0, return_dict=True)
    for r in range(3):
        p = np.load(out / f"pred{r}.npy")
        assert p.shape == want_p.shape
        np.testing.assert_allclose(p, want_p, rtol=1e-6, atol=1e-7)
        assert sorted(recs[r]["evaluate"]) == sorted(want_e)
        for k in want_e:
            assert recs[r]["evaluate"][k] == pytest.approx(want_e[k], rel=1e-5), k
    # AUC, Precision, counts, PrecisionAtRecall and a weighted mean: the metrics' sums added over ranks give
    # one process's values, in evaluate and in fit (train: 3 ranks x batch 8 = one process with 24)
    yb, sw = (x[:, 0] > 0).astype(np.float32), np.linspace(0.5, 2.0, len(x)).astype(np.float32)
    binary = bf.Sequential([layers.Dense(4, activation="tanh", input_shape=(10,)), layers.Dense(1, activation="sigmoid")])
    binary.compile(optimizer="sgd", loss="binary_crossentropy", metrics=[bf.metrics.AUC(), bf.metrics.Precision(),
                   bf.metrics.TruePositives(), bf.metrics.PrecisionAtRecall(0.5)], weighted_metrics=["accuracy"])
    binary.build((None, 10))
    binary.set_weights(_weights(out / "init_binary.npz"))
    want_e = binary.evaluate(x[:101], yb[:101], sample_weight=sw[:101], batch_size=8, verbose=0, return_dict=True)
    want_h = binary.fit(x, yb, sample_weight=sw, batch_size=24, epochs=1, shuffle=False, verbose=0,
                        validation_data=(x[:77], yb[:77], sw[:77])).history
    assert {"auc", "val_precision", "true_positives", "val_precision_at_recall", "accuracy"} <= set(want_h)
    for r in range(3):
        got_e, got_h = recs[r]["evaluate_binary"], recs[r]["fit_binary"]
        assert sorted(got_e) == sorted(want_e) and sorted(got_h) == sorted(want_h)
        for k in want_e:
            assert got_e[k] == pytest.approx(want_e[k], rel=1e-5), k
        for k in want_h:
            assert got_h[k][0] == pytest.approx(want_h[k][0], rel=1e-5), k


def test_batchnorm_moving_statistics_are_averaged_over_ranks(tmp_path):
    """BatchNormalization under DataParallel: per-rank batch statistics (said
    in a warning on rank 0), moving statistics averaged after each epoch: the
    same on every rank, and with BN first (its batch means are the data's)
    the moving mean is the single process's with the global batch."""
    recs, _, out, log = _launch_tcp(tmp_path, 2, "bn", batch=8)
    assert sorted(recs) == [0, 1] and all(r.get("ok") for r in recs.values()), (recs, log)
    assert recs[0]["warned"] and not recs[1]["warned"]
    w0, w1 = _weights(out / "final0.npz"), _weights(out / "final1.npz")
    for a, b in zip(w0, w1):
        np.testing.assert_array_equal(a, b)   # one model on every rank, moving statistics included
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    x = x * 2 + 1
    model = bf.Sequential([layers.BatchNormalization(momentum=0.9, input_shape=(10,)),
                           layers.Dense(16, activation="relu"), layers.Dense(3, activation="softmax")])
    model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    model.build((None, 10))
    model.set_weights(_weights(out / "init.npz"))
    model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    want = model.layers[0].get_weights()
    np.testing.assert_allclose(w0[2], want[2], rtol=1e-5, atol=1e-6)   # moving mean: the global batch's
    assert np.all(w0[3] <= want[3] * (1 + 1e-5))   # moving variance: the ranks' mean, less their means' spread


def _init_in_subprocess(env_update, timeout=60):
    code = ("import boundfit as bf\ntry:\n    bf.distribution.initialize(timeout=1)\n"
            "except bf.DistributedError as e:\n    print('ERR', e)\n")
    env = {k: v for k, v in os.environ.items() if "PMI" not in k}
    env.update(env_update)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    return p.stdout + p.stderr


def test_torchrun_style_env_errors_name_the_variable():
    out = _init_in_subprocess({"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    assert "ERR" in out and "RANK is not set" in out, out
    out = _init_in_subprocess({"RANK": "2", "WORLD_SIZE": "2", "MASTER_PORT": "29500"})
    assert "ERR" in out and "RANK=2" in out, out
    out = _init_in_subprocess({"RANK": "1", "WORLD_SIZE": "2"})
    assert "ERR" in out and "MASTER_PORT" in out, out
    # rank 0 never comes: the wait is bounded by the timeout (1 s)
    t0 = time.time()
    out = _init_in_subprocess({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                               "MASTER_PORT": str(_free_port())})
    assert "ERR" in out and "could not be reached" in out, out
    assert time.time() - t0 < 30
