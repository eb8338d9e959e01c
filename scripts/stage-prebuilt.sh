#!/usr/bin/env bash
# Stages what scripts/gpu-check.sh needs on a GPU machine without building there: the stripped
# library, the GPU test programs and braid-perf from BUILD_DIR (default build) into DEST (default
# build-stage), about 60 MB. Then, on the GPU machine: BRAID_PREBUILT=build-stage bash scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
dest=${1:-build-stage}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
find "$build/tests/gpu" -maxdepth 1 -name 'gpu_*' -type f -executable -exec cp {} "$dest/bin/" \;
cp "$build/tools/perf/braid-perf" "$dest/bin/"
cp -L "$build/src/libnccl.so.2" "$dest/lib/libnccl.so.2"
strip --strip-unneeded "$dest"/bin/* "$dest/lib/libnccl.so.2"
echo "staged $(find "$dest/bin" -type f | wc -l) programs and libnccl.so.2 in $dest ($(du -sh "$dest" | cut -f1))"
