"""A data-parallel program for tests/test_per_sample_scalars.py: python
batch_mix.py MODE OUTDIR [BATCH] on several ranks. A model with a sum over
the batch (ops.tensordot of two (B, E) tensors) under DataParallel: fit,
evaluate and predict each raise ValueError naming the layer; each rank writes
the messages to OUTDIR/rank<r>.json."""
import json
import os
import sys

import numpy as np

import boundfit as bf

mode, out = sys.argv[1], sys.argv[2]
bf.distribution.initialize(timeout=float(os.environ.get("TEST_TIMEOUT", "20")))
bf.distribution.set_distribution(bf.distribution.DataParallel())
r = bf.distribution.rank()
x = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.float32)[:, None]
inp = bf.Input(shape=(3,))
d = bf.ops.tensordot(bf.layers.Dense(2)(inp), bf.layers.Dense(2)(inp), 2)
model = bf.Model(inp, bf.ops.nn.sigmoid(d + bf.layers.Dense(1)(inp)))
model.compile(optimizer="adam", loss="binary_crossentropy")
rec = {"rank": r}
for what, call in (("fit", lambda: model.fit(x, y, batch_size=8, verbose=0)),
                   ("evaluate", lambda: model.evaluate(x, y, batch_size=8, verbose=0)),
                   ("predict", lambda: model.predict(x, batch_size=8, verbose=0))):
    try:
        call()
        rec[what] = "ran"
    except ValueError as e:
        rec[what] = str(e)
with open(os.path.join(out, f"rank{r}.json"), "w") as f:
    json.dump(rec, f)
