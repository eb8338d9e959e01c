#!/usr/bin/env bash
# CTest's entry to run_torch_dist.sh: skips (exit 77) with the reason when there is no GPU or no
# PyTorch with NCCL, instead of passing. Argument: Braid's libnccl.so.2.
set -uo pipefail
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no NVIDIA GPU (nvidia-smi -L failed)"; exit 77
fi
if ! python3 -c "import torch.distributed as d, sys; sys.exit(0 if d.is_nccl_available() else 1)" 2>/dev/null; then
  echo "SKIPPED: python3 has no PyTorch with NCCL"; exit 77
fi
if [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then
  echo "SKIPPED: needs 2 GPUs"; exit 77
fi
# The quick tier (BRAID_GPU_TIER=quick, tests/README.md) checks correctness only: no timing rounds.
if [ "${BRAID_GPU_TIER:-full}" = quick ]; then export TIMING_ROUNDS=${TIMING_ROUNDS:-0}; fi
BRAID_LIB=$1 OUT=${OUT:-$PWD} exec bash "$(dirname "$0")/run_torch_dist.sh"
