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
#include "core/comm.h"
#include "launch/collective_engine.h"
#include "launch/device_state.h"
#include "launch/network_link.h"
#include "launch/share_membership.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {

namespace {

// BRAID_DIRECT_SIMPLE_BUFFSIZE as whole slots of 4 KiB multiples (0: none).
size_t directSimpleFifoBytes() {
  const int64_t bytes = paramInt(ParamId::kDirectSimpleBuffSize);
  if (bytes <= 0) return 0;
  const int64_t slot = std::max<int64_t>(bytes / kFifoSlotsSimple / 4096 * 4096, 4096);
  return static_cast<size_t>(slot) * kFifoSlotsSimple;
}

}  // namespace

ncclResult_t CollectiveEngine::init() {
  const std::string& algo = paramString(ParamId::kAlgo);
  const std::string& proto = paramString(ParamId::kProto);
  return plan::parseFilter(algo.c_str(), proto.c_str(), &filter_);
}

bool CollectiveEngine::needsConnect(const std::vector<CollTask>& queue) const {
  if (connected_ || ctx_.comm->nranks_ == 1) return false;
  for (const CollTask& task : queue) {
    if (task.count > 0) return true;
  }
  return false;
}

plan::CommModel CollectiveEngine::commModel(const DevComm& dev) const {
  plan::CommModel model{};
  model.nranks = ctx_.comm->nranks_;
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
  model.directSimpleSlotBytes = dev.directSlotBytes;
  model.directAllReduceHops = static_cast<int>(paramInt(ParamId::kDirectAllReduceHops));
  model.symmetricCtas = static_cast<int>(paramInt(ParamId::kSymCtas));
  model.nthreadsOverride = static_cast<int>(paramInt(ParamId::kNthreads));
  model.ll128NthreadsOverride = static_cast<int>(paramInt(ParamId::kLl128Nthreads));
  const int clusterSize = ctx_.comm->config_.ctas.cgaClusterSize;
  model.cgaClusterSize = clusterSize == NCCL_CONFIG_UNDEF_INT ? plan::kAutoClusterSize : clusterSize;
  // Payload per slot: LL carries 8 data bytes per 16-byte line, LL128 120 per 128-byte line.
  model.slotPayloadBytes[kProtoSimple] = dev.slotBytes[kProtoSimple];
  model.slotPayloadBytes[kProtoLL] = dev.slotBytes[kProtoLL] / 2;
  model.slotPayloadBytes[kProtoLL128] = dev.slotBytes[kProtoLL128] / 128 * 120;
  return model;
}

ncclResult_t CollectiveEngine::buildRings() {
  int rank = ctx_.comm->rank_;
  int nranks = ctx_.comm->nranks_;
  std::vector<RankPlace> ranks = placesOf(ctx_.comm->peers_);
  std::vector<topo::Link> row;
  NCCLCHECK(topo::detectLinks(ranks, rank, &row));
  topo::TopoParams params = topo::topoParamsFromEnv(ctx_.comm->config_.ctas.minCTAs, ctx_.comm->config_.ctas.maxCTAs);
  params.singleHostTrees = plan::onlyTreeForAllReduce(filter_);
  // Across hosts the network is opened first: its devices' speeds are the NET hops' bandwidth in the
  // cost model, and exchanged with the links so that every rank models the same (slower) end.
  const bool acrossHosts =
      std::any_of(row.begin(), row.end(), [](const topo::Link& l) { return l.path == topo::PathType::kNet; });
  if (acrossHosts) {
    NCCLCHECK(ctx_.net->open(ctx_.comm));
    const float netGBps = static_cast<float>(ctx_.net->network()->bandwidthGBps(topo::netChannelCount(params)));
    for (topo::Link& l : row) {
      if (l.path == topo::PathType::kNet) l.netGBps = netGBps;
    }
  }
  std::vector<topo::Link> links(static_cast<size_t>(nranks) * nranks);
  std::memcpy(&links[static_cast<size_t>(rank) * nranks], row.data(), sizeof(topo::Link) * nranks);
  NCCLCHECK(ctx_.comm->bootstrap_->allGather(links.data(), sizeof(topo::Link) * nranks));
  NCCLCHECK(topo::buildTopology(nranks, links, params, &topo_));
  topo::logConnections(rank, ranks, topo_);
  const std::string& dumpFile = paramString(ParamId::kTopoDumpFile);
  if (!dumpFile.empty() && rank == 0) NCCLCHECK(topo::dumpTopology(dumpFile, ranks, topo_));
  return ncclSuccess;
}

ncclResult_t CollectiveEngine::connectRings(const transport::Context& ctx, DevComm* dev) {
  int rank = ctx_.comm->rank_;
  int nranks = ctx_.comm->nranks_;
  std::vector<transport::ChannelLinks> channels;
  std::vector<StepFields> fields;
  DevComm* devComm = ctx_.device->devComm();
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
  NCCLCHECK(ctx_.share->connectOrReuse(ConnFamily::kRing, tags::kRingShare, ctx, channels, fields, &send, &recv));
  for (int c = 0; c < topo_.nChannels; c++) {
    dev->channels[c].send = send[c];
    dev->channels[c].recv = recv[c];
  }
  return ncclSuccess;
}

// Direct channel d, peer offset k: channel d * (nranks - 1) + k - 1 of one transport call, sending
// to rank + k and receiving from rank - k (whose channel of the same number sends to this rank).
ncclResult_t CollectiveEngine::connectDirect(transport::Context ctx, DevComm* dev) {
  static_assert(topo::kMaxDirectConnections <= transport::kMaxConnectChannels, "one call connects every channel");
  const int rank = ctx_.comm->rank_;
  const int nranks = ctx_.comm->nranks_;
  const int nDirect = topo_.nDirectChannels;
  dev->nDirectChannels = nDirect;
  if (nDirect == 0) return ncclSuccess;
  // Simple FIFOs where every peer is on this host; across hosts the direct algorithms run LL only
  // (a NET connection adds its own landing slots).
  ctx.buffBytes[kProtoSimple] = topo_.nNodes == 1 ? directSimpleFifoBytes() : 0;
  ctx.buffBytes[kProtoLL128] = 0;
  dev->directSlotBytes = static_cast<uint32_t>(ctx.buffBytes[kProtoSimple] / kFifoSlotsSimple);
  std::vector<transport::ChannelLinks> channels;
  std::vector<StepFields> fields;
  DevComm* devComm = ctx_.device->devComm();
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
  NCCLCHECK(ctx_.share->connectOrReuse(ConnFamily::kDirect, tags::kDirectShare, ctx, channels, fields, &send, &recv));
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

ncclResult_t CollectiveEngine::connectAll() {
  transport::Context ctx = transportContext();
  DevComm dev{};
  dev.rank = ctx_.comm->rank_;
  dev.nranks = ctx_.comm->nranks_;
  for (int p = 0; p < kNumProtos; p++) dev.slotBytes[p] = static_cast<uint32_t>(ctx.buffBytes[p] / kFifoSlots[p]);
  NCCLCHECK(ctx_.device->allocComm());  // the connects name its step fields
  NCCLCHECK(connectRings(ctx, &dev));
  NCCLCHECK(connectDirect(ctx, &dev));
  NCCLCHECK(connectTrees(ctx, &dev));
  NCCLCHECK(ctx_.device->upload(dev, topo_.rings));
  ctx_.share->publishOffers();
  model_ = commModel(dev);
  return ncclSuccess;
}

ncclResult_t CollectiveEngine::connect() {
  auto start = std::chrono::steady_clock::now();
  NCCLCHECK(buildRings());  // opens the network too when the rings cross hosts
  NCCLCHECK(connectAll());
  connected_ = true;
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  INFO(kLogInit, "comm %p rank %d nranks %d: %d ring, %d direct and %zu tree channels connected in %.1f ms",
       static_cast<void*>(ctx_.comm), ctx_.comm->rank_, ctx_.comm->nranks_, topo_.nChannels, topo_.nDirectChannels,
       topo_.trees.size(), elapsed.count() * 1e3);
  return ncclSuccess;
}

}  // namespace braid
