// One-sided communication: ncclPutSignal, ncclSignal, ncclWaitSignal and ncclWinGetUserPtr, on
// symmetric memory windows (window/manager.h). Stream-ordered, on the copy engines, between the
// ranks of one LSA team; a peer on another host is refused with a WARN (no network path yet).
#include "api/api_guard.h"
#include "api/export.h"
#include "api/window_glue.h"
#include "core/comm.h"
#include "util/check.h"

namespace {

// The communicator's window manager; one-sided operations need its signal memory, which the first
// window registration makes.
ncclResult_t rmaWindows(ncclComm* comm, const char* caller, braid::window::Manager** out) {
  NCCLCHECK(braid::commCheckUsable(comm, caller));
  NCCLCHECK(braid::commWindows(comm, false, out));
  if (*out != nullptr) return ncclSuccess;
  WARN(
      "%s: rank %d: one-sided operations need the communicator's signal memory, which its first "
      "ncclCommWindowRegister sets up: register a window first",
      caller, comm->rank_);
  return ncclInvalidUsage;
}

}  // namespace

BRAID_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                           cudaStream_t stream) {
  const char* caller = "ncclPutSignal";
  return braid::queueingApiGuard(caller, [&] {
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(rmaWindows(comm, caller, &windows));
    return windows->putSignal(localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, stream);
  });
}

BRAID_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  const char* caller = "ncclSignal";
  return braid::queueingApiGuard(caller, [&] {
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(rmaWindows(comm, caller, &windows));
    return windows->signal(peer, sigIdx, ctx, flags, stream);
  });
}

BRAID_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream) {
  const char* caller = "ncclWaitSignal";
  return braid::queueingApiGuard(caller, [&] {
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(rmaWindows(comm, caller, &windows));
    return windows->waitSignal(nDesc, signalDescs, stream);
  });
}

BRAID_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  const char* caller = "ncclWinGetUserPtr";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    if (win == nullptr || outUserPtr == nullptr) {
      WARN("%s: win (%p) and outUserPtr (%p) must not be NULL", caller, static_cast<void*>(win),
           static_cast<void*>(outUserPtr));
      return ncclInvalidArgument;
    }
    *outUserPtr = nullptr;
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(braid::commWindows(comm, false, &windows));
    if (windows == nullptr) {
      WARN("%s: win %p is not a window of this communicator (it has none)", caller, static_cast<void*>(win));
      return ncclInvalidArgument;
    }
    return windows->userPtr(win, outUserPtr);
  });
}
