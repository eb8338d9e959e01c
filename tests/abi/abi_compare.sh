#!/usr/bin/env bash
# abi_compare: Braid's nccl.h against NVIDIA's, through the abi_dump programs (see abi_dump.c).
#
#   abi_compare.sh OUTDIR OURS_HEADER OURS_C OURS_CXX [NVIDIA_HEADER NVIDIA_C NVIDIA_CXX | --skip REASON]
#
# Always: runs Braid's C and C++ dumps, checks they agree with each other, and checks that the
# functions each header declares are exactly the hand-written list in abi_functions.h.
# Then, with NVIDIA's header: diffs the dumps (C against C, C++ against C++) and the function lists;
# any difference fails, printed as a unified diff. Without it: exits 77, which CTest reports as
# skipped, never as passed. The dumps stay in OUTDIR for inspection.
set -euo pipefail

if [[ $# -lt 4 ]]; then
  echo "usage: $0 OUTDIR OURS_HEADER OURS_C OURS_CXX [NVIDIA_HEADER NVIDIA_C NVIDIA_CXX | --skip REASON]" >&2
  exit 2
fi
outdir=$1
ours_h=$2
ours_c=$3
ours_cxx=$4
shift 4
mkdir -p "$outdir"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The ncclX/pncclX names a header declares, sorted (comments stripped first).
header_functions() {
  perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
    print "$1\n" while /\b(?:ncclResult_t|const\s+char\s*\*|void)\s*(p?nccl\w+)\s*\(/g' "$1" | sort
}

# A dump's function list, in the same form.
dump_functions() {
  sed -n 's/^function\.\(p\{0,1\}nccl[A-Za-z0-9_]*\) declared$/\1/p' "$1" | sort
}

# diff two files, or report the difference under a title.
compare() {
  local title=$1 a=$2 b=$3
  if diff -u --label "$a" --label "$b" "$a" "$b" >"$outdir/diff.tmp"; then
    echo "ok: $title ($(wc -l <"$a") lines identical)"
  else
    fail "$title"
    cat "$outdir/diff.tmp"
  fi
  rm -f "$outdir/diff.tmp"
}

# Checks one header: its dumps run, C and C++ agree, and it declares exactly the listed functions.
check_header() {
  local tag=$1 header=$2 c_exe=$3 cxx_exe=$4
  echo "== $tag: $header"
  "$c_exe" >"$outdir/$tag.c.txt"
  "$cxx_exe" >"$outdir/$tag.cxx.txt"
  grep -v '^cxx\.' "$outdir/$tag.cxx.txt" >"$outdir/$tag.cxx-common.txt"
  compare "$tag: C and C++ builds agree" "$outdir/$tag.c.txt" "$outdir/$tag.cxx-common.txt"

  header_functions "$header" >"$outdir/$tag.header-functions.txt"
  dump_functions "$outdir/$tag.c.txt" >"$outdir/$tag.list-functions.txt"
  compare "$tag: functions declared by the header == abi_functions.h list" \
    "$outdir/$tag.header-functions.txt" "$outdir/$tag.list-functions.txt"
  local count
  count=$(sed -n 's/^function\.count //p' "$outdir/$tag.c.txt")
  echo "   $tag declares $(wc -l <"$outdir/$tag.header-functions.txt") symbols; list has $count ncclX + $count pncclX"
}

check_header braid "$ours_h" "$ours_c" "$ours_cxx"

if [[ ${1:-} == --skip ]]; then
  if [[ $failures -ne 0 ]]; then
    echo "abi_compare: $failures check(s) failed"
    exit 1
  fi
  echo "SKIPPED: ${2:-NVIDIA nccl.h not available}; Braid's header was checked only against itself."
  exit 77
fi
if [[ $# -lt 3 ]]; then
  echo "usage: missing NVIDIA_HEADER NVIDIA_C NVIDIA_CXX" >&2
  exit 2
fi
nv_h=$1
check_header nvidia "$nv_h" "$2" "$3"

# Braid's version macros say 2.28.9 until its 2.32 API is complete, so these facts differ on purpose;
# they are printed side by side and left out of the comparison. Everything else must be identical.
readonly version_facts='^(macro\.NCCL_MINOR|macro\.NCCL_PATCH|macro\.NCCL_VERSION_CODE|macro\.NCCL_VERSION\(NCCL_MAJOR,NCCL_MINOR,NCCL_PATCH\)|init\.[A-Z_]*\.version) '
echo "== braid vs nvidia"
for tag in braid nvidia; do
  for lang in c cxx; do
    grep -Ev "$version_facts" "$outdir/$tag.$lang.txt" >"$outdir/$tag.$lang.compared.txt" || true
  done
done
echo "expected differences (version facts, Braid | NVIDIA):"
paste -d'|' <(grep -E "$version_facts" "$outdir/braid.c.txt") <(grep -E "$version_facts" "$outdir/nvidia.c.txt") |
  sed 's/^/   /'
compare "C dump: braid vs nvidia" "$outdir/braid.c.compared.txt" "$outdir/nvidia.c.compared.txt"
compare "C++ dump: braid vs nvidia" "$outdir/braid.cxx.compared.txt" "$outdir/nvidia.cxx.compared.txt"
compare "declared functions: braid vs nvidia" "$outdir/braid.header-functions.txt" \
  "$outdir/nvidia.header-functions.txt"

if [[ $failures -ne 0 ]]; then
  echo "abi_compare: $failures check(s) failed; dumps are in $outdir"
  exit 1
fi
echo "abi_compare: Braid's nccl.h is ABI-identical to $nv_h ($(wc -l <"$outdir/braid.cxx.txt") facts compared)"
