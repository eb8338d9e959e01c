#!/usr/bin/env bash
# Tuning experiments on the GPU machine: builds Braid, then runs braid-perf once per line of a plan
# file and prints one compact table (label, size, time us, busbw GB/s) from the out-of-place columns.
#
#   bash scripts/experiments/tune-sweep.sh PLAN      (plans kept in scripts/experiments/tune-plans/)
# Each non-comment line of PLAN is   label | ENV=V ... | braid-perf arguments
# with label ending in "@nccl" to run the same line on NVIDIA's NCCL (LD_PRELOAD) instead of Braid.
# The table goes to $OUT (or ./out), the logs into $OUT/logs.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source scripts/gpu-env.sh
gpu_build || exit 1
nv=$(nvidia_nccl)
table="$OUT/tune-table.txt"
: >"$table"
n=0
while IFS='|' read -r label envs args; do
  label=${label#"${label%%[![:space:]]*}"}
  label=${label%"${label##*[![:space:]]}"}
  case "$label" in ''|\#*) continue ;; esac
  n=$((n + 1))
  log="$LOGS/tune-$n.log"
  pre=""
  [[ "$label" == *@nccl ]] && pre="LD_PRELOAD=$nv"
  # shellcheck disable=SC2086
  env $pre $envs timeout 120 "$perf" $args -c 0 >"$log" 2>&1
  echo "# $n $label: $envs braid-perf $args (rc $?)" >>"$table"
  pack_logs
  grep -E '^ +[0-9]' "$log" | awk -v l="$label" '{printf "%-28s %12s %10s %8s\n", l, $1, $6, $8}' >>"$table"
done <"$1"
cat "$table"
