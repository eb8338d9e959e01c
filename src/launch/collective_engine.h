// The collectives of a communicator: the rings, the direct channels and the trees, their
// connections (made at the first collective, "lazily": comm_connect.cc, tree_connect.cc), the cost
// model they give the planner, and the launch of one collective kernel (collective_launch.cc).
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
  const plan::CommModel& model() const { return model_; }
  // The transports' view of the communicator (DataPathContext::transportContext with the rings'
  // NET rule).
  transport::Context transportContext() const { return ctx_.transportContext(topo_.llOk); }

  // The model an operation is planned on (the plan offers no Direct for a user PreMulSum op).
  plan::CommModel modelFor(const CollTask& task) const {
    plan::CommModel model = model_;
    model.userPreMulSum = hasUserOp(task);
    return model;
  }
  // An operation's plan on `model` (modelFor, or its zero-copy variant), within its options.
  [[nodiscard]] ncclResult_t planOf(const CollTask& task, const plan::CommModel& model, plan::Decision* out) const;

  // Launches one collective on its stream through the launch order: its kernel (planned here unless
  // `registered` goes zero-copy, whose registrations are then noted in `registry`), or a copy on one
  // rank.
  [[nodiscard]] ncclResult_t launch(const CollTask& task, const RegisteredLaunch& registered, reg::Registry* registry);

 private:
  [[nodiscard]] ncclResult_t buildRings();
  [[nodiscard]] ncclResult_t connectAll();
  [[nodiscard]] ncclResult_t connectRings(const transport::Context& ctx, DevComm* dev);
  [[nodiscard]] ncclResult_t connectDirect(transport::Context ctx, DevComm* dev);
  [[nodiscard]] ncclResult_t connectTrees(transport::Context ctx, DevComm* dev);  // tree_connect.cc
  plan::CommModel commModel(const uint32_t slotBytes[kNumProtos]) const;

  const DataPathContext& ctx_;
  plan::Filter filter_{};
  bool connected_ = false;
  topo::Topology topo_{};
  plan::CommModel model_{};
};

}  // namespace braid
