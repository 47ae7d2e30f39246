"""GPU training throughput and peak device memory, boundfit's CUDA backend
against PyTorch on cuda, on the models of bench_mlp.py and bench_cnn.py:

  (a) MLP 100-64-1, batch 32 (per-step overhead; target ratio >= 3.0)
  (b) MLP 10000-5000-2000-10, batch 256 (GEMM bound; target >= 1.0)
  (c) 100x100x3 -> Conv2D(32, 3x3, relu) -> MaxPool(2) -> Flatten -> Dense(128, relu)
      -> Dense(10, softmax), batch 64 (target >= 1.0)
  (d) digits CNN 8x8x1 -> Conv2D(32, same) -> MaxPool -> Dense(64) -> 10, batch 64 (no target)

Both sides train on the same seeded data with Adam (lr 1e-3, eps 1e-7), the same
batch size and shuffling every epoch, in exact FP32 (TF32 off in PyTorch, as
boundfit uses none). Samples/s are taken after a warm-up; PyTorch is synchronized
before the clock is read. PyTorch keeps the data set resident on the GPU (its
best case: no per-step input copy); boundfit is fed host NumPy arrays, as a user
would, and copies each batch itself.

Memory: for PyTorch, torch.cuda.max_memory_reserved() after
torch.cuda.reset_peak_memory_stats(), less what the resident data set holds; for
boundfit, the plan's device bytes (model.estimate_memory(batch, device="cuda"))
and the measured growth of used device memory (cudaMemGetInfo through
boundfit._core.device_mem_info, read before the first fit and from a callback
during both fits). Each framework and model runs in its own subprocess, so
neither sees the other's caches or libraries.

    python benchmarks/bench_gpu.py [--quick]

Without a usable GPU (no "ok ... cuda:0" line in boundfit._core.cuda_report(),
or torch.cuda.is_available() False) it prints why and exits 0. Dry run of the
script's logic on a machine without a GPU (a couple of steps, both sides on the
CPU, numbers meaningless):

    python benchmarks/bench_gpu.py --device cpu
"""

import argparse
import json
import subprocess
import sys
import time

import numpy as np

# name: (label, kind, shape, batch, batches in the data set, epochs, quick epochs, quick batches, target)
CASES = {
    "mlp_small": ("(a) MLP 100-64-1, batch 32", "mlp", (100, 64, 1), 32, 3000, 1, 1, 300, 3.0),
    "mlp_large": ("(b) MLP 10000-5000-2000-10, batch 256", "mlp", (10000, 5000, 2000, 10), 256, 32, 8, 2, 8, 1.0),
    "cnn_keras": ("(c) CNN 100x100x3 Conv2D(32)-MaxPool-Dense(128)-10, batch 64", "cnn", (100, 3, 128, "valid"),
                  64, 32, 8, 2, 8, 1.0),
    "cnn_digits": ("(d) digits CNN 8x8x1 Conv2D(32,same)-MaxPool-Dense(64)-10, batch 64", "cnn", (8, 1, 64, "same"),
                   64, 500, 2, 1, 50, None),
}
DRY_BATCHES, DRY_EPOCHS = 2, 1


def loss_of(case):
    return "mse" if CASES[case][2][-1] == 1 else "sparse_categorical_crossentropy"


def make_data(case, rows):
    """Seeded float32 inputs (NHWC for CNNs) and targets; both frameworks use these."""
    _, kind, shape, *_ = CASES[case]
    rng = np.random.default_rng(0)
    if kind == "mlp":
        x = rng.standard_normal((rows, shape[0]), dtype=np.float32)
    else:
        x = rng.random((rows, shape[0], shape[0], shape[1]), dtype=np.float32)
    if loss_of(case) == "mse":
        return x, rng.standard_normal((rows, 1), dtype=np.float32)
    return x, rng.integers(0, 10, rows)


# ---------------------------------------------------------------- boundfit

def build_boundfit(case):
    import boundfit as bf
    from boundfit import layers
    _, kind, shape, *_ = CASES[case]
    if kind == "mlp":
        hidden = [layers.Dense(shape[1], activation="relu", input_shape=(shape[0],))]
        hidden += [layers.Dense(s, activation="relu") for s in shape[2:-1]]
        m = bf.Sequential(hidden + [layers.Dense(shape[-1])])
    else:
        h, c, dense, pad = shape
        m = bf.Sequential([layers.Conv2D(32, (3, 3), padding=pad, activation="relu", input_shape=(h, h, c)),
                           layers.MaxPooling2D((2, 2)), layers.Flatten(), layers.Dense(dense, activation="relu"),
                           layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss=loss_of(case))
    return m


def _mem_device(device):
    return "cuda:0" if device == "cuda" else device


def free_device_bytes(device):
    from boundfit import _core
    return _core.device_mem_info(_mem_device(device))[0]


def _peak_callback(device):
    import boundfit as bf

    class DevicePeak(bf.callbacks.Callback):
        """Lowest free device memory seen at the batch hooks (between chunks of steps)."""
        min_free = None

        def on_train_batch_end(self, batch, logs=None):
            free = free_device_bytes(device)
            self.min_free = free if self.min_free is None else min(self.min_free, free)

    return DevicePeak()


def bench_boundfit(case, batches, epochs, device):
    import boundfit as bf
    batch = CASES[case][3]
    bf.utils.set_random_seed(0)
    m = build_boundfit(case)
    x, y = make_data(case, batch * batches)
    plan = m.estimate_memory(batch_size=batch, device=device)
    free_device_bytes(device)                      # opens the backend (context, handles) first
    base, peak = free_device_bytes(device), _peak_callback(device)
    m.fit(x[:batch * 2], y[:batch * 2], batch_size=batch, verbose=0, device=device, callbacks=[peak])  # warm-up
    t0 = time.perf_counter()
    m.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, shuffle=True, device=device, callbacks=[peak])
    dt = time.perf_counter() - t0
    growth = base - peak.min_free if peak.min_free is not None else None
    return {"sps": batch * batches * epochs / dt, "plan": plan.device_bytes, "growth": growth}


# ---------------------------------------------------------------- PyTorch

def build_torch(case, torch):
    _, kind, shape, *_ = CASES[case]
    nn = torch.nn
    if kind == "mlp":
        mods = []
        for a, b in zip(shape[:-2], shape[1:-1]):
            mods += [nn.Linear(a, b), nn.ReLU()]
        return nn.Sequential(*mods, nn.Linear(shape[-2], shape[-1]))
    h, c, dense, pad = shape
    side = h // 2 if pad == "same" else (h - 2) // 2
    return nn.Sequential(nn.Conv2d(c, 32, 3, padding=1 if pad == "same" else 0), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * side * side, dense), nn.ReLU(), nn.Linear(dense, 10))


def torch_data(case, rows, torch, dev):
    x, y = make_data(case, rows)
    if x.ndim == 4:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))   # NHWC -> NCHW, same values
    return torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev)


def bench_torch(case, batches, epochs, device):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    batch, dev = CASES[case][3], torch.device(device)
    torch.manual_seed(0)
    x, y = torch_data(case, batch * batches, torch, dev)
    if cuda:
        sync()
        data_reserved = torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
    net = build_torch(case, torch).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    lf = torch.nn.MSELoss() if loss_of(case) == "mse" else torch.nn.CrossEntropyLoss()

    def run(n_batches, n_epochs):
        for _ in range(n_epochs):
            perm = torch.randperm(n_batches * batch, device=dev)
            for i in range(n_batches):
                idx = perm[i * batch:(i + 1) * batch]
                opt.zero_grad(set_to_none=True)
                lf(net(x[idx]), y[idx]).backward()
                opt.step()

    run(2, 1)  # warm-up
    sync()
    t0 = time.perf_counter()
    run(batches, epochs)
    sync()
    dt = time.perf_counter() - t0
    peak = torch.cuda.max_memory_reserved() - data_reserved if cuda else None
    return {"sps": batch * batches * epochs / dt, "peak": peak}


# ---------------------------------------------------------------- driver

def gpu_skip_reason():
    """None when both boundfit and PyTorch can use cuda:0, else a one-line reason."""
    from boundfit import _core
    try:
        lines = _core.cuda_report().splitlines()
    except Exception as e:
        return f"the boundfit CUDA report failed: {e!r}"
    if not any(ln.startswith("ok") and "cuda:0" in ln for ln in lines):
        problems = [" ".join(ln.split()[1:]) for ln in lines if ln.startswith("PROBLEM")]
        return "boundfit: no usable GPU (cuda:0): " + ("; ".join(problems) or "empty CUDA report")
    try:
        import torch
    except Exception as e:
        return f"PyTorch unavailable ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__} sees no usable GPU (torch.cuda.is_available() is False)"
    return None


def run_worker(framework, case, batches, epochs, device):
    """One framework on one model in a fresh interpreter: (result dict, None) or (None, error line)."""
    cmd = [sys.executable, __file__, "--worker", framework, "--case", case, "--batches", str(batches),
           "--epochs", str(epochs), "--device", device]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if out.returncode:
        tail = (out.stderr.strip() or out.stdout.strip() or f"exit status {out.returncode}").splitlines()[-1]
        return None, tail
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def mib(n):
    return "n/a" if n is None else f"{n / 2**20:9.1f} MiB"


def report(case, ours, theirs, err_bf, err_th, dry=False):
    label, target = CASES[case][0], CASES[case][8]
    print(label)
    if ours is None:
        print(f"  boundfit failed: {err_bf}")
    else:
        print(f"  boundfit {ours['sps']:12,.0f} samples/s   device plan {mib(ours['plan'])}, "
              f"measured growth {mib(ours['growth'])}")
    if theirs is None:
        print(f"  PyTorch failed: {err_th}")
    else:
        print(f"  PyTorch  {theirs['sps']:12,.0f} samples/s   peak reserved {mib(theirs['peak'])}")
    if ours is None or theirs is None:
        return
    ratio = ours["sps"] / theirs["sps"]
    if dry or target is None:
        verdict = "dry run" if dry else "no target"
    else:
        verdict = f"target >= {target:.1f}: {'met' if ratio >= target else 'below'}"
    print(f"  ratio samples/s boundfit/PyTorch {ratio:6.2f}x   ({verdict})")
    if theirs["peak"]:
        grown = "n/a" if ours["growth"] is None else f"{ours['growth'] / theirs['peak']:5.2f}x"
        print(f"  ratio peak memory boundfit/PyTorch: plan {ours['plan'] / theirs['peak']:5.2f}x, "
              f"measured {grown}")


def sizes_for(case, quick, device):
    """(batches in the data set, epochs)."""
    if device == "cpu":
        return DRY_BATCHES, DRY_EPOCHS
    _, _, _, _, batches, epochs, q_epochs, q_batches, _ = CASES[case]
    return (q_batches, q_epochs) if quick else (batches, epochs)


def parse(argv):
    p = argparse.ArgumentParser(description="boundfit CUDA vs PyTorch cuda: samples/s and peak device memory")
    p.add_argument("--quick", action="store_true", help="fewer steps")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help=argparse.SUPPRESS)  # cpu: dry run
    p.add_argument("--worker", choices=["boundfit", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--case", choices=list(CASES), help=argparse.SUPPRESS)
    p.add_argument("--batches", type=int, help=argparse.SUPPRESS)
    p.add_argument("--epochs", type=int, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def worker(args):
    fn = bench_boundfit if args.worker == "boundfit" else bench_torch
    print(json.dumps(fn(args.case, args.batches, args.epochs, args.device)))


def main(argv):
    args = parse(argv)
    if args.worker:
        return worker(args)
    if args.device == "cuda":
        reason = gpu_skip_reason()
        if reason:
            print(f"bench_gpu: skipped, {reason}")
            return
    else:
        print("bench_gpu: dry run on the CPU (--device cpu): checks the script, the numbers mean nothing")
    for case in [args.case] if args.case else CASES:   # --case: one case only (gpu_check.sh's dry run)
        batches, epochs = sizes_for(case, args.quick, args.device)
        ours, err_bf = run_worker("boundfit", case, batches, epochs, args.device)
        theirs, err_th = run_worker("torch", case, batches, epochs, args.device)
        report(case, ours, theirs, err_bf, err_th, dry=args.device == "cpu")


if __name__ == "__main__":
    main(sys.argv[1:])
