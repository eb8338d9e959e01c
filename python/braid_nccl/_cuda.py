"""Just enough of the CUDA runtime, through ctypes, for the sanity AllReduce of --check."""

import ctypes
import glob
import os
import sys

CUDART_SONAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so")
MEMCPY_HOST_TO_DEVICE = 1
MEMCPY_DEVICE_TO_HOST = 2


def _candidate_dirs():
    """Folders that hold a libcudart outside the loader's search path: the CUDA toolkit's, and the
    NVIDIA runtime wheels' (PyTorch's pip installs bring one)."""
    dirs = []
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            dirs += [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            dirs += sorted(glob.glob(os.path.join(entry, "nvidia", "cu*", "lib")))
            dirs.append(os.path.join(entry, "nvidia", "cuda_runtime", "lib"))
    return dirs


def _open_by_soname():
    for name in CUDART_SONAMES:
        try:
            return ctypes.CDLL(name), name
        except OSError:
            continue
    return None, None


# Names the CUDA runtime library --check uses, instead of looking for one.
CUDART_OVERRIDE_VAR = "BRAID_CHECK_CUDART"


def driver_device_count():
    """(count, None) from the CUDA driver (libcuda.so.1), or (0, reason): whether GPUs exist at all,
    whatever runtime versions are about."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0, "libcuda.so.1, the CUDA driver, not found"
    rc = cuda.cuInit(0)
    if rc != 0:
        return 0, "cuInit: CUDA driver error %d%s" % (rc, " (no device)" if rc == 100 else "")
    n = ctypes.c_int(0)
    rc = cuda.cuDeviceGetCount(ctypes.byref(n))
    if rc != 0:
        return 0, "cuDeviceGetCount: CUDA driver error %d" % rc
    return n.value, None


def cudart_candidates(allow_torch=True):
    """(CDLL, where it came from) for each CUDA runtime library found, newest first: the one named by
    BRAID_CHECK_CUDART alone if set; else by soname, then in the toolkit and the NVIDIA wheels, then the
    one PyTorch loads. A runtime newer than the driver fails its first call, so callers try the next."""
    override = os.environ.get(CUDART_OVERRIDE_VAR)
    if override:
        try:
            yield ctypes.CDLL(override), override
        except OSError:
            pass
        return
    for name in CUDART_SONAMES:
        try:
            yield ctypes.CDLL(name), name
        except OSError:
            continue
    for folder in _candidate_dirs():
        for path in sorted(glob.glob(os.path.join(folder, "libcudart.so*")), reverse=True):
            try:
                yield ctypes.CDLL(path), path
            except OSError:
                continue
    if allow_torch:
        try:
            import torch  # noqa: F401  (loads its CUDA runtime; dlopen by soname then finds it)
        except Exception:  # any failure to import torch means: no runtime from there
            return
        lib, name = _open_by_soname()
        if lib is not None:
            yield lib, name + " (loaded by torch)"


class Cudart:
    """The runtime calls --check makes; each returns the cudaError_t (0 is success)."""

    def __init__(self, lib):
        self.lib = lib
        vp, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        self._sig("cudaGetDeviceCount", [ctypes.POINTER(i)])
        self._sig("cudaSetDevice", [i])
        self._sig("cudaMalloc", [ctypes.POINTER(vp), sz])
        self._sig("cudaFree", [vp])
        self._sig("cudaMemcpy", [vp, vp, sz, i])
        self._sig("cudaMemset", [vp, i, sz])
        self._sig("cudaStreamCreate", [ctypes.POINTER(vp)])
        self._sig("cudaStreamDestroy", [vp])
        self._sig("cudaStreamSynchronize", [vp])
        self._sig("cudaGetErrorString", [i], ctypes.c_char_p)

    def _sig(self, name, argtypes, restype=ctypes.c_int):
        fn = getattr(self.lib, name)
        fn.argtypes = argtypes
        fn.restype = restype
        setattr(self, name, fn)

    def error_text(self, rc):
        return (self.cudaGetErrorString(rc) or b"").decode(errors="replace")

    def device_count(self):
        """(count, None) or (0, reason)."""
        n = ctypes.c_int(0)
        rc = self.cudaGetDeviceCount(ctypes.byref(n))
        if rc != 0:
            return 0, "cudaGetDeviceCount: %s (error %d)" % (self.error_text(rc), rc)
        return n.value, None
