"""Small ResNet training throughput, boundfit's functional API against
PyTorch CPU (channels_last): three residual blocks of Conv2D-BatchNorm-ReLU
with a 1x1 projection shortcut, global average pooling, Dense softmax; on
digits-sized 8x8x1 images and on CIFAR-sized 32x32x3 ones. Memory: each
framework's peak RSS growth over its data in its own subprocess, and
boundfit's planned host bytes.

    python benchmarks/bench_resnet.py
"""

import subprocess
import sys
import textwrap

BF = textwrap.dedent("""
    import time, resource, numpy as np, boundfit as bf
    from boundfit import layers as L
    H, C, B, STEPS, WIDTHS = {H}, {C}, {B}, {STEPS}, {WIDTHS}
    x = np.random.default_rng(0).random((B * STEPS, H, H, C), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    inp = bf.Input((H, H, C)); h = inp
    for f in WIDTHS:
        a = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(f, 3, padding="same")(h)))
        a = L.BatchNormalization()(L.Conv2D(f, 3, padding="same")(a))
        h = L.Activation("relu")(L.Add()([a, L.Conv2D(f, 1)(h)]))
    m = bf.Model(inp, L.Dense(10, activation="softmax")(L.GlobalAveragePooling2D()(h)))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    plan = m.estimate_memory(batch_size=B)
    m.fit(x[:B], y[:B], batch_size=B, verbose=0)
    t0 = time.perf_counter(); m.fit(x, y, batch_size=B, shuffle=False, verbose=0); dt = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r_data) * 1024
    print(B * STEPS / dt, peak, plan.host_bytes)
""")

TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    from torch import nn
    H, C, B, STEPS, WIDTHS = {H}, {C}, {B}, {STEPS}, {WIDTHS}
    torch.set_num_threads(2)
    x = torch.rand(B * STEPS, C, H, H).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (B * STEPS,))
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    class Block(nn.Module):
        def __init__(self, c, f):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, f, 3, padding=1), nn.BatchNorm2d(f, eps=1e-3, momentum=0.01)
            self.c2, self.b2 = nn.Conv2d(f, f, 3, padding=1), nn.BatchNorm2d(f, eps=1e-3, momentum=0.01)
            self.short = nn.Conv2d(c, f, 1)
        def forward(self, h):
            a = self.b2(self.c2(torch.relu(self.b1(self.c1(h)))))
            return torch.relu(a + self.short(h))
    mods, c = [], C
    for f in WIDTHS:
        mods.append(Block(c, f)); c = f
    net = nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))
    net = net.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), eps=1e-7)
    lf = nn.CrossEntropyLoss()
    def step(i):
        opt.zero_grad(); lf(net(x[i * B:(i + 1) * B]), y[i * B:(i + 1) * B]).backward(); opt.step()
    step(0)
    t0 = time.perf_counter()
    for i in range(STEPS): step(i)
    dt = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r_data) * 1024
    print(B * STEPS / dt, peak, 0)
""")


def run(code, **kw):
    out = subprocess.run([sys.executable, "-c", code.format(**kw)], capture_output=True, text=True, timeout=900)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1], 0
    return tuple(float(v) for v in out.stdout.split())


def main():
    for name, kw in (("digits ResNet, 8x8x1, widths 8-16-16, batch 64", dict(H=8, C=1, B=64, STEPS=200, WIDTHS=(8, 16, 16))),
                     ("CIFAR-sized ResNet, 32x32x3, widths 16-32-32, batch 64",
                      dict(H=32, C=3, B=64, STEPS=30, WIDTHS=(16, 32, 32)))):
        ours, ours_peak, plan = run(BF, **kw)
        theirs, peak, _ = run(TORCH, **kw)
        print(name)
        if ours is None:
            print(f"  boundfit failed: {ours_peak}")
            continue
        print(f"  boundfit {ours:10.1f} samples/s, peak RSS growth {ours_peak / 2**20:7.1f} MiB "
              f"(planned host bytes {plan / 2**20:.1f} MiB)")
        if theirs is None:
            print(f"  PyTorch unavailable: {peak}")
        else:
            print(f"  PyTorch  {theirs:10.1f} samples/s, peak RSS growth {peak / 2**20:7.1f} MiB")
            print(f"  ratios: samples/s {ours / theirs:5.2f}x, peak memory {ours_peak / max(peak, 1):5.2f}x of PyTorch's")


if __name__ == "__main__":
    main()
