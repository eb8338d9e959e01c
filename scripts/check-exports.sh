#!/usr/bin/env bash
# check-exports.sh -- checks the ABI surface of a built libnccl.so.2 (used by the exports_check test
# and by CI):
#   - file names: libnccl.so -> libnccl.so.2 -> libnccl.so.2.X.Y in the same folder; SONAME libnccl.so.2
#   - NEEDED: no libcuda, libcudart, libnvidia-ml or libnccl (CUDA runtime static, driver and NVML
#     reached at run time, NVIDIA's NCCL never)
#   - no symbol versioning (NCCL's exports are unversioned), no text relocations, no executable stack
#   - dynamic symbols defined: exactly ncclX (WEAK) + pncclX (GLOBAL), FUNC, default visibility, at
#     the same address, for every function of tests/abi/abi_functions.h (the 73 of nccl.h, the 22 of
#     nccl_device/host.h and two requirement builders no Linux header declares), plus the one special
#     export ncclResetDebugInitInternal (GLOBAL, no pncclX twin), as NVIDIA's library has it
#   - the lists match what the headers declare
#   - every ncclX that NVIDIA's 2.32.3 library exports (tests/abi/nccl-2.32.3-exports.txt) is exported;
#     Braid's only ncclX beyond that list is ncclCftBarrierCreateRequirement (declared by NVIDIA's
#     nccl_device/host.h, not exported by its library)
#
# usage: check-exports.sh LIBRARY HEADER
#   LIBRARY  path to the built library (libnccl.so.2.X.Y, or one of its links)
#   HEADER   Braid's include/nccl.h; nccl_device/host.h is read from the same folder
set -euo pipefail
export LC_ALL=C # one collation for sort and comm

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

host_header=$(dirname "$header")/nccl_device/host.h
abi_dir="$(dirname "${BASH_SOURCE[0]}")/../tests/abi"
list_file=$abi_dir/abi_functions.h
nvidia_list=$abi_dir/nccl-2.32.3-exports.txt
for f in "$host_header" "$list_file" "$nvidia_list"; do
  [[ -f $f ]] || {
    echo "FAIL: $f not found"
    exit 2
  }
done
# ncclX names Braid exports although NVIDIA's 2.32.3 library does not.
readonly allowed_beyond_nvidia='^ncclCftBarrierCreateRequirement$'

# The X (and U) entries of one X-macro list of abi_functions.h, without the nccl prefix.
list_entries() {
  perl -0777 -ne 'if (/#define\s+'"$1"'\([^)]*\)((?:[^\n]*\\\n)*[^\n]*)/) {
    my $l = $1; print "$1\n" while $l =~ /\b[XU]\((\w+)\)/g }' "$list_file"
}
mapfile -t header_list < <(list_entries NCCL_ABI_HEADER_FUNCTIONS)
mapfile -t device_list < <(list_entries NCCL_ABI_DEVICE_FUNCTIONS)
special=$(sed -n 's/^#define NCCL_ABI_SPECIAL_EXPORT "\(.*\)"$/\1/p' "$list_file")
[[ ${#header_list[@]} -gt 0 && ${#device_list[@]} -gt 0 && -n $special ]] || {
  echo "FAIL: cannot read the function lists of $list_file"
  exit 2
}
# Symbols every shared library may define; none is expected with Braid's version script.
allowed_other='^(_init|_fini|_edata|_end|__bss_start)$'

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

# --- the lists against the headers (comments and Windows-only blocks removed first)
# The functions nccl.h declares: ncclX and pncclX must pair up in the header itself.
declared() {
  perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{#if\s+defined\(NCCL_OS_WINDOWS\).*?#endif}{}gs;
    print "$1\n" while /(?:NCCL_EXTERN_C\s+[\w\s\*]*?|\b(?:ncclResult_t|const\s+char\s*\*|void)\s*)\b(p?nccl\w+)\s*\(/g' "$1" |
    sort -u
}
mapfile -t header_syms < <(declared "$header")
header_fns=$(printf '%s\n' "${header_syms[@]}" | sed -n 's/^nccl//p')
header_pfns=$(printf '%s\n' "${header_syms[@]}" | sed -n 's/^pnccl//p')
if [[ $header_fns != "$header_pfns" ]]; then
  fail "$header does not declare ncclX and pncclX for the same set of X"
fi
if [[ $header_fns == "$(printf '%s\n' "${header_list[@]}" | sort)" ]]; then
  ok "$(basename "$header") declares the ${#header_list[@]} functions of NCCL_ABI_HEADER_FUNCTIONS"
else
  fail "$(basename "$header") and NCCL_ABI_HEADER_FUNCTIONS differ:"
  diff <(echo "$header_fns") <(printf '%s\n' "${header_list[@]}" | sort) | sed -n 's/^\([<>]\)/  \1/p'
fi
host_fns=$(declared "$host_header" | sed -n 's/^nccl//p')
device_declared=$(list_entries NCCL_ABI_DEVICE_FUNCTIONS | sort | comm -12 - <(echo "$host_fns"))
if [[ $host_fns == "$device_declared" ]]; then
  ok "nccl_device/host.h declares $(wc -l <<<"$host_fns") functions, all in NCCL_ABI_DEVICE_FUNCTIONS"
else
  fail "nccl_device/host.h declares functions missing from NCCL_ABI_DEVICE_FUNCTIONS:"
  comm -23 <(echo "$host_fns") <(echo "$device_declared") | sed 's/^/  nccl/'
fi

# --- exported symbols
expected_fns=("${header_list[@]}" "${device_list[@]}")
echo "expected: ${#header_list[@]} functions of nccl.h + ${#device_list[@]} of the device API = ${#expected_fns[@]} pairs, plus $special"

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

# The special export: a GLOBAL function without a pncclX twin.
expected_names[$special]=1
if [[ -z ${sym_value[$special]:-} ]]; then
  fail "$special is not exported"
elif [[ ${sym_bind[$special]} != GLOBAL || ${sym_type[$special]} != FUNC || ${sym_vis[$special]} != DEFAULT ]]; then
  fail "$special is ${sym_bind[$special]} ${sym_type[$special]} ${sym_vis[$special]}, expected GLOBAL FUNC DEFAULT"
else
  ok "$special (GLOBAL FUNC, no pncclX twin)"
fi

extras=()
for name in "${!sym_value[@]}"; do
  [[ -n ${expected_names[$name]:-} ]] && continue
  [[ $name =~ $allowed_other ]] && continue
  extras+=("$name (${sym_bind[$name]} ${sym_type[$name]})")
done
if [[ ${#extras[@]} -gt 0 ]]; then
  fail "${#extras[@]} unexpected exported symbol(s) (only the NCCL API may be exported):"
  printf '  %s\n' "${extras[@]}" | sort | head -50
fi

total=${#sym_value[@]}
if [[ $pairs -eq ${#expected_fns[@]} ]]; then
  ok "$pairs ncclX (WEAK) / pncclX (GLOBAL) pairs at equal addresses = ${#header_list[@]} + ${#device_list[@]}"
else
  fail "$pairs good pairs, expected ${#expected_fns[@]}"
fi
echo "defined dynamic symbols: $total"

# --- against NVIDIA's export list: Braid must export every ncclX that NVIDIA's library does.
mapfile -t nvidia_names < <(grep -v -E '^[[:space:]]*(#|$)' "$nvidia_list")
lacking=()
for name in "${nvidia_names[@]}"; do
  [[ -n ${sym_value[$name]:-} ]] || lacking+=("$name")
done
if [[ ${#lacking[@]} -eq 0 ]]; then
  ok "all ${#nvidia_names[@]} ncclX exports of NVIDIA's 2.32.3 library are exported"
else
  fail "${#lacking[@]} of the ${#nvidia_names[@]} ncclX exports of NVIDIA's 2.32.3 library are missing:"
  printf '  %s\n' "${lacking[@]}"
fi
beyond=$(printf '%s\n' "${!sym_value[@]}" | grep '^nccl' | sort | comm -23 - <(printf '%s\n' "${nvidia_names[@]}" | sort))
unexplained=$(grep -v -E "$allowed_beyond_nvidia" <<<"$beyond" || true)
if [[ -n $unexplained ]]; then
  fail "exported, but not by NVIDIA's 2.32.3 library: $(paste -sd' ' <<<"$unexplained")"
elif [[ -n $beyond ]]; then
  ok "beyond NVIDIA's list, only the allowed $(paste -sd' ' <<<"$beyond")"
fi

if [[ $failures -ne 0 ]]; then
  echo "check-exports: $failures failure(s)"
  exit 1
fi
echo "check-exports: OK"
