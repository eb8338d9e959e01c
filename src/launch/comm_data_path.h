// The data path of one communicator (core's DataPathBase and OperationSink): a coordinator that
// owns the parts below, queues a group's operations, and runs each phase of ncclGroupEnd by asking
// the parts in turn. It holds no connection, plan or registration of its own.
//
//   ShareMembership      launch order, share group, the connections in use    (share_membership.h)
//   CollectiveEngine     rings, direct channels, trees; a collective's launch  (collective_engine.h)
//   P2pEngine            sends and receives: peers, launch, staging, counts    (p2p_engine.h)
//   BufferRegistration   ncclCommRegister and the zero-copy exchanges          (buffer_registration.h)
//   NetworkLink          network and proxy, once a connection crosses hosts    (network_link.h)
//
// The parts share one DataPathContext (data_path_context.h): the communicator, its DeviceState,
// its link to the watch (watch_link.h: hang diagnosis, the abort word), the launch settings and
// pointers to the network link and the membership.
//
// Ordering: every operation of a communicator shares the same FIFOs and step counters, so two of
// them must never run at the same time, whatever streams and graphs they run on: LaunchOrder. A
// communicator in a share group (core/share_group.h) launches through the group's order instead,
// and reuses the connections other members made (launch/shared_connections.h).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "core/data_path.h"
#include "core/operation_sink.h"
#include "launch/buffer_registration.h"
#include "launch/coll_task.h"
#include "launch/collective_engine.h"
#include "launch/data_path_context.h"
#include "launch/device_state.h"
#include "launch/network_link.h"
#include "launch/p2p_engine.h"
#include "launch/p2p_task.h"
#include "launch/red_ops.h"
#include "launch/share_membership.h"
#include "launch/watch_link.h"

namespace braid {

class CommDataPath final : public DataPathBase, public OperationSink {
 public:
  // Created at the communicator's first operation. Fails on a malformed NCCL_ALGO/NCCL_PROTO.
  [[nodiscard]] static ncclResult_t create(ncclComm* comm, std::unique_ptr<CommDataPath>* out);
  ~CommDataPath() override;
  CommDataPath(const CommDataPath&) = delete;
  CommDataPath& operator=(const CommDataPath&) = delete;

  // OperationSink (the filters are applied when an operation is planned, at launch).
  OperationSink& operations() override { return *this; }
  void enqueue(const CollTask& task) override { queue_.push_back(task); }
  void enqueueP2p(const P2pTask& task) override { p2pQueue_.push_back(task); }
  cudaEvent_t queuedP2pLaunchEvent() const override;
  [[nodiscard]] ncclResult_t registerBuffer(void* buff, size_t size, void** handle) override {
    return registration_.add(buff, size, handle);
  }
  [[nodiscard]] ncclResult_t deregisterBuffer(void* handle) override { return registration_.remove(handle); }
  UserRedOps& redOps() override { return redOps_; }

  // DataPathBase.
  bool needsConnect(ConnectScope scope) const override;
  [[nodiscard]] ncclResult_t connect(ConnectScope scope) override;
  [[nodiscard]] ncclResult_t launchPending() override;
  [[nodiscard]] ncclResult_t simulatePending(double* us) override;  // simulate.cc
  void dropPending() override;
  [[nodiscard]] ncclResult_t waitIdle(const IdleWaitCheck& check) override { return share_.waitIdle(check); }
  void kernelsAborted() override;
  [[nodiscard]] ncclResult_t joinShareGroup(const std::shared_ptr<ShareGroup>& group) override {
    return share_.join(group);
  }
  // Suspension (suspend_memory.cc).
  MemoryStats memoryStats() const override;
  bool suspendable(std::string* why) const override;
  [[nodiscard]] ncclResult_t suspendMemory() override;
  [[nodiscard]] ncclResult_t resumeMemory() override;
  [[nodiscard]] ncclResult_t kernelAbortWord(uint32_t** out) override;
  [[nodiscard]] ncclResult_t openNetwork(net::Network** out) override;

 private:
  explicit CommDataPath(ncclComm* comm);

  ncclComm* comm_;
  std::vector<CollTask> queue_;
  std::vector<P2pTask> p2pQueue_;
  // Declared before the connections (in share_), which use it: destroyed after them.
  NetworkLink net_;
  ShareMembership share_;
  // Shared: a share group's pool may keep step fields of its connections after it is gone.
  std::shared_ptr<DeviceState> device_ = std::make_shared<DeviceState>();
  WatchLink watch_;      // the communicator's watch: hang diagnosis, the peer watch, the abort word
  DataPathContext ctx_;  // points at the members above
  CollectiveEngine collectives_;
  P2pEngine p2p_;
  BufferRegistration registration_;
  UserRedOps redOps_;
};

}  // namespace braid
