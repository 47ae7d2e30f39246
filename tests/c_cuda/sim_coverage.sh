#!/usr/bin/env bash
# sim_coverage.sh - line coverage of csrc/cuda under the device emulation:
# builds it with --coverage (build/cuda_sim_cov) and runs every CUDA test file
# against it: tests/test_cuda_sim.py (the CUDA tests in both emulated
# configurations, the op-by-op C checks, the device checks' refusals, the
# injected cuBLAS / cuDNN failures), tests/test_distributed_nccl.py (nccl.cu)
# and tests/test_gpu_check.py (the GPU check's dry run), pointed at that build
# by BF_SIM_BUILD (test_cuda_mutants.py runs edited copies: not counted); then prints gcov's executable-line
# coverage per .cu file, files never run included (0%), and overall.
# Usage: tests/c_cuda/sim_coverage.sh   (PYTHON: the python with boundfit
# installed, default python3; REPORT_ONLY=1: the table of the last run;
# OUT_DIR: the coverage build, default build/cuda_sim_cov)
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
OUT=${OUT_DIR:-build/cuda_sim_cov}
if [[ ${REPORT_ONLY:-0} != 1 ]]; then
COVERAGE=1 OUT_DIR=$OUT PYTHON="$PYTHON" csrc/cuda_sim/build.sh > /dev/null
find "$OUT/obj" -name '*.gcda' -delete
COVERAGE=1 BF_SIM_BUILD=$OUT KERAS_BACKEND=${KERAS_BACKEND:-jax} "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/test_cuda_sim.py tests/test_distributed_nccl.py tests/test_gpu_check.py | tail -1
fi
# gcov names each source by its #line name, csrc/cuda/<file>
cd "$OUT/obj"
gcov -n ./*.cu.o 2>/dev/null | awk '
  /^File / { f = $2; gsub(/\x27/, "", f); next }
  /^Lines executed:/ && f ~ /^csrc\/cuda\/.*\.cuh?$/ {
    split($2, a, ":"); pct = a[2] + 0; n = $4 + 0
    if (!(f in seen)) { seen[f] = 1; files[++k] = f; best[f] = pct; tot[f] = n }
    else if (pct * n > best[f] * tot[f]) { best[f] = pct; tot[f] = n }  # a header: the best of its includers
  }
  /^Lines executed:/ { f = "" }  # the object summary that follows has no File line
  END {
    printf "%-32s %6s %6s %7s\n", "file", "lines", "run", "cover"
    for (i = 1; i <= k; i++) { f = files[i]; r = int(best[f] * tot[f] / 100 + 0.5)
      printf "%-32s %6d %6d %6.1f%%\n", f, tot[f], r, best[f]; T += tot[f]; R += r }
    printf "%-32s %6d %6d %6.1f%%\n", "total", T, R, 100 * R / T
  }'
