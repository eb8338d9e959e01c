#!/usr/bin/env bash
# Braid against NVIDIA's NCCL on every GPU of this host (written for 4 GPUs; 2 work too). Each phase
# finishes within 10 minutes; each figure comes from the same run as NVIDIA's (medians of 3 alternating
# runs) and is printed beside the target it is held to; logs go to $OUT/logs.tgz.
#
#   OUT=$OUT bash scripts/gpu-targets.sh p2p     # sendrecv / alltoall, 8 B-64 KiB time and 64 MiB-1 GiB busbw
#   OUT=$OUT bash scripts/gpu-targets.sh reg     # 8 B AllReduce in a graph; registered vs copy path at 256 MiB
#   OUT=$OUT bash scripts/gpu-targets.sh hosts   # 2x2 and 4x1 emulated hosts over sockets (2 GPUs: 2x1); idle CPU
#   OUT=$OUT bash scripts/gpu-targets.sh tests   # the GPU tests that need 4 GPUs (splits, shrink, graphs, registration)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# shellcheck source=scripts/gpu-env.sh
source scripts/gpu-env.sh || exit 1
phase=${1:?usage: gpu-targets.sh p2p|reg|hosts|tests}
gpu_build || exit 1
nv=$(nvidia_nccl)
[ -n "$nv" ] || { echo "NVIDIA's libnccl.so.2 not found (set NVIDIA_NCCL)"; exit 1; }
n=$(nvidia-smi -L | wc -l)
summary="$OUT/summary.txt"
: >"$summary"

# label, target, braid-perf args: the compare table's rows and summary go to the summary.
cmp() {
  local label=$1 target=$2; shift 2
  timeout 240 "$perf" "$@" --runs 3 --compare "$nv" >"$LOGS/$label.log" 2>&1
  local rc=$?
  { echo "-- $label (target: $target; rc $rc): braid-perf $*"; grep -E '^ +[0-9]|^# summary' "$LOGS/$label.log"; } >>"$summary"
  pack_logs
}

case $phase in
  p2p)
    for op in sendrecv alltoall; do
      cmp "$op-large" ">= 1.0x NCCL busbw" $op -p -N "$n" -b 64M -e 1G -f 2 -w 3 -n 10 -c 1
      cmp "$op-small" "<= 1.0x NCCL time" $op -p -N "$n" -b 8 -e 64K -f 8 -w 20 -n 100 -c 1
    done
    ;;
  reg)
    cmp ar-graph "8 B <= 7.6 us" all_reduce -p -N "$n" -b 8 -e 8 -w 20 -n 100 -G 20 -c 0
    for op in all_gather reduce_scatter all_reduce; do
      cmp "$op-copy" "the registered row's baseline" $op -p -N "$n" -b 256M -e 256M -w 3 -n 10 -c 1 -R 0
      cmp "$op-reg" ">= the copy path with half its CTAs" $op -p -N "$n" -b 256M -e 256M -w 3 -n 10 -c 1 -R 1
    done
    # Read-direct ReduceScatter on more than two ranks keeps every CTA (plan::zeroCopyModel); its half-CTA figure:
    NCCL_MAX_NCHANNELS=16 cmp reduce_scatter-reg-16ch ">= the copy path" \
      reduce_scatter -p -N "$n" -b 256M -e 256M -w 3 -n 10 -c 1 -R 1
    ;;
  hosts)
    export NCCL_SOCKET_IFNAME=lo NCCL_NET=Socket
    for hosts in 2 4; do
      [ "$hosts" -le "$n" ] || continue  # 2 GPUs: 2 hosts of 1 only
      for op in all_reduce all_gather reduce_scatter; do
        cmp "$op-hosts$hosts" ">= 1.0x NCCL busbw" $op -p -N "$n" --hosts $hosts -b 256M -e 256M -w 3 -n 10 -c 1
      done
      cmp "all_reduce-small-hosts$hosts" "<= 1.0x NCCL time" all_reduce -p -N "$n" --hosts $hosts -b 8 -e 64K -f 8 \
        -w 20 -n 100 -c 1
    done
    for lib in "$braid_lib" "$nv"; do
      LD_PRELOAD=$lib timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" \
        scripts/idle_cpu.py >"$LOGS/idle-cpu.log" 2>&1
      echo "-- idle CPU, $n processes each its own host (target < 5% of a core), $lib:" >>"$summary"
      grep 'idle CPU' "$LOGS/idle-cpu.log" >>"$summary"
    done
    ;;
  tests)
    # The thread-safety test with 4 ranks for its full minute, splits 2x2 / 4x1, shrink after a kill,
    # ncclCommInitRankScalable with 2 roots, sharing splits, graphs and registration at 4 GPUs.
    export BRAID_THREAD_TEST_SECONDS=60
    GPU_TESTS=${GPU_TESTS:-thread_safety|split|shrink|lifecycle|graph|register|mem_alloc}
    if [ -n "${BRAID_PREBUILT:-}" ]; then
      GPU_TEST_TIMEOUT=${GPU_TEST_TIMEOUT:-300} run_prebuilt_gpu_tests >"$LOGS/ctest.log" 2>&1
    else
      timeout 560 ctest --test-dir "$build" -V -L gpu -R "$GPU_TESTS" >"$LOGS/ctest.log" 2>&1
    fi
    echo "-- GPU tests (rc $?): $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log" | tail -1)" >>"$summary"
    grep -E '\*\*\*Failed|FAILED|Not Run' "$LOGS/ctest.log" | head -20 >>"$summary"
    ;;
  *)
    echo "unknown phase $phase"
    exit 2
    ;;
esac
pack_logs
echo "== $phase on $n GPUs (A = Braid, B = NVIDIA NCCL)"
cat "$summary"
