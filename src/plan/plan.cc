// The per-operation decision: Ring with the protocol of least estimated time, then channels,
// threads and chunk size for that protocol (see plan.h and tuning_constants.h).
#include "plan/plan.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <string>

#include "plan/selection.h"
#include "plan/tuning_constants.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::plan {

namespace {

bool directUsable(const CommModel& model) { return model.maxDirectChannels > 0 && !model.userPreMulSum; }
bool directProtoUsable(const CommModel& model, ProtoId proto) {
  return proto == kProtoLL || (proto == kProtoSimple && model.directSimpleSlotBytes >= kChunkGrainBytes[kProtoSimple]);
}

// Ring steps one rank block takes: reduce-scatter then all-gather for AllReduce, one pass for
// AllGather / ReduceScatter, and nranks for the pipelined chain of Broadcast / Reduce (NCCL's count).
int ringSteps(CollId coll, int nranks) {
  switch (coll) {
    case CollId::kAllReduce:
      return 2 * (nranks - 1);
    case CollId::kAllGather:
    case CollId::kReduceScatter:
      return nranks - 1;
    default:
      return nranks;
  }
}

double ringBusBwGBps(const CommModel& model, ProtoId proto, int nChannels) {
  double bw = nChannels * model.bwPerChannelGBps;
  if (proto == kProtoLL) {
    int nodeIndex = std::min(std::max(model.nNodes, 1), 3) - 1;
    return std::min(bw * kRingLlBwFactor, kLlMaxBusBwGBps[nodeIndex]);
  }
  if (proto == kProtoLL128) return std::min(bw * kRingLl128BwFactor, nChannels * kRingLl128MaxBwPerChannelGBps);
  return bw * kRingSimpleBwFactor;
}

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Broadcast and Reduce run down a chain from / to the root; the others around the whole ring.
bool isChain(CollId coll) { return coll == CollId::kBroadcast || coll == CollId::kReduce; }
uint64_t roundUp(uint64_t a, uint64_t grain) { return ceilDiv(a, grain) * grain; }

// The largest chunk a slot holds, on the protocol's grain (0 when a slot cannot hold one grain).
uint32_t slotChunkCap(const CommModel& model, ProtoId proto) {
  return model.slotPayloadBytes[proto] / kChunkGrainBytes[proto] * kChunkGrainBytes[proto];
}

// NCCL_NTHREADS / NCCL_LL128_NTHREADS when valid, else the protocol's default. An invalid value is
// WARNed about once per process and per variable, then ignored.
int startThreads(const CommModel& model, ProtoId proto) {
  static std::atomic<bool> warned[2] = {{false}, {false}};
  bool isLl128 = proto == kProtoLL128;
  int value = isLl128 ? model.ll128NthreadsOverride : model.nthreadsOverride;
  if (value <= 0) return kDefaultThreads[proto];
  if (value % 32 == 0 && value >= kMinOverrideThreads[proto] && value <= kMaxThreads[proto]) return value;
  if (!warned[isLl128 ? 1 : 0].exchange(true)) {
    WARN("%s=%d is invalid for %s (must be a multiple of 32 in [%d, %d]); using %d",
         isLl128 ? "NCCL_LL128_NTHREADS" : "NCCL_NTHREADS", value, protoName(proto), kMinOverrideThreads[proto],
         kMaxThreads[proto], kDefaultThreads[proto]);
  }
  return kDefaultThreads[proto];
}

bool threadsOverridden(const CommModel& model, ProtoId proto) {
  return (proto == kProtoLL128 ? model.ll128NthreadsOverride : model.nthreadsOverride) > 0;
}

// LL and LL128 (threads not set by the user): small CTAs on as many channels as the bytes fill,
// then more threads once every channel is in use (see kSmallCtaThreads).
void growChannelsThenThreads(const CommModel& model, ProtoId proto, size_t bytes, uint64_t perThread, int* nChannels,
                             int* nThreads) {
  int nt = kSmallCtaThreads[proto];
  uint64_t channels = std::max<uint64_t>(ceilDiv(bytes, static_cast<uint64_t>(nt) * perThread), 1);
  int nc = static_cast<int>(std::min<uint64_t>(channels, static_cast<uint64_t>(model.maxChannels)));
  uint64_t grow = proto == kProtoLL ? perThread : kLl128GrowBytesPerThread;
  int maxThreads = model.nNodes > 1 ? kMaxThreads[proto] : kMaxGrownThreads[proto];
  while (nc == model.maxChannels && nt * 2 <= maxThreads && bytes >= static_cast<uint64_t>(nc) * nt * 2 * grow) {
    nt *= 2;
  }
  *nChannels = nc;
  *nThreads = nt;
}

// The channels a protocol may use: LL across hosts keeps to kNetLlChannels.
int protoMaxChannels(const CommModel& model, ProtoId proto) {
  return model.nNodes > 1 && proto == kProtoLL ? std::min(kNetLlChannels, model.maxChannels) : model.maxChannels;
}

// Simple, or a thread count the user set: fewer channels, then fewer threads, while a thread would
// get less than its threshold of bytes. LL and LL128 otherwise: growChannelsThenThreads. Never
// fewer channels than minChannels (an operation's config) where the protocol has that many.
void fitChannelsAndThreads(CommModel model, ProtoId proto, size_t bytes, int minChannels, int* nChannels,
                           int* nThreads) {
  model.maxChannels = protoMaxChannels(model, proto);
  const int floor = std::clamp(minChannels, 1, model.maxChannels);
  uint64_t perThread = kThreadThresholdBytes[proto] * (proto == kProtoLL ? model.nranks : 1);
  if (proto != kProtoSimple && !threadsOverridden(model, proto)) {
    growChannelsThenThreads(model, proto, bytes, perThread, nChannels, nThreads);
    *nChannels = std::max(*nChannels, floor);
    return;
  }
  int nc = model.maxChannels;
  int nt = startThreads(model, proto);
  while (nc > floor && bytes < static_cast<uint64_t>(nc) * nt * perThread) --nc;
  while (nt / 2 >= kMinAutoThreads && nt % 64 == 0 && bytes < static_cast<uint64_t>(nc) * nt * perThread) nt /= 2;
  *nChannels = nc;
  *nThreads = nt;
}

// Payload bytes per step per channel, on the protocol's grain, within a slot: a ring moves a whole
// rank block per step; a chain (Broadcast, Reduce) cuts its data into kStepsPerChain steps of at
// least one pass of the CTA and kMinChainStepBytes.
uint32_t chooseChunk(const CommModel& model, CollId coll, ProtoId proto, int nChannels, int nThreads, size_t bytes) {
  bool chain = isChain(coll);
  uint64_t perChannel = ceilDiv(std::max<uint64_t>(bytes, 1), nChannels);
  uint64_t block = chain ? perChannel : ceilDiv(perChannel, model.nranks);
  uint64_t pass = static_cast<uint64_t>(nThreads) * kPassBytesPerThread[proto];
  uint64_t minStep = std::max<uint64_t>(pass, kMinChainStepBytes);
  uint64_t chunk = chain ? std::max(ceilDiv(block, kStepsPerChain), std::min(block, minStep)) : block;
  chunk = roundUp(chunk, kChunkGrainBytes[proto]);
  return static_cast<uint32_t>(std::min<uint64_t>(chunk, slotChunkCap(model, proto)));
}

// Tree: the channel's part in as few steps as the slots allow. Trees cross hosts, where every step
// is a network message (~10 us through the proxies): 4 H200 as 2 hosts of 2, AllReduce of 4 KiB
// in four 1 KiB LL steps took 110 us, in one 40 us.
uint32_t chooseTreeChunk(const CommModel& model, ProtoId proto, int nChannels, size_t bytes) {
  uint64_t perChannel = ceilDiv(std::max<uint64_t>(bytes, 1), nChannels);
  return static_cast<uint32_t>(
      std::min<uint64_t>(roundUp(perChannel, kChunkGrainBytes[proto]), slotChunkCap(model, proto)));
}

// Direct: the bytes each connection carries (AllReduce, Broadcast, Reduce: all of them; AllGather,
// ReduceScatter: one rank's block) and those of the rank's busiest port, nranks - 1 connections.
uint64_t directPeerBytes(CollId coll, int nranks, size_t bytes) {
  bool perRank = coll == CollId::kAllGather || coll == CollId::kReduceScatter;
  return perRank ? ceilDiv(bytes, static_cast<uint64_t>(nranks)) : bytes;
}

// Direct on Simple: what each connection carries in a phase (the two-shot's block, else
// directPeerBytes), and the phases (two for the two-shot AllReduce, else one).
struct DirectSimpleLoad {
  uint64_t peerBytes;
  int phases;
  uint64_t recvBytes(int nranks) const { return peerBytes * (nranks - 1) * phases; }  // the rank's busiest port
};
DirectSimpleLoad directSimpleLoad(const CommModel& model, CollId coll, size_t bytes, bool twoShot) {
  if (twoShot && coll == CollId::kAllReduce) return {ceilDiv(bytes, static_cast<uint64_t>(model.nranks)), 2};
  return {directPeerBytes(coll, model.nranks, bytes), 1};
}

// The bytes a rank of a symmetric kernel loads from or stores to its peers (see
// device/coll/symmetric_colls.h).
uint64_t symmetricRemoteBytes(CollId coll, int nranks, size_t bytes, bool twoShot) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  switch (coll) {
    case CollId::kAllReduce:
      return twoShot ? 2 * ceilDiv(bytes, n) * (n - 1) : bytes * (n - 1);
    case CollId::kAllGather:
    case CollId::kReduceScatter:
      return ceilDiv(bytes, n) * (n - 1);
    default:  // the root of a Reduce loads, that of a Broadcast is loaded from, every peer's copy
      return bytes * (n - 1);
  }
}

// The symmetric kernels: a CTA per kSymmetricBytesPerCta its rank moves across (NCCL_SYM_CTAS:
// that many), up to every direct channel, threads as Direct/Simple (NCCL_NTHREADS: that many); no
// chunks (one grain, which nothing reads).
void fitSymmetric(const CommModel& model, CollId coll, size_t bytes, int minChannels, Decision* d) {
  const uint64_t remote = std::max<uint64_t>(symmetricRemoteBytes(coll, model.nranks, bytes, d->twoShot), 1);
  const uint64_t channels =
      model.symmetricCtas > 0 ? static_cast<uint64_t>(model.symmetricCtas) : ceilDiv(remote, kSymmetricBytesPerCta);
  int nc = static_cast<int>(std::min<uint64_t>(channels, static_cast<uint64_t>(model.maxDirectChannels)));
  nc = std::max(nc, std::clamp(minChannels, 1, model.maxDirectChannels));
  int nt = startThreads(model, kProtoSimple);
  while (!threadsOverridden(model, kProtoSimple) && nt > kMinAutoThreads &&
         remote < static_cast<uint64_t>(nc) * nt * kThreadThresholdBytes[kProtoSimple])
    nt /= 2;
  d->nChannels = nc;
  d->nThreads = nt;
  d->chunkBytes = kChunkGrainBytes[kProtoSimple];
}

// Direct on Simple: a CTA per kDirectSimpleBytesPerCta its rank receives, up to every direct
// channel; the full Simple CTA once each thread would move a few packs; chunks of a whole slot.
void fitDirectSimple(const CommModel& model, CollId coll, size_t bytes, int minChannels, Decision* d) {
  const uint64_t recvBytes =
      std::max<uint64_t>(directSimpleLoad(model, coll, bytes, d->twoShot).recvBytes(model.nranks), 1);
  uint64_t channels = ceilDiv(recvBytes, kDirectSimpleBytesPerCta);
  int nc = static_cast<int>(std::min<uint64_t>(channels, static_cast<uint64_t>(model.maxDirectChannels)));
  nc = std::max(nc, std::clamp(minChannels, 1, model.maxDirectChannels));
  int nt = kMaxThreads[kProtoSimple];
  while (nt > kMinAutoThreads && recvBytes < static_cast<uint64_t>(nc) * nt * kThreadThresholdBytes[kProtoSimple])
    nt /= 2;
  d->nChannels = nc;
  d->nThreads = nt;
  d->chunkBytes = model.directSimpleSlotBytes / kChunkGrainBytes[kProtoSimple] * kChunkGrainBytes[kProtoSimple];
}

void fitDirect(const CommModel& model, CollId coll, size_t bytes, int minChannels, Decision* d) {
  if (d->symmetric) {
    fitSymmetric(model, coll, bytes, minChannels, d);
    return;
  }
  if (d->proto == kProtoSimple) {
    fitDirectSimple(model, coll, bytes, minChannels, d);
    return;
  }
  uint64_t peerBytes = directPeerBytes(coll, model.nranks, bytes);
  uint64_t recvBytes = std::max<uint64_t>(peerBytes * (model.nranks - 1), 1);
  uint64_t channels = ceilDiv(recvBytes, kDirectBytesPerCta);
  int nc = static_cast<int>(std::min<uint64_t>(channels, static_cast<uint64_t>(model.maxDirectChannels)));
  nc = std::max(nc, std::clamp(minChannels, 1, model.maxDirectChannels));
  int nt = kDirectThreads;
  while (nt * 2 <= kMaxDirectThreads && recvBytes >= static_cast<uint64_t>(nc) * nt * 2 * 16) nt *= 2;
  d->nChannels = nc;
  d->nThreads = nt;
  uint64_t chunk = roundUp(std::max<uint64_t>(ceilDiv(peerBytes, nc), 1), kChunkGrainBytes[kProtoLL]);
  d->chunkBytes = static_cast<uint32_t>(std::min<uint64_t>(chunk, slotChunkCap(model, kProtoLL)));
}

ncclResult_t checkModel(const CommModel& model, CollId coll) {
  bool ok = model.nranks >= 1 && model.maxChannels >= 1 && model.maxChannels <= kMaxChannels &&
            model.maxDirectChannels >= 0 && model.maxDirectChannels <= kMaxDirectChannels;
  if (ok && model.nranks > 1) ok = model.bwPerChannelGBps > 0;
  if (!ok) {
    WARN(
        "Planner: inconsistent communicator model for %s (nranks %d, maxChannels %d of at most %d, "
        "maxDirectChannels %d of at most %d, %.2f GB/s per channel)",
        collName(coll), model.nranks, model.maxChannels, kMaxChannels, model.maxDirectChannels, kMaxDirectChannels,
        model.bwPerChannelGBps);
    return ncclInternalError;
  }
  if (slotChunkCap(model, kProtoSimple) == 0) {
    WARN("Planner: Simple FIFO slot payload %u bytes is below one grain (%u bytes)",
         model.slotPayloadBytes[kProtoSimple], kChunkGrainBytes[kProtoSimple]);
    return ncclInternalError;
  }
  return ncclSuccess;
}

// The config's cluster size, or where the planner picks: clusters of kClusterCtas, but none for a
// two-rank AllGather or ReduceScatter ring of Simple steps (see kClusterCtas).
int chooseClusterSize(const CommModel& model, CollId coll, const Decision& d) {
  if (model.cgaClusterSize != kAutoClusterSize) return model.cgaClusterSize;
  const bool onePass = coll == CollId::kAllGather || coll == CollId::kReduceScatter;
  const bool pairRing = model.nranks == 2 && d.algo == kAlgoRing && d.proto == kProtoSimple;
  return onePass && pairRing ? 0 : kClusterCtas;
}

bool protoUsable(const CommModel& model, ProtoId proto) {
  if ((proto == kProtoLL && !model.llOk) || (proto == kProtoLL128 && !model.ll128Ok)) return false;
  return slotChunkCap(model, proto) != 0;
}

void logDecision(CollId coll, size_t bytes, const Decision& d) {
  INFO(kLogTuning, "%s %zu bytes -> %s/%s, %d channels x %d threads, chunk %u bytes, clusters of %d, %.1f us",
       collName(coll), bytes, algoName(d.algo), protoName(d.proto), d.nChannels, d.nThreads, d.chunkBytes,
       d.clusterSize, d.estimatedUs);
}

// One rank: nothing to communicate; a copy on one channel (NCCL runs no algorithm either).
Decision oneRankDecision(const CommModel& model, size_t bytes) {
  Decision d{};
  d.algo = kAlgoRing;
  d.proto = kProtoSimple;
  d.nChannels = 1;
  d.nThreads = startThreads(model, kProtoSimple);
  uint64_t chunk = roundUp(std::max<uint64_t>(bytes, 1), kChunkGrainBytes[kProtoSimple]);
  d.chunkBytes = static_cast<uint32_t>(std::min<uint64_t>(chunk, slotChunkCap(model, kProtoSimple)));
  d.estimatedUs = 0.0;
  d.clusterSize = 0;  // one rank's kernels launch without clusters (launch/data_path_context.h, KernelLaunch::plain)
  return d;
}

// The model within op's channel caps and cluster size.
CommModel constrainedModel(const CommModel& model, const OpConstraints& op) {
  CommModel m = model;
  const int cap = std::max(op.maxChannels, 1);
  m.maxChannels = std::min(m.maxChannels, cap);
  m.maxDirectChannels = std::min(m.maxDirectChannels, cap);
  m.nTreeChannels = std::min(m.nTreeChannels, cap);
  if (op.cgaClusterSize != kClusterOfComm) m.cgaClusterSize = op.cgaClusterSize;
  return m;
}

// Whether the filter and `rows` (0: any) select (algo, proto) for coll.
bool selected(const Filter& filter, uint64_t rows, CollId coll, AlgoId algo, ProtoId proto) {
  const int c = static_cast<int>(coll);
  return filter.algo[c][algo] && filter.proto[c][proto] && (rows == 0 || selectionAllows(rows, algo, proto));
}

// Whether the filter, the communicator and `rows` (0: any) allow (algo, proto) for coll.
bool candidateAllowed(const CommModel& model, const Filter& filter, uint64_t rows, CollId coll, AlgoId algo,
                      ProtoId proto) {
  if (!selected(filter, rows, coll, algo, proto) || !protoUsable(model, proto)) return false;
  if (algo == kAlgoTree && (coll != CollId::kAllReduce || model.nTreeChannels <= 0 || proto == kProtoLL128)) {
    return false;
  }
  return algo != kAlgoDirect || (directUsable(model) && directProtoUsable(model, proto));
}

// The Ring, Tree and Direct candidates the filter and the communicator allow, by name (for WARNs).
std::string usableSummary(const CommModel& model, const Filter& filter, CollId coll) {
  std::string names;
  for (AlgoId algo : {kAlgoRing, kAlgoTree, kAlgoDirect}) {
    for (int p = 0; p < kNumProtos; ++p) {
      if (!candidateAllowed(model, filter, 0, coll, algo, static_cast<ProtoId>(p))) continue;
      if (!names.empty()) names += ", ";
      names += std::string(algoName(algo)) + "/" + protoName(static_cast<ProtoId>(p));
    }
  }
  return names.empty() ? "nothing" : names;
}

// The symmetric kernel for an operation whose buffers `sym` describes, if any: offer(twoShot). For
// AllReduce two hops where peers may store into the receive buffers: safe in place, where one hop
// is not (a rank would overwrite the input its peers are still loading). One hop where only the
// send buffers are windows, which cannot be in place.
template <typename Offer>
void offerSymmetric(const SymmetricBuffers& sym, CollId coll, Offer offer) {
  if (symmetricKernelFits(sym, coll)) offer(coll == CollId::kAllReduce && sym.recv);
}

// The candidate of least estimated time (algorithm, protocol, estimate) among those allowed; false
// when there is none.
bool pickCandidate(const CommModel& model, const Filter& filter, uint64_t rows, const SymmetricBuffers& sym,
                   CollId coll, size_t bytes, Decision* d) {
  bool found = false;
  auto offer = [&](AlgoId algo, ProtoId proto, double us, bool twoShot = false, bool symmetric = false) {
    if (us < 0 || (found && us >= d->estimatedUs)) return;
    d->algo = algo;
    d->proto = proto;
    d->estimatedUs = us;
    d->twoShot = twoShot;
    d->symmetric = symmetric;
    found = true;
  };
  auto allowed = [&](AlgoId algo, ProtoId proto) { return candidateAllowed(model, filter, rows, coll, algo, proto); };
  for (int p = 0; p < kNumProtos; ++p) {
    ProtoId proto = static_cast<ProtoId>(p);
    if (allowed(kAlgoRing, proto)) {
      offer(kAlgoRing, proto, estimateUs(model, coll, proto, protoMaxChannels(model, proto), bytes));
    }
  }
  for (ProtoId proto : {kProtoLL, kProtoSimple}) {
    int channels = std::min(protoMaxChannels(model, proto), model.nTreeChannels);
    if (allowed(kAlgoTree, proto)) offer(kAlgoTree, proto, estimateTreeUs(model, proto, channels, bytes));
  }
  if (allowed(kAlgoDirect, kProtoLL)) {
    offer(kAlgoDirect, kProtoLL, estimateDirectUs(model, coll, model.maxDirectChannels, bytes));
  }
  if (allowed(kAlgoDirect, kProtoSimple)) {
    const bool twoShotUsable = coll == CollId::kAllReduce && model.nranks > 2;
    if (!twoShotUsable || model.directAllReduceHops != 2) {
      offer(kAlgoDirect, kProtoSimple, estimateDirectSimpleUs(model, coll, model.maxDirectChannels, bytes, false));
    }
    if (twoShotUsable && model.directAllReduceHops != 1) {
      offer(kAlgoDirect, kProtoSimple, estimateDirectSimpleUs(model, coll, model.maxDirectChannels, bytes, true), true);
    }
  }
  // The symmetric kernels need the direct channels but none of their FIFOs; from
  // kSymmetricPreferredBytes to kSymmetricPreferredMaxBytes (AllReduce: two hops) they win
  // whatever the estimates say.
  if (directUsable(model) && selected(filter, rows, coll, kAlgoDirect, kProtoSimple)) {
    offerSymmetric(sym, coll, [&](bool twoShot) {
      const double us = estimateSymmetricUs(model, coll, model.maxDirectChannels, bytes, twoShot);
      const int c = static_cast<int>(coll);
      const bool preferred = us >= 0 && bytes >= kSymmetricPreferredBytes[c] &&
                             bytes <= kSymmetricPreferredMaxBytes[c] && (coll != CollId::kAllReduce || twoShot);
      if (preferred) found = false;
      offer(kAlgoDirect, kProtoSimple, us, twoShot, true);
    });
  }
  return found;
}

void warnNothingLeft(const CommModel& model, CollId coll) {
  WARN(
      "NCCL_ALGO / NCCL_PROTO leave no usable algorithm and protocol for %s on this communicator (Braid has Ring "
      "with %s%s, %s, and %s)",
      collName(coll), model.llOk ? "LL, Simple" : "Simple (rings that cross hosts take LL only with BRAID_NET_LL=1)",
      model.ll128Ok ? " and LL128" : " (LL128 is not available on these paths)",
      directUsable(model)   ? (directProtoUsable(model, kProtoSimple) ? "Direct with LL or Simple" : "Direct with LL")
      : model.userPreMulSum ? "no Direct for a ncclRedOpCreatePreMulSum op"
                            : "no Direct here: some pair is neither NVLink P2P nor on another host with LL",
      model.nTreeChannels > 0 ? "Tree with LL or Simple for AllReduce" : "no Tree here: one host");
}

// Channels, threads and chunk of d's algorithm and protocol, at least minChannels where they have them.
void fitDecision(const CommModel& model, CollId coll, size_t bytes, int minChannels, Decision* d) {
  if (d->algo == kAlgoDirect) {
    fitDirect(model, coll, bytes, minChannels, d);
  } else if (d->algo == kAlgoTree) {
    CommModel treeModel = model;
    treeModel.maxChannels = std::min(model.maxChannels, model.nTreeChannels);
    fitChannelsAndThreads(treeModel, d->proto, bytes, minChannels, &d->nChannels, &d->nThreads);
    d->chunkBytes = chooseTreeChunk(model, d->proto, d->nChannels, bytes);
  } else {
    fitChannelsAndThreads(model, d->proto, bytes, minChannels, &d->nChannels, &d->nThreads);
    d->chunkBytes = chooseChunk(model, coll, d->proto, d->nChannels, d->nThreads, bytes);
  }
}

// What each peer past the first adds to a one-hop kernel's fixed cost (kDirectPeerLatencyUs).
double directPeersUs(const CommModel& model) {
  return std::clamp(model.nranks - 2, 0, kDirectPeersPriced) * kDirectPeerLatencyUs;
}

// How many slot-sized chunks each channel of a Simple ring moves per ring step (a channel's part
// of the data in nranks blocks, cut at the slot's payload): at least 1, fractional above, so that
// the estimate stays continuous in the bytes.
double ringChunksPerStep(const CommModel& model, int nChannels, size_t bytes) {
  const double slot = std::max<double>(model.slotPayloadBytes[kProtoSimple], 1.0);
  const double perStep = std::max(nChannels, 1) * std::max(model.nranks, 1) * slot;
  return std::max(1.0, static_cast<double>(bytes) / perStep);
}

}  // namespace

// Write-direct (peers write into receive buffers) takes half the channels: the next rank's buffer
// as the destination saves a CTA enough memory operations to keep (AllGather) or nearly keep
// (AllReduce, Broadcast) the bandwidth (4 H200, 256 MiB; Broadcast on all channels was slower
// still). Read-direct loads cross NVLink and need more CTAs in flight: where only the first hop
// reads (more than two ranks), and for Reduce, whose root alone reads, it keeps them all. A two-rank
// ReduceScatter is one read per channel on each GPU (device/coll/ring_colls.h, twoRankDirectChunk) and
// on half the channels beats the copy path on all: 312 against 287 GB/s at 256 MiB, where a
// two-rank Reduce moved 355 on half and 362 on all (2 H200, docs/performance-log.md, 2026-11-28).
//
// The half carries the whole bandwidth in the model too, as measured, so that a zero-copy plan's
// estimate compares with the copy path's. (Whether to go zero-copy at all is the copy path's plan:
// where it is not the Simple ring, LL or LL128 is faster. Planned on this model with the bandwidth
// halved, a captured 2 MiB operation on 2 H200 took the zero-copy Simple ring: AllReduce 25.5 us,
// AllGather 18.7, ReduceScatter 20.2 replayed from a graph, where the copy path's LL128 takes
// 21.0 / 14.0 / 14.7; tune-plans/2026-11-30-two-rank-ll128.txt.)
CommModel zeroCopyModel(const CommModel& model, CollId coll) {
  const bool half = !readsPeerSendBuffers(coll) || (coll == CollId::kReduceScatter && model.nranks == 2);
  CommModel out = model;
  if (half) {
    out.maxChannels = std::max(1, model.maxChannels / 2);
    out.bwPerChannelGBps = model.bwPerChannelGBps * model.maxChannels / out.maxChannels;
  }
  return out;
}

double estimateUs(const CommModel& model, CollId coll, ProtoId proto, int nChannels, size_t bytes) {
  if (model.nranks < 1 || proto < 0 || proto >= kNumProtos) return -1.0;
  if (model.nranks == 1) return 0.0;
  if (model.bwPerChannelGBps <= 0) return -1.0;
  int nsteps = ringSteps(coll, model.nranks);
  double busBw = ringBusBwGBps(model, proto, std::max(nChannels, 1));
  double algBw = busBw * model.nranks / nsteps;
  bool chain = isChain(coll);
  double hopUs = model.hopLatencyUs[proto] * (chain ? kChainHopFactor : 1.0);
  double latency = kRingBaseLatencyUs[proto] + nsteps * hopUs;
  double floorUs = chain ? 0.0 : kRingBaseLatencyUs[proto] + nsteps * std::max(hopUs, kRingStepFloorUs[proto]);
  const double dataUs = static_cast<double>(bytes) / (1000.0 * algBw);
  // A Simple ring overlaps a step's handshake (the step floor's part above the hop) with the data
  // of other steps, but not at the ends of a channel's pipeline: with one chunk per channel and
  // step, the first and the last handshake add to the data (a share of them with more chunks). On
  // 2 H200 (one chunk per channel up to 32 MiB) AllReduce took 28.9 / 42.3 / 70.3 us at 4 / 8 / 16
  // MiB: the hops, the data and two handshakes give 29.9 / 42.2 / 66.8, where the larger of the
  // floor and the hops plus the data had given 22.7 / 35.0 / 59.6
  // (tune-plans/2026-11-30-two-rank-ll128-simple.txt); on 4 H200 AllReduce of 16 MiB took 103.4
  // (2026-11-28), the same model 103.1.
  const double handshakeUs = std::max(0.0, kRingStepFloorUs[proto] - hopUs);
  const double exposedUs = proto == kProtoSimple && !chain
                               ? std::min(nsteps, 2) * handshakeUs / ringChunksPerStep(model, nChannels, bytes)
                               : 0.0;
  return std::max(floorUs, latency + dataUs + exposedUs);
}

double estimateTreeUs(const CommModel& model, ProtoId proto, int nChannels, size_t bytes) {
  if (model.nranks < 1 || model.nTreeChannels <= 0 || proto < 0 || proto >= kNumProtos) return -1.0;
  if (model.nranks == 1) return 0.0;
  if (model.bwPerChannelGBps <= 0) return -1.0;
  double depthUs =
      model.treeNetDepth * model.hopLatencyUs[proto] + model.treeLocalDepth * model.localHopLatencyUs[proto];
  double busBw = ringBusBwGBps(model, proto, std::max(nChannels, 1));
  return kRingBaseLatencyUs[proto] + 2 * depthUs + 2 * static_cast<double>(bytes) / (1000.0 * busBw);
}

double estimateDirectUs(const CommModel& model, CollId coll, int nChannels, size_t bytes) {
  if (model.nranks < 1 || !directUsable(model)) return -1.0;
  if (model.nranks == 1) return 0.0;
  if (model.bwPerChannelGBps <= 0) return -1.0;
  uint64_t peerBytes = directPeerBytes(coll, model.nranks, bytes);
  double wireBytes = static_cast<double>(peerBytes) * (model.nranks - 1);
  bool reduces = coll != CollId::kAllGather && coll != CollId::kBroadcast;
  double bw =
      ringBusBwGBps(model, kProtoLL, std::max(nChannels, 1)) * (reduces ? kDirectReduceBwFactor : kDirectCopyBwFactor);
  double latency = kDirectBaseLatencyUs + directPeersUs(model) + model.hopLatencyUs[kProtoLL] +
                   (reduces ? kDirectReduceLatencyUs : 0.0);
  return latency + wireBytes / (1000.0 * bw);
}

double estimateDirectSimpleUs(const CommModel& model, CollId coll, int nChannels, size_t bytes, bool twoShot) {
  if (model.nranks < 1 || !directUsable(model) || !directProtoUsable(model, kProtoSimple)) return -1.0;
  if (model.nranks == 1) return 0.0;
  if (model.bwPerChannelGBps <= 0) return -1.0;
  const DirectSimpleLoad load = directSimpleLoad(model, coll, bytes, twoShot);
  const int channels = std::max(nChannels, 1);
  // A CTA hands its peers one slot per handshake and waits for theirs before the next.
  const uint64_t handshakes =
      std::max<uint64_t>(ceilDiv(load.peerBytes, uint64_t{model.directSimpleSlotBytes} * channels), 1);
  const double handshakeUs = std::max(model.hopLatencyUs[kProtoSimple], kRingStepFloorUs[kProtoSimple]);
  const double bw = ringBusBwGBps(model, kProtoSimple, channels);
  return kRingBaseLatencyUs[kProtoSimple] + load.phases * handshakes * handshakeUs +
         static_cast<double>(load.recvBytes(model.nranks)) / (1000.0 * bw);
}

bool symmetricKernelFits(const SymmetricBuffers& sym, CollId coll) {
  switch (coll) {
    case CollId::kAllReduce:
    case CollId::kReduceScatter:
    case CollId::kReduce:
      return sym.send;
    default:
      return sym.recv;
  }
}

double estimateSymmetricUs(const CommModel& model, CollId coll, int nChannels, size_t bytes, bool twoShot) {
  if (model.nranks < 1 || !directUsable(model)) return -1.0;
  if (model.nranks == 1) return 0.0;
  if (model.bwPerChannelGBps <= 0) return -1.0;
  const double baseUs = coll == CollId::kAllGather ? kSymmetricStoreBaseUs : kSymmetricLoadBaseUs;
  const double linkGBps = model.bwPerChannelGBps * model.maxChannels * kSymmetricBwFactor;
  const double bw = std::min(std::max(nChannels, 1) * kSymmetricCtaGBps, linkGBps);
  return baseUs + directPeersUs(model) +
         static_cast<double>(symmetricRemoteBytes(coll, model.nranks, bytes, twoShot)) / (1000.0 * bw);
}

ncclResult_t decide(const CommModel& model, const Filter& filter, CollId coll, size_t bytes, Decision* out) {
  return decide(model, filter, OpConstraints{}, coll, bytes, out);
}

ncclResult_t decide(const CommModel& commModel, const Filter& filter, const OpConstraints& op, CollId coll,
                    size_t bytes, Decision* out) {
  NCCLCHECK(checkModel(commModel, coll));
  if (commModel.nranks == 1) {
    *out = oneRankDecision(commModel, bytes);
    logDecision(coll, bytes, *out);
    return ncclSuccess;
  }
  const CommModel model = constrainedModel(commModel, op);
  Decision d{};
  bool found = pickCandidate(model, filter, op.selectionRows, op.symmetric, coll, bytes, &d);
  if (!found && op.selectionRows != 0) {
    if (op.forceSelection) {
      WARN(
          "config->algSelection \"%s\" leaves %s no usable algorithm and protocol on this communicator (it selects %s; "
          "NCCL_ALGO / NCCL_PROTO and the communicator allow %s); set forceAlgSelection = 0 to fall back to the "
          "automatic choice",
          op.selectionText.c_str(), collName(coll), selectionNames(op.selectionRows).c_str(),
          usableSummary(model, filter, coll).c_str());
      return ncclInvalidUsage;
    }
    INFO(kLogTuning, "config->algSelection \"%s\" leaves %s no usable algorithm here; automatic choice instead",
         op.selectionText.c_str(), collName(coll));
    found = pickCandidate(model, filter, 0, op.symmetric, coll, bytes, &d);
  }
  const int c = static_cast<int>(coll);
  if (!found && !filter.algoNamed[c] &&
      std::none_of(std::begin(filter.algo[c]), std::end(filter.algo[c]), [](bool a) { return a; })) {
    WARN(
        "NCCL_ALGO names no algorithm for %s: as in NCCL 2.31 and later, a collective that NCCL_ALGO does not name "
        "gets none; add an entry for it (\"%s:ring\") or one without a function prefix",
        collName(coll), collName(coll));
    return ncclInvalidUsage;
  }
  if (!found) {
    warnNothingLeft(model, coll);
    return ncclInvalidUsage;
  }
  fitDecision(model, coll, bytes, op.minChannels, &d);
  d.clusterSize = chooseClusterSize(model, coll, d);
  *out = d;
  logDecision(coll, bytes, d);
  return ncclSuccess;
}

}  // namespace braid::plan
