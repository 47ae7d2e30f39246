"""A data-parallel program for tests/test_dist_launchers.py whose rank 1 gets
stuck mid-epoch: python stuck_rank.py HOW, HOW being "stop" (rank 1 SIGSTOPs
itself) or "sleep" (rank 1 sleeps for an hour). The other ranks raise
DistributedError at the deadline (BF_DIST_TIMEOUT) and exit with status 1;
ending rank 1 is the launcher's job."""
import os
import signal
import sys
import time

import numpy as np

import boundfit as bf
from boundfit import layers

how = sys.argv[1]
bf.distribution.initialize(timeout=60)   # joining: however late a rank of a loaded machine starts
bf.distribution.initialize()   # then fit's deadline: BF_DIST_TIMEOUT
bf.distribution.set_distribution(bf.distribution.DataParallel())
r = bf.distribution.rank()


class Stuck(bf.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if r == 1 and batch == 2:
            if how == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
            time.sleep(3600)


x = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
model = bf.Sequential([layers.Dense(1, input_shape=(4,))])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, x[:, :1], batch_size=4, epochs=1, verbose=0, callbacks=[Stuck()])
