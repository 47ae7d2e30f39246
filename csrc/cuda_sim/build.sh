#!/usr/bin/env bash
# build.sh - the device-emulation build of the CUDA backend: every csrc/cuda
# source compiled unmodified by g++ for the host (launches rewritten by
# rewrite_launches.py, sim_device.h force-included, the real CUDA headers for
# the types) and linked with the emulated runtime, cuBLAS and cuDNN of this
# folder into OUT_DIR/_cuda.so, which the package loads with
# BF_CUDA_LIB=OUT_DIR/_cuda.so. Test-only: it runs kernels on the CPU.
# Env: OUT_DIR (build/cuda_sim), COVERAGE=1 (gcov instrumentation),
#      INTERLEAVE=1 (the loads and stores of csrc/cuda's sources with atomics
#      or x[i] += v call sim_interleave.cpp's hooks, g++ -fsanitize=thread without
#      its runtime: BF_SIM_INTERLEAVE=1 then switches threads at every store;
#      use its own OUT_DIR), BASE_DIR (with INTERLEAVE=1: a default build of
#      the same tree, whose objects of the other sources are taken as built),
#      CUDA_SRC (csrc/cuda; a patched copy builds under the same file names),
#      CUDA_INC (include dir with cuda_runtime.h, cublas_v2.h, cudnn.h),
#      PYTHON (for the scipy-openblas32 wheel's OpenBLAS), JOBS (nproc),
#      OBJ_CACHE (build/cuda_sim_objects: objects by the contents they are built from; empty: none),
#      DEBUG=1 (-g: debug information, a fifth more compile time; off for the suite),
#      FP_CONTRACT (fast, the default where the CPU has FMA: multiply-adds
#      fused into FMAs, -mfma, as the device build's nvcc does by default; off:
#      products and sums rounded apart, as nvcc --fmad=false).
# Prints the path of the built library. Rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT_DIR=${OUT_DIR:-build/cuda_sim}
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
if [[ -z ${CUDA_INC:-} ]]; then
  for d in /usr/local/cuda/include /usr/include; do
    [[ -f $d/cuda_runtime.h ]] && CUDA_INC=$d && break
  done
fi
[[ -n ${CUDA_INC:-} && -f $CUDA_INC/cuda_runtime.h ]] || { echo "build.sh: no cuda_runtime.h (set CUDA_INC)" >&2; exit 2; }
DNN_INC=$CUDA_INC
[[ -f $DNN_INC/cudnn.h ]] || DNN_INC=/usr/include
read -r OB_INC OB_LIB < <("$PYTHON" -c "import scipy_openblas32 as s; print(s.get_include_dir(), s.get_lib_dir())")
mkdir -p "$OUT_DIR/src" "$OUT_DIR/obj"
exec 9> "$OUT_DIR/.lock" && flock 9   # two test workers building one folder: one builds, the other reuses it
OUT=$(cd "$OUT_DIR" && pwd)
"$PYTHON" csrc/cuda_sim/rewrite_launches.py "${CUDA_SRC:-csrc/cuda}" "$OUT/src" csrc/cuda

CONTRACT=(-ffp-contract=off)
grep -qw fma /proc/cpuinfo 2>/dev/null && [[ ${FP_CONTRACT:-fast} == fast ]] && CONTRACT=(-ffp-contract=fast -mfma)
CXXFLAGS=(-std=c++17 -O2 -fPIC -fvisibility=hidden "${CONTRACT[@]}" -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0
  -Wall -Wextra -Wno-unused-parameter -Wno-deprecated-declarations -Wno-sign-compare -Wno-unknown-pragmas
  "-DBF_CUDA_ARCHS=\"80-real,90-real,90-virtual\"" -DBF_CUDA_SIM=1
  -I"$OUT/src" -I"$ROOT/csrc" -I"$ROOT/csrc/core" -I"$ROOT/csrc/cpu" -I"$ROOT/csrc/cuda_sim"
  -I"$CUDA_INC" -I"$DNN_INC" -I"$OB_INC")
[[ ${DEBUG:-0} == 1 ]] && CXXFLAGS+=(-g)
CUFLAGS=()
# (on the sources where an update can be lost: see instrumented below)
[[ ${INTERLEAVE:-0} == 1 ]] && CUFLAGS=(-fsanitize=thread --param tsan-instrument-func-entry-exit=0)
LDCOV=()
if [[ ${COVERAGE:-0} == 1 ]]; then
  CXXFLAGS+=(--coverage -fprofile-update=single)
  LDCOV=(--coverage)
fi
STAMP="$OUT/flags"
echo "${CXXFLAGS[*]} ${CUFLAGS[*]-}${CUFLAGS[*]:+ (sources with atomics or x[i] += v)}" | sed "s#$OUT#OUT_DIR#g" > "$STAMP.new" # a copied build dir keeps its objects
if ! cmp -s "$STAMP.new" "$STAMP"; then rm -f "$OUT"/obj/*.o; mv "$STAMP.new" "$STAMP"; else rm -f "$STAMP.new"; fi

# headers every object depends on; csrc/cuda's own count only for the sources that include them (a mutated
# header recompiles its includers, not the tree)
HDRS=("$ROOT"/csrc/cuda_sim/*.h "$ROOT"/csrc/core/backend.h "$ROOT"/csrc/core/backend_ops.h "$ROOT"/csrc/core/status.h "$ROOT"/csrc/core/emap_ops.h "$ROOT"/csrc/core/emap_math.h)
newest_hdr=$(ls -t "${HDRS[@]}" | head -1)
# the quoted includes of each file, read by one grep for all the files build.sh looks at (a grep per file and
# header was most of a build that had nothing to compile); a file not read here is read when asked for
declare -A INCS=()
scan_includes() {
  local line f h
  for f in "$@"; do INCS[$f]=" "; done
  while IFS= read -r line; do
    f=${line%%:#include*} h=${line#*\"} && INCS[$f]+="${h%\"*} "
  done < <(grep -HoE '#include "[^"]+"' "$@" || true)
}
# the csrc/cuda headers (in folder $2, default $OUT/src) that source $1 includes, directly or through one another
local_hdrs() {
  local todo=("$1") seen=" " f h d=${2:-$OUT/src}
  while ((${#todo[@]})); do
    f=${todo[-1]}; unset 'todo[-1]'
    [[ -n ${INCS[$f]+x} ]] || scan_includes "$f"
    for h in ${INCS[$f]}; do
      [[ -f $d/$h && $seen != *" $h "* ]] && seen+="$h " && todo+=("$d/$h")
    done
  done
  for h in $seen; do echo "$d/$h"; done
}
# object $2 of source $1 (its headers in folder $3, default $OUT/src) is out of date
stale() {
  local h
  [[ ! -f $2 || $1 -nt $2 || $newest_hdr -nt $2 ]] && return 0
  for h in $(local_hdrs "$1" "${3:-}"); do [[ $h -nt $2 ]] && return 0; done
  return 1
}
scan_includes "$OUT"/src/* "$ROOT"/csrc/cuda_sim/*.cpp "$ROOT"/csrc/cuda_sim/*.S
[[ -n ${BASE_DIR:-} && -d $BASE_DIR/src ]] && scan_includes "$BASE_DIR"/src/*
jobs_list=()
# INTERLEAVE=1 instruments the sources where an update can be lost: those
# with atomics or read-modify-writes of array elements (x[i] += v: so an
# atomicAdd turned into one stays instrumented), or including a header with
# them; the rest compile as in the default build
RMW='atomic[A-Z]|\]\s*(\+|-)='
atomic_hdrs=$({ grep -lE "$RMW" "$OUT"/src/*.cuh "$OUT"/src/*.h 2>/dev/null || true; } | xargs -r -n1 basename |
              paste -sd'|')
instrumented() {
  [[ ${INTERLEAVE:-0} == 1 && $1 == *.cu ]] || return 1
  grep -Eq "$RMW" "$1" || { [[ -n $atomic_hdrs ]] && grep -Eq "#include \"($atomic_hdrs)\"" "$1"; }
}
# an up-to-date object of the default build at BASE_DIR (built with these flags) for the same source
[[ -n ${BASE_DIR:-} && -f $BASE_DIR/flags && $(cat "$BASE_DIR/flags") == "$(echo "${CXXFLAGS[*]} " |
   sed "s#$OUT#OUT_DIR#g")" ]] || BASE_DIR=
base_obj() {
  local src=$1 b bsrc bobj h
  [[ -n $BASE_DIR ]] && ! instrumented "$src" || return 1
  b=$(basename "$src") bobj="$BASE_DIR/obj/$b.o"
  case $src in "$OUT"/src/*) bsrc="$BASE_DIR/src/$b" ;; *) bsrc=$src ;; esac
  [[ -f $bsrc ]] && ! stale "$bsrc" "$bobj" "$BASE_DIR/src" && cmp -s "$src" "$bsrc" || return 1
  for h in $(local_hdrs "$src"); do cmp -s "$h" "$BASE_DIR/src/$(basename "$h")" || return 1; done
  echo "$bobj"
}
for src in "$OUT"/src/*.cu "$OUT"/src/*.c "$ROOT"/csrc/cuda_sim/*.cpp "$ROOT"/csrc/cuda_sim/*.S; do
  base=$(basename "$src")
  obj="$OUT/obj/${base}.o"
  if stale "$src" "$obj"; then
    if bobj=$(base_obj "$src"); then cp "$bobj" "$obj"; else jobs_list+=("$src"); fi
  fi
done
# the object cache (OBJ_CACHE, default build/cuda_sim_objects; none for COVERAGE=1, whose objects come with gcov
# notes): objects by a key of their flags and the contents of the source and every header it includes
# (obj_keys.py), shared by the builds of this tree (a mutant's, a copied build folder, a branch switched back)
OBJ_CACHE=${OBJ_CACHE-$ROOT/build/cuda_sim_objects}
[[ ${COVERAGE:-0} == 1 ]] && OBJ_CACHE=
declare -A KEY=()
if [[ -n $OBJ_CACHE ]] && ((${#jobs_list[@]})); then
  mkdir -p "$OBJ_CACHE"
  flags_key="$(echo "${CXXFLAGS[*]}" | sed "s#$OUT#OUT_DIR#g") $(cat "${HDRS[@]}" | sha256sum | cut -c1-24)"
  dirs="$OUT/src:$ROOT/csrc:$ROOT/csrc/core:$ROOT/csrc/cpu:$ROOT/csrc/cuda_sim:$ROOT/csrc/cuda"
  plain=() inst=()
  for src in "${jobs_list[@]}"; do if instrumented "$src"; then inst+=("$src"); else plain+=("$src"); fi; done
  while read -r k s; do KEY[$s]=$k; done < <(
    if ((${#plain[@]})); then "$PYTHON" csrc/cuda_sim/obj_keys.py "$flags_key" "$dirs" "${plain[@]}"; fi
    if ((${#inst[@]})); then "$PYTHON" csrc/cuda_sim/obj_keys.py "$flags_key ${CUFLAGS[*]}" "$dirs" "${inst[@]}"; fi)
  left=()
  for src in "${jobs_list[@]}"; do
    cached="$OBJ_CACHE/$(basename "$src")-${KEY[$src]}.o"
    if [[ -n ${KEY[$src]:-} && -f $cached ]]; then cp "$cached" "$OUT/obj/$(basename "$src").o"; else left+=("$src"); fi
  done
  jobs_list=(${left[@]+"${left[@]}"})
fi
# sim_device.h (with the CUDA runtime header it includes, about half of a .cu's compile) precompiled once with the
# .cu flags into $OUT/pch, which g++ searches before csrc/cuda_sim (it takes NAME.gch found in an include folder
# for NAME): the objects are the same. Not for coverage builds and the instrumented sources (their own flags), so
# not built when only those compile.
PCH=()
uses_pch=0
for src in ${jobs_list[@]+"${jobs_list[@]}"}; do [[ $src == *.cu ]] && ! instrumented "$src" && uses_pch=1 && break; done
if [[ ${COVERAGE:-0} != 1 ]] && ((uses_pch)); then
  gch=$OUT/pch/sim_device.h.gch
  if [[ ! -f $gch || $newest_hdr -nt $gch || $STAMP -nt $gch ]]; then
    mkdir -p "$OUT/pch"
    g++ -x c++-header "${CXXFLAGS[@]}" "$ROOT/csrc/cuda_sim/sim_device.h" -o "$gch.tmp" && mv "$gch.tmp" "$gch"
  fi
  PCH=(-I"$OUT/pch" -Winvalid-pch)
fi
compile() {
  local src=$1 obj="$OUT/obj/$(basename "$1").o" cu=() pch=(${PCH[@]+"${PCH[@]}"})
  instrumented "$src" && cu=(${CUFLAGS[@]+"${CUFLAGS[@]}"}) pch=()
  case $src in
    *.cu) g++ -x c++ ${pch[@]+"${pch[@]}"} -include sim_device.h "${CXXFLAGS[@]}" ${cu[@]+"${cu[@]}"} -c "$src" \
            -o "$obj" ;;
    *.cpp) g++ "${CXXFLAGS[@]}" -c "$src" -o "$obj" ;;
    *.c) gcc -std=c11 -O1 -g -fPIC -fvisibility=hidden -Wall -Wextra ${LDCOV[@]+"${LDCOV[@]}"} \
           -I"$ROOT/csrc" -I"$ROOT/csrc/core" -I"$ROOT/csrc/cuda" -I"$CUDA_INC" -c "$src" -o "$obj" ;;
    *.S) gcc -c "$src" -o "$obj" ;;
  esac
}
export -f compile
export OUT ROOT CUDA_INC
export CXXFLAGS_STR="${CXXFLAGS[*]}"
if ((${#jobs_list[@]})); then
  # arrays do not cross into xargs' shells: compile in a loop with background jobs
  pids=()
  fail=0
  for src in "${jobs_list[@]}"; do
    compile "$src" &
    pids+=($!)
    if ((${#pids[@]} >= JOBS)); then wait "${pids[0]}" || fail=1; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
  ((fail == 0)) || { echo "build.sh: compile failed" >&2; exit 1; }
  if [[ -n $OBJ_CACHE ]]; then
    for src in "${jobs_list[@]}"; do
      [[ -n ${KEY[$src]:-} ]] || continue
      cached="$OBJ_CACHE/$(basename "$src")-${KEY[$src]}.o"
      cp "$OUT/obj/$(basename "$src").o" "$cached.$$" && mv "$cached.$$" "$cached"
    done
  fi
fi
# a __shared__ array declared in a template: g++ drops the section attribute of a template's statics, so it would
# be neither NaN-filled nor the block's own (put it at file scope, as colreduce.cuh does); the objects not yet
# linked are read (one that fails is removed, so the next build compiles and reads it again)
linked=()
[[ -f $OUT/_cuda.so ]] && linked=(-newer "$OUT/_cuda.so")
for o in $(find "$OUT/obj" -name '*.cu.o' ${linked[@]+"${linked[@]}"}); do
  if readelf -S -W "$o" | grep -qE '\.(bss|data)\._ZZ'; then
    echo "build.sh: $(basename "$o" .o) has a static in a template (a __shared__ array?): g++ leaves it out of the" \
         "emulation's shared memory; declare it at file scope" >&2
    rm -f "$o"
    exit 1
  fi
done
if [[ ! -f $OUT/_cuda.so ]] || [[ -n $(find "$OUT/obj" -newer "$OUT/_cuda.so" -name '*.o') ]]; then
  g++ -shared ${LDCOV[@]+"${LDCOV[@]}"} -o "$OUT/_cuda.so" "$OUT"/obj/*.o -L"$OB_LIB" -lscipy_openblas \
    -Wl,-rpath,"$OB_LIB" -Wl,--no-undefined -ldl -lpthread
fi
echo "$OUT/_cuda.so"
