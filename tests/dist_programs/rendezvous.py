"""One process of a torchrun-style rendezvous for tests/test_dist_tcp_failures.py,
driven line by line so the test decides the order of events (no sleeps): it
prints "ready" once boundfit is imported, then reads commands from stdin and
answers each with one JSON line.
  init WORLD_SIZE TIMEOUT [RANK]
                           - bf.distribution.initialize with this WORLD_SIZE
                             and RANK (else the env's; MASTER_ADDR and
                             MASTER_PORT from the env):
                             {"ok": true, "rank", "size"} or {"error": message}
  sum                      - an all-reduce of rank + 1: {"sum"}
  fit                      - one epoch of a small model under DataParallel,
                             then the all-reduce: {"loss", "sum"}
"""
import json
import os
import sys

import numpy as np

import boundfit as bf
from boundfit import layers
from boundfit.runtime import dist_group

RANK = os.environ["RANK"]


def _init(world, timeout, rank=None):
    os.environ["WORLD_SIZE"] = world
    os.environ["RANK"] = rank or RANK
    try:
        bf.distribution.initialize(timeout=float(timeout))
    except bf.DistributedError as e:
        return {"error": str(e)}
    return {"ok": True, "rank": bf.distribution.rank(), "size": bf.distribution.num_processes()}


def _fit():
    bf.distribution.set_distribution(bf.distribution.DataParallel())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = bf.Sequential([layers.Dense(8, activation="relu", input_shape=(6,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    h = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    return {"loss": h.history["loss"][-1], **_sum()}


def _sum():
    return {"sum": float(dist_group._allreduce([bf.distribution.rank() + 1.0])[0])}


print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    reply = _init(*cmd[1:]) if cmd[0] == "init" else _fit() if cmd[0] == "fit" else _sum()
    print(json.dumps(reply), flush=True)
