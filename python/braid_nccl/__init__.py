"""Braid's NCCL library (libnccl.so.2) and headers, packaged for Python environments.

The wheel holds the library under ``braid_nccl/lib`` and the headers under ``braid_nccl/include``;
``braid-run COMMAND`` runs COMMAND with the library preloaded, and ``python -m braid_nccl --check``
says which libnccl serves NCCL calls here.
"""

import os

from ._env import LIBRARY_OVERRIDE_VAR

__all__ = ["prefix", "library_path", "include_dir", "cmake_dir", "pkgconfig_dir", "__version__"]

try:
    from importlib.metadata import PackageNotFoundError, version as _dist_version

    try:
        __version__ = _dist_version("braid-nccl")
    except PackageNotFoundError:  # imported from a source tree
        __version__ = "0+unknown"
except ImportError:  # Python < 3.8
    __version__ = "0+unknown"


def prefix():
    """The folder that holds lib/, include/, lib/cmake/ (a CMake prefix, for CMAKE_PREFIX_PATH)."""
    return os.path.dirname(os.path.abspath(__file__))


def library_path():
    """Path of the libnccl.so.2 that braid-run preloads: $BRAID_RUN_LIBRARY if set, else the package's."""
    override = os.environ.get(LIBRARY_OVERRIDE_VAR)
    if override:
        return os.path.abspath(override)
    return os.path.join(prefix(), "lib", "libnccl.so.2")


def include_dir():
    """Folder holding nccl.h, nccl_net.h and nccl_device/host.h."""
    return os.path.join(prefix(), "include")


def cmake_dir():
    """Folder holding NCCLConfig.cmake (pass it as NCCL_DIR, or prefix() in CMAKE_PREFIX_PATH)."""
    return os.path.join(prefix(), "lib", "cmake", "NCCL")


def pkgconfig_dir():
    """Folder holding nccl.pc (for PKG_CONFIG_PATH)."""
    return os.path.join(prefix(), "lib", "pkgconfig")
