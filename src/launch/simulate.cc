// ncclGroupSimulateEnd for one communicator: the queued operations are planned as a launch would
// plan them and their estimated times added up (a communicator runs its operations one after
// another), then dropped. The collectives' connections exist by now (the group connects them
// first); point-to-point pairs are estimated from this rank's own links, without connecting.
#include <algorithm>
#include <map>
#include <utility>

#include "core/comm.h"
#include "launch/comm_data_path.h"
#include "plan/p2p_plan.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

// Whether a pair would most likely use P2P over NVLink: topo's rule applied to this rank's side of
// the link only (the connect decides on both sides; an estimate need not wait for the peer).
bool nvlinkP2p(const topo::Link& link, const topo::TopoParams& params) {
  return link.nvlinks > 0 && topo::pairTransport(link, link, params) == topo::TransportKind::kP2p;
}

}  // namespace

ncclResult_t CommDataPath::simulatePending(double* us) {
  std::vector<CollTask> colls;
  colls.swap(queue_);
  registration_.dropPlans();
  std::vector<P2pTask> p2p;
  p2p.swap(p2pQueue_);
  double total = 0.0;
  for (const CollTask& task : colls) {
    PlannedColl op;
    NCCLCHECK(collectives_.plan(task, RegisteredLaunch{}, &op));
    // One rank: a device copy at most, not estimated.
    if (op.path == PlannedColl::Path::kKernel) total += op.decision.estimatedUs;
  }
  if (!p2p.empty()) NCCLCHECK(p2p_.addEstimatedUs(p2p, &total));
  INFO(kLogColl, "comm %p rank %d: group simulated, %zu collectives and %zu sends/receives, estimated %.1f us",
       static_cast<void*>(comm_), comm_->rank_, colls.size(), p2p.size(), total);
  *us = total;
  return ncclSuccess;
}

ncclResult_t P2pEngine::addEstimatedUs(const std::vector<P2pTask>& groupTasks, double* totalUs) {
  NCCLCHECK(initPlan());
  const int rank = ctx_.comm->rank_;
  const int nranks = ctx_.comm->nranks_;
  topo::TopoParams params = topo::topoParamsFromEnv(ctx_.comm->config_.ctas.minCTAs, ctx_.comm->config_.ctas.maxCTAs);
  std::vector<char> nvlinkPairs(nranks, 0);
  for (int peer = 0; peer < nranks; peer++) {
    nvlinkPairs[peer] = peer != rank && nvlinkP2p(links_[peer], params) ? 1 : 0;
  }
  // The launch's rules (P2pBalance, guardInPlace), with NVLink standing for a P2P pair.
  const P2pBalance balance{&nvlinkPairs, slotBytes_, balanceBytes_, balanceChunk_};
  std::vector<P2pTask> guardedTasks;
  const std::vector<P2pTask>& tasks = guardInPlace(groupTasks, nvlinkPairs, &guardedTasks) ? guardedTasks : groupTasks;
  std::map<std::pair<int, bool>, size_t> queued;  // (peer, send) -> operations of its queue so far
  size_t longestQueue = 0;
  for (const P2pTask& t : tasks) {
    if (t.peer != rank && t.bytes > 0) longestQueue = std::max(longestQueue, ++queued[{t.peer, t.send}]);
  }
  // Staged sends (in-place AlltoAll, p2p_stage.cc): batches one after another, the first one's
  // copy before it (the later ones' copies run beside the transfers).
  const plan::StagePlan stage = stagePlan(tasks, longestQueue);
  std::vector<std::vector<plan::P2pOpModel>> ops(static_cast<size_t>(std::max(stage.batches(), 1)));
  queued.clear();
  for (const P2pTask& t : tasks) {
    const bool self = t.peer == rank;
    plan::P2pOpModel op{t.peer, t.send, t.bytes, self, nvlinkPairs[t.peer] != 0};
    if (!self && t.bytes > 0) op.balanced = balance.chunk(t, queued[{t.peer, t.send}]++, channels_) != 0;
    ops[self || stage.batches() == 0 ? 0 : static_cast<size_t>(stage.batchOfPeer[t.peer])].push_back(op);
  }
  for (const std::vector<plan::P2pOpModel>& batch : ops) *totalUs += plan::estimateP2pUs(batch, channels_);
  if (stage.batches() > 0) *totalUs += plan::estimateStageCopyUs(stage.batchBytes.front());
  return ncclSuccess;
}

}  // namespace braid
