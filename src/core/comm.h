// The communicator. ncclComm_t is a pointer to this struct; applications never see inside it.
//
// A communicator owns one object per subsystem (bootstrap, data path) rather than one flat struct of
// fields. Its lifecycle:
//   kInitializing -> kReady -> kFinalized -> (destroyed)
//              |         \-> kRevoked (ncclCommRevoke, or ncclCommShrink with NCCL_SHRINK_ABORT: its
//              |              kernels were stopped; only Split/Shrink/Destroy/Abort/queries are allowed)
//              \-> kFailed (init failed; only Destroy/Abort/queries are allowed)
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/background_work.h"
#include "core/config.h"
#include "core/data_path.h"
#include "core/peer_info.h"
#include "core/share_group.h"
#include "core/windows_base.h"
#include "watch/comm_watch.h"

namespace braid {
enum class CommState : int { kInitializing, kReady, kFinalized, kFailed, kRevoked };
}  // namespace braid

struct ncclComm {
  // Set while the communicator is alive; cleared before it is freed.
  static constexpr uint64_t kMagic = 0x4252414944434f4dull;  // "BRAIDCOM"
  uint64_t magic_ = kMagic;

  int rank_ = -1;
  int nranks_ = 0;
  int cudaDev_ = -1;
  int smCount_ = 0;  // multiprocessors of cudaDev_
  int64_t busId_ = -1;
  uint64_t commHash_ = 0;  // identifies the communicator in logs (same on every rank)
  braid::CommConfig config_;

  // Its abort flag, hang diagnosis and peer watch (watch/comm_watch.h). Declared before what uses
  // it (the bootstrap polls the abort flag, the data path lends the watch its latest launch), so
  // that it goes last; freeComm stops it first, while the state it reads is still there.
  braid::watch::CommWatch watch_;
  std::unique_ptr<braid::Bootstrap> bootstrap_;
  std::vector<braid::PeerInfo> peers_;
  // The communicators this one shares connections with (core/share_group.h); null: none. Declared
  // before dataPath_, so that the data path, which may use the group's connections, goes first.
  std::shared_ptr<braid::ShareGroup> shareGroup_;
  // Queued operations, connections and device state; created by launch/ at the first operation.
  std::unique_ptr<braid::DataPathBase> dataPath_;
  // Symmetric memory windows and one-sided operations (window/manager.h); created at the first
  // ncclCommWindowRegister, released before the data path.
  std::unique_ptr<braid::CommWindowsBase> windows_;

  std::atomic<braid::CommState> state_{braid::CommState::kInitializing};
  // What ncclCommGetAsyncError reports.
  std::atomic<ncclResult_t> asyncError_{ncclInProgress};
  // Nonblocking creation (config blocking = 0), a nonblocking parent's split or shrink exchange, a
  // nonblocking group's launches: destroy and abort wait for them (freeComm, after raising the abort
  // flag), so that none outlives the communicator.
  braid::BackgroundWork background_;
  // The id ncclCommGetUniqueId made on this rank for the next ncclCommGrow, until that grow uses it.
  std::unique_ptr<ncclUniqueId> pendingGrowId_;
  // Between ncclCommSuspend and ncclCommResume (core/suspend.h): refuses operations.
  std::atomic<bool> suspended_{false};
};

namespace braid {

// Handle check for every API entry point that takes a communicator: a NULL, foreign or destroyed
// handle is ncclInvalidArgument with a WARN naming `caller`, never a crash.
[[nodiscard]] ncclResult_t commCheckHandle(const ncclComm* comm, const char* caller);
// Handle check plus state: the communicator must have finished init successfully and not be
// finalized (ncclInvalidUsage otherwise); a nonblocking one whose creation or group launch is still
// in progress is refused with ncclInvalidArgument (NCCL's answer), nothing queued.
[[nodiscard]] ncclResult_t commCheckUsable(const ncclComm* comm, const char* caller);
// The same for a parent of ncclCommSplit / ncclCommShrink, which may also have been revoked.
[[nodiscard]] ncclResult_t commCheckParent(const ncclComm* comm, const char* caller);

[[nodiscard]] ncclResult_t commGetUniqueId(ncclUniqueId* id);

// Creates this rank's communicator. Inside ncclGroupStart/End the rendezvous is deferred to the
// outermost ncclGroupEnd, which runs all deferred inits concurrently (one process may then drive
// several GPUs from one thread). `ids` holds nIds unique ids (several: ncclCommInitRankScalable).
[[nodiscard]] ncclResult_t commInitRank(ncclComm_t* newcomm, int nranks, const ncclUniqueId* ids, int nIds, int rank,
                                        const ncclConfig_t* config, const char* caller);
// The same with a configuration already parsed (ncclCommGrow: inherited from the parent).
[[nodiscard]] ncclResult_t commInitRankParsed(ncclComm_t* newcomm, int nranks, const ncclUniqueId* ids, int nIds,
                                              int rank, const braid::CommConfig& parsed, const char* caller);
// One communicator per device of `devlist` (or devices 0..ndev-1 when devlist is NULL).
[[nodiscard]] ncclResult_t commInitAll(ncclComm_t* comms, int ndev, const int* devlist);

// The check of a wait for the communicator's launched work (finalize, destroy, suspend): it stops
// at an asynchronous failure, or when a peer process on this host is gone while the work is still
// in flight.
DataPathBase::IdleWaitCheck peerFailureCheck(ncclComm* comm);

// Removes the communicator from the registry and frees it (no checks; callers have done them).
void freeComm(ncclComm* comm);

[[nodiscard]] ncclResult_t commFinalize(ncclComm_t comm);
[[nodiscard]] ncclResult_t commDestroy(ncclComm_t comm);
[[nodiscard]] ncclResult_t commAbort(ncclComm_t comm);
// ncclCommRevoke. revokeComm: stops the kernels of a communicator (they see the device abort flag
// and exit), waits until they have, and closes it to new operations (kRevoked); its bootstrap
// stays up for ncclCommShrink / ncclCommSplit.
[[nodiscard]] ncclResult_t commRevoke(ncclComm_t comm, int revokeFlags);
[[nodiscard]] ncclResult_t revokeComm(ncclComm* comm);

}  // namespace braid
