// Point-to-point connections, made per peer the first time this rank sends to or receives from it
// (both directions at once, plan::p2pChannelsPerPeer channels, Simple buffers of 4 NCCL_P2P_NVL_CHUNKSIZE
// slots). Not collective: only the two ranks of a pair take part, each when it reaches the group
// that holds its first operation with the other; matching operations guarantee that both do.
//
// Deadlock freedom: a rank connects its new peers one at a time in increasing rank order, and each
// connect only waits for messages that the peer sends at the start of its own connect to this rank.
// A rank blocked on a peer that is still connecting to someone else waits on a smaller rank than
// the one blocked on it, so waits cannot form a cycle.
#include <algorithm>

#include "bootstrap/tags.h"
#include "launch/comm_data_path.h"
#include "plan/p2p_plan.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// Point-to-point channels to a peer on another host: each is a network connection per direction
// moved by the proxy, which gains nothing from many.
constexpr int kP2pNetChannels = 2;

// The smallest multiprocessor count among the ranks, at most the CTAs one launch describes for
// the peers (the others are for self copies).
int residentP2pCtas(const ncclComm& comm) {
  int ctas = DevP2pArgsLarge::kMaxCtas - plan::kP2pSelfCopyCtas;
  for (const PeerInfo& peer : comm.peers_) {
    if (peer.smCount > 0) ctas = std::min(ctas, peer.smCount);
  }
  return ctas;
}

}  // namespace

bool CommDataPath::needsP2pConnect() const {
  for (const P2pTask& task : p2pQueue_) {
    if (task.bytes == 0 || task.peer == comm_->rank_) continue;
    if (p2pConnected_.empty() || p2pConnected_[task.peer] == 0) return true;
  }
  return false;
}

// This rank's links and the point-to-point parameters; local, made once per communicator.
ncclResult_t CommDataPath::initP2pPlan() {
  if (!p2pLinks_.empty()) return ncclSuccess;
  NCCLCHECK(topo::detectLinks(rankDescs(*comm_), comm_->rank_, &p2pLinks_));
  int64_t chunk = paramInt(ParamId::kP2pNvlChunkSize);
  p2pSlotBytes_ = static_cast<uint64_t>(std::max<int64_t>(chunk, 4096) / 4096 * 4096);
  p2pBalanceBytes_ = paramInt(ParamId::kP2pBalanceBytes);
  p2pBalanceChunk_ = paramInt(ParamId::kP2pBalanceChunk);
  p2pResidentCtas_ = residentP2pCtas(*comm_);
  p2pChannels_ =
      plan::p2pChannelsPerPeer(paramInt(ParamId::kMaxP2pNchannels), kMaxP2pChannels, comm_->nranks_, p2pResidentCtas_);
  return ncclSuccess;
}

ncclResult_t CommDataPath::connectP2p() {
  const int nranks = comm_->nranks_;
  if (p2pConnected_.empty()) {
    NCCLCHECK(initP2pPlan());
    NCCLCHECK(device_->allocP2pPeers(nranks));
    p2pConnected_.assign(nranks, 0);
    p2pDirectPair_.assign(nranks, 0);
    p2pPeerChannels_.assign(nranks, p2pChannels_);
  }
  std::vector<int> peers;
  for (const P2pTask& task : p2pQueue_) {
    if (task.bytes > 0 && task.peer != comm_->rank_ && p2pConnected_[task.peer] == 0) peers.push_back(task.peer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  for (int peer : peers) {
    if (comm_->peers_[peer].hostHash != comm_->peers_[comm_->rank_].hostHash) NCCLCHECK(net_.open(comm_));
  }
  transport::Context ctx = transportContext();
  ctx.buffBytes[kProtoLL] = 0;
  ctx.buffBytes[kProtoLL128] = 0;
  ctx.buffBytes[kProtoSimple] = p2pSlotBytes_ * kFifoSlotsSimple;
  ctx.connectTags = tags::kP2pConnect;
  topo::TopoParams params = topo::topoParamsFromEnv(comm_->config_.minCTAs, comm_->config_.maxCTAs);
  for (int peer : peers) NCCLCHECK(connectP2pPeer(ctx, params, peer));
  return ncclSuccess;
}

ncclResult_t CommDataPath::connectP2pPeer(const transport::Context& ctx, const topo::TopoParams& params, int peer) {
  const int rank = comm_->rank_;
  topo::Link back{};
  NCCLCHECK(comm_->bootstrap_->send(peer, tags::kP2pLink, &p2pLinks_[peer], sizeof(topo::Link)));
  NCCLCHECK(comm_->bootstrap_->recv(peer, tags::kP2pLink, &back, sizeof(topo::Link)));
  topo::TransportKind kind = topo::pairTransport(p2pLinks_[peer], back, params);
  if (kind == topo::TransportKind::kNone) {
    WARN("rank %d: no transport reaches peer %d for ncclSend/ncclRecv (P2P and SHM both unusable or disabled)", rank,
         peer);
    return ncclSystemError;
  }
  transport::Kind k = transportKind(kind);
  // Both ends see the pair as NET, so both split its operations over the same, fewer, channels.
  const int nChannels = kind == topo::TransportKind::kNet ? std::min(p2pChannels_, kP2pNetChannels) : p2pChannels_;
  p2pPeerChannels_[peer] = nChannels;
  std::vector<transport::ChannelLinks> channels(nChannels, transport::ChannelLinks{peer, k, peer, k});
  DevP2pPeer* entryOnDevice = device_->p2pPeers() + peer;
  std::vector<StepFields> fields;
  fields.reserve(nChannels);
  for (int c = 0; c < nChannels; c++) {
    fields.push_back(StepFields{&entryOnDevice->send[c].step, &entryOnDevice->recv[c].step});
  }
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  NCCLCHECK(connectOrReuse(ConnFamily::kPointToPoint, tags::kP2pShare, ctx, channels, fields, &send, &recv));
  DevP2pPeer entry{};
  for (int c = 0; c < nChannels; c++) {
    entry.send[c] = send[c];
    entry.recv[c] = recv[c];
  }
  NCCLCHECK(device_->uploadP2pPeer(peer, entry));
  publishOffers();
  p2pConnected_[peer] = 1;
  p2pDirectPair_[peer] = kind == topo::TransportKind::kP2p ? 1 : 0;
  INFO(kLogP2p, "rank %d <-> rank %d: %d point-to-point channels via %s, %llu-byte steps", rank, peer, nChannels,
       topo::transportName(kind), static_cast<unsigned long long>(p2pSlotBytes_));
  return ncclSuccess;
}

}  // namespace braid
