#!/usr/bin/env bash
# check_imports.sh -- the torch_jax_imports test: does a libnccl.so.2 define every NCCL function that
# PyTorch 2.15 and jaxlib 0.12 use? The name lists are committed (their headers say how they were
# made from which wheel); nothing is downloaded here.
#
#   check_imports.sh LIBRARY NVIDIA_EXPORTS TORCH_LIST JAX_LIST
#
#   LIBRARY         the libnccl.so.2 to check (Braid's)
#   NVIDIA_EXPORTS  nccl-2.32.3-exports.txt: the ncclX names NVIDIA's 2.32.3 library exports; it has a
#                   pncclX twin of each except ncclResetDebugInitInternal
#   TORCH_LIST      torch-2.15-nccl-imports.txt: libtorch_cuda.so's undefined NCCL symbols. Every one
#                   must be defined, or `import torch` fails: any missing name fails the test.
#   JAX_LIST        jaxlib-0.12-nccl-symbols.txt: names the jax CUDA plugin resolves lazily. A missing
#                   one only breaks the feature that calls it: all are reported, and the test fails only
#                   for names NVIDIA's 2.32.3 library exports too (a name NVIDIA lacks would fail with
#                   NVIDIA's NCCL as well).
set -euo pipefail
export LC_ALL=C # one collation for sort and comm

if [[ $# -ne 4 ]]; then
  echo "usage: $0 LIBRARY NVIDIA_EXPORTS TORCH_LIST JAX_LIST" >&2
  exit 2
fi
lib=$1 nvidia_list=$2 torch_list=$3 jax_list=$4
for f in "$lib" "$nvidia_list" "$torch_list" "$jax_list"; do
  [[ -f $f ]] || {
    echo "FAIL: $f does not exist"
    exit 2
  }
done
command -v readelf >/dev/null || {
  echo "FAIL: readelf not found (binutils)" >&2
  exit 2
}

indent() { sed 's/^/  /'; }

# The names of a list file (comments and blank lines dropped).
names_of() { { grep -v -E '^[[:space:]]*(#|$)' "$1" || true; } | sort -u; }

# Every function the library defines (dynamic symbol table, version suffixes dropped).
defined=$(readelf --dyn-syms -W "$(readlink -f "$lib")" |
  awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $4 == "FUNC" && $8 != "" { sub(/@.*/, "", $8); print $8 }' | sort -u)

# NVIDIA's exports: the listed ncclX and their pncclX twins.
nvidia_exports=$(names_of "$nvidia_list" | awk '{ print } $0 != "ncclResetDebugInitInternal" { print "p" $0 }' | sort -u)

failures=0
for f in "$nvidia_list" "$torch_list" "$jax_list"; do
  if [[ -z $(names_of "$f") ]]; then
    echo "FAIL: $f lists no names"
    exit 1
  fi
done

# torch: everything must be defined.
torch_names=$(names_of "$torch_list")
torch_missing=$(comm -23 <(echo "$torch_names") <(echo "$defined"))
echo "torch 2.15 (libtorch_cuda.so): $(wc -l <<<"$torch_names") NCCL imports"
if [[ -z $torch_missing ]]; then
  echo "ok: $(basename "$lib") defines all of them"
else
  echo "FAIL: $(wc -l <<<"$torch_missing") not defined (import torch would fail with 'undefined symbol'):"
  indent <<<"$torch_missing"
  failures=$((failures + 1))
fi

# jaxlib: report every missing name; fail for those NVIDIA exports.
jax_names=$(names_of "$jax_list")
jax_missing=$(comm -23 <(echo "$jax_names") <(echo "$defined"))
echo "jaxlib 0.12 (xla_cuda_plugin.so): $(wc -l <<<"$jax_names") NCCL names looked up"
if [[ -z $jax_missing ]]; then
  echo "ok: $(basename "$lib") defines all of them"
else
  jax_fatal=$(comm -12 <(echo "$jax_missing") <(echo "$nvidia_exports"))
  jax_tolerated=$(comm -23 <(echo "$jax_missing") <(echo "$nvidia_exports"))
  if [[ -n $jax_tolerated ]]; then
    echo "note: not defined, and not exported by NVIDIA's 2.32.3 library either (tolerated):"
    indent <<<"$jax_tolerated"
  fi
  if [[ -n $jax_fatal ]]; then
    echo "FAIL: $(wc -l <<<"$jax_fatal") not defined although NVIDIA's 2.32.3 library exports them:"
    indent <<<"$jax_fatal"
    failures=$((failures + 1))
  fi
fi

if [[ $failures -ne 0 ]]; then
  echo "torch_jax_imports: FAILED"
  exit 1
fi
echo "torch_jax_imports: OK"
