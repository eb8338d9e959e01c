#!/usr/bin/env bash
# NVIDIA's nccl-tests against Braid: export its source (and the device-API headers it includes) from
# git directories, build it against Braid's include/nccl.h and libnccl.so.2, and run it.
#
#   bash scripts/nccl-tests.sh export NCCL_TESTS_GIT NCCL_GIT [SRC_DIR]
#       Writes nccl-tests (tag $NCCL_TESTS_REF, v2.19.6) to SRC_DIR/nccl-tests and the headers
#       nccl_device.h and nccl_device/ of NCCL (tag $NCCL_REF, v2.32.3-1: the version Braid's nccl.h
#       declares) to SRC_DIR/nccl-device, from two git directories (clones or bare mirrors of
#       github.com/NVIDIA/nccl-tests and github.com/NVIDIA/nccl). SRC_DIR defaults to build/nccl-src
#       (ignored by git; about 1 MiB, small enough to carry to a machine without network).
#   bash scripts/nccl-tests.sh build [SRC_DIR]
#       Builds the *_perf binaries named by $NCCL_TESTS_BINS (alltoall gather scatter sendrecv
#       all_reduce) into build/nccl-tests, for $NCCL_TESTS_ARCH (90), against $BRAID_BUILD/src
#       (build-gpu if it has libnccl.so.2, else build). nccl-tests since 2.28 includes nccl_device.h
#       (its optional -D device kernels); Braid ships no device API, so NCCL's own headers stand in for
#       it at compile time (those kernels fail at run time with a WARN; the default path never uses them).
#   bash scripts/nccl-tests.sh run [NGPUS] [BIN] [ARGS...]
#       Runs build/nccl-tests/BIN (alltoall_perf) on NGPUS GPUs (all) of one process with
#       Braid's library first on the loader path; ARGS default to "-b 8 -e 64M -f 4 -c 1". nccl-tests
#       prints an out-of-place and an in-place column for every size. NCCL_LIB_DIR=dir runs it on the
#       libnccl.so.2 there instead (NVIDIA's NCCL, for comparison: its in-place AlltoAll result is
#       undefined, and nccl-tests does not check in-place AlltoAll).
#
# The GPU machines have no network: export on a machine that has the git directories, then carry
# build/nccl-src with the working tree (it is ignored by git, so name it in the device tool's carry).
set -euo pipefail
cd "$(dirname "$0")/.."

NCCL_TESTS_REF=${NCCL_TESTS_REF:-v2.19.6}
NCCL_REF=${NCCL_REF:-v2.32.3-1}
SRC_DIR_DEFAULT=build/nccl-src
OUT_DIR=build/nccl-tests
# NVLink SHARP/multicast stays off on shared hosts (see scripts/gpu-env.sh).
export NCCL_NVLS_ENABLE=0

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
}

braid_lib_dir() {
  local b=${BRAID_BUILD:-}
  if [ -z "$b" ]; then
    if [ -e build-gpu/src/libnccl.so.2 ]; then b=build-gpu; else b=build; fi
  fi
  [ -e "$b/src/libnccl.so.2" ] || { echo "nccl-tests.sh: no $b/src/libnccl.so.2: build Braid first" >&2; exit 1; }
  (cd "$b/src" && pwd)
}

cmd_export() {
  [ $# -ge 2 ] || usage
  local tests_git=$1 nccl_git=$2 dst=${3:-$SRC_DIR_DEFAULT}
  rm -rf "$dst/nccl-tests" "$dst/nccl-device"
  mkdir -p "$dst/nccl-tests" "$dst/nccl-device"
  git -C "$tests_git" archive "$NCCL_TESTS_REF" | tar -x -C "$dst/nccl-tests"
  git -C "$nccl_git" archive "$NCCL_REF" src/include/nccl_device.h src/include/nccl_device |
    tar -x -C "$dst/nccl-device" --strip-components=2
  # The DOCA GPUNetIO device headers that nccl_device/gin includes, where NCCL's install puts them.
  local doca="$dst/nccl-device/nccl_device/gin/gdaki/doca_gpunetio"
  mkdir -p "$doca"
  git -C "$nccl_git" archive "$NCCL_REF" src/transport/gdaki/doca-gpunetio/include |
    tar -x -C "$doca" --strip-components=5
  echo "nccl-tests $NCCL_TESTS_REF in $dst/nccl-tests, NCCL $NCCL_REF device headers in $dst/nccl-device"
}

cmd_build() {
  local src=${1:-$SRC_DIR_DEFAULT}
  [ -f "$src/nccl-tests/src/Makefile" ] || { echo "nccl-tests.sh: no nccl-tests source in $src (run export)" >&2; exit 1; }
  [ -f "$src/nccl-device/nccl_device.h" ] || { echo "nccl-tests.sh: no nccl_device.h in $src/nccl-device" >&2; exit 1; }
  local lib out home nvcc cuda
  lib=$(braid_lib_dir)
  mkdir -p "$OUT_DIR"
  out=$(cd "$OUT_DIR" && pwd)
  src=$(cd "$src" && pwd)
  # An NCCL_HOME as nccl-tests' Makefile wants it: Braid's header and library, NCCL's device headers.
  home="$out/nccl-home"
  rm -rf "$home"
  mkdir -p "$home/include" "$home/lib"
  ln -s "$PWD/include/nccl.h" "$home/include/nccl.h"
  ln -s "$src/nccl-device/nccl_device.h" "$home/include/nccl_device.h"
  ln -s "$src/nccl-device/nccl_device" "$home/include/nccl_device"
  ln -s "$lib/libnccl.so.2" "$home/lib/libnccl.so"
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda=$(dirname "$(dirname "$nvcc")")
  local targets=()
  for b in ${NCCL_TESTS_BINS:-alltoall gather scatter sendrecv all_reduce}; do targets+=("$out/${b}_perf"); done
  echo "== building nccl-tests in $src/nccl-tests against $lib: ${targets[*]}"
  # The CUDA runtime linked statically, as Braid does: the binaries need no CUDA library path to run.
  make -C "$src/nccl-tests/src" -j"$(nproc)" BUILDDIR="$out" NCCL_HOME="$home" CUDA_HOME="$cuda" MPI=0 CUDARTLIB=cudart_static \
    NVCC_GENCODE="-gencode=arch=compute_${NCCL_TESTS_ARCH:-90},code=sm_${NCCL_TESTS_ARCH:-90}" "${targets[@]}"
  ls -l "${targets[@]}"
}

cmd_run() {
  local ngpus=${1:-} bin=${2:-alltoall_perf}
  if [ $# -ge 2 ]; then shift 2; else shift $#; fi
  [ -n "$ngpus" ] || ngpus=$(nvidia-smi -L | wc -l)
  local args=("$@")
  [ ${#args[@]} -gt 0 ] || args=(-b 8 -e 64M -f 4 -c 1)
  local lib=${NCCL_LIB_DIR:-$(braid_lib_dir)}
  [ -x "$OUT_DIR/$bin" ] || { echo "nccl-tests.sh: no $OUT_DIR/$bin (run build)" >&2; exit 1; }
  echo "== $bin -g $ngpus ${args[*]} with $lib/libnccl.so.2"
  LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$OUT_DIR/$bin" -g "$ngpus" "${args[@]}"
}

case ${1:-} in
  export) shift; cmd_export "$@" ;;
  build) shift; cmd_build "$@" ;;
  run) shift; cmd_run "$@" ;;
  *) usage ;;
esac
