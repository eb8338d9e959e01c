// The sends and receives of a communicator: the connections to each peer, made the first time a
// group names it (p2p_connect.cc), the count check of BRAID_P2P_CHECK_COUNTS (p2p_check.cc), the
// launch of a group's operations as one point-to-point kernel or rounds of them (p2p_launch.cc),
// in-place AlltoAll's staging (p2p_stage.cc), and ncclGroupSimulateEnd's estimate of them
// (simulate.cc).
//
// It owns what only sends and receives use: this rank's links to every peer, which peers are
// connected and how, the channels per peer and the FIFO slot they use, and the parameters that
// split and balance operations. Connections go through the share membership and launches through
// its launch order, both in the context.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "launch/data_path_context.h"
#include "launch/p2p_stage.h"
#include "launch/p2p_task.h"
#include "plan/p2p_stage.h"
#include "register/registry.h"
#include "topo/topo.h"
#include "transport/transport.h"

namespace braid {

class P2pEngine {
 public:
  explicit P2pEngine(const DataPathContext& ctx) : ctx_(ctx) {}
  ~P2pEngine();
  P2pEngine(const P2pEngine&) = delete;
  P2pEngine& operator=(const P2pEngine&) = delete;

  // At the data path's creation (current device: the communicator's).
  [[nodiscard]] ncclResult_t init();

  // Whether `queue` names a peer not connected yet.
  bool needsConnect(const std::vector<P2pTask>& queue) const;
  // Connects the peers `queue` names for the first time, pairwise (see p2p_connect.cc). netLl: NET
  // connections get LL buffers (the rings' rule; no LL buffer is made for sends and receives).
  [[nodiscard]] ncclResult_t connect(const std::vector<P2pTask>& queue, bool netLl);
  bool connectedTo(int peer) const { return !connected_.empty() && connected_[peer] != 0; }
  // A connected peer linked by P2P (the peers can map each other's buffers).
  bool directPair(int peer) const { return !directPair_.empty() && directPair_[peer] != 0; }

  // BRAID_P2P_CHECK_COUNTS (p2p_check.cc): whether `queue` has an operation to check, and the check.
  bool needsCountCheck(const std::vector<P2pTask>& queue) const;
  [[nodiscard]] ncclResult_t checkCounts(const std::vector<P2pTask>& tasks);

  // Launches a group's sends and receives on the first one's stream (the others joined to it);
  // the registrations of zero-copy ones are noted in `registry`.
  [[nodiscard]] ncclResult_t launch(const std::vector<P2pTask>& tasks, reg::Registry* registry);
  // ncclGroupSimulateEnd (simulate.cc): adds the estimated microseconds of `tasks` to *totalUs, from
  // this rank's own links, without connecting.
  [[nodiscard]] ncclResult_t addEstimatedUs(const std::vector<P2pTask>& tasks, double* totalUs);

 private:
  // This rank's links and the point-to-point parameters; local, made once per communicator.
  [[nodiscard]] ncclResult_t initPlan();
  [[nodiscard]] ncclResult_t connectPeer(const transport::Context& ctx, const topo::TopoParams& params, int peer);
  // The kernels of `tasks` and the copies of `selfPairs` (one kernel, or rounds of them and then the
  // copies), on `stream`, between the order's before() and after(); `queues` are those of `tasks`.
  // launchEvent (null: none): the launch-completion event of the group's sends and receives, which
  // their last kernel records (before the copies if they launch none).
  [[nodiscard]] ncclResult_t launchKernels(const std::vector<P2pTask>& tasks, const P2pSelfPairs& selfPairs,
                                           cudaStream_t stream, cudaEvent_t launchEvent = nullptr);
  [[nodiscard]] ncclResult_t launchKernels(const std::vector<P2pTask>& tasks, const P2pQueues& queues,
                                           size_t longestQueue, const P2pSelfPairs& selfPairs, cudaStream_t stream,
                                           cudaEvent_t launchEvent);
  // In-place AlltoAll (p2p_stage.cc): whether every staged send of `tasks` can instead go guarded
  // with its receive, and then the tasks so marked in *out; else the batches of a group with staged
  // sends (none: nothing staged), their staging memory made; and their launch.
  // p2pPairs: per peer, linked by P2P (the connected pairs at launch, the NVLink ones in a simulation).
  bool guardInPlace(const std::vector<P2pTask>& tasks, const std::vector<char>& p2pPairs,
                    std::vector<P2pTask>* out) const;
  plan::StagePlan stagePlan(const std::vector<P2pTask>& tasks, size_t longestQueue) const;
  [[nodiscard]] ncclResult_t planStaging(const std::vector<P2pTask>& tasks, size_t longestQueue, P2pStaging* staging);
  [[nodiscard]] ncclResult_t launchStaged(const P2pStaging& staging, const P2pSelfPairs& selfPairs, cudaStream_t stream,
                                          cudaEvent_t launchEvent = nullptr);
  [[nodiscard]] ncclResult_t matchSelf(const std::vector<P2pTask>& tasks, P2pSelfPairs* pairs) const;
  [[nodiscard]] ncclResult_t joinStreams(const std::vector<P2pTask>& tasks, cudaStream_t main, bool before);

  const DataPathContext& ctx_;
  // Per peer: whether its connections exist, and whether it is a P2P pair.
  std::vector<char> connected_;
  std::vector<char> directPair_;
  // This rank's detected links, the slot of a point-to-point FIFO and the channels per peer
  // (initPlan, once per communicator).
  std::vector<topo::Link> links_;
  uint64_t slotBytes_ = 0;
  int64_t balanceBytes_ = 0;  // BRAID_P2P_BALANCE_BYTES
  int64_t balanceChunk_ = 0;  // BRAID_P2P_BALANCE_CHUNK
  int channels_ = 0;
  std::vector<int> peerChannels_;    // per peer: channels_, or fewer to a peer on another host
  std::vector<uint64_t> recvCount_;  // receives issued per peer, numbering the count check's messages
  int residentCtas_ = 0;             // CTAs every rank's GPU holds at once: a larger group could deadlock
  cudaEvent_t joinEvent_ = nullptr;  // brings a group's other streams into its launch stream
};

}  // namespace braid
