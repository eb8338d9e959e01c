// One-sided communication: ncclPutSignal, ncclSignal, ncclWaitSignal and ncclWinGetUserPtr. They
// work on symmetric memory windows, which Braid does not provide yet: the arguments are checked,
// then each call fails with a WARN naming the missing feature. ncclCommQueryProperties reports
// hostRmaSupport = false, which is how programs (XLA, for one) learn not to call these.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"
#include "util/check.h"

namespace {

constexpr const char* kRma = "one-sided communication over symmetric memory windows";

ncclResult_t checkPeer(const ncclComm* comm, int peer, const char* caller) {
  if (peer < 0 || peer >= comm->nranks_) {
    WARN("%s: peer %d is out of range [0, %d)", caller, peer, comm->nranks_);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t checkSignal(int sigIdx, int ctx, const char* caller) {
  if (sigIdx < 0 || ctx < 0) {
    WARN("%s: sigIdx %d and ctx %d must not be negative", caller, sigIdx, ctx);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

BRAID_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t, int sigIdx, int ctx, unsigned int, ncclComm_t comm, cudaStream_t) {
  const char* caller = "ncclPutSignal";
  return braid::queueingApiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckUsable(comm, caller));
    NCCLCHECK(checkPeer(comm, peer, caller));
    NCCLCHECK(checkSignal(sigIdx, ctx, caller));
    if (datatype < 0 || datatype >= ncclNumTypes) {
      WARN("%s: datatype %d is not a valid ncclDataType_t", caller, static_cast<int>(datatype));
      return ncclInvalidArgument;
    }
    if (count > 0 && localbuff == nullptr) {
      WARN("%s: localbuff is NULL for %zu elements", caller, count);
      return ncclInvalidArgument;
    }
    if (peerWin == nullptr) {
      WARN("%s: peerWin is NULL", caller);
      return ncclInvalidArgument;
    }
    return braid::notImplemented(caller, kRma);
  });
}

BRAID_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int, ncclComm_t comm, cudaStream_t) {
  const char* caller = "ncclSignal";
  return braid::queueingApiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckUsable(comm, caller));
    NCCLCHECK(checkPeer(comm, peer, caller));
    NCCLCHECK(checkSignal(sigIdx, ctx, caller));
    return braid::notImplemented(caller, kRma);
  });
}

BRAID_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t) {
  const char* caller = "ncclWaitSignal";
  return braid::queueingApiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckUsable(comm, caller));
    if (nDesc < 0 || (nDesc > 0 && signalDescs == nullptr)) {
      WARN("%s: nDesc is %d and signalDescs is %p", caller, nDesc, static_cast<void*>(signalDescs));
      return ncclInvalidArgument;
    }
    for (int i = 0; i < nDesc; ++i) {
      NCCLCHECK(checkPeer(comm, signalDescs[i].peer, caller));
      NCCLCHECK(checkSignal(signalDescs[i].sigIdx, signalDescs[i].ctx, caller));
      if (signalDescs[i].opCnt < 0) {
        WARN("%s: signalDescs[%d].opCnt is %d", caller, i, signalDescs[i].opCnt);
        return ncclInvalidArgument;
      }
    }
    return braid::notImplemented(caller, kRma);
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
    return braid::notImplemented(caller, "symmetric memory windows (ncclCommWindowRegister)");
  });
}
