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
LOGS=$(mktemp -d /tmp/braid-logs.XXXXXX)
pack_logs() { tar czf "$OUT/logs.tgz.part" -C "$LOGS" . && mv "$OUT/logs.tgz.part" "$OUT/logs.tgz"; }
trap pack_logs EXIT
perf="$build/tools/perf/braid-perf"

gpu_build() {
  local nvcc_path start
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
