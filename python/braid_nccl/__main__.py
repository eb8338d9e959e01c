"""python -m braid_nccl: --check, and the paths C/C++ builds need (--prefix, --cmake-dir, ...)."""

import argparse
import sys

from . import __version__, cmake_dir, include_dir, library_path, pkgconfig_dir, prefix


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m braid_nccl", description="Braid's NCCL library (libnccl.so.2) for this environment."
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--check",
        action="store_true",
        help="say which libnccl serves NCCL calls here and run a sanity AllReduce where GPUs exist",
    )
    group.add_argument("--version", action="store_true", help="print the package version")
    group.add_argument("--prefix", action="store_true", help="print the install prefix (for CMAKE_PREFIX_PATH)")
    group.add_argument("--library", action="store_true", help="print the path of the libnccl.so.2 braid-run preloads")
    group.add_argument("--include-dir", action="store_true", help="print the folder holding nccl.h")
    group.add_argument("--cmake-dir", action="store_true", help="print the folder holding NCCLConfig.cmake")
    group.add_argument("--pkgconfig-dir", action="store_true", help="print the folder holding nccl.pc")
    parser.add_argument(
        "--require-braid",
        action="store_true",
        help="with --check: exit with status 3 unless Braid serves NCCL calls in this process",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="with --check: import MODULE first (e.g. torch), to see what a program that imports it maps",
    )
    args = parser.parse_args(argv)
    if args.check:
        from ._check import check

        for name in args.imports:
            __import__(name)
        return check(require_braid=args.require_braid)
    paths = {
        "version": __version__,
        "prefix": prefix(),
        "library": library_path(),
        "include_dir": include_dir(),
        "cmake_dir": cmake_dir(),
        "pkgconfig_dir": pkgconfig_dir(),
    }
    for name, value in paths.items():
        if getattr(args, name):
            print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
