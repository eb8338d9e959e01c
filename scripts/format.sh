#!/usr/bin/env bash
# format.sh -- formats Braid's C, C++ and CUDA sources with the repository's .clang-format.
#
#   scripts/format.sh            rewrite every file that is not formatted
#   scripts/format.sh --check    change nothing; print the diff of each file that is not formatted and
#                                exit 1 if there is one (what CI runs)
#   scripts/format.sh [--check] FILE...   only these files
#
# Covers src include tests tools examples: tracked files and new ones git does not ignore. CI uses
# clang-format 14 (Debian 12); another version may format a few constructs differently.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
command -v clang-format >/dev/null || {
  echo "format.sh: clang-format not found (apt-get install clang-format)" >&2
  exit 2
}

files=()
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  dirs=()
  for d in src include tests tools examples; do [[ -d $d ]] && dirs+=("$d"); done
  if [[ ${#dirs[@]} -gt 0 ]]; then
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      mapfile -t files < <(git ls-files -co --exclude-standard -- "${dirs[@]}" |
        grep -E '\.(c|cc|cpp|cxx|h|hh|hpp|cu|cuh)$' | sort -u)
    else
      mapfile -t files < <(find "${dirs[@]}" -type f -regextype posix-extended \
        -regex '.*\.(c|cc|cpp|cxx|h|hh|hpp|cu|cuh)$' | sort)
    fi
  fi
fi
existing=()
for f in "${files[@]}"; do [[ -f $f ]] && existing+=("$f"); done
echo "$(clang-format --version | head -1); ${#existing[@]} files"
[[ ${#existing[@]} -eq 0 ]] && exit 0

if [[ $check -eq 0 ]]; then
  printf '%s\0' "${existing[@]}" | xargs -0 clang-format -i --style=file
  echo "formatted"
  exit 0
fi

bad=()
for f in "${existing[@]}"; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then bad+=("$f"); fi
done
if [[ ${#bad[@]} -eq 0 ]]; then
  echo "format check: OK"
  exit 0
fi
for f in "${bad[@]}"; do
  clang-format --style=file "$f" | diff -u --label "a/$f" --label "b/$f" "$f" - || true
done
echo "format check: ${#bad[@]} file(s) not formatted: ${bad[*]}"
echo "fix with: scripts/format.sh"
exit 1
