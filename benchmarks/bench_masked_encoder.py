"""A masked text encoder's training throughput, boundfit against PyTorch CPU:
Embedding(mask_zero=True) -> MultiHeadAttention(x, x) + x -> LayerNorm ->
masked GlobalAveragePooling1D -> Dense(2), Adam, padded token sequences of
random lengths. PyTorch: nn.Embedding, nn.MultiheadAttention with
key_padding_mask, LayerNorm, a masked mean, Linear. boundfit also runs the
same model with mask_zero=False, so the masks' own cost shows. Each run in
its own subprocess, same threads; the two sides of a comparison run their
rounds in turn (benchmarks/interleave.py).

    python benchmarks/bench_masked_encoder.py [steps] [rounds]
"""

import sys
import textwrap

from interleave import FIT_ROUNDS, STEP_ROUNDS, report, run_sides

DATA = """
    import numpy as np
    r = np.random.default_rng(0)
    ids = r.integers(1, VOC, (B * STEPS, T))
    for i, n in enumerate(r.integers(1, T + 1, B * STEPS)):
        ids[i, n:] = 0
    y = r.integers(0, 2, B * STEPS)
"""

BF = textwrap.dedent("""
    import time, boundfit as bf
    from boundfit import layers as L
    B, T, D, H, VOC, STEPS, MASK = {B}, {T}, {D}, {H}, {VOC}, {STEPS}, {MASK}
""") + textwrap.dedent(DATA) + textwrap.dedent("""
    inp = bf.Input((T,))
    e = L.Embedding(VOC, D, mask_zero=MASK)(inp)
    x = L.LayerNormalization()(L.Add()([e, L.MultiHeadAttention(H, D // H)(e, e)]))
    m = bf.Model(inp, L.Dense(2, activation="softmax")(L.GlobalAveragePooling1D()(x)))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    X, Y, r_data = ids, y, 0
""") + FIT_ROUNDS + "final = lambda: 0\n"

TORCH = textwrap.dedent("""
    import time, torch
    B, T, D, H, VOC, STEPS, THREADS = {B}, {T}, {D}, {H}, {VOC}, {STEPS}, {THREADS}
    torch.set_num_threads(THREADS)
""") + textwrap.dedent(DATA) + textwrap.dedent("""
    ids, y = torch.from_numpy(ids), torch.from_numpy(y)
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(VOC, D)
            self.att = torch.nn.MultiheadAttention(D, H, batch_first=True)
            self.ln = torch.nn.LayerNorm(D, eps=1e-3)
            self.out = torch.nn.Linear(D, 2)
        def forward(self, t):
            keep = t != 0
            e = self.emb(t)
            x = self.ln(e + self.att(e, e, e, key_padding_mask=~keep, need_weights=False)[0])
            k = keep.unsqueeze(-1).float()
            return self.out((x * k).sum(1) / k.sum(1))
    net = Net()
    opt = torch.optim.Adam(net.parameters(), eps=1e-7)
    lf = torch.nn.CrossEntropyLoss()
    def step(i):
        opt.zero_grad(); lf(net(ids[i * B:(i + 1) * B]), y[i * B:(i + 1) * B]).backward(); opt.step()
""") + STEP_ROUNDS + "final = lambda: 0\n"


def main():
    import boundfit as bf
    threads = bf.runtime.blas_runtime.threads()
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    kw = dict(B=32, T=128, D=128, H=4, VOC=1000, STEPS=steps, THREADS=threads)
    head = f"32 x 128 tokens (padded), 128 wide, 4 heads, Adam ({rounds} rounds of {steps} steps, in turn; {threads} threads)"
    report(f"Masked encoder against PyTorch (key_padding_mask): {head}", 32 * steps,
           run_sides([BF.format(MASK=True, **kw), TORCH.format(**kw)], rounds), memory=(None, None))
    report(f"The masks' cost: boundfit with mask_zero=True against False, {head}", 32 * steps,
           run_sides([BF.format(MASK=True, **kw), BF.format(MASK=False, **kw)], rounds),
           names=("masked", "unmasked"), memory=(None, None))

if __name__ == "__main__":
    main()
