#include "watch/comm_watch.h"

#include <sys/mman.h>

#include <utility>

#include "util/log.h"
#include "util/params.h"
#include "watch/peer_watch.h"

namespace braid::watch {

void CommWatch::start(Subject subject) {
  subject_ = std::move(subject);
  started_ = true;
  if (paramInt(ParamId::kPeerWatchMs) <= 0) return;
  addWatched(this);  // after subject_ is set: the set's lock publishes it to the watch thread
  startWatchThread();
}

void CommWatch::stop() {
  if (!started_) return;
  started_ = false;
  removeWatched(this);
}

void CommWatch::attachDataPath(cudaEvent_t latestLaunch, bool board) {
  latestLaunch_.store(latestLaunch);
  if (!board) return;
  recorder_.init(subject_.commHash, subject_.rank, static_cast<int>(subject_.peers.size()));
  board_.store(recorder_.board());
}

void CommWatch::detachDataPath() {
  latestLaunch_.store(nullptr);
  waitOutVisit(this);
}

LaunchCounts* CommWatch::netLaunches() { return paramInt(ParamId::kPeerWatchMs) > 0 ? &netLaunches_ : nullptr; }

// The state of the latest-launch event: cudaSuccess (everything launched before its record has
// completed), cudaErrorNotReady, or another error (cleared: not this thread's error to keep), which
// says nothing. Queried on the communicator's own GPU, whose context exists already: a runtime call
// on this thread's default device 0 could create a context there, in a process that never uses
// GPU 0. The device is not restored, for the same reason.
cudaError_t CommWatch::latestLaunchStatus() const {
  cudaEvent_t latest = latestLaunch_.load();
  if (latest == nullptr) return cudaErrorInvalidResourceHandle;
  cudaError_t status = cudaSetDevice(subject_.cudaDev);
  if (status == cudaSuccess) status = cudaEventQuery(latest);
  if (status != cudaSuccess && status != cudaErrorNotReady) (void)cudaGetLastError();
  return status;
}

// Eager collectives note nothing when they end (a store to host memory would cost each ~0.9 us):
// once the latest-launch event has completed, so has every collective launched before its record,
// which the board then says for the hang reports (progress_board.h, `completed`).
void CommWatch::noteCompletedCollectives(ProgressBoard* board) {
  if (paramInt(ParamId::kHangReportMs) <= 0 || board == nullptr) return;
  // Read before the query: a record made meanwhile only makes the query stricter.
  const uint64_t recorded = recordedThrough(*board);
  if (recorded <= completedThrough(*board)) return;  // nothing new: no CUDA call
  if (latestLaunchStatus() == cudaSuccess) noteCompleted(board, recorded);
}

// Tells the proxy when every launch it was told of has ended, so that it may sleep long
// (proxy/proxy.h, "Idle"). `issued` is read before the query: a launch counted there has recorded
// the latest event already (util/launch_counts.h).
void CommWatch::noteNetLaunchesEnded() {
  const uint64_t issued = netLaunches_.issued.load(std::memory_order_acquire);
  if (issued == netLaunches_.completed.load(std::memory_order_relaxed)) return;  // no CUDA call
  if (latestLaunchStatus() == cudaSuccess) netLaunches_.completed.store(issued, std::memory_order_release);
}

// Only work in flight can be waiting for a dead peer. A peer that exited after everything it took
// part in had completed (the end of a job) harms nothing until the next operation, which then waits
// for it and gets the communicator marked. No kernel notes its progress on its fast path: the
// latest launch's event covers them all (collectives and point-to-point, eager or replayed from
// graphs).
void CommWatch::checkPeers() {
  if (subject_.asyncError->load() != ncclSuccess) return;  // marked before, or failed otherwise
  if (latestLaunchStatus() != cudaErrorNotReady) return;
  (void)markIfPeerDied();
}

void CommWatch::visit() {
  // A revoked, finalized or failed communicator has nothing in flight.
  const bool ready = subject_.ready();
  ProgressBoard* board = board_.load();
  // Hang reports first: they make no CUDA call, and the others may block in one.
  if (ready && board != nullptr) {
    checkHang(HangSubject{subject_.handle, subject_.commHash, subject_.rank, &subject_.peers}, *board, &hangMemory_);
  }
  if (ready) noteCompletedCollectives(board);
  noteNetLaunchesEnded();
  if (ready) checkPeers();
}

bool CommWatch::markIfPeerDied() {
  std::atomic<ncclResult_t>* error = subject_.asyncError;
  if (error == nullptr || error->load() != ncclSuccess) return false;  // marked before, or failed otherwise
  const int dead = firstDeadPeer(subject_.peers, subject_.rank);
  if (dead < 0) return false;
  ncclResult_t expected = ncclSuccess;
  if (!error->compare_exchange_strong(expected, ncclRemoteError)) return false;
  const PeerProcess& peer = subject_.peers[dead];
  ::shm_unlink(progressBoardName(subject_.commHash, dead, peer.pid).c_str());  // it could not remove its own
  WARN(
      "comm %p rank %d of %d: the process of peer rank %d (pid %d, GPU %d) is gone; operations that need it "
      "cannot complete. ncclCommGetAsyncError reports ncclRemoteError; call ncclCommAbort, or ncclCommShrink "
      "with NCCL_SHRINK_ABORT excluding rank %d",
      subject_.handle, subject_.rank, static_cast<int>(subject_.peers.size()), dead, peer.pid, peer.cudaDev, dead);
  return true;
}

}  // namespace braid::watch
