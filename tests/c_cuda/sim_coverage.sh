#!/usr/bin/env bash
# sim_coverage.sh - line coverage of csrc/cuda under the device emulation:
# builds it with --coverage (build/cuda_sim_cov), runs the op-by-op C checks
# (test_cuda_ops) and the Python CUDA tests against it (both thread orders,
# CC 8.0 and 9.0) and the device checks' refusals, then prints gcov's executable-line coverage per .cu file
# and overall. Usage: tests/c_cuda/sim_coverage.sh   (PYTHON: the python with
# boundfit installed, default python3; REPORT_ONLY=1: the table of the last run)
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
OUT=build/cuda_sim_cov
if [[ ${REPORT_ONLY:-0} != 1 ]]; then
SO=$(COVERAGE=1 OUT_DIR=$OUT PYTHON="$PYTHON" csrc/cuda_sim/build.sh | tail -1)
find "$OUT/obj" -name '*.gcda' -delete
SO="$SO" PYTHON="$PYTHON" OUT_DIR=build/cuda_ctest tests/c_cuda/build_and_run.sh ops > "$OUT/ops.log" || {
  tail -20 "$OUT/ops.log"; exit 1; }
TESTS=(tests/test_cuda_backend.py tests/test_recurrent_cuda.py tests/test_cuda_kernel_files.py
  tests/test_sources_and_interrupts.py::test_cuda_without_a_usable_gpu_raises_device_error_and_cpu_still_trains
  tests/test_sequence_losses.py::test_a_masked_tagger_trains_on_cuda_as_on_the_cpu tests/test_device_path.py)
for cfg in "forward 8.0" "reverse 9.0"; do
  read -r order cc <<< "$cfg"
  BF_CUDA_LIB=$SO BF_SIM_THREAD_ORDER=$order BF_SIM_BLOCK_ORDER=$order BF_SIM_CC=$cc KERAS_BACKEND=${KERAS_BACKEND:-jax} \
    "$PYTHON" -m pytest -q -p no:cacheprovider "${TESTS[@]}" -k "not 100x100" | tail -1
done
# check.cu's refusals: an old driver, none, no device, an uncovered CC, another cuDNN major
for e in BF_SIM_DRIVER_VERSION=12040 BF_SIM_DRIVER_VERSION=0 BF_SIM_DEVICES=0 BF_SIM_CC=7.5 BF_SIM_CUDNN_VERSION=8907; do
  env "$e" BF_CUDA_LIB=$SO "$PYTHON" -c "import boundfit as bf, numpy as np
m = bf.Sequential([bf.layers.Dense(1, input_shape=(2,))]); m.compile(optimizer='sgd', loss='mse')
try: m.fit(np.zeros((4, 2), 'f'), np.zeros((4, 1), 'f'), verbose=0, device='cuda')
except bf.DeviceError: pass
bf.diagnose(print_fn=None)"
done
# cuda_errors.cu's cuBLAS / cuDNN failure paths (injected)
for e in BF_SIM_FAIL=cublas BF_SIM_FAIL=cudnn; do
  env "$e" BF_CUDA_LIB=$SO "$PYTHON" -c "import boundfit as bf, numpy as np
L = bf.layers
m = bf.Sequential([L.Conv2D(2, (3, 3), input_shape=(6, 6, 1)), L.Flatten(), L.Dense(1)])
m.compile(optimizer='sgd', loss='mse')
try: m.fit(np.ones((4, 6, 6, 1), 'f'), np.zeros((4, 1), 'f'), verbose=0, device='cuda')
except bf.DeviceError: pass"
done
fi
# gcov names each source by its #line name, csrc/cuda/<file>
cd "$OUT/obj"
gcov -n ./*.cu.o 2>/dev/null | awk '
  /^File / { f = $2; gsub(/\x27/, "", f); next }
  /^Lines executed:/ && f ~ /^csrc\/cuda\/.*\.cuh?$/ {
    split($2, a, ":"); pct = a[2] + 0; n = $4 + 0
    if (!(f in seen)) { seen[f] = 1; files[++k] = f }
    if (pct * n > best[f] * tot[f]) { best[f] = pct; tot[f] = n }  # a header: the best of its includers
  }
  /^Lines executed:/ { f = "" }  # the object summary that follows has no File line
  END {
    printf "%-32s %6s %6s %7s\n", "file", "lines", "run", "cover"
    for (i = 1; i <= k; i++) { f = files[i]; r = int(best[f] * tot[f] / 100 + 0.5)
      printf "%-32s %6d %6d %6.1f%%\n", f, tot[f], r, best[f]; T += tot[f]; R += r }
    printf "%-32s %6d %6d %6.1f%%\n", "total", T, R, 100 * R / T
  }'
