#!/usr/bin/env bash
# torch_jax_imports: every NCCL function that PyTorch 2.15 imports, and every one jaxlib 0.12 looks
# up by name that NVIDIA's 2.32.3 library exports, is defined by Braid's libnccl.so.2 alone. The name
# lists are committed (tests/abi/*.txt say how they were made), so the test needs no network.
#
#   imports_check.sh LIBRARY
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
lib=$1
defined=$(mktemp)
trap 'rm -f "$defined"' EXIT
readelf --dyn-syms -W "$lib" | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" { sub(/@.*/, "", $8); print $8 }' | sort -u >"$defined"
names() { grep -v '^#' "$1" | sort -u; }
nvidia=$(names "$here/nccl-2.32.3-exports.txt" | sed 'p; s/^/p/' | sort -u)
failures=0

missing=$(comm -23 <(names "$here/torch-2.15-nccl-imports.txt") "$defined")
if [[ -n $missing ]]; then
  echo "FAIL: PyTorch 2.15 imports these, which Braid does not define: $(tr '\n' ' ' <<<"$missing")"
  failures=$((failures + 1))
else
  echo "ok: all $(names "$here/torch-2.15-nccl-imports.txt" | wc -l) NCCL imports of PyTorch 2.15 are defined"
fi

jax_missing=$(comm -23 <(names "$here/jaxlib-0.12-nccl-symbols.txt") "$defined")
jax_fatal=$(comm -12 <(printf '%s\n' "$jax_missing" | sed '/^$/d') <(printf '%s\n' "$nvidia"))
if [[ -n $jax_fatal ]]; then
  echo "FAIL: jaxlib 0.12 looks these up and NVIDIA 2.32.3 has them, Braid does not: $(tr '\n' ' ' <<<"$jax_fatal")"
  failures=$((failures + 1))
else
  echo "ok: all $(names "$here/jaxlib-0.12-nccl-symbols.txt" | wc -l) names jaxlib 0.12 looks up are defined" \
    "${jax_missing:+(except, also absent from NVIDIA 2.32.3: $(tr '\n' ' ' <<<"$jax_missing"))}"
fi
exit $((failures > 0))
