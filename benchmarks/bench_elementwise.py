"""Activation kernels (forward + backward of an Activation layer inside a
small model's training step) and the layout / preprocessing layers: boundfit
against PyTorch on the CPU in the same process. Prints samples/s and the
ratio (boundfit / PyTorch; above 1 is faster). No assertions: numbers only.

    python benchmarks/bench_elementwise.py [activation ...]   (only those rows)
"""

import sys
import time

import numpy as np

import boundfit as bf
from boundfit import layers


def bench_boundfit(make, x, y, steps):
    m = make()
    m.compile(optimizer="sgd", loss="mse")
    m.fit(x, y, batch_size=len(x), epochs=1, verbose=0)  # warm-up
    t = time.perf_counter()
    m.fit(np.concatenate([x] * steps), np.concatenate([y] * steps), batch_size=len(x), epochs=1, shuffle=False,
          verbose=0)
    return steps * len(x) / (time.perf_counter() - t)


def bench_torch(make, x, y, steps):
    import torch
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for k in range(steps + 1):
        if k == 1:
            t = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xt), yt)
        loss.backward()
        opt.step()
    return steps * len(x) / (time.perf_counter() - t)


def main():
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: nothing to compare with")
        return
    torch.set_num_threads(max(1, bf.runtime.blas_runtime.threads()))
    B, D = 256, 512
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, D)).astype(np.float32)
    y = rng.standard_normal((B, D)).astype(np.float32)
    tacts = {"gelu": torch.nn.GELU(), "silu": torch.nn.SiLU(), "elu": torch.nn.ELU(), "selu": torch.nn.SELU(),
             "leaky_relu": torch.nn.LeakyReLU(0.2), "softplus": torch.nn.Softplus(),
             "softsign": torch.nn.Softsign(), "hard_sigmoid": torch.nn.Hardsigmoid()}
    print(f"{'layer':14s} {'boundfit/s':>12s} {'torch/s':>12s} {'ratio':>6s}   (Dense({D}) -> act -> Dense({D}), "
          f"batch {B})")
    def row(name, tact):
        b = bench_boundfit(lambda: bf.Sequential([layers.Input((D,)), layers.Dense(D), layers.Activation(name),
                                                   layers.Dense(D)]), x, y, 20)
        t = bench_torch(lambda: torch.nn.Sequential(torch.nn.Linear(D, D), tact, torch.nn.Linear(D, D)), x, y, 20)
        return b, t

    row("relu", torch.nn.ReLU())  # warms both libraries' thread pools up; not printed
    only = sys.argv[1:]
    for name, tact in tacts.items():
        if only and name not in only:
            continue
        b, t = row(name, tact)
        print(f"{name:14s} {b:12.0f} {t:12.0f} {b / t:6.2f}")
    if only:
        return
    xi = rng.standard_normal((64, 32, 32, 3)).astype(np.float32)
    yi = rng.standard_normal((64, 8)).astype(np.float32)
    b = bench_boundfit(lambda: bf.Sequential([layers.Input((32, 32, 3)), layers.ZeroPadding2D(2),
                                              layers.UpSampling2D(2), layers.Permute((2, 1, 3)), layers.Flatten(),
                                              layers.Dense(8)]), xi, yi, 10)
    t = bench_torch(lambda: torch.nn.Sequential(torch.nn.ZeroPad2d(2), torch.nn.Upsample(scale_factor=2),
                                                torch.nn.Flatten(), torch.nn.Linear(3 * 72 * 72, 8)),
                    xi.transpose(0, 3, 1, 2).copy(), yi, 10)
    print(f"{'pad+upsample':14s} {b:12.0f} {t:12.0f} {b / t:6.2f}   (64 x 32x32x3, then Dense(8))")


if __name__ == "__main__":
    main()
