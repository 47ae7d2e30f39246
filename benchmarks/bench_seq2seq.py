"""Encoder-decoder LSTM training (return_state / initial_state) on the CPU:
boundfit against PyTorch's nn.LSTM with (h0, c0) and Keras 3 (JAX backend, the
same model code as boundfit's). Batch 64, encoder 50
steps, decoder 20 steps, 128 units, 32 features in and out (a Dense per
decoder step), MSE, Adam. Each framework runs in its own subprocess; their
rounds (one fit of `steps` batches; PyTorch: the same steps in a loop) run in
turn (benchmarks/interleave.py). Prints samples/s (best and median), the
ratios, and boundfit's planned host bytes against the others' peak RSS growth.

    python benchmarks/bench_seq2seq.py [--quick]
"""

import sys
import textwrap

from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, KERAS_HEAD, STEP_ROUNDS, report, run_sides

DATA = textwrap.dedent("""
    import time, resource, numpy as np
    B, TE, TD, D, U, STEPS = 64, 50, 20, 32, 128, {STEPS}
    rng = np.random.default_rng(0)
    n = B * STEPS
    xe, xd, y = (rng.standard_normal((n, t, D)).astype(np.float32) for t in (TE, TD, TD))
""")

FIT = textwrap.dedent("""
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after the data and the import
    e, d = K.Input((TE, D)), K.Input((TD, D))
    _, h, c = L.LSTM(U, return_state=True)(e)
    m = K.Model([e, d], L.Dense(D)(L.LSTM(U, return_sequences=True)(d, initial_state=[h, c])))
    m.compile(optimizer="adam", loss="mse")
    X, Y = [xe, xd], y
""") + FIT_ROUNDS
BF = DATA + BOUNDFIT_HEAD + FIT + "final = lambda: m.estimate_memory(batch_size=B).host_bytes\n"
KERAS = DATA + KERAS_HEAD + FIT + "final = peak_growth\n"

TORCH = DATA + textwrap.dedent("""
    import torch
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after the data and the import
    xe, xd, y = (torch.from_numpy(a) for a in (xe, xd, y))
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
    def step(i):
        s = slice(i * B, (i + 1) * B)
        opt.zero_grad(); lf(net(xe[s], xd[s]), y[s]).backward(); opt.step()
""") + STEP_ROUNDS + "final = peak_growth\n"


def main():
    steps = 4 if "--quick" in sys.argv else 20
    rounds = 3 if "--quick" in sys.argv else 5
    report(f"LSTM encoder-decoder training, batch 64, 50 + 20 steps, 128 units, 32 features ({rounds} rounds of "
           f"{steps} steps each side, in turn)", 64 * steps,
           run_sides([c.format(STEPS=steps) for c in (BF, TORCH, KERAS)], rounds))


if __name__ == "__main__":
    main()
