"""Conv1D training throughput, boundfit against PyTorch CPU (2 threads each)
and Keras 3 (JAX backend, the same model code as boundfit's), on a sequence
classifier: (T, 16) -> Conv1D(64, 5, causal, dilation 1 or 2, relu) ->
MaxPooling1D(2) -> Conv1D(64, 3, same, relu) -> GlobalAveragePooling1D ->
Dense(10, softmax), Adam; plus boundfit's planned new host bytes against the
others' peak RSS growth over their data. Each framework runs in its own
subprocess; their rounds run in turn (benchmarks/interleave.py). PyTorch
runs dilated convolutions on the CPU through a slower kernel than undilated
ones, so the dilation-1 rows are the fairer comparison with it.

    python benchmarks/bench_conv1d.py [rounds]
"""

import sys
import textwrap

from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, KERAS_HEAD, STEP_ROUNDS, report, run_sides

FIT = textwrap.dedent("""
    import time, resource, numpy as np
    T, C, B, STEPS, D = {T}, {C}, {B}, {STEPS}, {D}
    X = np.random.default_rng(0).random((B * STEPS, T, C), dtype=np.float32)
    Y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    m = K.Sequential([K.Input((T, C)), L.Conv1D(64, 5, padding="causal", dilation_rate=D, activation="relu"),
                      L.MaxPooling1D(2), L.Conv1D(64, 3, padding="same", activation="relu"),
                      L.GlobalAveragePooling1D(), L.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
""") + FIT_ROUNDS
BF = BOUNDFIT_HEAD + FIT + "final = lambda: (lambda p: p.host_bytes - p.held_bytes)(m.estimate_memory(batch_size=B))\n"
KERAS = KERAS_HEAD + FIT + "final = peak_growth\n"

TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    import torch.nn.functional as F
    T, C, B, STEPS, D = {T}, {C}, {B}, {STEPS}, {D}
    torch.set_num_threads(2)
    x = torch.rand(B * STEPS, C, T)
    y = torch.randint(0, 10, (B * STEPS,))
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
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
""") + STEP_ROUNDS + "final = peak_growth\n"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name, kw in (("dilation 2, 128 steps x 16 channels, batch 64", dict(T=128, C=16, B=64, STEPS=40, D=2)),
                     ("dilation 1, 128 steps x 16 channels, batch 64", dict(T=128, C=16, B=64, STEPS=40, D=1)),
                     ("dilation 1, 1000 steps x 16 channels, batch 32", dict(T=1000, C=16, B=32, STEPS=10, D=1))):
        report(f"{name} ({rounds} rounds of {kw['STEPS']} steps each side, in turn)", kw["B"] * kw["STEPS"],
               run_sides([c.format(**kw) for c in (BF, TORCH, KERAS)], rounds),
               memory=("planned new host bytes", "peak RSS growth", "peak RSS growth"))


if __name__ == "__main__":
    main()
