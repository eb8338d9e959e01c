// Handle checks and the end of a communicator's life: finalize, destroy, abort.
#include <chrono>

#include "core/child_comm.h"
#include "core/comm.h"
#include "core/comm_registry.h"
#include "core/group_job.h"
#include "cuda/capture_mode.h"
#include "util/check.h"
#include "util/log.h"
#include "util/text.h"

namespace braid {

namespace {

// A nonblocking creation still running is cancelled (its waits poll the abort flag), then joined;
// then the background exchanges of splits and shrinks of this communicator end.
void joinBackground(ncclComm* comm) {
  if (comm->background_.hasCreationThread()) {
    if (comm->state_.load() == CommState::kInitializing) comm->watch_.abortFlag().raise(watch::kAbortHostWaits);
    comm->background_.joinCreation();
  }
  comm->background_.joinExchanges();
}

// A nonblocking communicator used before ncclCommGetAsyncError said its last operation is done:
// refused with NCCL's code (ncclInvalidArgument), never queued. Answering ncclInProgress instead
// would read as "accepted" to a nonblocking caller, whose operation would then silently be missing.
ncclResult_t refuseInProgress(const ncclComm* comm, const char* caller, const char* what) {
  WARN(
      "%s: comm %p (rank %d) is nonblocking and %s is still in progress; poll ncclCommGetAsyncError until it "
      "no longer reports ncclInProgress before the next call",
      caller, static_cast<const void*>(comm), comm->rank_, what);
  return ncclInvalidArgument;
}

// What a ready communicator reporting ncclInProgress is busy with.
constexpr const char* kBackgroundWork = "its last group launch, split or shrink";

// An asynchronous error that says a peer or its connection failed (the peer watch, a proxy).
ncclResult_t asyncFailure(const ncclComm* comm) {
  const ncclResult_t async = comm->asyncError_.load();
  return async == ncclInProgress ? ncclSuccess : async;
}

// Tells the communicator's kernels to leave their wait loops, through its abort flag
// (watch/abort_flag.h); its bootstrap stays up.
void stopKernels(ncclComm* comm) {
  comm->watch_.abortFlag().raise(watch::kAbortKernels);
  if (comm->dataPath_) comm->dataPath_->kernelsAborted();
}

}  // namespace

// A peer process on this host that is gone is marked here, so the watch need not see it first
// (destroy takes the communicator out of its sight). Not in the first moments of the wait: a peer
// that exited right after its part of the last operation leaves this rank's kernel a few
// microseconds of its own work, not a failure.
constexpr std::chrono::milliseconds kDeadPeerGrace{100};

DataPathBase::IdleWaitCheck peerFailureCheck(ncclComm* comm) {
  return [comm, start = std::chrono::steady_clock::now()]() -> ncclResult_t {
    NCCLCHECK(asyncFailure(comm));
    if (std::chrono::steady_clock::now() - start >= kDeadPeerGrace && comm->watch_.markIfPeerDied()) {
      return ncclRemoteError;
    }
    return ncclSuccess;
  };
}

void freeComm(ncclComm* comm) {
  commRegistryRemove(comm);
  comm->watch_.stop();
  joinBackground(comm);
  comm->magic_ = 0;
  delete comm;
}

ncclResult_t commCheckHandle(const ncclComm* comm, const char* caller) {
  if (comm == nullptr) {
    WARN("%s: comm is NULL", caller);
    return ncclInvalidArgument;
  }
  // The registry is consulted before the pointer is dereferenced: a destroyed communicator's
  // memory may be gone.
  if (!commRegistryContains(comm) || comm->magic_ != ncclComm::kMagic) {
    WARN("%s: comm %p is not a live communicator (already destroyed, or not created by this library)", caller,
         static_cast<const void*>(comm));
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t commCheckUsable(const ncclComm* comm, const char* caller) {
  NCCLCHECK(commCheckHandle(comm, caller));
  switch (comm->state_.load()) {
    case CommState::kReady: {
      if (comm->suspended_.load()) {
        WARN("%s: comm %p (rank %d) is suspended (ncclCommSuspend); call ncclCommResume on every rank first", caller,
             static_cast<const void*>(comm), comm->rank_);
        return ncclInvalidUsage;
      }
      const ncclResult_t async = comm->asyncError_.load();
      if (async == ncclSuccess) return ncclSuccess;
      if (async == ncclInProgress) return refuseInProgress(comm, caller, kBackgroundWork);
      // A peer died (peer_watch.h): new work would wait for it forever.
      WARN(
          "%s: comm %p (rank %d) has an asynchronous error (%s); abort or destroy it, or shrink it with "
          "NCCL_SHRINK_ABORT",
          caller, static_cast<const void*>(comm), comm->rank_, resultText(async));
      return async;
    }
    case CommState::kInitializing:
      if (comm->config_.blocking == 0) return refuseInProgress(comm, caller, "its creation");
      WARN(
          "%s: comm %p (rank %d) has not finished initializing; call ncclGroupEnd first, or wait until "
          "ncclCommGetAsyncError no longer reports ncclInProgress",
          caller, static_cast<const void*>(comm), comm->rank_);
      return ncclInvalidUsage;
    case CommState::kFinalized:
      WARN("%s: comm %p (rank %d) was finalized; only ncclCommDestroy may follow ncclCommFinalize", caller,
           static_cast<const void*>(comm), comm->rank_);
      return ncclInvalidUsage;
    case CommState::kFailed:
      WARN("%s: comm %p (rank %d) failed to initialize (%s); destroy it", caller, static_cast<const void*>(comm),
           comm->rank_, resultText(comm->asyncError_.load()));
      return ncclInvalidUsage;
    case CommState::kRevoked:
      WARN(
          "%s: comm %p (rank %d) was revoked (ncclCommRevoke, or ncclCommShrink with NCCL_SHRINK_ABORT); only "
          "ncclCommShrink, ncclCommSplit, ncclCommDestroy and ncclCommAbort may follow",
          caller, static_cast<const void*>(comm), comm->rank_);
      return ncclInvalidUsage;
  }
  return ncclInternalError;
}

ncclResult_t commCheckParent(const ncclComm* comm, const char* caller) {
  NCCLCHECK(commCheckHandle(comm, caller));
  const CommState state = comm->state_.load();
  if (state == CommState::kReady && comm->suspended_.load()) return commCheckUsable(comm, caller);  // says why
  if (state == CommState::kRevoked || state == CommState::kReady) {
    // Even with a dead peer, but not while its bootstrap is busy in the background (a revoked
    // parent with a dead peer keeps that error during its shrink, so the count says so).
    if (comm->asyncError_.load() == ncclInProgress || comm->background_.exchangeRunning()) {
      return refuseInProgress(comm, caller, kBackgroundWork);
    }
    return ncclSuccess;
  }
  return commCheckUsable(comm, caller);
}

ncclResult_t revokeComm(ncclComm* comm) {
  ncclResult_t result = ncclSuccess;
  if (comm->dataPath_) {
    stopKernels(comm);
    result = comm->dataPath_->waitIdle({});  // its kernels leave at the abort flag
  }
  comm->state_ = CommState::kRevoked;
  INFO(kLogInit, "comm %p rank %d revoked: its kernels were stopped%s", static_cast<void*>(comm), comm->rank_,
       result == ncclSuccess ? "" : " (waiting for them failed)");
  return result;
}

ncclResult_t commRevoke(ncclComm_t comm, int revokeFlags) {
  NCCLCHECK(commCheckHandle(comm, "ncclCommRevoke"));
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    WARN("ncclCommRevoke: revokeFlags is %d; only NCCL_REVOKE_DEFAULT (0) exists", revokeFlags);
    return ncclInvalidArgument;
  }
  if (comm->state_.load() == CommState::kRevoked) return ncclSuccess;
  NCCLCHECK(commCheckUsable(comm, "ncclCommRevoke"));
  return revokeComm(comm);
}

ncclResult_t commFinalize(ncclComm_t comm) {
  NCCLCHECK(commCheckUsable(comm, "ncclCommFinalize"));
  // Finalizing closes the communicator to new work and waits for what was launched, unless a peer
  // dies meanwhile: then ncclRemoteError, and the communicator is left for abort or destroy.
  if (comm->dataPath_) NCCLCHECK(comm->dataPath_->waitIdle(peerFailureCheck(comm)));
  comm->state_ = CommState::kFinalized;
  INFO(kLogInit, "comm %p rank %d finalized", static_cast<void*>(comm), comm->rank_);
  return ncclSuccess;
}

namespace {

// Destroy and abort free the same resources; they differ in whether outstanding work is waited
// for (destroy) or cut short (abort). Neither ever waits for a peer: a dead peer must not hang us.
ncclResult_t release(ncclComm_t comm, bool abort, const char* caller) {
  auto start = std::chrono::steady_clock::now();
  // The caller's thread may be capturing an unrelated stream (a failure path that left a capture
  // open, or a graph being built around the destroy): the waits and frees below are permitted then,
  // and the communicator's own streams never join that capture.
  RelaxedCaptureMode relaxed;
  int rank = comm->rank_;
  ncclResult_t result = ncclSuccess;
  // First: its handle fails checks from now on, and the watch thread must not look at what is torn
  // down below. A visit in progress is waited out: a check takes microseconds, a hang report 50 ms
  // (up to 2 s per look at another host).
  commRegistryRemove(comm);
  comm->watch_.stop();
  // Abort cuts short the bootstrap waits of the background work waited for below.
  if (abort) comm->watch_.abortFlag().raise(watch::kAbortHostWaits);
  joinBackground(comm);              // no nonblocking creation, split or shrink exchange may still use it
  comm->background_.waitGroupJob();  // nor a nonblocking group's launches
  if (comm->dataPath_) {
    // Destroy waits for launched work (as ncclCommFinalize would) unless finalize already did, or a
    // peer has failed, before or during the wait (the work may wait for it: destroy then aborts it,
    // as it never waits for a peer, and succeeds).
    bool peerFailed = asyncFailure(comm) != ncclSuccess;
    if (!abort && !peerFailed && comm->state_.load() == CommState::kReady) {
      result = comm->dataPath_->waitIdle(peerFailureCheck(comm));
      peerFailed = asyncFailure(comm) != ncclSuccess;  // the check stopped the wait, or marked it
      if (peerFailed) result = ncclSuccess;
    }
    if (peerFailed) abort = true;
    if (abort || result != ncclSuccess) stopKernels(comm);
  }
  if (comm->windows_) comm->windows_->release(abort, asyncFailure(comm) != ncclSuccess);
  comm->windows_.reset();
  comm->watch_.abortFlag().raise(watch::kAbortHostWaits);
  comm->dataPath_.reset();
  comm->bootstrap_.reset();
  freeComm(comm);
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  INFO(kLogInit, "%s: comm %p rank %d released in %.2f ms", caller, static_cast<void*>(comm), rank,
       elapsed.count() * 1e3);
  return result;
}

}  // namespace

ncclResult_t commDestroy(ncclComm_t comm) {
  // NCCL accepts a NULL communicator here and does nothing.
  if (comm == nullptr) return ncclSuccess;
  NCCLCHECK(commCheckHandle(comm, "ncclCommDestroy"));
  return release(comm, false, "ncclCommDestroy");
}

ncclResult_t commAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  NCCLCHECK(commCheckHandle(comm, "ncclCommAbort"));
  return release(comm, true, "ncclCommAbort");
}

}  // namespace braid
