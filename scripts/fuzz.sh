#!/usr/bin/env bash
# fuzz.sh -- builds the libFuzzer harnesses of tests/fuzz (the fuzz preset: clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, nothing else of Braid) and runs each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_EACH] [HARNESS...]
#
# SECONDS_EACH defaults to 3600 (one hour per harness, for a manual run); CI runs `scripts/fuzz.sh 30`.
# HARNESS names one of tests/fuzz/*_fuzz.cc without the suffix (root_checkin); default: all of them.
# Each harness starts from the committed corpus tests/fuzz/corpus/<harness>_fuzz/ (read only) and
# keeps what it finds in build-fuzz/corpus/<harness>_fuzz/, which later runs start from too. A crash,
# a sanitizer report or a failed invariant leaves its input in build-fuzz/artifacts/<harness>_fuzz/
# (replay it with `build-fuzz/tests/fuzz/<harness>_fuzz FILE`) and makes this script exit 1.
# FUZZ_JOBS=N runs N fuzzing processes per harness (libFuzzer's -fork), default 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${1:-3600}
shift || true
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || {
  echo "fuzz.sh: SECONDS_EACH must be a positive integer, not '$seconds'" >&2
  exit 2
}
jobs=${FUZZ_JOBS:-1}
build_dir=build-fuzz # binaryDir of the fuzz preset (CMakePresets.json)

harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  for src in tests/fuzz/*_fuzz.cc; do
    name=$(basename "$src" .cc)
    harnesses+=("${name%_fuzz}")
  done
fi

t0=$SECONDS
cmake --preset fuzz >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("${h}_fuzz"); done
cmake --build --preset fuzz --target "${targets[@]}"
echo "fuzz.sh: built ${#targets[@]} harnesses in $((SECONDS - t0)) s"

passed=0
failed=0
for h in "${harnesses[@]}"; do
  name=${h}_fuzz
  work=$build_dir/corpus/$name
  artifacts=$build_dir/artifacts/$name
  mkdir -p "$work" "$artifacts"
  fork=()
  [[ $jobs -gt 1 ]] && fork=(-fork="$jobs")
  echo "fuzz.sh: $name for $seconds s"
  t=$SECONDS
  rc=0
  "$build_dir/tests/fuzz/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${fork[@]}" "$work" "tests/fuzz/corpus/$name" >"$build_dir/$name.log" 2>&1 || rc=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added):' "$build_dir/$name.log" | tr '\n' ' ' || true
  echo
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    echo "fuzz.sh: $name: no crash in $((SECONDS - t)) s"
  else
    failed=$((failed + 1))
    echo "fuzz.sh: $name FAILED (exit code $rc); its log ends:"
    tail -40 "$build_dir/$name.log"
    ls -l "$artifacts"
  fi
done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
