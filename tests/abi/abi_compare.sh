#!/usr/bin/env bash
# abi_compare: Braid's nccl.h and nccl_device/host.h against NVIDIA's NCCL 2.32.3 headers.
#
#   abi_compare.sh OUTDIR SRCDIR CC CXX CUDA_INCLUDE BRAID_INCLUDE EXPECTED (--nvidia DIR | --fetched DIR)
#
#   OUTDIR         where the dump programs and their outputs go (kept for inspection)
#   SRCDIR         tests/abi (the abi_dump sources, abi_functions.h, compare_facts.pl)
#   CC, CXX        the compilers; both header sets are built with identical commands
#   CUDA_INCLUDE   CUDA's include folder(s), colon-separated (both nccl.h include cuda_runtime.h)
#   BRAID_INCLUDE  Braid's include/
#   EXPECTED       expected-differences.txt: the only facts allowed to differ, with both values
#   --nvidia DIR   a folder holding NVIDIA's nccl.h and nccl_device/host.h (BRAID_NVIDIA_NCCL_INCLUDE_DIR)
#   --fetched DIR  what fetch_nvidia_headers.sh made: DIR/include, or DIR/SKIPPED saying why not
#
# Always: builds and runs Braid's dumps (nccl.h in C and C++, host.h in C++), checks that the C and
# C++ dumps agree, that the headers declare exactly the functions of abi_functions.h, and that the
# dumps cover every enumerator and NCCL_* macro of the headers. Then, with NVIDIA's headers (which
# must be version code 23203 and not Braid's own), does the same for them and compares the dumps fact
# by fact: a difference listed in EXPECTED is printed; any other difference fails. Without NVIDIA's
# headers it exits 77, which CTest reports as skipped, never as passed.
set -euo pipefail

if [[ $# -ne 9 || ($8 != --nvidia && $8 != --fetched) ]]; then
  echo "usage: $0 OUTDIR SRCDIR CC CXX CUDA_INCLUDE BRAID_INCLUDE EXPECTED (--nvidia DIR | --fetched DIR)" >&2
  exit 2
fi
outdir=$1 srcdir=$2 cc=$3 cxx=$4 cuda_inc=$5 braid_inc=$6 expected=$7 mode=$8 nvidia_arg=$9
readonly nvidia_code=23203
mkdir -p "$outdir"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Compiles and runs the three dumps of one header set (TAG braid or nvidia, INC its include folder).
# The headers come in by absolute path; -I INC first lets host.h's own includes resolve in the same
# set, before CUDA's folder (which may hold an older nccl.h). NCCL_OS_LINUX: NVIDIA's nccl.h declares
# ncclResetDebugInit only then, as its own Linux build sees it.
build_dumps() {
  local tag=$1 inc=$2
  local common=(-DNCCL_OS_LINUX "-DABI_NCCL_H=\"$inc/nccl.h\"" "-DABI_HOST_H=\"$inc/nccl_device/host.h\""
    -I "$srcdir" -I "$inc")
  local dir cuda_dirs
  IFS=: read -r -a cuda_dirs <<<"$cuda_inc"
  for dir in "${cuda_dirs[@]}"; do common+=(-isystem "$dir"); done
  if ! "$cc" -std=c11 "${common[@]}" "$srcdir/abi_dump.c" -o "$outdir/$tag.c.exe" ||
    ! "$cxx" -std=c++17 "${common[@]}" "$srcdir/abi_dump_cxx.cc" -o "$outdir/$tag.cxx.exe" ||
    ! "$cxx" -std=c++17 "${common[@]}" "$srcdir/abi_dump_host.cc" -o "$outdir/$tag.host.exe"; then
    fail "the dump programs do not compile against the $tag headers in $inc (compiler output above)"
    return 1
  fi
  local kind
  for kind in c cxx host; do
    if ! "$outdir/$tag.$kind.exe" >"$outdir/$tag.$kind.txt"; then
      fail "$outdir/$tag.$kind.exe failed"
      return 1
    fi
  done
}

# diff two files (or process substitutions: both are copied first), or report the difference.
compare() {
  local title=$1
  cat "$2" >"$outdir/compare.a"
  cat "$3" >"$outdir/compare.b"
  if diff -u "$outdir/compare.a" "$outdir/compare.b" >"$outdir/compare.diff"; then
    echo "ok: $title ($(wc -l <"$outdir/compare.a") lines identical)"
  else
    fail "$title"
    cat "$outdir/compare.diff"
  fi
  rm -f "$outdir/compare.a" "$outdir/compare.b" "$outdir/compare.diff"
}

# The ncclX names a header declares, in order, once each (comments and Windows-only blocks removed).
# nccl.h declares ncclX and pncclX; host.h marks its declarations NCCL_EXTERN_C.
header_functions() {
  perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{#if\s+defined\(NCCL_OS_WINDOWS\).*?#endif}{}gs;
    my %seen;
    while (/(?:NCCL_EXTERN_C\s+[\w\s\*]*?|\b(?:ncclResult_t|const\s+char\s*\*|void)\s*)\b(p?nccl\w+)\s*\(/g) {
      print "$1\n" unless $seen{$1}++ }' "$1"
}

# The X entries of one list of abi_functions.h, as ncclX names in list order.
list_functions() {
  perl -0777 -ne 'if (/#define\s+'"$1"'\([^)]*\)((?:[^\n]*\\\n)*[^\n]*)/) {
    my $l = $1; print "nccl$1\n" while $l =~ /\bX\((\w+)\)/g }' "$srcdir/abi_functions.h"
}

# Every enumerator of a header's enums, and every NCCL_* macro it defines (include guards aside).
header_enumerators() {
  perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
    while (/\benum\s*\w*\s*\{(.*?)\}/gs) { for (split /,/, $1) { print "$1\n" if /^\s*(\w+)/ } }' "$1" | sort -u
}
header_macros() {
  sed -n 's/^[ \t]*#[ \t]*define[ \t]\{1,\}\(NCCL_[A-Za-z0-9_]*\).*/\1/p' "$1" | grep -v '_H_$' | sort -u
}

# Checks one header set after build_dumps: C and C++ agree, the declared functions are exactly the
# lists (in order), and the dumps name every enumerator and macro of the headers.
check_header_set() {
  local tag=$1 inc=$2
  echo "== $tag: $inc"
  grep -v '^cxx\.' "$outdir/$tag.cxx.txt" >"$outdir/$tag.cxx-common.txt"
  compare "$tag: the C and C++ dumps of nccl.h agree" "$outdir/$tag.c.txt" "$outdir/$tag.cxx-common.txt"

  header_functions "$inc/nccl.h" >"$outdir/$tag.nccl-functions.txt"
  grep '^nccl' "$outdir/$tag.nccl-functions.txt" >"$outdir/$tag.nccl-x.txt" || true
  sed -n 's/^p//p' "$outdir/$tag.nccl-functions.txt" | sort >"$outdir/$tag.nccl-p.txt"
  list_functions NCCL_ABI_HEADER_FUNCTIONS >"$outdir/list.header.txt"
  compare "$tag: nccl.h declares the functions of NCCL_ABI_HEADER_FUNCTIONS, in order" \
    "$outdir/list.header.txt" "$outdir/$tag.nccl-x.txt"
  compare "$tag: nccl.h declares a pncclX for each ncclX" <(sort "$outdir/$tag.nccl-x.txt") "$outdir/$tag.nccl-p.txt"

  header_functions "$inc/nccl_device/host.h" >"$outdir/$tag.host-functions.txt"
  list_functions NCCL_ABI_DEVICE_FUNCTIONS >"$outdir/list.device.txt"
  compare "$tag: nccl_device/host.h declares the X functions of NCCL_ABI_DEVICE_FUNCTIONS, in order" \
    "$outdir/list.device.txt" "$outdir/$tag.host-functions.txt"

  # Coverage: a new enumerator or macro in a header must get a dump line.
  local name missing=()
  while read -r name; do
    grep -q "^enum\.$name " "$outdir/$tag.cxx.txt" "$outdir/$tag.host.txt" || missing+=("enumerator $name")
  done < <(header_enumerators "$inc/nccl.h"; [[ $tag == braid ]] && header_enumerators "$inc/nccl_device/host.h")
  while read -r name; do
    grep -q -E "^(macro|init)\.${name}[ (.]" "$outdir/$tag.cxx.txt" "$outdir/$tag.host.txt" || missing+=("macro $name")
  done < <(header_macros "$inc/nccl.h"; header_macros "$inc/nccl_device/host.h" | grep -v '^NCCL_EXTERN_C$')
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "ok: $tag: the dumps cover every enumerator and NCCL_* macro of the headers"
  else
    fail "$tag: the dumps miss ${#missing[@]} name(s) of the headers (add them to abi_dump.c / abi_dump_host.cc):"
    printf '  %s\n' "${missing[@]}"
  fi
}

# Compares two dumps fact by fact (compare_facts.pl). Differences listed in EXPECTED with exactly
# these values are printed as expected; everything else fails.
compare_dumps() {
  local title=$1 ours=$2 theirs=$3
  local report
  report=$(perl "$srcdir/compare_facts.pl" "$ours" "$theirs" "$expected") || {
    fail "$title: cannot compare (see above)"
    return
  }
  local expected_n diff_n
  expected_n=$(grep -c '^EXPECTED ' <<<"$report" || true)
  diff_n=$(grep -c '^DIFF ' <<<"$report" || true)
  grep '^EXPECTED ' <<<"$report" | sed 's/^EXPECTED /  expected difference: /' || true
  if [[ $diff_n -eq 0 ]]; then
    echo "ok: $title: $(wc -l <"$ours") facts, identical except $expected_n listed difference(s)"
  else
    fail "$title: $diff_n unexpected difference(s):"
    grep '^DIFF ' <<<"$report" | sed 's/^DIFF /  /'
  fi
  # Listed differences that are gone: reported once for both dumps, after the comparisons.
  grep '^UNUSED ' <<<"$report" | sed 's/^UNUSED //' >>"$outdir/unused.txt" || true
}

# --- Braid's headers, on their own
rm -f "$outdir/unused.txt"
if build_dumps braid "$braid_inc"; then
  check_header_set braid "$braid_inc"
fi

# --- NVIDIA's headers: where, and are they the right ones?
skip_reason=""
nvidia_inc=""
if [[ $mode == --fetched ]]; then
  if [[ -f $nvidia_arg/include/nccl.h ]]; then
    nvidia_inc=$nvidia_arg/include
  elif [[ -f $nvidia_arg/SKIPPED ]]; then
    skip_reason="NVIDIA's headers could not be fetched: $(cat "$nvidia_arg/SKIPPED")"
  else
    skip_reason="NVIDIA's headers are not in $nvidia_arg (the fixture abi_fetch_nvidia_header did not run)"
  fi
else
  nvidia_inc=$nvidia_arg
fi
if [[ -z $skip_reason ]]; then
  nv_h=$(readlink -f "$nvidia_inc/nccl.h" || true)
  code=$(sed -n 's/^#define[ \t]*NCCL_VERSION_CODE[ \t]*\([0-9]*\).*/\1/p' "$nv_h" 2>/dev/null | head -1)
  if [[ ! -f $nv_h || ! -f $nvidia_inc/nccl_device/host.h ]]; then
    fail "$nvidia_inc does not hold nccl.h and nccl_device/host.h"
  elif [[ $nv_h == "$(readlink -f "$braid_inc/nccl.h")" ]] || grep -q Braid "$nv_h"; then
    fail "$nv_h is Braid's own header; point BRAID_NVIDIA_NCCL_INCLUDE_DIR at NVIDIA's"
  elif [[ $code != "$nvidia_code" ]]; then
    fail "$nv_h is NCCL version code '$code'; the comparison needs NVIDIA's 2.32.3 header ($nvidia_code)"
  else
    if build_dumps nvidia "$nvidia_inc"; then
      check_header_set nvidia "$nvidia_inc"
      echo "== braid vs nvidia"
      # The C dump of each header equals its C++ dump without the cxx. lines (checked above), so the
      # C++ dumps carry every fact.
      compare_dumps "nccl.h" "$outdir/braid.cxx.txt" "$outdir/nvidia.cxx.txt"
      compare_dumps "nccl_device/host.h" "$outdir/braid.host.txt" "$outdir/nvidia.host.txt"
      compare "NCCL_* macros defined: braid vs nvidia" <(header_macros "$braid_inc/nccl.h") \
        <(header_macros "$nvidia_inc/nccl.h")
      if [[ -s $outdir/unused.txt ]]; then
        fail "listed in $expected but no longer different (delete these lines):"
        sed 's/^/  /' "$outdir/unused.txt"
      fi
    fi
  fi
fi

if [[ $failures -ne 0 ]]; then
  echo "abi_compare: $failures check(s) failed; dumps are in $outdir"
  exit 1
fi
if [[ -n $skip_reason ]]; then
  echo "SKIPPED: $skip_reason. Braid's headers were checked only against themselves and abi_functions.h."
  exit 77
fi
echo "abi_compare: Braid's nccl.h and nccl_device/host.h match NVIDIA's 2.32.3 headers in $nvidia_inc" \
  "($(cat "$outdir/braid.cxx.txt" "$outdir/braid.host.txt" | wc -l) facts; only the listed version differences)"
