#!/usr/bin/env bash
# Builds Braid, runs the GPU tests, and runs braid-perf against Braid and NVIDIA's NCCL in the same
# run on this machine; prints a short table last. The summary goes to $OUT (or ./out when OUT is
# unset), the logs and braid-perf's comparisons as JSON (json/) into $OUT/logs.tgz.
#
#   bash scripts/gpu-check.sh            # everything
#   NVIDIA_NCCL=/path/libnccl.so.2 bash scripts/gpu-check.sh
#   SKIP_TESTS=1 SKIP_CHECKS=1 SKIP_COMM=1 PERF_OPS="all_reduce" CHANNEL_SWEEP="16 24 32" bash scripts/gpu-check.sh
#   GPU_TESTS="premulsum|split|hang" bash scripts/gpu-check.sh   # only the GPU tests whose names match
#   GPU_TIER=quick bash scripts/gpu-check.sh   # the quick GPU tier (tests/README.md); default: full
#   SKIP_PERF=1 bash scripts/gpu-check.sh        # the tests alone
#   BRAID_PREBUILT=build-stage bash scripts/gpu-check.sh   # binaries from scripts/stage-prebuilt.sh, no build
#   PERF_RANGE="-b 4 -e 4G -f 4" bash scripts/gpu-check.sh        # the sizes of the collective sweeps (8 GPUs: to 4 GiB)
# Everything takes more than 10 minutes on 4 GPUs (the GPU tests alone ~12 min, the collective sweeps
# ~5 of them): to keep each run under a time limit, split it with GPU_TESTS, SKIP_TESTS and PERF_OPS.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source scripts/gpu-env.sh || exit 1
gpu_build || exit 1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$LOGS/gpus.txt"
ngpu=$(nvidia-smi -L | wc -l)

if [ "${SKIP_TESTS:-0}" != 1 ]; then
echo "== tests"
# CPU tests in parallel; GPU tests one at a time and verbose (their own measurements are in the log).
# The thread-safety test runs its eight threads for a minute here in the full tier (10 s by default).
export BRAID_GPU_TIER=${GPU_TIER:-full}
[ "$BRAID_GPU_TIER" = quick ] || export BRAID_THREAD_TEST_SECONDS=${BRAID_THREAD_TEST_SECONDS:-60}
if [ -n "${BRAID_PREBUILT:-}" ]; then
  run_prebuilt_gpu_tests >"$LOGS/ctest.log" 2>&1
  tests_rc=$?
else
  ctest --test-dir "$build" --output-on-failure -j8 -LE gpu >"$LOGS/ctest.log" 2>&1
  tests_rc=$?
  ctest --test-dir "$build" -V -L gpu -R "${GPU_TESTS:-.}" >>"$LOGS/ctest.log" 2>&1 || tests_rc=1
fi
grep -E "tests passed|tests failed|\*\*\*Failed|Not Run|lost|grew|FAILED" "$LOGS/ctest.log" | tail -20
pack_logs
else
  tests_rc=0
fi

tests_verdict() { echo "tests: $( [ $tests_rc -eq 0 ] && echo PASS || echo FAIL ) (details in ctest.log, in logs.tgz)"; }
if [ "${SKIP_PERF:-0}" = 1 ]; then
  tests_verdict
  exit $tests_rc
fi
nv=$(nvidia_nccl)
echo "== braid-perf (NVIDIA NCCL: ${nv:-not found})"
summary="$OUT/summary.txt"
: >"$summary"
# The PyTorch check (ctest torch_dist, tests/integration/run_torch_dist.sh), when it ran.
grep -hE '(checks: .* passed|ddp step median|banners: .* Braid)' "$LOGS/ctest.log" 2>/dev/null |
  sed 's/^[0-9]*: /-- torch: /' >>"$summary"
# Each comparison's medians also go to json/LABEL.json in logs.tgz (the device tool brings back a few
# files only): `python3 scripts/perf_page.py --import $OUT/logs.tgz` files them under docs/perf-data/
# and rebuilds docs/performance.md's sweep tables and plots.
mkdir -p "$LOGS/json"
run_perf() {  # label, args...
  local label=$1; shift
  if [ -n "$nv" ]; then
    timeout 300 "$perf" "$@" --compare "$nv" --json "$LOGS/json/$label.json" >"$LOGS/perf-$label.log" 2>&1
  else
    timeout 300 "$perf" "$@" >"$LOGS/perf-$label.log" 2>&1
  fi
  local rc=$?
  pack_logs
  { echo "-- $label: braid-perf $* (rc $rc)"; grep -vE '^\s*$' "$LOGS/perf-$label.log" | grep -vE '^# (compare|  |medians|WARNING)' |
      grep -E 'ms|MiB|^ +[0-9]|summary' ; } >>"$summary"
}
# PreMulSum (nccl-tests' mulsum) on every datatype, checked, Braid alone, with and without
# registered buffers: the GPU tests cover five types, this covers all twelve through braid-perf's
# checker.
if [ "${SKIP_CHECKS:-0}" != 1 ]; then
  for op in all_reduce reduce reduce_scatter; do
    for reg in 0 1; do
      log="$LOGS/check-mulsum-$op-R$reg.log"
      timeout 180 "$perf" "$op" -p -N "$ngpu" -d all -o mulsum -b 8 -e 64M -f 64 -w 1 -n 2 -c 1 -R $reg >"$log" 2>&1
      echo "-- mulsum $op -R $reg, every type, checked (rc $?): $(grep -E '^# Errors' "$log")" >>"$summary"
    done
  done
fi
if [ "${SKIP_COMM:-0}" != 1 ]; then
  run_perf comm-p comm -p -N "$ngpu" -n 10 --runs 3
  run_perf comm-g comm -g -N "$ngpu" -n 10 --runs 3
fi
# Collectives, one process per GPU, every GPU, against NVIDIA NCCL in the same run.
for op in ${PERF_OPS:-all_reduce all_gather reduce_scatter broadcast reduce sendrecv alltoall}; do
  # shellcheck disable=SC2086 # PERF_RANGE is a list of options
  run_perf "$op-p$ngpu" "$op" -p -N "$ngpu" ${PERF_RANGE:--b 8 -e 1G -f 8} -w 5 -n 20 -c 0 --runs 3
done
# Mid sizes on the Direct algorithm's Simple FIFOs (one-shot, and the two-shot AllReduce where the
# cost model takes it), checked, eager and replayed from a graph, against NVIDIA NCCL.
for op in all_reduce all_gather reduce_scatter; do
  BRAID_DIRECT_SIMPLE_BUFFSIZE=262144 run_perf "$op-direct-simple-p$ngpu" "$op" -p -N "$ngpu" -b 64K -e 16M -f 4 -w 5 -n 20 \
    -c 1 --runs 3
done
BRAID_DIRECT_SIMPLE_BUFFSIZE=262144 run_perf "all_reduce-direct-simple-graph-p$ngpu" all_reduce -p -N "$ngpu" -b 64K \
  -e 16M -f 4 -w 20 -n 50 -G 10 -c 0 --runs 3
# Symmetric windows (nccl-tests -R 2): both buffers registered with NCCL_WIN_COLL_SYMMETRIC, where
# Braid runs its symmetric kernels, against NVIDIA NCCL's own on the same windows; checked.
for op in all_reduce all_gather reduce_scatter; do
  run_perf "$op-symmetric-p$ngpu" "$op" -p -N "$ngpu" -R 2 -b 8 -e 16M -f 4 -w 5 -n 20 -c 1 --runs 3
done
# Small AllReduce inside a replayed CUDA graph (nccl-tests -G), and mid sizes of the three
# collectives there, where graph registration may take the zero-copy rings.
run_perf "all_reduce-graph-p$ngpu" all_reduce -p -N "$ngpu" -b 8 -e 64K -f 8 -w 20 -n 100 -G 20 -c 0 --runs 3
for op in all_reduce all_gather reduce_scatter; do
  run_perf "$op-graph-mid-p$ngpu" "$op" -p -N "$ngpu" -b 64K -e 16M -f 4 -w 20 -n 50 -G 10 -c 0 --runs 3
done
for n in 2; do
  [ "$ngpu" -gt $n ] && run_perf "all_reduce-p$n" all_reduce -p -N $n -b 8 -e 1G -f 64 -w 5 -n 20 -c 0 --runs 3
done
# Channel count experiment (Braid only): AllReduce at 256 MiB and 8 B by NCCL_MIN/MAX_NCHANNELS.
if [ -n "${CHANNEL_SWEEP:-}" ]; then
  for ch in $CHANNEL_SWEEP; do
    NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch timeout 120 "$perf" all_reduce -p -N "$ngpu" -b 256M -e 256M -w 5 -n 20 -c 0 \
      >"$LOGS/perf-channels-$ch.log" 2>&1
    echo "-- channels $ch: $(grep -E '^ +[0-9]' "$LOGS/perf-channels-$ch.log" | awk '{print $1" B "$6" us busbw "$8}')" >>"$summary"
  done
fi

echo
echo "== summary (A = Braid, B = NVIDIA NCCL; medians; A/B < 1 means Braid is cheaper)"
cat "$summary"
tests_verdict
exit $tests_rc
