// A share group's side of connecting (launch/shared_connections.h): reuse what both ends agree on,
// pool what is new, launch under the group's mutex; and a busy communicator's joining.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "core/comm.h"
#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "launch/share_membership.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

// Connections within a host; those through the network belong to their communicator's proxy.
bool pooledKind(transport::Kind kind) { return kind == transport::Kind::kP2p || kind == transport::Kind::kShm; }

// A share group member's connection holds the address of its step words in its `step` field
// (dev_types.h, DevWork::sharedSteps).
uint64_t stepAddress(const uint64_t* words) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(words)); }

const char* familyName(ConnFamily family) {
  switch (family) {
    case ConnFamily::kRing:
      return "ring";
    case ConnFamily::kDirect:
      return "direct";
    default:
      return "point-to-point";
  }
}

}  // namespace

ncclResult_t ShareMembership::init(bool graphMixing, std::shared_ptr<const void> fieldsOwner) {
  fieldsOwner_ = std::move(fieldsOwner);
  if (comm_->shareGroup_ != nullptr && comm_->nranks_ > 1) {
    group_ = comm_->shareGroup_;
    std::lock_guard<std::mutex> lock(group_->mutex);
    NCCLCHECK(SharedConnections::of(group_.get(), graphMixing, &shared_));
  } else {
    order_ = std::make_unique<LaunchOrder>();
    NCCLCHECK(order_->init(graphMixing));
  }
  return ncclSuccess;
}

std::unique_lock<std::mutex> ShareMembership::launchLock() {
  return group_ != nullptr ? std::unique_lock<std::mutex>(group_->mutex) : std::unique_lock<std::mutex>();
}

ncclResult_t ShareMembership::waitIdle(const DataPathBase::IdleWaitCheck& check) {
  // In a share group: the whole group's launched work. Not under the group's mutex: a member on
  // another thread may have to launch before that work can end (its peers wait for it). Waiting on
  // the communicator's own event is permitted while the caller's thread captures another stream.
  RelaxedCaptureMode relaxed;
  const cudaEvent_t latest = order().latestEvent();
  if (!check) {
    CUDACHECK(cudaEventSynchronize(latest));
    return ncclSuccess;
  }
  for (;;) {
    const cudaError_t status = cudaEventQuery(latest);
    if (status == cudaSuccess) return ncclSuccess;
    if (status != cudaErrorNotReady) CUDACHECK(status);
    NCCLCHECK(check());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void ShareMembership::forgetPoolOnAbort() {
  if (shared_ == nullptr) return;
  std::lock_guard<std::mutex> lock(group_->mutex);
  shared_->forgetAll();
}

std::vector<const transport::Connections*> ShareMembership::connections() const {
  std::vector<const transport::Connections*> list;
  list.reserve(connections_.size());
  for (const auto& conns : connections_) list.push_back(conns.get());
  return list;
}

uint64_t ShareMembership::gpuOf(int rank) const {
  return gpuKey(comm_->peers_[rank].hostHash, comm_->peers_[rank].busId);
}

ncclResult_t ShareMembership::join(const std::shared_ptr<ShareGroup>& group) {
  if (group_ != nullptr || comm_->nranks_ == 1) return ncclSuccess;  // init() keeps one rank out too
  {
    std::lock_guard<std::mutex> lock(group->mutex);
    NCCLCHECK(SharedConnections::adopt(group.get(), &order_, &shared_));
    group_ = group;
    joinedBusy_ = true;
  }
  INFO(kLogInit,
       "comm %p rank %d joins its share group after running operations: it offers its %zu connection ends and "
       "keeps their steps in its own fields (it reuses none)",
       static_cast<void*>(comm_), comm_->rank_, offers_.size());
  publishOffers();
  return ncclSuccess;
}

void ShareMembership::publishOffers() {
  if (shared_ == nullptr || offers_.empty()) return;
  std::lock_guard<std::mutex> lock(group_->mutex);
  for (const ConnOffer& offer : offers_) shared_->put(offer);
  offers_.clear();
}

ncclResult_t ShareMembership::takePooled(ConnFamily family, int tag, std::vector<transport::ChannelLinks>* links,
                                         std::vector<PooledConn>* sendReused, std::vector<PooledConn>* recvReused) {
  const size_t n = links->size();
  sendReused->assign(n, PooledConn{});
  recvReused->assign(n, PooledConn{});
  std::vector<uint64_t> mySend(n, 0);
  std::vector<uint64_t> myRecv(n, 0);
  // A member that joined busy proposes nothing (its kernels read steps in their own fields), but
  // still tells its peers so.
  if (!joinedBusy_) {
    std::lock_guard<std::mutex> lock(group_->mutex);
    for (size_t c = 0; c < n; c++) {
      const transport::ChannelLinks& l = (*links)[c];
      const int channel = static_cast<int>(c);
      const PooledConn* p = nullptr;
      if (l.sendPeer != transport::kNoPeer && pooledKind(l.sendKind) &&
          (p = shared_->find(family, channel, gpuOf(l.sendPeer), true)) != nullptr) {
        (*sendReused)[c] = *p;
        mySend[c] = p->token;
      }
      if (l.recvPeer != transport::kNoPeer && pooledKind(l.recvKind) &&
          (p = shared_->find(family, channel, gpuOf(l.recvPeer), false)) != nullptr) {
        (*recvReused)[c] = *p;
        myRecv[c] = p->token;
      }
    }
  }
  std::vector<int> peers;
  for (const transport::ChannelLinks& l : *links) {
    if (l.sendPeer != transport::kNoPeer) peers.push_back(l.sendPeer);
    if (l.recvPeer != transport::kNoPeer) peers.push_back(l.recvPeer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  // Every message first, then every answer: bootstrap sends do not wait for the receiver.
  for (int q : peers) {
    const std::vector<uint64_t> message = tokenMessage(*links, mySend, myRecv, q);
    NCCLCHECK(comm_->bootstrap_->send(q, tag, message.data(), message.size() * sizeof(uint64_t)));
  }
  std::map<int, std::vector<uint64_t>> theirs;
  for (int q : peers) {
    std::vector<uint64_t>& message = theirs[q];
    message.assign(2 * n, 0);
    NCCLCHECK(comm_->bootstrap_->recv(q, tag, message.data(), message.size() * sizeof(uint64_t)));
  }
  const ReuseChoice choice = agreeOnReuse(*links, mySend, myRecv, theirs);
  int reused = 0;
  for (size_t c = 0; c < n; c++) {
    if (choice.send[c]) {
      (*links)[c].sendPeer = transport::kNoPeer;
      reused++;
    } else {
      (*sendReused)[c] = PooledConn{};
    }
    if (choice.recv[c]) {
      (*links)[c].recvPeer = transport::kNoPeer;
      reused++;
    } else {
      (*recvReused)[c] = PooledConn{};
    }
  }
  INFO(kLogInit, "comm %p rank %d: %d of %zu %s connection ends reused from its share group", static_cast<void*>(comm_),
       comm_->rank_, reused, 2 * n, familyName(family));
  return ncclSuccess;
}

std::vector<ConnOffer> ShareMembership::offersOf(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                                 const std::shared_ptr<transport::Connections>& owner,
                                                 const std::vector<DevSendConn>& send,
                                                 const std::vector<DevRecvConn>& recv,
                                                 const std::shared_ptr<const void>& steps) const {
  std::vector<ConnOffer> offers;
  const uint64_t self = gpuOf(comm_->rank_);
  for (size_t c = 0; c < links.size(); c++) {
    const transport::ChannelLinks& l = links[c];
    const int channel = static_cast<int>(c);
    if (l.sendPeer != transport::kNoPeer && pooledKind(l.sendKind)) {
      const uint64_t peer = gpuOf(l.sendPeer);
      offers.push_back(ConnOffer{
          family, channel, peer, true,
          PooledConn{connectionToken(comm_->commHash_, family, channel, self, peer), send[c], {}, owner, steps}});
    }
    if (l.recvPeer != transport::kNoPeer && pooledKind(l.recvKind)) {
      const uint64_t peer = gpuOf(l.recvPeer);
      offers.push_back(ConnOffer{
          family, channel, peer, false,
          PooledConn{connectionToken(comm_->commHash_, family, channel, peer, self), {}, recv[c], owner, steps}});
    }
  }
  return offers;
}

ncclResult_t ShareMembership::poolNew(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                      const std::shared_ptr<transport::Connections>& owner,
                                      std::vector<DevSendConn>* send, std::vector<DevRecvConn>* recv) {
  const size_t n = links.size();
  std::shared_ptr<StepWords> words;
  NCCLCHECK(StepWords::alloc(2 * n, &words));
  stepHolders_.push_back(words);
  for (size_t c = 0; c < n; c++) {
    if (links[c].sendPeer != transport::kNoPeer) (*send)[c].step = stepAddress(words->of(c));
    if (links[c].recvPeer != transport::kNoPeer) (*recv)[c].step = stepAddress(words->of(n + c));
  }
  const std::vector<ConnOffer> offers = offersOf(family, links, owner, *send, *recv, words);
  std::lock_guard<std::mutex> lock(group_->mutex);
  for (const ConnOffer& offer : offers) shared_->put(offer);
  return ncclSuccess;
}

void ShareMembership::offerOwn(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                               const std::vector<StepFields>& fields,
                               const std::shared_ptr<transport::Connections>& owner,
                               const std::vector<DevSendConn>& send, const std::vector<DevRecvConn>& recv) {
  // As a reuser sees them: steps at the addresses of this communicator's fields.
  std::vector<DevSendConn> sendSeen = send;
  std::vector<DevRecvConn> recvSeen = recv;
  for (size_t c = 0; c < links.size(); c++) {
    sendSeen[c].step = stepAddress(fields[c].send);
    recvSeen[c].step = stepAddress(fields[c].recv);
  }
  const std::vector<ConnOffer> offers = offersOf(family, links, owner, sendSeen, recvSeen, fieldsOwner_);
  offers_.insert(offers_.end(), offers.begin(), offers.end());
}

ncclResult_t ShareMembership::connectOrReuse(ConnFamily family, int tag, const transport::Context& ctx,
                                             std::vector<transport::ChannelLinks> links,
                                             const std::vector<StepFields>& fields, std::vector<DevSendConn>* send,
                                             std::vector<DevRecvConn>* recv) {
  const size_t n = links.size();
  std::vector<PooledConn> sendReused;
  std::vector<PooledConn> recvReused;
  if (shared_ != nullptr) NCCLCHECK(takePooled(family, tag, &links, &sendReused, &recvReused));
  const bool anyNew = std::any_of(links.begin(), links.end(), [](const transport::ChannelLinks& l) {
    return l.sendPeer != transport::kNoPeer || l.recvPeer != transport::kNoPeer;
  });
  send->assign(n, DevSendConn{});
  recv->assign(n, DevRecvConn{});
  if (anyNew) {
    std::unique_ptr<transport::Connections> made;
    NCCLCHECK(transport::connectChannels(ctx, links, &made, send, recv));
    std::shared_ptr<transport::Connections> owner(std::move(made));
    connections_.push_back(owner);
    if (stepsInGroupWords()) {
      NCCLCHECK(poolNew(family, links, owner, send, recv));
    } else {
      offerOwn(family, links, fields, owner, *send, *recv);
    }
  }
  for (size_t c = 0; c < sendReused.size(); c++) {
    for (const PooledConn* p : {&sendReused[c], &recvReused[c]}) {
      if (p->token == 0) continue;
      connections_.push_back(p->owner);
      stepHolders_.push_back(p->steps);
    }
    if (sendReused[c].token != 0) (*send)[c] = sendReused[c].send;
    if (recvReused[c].token != 0) (*recv)[c] = recvReused[c].recv;
  }
  return ncclSuccess;
}

}  // namespace braid
