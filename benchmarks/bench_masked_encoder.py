"""A masked text encoder's training throughput, boundfit against PyTorch CPU:
Embedding(mask_zero=True) -> MultiHeadAttention(x, x) + x -> LayerNorm ->
masked GlobalAveragePooling1D -> Dense(2), Adam, padded token sequences of
random lengths. PyTorch: nn.Embedding, nn.MultiheadAttention with
key_padding_mask, LayerNorm, a masked mean, Linear. boundfit also runs the
same model with mask_zero=False, so the masks' own cost shows. Each run in
its own subprocess, same threads.

    python benchmarks/bench_masked_encoder.py [steps]
"""

import subprocess
import sys
import textwrap

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
    m.fit(ids[:B], y[:B], batch_size=B, verbose=0)
    t0 = time.perf_counter(); m.fit(ids, y, batch_size=B, verbose=0, shuffle=False); dt = time.perf_counter() - t0
    print(B * STEPS / dt)
""")

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
    step(0)
    t0 = time.perf_counter()
    for i in range(STEPS): step(i)
    print(B * STEPS / (time.perf_counter() - t0))
""")


def run(code, **kw):
    out = subprocess.run([sys.executable, "-c", code.format(**kw)], capture_output=True, text=True, timeout=1800)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    return float(out.stdout.split()[0]), None


def main():
    import boundfit as bf
    threads = bf.blas_runtime.threads()
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    kw = dict(B=32, T=128, D=128, H=4, VOC=1000, STEPS=steps, THREADS=threads)
    masked, err = run(BF, MASK=True, **kw)
    plain, _ = run(BF, MASK=False, **kw)
    theirs, terr = run(TORCH, **kw)
    print(f"Masked encoder: batch 32, 128 tokens (padded), 128 wide, 4 heads, Adam ({steps} steps, {threads} threads)")
    if masked is None:
        print(f"  boundfit failed: {err}")
        return
    print(f"  boundfit masked   {masked:10.1f} samples/s")
    if plain is not None:
        print(f"  boundfit unmasked {plain:10.1f} samples/s (masks cost {plain / masked:5.2f}x)")
    if theirs is None:
        print(f"  PyTorch unavailable: {terr}")
    else:
        print(f"  PyTorch masked    {theirs:10.1f} samples/s")
        print(f"  ratio: samples/s {masked / theirs:5.2f}x of PyTorch's")


if __name__ == "__main__":
    main()
