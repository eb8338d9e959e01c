// ncclGroupSimulateEnd for one communicator: the queued operations are planned as a launch would
// plan them and their estimated times added up (a communicator runs its operations one after
// another), then dropped. The collectives' connections exist by now (the group connects them
// first); point-to-point pairs are estimated from this rank's own links, without connecting.
#include <map>
#include <utility>

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
  registeredQueue_.clear();
  std::vector<P2pTask> p2p;
  p2p.swap(p2pQueue_);
  double total = 0.0;
  const int nranks = comm_->nranks_;
  for (const CollTask& task : colls) {
    if (task.count == 0 || nranks == 1) continue;  // one rank: a device copy at most
    plan::Decision decision{};
    NCCLCHECK(plan::decide(modelFor(task), filter_, task.coll, collBytes(task, nranks), &decision));
    total += decision.estimatedUs;
  }
  if (!p2p.empty()) {
    NCCLCHECK(initP2pPlan());
    topo::TopoParams params = topo::topoParamsFromEnv(comm_->config_.minCTAs, comm_->config_.maxCTAs);
    std::vector<char> nvlinkPairs(nranks, 0);
    for (int peer = 0; peer < nranks; peer++) {
      nvlinkPairs[peer] = peer != comm_->rank_ && nvlinkP2p(p2pLinks_[peer], params) ? 1 : 0;
    }
    // The launch's rule (P2pBalance), with NVLink standing for a P2P pair.
    const P2pBalance balance{&nvlinkPairs, p2pSlotBytes_, p2pBalanceBytes_, p2pBalanceChunk_};
    std::map<std::pair<int, bool>, size_t> queued;  // (peer, send) -> operations of its queue so far
    std::vector<plan::P2pOpModel> ops;
    for (const P2pTask& t : p2p) {
      const bool self = t.peer == comm_->rank_;
      plan::P2pOpModel op{t.peer, t.send, t.bytes, self, nvlinkPairs[t.peer] != 0};
      if (!self && t.bytes > 0) op.balanced = balance.chunk(t, queued[{t.peer, t.send}]++, p2pChannels_) != 0;
      ops.push_back(op);
    }
    total += plan::estimateP2pUs(ops, p2pChannels_);
  }
  INFO(kLogColl, "comm %p rank %d: group simulated, %zu collectives and %zu sends/receives, estimated %.1f us",
       static_cast<void*>(comm_), comm_->rank_, colls.size(), p2p.size(), total);
  *us = total;
  return ncclSuccess;
}

}  // namespace braid
