"""LSTM training throughput and peak memory: boundfit against PyTorch's
nn.LSTM and Keras 3 (JAX backend, the same model code as boundfit's, with
and without recurrent dropout) on the CPU, in the same script: batch 64, 100 steps, 128 units
(input 32 features, Dense(1) head, MSE, Adam). Each framework runs in its own
subprocess; peak memory is the growth of the process's peak RSS (VmHWM, reset
through /proc/self/clear_refs before training) over its RSS before it.
Also with dropout: boundfit's LSTM(dropout=0.2) (one input mask per sample)
and LSTM(dropout=0.2, recurrent_dropout=0.2) (Keras's per-gate masks),
against its own run without dropout and PyTorch with nn.Dropout(0.2) on the
input sequence (PyTorch's LSTM has no per-sample cell dropout; a comparable
cost, not the same model).

    python benchmarks/bench_lstm.py [--quick]

Each side reports its best of ROUNDS rounds of timed steps.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

B, T, D, U = 64, 100, 32, 128
ROUNDS = 3  # each side reports its best round (the others measure the machine's other load)


def _rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def data(steps):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((B * steps, T, D)).astype(np.float32),
            rng.standard_normal((B * steps, 1)).astype(np.float32))


def run_boundfit(steps, rate=0.0, rec=0.0, keras=False):
    """boundfit's model, or with keras=True the same code on Keras 3 (JAX backend)."""
    if keras:
        os.environ.setdefault("KERAS_BACKEND", "jax")
        import keras as K
    else:
        import boundfit as K
        K.utils.set_random_seed(0)
    x, y = data(steps)
    L = K.layers
    m = K.Sequential([L.Input((T, D)), L.LSTM(U, dropout=rate, recurrent_dropout=rec), L.Dense(1)])
    m.compile(optimizer="adam", loss="mse")
    plan = None if keras else m.estimate_memory(batch_size=B)
    m.fit(x[:B * 2], y[:B * 2], batch_size=B, epochs=1, verbose=0)  # warm-up (and the optimizer state)
    if not keras:
        K.utils.clear_session()  # the warm-up's kept run arena: the rounds map and touch their own
    rss0, ok = _rss_kib("VmRSS"), _reset_peak()
    dt = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        m.fit(x, y, batch_size=B, epochs=1, verbose=0, shuffle=False)
        dt.append(time.perf_counter() - t0)
    out = dict(samples_s=B * steps / min(dt), peak_growth=(_rss_kib("VmHWM") - rss0) * 1024 if ok else None)
    return out if keras else dict(out, plan_host=plan.host_bytes)


def run_torch(steps, rate=0.0):
    import torch
    x, y = data(steps)
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(D, U, batch_first=True)
            self.head = torch.nn.Linear(U, 1)
            self.drop = torch.nn.Dropout(rate)

        def forward(self, v):
            return self.head(self.lstm(self.drop(v))[0][:, -1])

    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    lf = torch.nn.MSELoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def run(n):
        for i in range(n):
            opt.zero_grad()
            lf(net(xt[i * B:(i + 1) * B]), yt[i * B:(i + 1) * B]).backward()
            opt.step()
    run(2)
    rss0, ok = _rss_kib("VmRSS"), _reset_peak()
    dt = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        run(steps)
        dt.append(time.perf_counter() - t0)
    return dict(samples_s=B * steps / min(dt), peak_growth=(_rss_kib("VmHWM") - rss0) * 1024 if ok else None,
                threads=torch.get_num_threads())


RUNS = {"boundfit": (run_boundfit, {}), "torch": (run_torch, {}),
        "boundfit+dropout": (run_boundfit, dict(rate=0.2)),
        "boundfit+rec_dropout": (run_boundfit, dict(rate=0.2, rec=0.2)),
        "torch+dropout": (run_torch, dict(rate=0.2)),
        "keras": (run_boundfit, dict(keras=True)),
        "keras+rec_dropout": (run_boundfit, dict(rate=0.2, rec=0.2, keras=True))}


def main():
    steps = 4 if "--quick" in sys.argv else 20
    res = {}
    for who in RUNS:
        p = subprocess.run([sys.executable, __file__, "--one", who, str(steps)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{who}: failed\n{p.stderr[-2000:]}")
            continue
        res[who] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"LSTM training, batch {B}, {T} steps, {U} units, input {D} (CPU, {os.cpu_count()} cores seen)")
    for who, r in res.items():
        peak = f"{r['peak_growth'] / 2**20:8.1f} MiB" if r.get("peak_growth") is not None else "     n/a"
        extra = f"  (plan: {r['plan_host'] / 2**20:.1f} MiB host)" if "plan_host" in r else ""
        print(f"  {who:20s} {r['samples_s']:9.1f} samples/s   peak RSS growth {peak}{extra}")

    def ratio(a, b, what):
        if a in res and b in res:
            print(f"  ratio {what} samples/s: {res[a]['samples_s'] / res[b]['samples_s']:.2f}")
    ratio("boundfit", "torch", "boundfit / PyTorch")
    ratio("boundfit+dropout", "boundfit", "boundfit dropout=0.2 / no dropout")
    ratio("boundfit+rec_dropout", "boundfit", "boundfit dropout=recurrent_dropout=0.2 / no dropout")
    ratio("boundfit+dropout", "torch+dropout", "boundfit / PyTorch, both with input dropout 0.2")
    ratio("boundfit", "keras", "boundfit / Keras")
    ratio("boundfit+rec_dropout", "keras+rec_dropout", "boundfit / Keras, both dropout=recurrent_dropout=0.2")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--one":
        fn, kw = RUNS[sys.argv[2]]
        print(json.dumps(fn(int(sys.argv[3]), **kw)))
    else:
        main()
