// What the machine is, for the GPUs of one communicator: the link between every pair of ranks, the
// transport each pair uses, and the rings (one per channel) that collectives run on.
//
// Flow at init (the launch/core code drives it):
//   1. every rank calls detectLinks for its own row (NVML, loaded with dlopen; never linked);
//   2. the rows are allgathered into one nranks*nranks vector;
//   3. every rank calls buildTopology on the same vector and gets the same Topology (pure and
//      deterministic: no environment, no clock, no NVML inside);
//   4. logConnections / dumpTopology report it (NCCL_DEBUG=INFO, NCCL_TOPO_DUMP_FILE).
// Nothing here calls CUDA; topo links braid_util only.
#pragma once

#include <nccl.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "device/dev_types.h"
#include "util/rank_place.h"

namespace braid::topo {

// How far apart two GPUs are, nearest first (NCCL's path names; C2C, P2C and PXN have no value of
// their own here, see parsePathType).
enum class PathType : int { kLoc = 0, kNvl = 1, kNvb = 2, kPix = 3, kPxb = 4, kPhb = 5, kSys = 6, kNet = 7 };

struct Link {
  PathType path;
  int nvlinks;            // NVLink lanes usable between the pair (direct or through NVSwitch); 0 without NVLink
  bool p2pOk;             // NVML reports P2P read and write OK for the pair
  bool switched = false;  // some of the lanes go through an NVSwitch (shared by all of the GPU's peers)
  // kNet: the network's bandwidth for all of the rank's network channels together, GB/s, from the
  // speed its devices report (getProperties); 0 when not known (then kDefaultNetGBps).
  float netGBps = 0;
};

enum class TransportKind : int { kNone = 0, kP2p = 1, kShm = 2, kNet = 3 };

struct TopoParams {
  bool p2pDisable;
  PathType p2pLevel;  // P2P is allowed for paths <= this
  bool shmDisable;
  int minChannels;  // 1 <= minChannels <= maxChannels <= kMaxChannels
  int maxChannels;
  bool netLl = false;  // BRAID_NET_LL: LL on rings with a NET hop
  // Trees on one host too (a chain of its GPUs): set when NCCL_ALGO leaves AllReduce nothing but
  // Tree, so that forcing Tree works there as in NCCL. Otherwise one host gets no trees, whose
  // connections the cost model would never pick over the rings and the direct algorithm.
  bool singleHostTrees = false;
};

// Reads NCCL_P2P_DISABLE, NCCL_P2P_LEVEL (names, case-insensitive, or NCCL's legacy integers 0-5; a
// bad value gets a WARN and the default PXB), NCCL_SHM_DISABLE, and the channel bounds: the config's
// minCTAs/maxCTAs (values < 1 mean "not given"), overridden by NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS
// when those are >= 1. Bounds are clamped to [1, kMaxChannels]; if min > max, max wins.
TopoParams topoParamsFromEnv(int configMinCtas, int configMaxCtas);

// Parses an NCCL_P2P_LEVEL value: LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS (C2C maps to NVB, P2C and
// PXN to PXB: each allows exactly the paths this enum can express below it), or a legacy integer
// 0-5 (LOC PIX PXB PHB SYS SYS). Returns false for anything else.
bool parsePathType(const std::string& text, PathType* out);
const char* pathTypeName(PathType path);        // "NVL", "PXB", ...
const char* transportName(TransportKind kind);  // "P2P", "SHM", "NET", "none"

// The row of links from ranks[self] to every rank, detected locally through NVML. Ranks with another
// hostHash are kNet; ranks[self] itself is kLoc. Without NVML (or when it fails): one INFO line and
// PHB with p2pOk=false for every same-host pair, so that SHM is used. Fails only on bad arguments.
[[nodiscard]] ncclResult_t detectLinks(const std::vector<RankPlace>& ranks, int self, std::vector<Link>* row);

// Defaults of the ring channel count. NVLink: 2 x nvlinks, capped at 32 (every channel Braid has):
// on 4 H200 (NV18 through NVSwitch) AllReduce bus bandwidth at 1 GiB was 298 / 307 / 332 GB/s with
// 16 / 24 / 32 channels, the CTAs' copy loop being the limit rather than NVLink.
constexpr int kDefaultMaxNvlChannels = 32;
constexpr int kDefaultPcieChannels = 2;  // P2P over PCIe and SHM rings
// Rings that cross hosts: each NET hop of a channel is one network connection per direction and
// its proxy traffic; the built-in socket network moves ~1-3 GB/s per connection over loopback, so
// a few channels fill what one proxy thread per rank can copy.
constexpr int kDefaultNetChannels = 4;
// The network's bandwidth for a rank's channels together when its links do not say (Link::netGBps).
constexpr double kDefaultNetGBps = 6.0;

// The ring channels of a communicator whose rings cross hosts: kDefaultNetChannels within
// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (or the config's CTA bounds).
int netChannelCount(const TopoParams& params);

// Channels of the direct algorithms (every rank connected to every other, see dev_types.h): where
// nranks <= kMaxDirectPeers + 1 and every pair of ranks is P2P over NVLink or (LL allowed on the
// network, BRAID_NET_LL) on different hosts. One transport call connects at most
// kMaxDirectConnections channels of one peer offset each, so 8 ranks get 9. Across hosts one
// channel: its one hop is what pays (a two-rank AllReduce crosses the network once instead of a
// ring's twice), and every channel would add a network connection per peer and direction that the
// proxy serves one after another.
constexpr int kMaxDirectConnections = 64;
constexpr int kNetDirectChannels = 1;

// A rank's place in one channel's tree (trees.cc): its parent (-1 at the root) and its children,
// the next GPU of its host's chain first, then the hosts below.
struct TreeLinks {
  int parent = -1;
  int nChildren = 0;
  std::array<int, kMaxTreeChildren> children{-1, -1, -1};
};

struct Topology {
  int nranks = 0;
  std::vector<Link> links;                             // nranks*nranks, [from * nranks + to], as gathered
  std::vector<TransportKind> transport;                // nranks*nranks, symmetric; kNone on the diagonal
  int nChannels = 0;                                   // rings built (each becomes one CTA of a collective)
  std::vector<std::vector<int>> rings;                 // nChannels rings, each a permutation of 0..nranks-1
  bool ll128Ok = false;                                // every hop of every ring is P2P over NVLink (false for 1 rank)
  bool llOk = true;                                    // no hop crosses the network, or BRAID_NET_LL lets LL cross it
  int nNodes = 1;                                      // hosts among the ranks (ranks linked by kNet are on others)
  int nDirectChannels = 0;                             // 0: no direct algorithms on this communicator
  bool allNvlinkP2p = false;                           // every pair is P2P over NVLink (zero-copy registration)
  double bwPerChannelGBps = 0;                         // model bandwidth of one channel
  std::array<double, kNumProtos> hopLatencyUs{};       // model latency of one ring hop, by ProtoId
  std::array<double, kNumProtos> localHopLatencyUs{};  // the same for the ring's hops inside a host
  // Trees (nNodes > 1 or singleHostTrees, else empty): trees[c][rank] for each of the nChannels
  // channels. The most NET edges and edges inside hosts on any path from a root down to a rank, over
  // every channel's tree.
  std::vector<std::vector<TreeLinks>> trees;
  int treeNetDepth = 0;
  int treeLocalDepth = 0;
};

// The channels' trees of a topology whose rings are built (called by buildTopology): the hosts in
// ring 0's order form a binary tree (heap order: host h's children are 2h+1 and 2h+2), even
// channels on it and odd channels on its mirror image (host h there is host nNodes-1-h), so that a
// host with children in one tree is a leaf in the other (NCCL's double binary tree). Inside a host
// the GPUs form a chain in ring order, rotated by channel pair so that the GPU that talks to the
// other hosts changes; the chain's first GPU is the host's link to its parent and child hosts.
// Nothing when nNodes < 2, unless `oneHostToo` (then one host's tree is its chain), or for one rank.
void buildTrees(Topology* topo, bool oneHostToo);

// Pure and deterministic: the same inputs on every rank give the same Topology. A pair's transport
// is decided on the worse of its two directions (path, nvlinks, p2pOk), so both ends agree: NET
// between hosts (path kNet), else P2P if p2pOk && !p2pDisable && path <= p2pLevel, else SHM
// (!shmDisable), else kNone. Rings cross between hosts as few times as the search finds (every
// hop within a host scores above every NET hop).
// ncclSystemError + WARN naming the pair when some pair (i != j) has kNone; ncclInvalidArgument for
// malformed input (nranks < 1, links of the wrong size).
[[nodiscard]] ncclResult_t buildTopology(int nranks, const std::vector<Link>& links, const TopoParams& params,
                                         Topology* out);

// The transport of one pair from its two directions (i->j as i detected it, j->i as j did), by the
// rule above; what buildTopology picks for that pair. Point-to-point connects use it pairwise.
TransportKind pairTransport(const Link& there, const Link& back, const TopoParams& params);

// Writes the topology to `path` as text (format below); ncclSystemError + WARN if it cannot.
//   # braid topology v1
//   nranks <n>
//   rank <r> dev <cudaDev> busid <dddd:bb:dd.f> host <hex> pid <hex>          (one per rank)
//   link <from> <to> path <NAME> nvlinks <k> p2p <0|1> transport <P2P|SHM|none>  (one per pair i != j)
//   channels <n> ll128 <0|1> bw_per_channel_gbps <x> hop_latency_us <ll> <ll128> <simple>
//   direct_channels <n>
//   ring <c> <r0> <r1> ...                                                    (one per channel)
//   tree <c> <parent of rank 0> <parent of rank 1> ...   (one per channel across hosts; -1: the root)
[[nodiscard]] ncclResult_t dumpTopology(const std::string& path, const std::vector<RankPlace>& ranks,
                                        const Topology& topo);

// INFO (INIT|P2P|SHM) lines for `rank`: one per channel, like
//   "Channel 03/16 : 1[2] -> 2[3] via P2P/NVLink(18)", and a summary line.
void logConnections(int rank, const std::vector<RankPlace>& ranks, const Topology& topo);

}  // namespace braid::topo
