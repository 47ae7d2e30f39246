"""Training-step throughput of boundfit against PyTorch and Keras (when
installed) on (a) a small MLP 100 -> 64 -> 1, batch 32 (per-step overhead) and
(b) 10000 -> 5000 -> 2000 -> 10, batch 256 (GEMM bound), plus the sgemm rate of
the same shapes and the share of step time in GEMM and in the optimizer.

    python benchmarks/bench_mlp.py [--quick]
"""

import os
import sys
import time

import numpy as np

import boundfit as bf
from boundfit import _core, layers


def bench_boundfit(sizes, batch, steps, loss):
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Dense(sizes[1], activation="relu", input_shape=(sizes[0],))] +
                      [layers.Dense(s, activation="relu") for s in sizes[2:-1]] + [layers.Dense(sizes[-1])])
    m.compile(optimizer="adam", loss=loss)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch * steps, sizes[0])).astype(np.float32)
    y = (rng.standard_normal((batch * steps, 1)).astype(np.float32) if loss == "mse"
         else rng.integers(0, sizes[-1], batch * steps))
    m.fit(x[:batch * 2], y[:batch * 2], batch_size=batch, epochs=1, verbose=0)  # warm-up
    t0 = time.perf_counter()
    m.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=True)
    dt = time.perf_counter() - t0
    return batch * steps / dt, dt / steps


def bench_torch(sizes, batch, steps, loss):
    try:
        import torch
    except Exception as e:  # not installed, or its CUDA libraries missing
        return None, f"PyTorch unavailable ({type(e).__name__})"
    torch.manual_seed(0)
    mods = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        mods += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    net = torch.nn.Sequential(*mods, torch.nn.Linear(sizes[-2], sizes[-1]))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    lf = torch.nn.MSELoss() if loss == "mse" else torch.nn.CrossEntropyLoss()
    x = torch.randn(batch * steps, sizes[0])
    y = torch.randn(batch * steps, 1) if loss == "mse" else torch.randint(0, sizes[-1], (batch * steps,))

    def run(n):
        perm = torch.randperm(batch * n)
        for i in range(n):
            idx = perm[i * batch:(i + 1) * batch]
            opt.zero_grad()
            lf(net(x[idx]), y[idx]).backward()
            opt.step()
    run(2)
    t0 = time.perf_counter()
    run(steps)
    return batch * steps / (time.perf_counter() - t0), "PyTorch"


def bench_keras(sizes, batch, steps, loss):
    os.environ.setdefault("KERAS_BACKEND", "jax")  # Keras 3 on JAX's CPU backend (no TensorFlow needed)
    try:
        import keras
    except Exception as e:
        return None, f"Keras unavailable ({type(e).__name__})"
    m = keras.Sequential([keras.Input((sizes[0],))] + [keras.layers.Dense(s, activation="relu") for s in sizes[1:-1]] +
                         [keras.layers.Dense(sizes[-1])])
    m.compile(optimizer="adam", loss=loss if loss == "mse" else "sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch * steps, sizes[0])).astype(np.float32)
    y = rng.standard_normal((batch * steps, 1)) if loss == "mse" else rng.integers(0, sizes[-1], batch * steps)
    m.fit(x[:batch * 2], y[:batch * 2], batch_size=batch, verbose=0)
    t0 = time.perf_counter()
    m.fit(x, y, batch_size=batch, verbose=0)
    return batch * steps / (time.perf_counter() - t0), "Keras"


def gemm_seconds(sizes, batch):
    """sgemm time of one training step's GEMMs (forward, dW, dX per layer) on the engine's BLAS."""
    t = 0.0
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        iters = 3 if a * b > 1e6 else 200
        t += _core.bench_sgemm(batch, b, a, iters)          # forward  (B,a)@(a,b)
        t += _core.bench_sgemm(a, b, batch, iters)          # dW       (a,B)@(B,b)
        if i:
            t += _core.bench_sgemm(batch, a, b, iters)      # dX       (B,b)@(b,a)
    return t


def main(argv):
    quick = "--quick" in argv
    cases = [("(a) MLP 100-64-1, batch 32", (100, 64, 1), 32, 3000 if not quick else 300, "mse"),
             ("(b) MLP 10000-5000-2000-10, batch 256", (10000, 5000, 2000, 10), 256, 12 if not quick else 3,
              "sparse_categorical_crossentropy")]
    print(f"BLAS: {_core.build_info()['blas']}")
    for name, sizes, batch, steps, loss in cases:
        sps, step_s = bench_boundfit(sizes, batch, steps, loss)
        nparams = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        flops = 6 * batch * sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
        g = gemm_seconds(sizes, batch)
        adam = _core.bench_adam(nparams, 3 if nparams > 1e6 else 200)
        print(f"\n{name}: {nparams:,} parameters")
        print(f"  boundfit   {sps:12,.0f} samples/s   {step_s * 1e3:8.3f} ms/step")
        print(f"  sgemm rate of these shapes: {flops / g / 1e9:6.1f} GFLOP/s; GEMM share of step {g / step_s:5.1%}, "
              f"Adam update share {adam / step_s:5.1%}")
        for fn in (bench_torch, bench_keras):
            other, label = fn(sizes, batch, steps, loss)
            if other is None:
                print(f"  {label}")
            else:
                print(f"  {label:<10} {other:12,.0f} samples/s   ratio boundfit/{label} = {sps / other:5.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
