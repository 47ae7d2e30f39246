"""Shuffled batches per second from a memory-mapped .npy, boundfit's engine
(gather + dtype conversion in its prefetch thread; every reader
sees the file's pages already mapped) against PyTorch's
DataLoader (per-sample and whole-batch indexing) and tf.data where installed;
the same for a two-input model fed a uint8 image memmap and a float64 table
memmap in place (each gathered into its columns of the packed batch); and the
share of fit time spent waiting for data.

    python benchmarks/bench_data.py [rows]
"""

import os
import sys
import tempfile
import time

import numpy as np

import boundfit as bf
from boundfit import layers

BATCH, COLS = 256, 3072


def make(path, rows):
    x = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, COLS))
    for i in range(0, rows, 8192):
        x[i:i + 8192] = np.random.default_rng(i).standard_normal((min(8192, rows - i), COLS), dtype=np.float32)
    x.flush()
    del x


def boundfit_batches(x, y):
    """fit of a model too small to matter: the step is the batch gather."""
    m = bf.Sequential([layers.Dense(1, input_shape=(COLS,))])
    m.compile(optimizer="sgd", loss="mse")
    m.fit(x, y, batch_size=BATCH, verbose=0)   # warm: page-cache pages mapped, as for the others after us
    t0 = time.perf_counter()
    m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=True, verbose=0)
    return (len(x) // BATCH) / (time.perf_counter() - t0)


def torch_batches(x, y, whole_batches):
    try:
        import torch
        from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
    except Exception as e:
        return None, f"PyTorch unavailable ({type(e).__name__})"

    class Rows(Dataset):
        def __len__(self):
            return len(x)

        def __getitem__(self, i):
            return torch.from_numpy(np.asarray(x[i], dtype=np.float32)), torch.tensor(y[i, 0])

    class Batches(Dataset):
        def __len__(self):
            return len(x)

        def __getitem__(self, idx):
            idx = np.sort(np.asarray(idx))
            return torch.from_numpy(np.asarray(x[idx])), torch.from_numpy(np.asarray(y[idx]))

    if whole_batches:
        dl = DataLoader(Batches(), sampler=BatchSampler(RandomSampler(range(len(x))), BATCH, False), batch_size=None)
        label = "PyTorch DataLoader, batch indexing"
    else:
        dl = DataLoader(Rows(), batch_size=BATCH, shuffle=True)
        label = "PyTorch DataLoader, per-sample"
    t0 = time.perf_counter()
    n = sum(1 for _ in dl)
    return n / (time.perf_counter() - t0), label


def tf_batches(x, y):
    try:
        import tensorflow as tf
    except Exception as e:
        return None, f"tf.data unavailable ({type(e).__name__})"
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(BATCH)
    t0 = time.perf_counter()
    n = sum(1 for _ in ds)
    return n / (time.perf_counter() - t0), "tf.data"


def two_input_batches(img, tab, y):
    """Two sources of other dtypes, used in place; the step is the gather again."""
    i, t = bf.Input(img.shape[1:], name="image"), bf.Input(tab.shape[1:], name="table")
    m = bf.Model({"image": i, "table": t}, layers.Add()([layers.Dense(1)(layers.Flatten()(i)), layers.Dense(1)(t)]))
    m.compile(optimizer=bf.optimizers.SGD(1e-9), loss="mse")   # raw 0..255 pixels: a tiny step stays finite
    x = {"image": img, "table": tab}
    m.fit(x, y, batch_size=BATCH, verbose=0)
    t0 = time.perf_counter()
    m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=True, verbose=0)
    return (len(y) // BATCH) / (time.perf_counter() - t0)


def torch_two_input(img, tab, y):
    try:
        import torch
        from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
    except Exception as e:
        return None, f"PyTorch unavailable ({type(e).__name__})"

    class Batches(Dataset):
        def __len__(self):
            return len(y)

        def __getitem__(self, idx):
            idx = np.sort(np.asarray(idx))
            return (torch.from_numpy(np.asarray(img[idx])).float(), torch.from_numpy(np.asarray(tab[idx])).float(),
                    torch.from_numpy(y[idx]))

    dl = DataLoader(Batches(), sampler=BatchSampler(RandomSampler(range(len(y))), BATCH, False), batch_size=None)
    t0 = time.perf_counter()
    n = sum(1 for _ in dl)
    return n / (time.perf_counter() - t0), "PyTorch DataLoader, batch indexing"


def wait_fraction(x, y):
    m = bf.Sequential([layers.Dense(512, activation="relu", input_shape=(COLS,)), layers.Dense(1)])
    m.compile(optimizer="adam", loss="mse")
    m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    return m.data_wait_fraction


def main(argv):
    rows = int(argv[0]) if argv else 65536
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.npy")
        make(path, rows)
        x = np.load(path, mmap_mode="r")
        y = np.random.default_rng(0).standard_normal((rows, 1), dtype=np.float32)
        print(f"memmap {rows} x {COLS} float32 ({rows * COLS * 4 / 2**20:.0f} MiB), shuffled batches of {BATCH}")
        ours = boundfit_batches(x, y)
        print(f"  boundfit engine gather      {ours:10.1f} batches/s")
        for fn, args in ((torch_batches, (x, y, False)), (torch_batches, (x, y, True)), (tf_batches, (x, y))):
            other, label = fn(*args)
            print(f"  {label}" if other is None else
                  f"  {label:<34} {other:10.1f} batches/s   ratio boundfit/them = {ours / other:6.2f}x")
        print(f"  fit of {COLS}-512-1 (Adam) from the memmap: {wait_fraction(x, y):.2%} of fit time waiting for data")
        ipath, tpath = os.path.join(d, "img.npy"), os.path.join(d, "tab.npy")
        img = np.lib.format.open_memmap(ipath, mode="w+", dtype=np.uint8, shape=(rows, 32, 32, 3))
        img[:] = np.random.default_rng(1).integers(0, 256, img.shape, dtype=np.uint8)
        np.save(tpath, np.random.default_rng(2).standard_normal((rows, 16)))
        del img
        img, tab = np.load(ipath, mmap_mode="r"), np.load(tpath, mmap_mode="r")
        print(f"two inputs: uint8 memmap {img.shape} + float64 memmap {tab.shape}, shuffled batches of {BATCH}")
        ours = two_input_batches(img, tab, y)
        print(f"  boundfit engine gather      {ours:10.1f} batches/s")
        other, label = torch_two_input(img, tab, y)
        print(f"  {label}" if other is None else
              f"  {label:<34} {other:10.1f} batches/s   ratio boundfit/them = {ours / other:6.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
