// One communicator's watch: everything that watches a communicator from beside its data path,
// behind one object that its ncclComm owns (core/comm.h):
//   - its abort flag (abort_flag.h), the one source of truth for what of it has been told to stop;
//   - hang diagnosis: this rank's progress board (progress_recorder.h), on which the data path
//     notes its launches, and the reports the watch thread makes from every rank's board
//     (hang_watch.h; other hosts' boards come from their processes' board servers,
//     board_server.h);
//   - the peer watch (peer_watch.h): the communicator is marked when a peer process on this host
//     died while work was in flight, and its proxy learns when the launches it serves have ended.
// Core starts the watch once the communicator is ready and stops it first when it tears the
// communicator down; the data path lends the watch what it reads of it when the data path is made,
// and takes that back when it goes (launch/watch_link.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "util/launch_counts.h"
#include "watch/abort_flag.h"
#include "watch/hang_watch.h"
#include "watch/peer_process.h"
#include "watch/progress_recorder.h"

namespace braid::watch {

class CommWatch {
 public:
  // The communicator as the watch knows it. Core keeps its state, which the watch reads through
  // `ready` (initialized and not finalized, revoked or failed: only then is its work looked at) and
  // `asyncError` (a dead peer sets it to ncclRemoteError, unless it holds an error already).
  struct Subject {
    const void* handle = nullptr;  // the ncclComm, named in WARNs
    uint64_t commHash = 0;
    int rank = -1;
    int cudaDev = -1;
    std::vector<PeerProcess> peers;  // by rank
    std::function<bool()> ready;
    std::atomic<ncclResult_t>* asyncError = nullptr;
  };

  CommWatch() = default;
  ~CommWatch() { stop(); }
  CommWatch(const CommWatch&) = delete;
  CommWatch& operator=(const CommWatch&) = delete;

  AbortFlag& abortFlag() { return abort_; }
  const AbortFlag& abortFlag() const { return abort_; }

  // Core, once the communicator is ready (its peers are known), before it says so: from now on the
  // watch thread visits it every BRAID_PEER_WATCH_MS (none with 0). Once only.
  void start(Subject subject);
  // Core, first when the communicator is torn down: returns once no visit runs and none will.
  void stop();
  // Core, while finalize and destroy wait for launched work (they must not wait for a dead peer, and
  // destroy has stopped the watch): marks the communicator if one of its peer processes on this host
  // is gone (ncclRemoteError as its asynchronous error, one WARN naming the rank), unless it has an
  // error already. True when it was marked now.
  bool markIfPeerDied();

  // The data path, when it is made, on the communicator's GPU: lends the event its latest launch
  // records (complete once everything launched before it has completed), which the watch queries
  // for work in flight, and with `board` opens this rank's progress board. detachDataPath takes
  // the event back, after any visit that may be using it, before the data path goes.
  void attachDataPath(cudaEvent_t latestLaunch, bool board);
  void detachDataPath();
  // Where the data path notes its launches for hang diagnosis (only the launching thread writes).
  ProgressRecorder& recorder() { return recorder_; }
  // The counts of launches that may use the network, which the proxy reads and the watch thread
  // completes (util/launch_counts.h); null without a watch thread (BRAID_PEER_WATCH_MS 0).
  LaunchCounts* netLaunches();

  // The watch thread's look at the communicator (peer_watch.h).
  void visit();

 private:
  cudaError_t latestLaunchStatus() const;
  void noteCompletedCollectives(ProgressBoard* board);
  void noteNetLaunchesEnded();
  void checkPeers();

  AbortFlag abort_;
  Subject subject_;
  bool started_ = false;  // start() ran and stop() has not (core's threads only)
  std::atomic<cudaEvent_t> latestLaunch_{nullptr};
  ProgressRecorder recorder_;
  std::atomic<ProgressBoard*> board_{nullptr};  // recorder_'s once it is open: what visits read
  LaunchCounts netLaunches_;
  HangMemory hangMemory_;  // the watch thread's alone
};

}  // namespace braid::watch
