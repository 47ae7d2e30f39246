#!/usr/bin/env bash
# gpu_check.sh - the one command to run first on a lent GPU, within five
# minutes (each step has its own timeout, so a rerun fits too):
#   1. versions: nvidia-smi, then boundfit's diagnose() (driver, runtime,
#      cuBLAS, cuDNN, NCCL, each GPU and its verdict)
#   2. the CUDA suite on the card (tests/test_cuda_backend.py,
#      test_recurrent_cuda.py, test_text_cuda.py: every op against the CPU)
#   3. compute-sanitizer memcheck and racecheck over a subset (a dense and a
#      conv model), where compute-sanitizer is found
#   4. benchmarks/bench_gpu.py --quick: samples/s and peak memory against
#      PyTorch on the same card (PyTorch where installed)
#   5. the seed CNN at batch 2048 within a device limit: refused before step
#      one, then trained by micro_batch="auto"
# and prints one report: each step, its status and seconds, the log's tail.
#
#   bash benchmarks/gpu_check.sh                  # on the GPU machine, from the repo root
#   BF_GPU_CHECK_DRY=1 bash benchmarks/gpu_check.sh   # the same steps on the device
#       emulation (BF_CUDA_LIB=build/cuda_sim/_cuda.so, built by csrc/cuda_sim/build.sh):
#       a check of the script, one test per step (tests/test_gpu_check.py)
#
# OUT (default /tmp/gpu_check) receives the logs and report.txt. Exit status:
# the number of failed steps (0: all passed or skipped with a reason).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_check}
PY=${PYTHON:-python}
DRY=${BF_GPU_CHECK_DRY:-0}
mkdir -p "$OUT"
: > "$OUT/report.txt"
failed=0

if [ "$DRY" = 1 ]; then
    export BF_CUDA_LIB=${BF_CUDA_LIB:-$PWD/build/cuda_sim/_cuda.so}
    [ -f "$BF_CUDA_LIB" ] || { echo "dry run: no emulation build at $BF_CUDA_LIB (csrc/cuda_sim/build.sh)"; exit 1; }
    SUITE_K="-k test_dense_model_trains_to_the_cpu_weights_on_cuda and adam"
    BENCH="--device cpu --case cnn_digits"
else
    SUITE_K=""
    BENCH="--quick"
fi
export KERAS_BACKEND=${KERAS_BACKEND:-jax}

export OUT PY DRY SUITE_K BENCH
# step NAME SECONDS FUNCTION: runs the function in a shell under a timeout, logs it, adds a report line
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS status
    timeout "$limit" bash -c "$(declare -f "$1"); $*" > "$OUT/$name.log" 2>&1
    local rc=$?
    if [ $rc = 0 ]; then status=ok
    elif [ $rc = 77 ]; then status="skipped ($(tail -n 1 "$OUT/$name.log"))"
    elif [ $rc = 124 ]; then status="FAILED (timed out after ${limit} s)"; failed=$((failed + 1))
    else status="FAILED (exit $rc)"; failed=$((failed + 1))
    fi
    printf '%-12s %-60s %4d s\n' "$name" "$status" $((SECONDS - t0)) | tee -a "$OUT/report.txt"
}

versions() {
    if [ "$DRY" != 1 ]; then
        nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || return 1
    fi
    "$PY" -m boundfit diagnose
}

suite() {
    "$PY" -m pytest -q -p no:cacheprovider -x tests/test_cuda_backend.py tests/test_recurrent_cuda.py \
        tests/test_text_cuda.py ${SUITE_K:+"$SUITE_K"}
}

sanitizer() {
    command -v compute-sanitizer > /dev/null || { echo "compute-sanitizer not found"; return 77; }
    local tool
    for tool in memcheck racecheck; do
        compute-sanitizer --tool "$tool" --error-exitcode 3 "$PY" -m pytest -q -p no:cacheprovider -x \
            tests/test_cuda_backend.py -k "test_dense_model_trains_to_the_cpu_weights_on_cuda and adam or \
test_global_average_pooling_and_valid_conv_match_the_cpu_on_cuda" || return $?
    done
}

bench() {
    # shellcheck disable=SC2086
    "$PY" benchmarks/bench_gpu.py $BENCH
}

seed_cnn() {
    "$PY" - "$DRY" <<'EOF'
import sys
import numpy as np
import boundfit as bf
from boundfit import layers

device, dry = "cuda", sys.argv[1] == "1"
side = 12 if dry else 100                 # the emulation runs kernels on fibers: small images
m = bf.Sequential([layers.Input((side, side, 3)), layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(),
                   layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")])
m.compile("adam", "sparse_categorical_crossentropy")
rows = 2048
x = np.random.default_rng(0).random((rows, side, side, 3), dtype=np.float32)
y = np.random.default_rng(1).integers(0, 10, rows)
plan = m.estimate_memory(2048, device=device)
limit = plan.device_bytes // 2          # half what batch 2048 needs
bf.set_memory_limit(device=limit)
try:
    m.fit(x, y, batch_size=2048, epochs=1, verbose=0, device=device)
    sys.exit("batch 2048 was not refused under half its plan")
except bf.MemoryBudgetError as e:
    print("refused before step one:", str(e).splitlines()[0])
h = m.fit(x, y, batch_size=2048, micro_batch="auto", epochs=1, verbose=0, device=device)
print("micro_batch='auto' trained: loss", h.history["loss"][-1])
EOF
}

step versions 60 versions
step cuda_suite 150 suite
step sanitizer 120 sanitizer
step bench_gpu 120 bench
step seed_cnn 60 seed_cnn
echo "---- logs in $OUT; $failed step(s) failed" | tee -a "$OUT/report.txt"
for f in versions cuda_suite; do echo "---- $f (tail)"; tail -n 15 "$OUT/$f.log"; done
exit $failed
