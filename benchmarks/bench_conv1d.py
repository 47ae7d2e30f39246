"""Conv1D training throughput, boundfit against PyTorch CPU (2 threads each),
on a sequence classifier: (T, 16) -> Conv1D(64, 5, causal, dilation 1 or 2, relu)
-> MaxPooling1D(2) -> Conv1D(64, 3, same, relu) -> GlobalAveragePooling1D ->
Dense(10, softmax), Adam; plus boundfit's planned host bytes against
PyTorch's measured peak RSS growth at the same batch size (each framework in
its own subprocess, the data made before the measurement starts).
PyTorch runs dilated convolutions on the CPU through a slower kernel than
undilated ones, so the dilation-1 rows are the fairer comparison.

    python benchmarks/bench_conv1d.py
"""

import subprocess
import sys
import textwrap

BF = textwrap.dedent("""
    import time, numpy as np, boundfit as bf
    from boundfit import layers
    T, C, B, STEPS, D = {T}, {C}, {B}, {STEPS}, {D}
    m = bf.Sequential([bf.Input((T, C)),
                       layers.Conv1D(64, 5, padding="causal", dilation_rate=D, activation="relu"),
                       layers.MaxPooling1D(2), layers.Conv1D(64, 3, padding="same", activation="relu"),
                       layers.GlobalAveragePooling1D(), layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(0).random((B * STEPS, T, C), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    plan = m.estimate_memory(batch_size=B)
    m.fit(x[:B], y[:B], batch_size=B, verbose=0)
    t0 = time.perf_counter(); m.fit(x, y, batch_size=B, verbose=0, shuffle=False); dt = time.perf_counter() - t0
    print(B * STEPS / dt, plan.host_bytes - plan.held_bytes)
""")

TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    import torch.nn.functional as F
    T, C, B, STEPS, D = {T}, {C}, {B}, {STEPS}, {D}
    torch.set_num_threads(2)
    x = torch.rand(B * STEPS, C, T)
    y = torch.randint(0, 10, (B * STEPS,))
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv1d(C, 64, 5, dilation=D)
            self.c2 = torch.nn.Conv1d(64, 64, 3, padding=1)
            self.out = torch.nn.Linear(64, 10)
        def forward(self, x):
            x = F.max_pool1d(F.relu(self.c1(F.pad(x, (4 * D, 0)))), 2)  # causal: (5-1)*D steps on the left
            return self.out(F.relu(self.c2(x)).mean(dim=2))
    net = Net()
    opt = torch.optim.Adam(net.parameters(), eps=1e-7)
    lf = torch.nn.CrossEntropyLoss()
    def step(i):
        opt.zero_grad(); lf(net(x[i * B:(i + 1) * B]), y[i * B:(i + 1) * B]).backward(); opt.step()
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    step(0)
    t0 = time.perf_counter()
    for i in range(STEPS): step(i)
    dt = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0) * 1024
    print(B * STEPS / dt, peak)
""")


def run(code, **kw):
    out = subprocess.run([sys.executable, "-c", code.format(**kw)], capture_output=True, text=True, timeout=900)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    a, b = out.stdout.split()
    return float(a), float(b)


def main():
    for name, kw in (("dilation 2, 128 steps x 16 channels, batch 64", dict(T=128, C=16, B=64, STEPS=40, D=2)),
                     ("dilation 1, 128 steps x 16 channels, batch 64", dict(T=128, C=16, B=64, STEPS=40, D=1)),
                     ("dilation 1, 1000 steps x 16 channels, batch 32", dict(T=1000, C=16, B=32, STEPS=10, D=1))):
        ours, plan = run(BF, **kw)
        theirs, peak = run(TORCH, **kw)
        print(name)
        if ours is None:
            print(f"  boundfit failed: {plan}")
            continue
        print(f"  boundfit {ours:10.1f} samples/s, planned new host bytes {plan / 2**20:8.1f} MiB")
        if theirs is None:
            print(f"  PyTorch unavailable: {peak}")
        else:
            print(f"  PyTorch  {theirs:10.1f} samples/s, peak RSS growth       {peak / 2**20:8.1f} MiB")
            print(f"  ratios: samples/s {ours / theirs:5.2f}x, memory {plan / max(peak, 1):5.2f}x of PyTorch's")


if __name__ == "__main__":
    main()
