#!/usr/bin/env bash
# test.sh -- Braid's test command: the one the README names and the last step of CI (.ci/run).
# It is exactly
#
#   cmake --preset ci && cmake --build --preset ci && ctest --preset ci
#
# configure (Ninja, warnings as errors, build folder build-ci/), build everything, run every test,
# with the time of each step. Tests that need a GPU report "Not Run (Skipped)" where there is none.
#
# GPU tests come in two tiers (tests/README.md): the quick one by default, which touches every
# feature once (one rank count per suite, smaller sweeps: BRAID_GPU_TIER=quick), and the full one
# with --full (every rank count that fits, the full sweeps). CPU tests are the same in both.
# Other arguments go to ctest, e.g. `scripts/test.sh -L cpu`, `scripts/test.sh --full -L gpu`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tier=quick
ctest_args=()
for arg in "$@"; do
  case $arg in
    --full) tier=full ;;
    --quick) tier=quick ;;
    *) ctest_args+=("$arg") ;;
  esac
done
export BRAID_GPU_TIER=$tier
if [[ -x /usr/local/cuda/bin/nvcc && :$PATH: != *:/usr/local/cuda/bin:* ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
build_dir=build-ci # binaryDir of the ci preset (CMakePresets.json)

t0=$SECONDS
cmake --preset ci
t1=$SECONDS

# "clean" when nothing has been compiled in the build folder yet, as on a fresh checkout.
kind=incremental
if [[ -z $(find "$build_dir" -name '*.o' -print -quit 2>/dev/null) ]]; then kind=clean; fi
cmake --build --preset ci
t2=$SECONDS
echo "$kind build time: $((t2 - t1)) s with $(nproc) cores"

rc=0
ctest --preset ci ${ctest_args[@]+"${ctest_args[@]}"} || rc=$?
t3=$SECONDS
echo "test.sh: configure $((t1 - t0)) s, $kind build $((t2 - t1)) s, tests $((t3 - t2)) s ($tier GPU tier); ctest exit code $rc"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "test.sh: no GPU on this machine: tests labelled gpu were skipped (they print 'SKIPPED: no CUDA GPU')"
fi
exit $rc
