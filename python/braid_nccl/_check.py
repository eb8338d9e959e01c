"""python -m braid_nccl --check: which libnccl serves NCCL calls here, and does it work."""

import array
import ctypes
import os
import sys
import threading
import time

from . import __version__, library_path
from ._cuda import (
    CUDART_OVERRIDE_VAR,
    MEMCPY_DEVICE_TO_HOST,
    MEMCPY_HOST_TO_DEVICE,
    Cudart,
    cudart_candidates,
    driver_device_count,
)
from ._inspect import (
    NcclLibrary,
    global_scope_library,
    identify,
    load_serving_library,
    mapped_nccl_libraries,
    version_text,
)

NCCL_FLOAT32 = 7
NCCL_SUM = 0
NCCL_IN_PROGRESS = 7
ELEMENTS = 1 << 20  # 4 MiB per buffer
SANITY_TIMEOUT_S = 180


class CheckFailed(Exception):
    pass


def describe(lib):
    ok = "" if lib.version_rc == 0 else " (ncclGetVersion returned %d)" % lib.version_rc
    return [
        "  path:    %s" % lib.path,
        "  loaded:  %s" % lib.how,
        "  version: ncclGetVersion = %d (%s)%s" % (lib.version_code, version_text(lib.version_code), ok),
        "  library: %s" % lib.kind,
    ]


def find_library(out):
    """The library to report on and test: the one serving NCCL calls, else the package's own."""
    lib = load_serving_library()
    if lib is not None:
        out("libnccl.so.2 serving NCCL calls in this process:")
        for line in describe(lib):
            out(line)
        bound = global_scope_library()
        if bound and os.path.realpath(bound) != os.path.realpath(lib.path):
            out("  note: a program's own NCCL calls bind to %s (it is in the global symbol scope)" % bound)
        own = library_path()
        if not os.path.isfile(own):
            out("This package's library %s is missing (braid-run needs it)" % own)
        elif os.path.realpath(own) != os.path.realpath(lib.path):
            out("That is not this package's library, which `braid-run COMMAND` preloads:")
            describe_own(out)
        return lib, True
    out("No libnccl.so.2 is preloaded or on the loader's search path here: a program linked with -lnccl")
    out("would not start, and PyTorch would use the NVIDIA copy its wheel ships. `braid-run COMMAND`")
    out("preloads Braid's library for COMMAND.")
    out("This package's library:")
    return describe_own(out), False


def describe_own(out):
    """Loads the package's library by path (beside any other libnccl: a path is no soname match)."""
    own = library_path()
    if not os.path.isfile(own):
        raise CheckFailed("the package's library %s is missing" % own)
    lib = NcclLibrary(ctypes.CDLL(own), "by path (the package's own, which braid-run preloads)")
    for line in describe(lib):
        out(line)
    return lib


def report_other_mappings(lib, out):
    # The package's library is mapped because describe_own() loaded it: not counted.
    mine = {os.path.realpath(lib.path), os.path.realpath(library_path())}
    others = [p for p in mapped_nccl_libraries() if os.path.realpath(p) not in mine]
    if not others:
        out("Other libnccl mapped in this process: none")
        return
    out("Other libnccl mapped in this process (their NCCL symbols are not the ones calls bind to):")
    for path in others:
        out("  %s (%s)" % (path, identify(path)))


def nccl_fn(lib, name, argtypes):
    fn = getattr(lib.handle, name)
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return fn


def nccl_check(lib, rc, what):
    if rc != 0:
        raise CheckFailed("%s: %s (%d); last error: %s" % (what, lib.error_string(rc), rc, lib.last_error()))


def cuda_check(rt, rc, what):
    if rc != 0:
        raise CheckFailed("%s: %s (error %d)" % (what, rt.error_text(rc), rc))


def rank_input(rank):
    """Rank-dependent integers held exactly in float32 (their sum is exact too)."""
    return array.array("f", (float((i * 7 + rank * 13) % 101 - 50) for i in range(ELEMENTS)))


def allreduce_sanity(lib, rt, ndev):
    """ncclCommInitAll on devices 0..ndev-1, one float32 sum AllReduce, result compared exactly."""
    vp = ctypes.c_void_p
    init_all = nccl_fn(lib, "ncclCommInitAll", [ctypes.POINTER(vp), ctypes.c_int, ctypes.POINTER(ctypes.c_int)])
    all_reduce = nccl_fn(lib, "ncclAllReduce", [vp, vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, vp, vp])
    group_start = nccl_fn(lib, "ncclGroupStart", [])
    group_end = nccl_fn(lib, "ncclGroupEnd", [])
    async_error = nccl_fn(lib, "ncclCommGetAsyncError", [vp, ctypes.POINTER(ctypes.c_int)])
    destroy = nccl_fn(lib, "ncclCommDestroy", [vp])
    nbytes = ELEMENTS * 4
    comms = (vp * ndev)()
    sends, recvs, streams = [vp() for _ in range(ndev)], [vp() for _ in range(ndev)], [vp() for _ in range(ndev)]
    inputs = [rank_input(r) for r in range(ndev)]
    try:
        nccl_check(lib, init_all(comms, ndev, (ctypes.c_int * ndev)(*range(ndev))), "ncclCommInitAll")
        for r in range(ndev):
            cuda_check(rt, rt.cudaSetDevice(r), "cudaSetDevice(%d)" % r)
            cuda_check(rt, rt.cudaMalloc(ctypes.byref(sends[r]), nbytes), "cudaMalloc")
            cuda_check(rt, rt.cudaMalloc(ctypes.byref(recvs[r]), nbytes), "cudaMalloc")
            cuda_check(rt, rt.cudaStreamCreate(ctypes.byref(streams[r])), "cudaStreamCreate")
            host = inputs[r].buffer_info()[0]
            cuda_check(rt, rt.cudaMemcpy(sends[r], host, nbytes, MEMCPY_HOST_TO_DEVICE), "cudaMemcpy")
            cuda_check(rt, rt.cudaMemset(recvs[r], 0xFF, nbytes), "cudaMemset")  # NaN until written
        nccl_check(lib, group_start(), "ncclGroupStart")
        for r in range(ndev):
            rc = all_reduce(sends[r], recvs[r], ELEMENTS, NCCL_FLOAT32, NCCL_SUM, comms[r], streams[r])
            nccl_check(lib, rc, "ncclAllReduce (rank %d)" % r)
        rc = group_end()
        if rc != NCCL_IN_PROGRESS:
            nccl_check(lib, rc, "ncclGroupEnd")
        for r in range(ndev):  # a launch that connects first may return ncclInProgress
            state = ctypes.c_int(NCCL_IN_PROGRESS)
            while True:
                nccl_check(lib, async_error(comms[r], ctypes.byref(state)), "ncclCommGetAsyncError")
                if state.value != NCCL_IN_PROGRESS:
                    break
                time.sleep(0.001)
            nccl_check(lib, state.value, "asynchronous error (rank %d)" % r)
        expected = array.array("f", (sum(col) for col in zip(*inputs)))
        for r in range(ndev):
            cuda_check(rt, rt.cudaSetDevice(r), "cudaSetDevice(%d)" % r)
            cuda_check(rt, rt.cudaStreamSynchronize(streams[r]), "cudaStreamSynchronize")
            got = array.array("f", bytes(nbytes))
            cuda_check(rt, rt.cudaMemcpy(got.buffer_info()[0], recvs[r], nbytes, MEMCPY_DEVICE_TO_HOST), "cudaMemcpy")
            if got != expected:
                bad = next(i for i in range(ELEMENTS) if got[i] != expected[i])
                wrong = sum(1 for a, b in zip(got, expected) if a != b)
                raise CheckFailed(
                    "rank %d: %d of %d elements wrong; first at %d: %r, expected %r"
                    % (r, wrong, ELEMENTS, bad, got[bad], expected[bad])
                )
    finally:
        for r in range(ndev):
            if comms[r]:
                destroy(comms[r])
            rt.cudaSetDevice(r)
            for buf in (sends[r], recvs[r]):
                if buf.value:
                    rt.cudaFree(buf)
            if streams[r].value:
                rt.cudaStreamDestroy(streams[r])


def run_with_timeout(fn, timeout_s):
    """fn() in a thread; its exception, or CheckFailed when it is still running after timeout_s."""
    outcome = {}

    def body():
        try:
            fn()
        except Exception as e:  # reported by the caller
            outcome["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise TimeoutError("no result after %d s" % timeout_s)
    if "error" in outcome:
        raise outcome["error"]


def gpu_sanity(lib, out):
    """True when it passed or could not run for want of GPUs; False when it failed."""
    if not os.environ.get(CUDART_OVERRIDE_VAR):  # a named runtime is asked alone (tests use a stand-in)
        count, why = driver_device_count()
        if count == 0:
            out("GPUs: none (%s): no sanity AllReduce" % (why or "0 devices"))
            return True
    rt, where, count, errors = None, None, 0, []
    for lib_rt, name in cudart_candidates():
        candidate = Cudart(lib_rt)
        n, why = candidate.device_count()
        if why is None:
            rt, where, count = candidate, name, n
            break
        errors.append("%s: %s" % (name, why))
    if rt is None:
        if os.environ.get(CUDART_OVERRIDE_VAR):
            out("GPUs: none (%s): no sanity AllReduce" % ("; ".join(errors) or "runtime not loadable"))
            return True
        out("GPUs exist, but no CUDA runtime found here works with this driver (%s); name one with %s"
            % ("; ".join(errors) or "no libcudart found", CUDART_OVERRIDE_VAR))
        return False
    if count == 0:
        out("GPUs: none (runtime %s counts 0 devices): no sanity AllReduce" % where)
        return True
    ndev = min(2, count)
    out("GPUs: %d (runtime %s); sanity AllReduce: float32 sum of %d elements on %d rank%s, devices %s"
        % (count, where, ELEMENTS, ndev, "" if ndev == 1 else "s", ",".join(map(str, range(ndev)))))
    try:
        run_with_timeout(lambda: allreduce_sanity(lib, rt, ndev), SANITY_TIMEOUT_S)
    except CheckFailed as e:
        out("  FAILED: %s" % e)
        return False
    except TimeoutError as e:
        # The thread is stuck in a CUDA or NCCL call; exiting normally could wait on it.
        out("  FAILED: %s (hung?)" % e)
        sys.stdout.flush()
        os._exit(1)
    out("  OK: every element equals the sum of the ranks' inputs")
    return True


def check(out=print, require_braid=False):
    """The whole check; returns the exit status (0 fine, 1 failed, 3 not Braid with require_braid)."""
    out("braid-nccl %s; braid-run preloads %s" % (__version__, library_path()))
    try:
        lib, serving = find_library(out)
    except (CheckFailed, OSError) as e:
        out("FAILED: %s" % e)
        return 1
    report_other_mappings(lib, out)
    ok = gpu_sanity(lib, out)
    braid_serves = serving and lib.kind == "Braid"
    if braid_serves:
        out("Result: Braid serves NCCL calls in this process%s" % ("" if ok else ", but the sanity AllReduce failed"))
    elif serving:
        out("Result: %s serves NCCL calls in this process, not Braid: run the program under braid-run" % lib.kind)
    else:
        out("Result: no NCCL library serves this process; braid-run would preload Braid's")
    if not ok:
        return 1
    if require_braid and not braid_serves:
        return 3
    return 0
