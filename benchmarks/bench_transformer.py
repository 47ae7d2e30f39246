"""Transformer encoder block training throughput, boundfit against PyTorch CPU
(nn.MultiheadAttention + LayerNorm + Linear, same shapes) and Keras 3 (JAX
backend, the same model code as boundfit's): batch 32, 128
tokens, 256 wide, 4 heads, feed-forward 1024, then Flatten -> Dense(10), Adam;
plus boundfit's planned host bytes against the others' measured peak RSS growth
at the same batch size (each framework in its own subprocess, same threads).

    python benchmarks/bench_transformer.py [steps] [rounds]

A round is `steps` training steps (one fit over steps * 32 samples; PyTorch:
the same steps in a loop); the sides run their rounds in turn
(benchmarks/interleave.py) and each reports its best round and its median.
"""

import sys
import textwrap

from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, KERAS_HEAD, STEP_ROUNDS, report, run_sides

FIT = textwrap.dedent("""
    import time, resource, numpy as np
    B, T, D, H, FF, STEPS = {B}, {T}, {D}, {H}, {FF}, {STEPS}
    x = np.random.default_rng(0).standard_normal((B * STEPS, T, D), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    inp = K.Input((T, D))
    a = L.MultiHeadAttention(H, D // H)(inp, inp)
    h = L.LayerNormalization()(L.Add()([inp, a]))
    f = L.Dense(D)(L.Dense(FF, activation="relu")(h))
    h = L.LayerNormalization()(L.Add()([h, f]))
    m = K.Model(inp, L.Dense(10, activation="softmax")(L.Flatten()(h)))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    X, Y = x, y
""") + FIT_ROUNDS
BF = BOUNDFIT_HEAD + FIT + "final = lambda: m.estimate_memory(batch_size=B).host_bytes\n"
KERAS = KERAS_HEAD + FIT + "final = peak_growth\n"

TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    B, T, D, H, FF, STEPS, THREADS = {B}, {T}, {D}, {H}, {FF}, {STEPS}, {THREADS}
    torch.set_num_threads(THREADS)
    x = torch.randn(B * STEPS, T, D)
    y = torch.randint(0, 10, (B * STEPS,))
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = torch.nn.MultiheadAttention(D, H, batch_first=True)
            self.ln1, self.ln2 = torch.nn.LayerNorm(D, eps=1e-3), torch.nn.LayerNorm(D, eps=1e-3)
            self.ff = torch.nn.Sequential(torch.nn.Linear(D, FF), torch.nn.ReLU(), torch.nn.Linear(FF, D))
            self.out = torch.nn.Linear(T * D, 10)
        def forward(self, x):
            x = self.ln1(x + self.att(x, x, x, need_weights=False)[0])
            x = self.ln2(x + self.ff(x))
            return self.out(x.flatten(1))
    net = Block()
    opt = torch.optim.Adam(net.parameters(), eps=1e-7)
    lf = torch.nn.CrossEntropyLoss()
    def step(i):
        opt.zero_grad(); lf(net(x[i * B:(i + 1) * B]), y[i * B:(i + 1) * B]).backward(); opt.step()
""") + STEP_ROUNDS + "final = peak_growth\n"


def main():
    import boundfit as bf
    threads = bf.runtime.blas_runtime.threads()
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    kw = dict(B=32, T=128, D=256, H=4, FF=1024, STEPS=steps, THREADS=threads)
    report(f"Transformer block: batch 32, 128 tokens, 256 wide, 4 heads, ff 1024, Adam ({rounds} rounds of {steps} "
           f"steps each side, in turn; {threads} threads)", 32 * steps,
           run_sides([c.format(**kw) for c in (BF, TORCH, KERAS)], rounds))


if __name__ == "__main__":
    main()
