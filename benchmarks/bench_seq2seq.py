"""Encoder-decoder LSTM training (return_state / initial_state) on the CPU:
boundfit against PyTorch's nn.LSTM with (h0, c0), in the same script. Batch
64, encoder 50 steps, decoder 20 steps, 128 units, 32 features in and out
(a Dense per decoder step), MSE, Adam. Each framework runs in its own
subprocess; prints samples/s and their ratio.

    python benchmarks/bench_seq2seq.py [--quick]
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

B, TE, TD, D, U = 64, 50, 20, 32, 128
ROUNDS = 3  # each side reports its best round (the others measure the machine's other load)


def data(steps):
    rng = np.random.default_rng(0)
    n = B * steps
    return (rng.standard_normal((n, TE, D)).astype(np.float32), rng.standard_normal((n, TD, D)).astype(np.float32),
            rng.standard_normal((n, TD, D)).astype(np.float32))


def run_boundfit(steps):
    import boundfit as bf
    from boundfit import layers
    xe, xd, y = data(steps)
    bf.utils.set_random_seed(0)
    e, d = bf.Input((TE, D)), bf.Input((TD, D))
    _, h, c = layers.LSTM(U, return_state=True)(e)
    m = bf.Model([e, d], layers.Dense(D)(layers.LSTM(U, return_sequences=True)(d, initial_state=[h, c])))
    m.compile(optimizer="adam", loss="mse")
    m.fit([xe[:B], xd[:B]], y[:B], batch_size=B, epochs=1, verbose=0)  # warm-up (and the optimizer state)
    dt = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        m.fit([xe, xd], y, batch_size=B, epochs=1, verbose=0, shuffle=False)
        dt.append(time.perf_counter() - t0)
    return dict(samples_s=B * steps / min(dt),
                plan_host=m.estimate_memory(batch_size=B).host_bytes)


def run_torch(steps):
    import torch
    xe, xd, y = (torch.from_numpy(a) for a in data(steps))
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.LSTM(D, U, batch_first=True)
            self.dec = torch.nn.LSTM(D, U, batch_first=True)
            self.head = torch.nn.Linear(U, D)

        def forward(self, a, b):
            _, state = self.enc(a)
            return self.head(self.dec(b, state)[0])

    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    lf = torch.nn.MSELoss()

    def run(n):
        for i in range(n):
            s = slice(i * B, (i + 1) * B)
            opt.zero_grad()
            lf(net(xe[s], xd[s]), y[s]).backward()
            opt.step()
    run(1)
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
    print(f"LSTM encoder-decoder training, batch {B}, {TE} + {TD} steps, {U} units, {D} features "
          f"(CPU, {os.cpu_count()} cores seen)")
    for who, r in res.items():
        extra = f"  (plan: {r['plan_host'] / 2**20:.1f} MiB host)" if "plan_host" in r else ""
        print(f"  {who:9s} {r['samples_s']:9.1f} samples/s{extra}")
    if len(res) == 2:
        print(f"  ratio boundfit / PyTorch samples/s: {res['boundfit']['samples_s'] / res['torch']['samples_s']:.2f}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--one":
        fn = run_boundfit if sys.argv[2] == "boundfit" else run_torch
        print(json.dumps(fn(int(sys.argv[3]))))
    else:
        main()
