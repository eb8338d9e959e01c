// The collectives of a communicator: the rings, the direct channels and the trees, their
// connections (made at the first collective, "lazily": comm_connect.cc, tree_connect.cc), the cost
// model they give the planner, the plan of each queued collective (collective_plan.cc) and its
// launch (collective_launch.cc).
//
// It owns what only collectives use: the NCCL_ALGO / NCCL_PROTO filter, the topology the rings are
// built from and the model planned on. Connections go through the share membership (they may be
// reused from a share group), launches through its launch order; both come with the context.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "device/dev_types.h"
#include "launch/coll_task.h"
#include "launch/data_path_context.h"
#include "launch/planned_coll.h"
#include "launch/registered_launch.h"
#include "plan/plan.h"
#include "register/registry.h"
#include "topo/topo.h"
#include "transport/transport.h"

namespace braid {

class CollectiveEngine {
 public:
  explicit CollectiveEngine(const DataPathContext& ctx) : ctx_(ctx) {}
  CollectiveEngine(const CollectiveEngine&) = delete;
  CollectiveEngine& operator=(const CollectiveEngine&) = delete;

  // Reads NCCL_ALGO and NCCL_PROTO; fails on a malformed one.
  [[nodiscard]] ncclResult_t init();

  // Whether a queued collective needs the rings connected (a collective of more than one rank).
  bool needsConnect(const std::vector<CollTask>& queue) const;
  // Builds the rings and trees from every rank's links and connects them and the direct channels;
  // collective: every rank runs it for the same (first) collective.
  [[nodiscard]] ncclResult_t connect();
  bool connected() const { return connected_; }
  const topo::Topology& topology() const { return topo_; }
  // The transports' view of the communicator (DataPathContext::transportContext with the rings'
  // NET rule).
  transport::Context transportContext() const { return ctx_.transportContext(topo_.llOk); }

  // The plan of `task` on the model of the connected rings, within its options (when zeroCopy, the
  // Simple ring fitted to plan::zeroCopyModel; the symmetric kernels where `symmetric` names
  // buffers in symmetric windows): the planner's one caller.
  [[nodiscard]] ncclResult_t decide(const CollTask& task, bool zeroCopy, plan::Decision* out,
                                    const plan::SymmetricBuffers& symmetric = {}) const;
  // `task` planned once at its group's end (collective_plan.cc, planned_coll.h), taking the
  // zero-copy plan `registered` when it goes direct. *out refers to task.
  [[nodiscard]] ncclResult_t plan(const CollTask& task, const RegisteredLaunch& registered, PlannedColl* out) const;

  // The INFO line of a collective about to be planned for launch (none for an empty one).
  void logCall(const CollTask& task) const;
  // Launches a planned collective on its stream through the launch order: its kernel (the
  // registrations of a zero-copy one noted in `registry`), or on one rank a copy.
  [[nodiscard]] ncclResult_t launch(const PlannedColl& op, reg::Registry* registry);

 private:
  // After a symmetric kernel's launch: its windows are noted as in use until it has run.
  [[nodiscard]] ncclResult_t noteSymmetricUse(const PlannedColl& op, bool graph) const;
  [[nodiscard]] ncclResult_t buildRings();
  [[nodiscard]] ncclResult_t connectAll();
  [[nodiscard]] ncclResult_t connectRings(const transport::Context& ctx, DevComm* dev);
  [[nodiscard]] ncclResult_t connectDirect(transport::Context ctx, DevComm* dev);
  [[nodiscard]] ncclResult_t connectTrees(transport::Context ctx, DevComm* dev);  // tree_connect.cc
  plan::CommModel commModel(const DevComm& dev) const;  // of the connected channels dev describes

  const DataPathContext& ctx_;
  plan::Filter filter_{};
  bool connected_ = false;
  topo::Topology topo_{};
  plan::CommModel model_{};
};

}  // namespace braid
