// A communicator's side of its share group (core/share_group.h; the group's state is
// launch/shared_connections.h), and the connections its data path uses.
//
// It owns what every launch and connect goes through: the launch order (the group's, or the
// communicator's own outside a group, see launch_order.h) with the group's mutex around it, and
// the connections of the rings, direct channels, trees and point-to-point peers, whether made here
// or reused from the group's pool. Kept apart from the engines that connect and launch, because
// which connections a member may reuse, and where its kernels keep their steps, depends on when it
// joined its group, not on what it connects.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/data_path.h"
#include "core/share_group.h"
#include "device/dev_types.h"
#include "launch/launch_order.h"
#include "launch/shared_connections.h"
#include "transport/transport.h"

struct ncclComm;

namespace braid {

class ShareMembership {
 public:
  explicit ShareMembership(ncclComm* comm) : comm_(comm) {}
  ShareMembership(const ShareMembership&) = delete;
  ShareMembership& operator=(const ShareMembership&) = delete;

  // At the data path's creation: joins the communicator's share group when it has one (and more
  // than one rank), else makes its own launch order. graphMixing: NCCL_GRAPH_MIXING_SUPPORT.
  // fieldsOwner keeps the connection fields of the communicator's DevComm and point-to-point table
  // alive (its DeviceState): a group's pool may hold their addresses after the data path is gone.
  [[nodiscard]] ncclResult_t init(bool graphMixing, std::shared_ptr<const void> fieldsOwner);
  // Makes the communicator, which has run operations, the first member of `group` (see
  // DataPathBase::joinShareGroup); nothing if it is in one.
  [[nodiscard]] ncclResult_t join(const std::shared_ptr<ShareGroup>& group);
  bool inGroup() const { return group_ != nullptr; }

  // The order every launch goes through, held with launchLock().
  LaunchOrder& order() { return shared_ != nullptr ? shared_->order() : *order_; }
  std::unique_lock<std::mutex> launchLock();
  // Waits until every operation launched through order() has completed: in a share group the whole
  // group's (DataPathBase::waitIdle).
  [[nodiscard]] ncclResult_t waitIdle(const DataPathBase::IdleWaitCheck& check);
  // Whether its kernels read their steps in share group words (DevWork::sharedSteps): a member that
  // joined before its first operation.
  bool stepsInGroupWords() const { return shared_ != nullptr && !joinedBusy_; }

  // transport::connectChannels, for a member first reusing what both ends agree on (messages with
  // `tag` to every peer of `links`), then giving each new connection step words in the group's
  // memory (every kind: the member's kernels read all their steps there) and pooling the new P2P
  // and SHM ones. Any other communicator notes its new P2P and SHM ends with their step fields
  // (fields[c], channel c's) in offers_. The connections are kept here.
  [[nodiscard]] ncclResult_t connectOrReuse(ConnFamily family, int tag, const transport::Context& ctx,
                                            std::vector<transport::ChannelLinks> links,
                                            const std::vector<StepFields>& fields, std::vector<DevSendConn>* send,
                                            std::vector<DevRecvConn>* recv);
  // Keeps connections made without the pool (the trees').
  void keep(std::shared_ptr<transport::Connections> connections) { connections_.push_back(std::move(connections)); }
  // A member that joined busy puts offers_ into the group's pool once the step fields hold their
  // first values (after the upload that writes them): no member may reuse an end before.
  void publishOffers();
  // After an abort: its kernels may have left shared connections in the middle of an operation, so
  // nobody reuses them.
  void forgetPoolOnAbort();
  // Every connection it uses, own or reused (suspension, memory statistics).
  std::vector<const transport::Connections*> connections() const;

 private:
  [[nodiscard]] ncclResult_t takePooled(ConnFamily family, int tag, std::vector<transport::ChannelLinks>* links,
                                        std::vector<PooledConn>* sendReused, std::vector<PooledConn>* recvReused);
  [[nodiscard]] ncclResult_t poolNew(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                     const std::shared_ptr<transport::Connections>& owner,
                                     std::vector<DevSendConn>* send, std::vector<DevRecvConn>* recv);
  void offerOwn(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                const std::vector<StepFields>& fields, const std::shared_ptr<transport::Connections>& owner,
                const std::vector<DevSendConn>& send, const std::vector<DevRecvConn>& recv);
  // The P2P and SHM ends among `links` as a pool keeps them (send[c].step and recv[c].step hold
  // the addresses of their step words, which `steps` keeps alive).
  std::vector<ConnOffer> offersOf(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                  const std::shared_ptr<transport::Connections>& owner,
                                  const std::vector<DevSendConn>& send, const std::vector<DevRecvConn>& recv,
                                  const std::shared_ptr<const void>& steps) const;
  uint64_t gpuOf(int rank) const;

  ncclComm* comm_;
  // Rings, then direct channels, then trees and point-to-point peers, own or reused from the group.
  std::vector<std::shared_ptr<transport::Connections>> connections_;
  std::vector<std::shared_ptr<const void>> stepHolders_;  // of the shared connections it uses
  std::shared_ptr<ShareGroup> group_;                     // null: not in a share group
  SharedConnections* shared_ = nullptr;                   // group_'s state
  // Joined its share group after it had run operations (join): its kernels keep their steps in its
  // own connection fields, so it reuses no connection, but offers its own.
  bool joinedBusy_ = false;
  std::vector<ConnOffer> offers_;  // its own P2P and SHM ends, not (yet) in a share group's pool
  std::shared_ptr<const void> fieldsOwner_;
  std::unique_ptr<LaunchOrder> order_;  // null in a share group (the group's is used)
};

}  // namespace braid
