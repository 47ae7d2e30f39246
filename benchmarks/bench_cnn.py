"""CNN training throughput, boundfit against PyTorch CPU (channels_last) and
Keras 3 (JAX backend, the same model code as boundfit's), on the Keras
100x100x3 model of the conv issue and a small digits CNN; plus boundfit's
planned host bytes against the others' measured peak RSS growth at the same
batch size. Each framework runs in its own subprocess; their rounds (one fit
of STEPS batches; PyTorch: the same steps in a loop) run in turn
(benchmarks/interleave.py).

    python benchmarks/bench_cnn.py [rounds]
"""

import sys
import textwrap

from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, KERAS_HEAD, STEP_ROUNDS, report, run_sides

FIT = textwrap.dedent("""
    import time, resource, numpy as np
    H, C, B, STEPS, SMALL = {H}, {C}, {B}, {STEPS}, {SMALL}
    x = np.random.default_rng(0).random((B * STEPS, H, H, C), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if SMALL:
        m = K.Sequential([L.Input((H, H, C)), L.Conv2D(32, (3, 3), padding="same", activation="relu"),
                          L.MaxPooling2D((2, 2)), L.Flatten(), L.Dense(64, activation="relu"),
                          L.Dense(10, activation="softmax")])
    else:
        m = K.Sequential([L.Input((H, H, C)), L.Conv2D(32, (3, 3), activation="relu"),
                          L.MaxPooling2D((2, 2)), L.Flatten(), L.Dense(128, activation="relu"),
                          L.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    X, Y = x, y
""") + FIT_ROUNDS
BF = BOUNDFIT_HEAD + FIT + "final = lambda: m.estimate_memory(batch_size=B).host_bytes\n"
KERAS = KERAS_HEAD + FIT + "final = peak_growth\n"

TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    H, C, B, STEPS, SMALL = {H}, {C}, {B}, {STEPS}, {SMALL}
    torch.set_num_threads(2)
    x = torch.rand(B * STEPS, C, H, H).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (B * STEPS,))
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if SMALL:
        net = torch.nn.Sequential(torch.nn.Conv2d(C, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(32 * (H // 2) ** 2, 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, 10))
    else:
        net = torch.nn.Sequential(torch.nn.Conv2d(C, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(32 * ((H - 2) // 2) ** 2, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10))
    net = net.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), eps=1e-7)
    lf = torch.nn.CrossEntropyLoss()
    def step(i):
        opt.zero_grad(); lf(net(x[i * B:(i + 1) * B]), y[i * B:(i + 1) * B]).backward(); opt.step()
""") + STEP_ROUNDS + "final = peak_growth\n"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name, kw in (("Keras model, 100x100x3 -> Conv2D(32) -> MaxPool -> Dense(128) -> 10, batch 64",
                      dict(H=100, C=3, B=64, STEPS=8, SMALL=0)),
                     ("digits CNN, 8x8x1, batch 64", dict(H=8, C=1, B=64, STEPS=200, SMALL=1))):
        report(f"{name} ({rounds} rounds of {kw['STEPS']} steps each side, in turn)", kw["B"] * kw["STEPS"],
               run_sides([c.format(**kw) for c in (BF, TORCH, KERAS)], rounds))


if __name__ == "__main__":
    main()
