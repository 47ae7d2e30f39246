"""Shuffled batches per second from a memory-mapped .npy, boundfit's engine
(gather + dtype conversion in its prefetch thread; every reader
sees the file's pages already mapped) against PyTorch's
DataLoader (per-sample and whole-batch indexing) and tf.data where installed;
the same for a two-input model fed a uint8 image memmap and a float64 table
memmap in place (each gathered into its columns of the packed batch); and the
share of fit time spent waiting for data.

    python benchmarks/bench_data.py [rows]

`images [n] [workers]`: images per second decoding a folder of JPEGs and
feeding a small CNN one epoch: boundfit's image_dataset_from_directory
(worker threads) against Keras 3's on tf.data (TensorFlow, its own
parallel map) and, where PyTorch is installed, a DataLoader with the same
workers (Pillow decode, as torchvision's ImageFolder), run in a child process
of this interpreter or, without torch here, BENCH_TORCH_PYTHON or the system
python3 (Debian's python3-torch).

    python benchmarks/bench_data.py images [2000] [4]

Measured (2026-11-27, the shared 2-core CPU box at load average 3.5-5.5, no
PyTorch installed; tf.data's rate varied 760-1820 images/s between runs):
`images 1000 4`, boundfit 660-720 images/s with the NumPy resize (0.39-0.93x
tf.data), 1250-1580 with the C resize (_core.image_resize: 0.78-1.86x).
The same at 256x256 -> 180x180 (400 JPEGs): 73 -> 303 images/s, 0.47x ->
2.17x tf.data. Per 96x96 JPEG the Pillow decode (~0.6 ms) now dominates the
resize (~0.05 ms).
2026-11-28, load average 9.5-10.5 (other engineers' builds), still no
PyTorch: `images 1000 4`, boundfit 360 images/s, tf.data 318 (1.13x).
2026-11-28, load average ~8 (tests running), Debian's PyTorch 1.13 in the
system python3: `images 600 2`, boundfit 359 images/s, tf.data 611 (0.59x),
PyTorch DataLoader 60.5 (5.9x; its 2 worker processes start per epoch).
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


SIZE, IMG_BATCH = 64, 32


def make_jpeg_folder(root, n):
    from PIL import Image
    rng = np.random.default_rng(0)
    for c in range(2):
        os.makedirs(os.path.join(root, str(c)))
        for i in range(n // 2):
            a = np.clip(rng.normal(80 + 80 * c, 50, (96, 96, 3)), 0, 255).astype(np.uint8)   # resized to 64 x 64
            Image.fromarray(a).save(os.path.join(root, str(c), f"{i}.jpg"), quality=90)


def small_cnn_boundfit():
    m = bf.Sequential([layers.Rescaling(1 / 255, input_shape=(SIZE, SIZE, 3)), layers.Conv2D(8, 3, strides=2,
                       activation="relu"), layers.GlobalAveragePooling2D(), layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def boundfit_images(root, n, workers):
    ds = bf.utils.image_dataset_from_directory(root, image_size=(SIZE, SIZE), batch_size=IMG_BATCH, seed=0,
                                               workers=workers, verbose=False)
    m = small_cnn_boundfit()
    m.fit(ds, epochs=1, steps_per_epoch=4, verbose=0)   # warm: the engine built, the files' pages cached
    t0 = time.perf_counter()
    m.fit(ds, epochs=1, verbose=0)
    return n / (time.perf_counter() - t0)


def keras_tf_images(root, n):
    """Keras 3 on TensorFlow in a child process (the backend is chosen at import)."""
    import subprocess
    code = f"""
import os, time
os.environ["KERAS_BACKEND"] = "tensorflow"; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras
from keras import layers
ds = keras.utils.image_dataset_from_directory({root!r}, image_size=({SIZE}, {SIZE}), batch_size={IMG_BATCH}, seed=0,
                                              verbose=False)
m = keras.Sequential([keras.Input(({SIZE}, {SIZE}, 3)), layers.Rescaling(1 / 255),
                      layers.Conv2D(8, 3, strides=2, activation="relu"), layers.GlobalAveragePooling2D(),
                      layers.Dense(2, activation="softmax")])
m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
m.fit(ds.take(4), epochs=1, verbose=0)
t0 = time.perf_counter()
m.fit(ds, epochs=1, verbose=0)
print("RATE", {n} / (time.perf_counter() - t0))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode:
        return None, f"Keras on tf.data unavailable ({r.stderr.strip().splitlines()[-1] if r.stderr else r.returncode})"
    return float(r.stdout.split("RATE")[1]), "Keras 3 on TensorFlow, tf.data"


def _python_with_torch():
    """This interpreter if it imports torch, else BENCH_TORCH_PYTHON or the system's python3 if they do (Debian's
    python3-torch), else None"""
    import shutil
    import subprocess
    for exe in (sys.executable, os.environ.get("BENCH_TORCH_PYTHON"), shutil.which("python3", path="/usr/bin")):
        if exe and subprocess.run([exe, "-c", "import torch, PIL, numpy"], capture_output=True).returncode == 0:
            return exe
    return None


def torch_images(root, n, workers):
    """A PyTorch DataLoader over the folder (Pillow decode and bilinear resize, as torchvision's ImageFolder) feeding
    the same CNN, in a child process of an interpreter that has torch."""
    import subprocess
    exe = _python_with_torch()
    if exe is None:
        return None, "PyTorch unavailable (no interpreter here imports torch, PIL and numpy)"
    code = f"""
import os, time
import numpy as np, torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
torch.set_num_threads(max(1, os.cpu_count() or 1))
root = {root!r}
files = [(os.path.join(root, c, f), int(c)) for c in sorted(os.listdir(root)) for f in os.listdir(os.path.join(root, c))]
class Folder(Dataset):
    def __len__(self):
        return len(files)
    def __getitem__(self, i):
        p, label = files[i]
        img = Image.open(p).convert("RGB").resize(({SIZE}, {SIZE}), Image.BILINEAR)
        return torch.from_numpy(np.asarray(img, dtype=np.float32)).permute(2, 0, 1) / 255, label
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                          torch.nn.Flatten(), torch.nn.Linear(8, 2))
opt = torch.optim.Adam(net.parameters())
dl = DataLoader(Folder(), batch_size={IMG_BATCH}, shuffle=True, num_workers={workers})
t0 = time.perf_counter()
for x, y in dl:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
print("RATE", {n} / (time.perf_counter() - t0), torch.__version__)
"""
    r = subprocess.run([exe, "-c", code], capture_output=True, text=True)
    if r.returncode:
        return None, f"PyTorch unavailable ({r.stderr.strip().splitlines()[-1] if r.stderr else r.returncode})"
    rate, version = r.stdout.split("RATE")[1].split()
    return float(rate), f"PyTorch {version} DataLoader ({workers} workers, Pillow decode)"


def images(argv):
    n = int(argv[0]) if argv else 2000
    workers = int(argv[1]) if len(argv) > 1 else 4
    with tempfile.TemporaryDirectory() as d:
        make_jpeg_folder(d, n)
        print(f"{n} JPEGs of 96x96 resized to {SIZE}x{SIZE}, batches of {IMG_BATCH}, one epoch of a small CNN")
        ours = boundfit_images(d, n, workers)
        print(f"  boundfit image_dataset_from_directory ({workers} workers) {ours:10.1f} images/s")
        for other, label in (keras_tf_images(d, n), torch_images(d, n, workers)):
            print(f"  {label}" if other is None else
                  f"  {label:<40} {other:10.1f} images/s   ratio boundfit/them = {ours / other:6.2f}x")


def main(argv):
    if argv and argv[0] == "images":
        return images(argv[1:])
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
