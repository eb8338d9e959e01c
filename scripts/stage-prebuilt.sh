#!/usr/bin/env bash
# Stages what scripts/gpu-check.sh needs on a GPU machine without building there: the stripped
# library, the GPU test programs, their net plugins and braid-perf from BUILD_DIR (default build) into DEST (default
# build-stage), about 60 MB. Then, on the GPU machine: BRAID_PREBUILT=build-stage bash scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
dest=${1:-build-stage}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/plugins"
find "$build/tests/gpu" -maxdepth 1 -name 'gpu_*' -type f -executable -exec cp {} "$dest/bin/" \;
cp "$build/tools/perf/braid-perf" "$dest/bin/"
cp -L "$build/src/libnccl.so.2" "$dest/lib/libnccl.so.2"
# The net plugins gpu_coll_sweep_test loads (BRAID_TEST_PLUGIN_DIR points it here).
cp "$build/examples/net_plugin_tcp/libnccl-net-example-tcp.so" "$build"/tests/unit/libnccl-net-old-api-v*.so "$dest/plugins/"
strip --strip-unneeded "$dest"/bin/* "$dest"/lib/libnccl.so.2 "$dest"/plugins/*.so
echo "staged $(find "$dest/bin" -type f | wc -l) programs and libnccl.so.2 in $dest ($(du -sh "$dest" | cut -f1))"
