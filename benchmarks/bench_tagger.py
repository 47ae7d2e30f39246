"""Sequence tagger training throughput: boundfit against PyTorch and Keras 3
(JAX backend, the same model code as boundfit's) on the CPU.
Embedding(mask_zero=True) -> Dense(C, softmax) per step, masked sparse
categorical cross-entropy and masked accuracy (Keras 3's normalization: the
mean over the batch's unmasked positions), Adam; batch 64, T = 128 steps, 64
tags, vocabulary 5000, sentences padded to T with a third of their steps on
average. The model is light on purpose: the loss and the metric over the B*T
positions are a large part of each step. PyTorch: the same model,
CrossEntropyLoss(reduction="none") masked and divided by the unmasked count,
and the accuracy over the unmasked positions. Each framework runs in its own
subprocess; their rounds run in turn (benchmarks/interleave.py).

    python benchmarks/bench_tagger.py [--quick]
"""

import sys
import textwrap

from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, KERAS_HEAD, STEP_ROUNDS, report, run_sides

DATA = textwrap.dedent("""
    import time, resource, numpy as np
    B, T, V, E, C, STEPS = 64, 128, 5000, 64, 64, {STEPS}
    rng = np.random.default_rng(0)
    n = B * STEPS
    ids = rng.integers(1, V, (n, T))
    lengths = rng.integers(T // 8, T // 2, n)
    ids[np.arange(T)[None, :] >= lengths[:, None]] = 0
    x, y = ids.astype(np.int64), (ids % C).astype(np.int64)
""")

FIT = textwrap.dedent("""
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after the data and the import
    m = K.Sequential([L.Input((T,)), L.Embedding(V, E, mask_zero=True), L.Dense(C, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    X, Y = x, y
""") + FIT_ROUNDS
BF = DATA + BOUNDFIT_HEAD + FIT + "final = lambda: m.estimate_memory(batch_size=B).host_bytes\n"
KERAS = DATA + KERAS_HEAD + FIT + "final = peak_growth\n"

TORCH = DATA + textwrap.dedent("""
    import torch
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after the data and the import
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Embedding(V, E), torch.nn.Linear(E, C))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    lf = torch.nn.CrossEntropyLoss(reduction="none")
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    def step(i):  # and the batch's masked accuracy, as the others' metric
        xb, yb = xt[i * B:(i + 1) * B], yt[i * B:(i + 1) * B]
        mask = (xb != 0).float()
        opt.zero_grad()
        z = net(xb)
        loss = (lf(z.reshape(-1, C), yb.reshape(-1)) * mask.reshape(-1)).sum() / mask.sum().clamp(min=1)
        loss.backward()
        opt.step()
        with torch.no_grad():
            return float(((z.argmax(-1) == yb).float() * mask).sum()) / max(float(mask.sum()), 1.0)
""") + STEP_ROUNDS + "final = peak_growth\n"


def main():
    steps = 4 if "--quick" in sys.argv else 20
    rounds = 3 if "--quick" in sys.argv else 5
    report(f"Masked tagger training, batch 64, 128 steps, 64 tags, vocabulary 5000, embedding 64 ({rounds} rounds "
           f"of {steps} steps each side, in turn)", 64 * steps,
           run_sides([c.format(STEPS=steps) for c in (BF, TORCH, KERAS)], rounds))


if __name__ == "__main__":
    main()
