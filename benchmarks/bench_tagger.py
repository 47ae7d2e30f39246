"""Sequence tagger training throughput: boundfit against PyTorch on the CPU,
in the same script. Embedding(mask_zero=True) -> Dense(C, softmax) per step,
masked sparse categorical cross-entropy and masked accuracy (Keras 3's
normalization: the mean over the batch's unmasked positions), Adam; batch 64,
T = 128 steps, 64 tags, vocabulary 5000, sentences padded to T with a third
of their steps on average. The model is light on purpose: the loss and the
metric over the B*T positions are a large part of each step. PyTorch: the
same model, CrossEntropyLoss(reduction="none") masked and divided by the
unmasked count, and the accuracy over the unmasked positions. Each framework
runs in its own subprocess and reports its best of ROUNDS rounds.

    python benchmarks/bench_tagger.py [--quick]
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

B, T, V, E, C = 64, 128, 5000, 64, 64
ROUNDS = 3


def data(steps):
    rng = np.random.default_rng(0)
    n = B * steps
    ids = rng.integers(1, V, (n, T))
    lengths = rng.integers(T // 8, T // 2, n)
    ids[np.arange(T)[None, :] >= lengths[:, None]] = 0
    return ids.astype(np.int64), (ids % C).astype(np.int64)


def run_boundfit(steps):
    import boundfit as bf
    from boundfit import layers
    x, y = data(steps)
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Input((T,)), layers.Embedding(V, E, mask_zero=True), layers.Dense(C, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    m.fit(x[:B * 2], y[:B * 2], batch_size=B, epochs=1, verbose=0)  # warm-up (and the optimizer state)
    dt = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        m.fit(x, y, batch_size=B, epochs=1, verbose=0, shuffle=False)
        dt.append(time.perf_counter() - t0)
    return dict(samples_s=B * steps / min(dt))


def run_torch(steps):
    import torch
    x, y = data(steps)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Embedding(V, E), torch.nn.Linear(E, C))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    lf = torch.nn.CrossEntropyLoss(reduction="none")
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def run(n):
        correct = count = 0.0
        for i in range(n):
            xb, yb = xt[i * B:(i + 1) * B], yt[i * B:(i + 1) * B]
            mask = (xb != 0).float()
            opt.zero_grad()
            z = net(xb)
            loss = (lf(z.reshape(-1, C), yb.reshape(-1)) * mask.reshape(-1)).sum() / mask.sum().clamp(min=1)
            loss.backward()
            opt.step()
            with torch.no_grad():
                correct += float(((z.argmax(-1) == yb).float() * mask).sum())
                count += float(mask.sum())
        return correct / count
    run(2)
    dt = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        run(steps)
        dt.append(time.perf_counter() - t0)
    return dict(samples_s=B * steps / min(dt), threads=torch.get_num_threads())


def main():
    steps = 4 if "--quick" in sys.argv else 20
    res = {}
    for who in ("boundfit", "torch"):
        p = subprocess.run([sys.executable, __file__, "--one", who, str(steps)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{who}: failed\n{p.stderr[-2000:]}")
            continue
        res[who] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"Masked tagger training, batch {B}, {T} steps, {C} tags, vocabulary {V}, embedding {E} "
          f"(CPU, {os.cpu_count()} cores seen)")
    for who, r in res.items():
        print(f"  {who:9s} {r['samples_s']:9.1f} samples/s")
    if len(res) == 2:
        print(f"  ratio boundfit / PyTorch samples/s: {res['boundfit']['samples_s'] / res['torch']['samples_s']:.2f}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--one":
        fn = run_boundfit if sys.argv[2] == "boundfit" else run_torch
        print(json.dumps(fn(int(sys.argv[3]))))
    else:
        main()
