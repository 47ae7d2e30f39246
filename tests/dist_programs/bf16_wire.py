"""A rank of tests/test_dist_bf16_wire.py (DataParallel(gradient_compression="bfloat16")), launched by mpiexec or
torchrun-style: python bf16_wire.py MODE OUTDIR. Every rank writes OUTDIR/rank<r>.npz with what it saw.
MODE sums: the engine's gradient sum (_core.dist_sum_gradients, as a training step calls it) of seeded float32
buffers of odd lengths, one crossing the TCP transport's 32768-value blocks and a bucket boundary, with bfloat16
and with float32 on the wire, and the gradient bytes each sent. MODE train: that, then one SGD step (learning rate
1) from the same weights under DataParallel() and under DataParallel(gradient_compression="bfloat16"); then 4
epochs of Adam under both; the plans and arenas of the runs; last, over TCP, fit(device="cuda") under the option
(refused by name)."""
import os
import sys

import numpy as np

import boundfit as bf
from boundfit import _core, layers

mode, out = sys.argv[1], sys.argv[2]
bf.distribution.initialize(timeout=float(os.environ.get("TEST_TIMEOUT", "30")))
r, n = bf.distribution.rank(), bf.distribution.num_processes()
rec = {}

# ---- the sums ----
LENGTHS, BUCKET = (7, 2 * 32768 + 3), 40001
for length in LENGTHS:
    g = np.random.default_rng([length, r]).normal(size=length).astype(np.float32)
    g *= (10.0 ** np.random.default_rng([length, r, 1]).uniform(-3, 3, size=length)).astype(np.float32)
    rec[f"g{length}"] = g.copy()
    for wire in ("bf16", "f32"):
        buf = g.copy()
        before = _core.dist_grad_bytes()
        _core.dist_sum_gradients(buf, np.empty(length, np.uint16) if wire == "bf16" else None, BUCKET)
        rec[f"sum_{wire}{length}"] = buf
        rec[f"bytes_{wire}{length}"] = _core.dist_grad_bytes() - before

if mode == "train":
    B = 8
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
    bf.utils.set_random_seed(0)   # the same initial weights on every rank
    model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)),
                           layers.Dense(3, activation="softmax")])
    model.compile(optimizer=bf.optimizers.SGD(1.0), loss="sparse_categorical_crossentropy")
    model.build((None, 10))
    w0 = model.get_weights()
    rec["w0"] = np.concatenate([w.ravel() for w in w0])

    def flat(ws):
        return np.concatenate([w.ravel() for w in ws])

    for name, comp in (("f32", None), ("bf16", "bfloat16")):
        bf.distribution.set_distribution(bf.distribution.DataParallel(gradient_compression=comp))
        model.set_weights(w0)
        model.compile(optimizer=bf.optimizers.SGD(1.0), loss="sparse_categorical_crossentropy")
        model.fit(x[:n * B], y[:n * B], batch_size=B, epochs=1, shuffle=False, verbose=0)
        rec[f"step_{name}"] = flat(w0) - flat(model.get_weights())   # the averaged gradient the step applied
    for name, comp in (("f32", None), ("bf16", "bfloat16")):
        bf.distribution.set_distribution(bf.distribution.DataParallel(gradient_compression=comp))
        model.set_weights(w0)
        model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
        plan = model.estimate_memory(batch_size=B)
        sent = _core.dist_grad_bytes()
        h = model.fit(x, y, batch_size=B, epochs=4, shuffle=False, verbose=0)
        rec[f"fit_bytes_{name}"] = _core.dist_grad_bytes() - sent
        rec[f"loss_{name}"] = np.array(h.history["loss"])
        rec[f"final_{name}"] = flat(model.get_weights())
        stats = model._last_run_stats
        rec[f"wire_entry_{name}"] = sum(e.bytes for e in plan.breakdown if e.name.startswith("gradients on the wire"))
        rec[f"high_is_reserved_{name}"] = all(s["run_high_water"] == s["run_reserved"] for s in stats)
        rec[f"run_reserved_{name}"] = sum(s["run_reserved"] for s in stats)
    rec["n_trainable"] = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    if bf.distribution.transport() == "tcp":   # last: the refusal breaks the group (each rank tells the others it
        try:                                       # stopped), and MPI's ranks would end without MPI_Finalize
            model.fit(x, y, batch_size=B, epochs=1, verbose=0, device="cuda")
        except ValueError as e:
            rec["cuda_error"] = str(e)

np.savez(os.path.join(out, f"rank{r}.npz"), **rec)
