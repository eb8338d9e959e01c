# Sourced by the GPU scripts (gpu-check.sh, experiments/tune-sweep.sh): the safety environment, the build into
# build-gpu with all cores, and the path of NVIDIA's libnccl.so.2 for comparisons. Expects OUT.
# The device tool brings back at most 8 files from $OUT: the scripts write their logs under LOGS and
# pack_logs puts them into one $OUT/logs.tgz next to the summary, after each phase and at exit (a
# run killed at its time limit keeps what the last phase packed).
# NVLink SHARP/multicast must stay off on shared hosts: a program using it can take the GPUs out
# of service. Braid never uses it; NVIDIA's NCCL must be told.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# CUDA_ARCHS (BRAID_CUDA_ARCHS, e.g. 80-as-90: the Ampere code paths on Hopper) builds into its own folder.
build=build-gpu${CUDA_ARCHS:+-$CUDA_ARCHS}
# BRAID_PREBUILT names a folder made by scripts/stage-prebuilt.sh on a machine with nvcc (the build
# tree's layout: src/libnccl.so.2, tests/gpu/gpu_*, tools/perf/braid-perf; plugins/: the tests' net
# plugins): nothing is built, those binaries run. A GPU machine's time is then spent on
# measurements, not on compiling.
if [ -n "${BRAID_PREBUILT:-}" ]; then
  BRAID_PREBUILT=$(cd "$BRAID_PREBUILT" && pwd) || { echo "BRAID_PREBUILT: no such folder" >&2; return 1; }
  export LD_LIBRARY_PATH="$BRAID_PREBUILT/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export BRAID_TEST_PLUGIN_DIR="$BRAID_PREBUILT/plugins"
fi
LOGS=$(mktemp -d /tmp/braid-logs.XXXXXX)
pack_logs() { tar czf "$OUT/logs.tgz.part" -C "$LOGS" . && mv "$OUT/logs.tgz.part" "$OUT/logs.tgz"; }
trap pack_logs EXIT
perf=${BRAID_PREBUILT:+$BRAID_PREBUILT/tools/perf/braid-perf}
perf=${perf:-$build/tools/perf/braid-perf}
braid_lib=${BRAID_PREBUILT:+$BRAID_PREBUILT/src/libnccl.so.2}
braid_lib=${braid_lib:-$build/src/libnccl.so.2}

gpu_build() {
  local nvcc_path start
  if [ -n "${BRAID_PREBUILT:-}" ]; then
    echo "== prebuilt: $BRAID_PREBUILT (libnccl.so.2 $(stat -Lc %s "$BRAID_PREBUILT/src/libnccl.so.2") bytes)"
    # The programs must load the staged library, not one their RPATH or the environment names.
    local loaded
    loaded=$(ldd "$perf" | awk '/libnccl.so.2/ {print $3}')
    [ "$(readlink -f "$loaded")" = "$(readlink -f "$braid_lib")" ] ||
      { echo "braid-perf loads ${loaded:-no libnccl.so.2}, not the staged library" >&2; return 1; }
    return 0
  fi
  nvcc_path=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  echo "== build ($(nproc) cores)"
  start=$(date +%s)
  local headers
  headers=$(nvidia_headers_dir)
  cmake --preset default -B "$build" -DCMAKE_CUDA_COMPILER="$nvcc_path" ${CUDA_ARCHS:+-DBRAID_CUDA_ARCHS="$CUDA_ARCHS"} \
    ${headers:+-DBRAID_NVIDIA_NCCL_RELEASES_DIR="$headers"} \
    >"$LOGS/configure.log" 2>&1 \
    || { tail -30 "$LOGS/configure.log"; return 1; }
  cmake --build "$build" -j"$(nproc)" >"$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; return 1; }
  echo "build: $(( $(date +%s) - start )) s; libnccl.so.2 $(stat -Lc %s "$build/src/libnccl.so.2") bytes"
}

# NVIDIA's library from python3's site-packages (PyTorch's copy), unless NVIDIA_NCCL names one.
nvidia_nccl() {
  [ -n "${NVIDIA_NCCL:-}" ] && { echo "$NVIDIA_NCCL"; return; }
  python3 - <<'PY' 2>/dev/null
import glob, site
for d in site.getsitepackages():
    for f in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"):
        print(f); raise SystemExit
PY
}

# NVIDIA's headers beside that library (its wheel ships them), laid out as the tests that compile
# kernels against NVIDIA's headers look for them (tests/CMakeLists.txt): <dir>/<release>/include.
nvidia_headers_dir() {
  local lib inc code rel dir
  lib=$(nvidia_nccl)
  [ -n "$lib" ] || return 0
  inc=$(dirname "$(dirname "$lib")")/include
  [ -f "$inc/nccl.h" ] && [ -f "$inc/nccl_device.h" ] || return 0
  code=$(sed -n 's/^#define NCCL_VERSION_CODE *\([0-9]*\).*/\1/p' "$inc/nccl.h")
  [ -n "$code" ] || return 0
  rel="$((code / 10000)).$((code / 100 % 100)).$((code % 100))"
  dir=$(mktemp -d /tmp/braid-nvidia-headers.XXXXXX)
  mkdir -p "$dir/$rel" && ln -s "$inc" "$dir/$rel/include" && echo "$dir"
}

# The staged GPU test programs whose names match GPU_TESTS, one at a time (GPU_TEST_TIMEOUT s each,
# default 900 as in ctest), each reported in ctest's words (the summary greps them; exit code 77,
# nothing to run here, is a skip as in ctest); the CPU tests stay with the build machine.
run_prebuilt_gpu_tests() {
  local t name rc=0 start passed=0 failed=0 skipped=0 status
  for t in "$BRAID_PREBUILT"/tests/gpu/gpu_*; do
    name=$(basename "$t")
    [[ $name =~ ${GPU_TESTS:-.} ]] || continue
    start=$(date +%s)
    echo "== $name"
    timeout -k 30 "${GPU_TEST_TIMEOUT:-900}" "$t"
    status=$?
    if [ $status -eq 0 ]; then
      passed=$((passed + 1)); echo "$name: Passed $(( $(date +%s) - start )) sec"
    elif [ $status -eq 77 ]; then
      skipped=$((skipped + 1)); echo "$name: Not Run (skipped) $(( $(date +%s) - start )) sec"
    else
      failed=$((failed + 1)); rc=1; echo "***Failed $name (exit $status) $(( $(date +%s) - start )) sec"
    fi
    pack_logs  # a run cut off by a time limit keeps the programs that finished
  done
  echo "$passed tests passed, $failed tests failed, $skipped skipped (prebuilt GPU programs)"
  return $rc
}
