"""braid-run: run a command with Braid's libnccl.so.2 preloaded.

    braid-run torchrun --nproc-per-node 4 train.py
    braid-run python train.py
    braid-run mpirun -np 8 ./my_nccl_program      (mpirun passes the environment on to local ranks;
                                                  for remote ranks use -x LD_PRELOAD -x NCCL_NVLS_ENABLE)
    braid-run --print-env                         (what it would set, as shell `export` lines)

The command inherits LD_PRELOAD (Braid's library first, then whatever LD_PRELOAD held) and
NCCL_NVLS_ENABLE=0 unless set, and so do all its child processes, such as torchrun's workers.
"""

import argparse
import os
import sys

from . import library_path
from ._env import LIBRARY_OVERRIDE_VAR, LauncherError, apply_env, format_exports, launch_env


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="braid-run",
        description="Run COMMAND with Braid's libnccl.so.2 preloaded (LD_PRELOAD) and NCCL_NVLS_ENABLE=0 "
        "unless set. Child processes inherit both.",
    )
    parser.add_argument("--print-env", action="store_true", help="print the variables it would set and exit")
    parser.add_argument(
        "--lib",
        metavar="PATH",
        help="preload this libnccl.so.2 instead of the package's (default: $%s or the package's)"
        % LIBRARY_OVERRIDE_VAR,
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    return parser, args


def main(argv=None):
    parser, args = parse_args(sys.argv[1:] if argv is None else argv)
    library = os.path.abspath(args.lib) if args.lib else library_path()
    try:
        changes = launch_env(os.environ, library)
    except LauncherError as e:
        print("braid-run: %s" % e, file=sys.stderr)
        return 2
    if not os.path.isfile(library):
        print("braid-run: %s does not exist (is braid-nccl installed completely?)" % library, file=sys.stderr)
        return 2
    if args.print_env:
        sys.stdout.write(format_exports(changes))
        return 0
    if not args.command:
        parser.print_usage(sys.stderr)
        print("braid-run: no command given (or --print-env)", file=sys.stderr)
        return 2
    env = apply_env(os.environ, changes)
    try:
        os.execvpe(args.command[0], args.command, env)
    except FileNotFoundError:
        print("braid-run: %s: command not found" % args.command[0], file=sys.stderr)
        return 127
    except PermissionError as e:
        print("braid-run: %s: %s" % (args.command[0], e.strerror), file=sys.stderr)
        return 126
    return 0  # not reached: exec replaced the process


if __name__ == "__main__":
    sys.exit(main())
