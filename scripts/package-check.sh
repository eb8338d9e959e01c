#!/usr/bin/env bash
# package-check.sh -- installs Braid the ways its users do and checks that each works (CI's packaging
# step; no GPU needed).
#
#   scripts/package-check.sh [BUILD_DIR]     BUILD_DIR: a configured tree with libnccl.so.2 built
#                                            (default build-ci); it is only read
#
#   1. cmake --install BUILD_DIR into a scratch prefix; examples/ built against it with
#      find_package(NCCL) and with find_package(Braid), and allreduce.cc with `pkg-config nccl`
#   2. the Python wheel (pyproject.toml), packaging BUILD_DIR's library (BRAID_PREBUILT_LIBNCCL: no
#      compiling), installed in a fresh venv: braid-run --print-env, braid-run python -c ...,
#      python -m braid_nccl --check (plain and under braid-run), pkg-config and find_package(NCCL)
#      against the wheel
#
# Scratch files go to BUILD_DIR/package-check/. Needs python3 with venv and network access to PyPI
# (pip fetches scikit-build-core for the build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=$(realpath "${1:-build-ci}")
lib="$build/src/libnccl.so.2"
[[ -f $lib ]] || {
  echo "package-check: $lib not found (build the nccl target first)" >&2
  exit 1
}
t0=$SECONDS
work="$build/package-check"
rm -rf "$work"
mkdir -p "$work"
phase() { echo "-- [$((SECONDS - t0)) s] $*"; }
fail() {
  echo "package-check: FAILED: $*" >&2
  exit 1
}
expect() { # expect TEXT FILE: FILE holds TEXT
  grep -qF -- "$1" "$2" || {
    cat "$2"
    fail "expected '$1' in the output above"
  }
}

phase "cmake --install $build --prefix $work/prefix"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in lib/libnccl.so.2 lib/libnccl.so include/nccl.h include/nccl_net.h include/nccl_device/host.h \
  lib/cmake/NCCL/NCCLConfig.cmake lib/cmake/NCCL/NCCLConfigVersion.cmake lib/cmake/Braid/BraidConfig.cmake \
  lib/pkgconfig/nccl.pc; do
  [[ -e $prefix/$f ]] || fail "cmake --install did not install $f"
done

build_examples() { # build_examples PREFIX NCCL|Braid NAME: examples/ against PREFIX, run allreduce
  local ex="$work/examples-$3" braid=OFF
  [[ $2 == Braid ]] && braid=ON
  cmake -S examples -B "$ex" -G Ninja -DCMAKE_PREFIX_PATH="$1" -DEXAMPLES_FIND_BRAID=$braid >"$ex.log" ||
    { cat "$ex.log"; fail "configuring examples/ ($3)"; }
  grep "^-- NCCL " "$ex.log"
  cmake --build "$ex" >>"$ex.log" || { cat "$ex.log"; fail "building examples/ ($3)"; }
  "$ex/allreduce" >"$ex.run" || { cat "$ex.run"; fail "examples/allreduce ($3)"; }
  cat "$ex.run"
  expect "NCCL library version" "$ex.run"
}
phase "examples/ with find_package(NCCL) and with find_package(Braid)"
build_examples "$prefix" NCCL installed-NCCL
build_examples "$prefix" Braid installed-Braid

compile_with_pkg_config() { # compile_with_pkg_config PCDIR OUT
  local flags
  flags=$(PKG_CONFIG_PATH="$1" pkg-config --cflags --libs nccl)
  echo "pkg-config --cflags --libs nccl: $flags"
  # shellcheck disable=SC2086 # the flags are words
  g++ -std=c++17 -o "$2" examples/allreduce/allreduce.cc $flags -L/usr/local/cuda/lib64 -lcudart \
    -Wl,-rpath,"$(PKG_CONFIG_PATH="$1" pkg-config --variable=libdir nccl)"
  "$2"
}
phase "allreduce.cc with pkg-config (installed tree)"
compile_with_pkg_config "$prefix/lib/pkgconfig" "$work/allreduce-pc" >"$work/pc.run" ||
  { cat "$work/pc.run"; fail "pkg-config build"; }
cat "$work/pc.run"

phase "wheel (packaging $lib)"
python3 -m venv "$work/build-venv"
"$work/build-venv/bin/pip" wheel --no-deps --disable-pip-version-check -w "$work/dist" \
  --config-settings=cmake.define.BRAID_PREBUILT_LIBNCCL="$lib" --config-settings=build-dir="$work/wheel-build" . \
  >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; fail "pip wheel"; }
wheel=$(ls "$work"/dist/braid_nccl-*.whl)
ls -l "$wheel"
python3 - "$wheel" <<'PY'
import sys, zipfile
names = {i.filename: i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist()}
need = ["braid_nccl/lib/libnccl.so.2", "braid_nccl/lib/libnccl.so", "braid_nccl/include/nccl.h",
        "braid_nccl/include/nccl_device/host.h", "braid_nccl/lib/cmake/NCCL/NCCLConfig.cmake",
        "braid_nccl/lib/pkgconfig/nccl.pc", "braid_nccl/run.py", "braid_nccl/__main__.py"]
missing = [n for n in need if n not in names]
if missing:
    sys.exit("wheel lacks %s" % missing)
libs = [n for n in names if "/lib/libnccl.so" in n and names[n] > 4096]
if libs != ["braid_nccl/lib/libnccl.so.2"]:
    sys.exit("wheel should hold one copy of the library, holds %s" % libs)
print("wheel: %d files; libnccl.so.2 %d bytes; libnccl.so a %d-byte linker script"
      % (len(names), names["braid_nccl/lib/libnccl.so.2"], names["braid_nccl/lib/libnccl.so"]))
PY

phase "fresh venv: pip install the wheel"
venv="$work/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --no-deps --disable-pip-version-check --quiet "$wheel"
pkglib=$("$venv/bin/python" -m braid_nccl --library)
[[ $pkglib == "$venv"/lib/python3*/site-packages/braid_nccl/lib/libnccl.so.2 ]] || fail "library at $pkglib"
exports() { nm -D --defined-only "$1" | awk '{ print $2, $3 }' | LC_ALL=C sort; }
diff <(exports "$lib") <(exports "$pkglib") >/dev/null || fail "the wheel's library exports differ from $lib's"
echo "the wheel's library: $(exports "$pkglib" | wc -l) exports, as $lib"
(
  export PATH="$venv/bin:$PATH"
  unset LD_PRELOAD NCCL_NVLS_ENABLE
  phase "braid-run --print-env"
  braid-run --print-env | tee "$work/print-env.out"
  expect "export LD_PRELOAD=$pkglib" "$work/print-env.out"
  expect "export NCCL_NVLS_ENABLE=0" "$work/print-env.out"

  phase "braid-run python -c 'import os; print(os.environ[\"LD_PRELOAD\"])'"
  braid-run python -c 'import os; print(os.environ["LD_PRELOAD"])' | tee "$work/preload.out"
  [[ $(cat "$work/preload.out") == "$pkglib" ]] || fail "LD_PRELOAD in the child"
  LD_PRELOAD=libm.so.6 braid-run python -c 'import os; print(os.environ["LD_PRELOAD"])' | tee "$work/preload.out"
  [[ $(cat "$work/preload.out") == "$pkglib:libm.so.6" ]] || fail "LD_PRELOAD in the child, after one already set"

  phase "python -m braid_nccl --check"
  python -m braid_nccl --check | tee "$work/check.out"
  expect "library: Braid" "$work/check.out"
  expect "GPUs: " "$work/check.out"

  phase "braid-run python -m braid_nccl --check --require-braid"
  braid-run python -m braid_nccl --check --require-braid | tee "$work/check-braid.out"
  expect "loaded:  LD_PRELOAD" "$work/check-braid.out"
  expect "path:    $pkglib" "$work/check-braid.out"

  phase "allreduce.cc with pkg-config (the wheel: -lnccl through its linker script)"
  compile_with_pkg_config "$(python -m braid_nccl --pkgconfig-dir)" "$work/allreduce-wheel" >"$work/pcw.run" ||
    { cat "$work/pcw.run"; fail "pkg-config build against the wheel"; }
  cat "$work/pcw.run"
  readelf -d "$work/allreduce-wheel" | grep -q 'NEEDED.*\[libnccl.so.2\]' ||
    fail "allreduce-wheel does not need libnccl.so.2"

  phase "examples/ with find_package(NCCL) against the wheel (CMAKE_PREFIX_PATH=\$(python -m braid_nccl --prefix))"
  build_examples "$(python -m braid_nccl --prefix)" NCCL wheel-NCCL
)
echo "package-check: OK in $((SECONDS - t0)) s"
