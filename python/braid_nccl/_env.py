"""The environment braid-run gives a command: pure functions, so that they can be tested alone."""

import shlex

# Points braid-run and --check at another libnccl.so.2 (a build tree's, say) instead of the package's.
LIBRARY_OVERRIDE_VAR = "BRAID_RUN_LIBRARY"
# NVLink SHARP is off unless the user asks: Braid has no NVLS algorithm.
DEFAULTS = (("NCCL_NVLS_ENABLE", "0"),)


class LauncherError(Exception):
    """A library path the dynamic loader could not preload."""


def preload_list(value):
    """LD_PRELOAD's entries: the loader splits it at spaces and colons."""
    return [entry for entry in value.replace(":", " ").split() if entry]


def launch_env(environ, library):
    """The variables braid-run sets, as an ordered list of (name, value), given the current environment.

    LD_PRELOAD gets `library` in front of what it held (once: an entry equal to it is dropped from the
    rest, so nested braid-run calls do not repeat it); each of DEFAULTS is set only where the user has
    not set that variable (set to anything, even empty).
    """
    if not library or any(c in library for c in " :\t\n"):
        raise LauncherError(
            "cannot preload %r: LD_PRELOAD splits paths at spaces and colons; install the package "
            "somewhere whose path has neither, or set %s" % (library, LIBRARY_OVERRIDE_VAR)
        )
    rest = [entry for entry in preload_list(environ.get("LD_PRELOAD", "")) if entry != library]
    changes = [("LD_PRELOAD", ":".join([library] + rest))]
    for name, value in DEFAULTS:
        if name not in environ:
            changes.append((name, value))
    return changes


def apply_env(environ, changes):
    """A copy of `environ` with `changes` applied."""
    env = dict(environ)
    env.update(changes)
    return env


def format_exports(changes):
    """`export NAME=value` lines, quoted for POSIX shells (eval "$(braid-run --print-env)" applies them)."""
    return "".join("export %s=%s\n" % (name, shlex.quote(value)) for name, value in changes)
