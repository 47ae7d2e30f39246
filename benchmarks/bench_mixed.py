"""Mixed precision on this CPU: training samples/s of four models under boundfit float32 and mixed_bfloat16, Keras 3
on TensorFlow under mixed_bfloat16 (Keras's own layers; TensorFlow's oneDNN runs bfloat16 GEMMs where the CPU has
AVX512-BF16 / AMX) and PyTorch under torch.autocast(device_type="cpu", dtype=torch.bfloat16) (forward and loss under
autocast, backward, Adam step): the seed MLP (10000 -> 5000 -> 2000 -> 10, batch 256), the seed CNN (100x100x3,
Conv2D 32 -> MaxPooling -> Dense 128 -> 10, batch 128), the CIFAR-sized ResNet of bench_resnet.py and the
Transformer block of bench_transformer.py. Each side in its own subprocess, rounds in turn (interleave.py), best
and median; the ratios are boundfit mixed against each other side; boundfit's planned activation bytes under both
policies. Without AVX512-BF16 / AMX kernels (docs/mixed-precision.md) boundfit's bfloat16 storage is converted to
and from float32 around the float32 kernels: expect it no faster than its float32, the gain is memory.

    python benchmarks/bench_mixed.py [rounds] [cap]   (BENCH_TORCH_PYTHON: a python with PyTorch, default
                                                      /usr/bin/python3; cap: seconds PyTorch's warm-up step may take)

PyTorch's round is one step (its seconds times the others' steps a round), and a PyTorch side whose warm-up step
takes over `cap` seconds (default 90) is reported as the bound that shows: Debian's PyTorch 1.13 (the one on this
machine) runs its float32 and its CPU bfloat16 GEMMs without an optimised BLAS.
"""

import os
import sys
import textwrap

import bench_resnet
import bench_transformer
from interleave import BOUNDFIT_HEAD, FIT_ROUNDS, STEP_ROUNDS, report, run_sides

TORCH_PYTHON = os.environ.get("BENCH_TORCH_PYTHON", "/usr/bin/python3")
KERAS_TF_HEAD = 'import os\nos.environ["KERAS_BACKEND"] = "tensorflow"\nimport keras as K\nfrom keras import layers as L\n'
POLICY = 'K.mixed_precision.set_global_policy("{{POLICY}}")\n'
ACTIVATIONS = ("final = lambda: sum(e.bytes for e in m.estimate_memory(batch_size=B).breakdown "
               "if e.category == 'activations')\n")

SEQ_FIT = textwrap.dedent("""
    import time, resource, numpy as np
    B, STEPS, SHAPE = {B}, {STEPS}, {SHAPE}
    X = np.random.default_rng(0).random((B * STEPS,) + SHAPE, dtype=np.float32)
    Y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    m = K.Sequential([L.Input(SHAPE)] + {LAYERS})
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
""") + FIT_ROUNDS
MLP = '[L.Dense(5000, activation="relu"), L.Dense(2000, activation="relu"), L.Dense(10, activation="softmax")]'
CNN = ('[L.Conv2D(32, (3, 3), activation="relu"), L.MaxPooling2D((2, 2)), L.Flatten(), '
       'L.Dense(128, activation="relu"), L.Dense(10, activation="softmax")]')

SEQ_TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    from torch import nn
    B, STEPS, SHAPE = {B}, {STEPS}, {SHAPE}
    torch.set_num_threads({THREADS})
    x = torch.rand((B * STEPS,) + SHAPE[-1:] + SHAPE[:-1])
    y = torch.randint(0, 10, (B * STEPS,))
    r_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    net = {TORCH_NET}
    opt = torch.optim.Adam(net.parameters(), eps=1e-7)
    lf = nn.CrossEntropyLoss()
""") + STEP_ROUNDS
TORCH_MLP = "nn.Sequential(nn.Linear(10000, 5000), nn.ReLU(), nn.Linear(5000, 2000), nn.ReLU(), nn.Linear(2000, 10))"
TORCH_CNN = ("nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(49 * 49 * 32, 128), "
             "nn.ReLU(), nn.Linear(128, 10))")
# appended to each PyTorch side: its training step under autocast (replacing the templates' step()); a round is
# one step, its seconds reported times STEPS (the others' round at its rate); a warm-up step past CAP seconds ends
# the side with the bound it shows (Debian's PyTorch 1.13 runs its GEMMs on the netlib reference BLAS)
AUTOCAST = textwrap.dedent("""
    import signal
    CAP = {CAP}
    def step(i):
        opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            loss = lf(net(x[i * B:(i + 1) * B]), y[i * B:(i + 1) * B])
        loss.backward(); opt.step()
    def _late(*_):
        raise TimeoutError(f"its warm-up step took over {{CAP}} s: under {{B / CAP:.2f}} samples/s")
    def setup():
        signal.signal(signal.SIGALRM, _late); signal.alarm(CAP); step(0); signal.alarm(0)
    def one_round():
        t0 = time.perf_counter(); step(1 % STEPS)
        return (time.perf_counter() - t0) * STEPS
    final = lambda: 0
""")


def sides(fit, torch):
    """the four children's code: boundfit mixed (the side the ratios compare), boundfit float32, Keras/TF mixed,
    PyTorch autocast"""
    bf = BOUNDFIT_HEAD + POLICY + fit + ACTIVATIONS
    return [bf.replace("{{POLICY}}", "mixed_bfloat16"), bf.replace("{{POLICY}}", "float32"),
            (KERAS_TF_HEAD + POLICY + fit + "final = lambda: 0\n").replace("{{POLICY}}", "mixed_bfloat16"),
            torch + AUTOCAST]


def main():
    import boundfit as bf
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 90
    threads = bf.runtime.blas_runtime.threads()
    models = (
        ("seed MLP, batch 256", SEQ_FIT, SEQ_TORCH, dict(B=256, STEPS=4, SHAPE=(10000,), LAYERS=MLP, TORCH_NET=TORCH_MLP)),
        ("seed CNN, 100x100x3, batch 128", SEQ_FIT, SEQ_TORCH,
         dict(B=128, STEPS=4, SHAPE=(100, 100, 3), LAYERS=CNN, TORCH_NET=TORCH_CNN)),
        ("CIFAR-sized ResNet, 32x32x3, widths 16-32-32, batch 64", bench_resnet.FIT, bench_resnet.TORCH,
         dict(H=32, C=3, B=64, STEPS=10, WIDTHS=(16, 32, 32))),
        ("Transformer block, batch 32, 128 tokens, 256 wide, 4 heads, ff 1024", bench_transformer.FIT,
         bench_transformer.TORCH, dict(B=32, T=128, D=256, H=4, FF=1024, STEPS=4)))
    print(f"{threads} threads; PyTorch: {TORCH_PYTHON}")
    for name, fit, torch, kw in models:
        codes = [c.format(THREADS=threads, CAP=cap, **kw) for c in sides(fit, torch)]
        report(f"{name} ({rounds} rounds of {kw['STEPS']} steps each side, in turn)", kw["B"] * kw["STEPS"],
               run_sides(codes, rounds, pythons=[sys.executable] * 3 + [TORCH_PYTHON]),
               names=("bf mixed", "bf float32", "Keras/TF mixed", "torch autocast"),
               memory=("planned activations", "planned activations", None, None))


if __name__ == "__main__":
    main()
