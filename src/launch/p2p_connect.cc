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
#include "core/comm.h"
#include "cuda/cuda_check.h"
#include "launch/device_state.h"
#include "launch/network_link.h"
#include "launch/p2p_engine.h"
#include "launch/share_membership.h"
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

P2pEngine::~P2pEngine() {
  if (joinEvent_ != nullptr) (void)cudaEventDestroy(joinEvent_);
}

ncclResult_t P2pEngine::init() {
  CUDACHECK(cudaEventCreateWithFlags(&joinEvent_, cudaEventDisableTiming));
  return ncclSuccess;
}

bool P2pEngine::needsConnect(const std::vector<P2pTask>& queue) const {
  for (const P2pTask& task : queue) {
    if (task.bytes == 0 || task.peer == ctx_.comm->rank_) continue;
    if (!connectedTo(task.peer)) return true;
  }
  return false;
}

ncclResult_t P2pEngine::initPlan() {
  if (!links_.empty()) return ncclSuccess;
  NCCLCHECK(topo::detectLinks(placesOf(ctx_.comm->peers_), ctx_.comm->rank_, &links_));
  int64_t chunk = paramInt(ParamId::kP2pNvlChunkSize);
  slotBytes_ = static_cast<uint64_t>(std::max<int64_t>(chunk, 4096) / 4096 * 4096);
  balanceBytes_ = paramInt(ParamId::kP2pBalanceBytes);
  balanceChunk_ = paramInt(ParamId::kP2pBalanceChunk);
  residentCtas_ = residentP2pCtas(*ctx_.comm);
  channels_ =
      plan::p2pChannelsPerPeer(paramInt(ParamId::kMaxP2pNchannels), kMaxP2pChannels, ctx_.comm->nranks_, residentCtas_);
  return ncclSuccess;
}

ncclResult_t P2pEngine::connect(const std::vector<P2pTask>& queue, bool netLl) {
  const int nranks = ctx_.comm->nranks_;
  if (connected_.empty()) {
    NCCLCHECK(initPlan());
    NCCLCHECK(ctx_.device->allocP2pPeers(nranks));
    connected_.assign(nranks, 0);
    directPair_.assign(nranks, 0);
    peerChannels_.assign(nranks, channels_);
  }
  std::vector<int> peers;
  for (const P2pTask& task : queue) {
    if (task.bytes > 0 && task.peer != ctx_.comm->rank_ && connected_[task.peer] == 0) peers.push_back(task.peer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  for (int peer : peers) {
    if (ctx_.comm->peers_[peer].hostHash != ctx_.comm->peers_[ctx_.comm->rank_].hostHash)
      NCCLCHECK(ctx_.net->open(ctx_.comm));
  }
  transport::Context ctx = ctx_.transportContext(netLl);
  ctx.buffBytes[kProtoLL] = 0;
  ctx.buffBytes[kProtoLL128] = 0;
  ctx.buffBytes[kProtoSimple] = slotBytes_ * kFifoSlotsSimple;
  ctx.connectTags = tags::kP2pConnect;
  topo::TopoParams params = topo::topoParamsFromEnv(ctx_.comm->config_.ctas.minCTAs, ctx_.comm->config_.ctas.maxCTAs);
  for (int peer : peers) NCCLCHECK(connectPeer(ctx, params, peer));
  return ncclSuccess;
}

ncclResult_t P2pEngine::connectPeer(const transport::Context& ctx, const topo::TopoParams& params, int peer) {
  const int rank = ctx_.comm->rank_;
  topo::Link back{};
  NCCLCHECK(ctx_.comm->bootstrap_->send(peer, tags::kP2pLink, &links_[peer], sizeof(topo::Link)));
  NCCLCHECK(ctx_.comm->bootstrap_->recv(peer, tags::kP2pLink, &back, sizeof(topo::Link)));
  topo::TransportKind kind = topo::pairTransport(links_[peer], back, params);
  if (kind == topo::TransportKind::kNone) {
    WARN("rank %d: no transport reaches peer %d for ncclSend/ncclRecv (P2P and SHM both unusable or disabled)", rank,
         peer);
    return ncclSystemError;
  }
  transport::Kind k = transportKind(kind);
  // Both ends see the pair as NET, so both split its operations over the same, fewer, channels.
  const int nChannels = kind == topo::TransportKind::kNet ? std::min(channels_, kP2pNetChannels) : channels_;
  peerChannels_[peer] = nChannels;
  std::vector<transport::ChannelLinks> channels(nChannels, transport::ChannelLinks{peer, k, peer, k});
  DevP2pPeer* entryOnDevice = ctx_.device->p2pPeers() + peer;
  std::vector<StepFields> fields;
  fields.reserve(nChannels);
  for (int c = 0; c < nChannels; c++) {
    fields.push_back(StepFields{&entryOnDevice->send[c].step, &entryOnDevice->recv[c].step});
  }
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  NCCLCHECK(
      ctx_.share->connectOrReuse(ConnFamily::kPointToPoint, tags::kP2pShare, ctx, channels, fields, &send, &recv));
  DevP2pPeer entry{};
  for (int c = 0; c < nChannels; c++) {
    entry.send[c] = send[c];
    entry.recv[c] = recv[c];
  }
  NCCLCHECK(ctx_.device->uploadP2pPeer(peer, entry));
  ctx_.share->publishOffers();
  connected_[peer] = 1;
  directPair_[peer] = kind == topo::TransportKind::kP2p ? 1 : 0;
  INFO(kLogP2p, "rank %d <-> rank %d: %d point-to-point channels via %s, %llu-byte steps", rank, peer, nChannels,
       topo::transportName(kind), static_cast<unsigned long long>(slotBytes_));
  return ncclSuccess;
}

}  // namespace braid
