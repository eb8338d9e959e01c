#!/usr/bin/env bash
# The framework workloads against both libraries, alternating: RUNS runs of each per library, the
# library a run uses is given by LD_PRELOAD (PyTorch's own libnccl.so.2 is NVIDIA's).
#
#   BRAID_LIB=build/src/libnccl.so.2 bash scripts/workloads/run.sh [NGPUS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-$(nvidia-smi -L | wc -l)}
runs=${RUNS:-2}
braid=$(realpath "${BRAID_LIB:?set BRAID_LIB to the path of the libnccl.so.2 Braid built}")
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# Each launch within LAUNCH_TIMEOUT seconds (a hung job names itself instead of eating the call).
launch() {
  timeout "${LAUNCH_TIMEOUT:-180}" python3 -m torch.distributed.run --standalone --nproc-per-node "$n" "$@" 2>&1 |
    grep -E '^(tp_decode|fsdp_step)' || echo "no result (exit ${PIPESTATUS[0]})"
}
for i in $(seq "$runs"); do
  for lib in nvidia braid; do
    pre=""
    [ "$lib" = braid ] && pre=$braid
    for w in "tp_decode.py graph" "tp_decode.py eager" "fsdp_step.py"; do
      # shellcheck disable=SC2086
      echo "$lib run $i: $(LD_PRELOAD=$pre launch "$here"/$w)"
    done
  done
done
