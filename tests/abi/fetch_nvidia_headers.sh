#!/usr/bin/env bash
# fetch_nvidia_headers.sh -- gets NVIDIA's NCCL headers of one release from the Python package index,
# for abi_compare (the CTest fixture abi_fetch_nvidia_header runs it) and device_api_layout_test
# (abi_fetch_nvidia_header_<release> fetch earlier releases; cmake picks them up when re-run).
#
#   fetch_nvidia_headers.sh DEST VERSION VERSION_CODE [TIME_LIMIT_S]
#     e.g.  fetch_nvidia_headers.sh build/tests/abi/nvidia-nccl-2.32.3 2.32.3 23203 45
#
# Downloads the wheel nvidia-nccl-cu13==VERSION with pip into DEST, unpacks only its include/ folder
# into DEST/include (nccl.h, nccl_device/...) and deletes the wheel: NVIDIA's libnccl.so.2 is never
# unpacked, so no loader path can find it. Then checks that DEST/include/nccl.h says VERSION_CODE.
#
# Exit status: 0 when DEST/include holds the headers (already there from an earlier run, or fetched);
# 77 (CTest: skipped) when they cannot be had here: no python3/pip, the index unreachable, or the
# download slower than TIME_LIMIT_S (default 45). The reason goes to stdout and to DEST/SKIPPED, where
# abi_compare.sh reads it. 1 when the index answered with something unusable (a wheel without
# nccl.h, another version code).
set -euo pipefail

if [[ $# -lt 3 ]]; then
  echo "usage: $0 DEST VERSION VERSION_CODE [TIME_LIMIT_S]" >&2
  exit 2
fi
dest=$1
version=$2
code=$3
limit=${4:-45}
package="nvidia-nccl-cu13==$version"
mkdir -p "$dest"
rm -f "$dest/SKIPPED"

# The NCCL_VERSION_CODE a header defines, or nothing.
version_code_of() {
  sed -n 's/^#define[ \t]*NCCL_VERSION_CODE[ \t]*\([0-9]*\).*/\1/p' "$1" 2>/dev/null | head -1
}

skip() {
  echo "SKIPPED: $*"
  echo "$*" >"$dest/SKIPPED"
  exit 77
}

if [[ -f $dest/include/nccl.h && -f $dest/include/nccl_device.h &&
  $(version_code_of "$dest/include/nccl.h") == "$code" ]]; then
  echo "NVIDIA's NCCL $version headers already in $dest/include"
  exit 0
fi

command -v python3 >/dev/null || skip "python3 not found, so NVIDIA's $package cannot be downloaded"
python3 -m pip --version >/dev/null 2>&1 || skip "pip is not installed for python3, so NVIDIA's $package cannot be downloaded"

download=$dest/download
rm -rf "$download" "$dest/include" "$dest/include.partial"
mkdir -p "$download"
echo "downloading $package (headers only are kept; time limit ${limit} s)"
# --only-binary: a wheel, never a source build. pip's own socket timeout stays well under the limit so
# an unreachable index fails fast instead of using up the whole limit.
set +e
timeout "$limit" python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
  --timeout 10 --retries 1 --progress-bar off -d "$download" "$package" >"$dest/pip.log" 2>&1
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  tail -n 5 "$dest/pip.log"
  rm -rf "$download"
  if [[ $rc -eq 124 ]]; then
    skip "downloading $package took more than $limit s"
  fi
  # pip ends with "No matching distribution" whether the index is down or lacks the package; the
  # network error, when there is one, says more.
  cause=$(grep -o -m1 -E "(Failed to establish a new connection|Name or service not known|Temporary failure in name resolution|Network is unreachable|timed out|SSLError)[^')\"]*" \
    "$dest/pip.log" || true)
  skip "pip could not download $package${cause:+ ($cause)}: $(tail -n 1 "$dest/pip.log")"
fi

wheels=("$download"/*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f ${wheels[0]} ]]; then
  echo "FAIL: pip reported success but left no single wheel in $download"
  exit 1
fi
echo "unpacking the include/ folder of $(basename "${wheels[0]}")"
# Only members under nvidia/nccl/include/ are written, each checked to stay inside the target folder.
python3 - "${wheels[0]}" "$dest/include.partial" <<'EOF'
import os, sys, zipfile
wheel, target = sys.argv[1], os.path.realpath(sys.argv[2])
prefix = "nvidia/nccl/include/"
count = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        path = os.path.realpath(os.path.join(target, info.filename[len(prefix):]))
        if not path.startswith(target + os.sep):
            sys.exit(f"refusing wheel member outside the include folder: {info.filename}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as src, open(path, "wb") as out:
            out.write(src.read())
        count += 1
print(f"unpacked {count} header files")
EOF
rm -rf "$download"

got=$(version_code_of "$dest/include.partial/nccl.h")
if [[ ! -f $dest/include.partial/nccl_device.h || $got != "$code" ]]; then
  echo "FAIL: the wheel's nccl.h says NCCL_VERSION_CODE '${got}' (expected $code), or nccl_device.h is missing"
  exit 1
fi
mv "$dest/include.partial" "$dest/include"
echo "NVIDIA's NCCL $version headers (version code $code) are in $dest/include"
