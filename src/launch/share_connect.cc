// A share group's side of connecting (launch/shared_connections.h): reuse what both ends agree on,
// pool what is new, launch under the group's mutex.
#include <algorithm>

#include "launch/comm_data_path.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

// Connections within a host; those through the network belong to their communicator's proxy.
bool pooledKind(transport::Kind kind) { return kind == transport::Kind::kP2p || kind == transport::Kind::kShm; }

// A share group member's connection holds the address of its step words in its `step` field
// (dev_types.h, DevWork::sharedSteps).
uint64_t stepAddress(uint64_t* words) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(words)); }

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

std::unique_lock<std::mutex> CommDataPath::launchLock() {
  return group_ != nullptr ? std::unique_lock<std::mutex>(group_->mutex) : std::unique_lock<std::mutex>();
}

ncclResult_t CommDataPath::takePooled(ConnFamily family, int tag, std::vector<transport::ChannelLinks>* links,
                                      std::vector<PooledConn>* sendReused, std::vector<PooledConn>* recvReused) {
  const size_t n = links->size();
  sendReused->assign(n, PooledConn{});
  recvReused->assign(n, PooledConn{});
  std::vector<uint64_t> mySend(n, 0);
  std::vector<uint64_t> myRecv(n, 0);
  {
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

ncclResult_t CommDataPath::poolNew(ConnFamily family, const std::vector<transport::ChannelLinks>& links,
                                   const std::shared_ptr<transport::Connections>& owner, std::vector<DevSendConn>* send,
                                   std::vector<DevRecvConn>* recv) {
  const size_t n = links.size();
  std::shared_ptr<StepWords> words;
  NCCLCHECK(StepWords::alloc(2 * n, &words));
  stepWords_.push_back(words);
  const uint64_t self = gpuOf(comm_->rank_);
  std::lock_guard<std::mutex> lock(group_->mutex);
  for (size_t c = 0; c < n; c++) {
    const transport::ChannelLinks& l = links[c];
    const int channel = static_cast<int>(c);
    if (l.sendPeer != transport::kNoPeer) (*send)[c].step = stepAddress(words->of(c));
    if (l.recvPeer != transport::kNoPeer) (*recv)[c].step = stepAddress(words->of(n + c));
    if (l.sendPeer != transport::kNoPeer && pooledKind(l.sendKind)) {
      PooledConn pooled{
          connectionToken(comm_->commHash_, family, channel, self, gpuOf(l.sendPeer)), (*send)[c], {}, owner, words};
      shared_->put(family, channel, gpuOf(l.sendPeer), true, pooled);
    }
    if (l.recvPeer != transport::kNoPeer && pooledKind(l.recvKind)) {
      PooledConn pooled{
          connectionToken(comm_->commHash_, family, channel, gpuOf(l.recvPeer), self), {}, (*recv)[c], owner, words};
      shared_->put(family, channel, gpuOf(l.recvPeer), false, pooled);
    }
  }
  return ncclSuccess;
}

ncclResult_t CommDataPath::connectOrReuse(ConnFamily family, int tag, const transport::Context& ctx,
                                          std::vector<transport::ChannelLinks> links, std::vector<DevSendConn>* send,
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
    if (shared_ != nullptr) NCCLCHECK(poolNew(family, links, owner, send, recv));
  }
  for (size_t c = 0; c < sendReused.size(); c++) {
    for (const PooledConn* p : {&sendReused[c], &recvReused[c]}) {
      if (p->token == 0) continue;
      connections_.push_back(p->owner);
      stepWords_.push_back(p->words);
    }
    if (sendReused[c].token != 0) (*send)[c] = sendReused[c].send;
    if (recvReused[c].token != 0) (*recv)[c] = recvReused[c].recv;
  }
  return ncclSuccess;
}

}  // namespace braid
