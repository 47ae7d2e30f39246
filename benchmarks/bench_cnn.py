"""CNN training throughput, boundfit against PyTorch CPU (channels_last), on
the Keras 100x100x3 model of the conv issue and a small digits CNN; plus
boundfit's planned host bytes against PyTorch's measured peak RSS growth at
the same batch size (each framework in its own subprocess).

    python benchmarks/bench_cnn.py
"""

import subprocess
import sys
import textwrap

BF = textwrap.dedent("""
    import time, resource, numpy as np, boundfit as bf
    from boundfit import layers
    H, C, B, STEPS, SMALL = {H}, {C}, {B}, {STEPS}, {SMALL}
    if SMALL:
        m = bf.Sequential([layers.Conv2D(32, (3, 3), padding="same", activation="relu", input_shape=(H, H, C)),
                           layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(64, activation="relu"),
                           layers.Dense(10, activation="softmax")])
    else:
        m = bf.Sequential([layers.Conv2D(32, (3, 3), activation="relu", input_shape=(H, H, C)),
                           layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(128, activation="relu"),
                           layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(0).random((B * STEPS, H, H, C), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, B * STEPS)
    plan = m.estimate_memory(batch_size=B)
    m.fit(x[:B], y[:B], batch_size=B, verbose=0)
    t0 = time.perf_counter(); m.fit(x, y, batch_size=B, verbose=0); dt = time.perf_counter() - t0
    print(B * STEPS / dt, plan.host_bytes)
""")

TORCH = textwrap.dedent("""
    import time, resource, numpy as np, torch
    H, C, B, STEPS, SMALL = {H}, {C}, {B}, {STEPS}, {SMALL}
    torch.set_num_threads(2)
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
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
    step(0)
    t0 = time.perf_counter()
    for i in range(STEPS): step(i)
    dt = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r_data) * 1024
    print(B * STEPS / dt, peak)
""")


def run(code, **kw):
    out = subprocess.run([sys.executable, "-c", code.format(**kw)], capture_output=True, text=True, timeout=900)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    a, b = out.stdout.split()
    return float(a), float(b)


def main():
    for name, kw in (("Keras model, 100x100x3 -> Conv2D(32) -> MaxPool -> Dense(128) -> 10, batch 64",
                      dict(H=100, C=3, B=64, STEPS=8, SMALL=0)),
                     ("digits CNN, 8x8x1, batch 64", dict(H=8, C=1, B=64, STEPS=200, SMALL=1))):
        ours, plan = run(BF, **kw)
        theirs, peak = run(TORCH, **kw)
        print(name)
        print(f"  boundfit {ours:10.1f} samples/s, planned host bytes {plan / 2**20:8.1f} MiB")
        if theirs is None:
            print(f"  PyTorch unavailable: {peak}")
        else:
            print(f"  PyTorch  {theirs:10.1f} samples/s, peak RSS growth    {peak / 2**20:8.1f} MiB")
            print(f"  ratios: samples/s {ours / theirs:5.2f}x, memory {plan / max(peak, 1):5.2f}x of PyTorch's")


if __name__ == "__main__":
    main()
