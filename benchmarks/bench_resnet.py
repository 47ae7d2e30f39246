"""Small ResNet training throughput, boundfit's functional API against
PyTorch CPU (channels_last) and Keras 3 (JAX backend, the same model code as
boundfit's): three residual blocks of Conv2D-BatchNorm-ReLU with a 1x1
projection shortcut, global average pooling, Dense softmax; on digits-sized
8x8x1 images and on CIFAR-sized 32x32x3 ones. Memory: each framework's peak
RSS growth over its data, each in its own subprocess. Rounds run in turn
(benchmarks/interleave.py).

    python benchmarks/bench_resnet.py [rounds]
"""

import sys
import textwrap

from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, KERAS_HEAD, STEP_ROUNDS, report, run_sides

FIT = textwrap.dedent("""
    import time, resource, numpy as np
    H, C, B, STEPS, WIDTHS = {H}, {C}, {B}, {STEPS}, {WIDTHS}
    X = np.random.default_rng(0).random((B * STEPS, H, H, C), dtype=np.float32)
    Y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    inp = K.Input((H, H, C)); h = inp
    for f in WIDTHS:
        a = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(f, 3, padding="same")(h)))
        a = L.BatchNormalization()(L.Conv2D(f, 3, padding="same")(a))
        h = L.Activation("relu")(L.Add()([a, L.Conv2D(f, 1)(h)]))
    m = K.Model(inp, L.Dense(10, activation="softmax")(L.GlobalAveragePooling2D()(h)))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
""") + FIT_ROUNDS + "final = peak_growth\n"

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
""") + STEP_ROUNDS + "final = peak_growth\n"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name, kw in (("digits ResNet, 8x8x1, widths 8-16-16, batch 64", dict(H=8, C=1, B=64, STEPS=200, WIDTHS=(8, 16, 16))),
                     ("CIFAR-sized ResNet, 32x32x3, widths 16-32-32, batch 64",
                      dict(H=32, C=3, B=64, STEPS=30, WIDTHS=(16, 32, 32)))):
        report(f"{name} ({rounds} rounds of {kw['STEPS']} steps each side, in turn)", kw["B"] * kw["STEPS"],
               run_sides([c.format(**kw) for c in (BOUNDFIT_HEAD + FIT, TORCH, KERAS_HEAD + FIT)], rounds),
               memory=("peak RSS growth",) * 3)


if __name__ == "__main__":
    main()
