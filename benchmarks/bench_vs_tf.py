"""Convolution-heavy and attention training throughput (issue 25): boundfit
against Keras 3 on TensorFlow (oneDNN) and on JAX, and PyTorch CPU, interleaved round by
round (benchmarks/interleave.py), on the CIFAR-sized ResNet of
bench_resnet.py, the 100x100x3 Conv2D(32) seed CNN of bench_cnn.py and the
Transformer block of bench_transformer.py. A second boundfit side ("bf before")
runs an older build installed with `pip install --target DIR` when
BF_BENCH_BEFORE_SITE=DIR, else this build with BF_CPU_ISA=scalar, which
keeps every Conv2D on im2col + OpenBLAS GEMM (the path before the direct
AVX-512 / AVX2 kernels), so one run gives the before and after columns under
the same machine load. BF_CPU_ISA=avx2 in the environment runs the main
boundfit side on the AVX2 kernels (OpenBLAS still picks its AVX-512
kernels: add OPENBLAS_CORETYPE=Haswell, and ONEDNN_MAX_CPU_ISA=AVX2 for
TensorFlow's oneDNN, to run every side on AVX2). Prints the CPU, the
instruction set each boundfit side ran, and the load average before and
after each model (other users' work on a shared machine shows there).

    python benchmarks/bench_vs_tf.py [rounds] [resnet,cnn,transformer]   (needs tensorflow / torch for those sides)

After each model: every side's median CPU seconds (all its threads, spin
included) per 1000 samples, which a busy machine moves less than the wall
time, and its median GFLOP/s as a fraction of the machine's peak. FLOPs
are the useful ones of a training step: 2 per multiply-add of each Conv2D,
Dense and attention product forward, twice that backward (data and weights
gradients), once for a layer fed by the model's input (no data gradient);
BatchNorm, pooling, softmax, LayerNorm and the optimizer not counted. Peak =
cores x clock (/proc/cpuinfo's MHz, the VM's nominal clock; turbo not seen)
x FLOPs a cycle a core: 64 on AVX-512 (2 FMA units x 16 floats x 2), 32 on
AVX2 (2 x 8 x 2).
"""

import os
import sys

import bench_cnn
import bench_resnet
import bench_transformer
from interleave import BOUNDFIT_HEAD, report, run_sides

KERAS_TF_HEAD = """
import os
os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras as K
from keras import layers as L
"""
KERAS_JAX_HEAD = """
import os
os.environ["KERAS_BACKEND"] = "jax"
import keras as K
from keras import layers as L
"""
# the "before" side: an older boundfit installed into the folder BF_BENCH_BEFORE_SITE
# (pip install --target DIR, e.g. of the commit before issue 25), else this build with
# BF_CPU_ISA=scalar (im2col + GEMM for every conv)
BEFORE_SITE = os.environ.get("BF_BENCH_BEFORE_SITE")
BEFORE_HEAD = (f"import sys\nsys.path.insert(0, {BEFORE_SITE!r})\n" if BEFORE_SITE else
               'import os\nos.environ["BF_CPU_ISA"] = "scalar"\n') + BOUNDFIT_HEAD


def cpu():
    flags, name = set(), "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and name == "?":
                    name = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    isa = "avx512" if {"avx512f", "avx512vl"} <= flags else "avx2" if {"avx2", "fma"} <= flags else "scalar"
    forced = os.environ.get("BF_CPU_ISA")
    if forced in ("scalar", "avx2", "avx512") and ["scalar", "avx2", "avx512"].index(forced) < ["scalar", "avx2", "avx512"].index(isa):
        isa = forced
    return name, os.cpu_count(), isa


def flops_resnet(H, C, widths):
    """useful FLOPs a training sample: 3x3 same convs and 1x1 shortcuts at HxH (no stride), Dense to 10"""
    f, c, first = 0, C, True
    for w in widths:
        convs = [(9 * c, w, first), (9 * w, w, False), (c, w, first)]
        f += sum(2 * H * H * k * n * (2 if inp else 3) for k, n, inp in convs)
        c, first = w, False
    return f + 2 * c * 10 * 3


def flops_cnn(H, C):
    """Conv2D(32, 3x3 valid) on the input, MaxPool 2, Dense(128), Dense(10)"""
    o = H - 2
    flat = (o // 2) * (o // 2) * 32
    return 2 * o * o * 9 * C * 32 * 2 + 2 * flat * 128 * 3 + 2 * 128 * 10 * 3


def flops_transformer(T, D, H, FF):
    """a sample's 3 projections (fed by the input), scores and weights @ V (H heads of D/H), the output
    projection, the two feed-forward Denses, Flatten -> Dense(10)"""
    proj = 3 * 2 * T * D * D * 2
    att = 2 * (2 * H * T * T * (D // H)) * 3
    rest = 2 * T * D * D * 3 + 2 * 2 * T * D * FF * 3 + 2 * T * D * 10 * 3
    return proj + att + rest


def peak_flops(ncpu, isa):
    mhz = 0.0
    try:
        with open("/proc/cpuinfo") as f:
            mhz = max(float(line.split(":")[1]) for line in f if line.startswith("cpu MHz"))
    except (OSError, ValueError):
        pass
    per_cycle = 64 if isa == "avx512" else 32 if isa == "avx2" else 8
    return ncpu * mhz * 1e6 * per_cycle, mhz


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else ["resnet", "cnn", "transformer"]
    name, ncpu, isa = cpu()
    peak, mhz = peak_flops(ncpu, isa)
    print(f"peak: {ncpu} cores x {mhz:.0f} MHz x {peak / max(ncpu * mhz * 1e6, 1):.0f} FLOP/cycle = "
          f"{peak / 1e9:.1f} GFLOP/s ({isa})")
    before = f"the build in {BEFORE_SITE}" if BEFORE_SITE else "this build, BF_CPU_ISA=scalar = im2col + GEMM"
    print(f"CPU: {name}, {ncpu} cores; boundfit kernels: {isa} (bf before: {before}); "
          f"Keras 3 on TensorFlow (oneDNN) and on JAX (XLA); PyTorch CPU")
    names = ("boundfit", "bf before", "Keras/TF", "Keras/JAX", "PyTorch")
    cases = [
        ("resnet", "CIFAR-sized ResNet, 32x32x3, widths 16-32-32, batch 64",
         dict(H=32, C=3, B=64, STEPS=30, WIDTHS=(16, 32, 32)), bench_resnet.FIT, bench_resnet.TORCH,
         flops_resnet(32, 3, (16, 32, 32))),
        ("cnn", "seed CNN, 100x100x3 -> Conv2D(32) -> MaxPool -> Dense(128) -> 10, batch 64",
         dict(H=100, C=3, B=64, STEPS=8, SMALL=0), bench_cnn.FIT + "final = peak_growth\n", bench_cnn.TORCH,
         flops_cnn(100, 3)),
        ("transformer", "Transformer block: batch 32, 128 tokens, 256 wide, 4 heads, ff 1024",
         dict(B=32, T=128, D=256, H=4, FF=1024, STEPS=8, THREADS=2),
         bench_transformer.FIT + "final = peak_growth\n", bench_transformer.TORCH, flops_transformer(128, 256, 4, 1024)),
    ]
    for key, title, kw, fit, torch, flops in cases:
        if key not in only:
            continue
        before = load()
        codes = [BOUNDFIT_HEAD + fit, BEFORE_HEAD + fit, KERAS_TF_HEAD + fit, KERAS_JAX_HEAD + fit, torch]
        cpu_s = []
        sides = run_sides([c.format(**kw) for c in codes], rounds, cpu=cpu_s)
        samples = kw["B"] * kw["STEPS"]
        report(f"{title} ({rounds} rounds of {kw['STEPS']} steps each side, in turn; {before} -> {load()})",
               samples, sides, names=names, memory=(None,) * len(names))
        print(f"  {flops / 1e6:.0f} MFLOP a sample")
        for who, side, c in zip(names, sides, cpu_s):
            if side[0] is not None:
                rate = flops * samples / side[1]
                print(f"  {who:9s} CPU {1000 * c / samples:7.2f} s per 1000 samples (median); "
                      f"{rate / 1e9:6.1f} GFLOP/s median = {100 * rate / peak:4.1f}% of peak")


if __name__ == "__main__":
    main()
