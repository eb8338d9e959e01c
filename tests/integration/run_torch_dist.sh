#!/usr/bin/env bash
# PyTorch's ProcessGroupNCCL on Braid, against NVIDIA's NCCL in the same run (needs GPUs and torch).
#
#   bash tests/integration/run_torch_dist.sh [NPROC]      # default: every GPU
#   BRAID_LIB=/path/libnccl.so.2 OUT=/tmp/torch bash tests/integration/run_torch_dist.sh 2
#
# 1. torch_dist.py on NVIDIA's libnccl.so.2 (PyTorch's own): proves the checks' expectations and
#    records the DDP parameters and step time;
# 2. the same on Braid, loaded with LD_PRELOAD, compared with run 1. Braid's VERSION banner must
#    appear and NVIDIA's must not (PyTorch's wheel maps its own copy too; nothing may call it);
# 3. Braid again with TORCH_NCCL_USE_COMM_NONBLOCKING=1 (nonblocking communicators: ncclInProgress
#    and ncclCommGetAsyncError polling inside PyTorch).
# 4. DDP step time: TIMING_ROUNDS (3; 0 skips it) rounds of one NVIDIA and one Braid run, alternating, each the
#    median of 100 steps; the ratio of the medians over rounds is printed (the issue's target: 1.05).
# Exit status 0 only when every correctness run passes. Logs under $OUT/torch-NPROC.
set -uo pipefail
cd "$(dirname "$0")/../.."
nproc=${1:-$(nvidia-smi -L | wc -l)}
lib=$(realpath "${BRAID_LIB:-build-gpu/src/libnccl.so.2}")
out=${OUT:-$PWD/out}/torch-$nproc
mkdir -p "$out"
[ -f "$lib" ] || { echo "no Braid library at $lib (build first, or set BRAID_LIB)"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NCCL_DEBUG=VERSION
export TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING=false
launch() { timeout -k 15 400 python3 -m torch.distributed.run --standalone --nproc-per-node "$nproc" \
  tests/integration/torch_dist.py "$@"; }
report() {  # label, log, rc
  grep -E '^(library|checks|ddp|FAIL|PASS)' "$2"
  [ "$3" -eq 0 ] || { echo "$1 failed (rc $3); see $2"; grep -vE '^\s*$' "$2" | tail -25; }
}
# One banner per rank from Braid, and none from NVIDIA's library (its banner says "+cuda").
banners_ok() {
  local braid nvidia
  braid=$(grep -c "^NCCL version .*+braid.* from $lib" "$1")
  nvidia=$(grep -c "^NCCL version .*+cuda" "$1")
  echo "banners: $braid from Braid, $nvidia from NVIDIA's library"
  [ "$braid" -ge "$nproc" ] && [ "$nvidia" -eq 0 ]
}

echo "== torch_dist.py on NVIDIA's NCCL, $nproc ranks"
launch --expect nvidia --out "$out/nvidia" >"$out/nvidia.log" 2>&1
rc=$?
report "the reference run" "$out/nvidia.log" $rc
echo "banners: $(grep -c '^NCCL version .*+cuda' "$out/nvidia.log") from NVIDIA's library"
[ $rc -eq 0 ] || exit 1

status=0
for mode in blocking nonblocking; do
  echo "== torch_dist.py on Braid ($lib), $nproc ranks, $mode communicators"
  nb=0; [ $mode = nonblocking ] && nb=1
  LD_PRELOAD=$lib BRAID_LIB=$lib TORCH_NCCL_USE_COMM_NONBLOCKING=$nb \
    launch --expect braid --out "$out/braid-$mode" --ref "$out/nvidia/result.json" >"$out/braid-$mode.log" 2>&1
  rc=$?
  report "Braid ($mode)" "$out/braid-$mode.log" $rc
  banners_ok "$out/braid-$mode.log" || rc=1
  [ $rc -eq 0 ] || status=1
done

if [ "${TIMING_ROUNDS:=3}" -eq 0 ]; then
  echo "== DDP step time: not measured (TIMING_ROUNDS=0)"
  exit $status
fi
echo "== DDP step time, $nproc ranks: $TIMING_ROUNDS alternating rounds"
step_ms() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ddp_step_ms_median'])" "$1"; }
nv_times=() braid_times=()
for round in $(seq "$TIMING_ROUNDS"); do
  launch --expect nvidia --timing-only --out "$out/time-nvidia-$round" >"$out/time-nvidia-$round.log" 2>&1 &&
    nv_times+=("$(step_ms "$out/time-nvidia-$round/result.json")")
  LD_PRELOAD=$lib BRAID_LIB=$lib launch --expect braid --timing-only --out "$out/time-braid-$round" \
    >"$out/time-braid-$round.log" 2>&1 && braid_times+=("$(step_ms "$out/time-braid-$round/result.json")")
done
python3 - "${#nv_times[@]}" "${nv_times[@]}" "${braid_times[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1]); nv = [float(x) for x in sys.argv[2:2 + n]]; br = [float(x) for x in sys.argv[2 + n:]]
if not nv or not br:
    sys.exit("timing runs failed")
m_nv, m_br = statistics.median(nv), statistics.median(br)
print(f"ddp step ms per round: NVIDIA {nv}, Braid {br}")
print(f"ddp step median: Braid {m_br:.3f} ms, NVIDIA {m_nv:.3f} ms, ratio {m_br / m_nv:.3f}")
PY
exit $status
