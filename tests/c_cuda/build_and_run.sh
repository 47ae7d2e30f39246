#!/usr/bin/env bash
# build_and_run.sh - build the CUDA module (_cuda.so) on its own, the way the
# repo's CMakeLists.txt builds its _cuda target (plus -Wall -Wextra and
# warnings as errors), then the C checks of tests/c_cuda against it:
#   dlopen_probe   - load, report, check, open (clean DeviceError without a GPU)
#   test_cuda_ops  - every vtable op against the CPU kernels (needs a GPU;
#                    prints SKIP and exits 0 without one)
# Usage: tests/c_cuda/build_and_run.sh [probe|ops|all]   (default all)
# SIM=1: instead of the nvcc build, the device-emulation build
# (csrc/cuda_sim/build.sh), so the checks run without a GPU; SO=path/_cuda.so
# runs the checks against a module built elsewhere (no build here).
# Env: OUT_DIR (build/cuda_ctest), CUDA_ARCHS (CMake list, default 80-real;90-real;90-virtual),
#      PYTHON (python3, for the OpenBLAS of the scipy-openblas32 wheel), CC (gcc).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT_DIR=${OUT_DIR:-build/cuda_ctest}
CUDA_ARCHS=${CUDA_ARCHS:-80-real;90-real;90-virtual}
PYTHON=${PYTHON:-python3}
CC=${CC:-gcc}
WHAT=${1:-all}
mkdir -p "$OUT_DIR/cmake"
if [[ -n ${SO:-} ]]; then
  :
elif [[ ${SIM:-0} == 1 ]]; then
  SO=$(OUT_DIR="$OUT_DIR/sim" PYTHON="$PYTHON" csrc/cuda_sim/build.sh | tail -1)
else
cat > "$OUT_DIR/cmake/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(bf_cuda_only LANGUAGES C)
set(CMAKE_C_STANDARD 11)
include(CheckLanguage)
check_language(CUDA)
find_package(CUDAToolkit REQUIRED)
find_library(CUDNN_LIB NAMES cudnn HINTS \${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu REQUIRED)
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS \${CUDAToolkit_INCLUDE_DIRS} /usr/include REQUIRED)
enable_language(CUDA)
file(GLOB BF_CUDA_SRC CONFIGURE_DEPENDS $ROOT/csrc/cuda/*.cu $ROOT/csrc/cuda/*.c)
add_library(_cuda MODULE \${BF_CUDA_SRC})
set_target_properties(_cuda PROPERTIES PREFIX "" CUDA_STANDARD 17 CUDA_RUNTIME_LIBRARY Shared
  C_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
target_include_directories(_cuda PRIVATE $ROOT/csrc $ROOT/csrc/core \${CUDNN_INCLUDE_DIR})
target_link_libraries(_cuda PRIVATE CUDA::cudart CUDA::cublas \${CUDNN_LIB} \${CMAKE_DL_LIBS})
target_link_options(_cuda PRIVATE -Wl,--no-undefined)
string(REPLACE ";" "," BF_ARCHS_STR "\${CMAKE_CUDA_ARCHITECTURES}")
target_compile_definitions(_cuda PRIVATE BF_CUDA_ARCHS="\${BF_ARCHS_STR}")
target_compile_options(_cuda PRIVATE \$<\$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Werror>
  \$<\$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
CMAKE
cmake -S "$OUT_DIR/cmake" -B "$OUT_DIR/cmake/build" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS" > "$OUT_DIR/cmake.log"
cmake --build "$OUT_DIR/cmake/build" -j "$(nproc)"
SO="$OUT_DIR/cmake/build/_cuda.so"
fi
echo "built $SO"
status=0
if [[ $WHAT == probe || $WHAT == all ]]; then
  "$CC" -O1 -Wall -Wextra -std=c11 -Icsrc/core tests/c_cuda/dlopen_probe.c csrc/core/status.c \
    -ldl -o "$OUT_DIR/dlopen_probe"
  "$OUT_DIR/dlopen_probe" "$SO" || status=1
fi
if [[ $WHAT == ops || $WHAT == all ]]; then
  read -r OB_INC OB_LIB < <("$PYTHON" -c \
    "import scipy_openblas32 as s; print(s.get_include_dir(), s.get_lib_dir())")
  "$CC" -O2 -Wall -Wextra -std=c11 -Icsrc/core -Icsrc/cpu -I"$OB_INC" \
    tests/c_cuda/test_cuda_ops.c csrc/cpu/activations.c csrc/cpu/batchnorm.c csrc/cpu/conv2d.c csrc/cpu/conv2d_direct.c \
    csrc/cpu/conv2d_direct_avx512.c csrc/cpu/conv2d_direct_avx2.c csrc/cpu/cpu_isa.c \
    csrc/cpu/dense.c csrc/cpu/dropout.c csrc/cpu/loss.c csrc/cpu/metrics.c csrc/cpu/optimizers.c csrc/cpu/optimizers_more.c csrc/cpu/pool.c \
    csrc/cpu/reduce.c csrc/cpu/conv1d.c csrc/cpu/conv2d_transpose.c csrc/cpu/act_more.c csrc/cpu/strided.c \
    csrc/cpu/rescale.c csrc/cpu/augment.c csrc/cpu/prelu.c csrc/cpu/gemm.c csrc/cpu/par.c csrc/core/status.c \
    -L"$OB_LIB" -lscipy_openblas -Wl,-rpath,"$OB_LIB" -ldl -lm -lpthread -o "$OUT_DIR/test_cuda_ops"
  "$OUT_DIR/test_cuda_ops" "$SO" || status=1
fi
exit $status
