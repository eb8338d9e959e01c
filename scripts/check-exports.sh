#!/usr/bin/env bash
# check-exports.sh -- checks the ABI surface of a built libnccl.so.2 (used by the exports_check test
# and by CI):
#   - file names: libnccl.so -> libnccl.so.2 -> libnccl.so.2.X.Y in the same folder; SONAME libnccl.so.2
#   - NEEDED: no libcuda, libcudart, libnvidia-ml or libnccl (CUDA runtime static, driver and NVML
#     reached at run time, NVIDIA's NCCL never)
#   - no symbol versioning (NCCL's exports are unversioned), no text relocations, no executable stack
#   - dynamic symbols defined: exactly ncclX + pncclX for every function of nccl.h plus the device-API
#     host functions (NCCL_ABI_DEVICE_FUNCTIONS of tests/abi/abi_functions.h); ncclX WEAK, pncclX
#     GLOBAL, both FUNC with default visibility, at the same address; plus ncclResetDebugInitInternal
#     alone (GLOBAL), as NVIDIA's library has it
#   - every ncclX that NVIDIA's 2.32.3 library exports (tests/abi/nccl-2.32.3-exports.txt) is there
#
# usage: check-exports.sh LIBRARY HEADER
#   LIBRARY  path to the built library (libnccl.so.2.X.Y, or one of its links)
#   HEADER   the nccl.h whose functions must be exported (Braid's include/nccl.h)
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 LIBRARY HEADER" >&2
  exit 2
fi
lib=$1
header=$2
for tool in readelf perl; do
  command -v "$tool" >/dev/null || {
    echo "FAIL: $tool not found (binutils / perl)" >&2
    exit 2
  }
done
[[ -f $lib ]] || {
  echo "FAIL: $lib does not exist (build the nccl target first)"
  exit 1
}
[[ -f $header ]] || {
  echo "FAIL: $header does not exist"
  exit 1
}

# Functions outside nccl.h that Braid exports too (NCCL's nccl_device/host.h): the list
# NCCL_ABI_DEVICE_FUNCTIONS of tests/abi/abi_functions.h, which abi_link also links against.
list_file="$(dirname "${BASH_SOURCE[0]}")/../tests/abi/abi_functions.h"
[[ -f $list_file ]] || {
  echo "FAIL: $list_file not found"
  exit 2
}
mapfile -t extra_functions < <(perl -0777 -ne \
  'if (/#define\s+NCCL_ABI_DEVICE_FUNCTIONS\(X\)((?:[^\n]*\\\n)*[^\n]*)/) { my $l = $1; print "$1\n" while $l =~ /X\((\w+)\)/g }' \
  "$list_file")
# Symbols every shared library may define; none is expected with Braid's version script.
allowed_other='^(_init|_fini|_edata|_end|__bss_start)$'
# NVIDIA's library exports this one without a pncclX twin or a header declaration; so does Braid.
readonly special_global=ncclResetDebugInitInternal
# Every ncclX that NVIDIA's 2.32.3 library exports (tests/abi/nccl-2.32.3-exports.txt): Braid must too.
nvidia_list="$(dirname "${BASH_SOURCE[0]}")/../tests/abi/nccl-2.32.3-exports.txt"
mapfile -t nvidia_exports < <(grep -v '^#' "$nvidia_list")

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

real=$(readlink -f "$lib")
dir=$(dirname "$real")
size=$(stat -c %s "$real")
echo "library: $real"
awk -v s="$size" 'BEGIN { printf "libnccl.so.2 size: %d bytes (%.1f MiB)\n", s, s / 1048576 }'

# --- file names and SONAME
for link in libnccl.so.2 libnccl.so; do
  if [[ ! -L $dir/$link ]]; then
    fail "$dir/$link is missing or not a symbolic link"
  elif [[ $(readlink -f "$dir/$link") != "$real" ]]; then
    fail "$dir/$link points to $(readlink -f "$dir/$link"), not $real"
  else
    ok "$link -> $(readlink "$dir/$link")"
  fi
done
case $(basename "$real") in
  libnccl.so.2.*) ok "real file $(basename "$real")" ;;
  *) fail "the real file is $(basename "$real"), expected libnccl.so.2.<minor>.<patch>" ;;
esac

dynamic=$(readelf -dW "$real")
soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p' <<<"$dynamic")
if [[ $soname == libnccl.so.2 ]]; then ok "SONAME $soname"; else fail "SONAME is '$soname', expected libnccl.so.2"; fi

# --- NEEDED
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dynamic" | tr '\n' ' ')
echo "NEEDED: $needed"
bad_needed=$(tr ' ' '\n' <<<"$needed" | grep -E '^lib(cuda|cudart|nvidia-ml|nccl)\.so' || true)
if [[ -n $bad_needed ]]; then fail "must not depend on: $(paste -sd' ' <<<"$bad_needed")"; else ok "no libcuda/libcudart/libnvidia-ml/libnccl in NEEDED"; fi

# --- versioning, relocations, stack
if readelf -VW "$real" | grep -q 'Version definition section'; then
  fail "the library defines symbol versions; NCCL's exports are unversioned (use an anonymous version script)"
else
  ok "no symbol version definitions"
fi
if grep -qE '\(TEXTREL\)|\(FLAGS\).*TEXTREL' <<<"$dynamic"; then fail "text relocations (non-PIC code linked in)"; else ok "no text relocations"; fi
stack=$(readelf -lW "$real" | awk '$1 == "GNU_STACK" { print $(NF-1) }')
if [[ $stack == *E* ]]; then fail "executable stack (GNU_STACK flags $stack)"; else ok "non-executable stack"; fi

# --- exported symbols
# The functions nccl.h declares: ncclX and pncclX must pair up in the header itself.
mapfile -t header_syms < <(perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
  print "$1\n" while /\b(?:ncclResult_t|const\s+char\s*\*|void)\s*(p?nccl\w+)\s*\(/g' "$header" | sort -u)
mapfile -t header_fns < <(printf '%s\n' "${header_syms[@]}" | sed -n 's/^nccl//p')
mapfile -t header_pfns < <(printf '%s\n' "${header_syms[@]}" | sed -n 's/^pnccl//p')
if [[ ${#header_fns[@]} -eq 0 ]]; then
  fail "found no functions in $header"
elif [[ "${header_fns[*]}" != "${header_pfns[*]}" ]]; then
  fail "$header does not declare ncclX and pncclX for the same set of X"
fi
expected_fns=("${header_fns[@]}" "${extra_functions[@]}")
echo "expected: ${#header_fns[@]} functions of $(basename "$header") + ${#extra_functions[@]} device-API = ${#expected_fns[@]} pairs"

# name value type bind vis, for every defined dynamic symbol.
declare -A sym_value sym_type sym_bind sym_vis sym_size
while read -r name value size type bind vis; do
  sym_value[$name]=$value
  sym_size[$name]=$size
  sym_type[$name]=$type
  sym_bind[$name]=$bind
  sym_vis[$name]=$vis
done < <(readelf --dyn-syms -W "$real" | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $8 != "" {
  name = $8; sub(/@.*/, "", name); print name, $2, $3, $4, $5, $6 }')

declare -A expected_names
pairs=0
for fn in "${expected_fns[@]}"; do
  w=nccl$fn
  p=pnccl$fn
  expected_names[$w]=1
  expected_names[$p]=1
  pair_ok=1
  if [[ -z ${sym_value[$w]:-} ]]; then
    fail "$w is not exported"
    pair_ok=0
  elif [[ ${sym_bind[$w]} != WEAK || ${sym_type[$w]} != FUNC || ${sym_vis[$w]} != DEFAULT ]]; then
    fail "$w is ${sym_bind[$w]} ${sym_type[$w]} ${sym_vis[$w]}, expected WEAK FUNC DEFAULT"
    pair_ok=0
  fi
  if [[ -z ${sym_value[$p]:-} ]]; then
    fail "$p is not exported"
    pair_ok=0
  elif [[ ${sym_bind[$p]} != GLOBAL || ${sym_type[$p]} != FUNC || ${sym_vis[$p]} != DEFAULT ]]; then
    fail "$p is ${sym_bind[$p]} ${sym_type[$p]} ${sym_vis[$p]}, expected GLOBAL FUNC DEFAULT"
    pair_ok=0
  fi
  if [[ $pair_ok -eq 1 && ( ${sym_value[$w]} != "${sym_value[$p]}" || ${sym_size[$w]} != "${sym_size[$p]}" ) ]]; then
    fail "$w (0x${sym_value[$w]}, ${sym_size[$w]} bytes) and $p (0x${sym_value[$p]}, ${sym_size[$p]} bytes) are not one function"
    pair_ok=0
  fi
  pairs=$((pairs + pair_ok))
done

if [[ -z ${sym_value[$special_global]:-} ]]; then
  fail "$special_global is not exported"
elif [[ ${sym_bind[$special_global]} != GLOBAL || ${sym_type[$special_global]} != FUNC ]]; then
  fail "$special_global is ${sym_bind[$special_global]} ${sym_type[$special_global]}, expected GLOBAL FUNC"
else
  ok "$special_global (GLOBAL, no pncclX twin, as in NVIDIA's library)"
fi
expected_names[$special_global]=1

missing_nvidia=()
for name in "${nvidia_exports[@]}"; do
  [[ -z ${sym_value[$name]:-} ]] && missing_nvidia+=("$name")
done
if [[ ${#missing_nvidia[@]} -gt 0 ]]; then
  fail "${#missing_nvidia[@]} of NVIDIA 2.32.3's ${#nvidia_exports[@]} exports are missing: ${missing_nvidia[*]}"
else
  ok "all ${#nvidia_exports[@]} ncclX exports of NVIDIA's 2.32.3 library are exported"
fi

extras=()
for name in "${!sym_value[@]}"; do
  [[ -n ${expected_names[$name]:-} ]] && continue
  [[ $name =~ $allowed_other ]] && continue
  extras+=("$name (${sym_bind[$name]} ${sym_type[$name]})")
done
if [[ ${#extras[@]} -gt 0 ]]; then
  fail "${#extras[@]} unexpected exported symbol(s) (only the nccl.h API may be exported):"
  printf '  %s\n' "${extras[@]}" | sort | head -50
fi

total=${#sym_value[@]}
if [[ $pairs -eq ${#expected_fns[@]} ]]; then
  ok "$pairs ncclX (WEAK) / pncclX (GLOBAL) pairs at equal addresses = ${#header_fns[@]} + ${#extra_functions[@]}"
else
  fail "$pairs good pairs, expected ${#expected_fns[@]}"
fi
echo "defined dynamic symbols: $total"

if [[ $failures -ne 0 ]]; then
  echo "check-exports: $failures failure(s)"
  exit 1
fi
echo "check-exports: OK"
