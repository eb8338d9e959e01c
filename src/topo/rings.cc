// From the gathered links to transports, rings and the model numbers of the cost model. Pure: the
// same inputs give the same Topology on every rank (no environment, no unordered containers, a
// search with a fixed step budget instead of a clock).
#include <algorithm>
#include <array>
#include <functional>
#include <utility>
#include <vector>

#include "topo/topo.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::topo {
namespace {

// Link bandwidths in GB/s, from NCCL 2.28's topology constants (SM90_NVLINK_BW, PCI_BW, SKL_QPI_BW,
// LOC_BW): one NVLink lane on sm90 20.6; PCI_BW 12 (Gen3 x16, NCCL's default when the width is not
// read); a path through the CPUs' interconnect 10 (NCCL's SKL QPI value; the CPU is not detected
// here); local copies 5000.
constexpr double kNvlinkLaneBw = 20.6;
constexpr double kPciBw = 12.0;
constexpr double kInterSocketBw = 10.0;
constexpr double kLocalBw = 5000.0;

// Ring hop latencies in µs per protocol (LL, LL128, Simple), for the planner's cost model (with
// plan's kRingBaseLatencyUs). NVLink: fitted to Braid's kernels on 4 H200 behind NVSwitch (AllReduce
// and AllGather, 1-64 KiB, each protocol forced). Other paths (PCIe, SHM): the NVLink values scaled
// by NCCL 2.28's PCI / NVLink ratios; not yet measured on a PCIe-only machine.
constexpr std::array<double, kNumProtos> kNvlinkHopLatency = {1.6, 2.2, 2.9};
constexpr std::array<double, kNumProtos> kPciHopLatency = {2.7, 2.9, 4.9};
// A NET hop: both proxies and the socket network between them. Fitted to tree AllReduce of 8 B on
// 4 H200 emulating hosts over loopback (2 x 2: 36.1 us with LL, 52.8 with Simple; 4 x 1: 66.0 with
// LL), with the NVLink values for the hops inside hosts. LL saves the GPU's wait for the tail and
// the Simple kernel's step handshake; LL128 never crosses the network.
constexpr std::array<double, kNumProtos> kNetHopLatency = {15.0, 0, 21.0};

// Expansions the ring search may make over all levels but the last; the last (every pair allowed)
// never backtracks, so the search costs at most this plus nranks steps whatever the input.
constexpr int kSearchBudget = 1 << 16;

// The link as both ends will see it: the worse direction, so both ranks pick the same transport.
Link worseLink(const Link& a, const Link& b) {
  return Link{std::max(a.path, b.path), std::min(a.nvlinks, b.nvlinks), a.p2pOk && b.p2pOk, a.switched || b.switched,
              std::min(a.netGBps, b.netGBps)};
}

Link pairLink(const std::vector<Link>& links, int n, int i, int j) {
  return worseLink(links[i * n + j], links[j * n + i]);
}

TransportKind chooseTransport(const Link& link, const TopoParams& params) {
  if (link.path == PathType::kNet) return TransportKind::kNet;
  if (link.p2pOk && !params.p2pDisable && link.path <= params.p2pLevel) return TransportKind::kP2p;
  if (!params.shmDisable) return TransportKind::kShm;
  return TransportKind::kNone;
}

bool isNvlinkP2p(const Link& link, TransportKind kind) {
  return kind == TransportKind::kP2p && link.path == PathType::kNvl && link.nvlinks > 0;
}

// Order of preference of a hop (higher is better): NVLink P2P by lanes, then PCIe P2P, then SHM,
// nearer paths first within each, then the network.
int hopScore(const Link& link, TransportKind kind) {
  int nearness = static_cast<int>(PathType::kNet) - static_cast<int>(link.path);
  if (isNvlinkP2p(link, kind)) return 30000 + link.nvlinks;
  if (kind == TransportKind::kP2p) return 20000 + nearness;
  if (kind == TransportKind::kShm) return 10000 + nearness;
  if (kind == TransportKind::kNet) return 1000;
  return 0;
}

// `channels` within NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (or the config's CTA bounds).
int channelsWithin(int channels, const TopoParams& params) {
  const int maxChannels = std::clamp(params.maxChannels, 1, kMaxChannels);
  const int minChannels = std::clamp(params.minChannels, 1, maxChannels);
  return std::clamp(channels, minChannels, maxChannels);
}

double hopBandwidth(const Link& link, TransportKind kind) {
  if (kind == TransportKind::kNet) return link.netGBps > 0 ? link.netGBps : kDefaultNetGBps;
  if (isNvlinkP2p(link, kind)) return kNvlinkLaneBw * link.nvlinks;
  return link.path == PathType::kSys ? kInterSocketBw : kPciBw;
}

// Hosts among the ranks: classes of ranks joined by links that are not kNet.
int countNodes(int n, const std::vector<Link>& links) {
  std::vector<int> node(n, -1);
  int nodes = 0;
  for (int i = 0; i < n; ++i) {
    if (node[i] >= 0) continue;
    for (int j = i; j < n; ++j) {
      if (node[j] < 0 && (j == i || pairLink(links, n, i, j).path != PathType::kNet)) node[j] = nodes;
    }
    nodes++;
  }
  return nodes;
}

// Depth-first search for a Hamiltonian cycle from rank 0 using hops scored >= minScore, trying the
// best-scored next rank first (lowest index on ties). Gives up when `budget` (expansions, shared
// by successive calls) runs out.
class RingSearch {
 public:
  RingSearch(int n, const std::vector<int>& score) : n_(n), score_(score) {}

  bool find(int minScore, int* budget, std::vector<int>* ring) {
    minScore_ = minScore;
    budget_ = budget;
    ring_.assign(1, 0);
    used_.assign(n_, false);
    used_[0] = true;
    if (!extend()) return false;
    *ring = ring_;
    return true;
  }

 private:
  bool extend() {
    int cur = ring_.back();
    if (static_cast<int>(ring_.size()) == n_) return score_[cur * n_ + ring_[0]] >= minScore_;
    if (--*budget_ < 0) return false;
    std::vector<int> next;
    for (int j = 0; j < n_; ++j) {
      if (!used_[j] && score_[cur * n_ + j] >= minScore_) next.push_back(j);
    }
    std::stable_sort(next.begin(), next.end(),
                     [&](int a, int b) { return score_[cur * n_ + a] > score_[cur * n_ + b]; });
    for (int j : next) {
      used_[j] = true;
      ring_.push_back(j);
      if (extend()) return true;
      ring_.pop_back();
      used_[j] = false;
      if (*budget_ < 0) return false;
    }
    return false;
  }

  int n_;
  const std::vector<int>& score_;
  int minScore_ = 0;
  int* budget_ = nullptr;
  std::vector<int> ring_;
  std::vector<bool> used_;
};

// The ring whose worst hop is best (then with the best hops first along the way). Every pair has a
// transport, so the lowest level always succeeds at once; the identity ring is a last resort.
std::vector<int> bestRing(int n, const std::vector<int>& score) {
  std::vector<int> levels;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) levels.push_back(score[i * n + j]);
    }
  }
  std::sort(levels.begin(), levels.end(), std::greater<int>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  RingSearch search(n, score);
  std::vector<int> ring;
  int budget = kSearchBudget;
  for (size_t l = 0; l + 1 < levels.size() && budget > 0; ++l) {
    if (search.find(levels[l], &budget, &ring)) return ring;
  }
  int lastBudget = n + 1;
  if (!levels.empty() && search.find(levels.back(), &lastBudget, &ring)) return ring;
  ring.resize(n);
  for (int i = 0; i < n; ++i) ring[i] = i;
  return ring;
}

ncclResult_t checkTransports(const Topology& topo, const TopoParams& params) {
  int n = topo.nranks;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (topo.transport[i * n + j] != TransportKind::kNone) continue;
      Link link = pairLink(topo.links, n, i, j);
      WARN(
          "ranks %d and %d have no transport: P2P is %s (path %s, NVML P2P %s, NCCL_P2P_LEVEL %s) and SHM is "
          "disabled (NCCL_SHM_DISABLE=1); unset NCCL_SHM_DISABLE or allow P2P",
          i, j, params.p2pDisable ? "disabled (NCCL_P2P_DISABLE=1)" : "not possible", pathTypeName(link.path),
          link.p2pOk ? "ok" : "not supported", pathTypeName(params.p2pLevel));
      return ncclSystemError;
    }
  }
  return ncclSuccess;
}

// Every hop of the ring is NVLink P2P over lanes of its own (direct GPU-to-GPU, no NVSwitch).
bool ringHasDedicatedLinks(const std::vector<int>& ring, const Topology& topo) {
  const int n = topo.nranks;
  for (int k = 0; k < n; ++k) {
    const int from = ring[k];
    const int to = ring[(k + 1) % n];
    const Link link = pairLink(topo.links, n, from, to);
    if (!isNvlinkP2p(link, topo.transport[from * n + to]) || link.switched) return false;
  }
  return true;
}

// Channel count and model numbers from the base ring's hops.
void chooseChannels(const std::vector<int>& ring, const TopoParams& params, Topology* topo) {
  int n = topo->nranks;
  bool allNvlink = true;
  bool localNvlink = true;  // every hop inside a host
  bool anyNet = false;
  int minLanes = 0;
  double minBw = 0;
  for (int k = 0; k < n; ++k) {
    int from = ring[k];
    int to = ring[(k + 1) % n];
    Link link = pairLink(topo->links, n, from, to);
    TransportKind kind = topo->transport[from * n + to];
    double bw = hopBandwidth(link, kind);
    minBw = k == 0 ? bw : std::min(minBw, bw);
    if (isNvlinkP2p(link, kind)) {
      minLanes = k == 0 ? link.nvlinks : std::min(minLanes, link.nvlinks);
    } else {
      allNvlink = false;
      localNvlink = localNvlink && kind == TransportKind::kNet;
    }
    anyNet = anyNet || kind == TransportKind::kNet;
  }
  // NVLink: two channels per lane of the narrowest hop (NCCL duplicates its rings the same way),
  // capped by default; PCIe and SHM gain nothing from more than two.
  const int channels = allNvlink ? std::min(2 * minLanes, kDefaultMaxNvlChannels) : kDefaultPcieChannels;
  topo->nChannels = anyNet ? netChannelCount(params) : channelsWithin(channels, params);
  topo->ll128Ok = allNvlink;
  topo->llOk = !anyNet || params.netLl;
  // Every hop's bandwidth is its link's (NVLink lanes, a PCIe path, the network's devices), shared
  // by the channels.
  topo->bwPerChannelGBps = minBw / topo->nChannels;
  topo->hopLatencyUs = anyNet ? kNetHopLatency : allNvlink ? kNvlinkHopLatency : kPciHopLatency;
  topo->localHopLatencyUs = localNvlink ? kNvlinkHopLatency : kPciHopLatency;
}

// Every pair of ranks is P2P over NVLink.
bool allPairsNvlinkP2p(const Topology& topo) {
  const int n = topo.nranks;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && !isNvlinkP2p(pairLink(topo.links, n, i, j), topo.transport[i * n + j])) return false;
    }
  }
  return true;
}

// Direct channels where every pair is P2P over NVLink or crosses the network with LL allowed on it
// (see kNetDirectChannels), bounded like the rings' channels.
int directChannels(const Topology& topo, const TopoParams& params) {
  const int n = topo.nranks;
  if (n < 2 || n > kMaxDirectPeers + 1) return 0;
  bool anyNet = false;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const TransportKind kind = topo.transport[i * n + j];
      if (kind == TransportKind::kNet) {
        anyNet = true;
      } else if (!isNvlinkP2p(pairLink(topo.links, n, i, j), kind)) {
        return 0;
      }
    }
  }
  if (anyNet && !params.netLl) return 0;  // the direct kernels run LL only
  int channels = anyNet ? kNetDirectChannels : std::min(kMaxDirectChannels, kMaxDirectConnections / (n - 1));
  return std::clamp(channels, 1, std::clamp(params.maxChannels, 1, kMaxChannels));
}

}  // namespace

int netChannelCount(const TopoParams& params) { return channelsWithin(kDefaultNetChannels, params); }

TransportKind pairTransport(const Link& there, const Link& back, const TopoParams& params) {
  return chooseTransport(worseLink(there, back), params);
}

ncclResult_t buildTopology(int nranks, const std::vector<Link>& links, const TopoParams& params, Topology* out) {
  if (out == nullptr || nranks < 1 || links.size() != static_cast<size_t>(nranks) * nranks) {
    WARN("buildTopology: %d ranks need %d links, got %zu", nranks, nranks * nranks, links.size());
    return ncclInvalidArgument;
  }
  Topology topo;
  topo.nranks = nranks;
  topo.links = links;
  topo.transport.assign(links.size(), TransportKind::kNone);
  std::vector<int> score(links.size(), 0);
  for (int i = 0; i < nranks; ++i) {
    for (int j = 0; j < nranks; ++j) {
      if (i == j) continue;
      Link link = pairLink(links, nranks, i, j);
      topo.transport[i * nranks + j] = chooseTransport(link, params);
      score[i * nranks + j] = hopScore(link, topo.transport[i * nranks + j]);
    }
  }
  NCCLCHECK(checkTransports(topo, params));
  topo.nNodes = countNodes(nranks, links);
  if (nranks == 1) {
    topo.nChannels = 1;
    topo.rings.assign(1, std::vector<int>{0});
    topo.bwPerChannelGBps = kLocalBw;  // a copy inside one GPU; no hop, no latency
    *out = std::move(topo);
    return ncclSuccess;
  }
  std::vector<int> ring = bestRing(nranks, score);
  chooseChannels(ring, params, &topo);
  // Where every hop is a dedicated NVLink (no switch), odd channels run the ring backward: a rank
  // then sends over two links, and both directions of each link carry traffic. Elsewhere every
  // channel runs forward: through an NVSwitch or over PCIe a GPU's egress is one shared port, so
  // reversing gains nothing, and spreading each GPU's writes over two destinations measured 10-15%
  // slower on 4 H200 behind NVSwitch (NCCL's rings there run one way too). Reversal keeps the same
  // hops, so ll128Ok and the model numbers hold for both.
  std::vector<int> reversed(ring.rbegin(), ring.rend());
  std::rotate(reversed.begin(), reversed.end() - 1, reversed.end());  // start at the same rank
  const bool alternate = ringHasDedicatedLinks(ring, topo);
  for (int c = 0; c < topo.nChannels; ++c) topo.rings.push_back(alternate && c % 2 == 1 ? reversed : ring);
  topo.nDirectChannels = directChannels(topo, params);
  topo.allNvlinkP2p = allPairsNvlinkP2p(topo);
  buildTrees(&topo, params.singleHostTrees);
  *out = std::move(topo);
  return ncclSuccess;
}

}  // namespace braid::topo
