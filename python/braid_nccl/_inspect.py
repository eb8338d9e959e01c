"""Which libnccl a process maps and which one serves its NCCL calls (Linux: /proc/self/maps)."""

import ctypes
import mmap
import os

NCCL_SONAME = "libnccl.so.2"


def mappings():
    """(start, end, path) of every file-backed mapping of this process."""
    result = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) < 6 or not fields[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            result.append((start, end, fields[5].rstrip("\n")))
    return result


def path_of_address(address):
    """The file mapped at `address`, or None."""
    for start, end, path in mappings():
        if start <= address < end:
            return path
    return None


def mapped_nccl_libraries():
    """Paths of every libnccl.so* this process maps, in mapping order, each once."""
    seen = []
    for _, _, path in mappings():
        if os.path.basename(path).startswith("libnccl.so") and path not in seen:
            seen.append(path)
    return seen


def identify(path):
    """'Braid', 'NVIDIA NCCL' or 'unknown', from the version banner text the library carries.

    Braid's banner reads "NCCL version <api>+braid<version> (Braid ...)"; NVIDIA's "NCCL version
    <version>+cuda<major>.<minor>". Both libraries export the same names, so the text is what tells.
    """
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(b"+braid") >= 0:
                return "Braid"
            if data.find(b"+cuda") >= 0:
                return "NVIDIA NCCL"
    except (OSError, ValueError):
        pass
    return "unknown"


def version_text(code):
    """NCCL_VERSION_CODE as text: 22809 -> '2.28.9' (codes below 10000 are 2.8 and older's x*1000+y*100+z)."""
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, (code % 10000) // 100, code % 100)
    return "%d.%d.%d" % (code // 1000, (code % 1000) // 100, code % 100)


class NcclLibrary:
    """A loaded libnccl: its handle, the file that serves ncclGetVersion, its version and kind."""

    def __init__(self, handle, how):
        self.handle = handle
        self.how = how
        fn = handle.ncclGetVersion
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
        code = ctypes.c_int(0)
        self.version_rc = fn(ctypes.byref(code))
        self.version_code = code.value
        address = ctypes.cast(fn, ctypes.c_void_p).value
        self.path = path_of_address(address) or "(not found in /proc/self/maps)"
        self.kind = identify(self.path) if self.path.startswith("/") else "unknown"

    def error_string(self, rc):
        fn = self.handle.ncclGetErrorString
        fn.restype = ctypes.c_char_p
        fn.argtypes = [ctypes.c_int]
        return (fn(rc) or b"").decode(errors="replace")

    def last_error(self):
        fn = self.handle.ncclGetLastError
        fn.restype = ctypes.c_char_p
        fn.argtypes = [ctypes.c_void_p]
        return (fn(None) or b"").decode(errors="replace")


def load_serving_library():
    """The libnccl.so.2 an NCCL program would use here, loaded as the process would, or None.

    The loader has already honoured LD_PRELOAD when the process started: a preloaded libnccl.so.2 is
    mapped, and dlopen("libnccl.so.2") returns it (a loaded object with that soname wins over the
    search path); otherwise dlopen searches LD_LIBRARY_PATH, the cache and the system folders.
    """
    try:
        handle = ctypes.CDLL(NCCL_SONAME)
    except OSError:
        return None
    preloaded = [p for p in os.environ.get("LD_PRELOAD", "").replace(":", " ").split() if p]
    lib = NcclLibrary(handle, "dlopen(%s)" % NCCL_SONAME)
    if any(os.path.realpath(p) == os.path.realpath(lib.path) for p in preloaded):
        lib.how = "LD_PRELOAD"
    return lib


def global_scope_library():
    """The file whose ncclGetVersion the process's global symbol scope resolves to (what a program's
    own NCCL calls bind to), or None when no NCCL symbol is in that scope."""
    try:
        fn = ctypes.CDLL(None).ncclGetVersion
    except AttributeError:
        return None
    return path_of_address(ctypes.cast(fn, ctypes.c_void_p).value)
