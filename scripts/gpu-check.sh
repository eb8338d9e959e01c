#!/usr/bin/env bash
# Builds Braid, runs the GPU tests, and runs braid-perf against Braid and NVIDIA's NCCL in the same
# run on this machine; prints a short table last. Logs go to $OUT (or ./out when OUT is unset).
#
#   bash scripts/gpu-check.sh            # everything
#   NVIDIA_NCCL=/path/libnccl.so.2 bash scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# NVLink SHARP/multicast must stay off on shared hosts: a program using it can take the GPUs out
# of service. Braid never uses it; NVIDIA's NCCL must be told.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

nvcc_path=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
build=build-gpu
echo "== build ($(nproc) cores)"
start=$(date +%s)
cmake --preset default -B "$build" -DCMAKE_CUDA_COMPILER="$nvcc_path" >"$OUT/configure.log" 2>&1 \
  || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s; libnccl.so.2 $(stat -Lc %s "$build/src/libnccl.so.2") bytes"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpus.txt"
ngpu=$(nvidia-smi -L | wc -l)

echo "== tests"
# CPU tests in parallel; GPU tests one at a time and verbose (their own measurements are in the log).
ctest --test-dir "$build" --output-on-failure -j8 -LE gpu >"$OUT/ctest.log" 2>&1
tests_rc=$?
ctest --test-dir "$build" -V -L gpu >>"$OUT/ctest.log" 2>&1 || tests_rc=1
grep -E "tests passed|tests failed|\*\*\*Failed|Not Run|lost|grew|FAILED" "$OUT/ctest.log" | tail -20

nv=${NVIDIA_NCCL:-$(python3 - <<'PY' 2>/dev/null
import glob, site
for d in site.getsitepackages():
    for f in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"):
        print(f); raise SystemExit
PY
)}
echo "== braid-perf (NVIDIA NCCL: ${nv:-not found})"
perf="$build/tools/perf/braid-perf"
summary="$OUT/summary.txt"
: >"$summary"
run_perf() {  # label, args...
  local label=$1; shift
  if [ -n "$nv" ]; then
    "$perf" "$@" --compare "$nv" >"$OUT/perf-$label.log" 2>&1
  else
    "$perf" "$@" >"$OUT/perf-$label.log" 2>&1
  fi
  local rc=$?
  { echo "-- $label: braid-perf $* (rc $rc)"; grep -vE '^#|^\s*$' "$OUT/perf-$label.log" | grep -E 'ms|MiB' ; } >>"$summary"
}
run_perf comm-p comm -p -N "$ngpu" -n 10 --runs 5
run_perf comm-g comm -g -N "$ngpu" -n 10 --runs 3
for n in 2; do [ "$ngpu" -ge $n ] && [ "$ngpu" -ne $n ] && run_perf "comm-p$n" comm -p -N $n -n 10 --runs 3; done

echo
echo "== summary (A = Braid, B = NVIDIA NCCL; medians; A/B < 1 means Braid is cheaper)"
cat "$summary"
echo "tests: $( [ $tests_rc -eq 0 ] && echo PASS || echo FAIL ) (details in ctest.log)"
exit $tests_rc
