"""A data-parallel program on device="cuda" for tests/test_distributed_nccl.py
(run on the device emulation, BF_CUDA_LIB, with its NCCL stand-in,
BF_NCCL_LIB): python train_cuda.py MODE OUTDIR [BATCH]. MODE: equal (2 epochs,
rank 0's initial and every rank's final weights saved, the plan's NCCL entry
recorded), single (no group: one process from init.npz with batch BATCH),
fail (3 epochs; the stand-in's BF_SIM_NCCL_* switch makes a rank die or stall
inside a collective), budget (rank 1's device memory_limit leaves no room for
NCCL's buffers). Writes OUTDIR/rank<r>.json."""
import json
import os
import sys
import time

import numpy as np

import boundfit as bf
from boundfit import layers

mode, out = sys.argv[1], sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 8
if mode != "single":
    bf.distribution.initialize(timeout=float(os.environ.get("TEST_TIMEOUT", "20")))
    bf.distribution.set_distribution(bf.distribution.DataParallel())
r = bf.distribution.rank()

rng = np.random.default_rng(0)
x = rng.normal(size=(96, 10)).astype(np.float32)
y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
bf.utils.set_random_seed(1 + r)   # different on each rank: rank 0's weights are broadcast
model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)), layers.Dense(3, activation="softmax")])
model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.build((None, 10))
rec = {"rank": r}
try:
    if mode == "single":
        init = np.load(os.path.join(out, "init.npz"))
        model.set_weights([init[f"arr_{i}"] for i in range(len(init.files))])
        h = model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0, device="cuda")
        np.savez(os.path.join(out, "single.npz"), *model.get_weights())
        rec["history"] = h.history
    elif mode == "equal":
        if r == 0:
            np.savez(os.path.join(out, "init.npz"), *model.get_weights())
        h = model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0, device="cuda")
        np.savez(os.path.join(out, f"final{r}.npz"), *model.get_weights())
        rec["history"] = h.history
        plan = model._last_plan
        rec["device"] = plan.device
        rec["nccl"] = [[e.name, e.bytes, e.where] for e in plan.breakdown if e.category == "communication"]
        rec["fits"] = plan.fits
    elif mode == "budget":
        # rank 1's device limit: its run's plan without NCCL plus 4 MiB, less than NCCL's 8 MiB
        need = model.estimate_memory(batch, device="cuda").device_bytes
        rec["limit"] = need + (4 << 20)
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, device="cuda",
                  memory_limit=rec["limit"] if r == 1 else None)
        rec["ok"] = True
    else:
        rec["t0"] = time.time()
        model.fit(x, y, batch_size=4, epochs=3, verbose=0, device="cuda")
        rec["ok"] = True
except Exception as e:  # noqa: BLE001 - recorded for the test
    rec["error"] = type(e).__name__
    rec["message"] = str(e)
    rec["t_error"] = time.time()
    for a in ("rank", "where", "needed_bytes", "available_bytes"):
        if hasattr(e, a):
            rec["e_" + a] = getattr(e, a)
with open(os.path.join(out, f"rank{r}.json"), "w") as f:
    json.dump(rec, f)
