#!/usr/bin/env bash
# Stages what scripts/gpu-check.sh needs on a GPU machine without building there: from BUILD_DIR
# (default build) into DEST (default build-stage), about 60 MB, stripped, in the build tree's own
# layout (src/libnccl.so.2, tests/gpu/gpu_*, tools/perf/braid-perf: the programs' RPATHs are
# $ORIGIN-relative, so each finds this library and no other), and plugins/ with the net plugins
# gpu_coll_sweep_hosts_test loads (BRAID_TEST_PLUGIN_DIR). Then, on the GPU machine:
#   BRAID_PREBUILT=build-stage bash scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
dest=${1:-build-stage}
rm -rf "$dest"
mkdir -p "$dest/src" "$dest/tests/gpu" "$dest/tools/perf" "$dest/plugins"
find "$build/tests/gpu" -maxdepth 1 -name 'gpu_*' -type f -executable -exec cp {} "$dest/tests/gpu/" \;
cp "$build/tools/perf/braid-perf" "$dest/tools/perf/"
cp -L "$build/src/libnccl.so.2" "$dest/src/libnccl.so.2"
cp "$build/examples/net_plugin_tcp/libnccl-net-example-tcp.so" "$build"/tests/unit/libnccl-net-old-api-v*.so "$dest/plugins/"
strip --strip-unneeded "$dest"/tests/gpu/* "$dest/tools/perf/braid-perf" "$dest/src/libnccl.so.2" "$dest"/plugins/*.so
echo "staged $(find "$dest/tests/gpu" -type f | wc -l) GPU test programs, braid-perf and libnccl.so.2 in $dest ($(du -sh "$dest" | cut -f1))"
