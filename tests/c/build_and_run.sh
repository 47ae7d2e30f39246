#!/usr/bin/env bash
# build_and_run.sh - compile tests/c/test_conv_kernels.c with the CPU conv kernels
# against the OpenBLAS of the scipy-openblas32 wheel, and run it.
# Usage: tests/c/build_and_run.sh [--no-timing]
# Env: PYTHON (default python3), CC (gcc), CFLAGS (-O2), OUT_DIR (build/ctest).
# Exit status: that of the test (non-zero when a check fails).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2}
OUT_DIR=${OUT_DIR:-build/ctest}
read -r OB_INC OB_LIB < <("$PYTHON" -c \
  "import scipy_openblas32 as s; print(s.get_include_dir(), s.get_lib_dir())")
mkdir -p "$OUT_DIR"
# shellcheck disable=SC2086
"$CC" $CFLAGS -Wall -Wextra -std=c11 -Icsrc/core -Icsrc/cpu -I"$OB_INC" \
  tests/c/test_conv_kernels.c csrc/cpu/conv2d.c csrc/cpu/conv2d_direct.c \
  csrc/cpu/conv2d_direct_avx512.c csrc/cpu/conv2d_direct_avx2.c csrc/cpu/cpu_isa.c csrc/cpu/pool.c csrc/cpu/batchnorm.c \
  csrc/cpu/dropout.c csrc/cpu/gemm.c csrc/cpu/par.c csrc/core/status.c \
  -L"$OB_LIB" -lscipy_openblas -Wl,-rpath,"$OB_LIB" -ldl -lm -lpthread -o "$OUT_DIR/test_conv_kernels"
echo "built $OUT_DIR/test_conv_kernels ($CC $CFLAGS)"
exec "$OUT_DIR/test_conv_kernels" "$@"
