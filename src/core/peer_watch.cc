#include "core/peer_watch.h"

#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "core/comm.h"
#include "core/comm_registry.h"
#include "core/hang_watch.h"
#include "core/progress_board.h"
#include "util/log.h"
#include "util/params.h"
#include "util/thread_guard.h"

namespace braid {
namespace {

// The state of comm's latest-launch event: cudaSuccess (everything launched before its record has
// completed), cudaErrorNotReady, or another error (cleared: not this thread's error to keep), which
// says nothing. Queried on the communicator's own GPU, whose context exists already: a runtime call
// on this thread's default device 0 could create a context there, in a process that never uses
// GPU 0. The device is not restored, for the same reason.
cudaError_t latestLaunchStatus(const ncclComm* comm) {
  cudaEvent_t latest = comm->lastLaunch_.load();
  if (latest == nullptr) return cudaErrorInvalidResourceHandle;
  cudaError_t status = cudaSetDevice(comm->cudaDev_);
  if (status == cudaSuccess) status = cudaEventQuery(latest);
  if (status != cudaSuccess && status != cudaErrorNotReady) (void)cudaGetLastError();
  return status;
}

// Only work in flight can be waiting for a dead peer. A peer that exited after everything it took
// part in had completed (the end of a job) harms nothing until the next operation, which then waits
// for it and gets the communicator marked.
bool workInFlight(const ncclComm* comm) {
  // No kernel notes its progress on its fast path: the latest launch's event covers them all
  // (collectives and point-to-point, eager or replayed from graphs).
  return latestLaunchStatus(comm) == cudaErrorNotReady;
}

// Eager collectives note nothing when they end (a store to host memory would cost each ~0.9 us):
// once the latest-launch event has completed, so has every collective launched before its record,
// which the board then says for the hang reports (progress_board.h, `completed`).
void noteCompletedCollectives(ncclComm* comm) {
  ProgressBoard* board = comm->progressBoard_.load();
  if (paramInt(ParamId::kHangReportMs) <= 0 || board == nullptr || comm->state_.load() != CommState::kReady) return;
  // Read before the query: a record made meanwhile only makes the query stricter.
  const uint64_t recorded = recordedThrough(*board);
  if (recorded <= completedThrough(*board)) return;  // nothing new: no CUDA call
  if (latestLaunchStatus(comm) == cudaSuccess) noteCompleted(board, recorded);
}

// Tells comm's proxy when every launch it was told of has ended, so that it may sleep long
// (proxy/proxy.h, "Idle"). `issued` is read before the query: a launch counted there has recorded
// the latest event already (util/launch_counts.h).
void noteNetLaunchesEnded(const ncclComm* comm) {
  LaunchCounts* launches = comm->netLaunches_.load();
  if (launches == nullptr) return;
  const uint64_t issued = launches->issued.load(std::memory_order_acquire);
  if (issued == launches->completed.load(std::memory_order_relaxed)) return;  // no CUDA call
  if (latestLaunchStatus(comm) == cudaSuccess) launches->completed.store(issued, std::memory_order_release);
}

// Marks `comm` if one of its peers died; the caller visits it in the comm registry.
void checkComm(ncclComm* comm) {
  if (comm->state_.load() != CommState::kReady) return;  // a revoked one has nothing in flight
  if (comm->asyncError_.load() != ncclSuccess) return;   // marked before, or failed otherwise
  if (!workInFlight(comm)) return;
  (void)markIfPeerDied(comm);
}

void watchLoop(int64_t intervalMs) {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(intervalMs));
    // A visit that throws (out of memory) is WARNed and skipped: the watch itself goes on.
    (void)guardThread("peer watch", [] {
      commRegistryForEach([](ncclComm* comm) {
        checkHang(comm);  // first: it makes no CUDA call, and the others may block in one
        noteCompletedCollectives(comm);
        noteNetLaunchesEnded(comm);
        checkComm(comm);
      });
    });
  }
}

}  // namespace

bool processGone(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  // Exited but not reaped: /proc/<pid>/stat's state (after the parenthesized name) is Z or X.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

int firstDeadPeer(const std::vector<PeerInfo>& peers, int self) {
  if (self < 0 || self >= static_cast<int>(peers.size()) || peers[self].pidSpace == 0) return -1;
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    const PeerInfo& p = peers[r];
    if (r == self || p.pidSpace != peers[self].pidSpace || p.pid == peers[self].pid) continue;
    if (processGone(p.pid)) return r;
  }
  return -1;
}

bool markIfPeerDied(ncclComm* comm) {
  if (comm->asyncError_.load() != ncclSuccess) return false;  // marked before, or failed otherwise
  const int dead = firstDeadPeer(comm->peers_, comm->rank_);
  if (dead < 0) return false;
  ncclResult_t expected = ncclSuccess;
  if (!comm->asyncError_.compare_exchange_strong(expected, ncclRemoteError)) return false;
  const PeerInfo& peer = comm->peers_[dead];
  ::shm_unlink(progressBoardName(comm->commHash_, dead, peer.pid).c_str());  // it could not remove its own
  WARN(
      "comm %p rank %d of %d: the process of peer rank %d (pid %d, GPU %d) is gone; operations that need it "
      "cannot complete. ncclCommGetAsyncError reports ncclRemoteError; call ncclCommAbort, or ncclCommShrink "
      "with NCCL_SHRINK_ABORT excluding rank %d",
      static_cast<void*>(comm), comm->rank_, comm->nranks_, dead, peer.pid, peer.cudaDev, dead);
  return true;
}

void startPeerWatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int64_t intervalMs = paramInt(ParamId::kPeerWatchMs);
    if (intervalMs <= 0) return;
    // Detached: it holds no lock between visits, and the registry outlives it.
    std::thread(watchLoop, intervalMs).detach();
  });
}

}  // namespace braid
