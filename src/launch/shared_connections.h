// What a share group (core/share_group.h) holds on this rank: the launch order of all its members,
// and the connections its members made, for the others to reuse.
//
// A connection is reused when both of its ends agree: each end pools the connections its group's
// members made, under (kind of connection, channel, peer GPU, direction), with a token both ends
// compute alike from the communicator that made it, its channel and its two GPUs. Before connecting,
// a member sends each peer the tokens it holds for it and reuses a connection only where the
// peer's token matches (connectionsToReuse). The pools of two ranks can differ: members connect
// concurrently (ncclGroupEnd runs their connects on several threads, in no fixed order), so each
// rank may keep another member's connection under the same key; a token that does not match makes
// a new connection, never a wrong one.
//
// A reused connection keeps one stream of steps, so its step counters live in device memory the
// pool owns (a member's connections hold their address, see DevSendConn in dev_types.h), and every
// member's kernels run one after the other: the members launch through the group's LaunchOrder,
// under the group's mutex. Only connections within a host
// (P2P and SHM) are pooled; those through the network belong to their communicator's proxy.
//
// A communicator that joins a group after it ran operations (a parent split with splitShare after
// its first collective, as PyTorch's world group is) cannot move its counters: kernels it captured
// in CUDA graphs read them from its own connection fields. So it keeps them there and reuses
// nothing, but offers its connections with the addresses of those fields as their step words, and
// brings its launch order, graphs included, into the group (SharedConnections::adopt). Every
// communicator therefore notes its offers (ConnOffer) as it connects, in case it joins later.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/share_group.h"
#include "device/dev_types.h"
#include "launch/launch_order.h"
#include "transport/transport.h"

namespace braid {

// The step counters of a batch of shared connections: zeroed device words, two per connection
// ({step, headSeen} for a send, {step, unused} for a receive).
class StepWords {
 public:
  [[nodiscard]] static ncclResult_t alloc(size_t connections, std::shared_ptr<StepWords>* out);
  ~StepWords();
  StepWords(const StepWords&) = delete;
  StepWords& operator=(const StepWords&) = delete;
  uint64_t* of(size_t connection) const { return words_ + 2 * connection; }

 private:
  StepWords() = default;
  uint64_t* words_ = nullptr;
};

// Which connections of a communicator are pooled (the bootstrap tags of their agreements are
// tags::kRingShare, kDirectShare and kP2pShare).
enum class ConnFamily : int { kRing = 1, kPointToPoint = 2, kDirect = 3 };

// One end of a pooled connection.
struct PooledConn {
  uint64_t token = 0;
  DevSendConn send{};  // the sender's end (step: the address of its words)
  DevRecvConn recv{};  // the receiver's end (step: the address of its words)
  std::shared_ptr<transport::Connections> owner;
  // Keeps the words alive: a StepWords, or the device state of the communicator in whose
  // connection fields they are.
  std::shared_ptr<const void> steps;
};

// Where a communicator's own connection ends keep their step counters (device addresses of
// DevSendConn::step and DevRecvConn::step, in its DevComm or point-to-point array).
struct StepFields {
  uint64_t* send;
  uint64_t* recv;
};

// A connection end a communicator made, as its share group's pool would keep it.
struct ConnOffer {
  ConnFamily family;
  int channel;
  uint64_t peerGpu;
  bool send;
  PooledConn conn;
};

// The token of the connection that communicator commHash makes in `family` on `channel` from the
// GPU sender to the GPU receiver (gpuKey of each): the same on both ends.
uint64_t connectionToken(uint64_t commHash, ConnFamily family, int channel, uint64_t sender, uint64_t receiver);
// A GPU as the pool names it: host identity and PCI bus id (two ranks of a communicator never share a GPU).
uint64_t gpuKey(uint64_t hostHash, int64_t busId);

class SharedConnections final : public ShareGroupState {
 public:
  // The group's state, made by its first member's data path on the member's (current) device.
  // Called with group->mutex held.
  [[nodiscard]] static ncclResult_t of(ShareGroup* group, bool graphMixing, SharedConnections** out);
  // The state of a group that a communicator with operations behind it joins first: its launch
  // order becomes the group's. Fails if the group has a state already. With group->mutex held.
  // (*order is moved only on success.)
  [[nodiscard]] static ncclResult_t adopt(ShareGroup* group, std::unique_ptr<LaunchOrder>* order,
                                          SharedConnections** out);

  LaunchOrder& order() { return *order_; }
  // Under the group's mutex: the pooled end, or null.
  const PooledConn* find(ConnFamily family, int channel, uint64_t peerGpu, bool send) const;
  void put(ConnFamily family, int channel, uint64_t peerGpu, bool send, const PooledConn& conn);
  void put(const ConnOffer& offer) { put(offer.family, offer.channel, offer.peerGpu, offer.send, offer.conn); }
  // After a member was aborted: its kernels may have left shared connections mid-operation, so no
  // later connect reuses any (the members that hold them keep them).
  void forgetAll() { pool_.clear(); }

 private:
  using Key = std::tuple<int, int, uint64_t, bool>;
  std::unique_ptr<LaunchOrder> order_;
  std::map<Key, PooledConn> pool_;
};

// The agreement of one connect over channels `links` (transport::connectChannels' list), in which
// this rank holds pooled connections with tokens mySend[c] (to links[c].sendPeer) and myRecv[c]
// (from links[c].recvPeer), 0 where none.
// What it tells peer q: 2 x links.size() words, [c] its send token on channel c where q receives
// it, [n + c] its receive token where q sends it, 0 elsewhere.
std::vector<uint64_t> tokenMessage(const std::vector<transport::ChannelLinks>& links,
                                   const std::vector<uint64_t>& mySend, const std::vector<uint64_t>& myRecv, int q);
// With every peer's message (theirs[q]; a peer without one agrees to nothing): send c is reused when
// mySend[c] is the token its receiver holds, receive c when myRecv[c] is its sender's. Both ends
// of a connection decide alike.
struct ReuseChoice {
  std::vector<bool> send;
  std::vector<bool> recv;
};
ReuseChoice agreeOnReuse(const std::vector<transport::ChannelLinks>& links, const std::vector<uint64_t>& mySend,
                         const std::vector<uint64_t>& myRecv, const std::map<int, std::vector<uint64_t>>& theirs);

}  // namespace braid
