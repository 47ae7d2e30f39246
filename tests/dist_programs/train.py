"""A data-parallel training program for tests/test_distributed.py, launched
by mpiexec: python train.py MODE OUTDIR [BATCH]. Each rank writes what it saw
to OUTDIR/rank<r>.json; rank 0 also saves the initial and final weights.
MODE: equal (fit and save; TEST_SHARED=1: a Functional model with a layer called twice), sources (a memmap, then a Sequence), budget (rank 1 gets a tiny memory limit),
kill (rank 1 SIGKILLs itself mid-epoch), raise (rank 1 raises mid-epoch), early (rank 1's data is bad), stuck (rank 1 sleeps past the timeout),
auto (batch_size="auto", rank 1 with a smaller budget),
resume_kill / resume (3 epochs with BackupAndRestore in OUTDIR/../backup: rank 1 SIGKILLs itself in epoch 2, then the
whole job is launched again and resumes), evalpred (evaluate and predict before any fit: rank 0's
weights, rows split by rank, results on every rank), bn (BatchNormalization first: moving statistics averaged)."""
import json
import os
import signal
import socket
import sys
import time
import warnings

import numpy as np

import boundfit as bf
from boundfit import layers

mode, out = sys.argv[1], sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 8
bf.distribution.initialize(timeout=float(os.environ.get("TEST_TIMEOUT", "20")))
bf.distribution.set_distribution(bf.distribution.DataParallel())
r, n = bf.distribution.rank(), bf.distribution.num_processes()

rng = np.random.default_rng(0)
x = rng.normal(size=(240, 10)).astype(np.float32)
y = (x[:, :3].sum(axis=1) > 0).astype(np.int64) + (x[:, 3] > 0.5)
xv, yv = x[:50] * 0.5, y[:50]
bf.utils.set_random_seed(1 + r)   # different on each rank: rank 0's weights are broadcast
model = bf.Sequential([layers.Dense(16, activation="relu", input_shape=(10,)), layers.Dense(3, activation="softmax")])
model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
rec = {"rank": r, "size": n, "host": socket.gethostname()}


class Die(bf.callbacks.Callback):
    def on_train_batch_end(self, b, logs=None):
        if r == 1 and b == 4:
            if mode == "stuck":
                time.sleep(float(os.environ.get("TEST_STUCK", "6")))
                return
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("rank 1 fails on purpose")


class DieInEpoch2(bf.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, b, logs=None):
        if mode == "resume_kill" and r == 1 and self.epoch == 1 and b == 3:
            os.kill(os.getpid(), signal.SIGKILL)


class Seen(bf.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        rec.setdefault("epoch_logs", []).append(logs)


if os.environ.get("TEST_SHARED"):   # a layer called twice (its gradients come from two places in backward)
    inp = bf.Input((10,))
    shared = layers.Dense(10, activation="tanh", name="shared")
    h = shared(layers.Dense(10, name="first")(inp))
    h = layers.Dense(10, activation="relu", name="between")(shared(h))
    model = bf.Model(inp, layers.Dense(3, activation="softmax", name="out")(h))
    model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
try:
    if mode == "equal":
        model.build((None, 10))
        init = [w.copy() for w in model.get_weights()]
        h = model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0, validation_data=(xv, yv),
                      callbacks=[Seen(), bf.callbacks.ModelCheckpoint(os.path.join(out, f"ckpt_rank{r}.weights.h5"),
                                                                      save_weights_only=True, monitor="loss")])
        rec["history"] = h.history
        rec["overlap"] = bf._core.dist_overlap_counters()
        if r == 0:
            np.savez(os.path.join(out, "init.npz"), *init)   # rank 0's: the broadcast ones
        model.save_weights(os.path.join(out, f"final_from_rank{r}.weights.h5"))   # rank 0 only writes
        np.savez(os.path.join(out, f"final{r}.npz"), *model.get_weights())
    elif mode == "sources":
        # a memmap (from_npy) and a Sequence of batch B, sharded by rank
        model.build((None, 10))
        if r == 0:
            np.savez(os.path.join(out, "init.npz"), *model.get_weights())
        xp, yp = os.path.join(out, f"x{r}.npy"), os.path.join(out, f"y{r}.npy")
        np.save(xp, x)
        np.save(yp, y)
        xm, ym = bf.data.from_npy(xp, yp)
        model.fit(xm, ym, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        np.savez(os.path.join(out, f"memmap{r}.npz"), *model.get_weights())

        class Batches(bf.utils.Sequence):
            def __len__(self):
                return len(x) // batch

            def __getitem__(self, i):
                return x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]
        model.fit(Batches(), epochs=1, shuffle=False, verbose=0)
        np.savez(os.path.join(out, f"seq{r}.npz"), *model.get_weights())
        rec["ok"] = True
    elif mode == "evalpred":
        model.build((None, 10))
        if r == 0:
            np.savez(os.path.join(out, "init.npz"), *model.get_weights())
        pred = model.predict(x[:53], batch_size=8, verbose=0)
        ev = model.evaluate(xv, yv, batch_size=8, verbose=0, return_dict=True)
        np.save(os.path.join(out, f"pred{r}.npy"), pred)
        rec["evaluate"] = ev
        # metrics that are not per-row means, weighted: evaluate, then fit's train and validation logs
        yb, sw = (x[:, 0] > 0).astype(np.float32), np.linspace(0.5, 2.0, len(x)).astype(np.float32)
        binary = bf.Sequential([layers.Dense(4, activation="tanh", input_shape=(10,)), layers.Dense(1, activation="sigmoid")])
        binary.compile(optimizer="sgd", loss="binary_crossentropy", metrics=[bf.metrics.AUC(), bf.metrics.Precision(),
                       bf.metrics.TruePositives(), bf.metrics.PrecisionAtRecall(0.5)], weighted_metrics=["accuracy"])
        binary.build((None, 10))
        if r == 0:
            np.savez(os.path.join(out, "init_binary.npz"), *binary.get_weights())
        rec["evaluate_binary"] = binary.evaluate(x[:101], yb[:101], sample_weight=sw[:101], batch_size=8, verbose=0,
                                                 return_dict=True)
        rec["fit_binary"] = binary.fit(x, yb, sample_weight=sw, batch_size=8, epochs=1, shuffle=False, verbose=0,
                                       validation_data=(x[:77], yb[:77], sw[:77])).history
        rec["ok"] = True
    elif mode == "bn":
        model = bf.Sequential([layers.BatchNormalization(momentum=0.9, input_shape=(10,)),
                               layers.Dense(16, activation="relu"), layers.Dense(3, activation="softmax")])
        model.compile(optimizer=bf.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
        model.build((None, 10))
        if r == 0:
            np.savez(os.path.join(out, "init.npz"), *model.get_weights())
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            model.fit(x * 2 + 1, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        rec["warned"] = any("BatchNormalization under DataParallel" in str(w.message) for w in seen)
        np.savez(os.path.join(out, f"final{r}.npz"), *model.get_weights())
        rec["ok"] = True
    elif mode in ("resume_kill", "resume"):
        model.build((None, 10))
        if r == 0 and mode == "resume_kill":
            np.savez(os.path.join(out, "..", "init.npz"), *model.get_weights())
        backup = bf.callbacks.BackupAndRestore(os.path.join(out, "..", "backup"))
        h = model.fit(x, y, batch_size=batch, epochs=3, shuffle=False, verbose=0, callbacks=[backup, DieInEpoch2()])
        rec["epochs_run"] = len(h.history["loss"])
        np.savez(os.path.join(out, f"final{r}.npz"), *model.get_weights())
        rec["ok"] = True
    elif mode == "early":
        rec["t0"] = time.time()
        model.fit(x, y if r != 1 else y[:-1], batch_size=8, epochs=1, verbose=0)   # rank 1: a DataError
        rec["ok"] = True
    elif mode == "budget":
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, memory_limit="1KiB" if r == 1 else None)
        rec["ok"] = True
    elif mode == "auto":
        # rank 1's budget fits about 300 rows a batch; rank 0's the whole data set
        xa = rng.normal(size=(3000, 256)).astype(np.float32)
        ya = rng.integers(0, 3, size=3000)
        model = bf.Sequential([layers.Dense(512, activation="relu", input_shape=(256,)),
                               layers.Dense(3, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        p = model.estimate_memory(300)
        limit = (p.host_bytes - p.held_bytes + (32 << 20)) if r == 1 else "2GiB"
        rec["alone"] = model.estimate_memory("auto", memory_limit=limit).batch_size
        model.fit(xa, ya, batch_size="auto", epochs=1, verbose=0, memory_limit=limit)
        rec["batch_size"] = model._last_batch_size
        rec["ok"] = True
    else:
        t0 = time.time()
        rec["t0"] = t0
        model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[Die()])
        rec["ok"] = True
except Exception as e:  # noqa: BLE001 - recorded for the test
    rec["error"] = type(e).__name__
    rec["message"] = str(e)
    rec["t_error"] = time.time()
    for a in ("rank", "host", "where", "max_batch_size"):
        if hasattr(e, a):
            rec["e_" + a] = getattr(e, a)
with open(os.path.join(out, f"rank{r}.json"), "w") as f:
    json.dump(rec, f)
