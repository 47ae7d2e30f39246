"""Convolution-heavy and attention training throughput (issue 25): boundfit
against Keras 3 on TensorFlow (oneDNN) and PyTorch CPU, interleaved round by
round (benchmarks/interleave.py), on the CIFAR-sized ResNet of
bench_resnet.py, the 100x100x3 Conv2D(32) seed CNN of bench_cnn.py and the
Transformer block of bench_transformer.py. A second boundfit side ("bf before")
runs an older build installed with `pip install --target DIR` when
BF_BENCH_BEFORE_SITE=DIR, else this build with BF_CPU_ISA=scalar, which
keeps every Conv2D on im2col + OpenBLAS GEMM (the path before the direct
AVX-512 / AVX2 kernels), so one run gives the before and after columns under
the same machine load. BF_CPU_ISA=avx2 in the environment runs the main
boundfit side on the AVX2 kernels. Prints the CPU, the
instruction set each boundfit side ran, and the load average before and
after each model (other users' work on a shared machine shows there).

    python benchmarks/bench_vs_tf.py [rounds]     (needs tensorflow / torch for those sides)
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


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    name, ncpu, isa = cpu()
    before = f"the build in {BEFORE_SITE}" if BEFORE_SITE else "this build, BF_CPU_ISA=scalar = im2col + GEMM"
    print(f"CPU: {name}, {ncpu} cores; boundfit kernels: {isa} (bf before: {before}); "
          f"Keras 3 on TensorFlow (oneDNN); PyTorch CPU")
    names = ("boundfit", "bf before", "Keras/TF", "PyTorch")
    cases = [
        ("CIFAR-sized ResNet, 32x32x3, widths 16-32-32, batch 64",
         dict(H=32, C=3, B=64, STEPS=30, WIDTHS=(16, 32, 32)), bench_resnet.FIT, bench_resnet.TORCH),
        ("seed CNN, 100x100x3 -> Conv2D(32) -> MaxPool -> Dense(128) -> 10, batch 64",
         dict(H=100, C=3, B=64, STEPS=8, SMALL=0), bench_cnn.FIT + "final = peak_growth\n", bench_cnn.TORCH),
        ("Transformer block: batch 32, 128 tokens, 256 wide, 4 heads, ff 1024",
         dict(B=32, T=128, D=256, H=4, FF=1024, STEPS=8, THREADS=2),
         bench_transformer.FIT + "final = peak_growth\n", bench_transformer.TORCH),
    ]
    for title, kw, fit, torch in cases:
        before = load()
        codes = [BOUNDFIT_HEAD + fit, BEFORE_HEAD + fit, KERAS_TF_HEAD + fit, torch]
        sides = run_sides([c.format(**kw) for c in codes], rounds)
        report(f"{title} ({rounds} rounds of {kw['STEPS']} steps each side, in turn; {before} -> {load()})",
               kw["B"] * kw["STEPS"], sides, names=names, memory=(None,) * 4)


if __name__ == "__main__":
    main()
