// The lazy part of a communicator: at its first operation every rank detects its links, the ranks
// exchange them, each builds the same rings from the same matrix, and the transports connect every
// channel's ring neighbours, then (where topo allows direct algorithms) every pair of ranks once
// per direct channel, then (across hosts) every channel's tree edges. Collective: all ranks run it
// for the same (first) operation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "bootstrap/tags.h"
#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "launch/comm_data_path.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

size_t fifoBytes(ParamId id, int proto) {
  // Whole 16-byte-aligned slots of at least 4 KiB each.
  int64_t bytes = paramInt(id);
  int64_t slot = bytes / kFifoSlots[proto];
  if (slot < 4096) slot = 4096;
  return static_cast<size_t>(slot / 4096 * 4096) * kFifoSlots[proto];
}

}  // namespace

std::vector<topo::RankDesc> rankDescs(const ncclComm& comm) {
  std::vector<topo::RankDesc> ranks;
  ranks.reserve(comm.peers_.size());
  for (const PeerInfo& peer : comm.peers_) {
    ranks.push_back(topo::RankDesc{peer.rank, peer.cudaDev, peer.busId, peer.hostHash, peer.pidHash});
  }
  return ranks;
}

plan::CommModel CommDataPath::commModel(const uint32_t slotBytes[kNumProtos]) const {
  plan::CommModel model{};
  model.nranks = comm_->nranks_;
  model.nNodes = topo_.nNodes;
  model.maxChannels = topo_.nChannels;
  model.bwPerChannelGBps = topo_.bwPerChannelGBps;
  for (int p = 0; p < kNumProtos; p++) {
    model.hopLatencyUs[p] = topo_.hopLatencyUs[p];
    model.localHopLatencyUs[p] = topo_.localHopLatencyUs[p];
  }
  model.nTreeChannels = static_cast<int>(topo_.trees.size());
  model.treeNetDepth = topo_.treeNetDepth;
  model.treeLocalDepth = topo_.treeLocalDepth;
  model.ll128Ok = topo_.ll128Ok;
  model.llOk = topo_.llOk;
  model.maxDirectChannels = topo_.nDirectChannels;
  model.nthreadsOverride = static_cast<int>(paramInt(ParamId::kNthreads));
  model.ll128NthreadsOverride = static_cast<int>(paramInt(ParamId::kLl128Nthreads));
  const int clusterSize = comm_->config_.cgaClusterSize;
  model.cgaClusterSize = clusterSize == NCCL_CONFIG_UNDEF_INT ? plan::kAutoClusterSize : clusterSize;
  // Payload per slot: LL carries 8 data bytes per 16-byte line, LL128 120 per 128-byte line.
  model.slotPayloadBytes[kProtoSimple] = slotBytes[kProtoSimple];
  model.slotPayloadBytes[kProtoLL] = slotBytes[kProtoLL] / 2;
  model.slotPayloadBytes[kProtoLL128] = slotBytes[kProtoLL128] / 128 * 120;
  return model;
}

ncclResult_t CommDataPath::buildRings() {
  int rank = comm_->rank_;
  int nranks = comm_->nranks_;
  std::vector<topo::RankDesc> ranks = rankDescs(*comm_);
  std::vector<topo::Link> row;
  NCCLCHECK(topo::detectLinks(ranks, rank, &row));
  topo::TopoParams params = topo::topoParamsFromEnv(comm_->config_.minCTAs, comm_->config_.maxCTAs);
  params.singleHostTrees = plan::onlyTreeForAllReduce(filter_);
  // Across hosts the network is opened first: its devices' speeds are the NET hops' bandwidth in the
  // cost model, and exchanged with the links so that every rank models the same (slower) end.
  const bool acrossHosts =
      std::any_of(row.begin(), row.end(), [](const topo::Link& l) { return l.path == topo::PathType::kNet; });
  if (acrossHosts) {
    NCCLCHECK(net_.open(comm_));
    const float netGBps = static_cast<float>(net_.network()->bandwidthGBps(topo::netChannelCount(params)));
    for (topo::Link& l : row) {
      if (l.path == topo::PathType::kNet) l.netGBps = netGBps;
    }
  }
  std::vector<topo::Link> links(static_cast<size_t>(nranks) * nranks);
  std::memcpy(&links[static_cast<size_t>(rank) * nranks], row.data(), sizeof(topo::Link) * nranks);
  NCCLCHECK(comm_->bootstrap_->allGather(links.data(), sizeof(topo::Link) * nranks));
  NCCLCHECK(topo::buildTopology(nranks, links, params, &topo_));
  topo::logConnections(rank, ranks, topo_);
  const std::string& dumpFile = paramString(ParamId::kTopoDumpFile);
  if (!dumpFile.empty() && rank == 0) NCCLCHECK(topo::dumpTopology(dumpFile, ranks, topo_));
  return ncclSuccess;
}

transport::Context CommDataPath::transportContext() const {
  transport::Context ctx{};
  ctx.rank = comm_->rank_;
  ctx.nranks = comm_->nranks_;
  ctx.cudaDev = comm_->cudaDev_;
  ctx.commHash = comm_->commHash_;
  ctx.bootstrap = comm_->bootstrap_.get();
  for (const PeerInfo& peer : comm_->peers_) {
    ctx.peers.push_back(transport::PeerDesc{peer.cudaDev, peer.busId, peer.hostHash, peer.pidHash});
  }
  ctx.buffBytes[kProtoSimple] = fifoBytes(ParamId::kBuffSize, kProtoSimple);
  ctx.buffBytes[kProtoLL] = fifoBytes(ParamId::kLlBuffSize, kProtoLL);
  ctx.buffBytes[kProtoLL128] = fifoBytes(ParamId::kLl128BuffSize, kProtoLL128);
  ctx.abortFlag = &comm_->abortFlag_;
  ctx.network = net_.network();
  ctx.proxy = net_.proxy();
  ctx.netLl = topo_.llOk;  // with a NET hop, only when BRAID_NET_LL allows LL on it
  return ctx;
}

ncclResult_t CommDataPath::connectRings(const transport::Context& ctx, DevComm* dev) {
  int rank = comm_->rank_;
  int nranks = comm_->nranks_;
  std::vector<transport::ChannelLinks> channels;
  std::vector<StepFields> fields;
  DevComm* devComm = device_->devComm();
  dev->nChannels = topo_.nChannels;
  for (int c = 0; c < topo_.nChannels; c++) {
    const std::vector<int>& ring = topo_.rings[c];
    int index = 0;
    while (ring[index] != rank) index++;
    int next = ring[(index + 1) % nranks];
    int prev = ring[(index + nranks - 1) % nranks];
    channels.push_back(transport::ChannelLinks{next, transportKind(topo_.transport[rank * nranks + next]), prev,
                                               transportKind(topo_.transport[prev * nranks + rank])});
    fields.push_back(StepFields{&devComm->channels[c].send.step, &devComm->channels[c].recv.step});
    dev->channels[c].ringIndex = index;
  }
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  NCCLCHECK(connectOrReuse(ConnFamily::kRing, tags::kRingShare, ctx, channels, fields, &send, &recv));
  for (int c = 0; c < topo_.nChannels; c++) {
    dev->channels[c].send = send[c];
    dev->channels[c].recv = recv[c];
  }
  return ncclSuccess;
}

// Direct channel d, peer offset k: channel d * (nranks - 1) + k - 1 of one transport call, sending
// to rank + k and receiving from rank - k (whose channel of the same number sends to this rank).
ncclResult_t CommDataPath::connectDirect(transport::Context ctx, DevComm* dev) {
  static_assert(topo::kMaxDirectConnections <= transport::kMaxConnectChannels, "one call connects every channel");
  const int rank = comm_->rank_;
  const int nranks = comm_->nranks_;
  const int nDirect = topo_.nDirectChannels;
  dev->nDirectChannels = nDirect;
  if (nDirect == 0) return ncclSuccess;
  ctx.buffBytes[kProtoSimple] = 0;  // the direct algorithms run LL only (a NET connection adds its landing slots)
  ctx.buffBytes[kProtoLL128] = 0;
  std::vector<transport::ChannelLinks> channels;
  std::vector<StepFields> fields;
  DevComm* devComm = device_->devComm();
  for (int d = 0; d < nDirect; d++) {
    for (int k = 1; k < nranks; k++) {
      int to = (rank + k) % nranks;
      int from = (rank + nranks - k) % nranks;
      channels.push_back(transport::ChannelLinks{to, transportKind(topo_.transport[rank * nranks + to]), from,
                                                 transportKind(topo_.transport[from * nranks + rank])});
      fields.push_back(StepFields{&devComm->direct[d].send[k - 1].step, &devComm->direct[d].recv[k - 1].step});
    }
  }
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  NCCLCHECK(connectOrReuse(ConnFamily::kDirect, tags::kDirectShare, ctx, channels, fields, &send, &recv));
  for (int d = 0; d < nDirect; d++) {
    dev->direct[d].netSendMask = 0;
    for (int k = 1; k < nranks; k++) {
      const DevSendConn& to = send[d * (nranks - 1) + k - 1];
      dev->direct[d].send[k - 1] = to;
      dev->direct[d].recv[k - 1] = recv[d * (nranks - 1) + k - 1];
      if (to.sizes != nullptr) dev->direct[d].netSendMask |= 1u << (k - 1);  // only NET sends have sizes
    }
  }
  return ncclSuccess;
}

ncclResult_t CommDataPath::connectAll() {
  transport::Context ctx = transportContext();
  DevComm dev{};
  dev.rank = comm_->rank_;
  dev.nranks = comm_->nranks_;
  for (int p = 0; p < kNumProtos; p++) dev.slotBytes[p] = static_cast<uint32_t>(ctx.buffBytes[p] / kFifoSlots[p]);
  NCCLCHECK(device_->allocComm());  // the connects name its step fields
  NCCLCHECK(connectRings(ctx, &dev));
  NCCLCHECK(connectDirect(ctx, &dev));
  NCCLCHECK(connectTrees(ctx, &dev));
  NCCLCHECK(device_->upload(dev, topo_.rings));
  publishOffers();
  model_ = commModel(dev.slotBytes);
  return ncclSuccess;
}

ncclResult_t CommDataPath::connectRingsAndDirect() {
  auto start = std::chrono::steady_clock::now();
  NCCLCHECK(buildRings());  // opens the network too when the rings cross hosts
  NCCLCHECK(connectAll());
  connected_ = true;
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  INFO(kLogInit, "comm %p rank %d nranks %d: %d ring, %d direct and %zu tree channels connected in %.1f ms",
       static_cast<void*>(comm_), comm_->rank_, comm_->nranks_, topo_.nChannels, topo_.nDirectChannels,
       topo_.trees.size(), elapsed.count() * 1e3);
  return ncclSuccess;
}

// The rings (collective: only when the group has a collective) and, in scope kAll, the
// point-to-point peers the group's sends and receives name for the first time (pairwise, see
// p2p_connect.cc), then the count check of the sends and receives when it is on (p2p_check.cc),
// then the exchanges of registered buffers (reg_launch.cc for collectives, p2p_reg.cc for sends and
// receives): everything that waits for peers, which
// ncclGroupEnd runs for all communicators at once.
ncclResult_t CommDataPath::connect(ConnectScope scope) {
  ScopedDevice device(comm_->cudaDev_);
  if (!device.ok()) {
    WARN("rank %d: cannot make GPU %d current to connect its peers", comm_->rank_, comm_->cudaDev_);
    return ncclUnhandledCudaError;
  }
  RelaxedCaptureMode relaxed;  // the operation that connects may be captured
  NCCLCHECK(device_->allocAbortFlag());
  if (needsRingConnect()) NCCLCHECK(connectRingsAndDirect());
  if (scope == ConnectScope::kAll && needsP2pConnect()) NCCLCHECK(connectP2p());
  if (scope == ConnectScope::kAll && needsP2pCountCheck()) NCCLCHECK(checkP2pCounts());
  if (scope == ConnectScope::kAll && needsRegExchange()) NCCLCHECK(exchangeRegistrations());
  if (scope == ConnectScope::kAll && needsP2pRegExchange()) NCCLCHECK(exchangeP2pRegistrations());
  return ncclSuccess;
}

}  // namespace braid
