"""Transformer encoder block training throughput, boundfit against PyTorch CPU
(nn.MultiheadAttention + LayerNorm + Linear, same shapes): batch 32, 128
tokens, 256 wide, 4 heads, feed-forward 1024, then Flatten -> Dense(10), Adam;
plus boundfit's planned host bytes against PyTorch's measured peak RSS growth
at the same batch size (each framework in its own subprocess, same threads).

    python benchmarks/bench_transformer.py [steps] [rounds]

Each side reports its best round of `steps` steps (timeit's rule: the other
rounds measure the machine's other load, not the code).
"""

import subprocess
import sys
import textwrap

BF = textwrap.dedent("""
    import time, numpy as np, boundfit as bf
    from boundfit import layers as L
    B, T, D, H, FF, STEPS = {B}, {T}, {D}, {H}, {FF}, {STEPS}
    inp = bf.Input((T, D))
    a = L.MultiHeadAttention(H, D // H)(inp, inp)
    x = L.LayerNormalization()(L.Add()([inp, a]))
    f = L.Dense(D)(L.Dense(FF, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, f]))
    m = bf.Model(inp, L.Dense(10, activation="softmax")(L.Flatten()(x)))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(0).standard_normal((B * STEPS, T, D), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    plan = m.estimate_memory(batch_size=B)
    m.fit(x[:B], y[:B], batch_size=B, verbose=0)
    dt = []
    for r in range({ROUNDS}):
        t0 = time.perf_counter(); m.fit(x, y, batch_size=B, verbose=0, shuffle=False); dt.append(time.perf_counter() - t0)
    print(B * STEPS / min(dt), plan.host_bytes)
""")

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
    step(0)
    dt = []
    for r in range({ROUNDS}):
        t0 = time.perf_counter()
        for i in range(STEPS): step(i)
        dt.append(time.perf_counter() - t0)
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r_data) * 1024
    print(B * STEPS / min(dt), peak)
""")


def run(code, **kw):
    out = subprocess.run([sys.executable, "-c", code.format(**kw)], capture_output=True, text=True, timeout=1800)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    a, b = out.stdout.split()
    return float(a), float(b)


def main():
    import boundfit as bf
    threads = bf.blas_runtime.threads()
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    kw = dict(B=32, T=128, D=256, H=4, FF=1024, STEPS=steps, THREADS=threads, ROUNDS=rounds)
    ours, plan = run(BF, **kw)
    theirs, peak = run(TORCH, **kw)
    print(f"Transformer block: batch 32, 128 tokens, 256 wide, 4 heads, ff 1024, Adam (best of {rounds} rounds of {steps} steps, {threads} threads)")
    if ours is None:
        print(f"  boundfit failed: {plan}")
        return
    print(f"  boundfit {ours:10.1f} samples/s, planned host bytes {plan / 2**20:8.1f} MiB")
    if theirs is None:
        print(f"  PyTorch unavailable: {peak}")
    else:
        print(f"  PyTorch  {theirs:10.1f} samples/s, peak RSS growth    {peak / 2**20:8.1f} MiB")
        print(f"  ratios: samples/s {ours / theirs:5.2f}x, memory {plan / max(peak, 1):5.2f}x of PyTorch's")


if __name__ == "__main__":
    main()
