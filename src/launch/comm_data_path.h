// The data path of one communicator (core's DataPathBase): the queue of a group's operations, the
// rings, the direct channels and their connections (made at the first operation, "lazily"), the device-side DevComm,
// the per-operation plan, and the launch on the user's stream.
//
// Ordering: every operation of a communicator shares the same FIFOs and step counters, so two of
// them must never run at the same time, whatever streams and graphs they run on: LaunchOrder. A
// communicator in a share group (core/share_group.h) launches through the group's order instead,
// and reuses the connections other members made (launch/shared_connections.h).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/comm.h"
#include "core/data_path.h"
#include "device/launch_kernel.h"
#include "launch/coll_task.h"
#include "launch/device_state.h"
#include "launch/launch_order.h"
#include "launch/network_link.h"
#include "launch/p2p_stage.h"
#include "launch/p2p_task.h"
#include "launch/progress_recorder.h"
#include "launch/red_ops.h"
#include "launch/reg_exchange.h"
#include "launch/shared_connections.h"
#include "plan/p2p_stage.h"
#include "plan/plan.h"
#include "register/registry.h"
#include "topo/topo.h"
#include "transport/transport.h"
#include "util/launch_counts.h"

namespace braid {

// The transport that carries a pair topo chose (kNone never gets this far: topo fails first).
inline transport::Kind transportKind(topo::TransportKind kind) {
  switch (kind) {
    case topo::TransportKind::kP2p:
      return transport::Kind::kP2p;
    case topo::TransportKind::kNet:
      return transport::Kind::kNet;
    default:
      return transport::Kind::kShm;
  }
}

// The communicator's ranks as topo describes them.
std::vector<topo::RankDesc> rankDescs(const ncclComm& comm);

// Graph registration and zero-copy sends look at no operation smaller than this: smaller
// collectives take LL (no zero-copy), and eager operations that small pay for no capture query.
// (Eager sends go zero-copy from a larger size, see p2p_reg.cc.)
constexpr size_t kZeroCopyMinBytes = 64 << 10;

class CommDataPath final : public DataPathBase {
 public:
  // Created at the communicator's first operation. Fails on a malformed NCCL_ALGO/NCCL_PROTO.
  [[nodiscard]] static ncclResult_t create(ncclComm* comm, std::unique_ptr<CommDataPath>* out);
  ~CommDataPath() override;

  // Queues a checked operation. The filters are applied when it is planned, at launch.
  void enqueue(const CollTask& task) { queue_.push_back(task); }
  // ncclCommRegister / ncclCommDeregister (arguments checked by the caller); reg_launch.cc.
  [[nodiscard]] ncclResult_t registerBuffer(void* buff, size_t size, void** handle);
  [[nodiscard]] ncclResult_t deregisterBuffer(void* handle) { return registry_.remove(handle); }
  // ncclRedOpCreatePreMulSum's ops (enqueue.cc).
  UserRedOps& redOps() { return redOps_; }
  // Queues a checked, non-empty send or receive; launched after the group's collectives.
  void enqueueP2p(const P2pTask& task) { p2pQueue_.push_back(task); }
  // The launch-completion event the queued sends and receives carry (null: none; P2pTask::launchEvent).
  cudaEvent_t queuedP2pLaunchEvent() const {
    for (const P2pTask& t : p2pQueue_) {
      if (t.launchEvent != nullptr) return t.launchEvent;
    }
    return nullptr;
  }

  // The model an operation is planned on (the plan offers no Direct for a user PreMulSum op).
  plan::CommModel modelFor(const CollTask& task) const {
    plan::CommModel model = model_;
    model.userPreMulSum = hasUserOp(task);
    return model;
  }
  // An operation's plan on `model` (modelFor, or its zero-copy variant), within its options.
  [[nodiscard]] ncclResult_t planOf(const CollTask& task, const plan::CommModel& model, plan::Decision* out) const {
    return plan::decide(model, filter_, task.options.plan, task.coll, collBytes(task, comm_->nranks_), out);
  }

  bool needsConnect(ConnectScope scope) const override;
  [[nodiscard]] ncclResult_t connect(ConnectScope scope) override;
  [[nodiscard]] ncclResult_t launchPending() override;
  [[nodiscard]] ncclResult_t simulatePending(double* us) override;  // simulate.cc
  void dropPending() override {
    queue_.clear();
    registeredQueue_.clear();
    p2pQueue_.clear();
  }
  [[nodiscard]] ncclResult_t waitIdle(const IdleWaitCheck& check) override;
  void signalAbort() override;
  [[nodiscard]] ncclResult_t joinShareGroup(const std::shared_ptr<ShareGroup>& group) override;  // share_connect.cc
  // Suspension (suspend_memory.cc).
  MemoryStats memoryStats() const override;
  bool suspendable(std::string* why) const override;
  [[nodiscard]] ncclResult_t suspendMemory() override;
  [[nodiscard]] ncclResult_t resumeMemory() override;

 private:
  // A queued collective's zero-copy plan, made in the connect phase (reg_launch.cc).
  struct RegisteredLaunch {
    bool direct = false;
    plan::Decision decision{};
    DevRegPeers peers{};
    reg::Registration* send = nullptr;
    reg::Registration* recv = nullptr;
  };

  explicit CommDataPath(ncclComm* comm) : comm_(comm) {}
  [[nodiscard]] ncclResult_t launchOne(const CollTask& task, const RegisteredLaunch& registered);
  // `base` with an operation's launch-completion event (null: none) for its kernel on `stream`.
  // Where the driver has no launch-completion events (before CUDA 12.3) the event is recorded on
  // the stream now, before the launch, as NCCL does there.
  [[nodiscard]] ncclResult_t withLaunchEvent(LaunchOptions base, cudaEvent_t event, cudaStream_t stream,
                                             LaunchOptions* out) const;
  // Registration (reg_launch.cc): whether a queued collective may go zero-copy, and the exchange
  // with the peers that decides it (collective, in the connect phase).
  bool needsRegExchange() const;
  // NCCL_GRAPH_REGISTER applies: the operation is captured and of the zero-copy size.
  bool graphRegisters(size_t bytes, cudaStream_t stream) const;
  bool graphRegisters(const CollTask& task) const;
  [[nodiscard]] ncclResult_t exchangeRegistrations();
  [[nodiscard]] ncclResult_t noteRegisteredUse(const RegisteredLaunch& registered, cudaStream_t stream);
  // Released registrations (ours retired, the peers' unmapped), around every exchange.
  void collectReleasedRegistrations();
  [[nodiscard]] ncclResult_t dropReleasedPeerMappings();
  // Zero-copy sends and receives (p2p_reg.cc): which queued ones may go zero-copy, and the
  // pairwise exchange that decides it (in the connect phase, after the point-to-point connect).
  bool p2pZeroCopySize(const P2pTask& task) const;  // to a P2P peer, and large enough
  bool p2pMeetsPeer(const P2pTask& task) const;     // its pair meets in exchangeP2pRegistrations
  bool needsP2pRegExchange() const;
  [[nodiscard]] ncclResult_t exchangeP2pRegistrations();
  // Share groups (share_connect.cc): the order every launch goes through, held with launchLock();
  // the pooled connections of `links` that both ends agree to reuse (their links become kNoPeer),
  // and the new ones the group's members may reuse later.
  LaunchOrder& order() { return shared_ != nullptr ? shared_->order() : *order_; }
  std::unique_lock<std::mutex> launchLock();
  // Whether its kernels read their steps in share group words (DevWork::sharedSteps): a member that
  // joined before its first operation.
  bool stepsInGroupWords() const { return shared_ != nullptr && !joinedBusy_; }
  // transport::connectChannels, for a member first reusing what both ends agree on (messages with
  // `tag` to every peer of `links`), then giving each new connection step words in the group's
  // memory (every kind: the member's kernels read all their steps there) and pooling the new P2P
  // and SHM ones. Any other communicator notes its new P2P and SHM ends with their step fields
  // (fields[c], channel c's) in offers_.
  [[nodiscard]] ncclResult_t connectOrReuse(ConnFamily family, int tag, const transport::Context& ctx,
                                            std::vector<transport::ChannelLinks> links,
                                            const std::vector<StepFields>& fields, std::vector<DevSendConn>* send,
                                            std::vector<DevRecvConn>* recv);
  [[nodiscard]] ncclResult_t takePooled(ConnFamily family, int tag, std::vector<transport::ChannelLinks>* links,
                                        std::vector<PooledConn>* sendReused, std::vector<PooledConn>* recvReused);
  [[nodiscard]] ncclResult_t poolNew(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                     const std::shared_ptr<transport::Connections>& owner,
                                     std::vector<DevSendConn>* send, std::vector<DevRecvConn>* recv);
  void offerOwn(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                const std::vector<StepFields>& fields, const std::shared_ptr<transport::Connections>& owner,
                const std::vector<DevSendConn>& send, const std::vector<DevRecvConn>& recv);
  // A member that joined busy puts offers_ into the group's pool once the step fields hold their
  // first values (after the upload that writes them): no member may reuse an end before.
  void publishOffers();
  // The P2P and SHM ends among `links` as a pool keeps them (send[c].step and recv[c].step hold
  // the addresses of their step words, which `steps` keeps alive).
  std::vector<ConnOffer> offersOf(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                  const std::shared_ptr<transport::Connections>& owner,
                                  const std::vector<DevSendConn>& send, const std::vector<DevRecvConn>& recv,
                                  const std::shared_ptr<const void>& steps) const;
  uint64_t gpuOf(int rank) const { return gpuKey(comm_->peers_[rank].hostHash, comm_->peers_[rank].busId); }
  bool needsRingConnect() const;
  [[nodiscard]] ncclResult_t connectRingsAndDirect();
  // Point-to-point (p2p_connect.cc, p2p_launch.cc).
  bool needsP2pConnect() const;
  [[nodiscard]] ncclResult_t initP2pPlan();
  [[nodiscard]] ncclResult_t connectP2p();
  [[nodiscard]] ncclResult_t connectP2pPeer(const transport::Context& ctx, const topo::TopoParams& params, int peer);
  [[nodiscard]] ncclResult_t launchP2p(const std::vector<P2pTask>& tasks);
  // The kernels of `tasks` and the copies of `selfPairs` (one kernel, or rounds of them and then the
  // copies), on `stream`, between the order's before() and after(); `queues` are those of `tasks`.
  // launchEvent (null: none): the launch-completion event of the group's sends and receives, which
  // their last kernel records (before the copies if they launch none).
  [[nodiscard]] ncclResult_t launchP2pKernels(const std::vector<P2pTask>& tasks, const P2pSelfPairs& selfPairs,
                                              cudaStream_t stream, cudaEvent_t launchEvent = nullptr);
  [[nodiscard]] ncclResult_t launchP2pKernels(const std::vector<P2pTask>& tasks, const P2pQueues& queues,
                                              size_t longestQueue, const P2pSelfPairs& selfPairs, cudaStream_t stream,
                                              cudaEvent_t launchEvent);
  // In-place AlltoAll (p2p_stage.cc): the batches of a group with staged sends (none: nothing
  // staged), their staging memory made; and their launch.
  plan::StagePlan p2pStagePlan(const std::vector<P2pTask>& tasks, size_t longestQueue) const;
  [[nodiscard]] ncclResult_t planP2pStaging(const std::vector<P2pTask>& tasks, size_t longestQueue,
                                            P2pStaging* staging);
  [[nodiscard]] ncclResult_t launchStagedP2p(const P2pStaging& staging, const P2pSelfPairs& selfPairs,
                                             cudaStream_t stream, cudaEvent_t launchEvent = nullptr);
  bool needsP2pCountCheck() const;              // p2p_check.cc
  [[nodiscard]] ncclResult_t checkP2pCounts();  // of p2pQueue_
  [[nodiscard]] ncclResult_t matchSelfP2p(const std::vector<P2pTask>& tasks,
                                          std::vector<std::pair<const P2pTask*, const P2pTask*>>* pairs) const;
  [[nodiscard]] ncclResult_t joinStreams(const std::vector<P2pTask>& tasks, cudaStream_t main, bool before);
  [[nodiscard]] ncclResult_t buildRings();
  transport::Context transportContext() const;
  [[nodiscard]] ncclResult_t connectRings(const transport::Context& ctx, DevComm* dev);
  [[nodiscard]] ncclResult_t connectDirect(transport::Context ctx, DevComm* dev);
  [[nodiscard]] ncclResult_t connectTrees(transport::Context ctx, DevComm* dev);  // tree_connect.cc
  [[nodiscard]] ncclResult_t connectAll();
  plan::CommModel commModel(const uint32_t slotBytes[kNumProtos]) const;

  ncclComm* comm_;
  std::vector<CollTask> queue_;
  std::vector<P2pTask> p2pQueue_;
  plan::Filter filter_{};
  bool connected_ = false;
  topo::Topology topo_{};
  // Declared before connections_, which use it: destroyed after them.
  NetworkLink net_;
  // Rings, then direct channels, then trees and point-to-point peers, own or reused from the group.
  std::vector<std::shared_ptr<transport::Connections>> connections_;
  std::vector<std::shared_ptr<const void>> stepHolders_;  // of the shared connections it uses
  std::shared_ptr<ShareGroup> group_;                     // null: not in a share group
  SharedConnections* shared_ = nullptr;                   // group_'s state
  // Joined its share group after it had run operations (joinShareGroup): its kernels keep their
  // steps in its own connection fields, so it reuses no connection, but offers its own.
  bool joinedBusy_ = false;
  std::vector<ConnOffer> offers_;  // its own P2P and SHM ends, not (yet) in a share group's pool
  // Shared: a share group's pool may keep step fields of its connections after it is gone.
  std::shared_ptr<DeviceState> device_ = std::make_shared<DeviceState>();
  plan::CommModel model_{};
  std::unique_ptr<LaunchOrder> order_;  // null in a share group (the group's is used)
  ProgressRecorder progress_;           // hang diagnosis: this rank's numbered collective launches
  // Collective kernels, on Hopper and later with kernels compiled for it (KernelArch in
  // device/launch_kernel.h): programmatic dependent launch (BRAID_LAUNCH_PDL) and clusters_, clusters
  // of the plan's size (plan::Decision: the config's cgaClusterSize or the planner's pick). The
  // others (point-to-point, one rank's PreMulSum): the same without clusters.
  // Point-to-point CTAs must all be resident at once (plan::p2pChannelsPerPeer counts
  // multiprocessors, not cluster slots), and on 4 H200 clusters gained nothing clear: ring-shift
  // sends of 1 GiB moved 338-347 GB/s in clusters of 2, 319 in clusters of 4, 329-336 without.
  LaunchOptions collLaunch_;
  LaunchOptions plainLaunch_;
  bool clusters_ = false;
  bool launchEventAttr_ = false;  // the driver records launch-completion events (CUDA 12.3 and later)
  // Point-to-point: per peer, whether its connections exist; this rank's detected links, the slot
  // of a point-to-point FIFO and the channels per peer (initP2pPlan, once per communicator).
  std::vector<char> p2pConnected_;
  std::vector<char> p2pDirectPair_;  // per peer: a P2P pair (peers can map each other's buffers)
  std::vector<topo::Link> p2pLinks_;
  uint64_t p2pSlotBytes_ = 0;
  int64_t p2pBalanceBytes_ = 0;  // BRAID_P2P_BALANCE_BYTES
  int64_t p2pBalanceChunk_ = 0;  // BRAID_P2P_BALANCE_CHUNK
  int p2pChannels_ = 0;
  std::vector<int> p2pPeerChannels_;    // per peer: p2pChannels_, or fewer to a peer on another host
  std::vector<uint64_t> p2pRecvCount_;  // receives issued per peer, numbering the count check's messages
  int p2pResidentCtas_ = 0;             // CTAs every rank's GPU holds at once: a larger group could deadlock
  cudaEvent_t joinEvent_ = nullptr;     // brings a group's other streams into its launch stream
  // User buffer registration: this rank's registrations, the peers' ones mapped here, and the
  // zero-copy plans of queue_ (same length once the connect phase ran, else empty).
  reg::Registry registry_;
  UserRedOps redOps_;
  PeerRegistrations peerRegs_;
  std::vector<RegisteredLaunch> registeredQueue_;
};

}  // namespace braid
