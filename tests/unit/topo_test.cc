// Topology: parameters, transports, rings and channel counts from recorded link matrices, the dump
// file and log lines, and NVML detection against recorded machines (a fake NVML table) and without
// NVML at all.
#include "topo/topo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "topo/nvml_api.h"
#include "util/log.h"
#include "util/params.h"
#include "util_test_env.h"

namespace braid::topo {
namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// n ranks, every pair the same link; the diagonal is LOC.
std::vector<Link> uniformLinks(int n, PathType path, int nvlinks, bool p2pOk, bool switched = false) {
  std::vector<Link> links(n * n, Link{path, nvlinks, p2pOk, switched});
  for (int i = 0; i < n; ++i) links[i * n + i] = Link{PathType::kLoc, 0, true};
  return links;
}

void setPair(std::vector<Link>* links, int n, int i, int j, Link link) {
  (*links)[i * n + j] = link;
  (*links)[j * n + i] = link;
}

TopoParams defaultParams() { return TopoParams{false, PathType::kPxb, false, 1, kMaxChannels}; }

bool isPermutation(std::vector<int> ring, int n) {
  if (static_cast<int>(ring.size()) != n) return false;
  std::sort(ring.begin(), ring.end());
  for (int i = 0; i < n; ++i) {
    if (ring[i] != i) return false;
  }
  return true;
}

// Checks the invariants every topology keeps.
void expectWellFormed(const Topology& topo, const TopoParams& params) {
  int n = topo.nranks;
  ASSERT_EQ(topo.transport.size(), static_cast<size_t>(n * n));
  ASSERT_EQ(static_cast<int>(topo.rings.size()), topo.nChannels);
  EXPECT_GE(topo.nChannels, n == 1 ? 1 : params.minChannels);
  EXPECT_LE(topo.nChannels, n == 1 ? 1 : params.maxChannels);
  for (const auto& ring : topo.rings) EXPECT_TRUE(isPermutation(ring, n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(topo.transport[i * n + i], TransportKind::kNone);
    for (int j = 0; j < n; ++j) EXPECT_EQ(topo.transport[i * n + j], topo.transport[j * n + i]);
  }
  EXPECT_GT(topo.bwPerChannelGBps, 0);
}

std::vector<RankPlace> sameHostRanks(int n) {
  std::vector<RankPlace> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(RankPlace{r, r, (static_cast<int64_t>(0x07 + r * 0x10) << 12), 0x1234, 0x99 + uint64_t(r)});
  }
  return ranks;
}

class TopoTest : public testing::UtilEnvTest {
 protected:
  void setEnv(const char* name, const std::string& value) {
    setVar(name, value);
    paramsReset();
  }
};

TEST_F(TopoTest, NvSwitchFourGpus) {
  Topology topo;
  ASSERT_EQ(buildTopology(4, uniformLinks(4, PathType::kNvl, 18, true, /*switched=*/true), defaultParams(), &topo),
            ncclSuccess);
  expectWellFormed(topo, defaultParams());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      if (i != j) {
        EXPECT_EQ(topo.transport[i * 4 + j], TransportKind::kP2p);
      }
    }
  }
  EXPECT_EQ(topo.nChannels, kDefaultMaxNvlChannels);  // 2 x 18 lanes, capped
  EXPECT_EQ(topo.rings[0], (std::vector<int>{0, 1, 2, 3}));
  for (int c = 1; c < topo.nChannels; ++c) EXPECT_EQ(topo.rings[c], topo.rings[0]) << c;  // one way behind a switch
  EXPECT_TRUE(topo.ll128Ok);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 18 * 20.6 / kDefaultMaxNvlChannels);
  EXPECT_DOUBLE_EQ(topo.hopLatencyUs[kProtoSimple], 2.9);
  EXPECT_DOUBLE_EQ(topo.hopLatencyUs[kProtoLL], 1.6);
  EXPECT_DOUBLE_EQ(topo.hopLatencyUs[kProtoLL128], 2.2);
  EXPECT_EQ(topo.nDirectChannels, kMaxDirectChannels);  // every pair NVLink P2P
}

TEST_F(TopoTest, NvSwitchEightGpusAndChannelBounds) {
  std::vector<Link> links = uniformLinks(8, PathType::kNvl, 18, true);
  Topology topo;
  TopoParams params = defaultParams();
  ASSERT_EQ(buildTopology(8, links, params, &topo), ncclSuccess);
  expectWellFormed(topo, params);
  EXPECT_EQ(topo.nChannels, kDefaultMaxNvlChannels);
  EXPECT_TRUE(topo.ll128Ok);
  EXPECT_EQ(topo.nDirectChannels, kMaxDirectConnections / 7);  // 7 peers per direct channel
  params.maxChannels = 8;
  ASSERT_EQ(buildTopology(8, links, params, &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 8);
  EXPECT_EQ(topo.nDirectChannels, 8);
  expectWellFormed(topo, params);
  params.maxChannels = kMaxChannels;
  params.minChannels = 1;
  params.maxChannels = 4;
  ASSERT_EQ(buildTopology(8, links, params, &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 4);
  EXPECT_EQ(topo.nDirectChannels, 4);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 18 * 20.6 / 4);
  // Nine ranks are more than the direct algorithms connect.
  ASSERT_EQ(buildTopology(9, uniformLinks(9, PathType::kNvl, 18, true), defaultParams(), &topo), ncclSuccess);
  EXPECT_EQ(topo.nDirectChannels, 0);
  // Few lanes: two channels per lane.
  ASSERT_EQ(buildTopology(8, uniformLinks(8, PathType::kNvl, 2, true), defaultParams(), &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 4);
}

TEST_F(TopoTest, TwoGpusPcie) {
  Topology topo;
  ASSERT_EQ(buildTopology(2, uniformLinks(2, PathType::kPxb, 0, true), defaultParams(), &topo), ncclSuccess);
  expectWellFormed(topo, defaultParams());
  EXPECT_EQ(topo.transport[1], TransportKind::kP2p);
  EXPECT_EQ(topo.nChannels, kDefaultPcieChannels);
  EXPECT_FALSE(topo.ll128Ok);
  EXPECT_EQ(topo.nDirectChannels, 0);  // direct algorithms only over NVLink
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 12.0 / 2);
  EXPECT_DOUBLE_EQ(topo.hopLatencyUs[kProtoSimple], 4.9);

  ASSERT_EQ(buildTopology(2, uniformLinks(2, PathType::kSys, 0, false), defaultParams(), &topo), ncclSuccess);
  EXPECT_EQ(topo.transport[1], TransportKind::kShm);
  EXPECT_EQ(topo.nChannels, 2);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 10.0 / 2);

  // P2P-capable but beyond the default level (PXB): SHM; with NCCL_P2P_LEVEL=SYS: P2P.
  std::vector<Link> sys = uniformLinks(2, PathType::kSys, 0, true);
  ASSERT_EQ(buildTopology(2, sys, defaultParams(), &topo), ncclSuccess);
  EXPECT_EQ(topo.transport[1], TransportKind::kShm);
  TopoParams params = defaultParams();
  params.p2pLevel = PathType::kSys;
  ASSERT_EQ(buildTopology(2, sys, params, &topo), ncclSuccess);
  EXPECT_EQ(topo.transport[1], TransportKind::kP2p);
}

// Hybrid cube: 0-1, 1-3, 3-2, 2-0 are NVLink; the diagonals 0-3 and 1-2 are SYS without P2P. The
// identity ring would cross a diagonal; the best ring avoids both.
std::vector<Link> hybridLinks() {
  std::vector<Link> links = uniformLinks(4, PathType::kSys, 0, false);
  setPair(&links, 4, 0, 1, Link{PathType::kNvl, 2, true});
  setPair(&links, 4, 1, 3, Link{PathType::kNvl, 1, true});
  setPair(&links, 4, 3, 2, Link{PathType::kNvl, 2, true});
  setPair(&links, 4, 2, 0, Link{PathType::kNvl, 2, true});
  return links;
}

TEST_F(TopoTest, MixedRingAvoidsSlowPairs) {
  Topology topo;
  ASSERT_EQ(buildTopology(4, hybridLinks(), defaultParams(), &topo), ncclSuccess);
  expectWellFormed(topo, defaultParams());
  EXPECT_EQ(topo.transport[0 * 4 + 3], TransportKind::kShm);
  EXPECT_EQ(topo.transport[1 * 4 + 2], TransportKind::kShm);
  EXPECT_EQ(topo.rings[0], (std::vector<int>{0, 1, 3, 2}));
  EXPECT_EQ(topo.rings[1], (std::vector<int>{0, 2, 3, 1}));  // dedicated links: odd channels run backward
  EXPECT_TRUE(topo.ll128Ok);
  EXPECT_EQ(topo.nChannels, 2);        // 2 x the narrowest hop (1-3, one lane)
  EXPECT_EQ(topo.nDirectChannels, 0);  // the diagonals are not NVLink
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 20.6 / 2);
}

TEST_F(TopoTest, MixedNvlinkIslandsOverPcie) {
  // 0-1 and 2-3 NVLink, everything else PXB with P2P: no all-NVLink ring exists, the ring still
  // takes both NVLink hops, and LL128 is off.
  std::vector<Link> links = uniformLinks(4, PathType::kPxb, 0, true);
  setPair(&links, 4, 0, 1, Link{PathType::kNvl, 4, true});
  setPair(&links, 4, 2, 3, Link{PathType::kNvl, 4, true});
  Topology topo;
  ASSERT_EQ(buildTopology(4, links, defaultParams(), &topo), ncclSuccess);
  expectWellFormed(topo, defaultParams());
  EXPECT_EQ(topo.rings[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(topo.ll128Ok);
  EXPECT_EQ(topo.nChannels, kDefaultPcieChannels);
  EXPECT_DOUBLE_EQ(topo.hopLatencyUs[kProtoSimple], 4.9);
}

TEST_F(TopoTest, AsymmetricRowsAgreeOnTheWorseDirection) {
  std::vector<Link> links = uniformLinks(2, PathType::kNvl, 18, true);
  links[1 * 2 + 0].p2pOk = false;  // rank 1's NVML says no
  Topology topo;
  ASSERT_EQ(buildTopology(2, links, defaultParams(), &topo), ncclSuccess);
  EXPECT_EQ(topo.transport[0 * 2 + 1], TransportKind::kShm);
  EXPECT_EQ(topo.transport[1 * 2 + 0], TransportKind::kShm);
  EXPECT_FALSE(topo.ll128Ok);
}

TEST_F(TopoTest, P2pDisableGivesShmEverywhere) {
  setEnv("NCCL_P2P_DISABLE", "1");
  TopoParams params = topoParamsFromEnv(1, 64);
  EXPECT_TRUE(params.p2pDisable);
  Topology topo;
  ASSERT_EQ(buildTopology(4, uniformLinks(4, PathType::kNvl, 18, true), params, &topo), ncclSuccess);
  expectWellFormed(topo, params);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      if (i != j) {
        EXPECT_EQ(topo.transport[i * 4 + j], TransportKind::kShm);
      }
    }
  }
  EXPECT_FALSE(topo.ll128Ok);
  EXPECT_EQ(topo.nChannels, kDefaultPcieChannels);
}

TEST_F(TopoTest, P2pLevelNvlExcludesPcie) {
  setEnv("NCCL_P2P_LEVEL", "NVL");
  TopoParams params = topoParamsFromEnv(1, 64);
  EXPECT_EQ(params.p2pLevel, PathType::kNvl);
  std::vector<Link> links = uniformLinks(4, PathType::kPix, 0, true);
  setPair(&links, 4, 0, 1, Link{PathType::kNvl, 4, true});
  Topology topo;
  ASSERT_EQ(buildTopology(4, links, params, &topo), ncclSuccess);
  EXPECT_EQ(topo.transport[0 * 4 + 1], TransportKind::kP2p);
  EXPECT_EQ(topo.transport[0 * 4 + 2], TransportKind::kShm);
  EXPECT_EQ(topo.transport[2 * 4 + 3], TransportKind::kShm);
}

TEST_F(TopoTest, P2pLevelParsing) {
  struct Case {
    const char* text;
    PathType path;
  };
  const Case cases[] = {
      {"LOC", PathType::kLoc}, {"nvl", PathType::kNvl}, {"NVB", PathType::kNvb}, {"C2C", PathType::kNvb},
      {"PIX", PathType::kPix}, {"PXB", PathType::kPxb}, {"P2C", PathType::kPxb}, {"PXN", PathType::kPxb},
      {"Phb", PathType::kPhb}, {"SYS", PathType::kSys}, {"0", PathType::kLoc},   {"1", PathType::kPix},
      {"2", PathType::kPxb},   {"3", PathType::kPhb},   {"4", PathType::kSys},   {"5", PathType::kSys}};
  for (const Case& c : cases) {
    PathType path = PathType::kNet;
    EXPECT_TRUE(parsePathType(c.text, &path)) << c.text;
    EXPECT_EQ(path, c.path) << c.text;
  }
  for (const char* bad : {"", "6", "-1", "NET", "PXQ", "2x", "12"}) {
    PathType path = PathType::kNet;
    EXPECT_FALSE(parsePathType(bad, &path)) << bad;
  }
  EXPECT_EQ(topoParamsFromEnv(1, 64).p2pLevel, PathType::kPxb);  // unset: default
  setEnv("NCCL_P2P_LEVEL", "3");
  EXPECT_EQ(topoParamsFromEnv(1, 64).p2pLevel, PathType::kPhb);
  setEnv("NCCL_P2P_LEVEL", "NVLINK");
  EXPECT_EQ(topoParamsFromEnv(1, 64).p2pLevel, PathType::kPxb);
  EXPECT_TRUE(contains(logLastError(), "NCCL_P2P_LEVEL=NVLINK")) << logLastError();
}

TEST_F(TopoTest, ShmAndP2pDisabledIsAnErrorNamingThePair) {
  setEnv("NCCL_P2P_DISABLE", "1");
  setEnv("NCCL_SHM_DISABLE", "1");
  TopoParams params = topoParamsFromEnv(1, 64);
  EXPECT_TRUE(params.shmDisable);
  Topology topo;
  EXPECT_EQ(buildTopology(2, uniformLinks(2, PathType::kNvl, 18, true), params, &topo), ncclSystemError);
  EXPECT_TRUE(contains(logLastError(), "ranks 0 and 1")) << logLastError();
  EXPECT_TRUE(contains(logLastError(), "NCCL_P2P_DISABLE")) << logLastError();

  // Only SHM disabled: the hybrid cube's diagonals have no transport; the first is named.
  params = defaultParams();
  params.shmDisable = true;
  EXPECT_EQ(buildTopology(4, hybridLinks(), params, &topo), ncclSystemError);
  EXPECT_TRUE(contains(logLastError(), "ranks 0 and 3")) << logLastError();
  EXPECT_TRUE(contains(logLastError(), "NCCL_SHM_DISABLE")) << logLastError();

  // One rank needs no transport at all.
  ASSERT_EQ(buildTopology(1, uniformLinks(1, PathType::kLoc, 0, true), params, &topo), ncclSuccess);
}

// Hosts of `perNode` NVLink-connected GPUs each (ranks numbered node by node, the way NCCL_HOSTID
// emulation lays them out), every pair across hosts kNet.
std::vector<Link> nodesOfNvlink(int nodes, int perNode) {
  const int n = nodes * perNode;
  std::vector<Link> links = uniformLinks(n, PathType::kNet, 0, false);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && i / perNode == j / perNode) links[i * n + j] = Link{PathType::kNvl, 18, true, true};
    }
  }
  return links;
}

// The hops of a ring that cross the network.
int netHops(const Topology& topo, const std::vector<int>& ring) {
  const int n = topo.nranks;
  int hops = 0;
  for (int k = 0; k < n; ++k) hops += topo.transport[ring[k] * n + ring[(k + 1) % n]] == TransportKind::kNet ? 1 : 0;
  return hops;
}

// The NET hops' bandwidth is the network's (Link::netGBps, from its devices' speeds), shared by
// the channels; the slower end of each pair counts, so every rank models the same; unknown (0):
// kDefaultNetGBps.
TEST_F(TopoTest, TheNetworkSpeedSetsTheBandwidthOfRingsAcrossHosts) {
  const TopoParams params = defaultParams();
  auto withNetSpeed = [](std::vector<Link> links, int n, float gbps, int slowRank, float slowGbps) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (links[i * n + j].path == PathType::kNet) links[i * n + j].netGBps = i == slowRank ? slowGbps : gbps;
      }
    }
    return links;
  };
  Topology topo;
  ASSERT_EQ(buildTopology(4, nodesOfNvlink(2, 2), params, &topo), ncclSuccess);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, kDefaultNetGBps / kDefaultNetChannels);
  ASSERT_EQ(buildTopology(4, withNetSpeed(nodesOfNvlink(2, 2), 4, 50, -1, 0), params, &topo), ncclSuccess);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 50.0 / kDefaultNetChannels);
  ASSERT_EQ(buildTopology(4, withNetSpeed(nodesOfNvlink(4, 1), 4, 50, 2, 12.5), params, &topo), ncclSuccess);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 12.5 / kDefaultNetChannels);
  // Fewer channels share the same network: each gets more.
  TopoParams two = params;
  two.maxChannels = 2;
  ASSERT_EQ(buildTopology(4, withNetSpeed(nodesOfNvlink(2, 2), 4, 50, -1, 0), two, &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 2);
  EXPECT_EQ(netChannelCount(two), 2);
  EXPECT_DOUBLE_EQ(topo.bwPerChannelGBps, 25.0);
  // A network faster than NVLink leaves the NVLink hops the limit.
  ASSERT_EQ(buildTopology(4, withNetSpeed(nodesOfNvlink(2, 2), 4, 1000, -1, 0), params, &topo), ncclSuccess);
  EXPECT_LT(topo.bwPerChannelGBps, 1000.0 / kDefaultNetChannels);
}

TEST_F(TopoTest, HostsAreJoinedByTheNetworkAndRingsCrossThemOnce) {
  const TopoParams params = defaultParams();
  for (int nodes : {2, 4}) {
    const int perNode = 4 / nodes;
    Topology topo;
    ASSERT_EQ(buildTopology(4, nodesOfNvlink(nodes, perNode), params, &topo), ncclSuccess);
    expectWellFormed(topo, params);
    EXPECT_EQ(topo.nNodes, nodes);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        if (i == j) continue;
        EXPECT_EQ(topo.transport[i * 4 + j], i / perNode == j / perNode ? TransportKind::kP2p : TransportKind::kNet)
            << i << "->" << j;
      }
    }
    // Each host is entered and left once per ring: as many NET hops as hosts.
    for (const auto& ring : topo.rings) EXPECT_EQ(netHops(topo, ring), nodes);
    EXPECT_EQ(topo.nChannels, kDefaultNetChannels);
    EXPECT_FALSE(topo.llOk);
    EXPECT_FALSE(topo.ll128Ok);
    EXPECT_EQ(topo.nDirectChannels, 0);  // the direct kernels run LL, off on the network here
    EXPECT_FALSE(topo.allNvlinkP2p);
    EXPECT_GT(topo.bwPerChannelGBps, 0);
  }
  // Scattered numbering (hosts {0,2} and {1,3}): the search still crosses only twice.
  std::vector<Link> links = uniformLinks(4, PathType::kNet, 0, false);
  setPair(&links, 4, 0, 2, Link{PathType::kNvl, 18, true, true});
  setPair(&links, 4, 1, 3, Link{PathType::kNvl, 18, true, true});
  Topology topo;
  ASSERT_EQ(buildTopology(4, links, params, &topo), ncclSuccess);
  EXPECT_EQ(topo.nNodes, 2);
  for (const auto& ring : topo.rings) EXPECT_EQ(netHops(topo, ring), 2);
  // One host: no NET, LL allowed.
  ASSERT_EQ(buildTopology(4, nodesOfNvlink(1, 4), params, &topo), ncclSuccess);
  EXPECT_EQ(topo.nNodes, 1);
  EXPECT_TRUE(topo.llOk);
  EXPECT_TRUE(topo.allNvlinkP2p);
}

// Across hosts with LL on the network, the direct algorithms connect every pair on one channel:
// NVLink P2P inside a host, the network between hosts. A pair inside a host that is not NVLink
// still rules them out.
TEST_F(TopoTest, DirectChannelsCrossHostsOnOneChannelWhenLlMayCrossTheNetwork) {
  TopoParams params = defaultParams();
  params.netLl = true;
  for (int nodes : {2, 4}) {
    Topology topo;
    ASSERT_EQ(buildTopology(4, nodesOfNvlink(nodes, 4 / nodes), params, &topo), ncclSuccess);
    EXPECT_TRUE(topo.llOk);
    EXPECT_EQ(topo.nDirectChannels, kNetDirectChannels) << nodes << " hosts";
    EXPECT_FALSE(topo.allNvlinkP2p);  // zero-copy registration stays on one host
  }
  Topology two;
  ASSERT_EQ(buildTopology(2, nodesOfNvlink(2, 1), params, &two), ncclSuccess);
  EXPECT_EQ(two.nDirectChannels, kNetDirectChannels);
  std::vector<Link> links = nodesOfNvlink(2, 2);
  setPair(&links, 4, 0, 1, Link{PathType::kPxb, 0, true, false});
  Topology pcie;
  ASSERT_EQ(buildTopology(4, links, params, &pcie), ncclSuccess);
  EXPECT_EQ(pcie.nDirectChannels, 0);
}

// Every channel's tree spans every rank once with one root, each rank is its children's parent,
// edges inside a host follow the host's chain and at most one edge per rank goes up across hosts;
// with two or more hosts, no host has host children in both trees of a channel pair.
void expectTreesWellFormed(const Topology& topo, int nodes, int perNode) {
  const int n = topo.nranks;
  ASSERT_EQ(static_cast<int>(topo.trees.size()), topo.nChannels);
  std::vector<std::vector<bool>> hostHasHostChild(2, std::vector<bool>(nodes, false));
  for (size_t c = 0; c < topo.trees.size(); ++c) {
    const std::vector<TreeLinks>& tree = topo.trees[c];
    ASSERT_EQ(static_cast<int>(tree.size()), n);
    int roots = 0;
    for (int r = 0; r < n; ++r) {
      const TreeLinks& t = tree[r];
      roots += t.parent < 0 ? 1 : 0;
      EXPECT_LE(t.nChildren, kMaxTreeChildren);
      for (int k = 0; k < t.nChildren; ++k) {
        const int child = t.children[k];
        ASSERT_GE(child, 0);
        EXPECT_EQ(tree[child].parent, r) << "channel " << c << " rank " << r;
        const bool sameHost = child / perNode == r / perNode;
        EXPECT_EQ(sameHost, k == 0 && perNode > 1 && sameHost) << "the chain child comes first";
        if (!sameHost) hostHasHostChild[c % 2][r / perNode] = true;
      }
      // Walking up ends at the root within n steps (no cycle).
      int steps = 0;
      for (int x = r; tree[x].parent >= 0 && steps <= n; x = tree[x].parent) steps++;
      EXPECT_LE(steps, n - 1);
    }
    EXPECT_EQ(roots, 1) << "channel " << c;
  }
  for (int h = 0; h < nodes; ++h) {
    EXPECT_FALSE(hostHasHostChild[0][h] && hostHasHostChild[1][h]) << "host " << h << " is inner in both trees";
  }
}

TEST_F(TopoTest, TreesAcrossHostsAreChainsUnderADoubleBinaryTree) {
  const TopoParams params = defaultParams();
  for (auto [nodes, perNode] : {std::pair{2, 2}, std::pair{4, 1}, std::pair{5, 3}, std::pair{8, 2}, std::pair{3, 1}}) {
    SCOPED_TRACE(std::to_string(nodes) + " hosts of " + std::to_string(perNode));
    Topology topo;
    ASSERT_EQ(buildTopology(nodes * perNode, nodesOfNvlink(nodes, perNode), params, &topo), ncclSuccess);
    expectTreesWellFormed(topo, nodes, perNode);
    int levels = 0;
    while ((2 << levels) - 1 < nodes) levels++;  // a heap of `nodes` hosts is levels + 1 deep
    EXPECT_EQ(topo.treeNetDepth, levels);
    EXPECT_EQ(topo.treeLocalDepth, perNode - 1);
  }
  // 4 hosts of one GPU, channel 0: host 0 on top of 1 and 2, 3 under 1; channel 1 mirrored.
  Topology topo;
  ASSERT_EQ(buildTopology(4, nodesOfNvlink(4, 1), params, &topo), ncclSuccess);
  EXPECT_EQ(topo.trees[0][0].parent, -1);
  EXPECT_EQ(topo.trees[0][3].parent, 1);
  EXPECT_EQ(topo.trees[1][3].parent, -1);
  EXPECT_EQ(topo.trees[1][0].parent, 2);
  // One host: no trees, unless NCCL_ALGO forces Tree (singleHostTrees): then the host's chain.
  ASSERT_EQ(buildTopology(4, nodesOfNvlink(1, 4), params, &topo), ncclSuccess);
  EXPECT_TRUE(topo.trees.empty());
  TopoParams forced = params;
  forced.singleHostTrees = true;
  ASSERT_EQ(buildTopology(4, nodesOfNvlink(1, 4), forced, &topo), ncclSuccess);
  expectTreesWellFormed(topo, 1, 4);
  EXPECT_EQ(topo.treeNetDepth, 0);
  EXPECT_EQ(topo.treeLocalDepth, 3);
  ASSERT_EQ(buildTopology(1, nodesOfNvlink(1, 1), forced, &topo), ncclSuccess);
  EXPECT_TRUE(topo.trees.empty());  // one rank has nothing to reduce with
}

TEST_F(TopoTest, LlCrossesHostsOnlyWithBraidNetLl) {
  TopoParams params = defaultParams();
  params.netLl = true;
  Topology topo;
  ASSERT_EQ(buildTopology(4, nodesOfNvlink(2, 2), params, &topo), ncclSuccess);
  EXPECT_TRUE(topo.llOk);
  EXPECT_FALSE(topo.ll128Ok);
  // Cheaper than Simple per hop, so small operations take it.
  EXPECT_GT(topo.hopLatencyUs[kProtoLL], 0.0);
  EXPECT_LT(topo.hopLatencyUs[kProtoLL], topo.hopLatencyUs[kProtoSimple]);
  setenv("BRAID_NET_LL", "0", 1);
  paramsReset();
  EXPECT_FALSE(topoParamsFromEnv(1, 64).netLl);
  unsetenv("BRAID_NET_LL");
  paramsReset();
  EXPECT_TRUE(topoParamsFromEnv(1, 64).netLl);  // on by default
}

TEST_F(TopoTest, ChannelBoundsFromConfigAndEnvironment) {
  TopoParams params = topoParamsFromEnv(1, 64);  // ncclConfig_t defaults
  EXPECT_EQ(params.minChannels, 1);
  EXPECT_EQ(params.maxChannels, kMaxChannels);
  params = topoParamsFromEnv(0, 0);  // undefined
  EXPECT_EQ(params.minChannels, 1);
  EXPECT_EQ(params.maxChannels, kMaxChannels);
  params = topoParamsFromEnv(4, 8);
  EXPECT_EQ(params.minChannels, 4);
  EXPECT_EQ(params.maxChannels, 8);
  setEnv("NCCL_MIN_NCHANNELS", "6");
  setEnv("NCCL_MAX_NCHANNELS", "100");
  params = topoParamsFromEnv(4, 8);
  EXPECT_EQ(params.minChannels, 6);
  EXPECT_EQ(params.maxChannels, kMaxChannels);
  setEnv("NCCL_MIN_NCHANNELS", "12");
  setEnv("NCCL_MAX_NCHANNELS", "3");
  params = topoParamsFromEnv(1, 64);
  EXPECT_EQ(params.minChannels, 3);  // max wins
  EXPECT_EQ(params.maxChannels, 3);
  setEnv("NCCL_MIN_NCHANNELS", "-1");
  setEnv("NCCL_MAX_NCHANNELS", "0");
  params = topoParamsFromEnv(2, 5);
  EXPECT_EQ(params.minChannels, 2);
  EXPECT_EQ(params.maxChannels, 5);
  EXPECT_TRUE(contains(logLastError(), "NCCL_MAX_NCHANNELS=0")) << logLastError();

  // A high minimum is honoured. PCIe rings all run forward; direct NVLink rings alternate.
  params.minChannels = 8;
  params.maxChannels = 8;
  Topology topo;
  ASSERT_EQ(buildTopology(3, uniformLinks(3, PathType::kPxb, 0, true), params, &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 8);
  EXPECT_EQ(topo.rings[7], (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(buildTopology(3, uniformLinks(3, PathType::kNvl, 2, true), params, &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 8);
  EXPECT_EQ(topo.rings[6], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(topo.rings[7], (std::vector<int>{0, 2, 1}));
}

TEST_F(TopoTest, SingleRank) {
  Topology topo;
  ASSERT_EQ(buildTopology(1, uniformLinks(1, PathType::kLoc, 0, true), defaultParams(), &topo), ncclSuccess);
  EXPECT_EQ(topo.nChannels, 1);
  EXPECT_EQ(topo.rings, (std::vector<std::vector<int>>{{0}}));
  EXPECT_FALSE(topo.ll128Ok);
}

TEST_F(TopoTest, MalformedInput) {
  Topology topo;
  EXPECT_EQ(buildTopology(3, uniformLinks(2, PathType::kNvl, 1, true), defaultParams(), &topo), ncclInvalidArgument);
  EXPECT_EQ(buildTopology(0, {}, defaultParams(), &topo), ncclInvalidArgument);
  EXPECT_EQ(buildTopology(1, uniformLinks(1, PathType::kLoc, 0, true), defaultParams(), nullptr), ncclInvalidArgument);
}

// Random link matrices: every topology is well formed, and building twice gives the same result.
TEST_F(TopoTest, RandomFixturesAreDeterministicPermutations) {
  std::mt19937 rng(1234);
  const PathType paths[] = {PathType::kNvl, PathType::kPix, PathType::kPxb, PathType::kPhb, PathType::kSys};
  for (int iter = 0; iter < 200; ++iter) {
    // Mostly small; a few of NCCL's maximum local ranks (72) bound the search's cost.
    int n = iter % 50 == 49 ? 72 : 2 + static_cast<int>(rng() % 15);
    std::vector<Link> links = uniformLinks(n, PathType::kSys, 0, false);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        PathType path = paths[rng() % 5];
        links[i * n + j] = Link{path, path == PathType::kNvl ? 1 + static_cast<int>(rng() % 18) : 0, rng() % 4 != 0};
      }
    }
    TopoParams params = defaultParams();
    params.minChannels = 1 + static_cast<int>(rng() % 4);
    params.maxChannels = params.minChannels + static_cast<int>(rng() % 20);
    Topology a;
    Topology b;
    ASSERT_EQ(buildTopology(n, links, params, &a), ncclSuccess);
    ASSERT_EQ(buildTopology(n, links, params, &b), ncclSuccess);
    expectWellFormed(a, params);
    EXPECT_EQ(a.rings, b.rings);
    EXPECT_EQ(a.transport, b.transport);
    EXPECT_EQ(a.nChannels, b.nChannels);
    EXPECT_EQ(a.ll128Ok, b.ll128Ok);
    EXPECT_EQ(a.nDirectChannels, b.nDirectChannels);
    EXPECT_DOUBLE_EQ(a.bwPerChannelGBps, b.bwPerChannelGBps);
  }
}

TEST_F(TopoTest, DumpFile) {
  std::vector<RankPlace> ranks = sameHostRanks(2);
  Topology topo;
  ASSERT_EQ(buildTopology(2, uniformLinks(2, PathType::kNvl, 18, true), defaultParams(), &topo), ncclSuccess);
  std::string path = dir() + "/topo.txt";
  ASSERT_EQ(dumpTopology(path, ranks, topo), ncclSuccess);
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 2u + 2u + 2u + 2u + kDefaultMaxNvlChannels);
  EXPECT_EQ(lines[0], "# braid topology v1");
  EXPECT_EQ(lines[1], "nranks 2");
  EXPECT_EQ(lines[2], "rank 0 dev 0 busid 0000:07:00.0 host 0000000000001234 pid 0000000000000099");
  EXPECT_EQ(lines[3], "rank 1 dev 1 busid 0000:17:00.0 host 0000000000001234 pid 000000000000009a");
  EXPECT_EQ(lines[4], "link 0 1 path NVL nvlinks 18 switched 0 p2p 1 transport P2P");
  EXPECT_EQ(lines[5], "link 1 0 path NVL nvlinks 18 switched 0 p2p 1 transport P2P");
  char channels[128];
  std::snprintf(channels, sizeof(channels),
                "channels %d ll128 1 bw_per_channel_gbps %.3f hop_latency_us 1.60 2.20 2.90", kDefaultMaxNvlChannels,
                18 * 20.6 / kDefaultMaxNvlChannels);
  EXPECT_EQ(lines[6], channels);
  EXPECT_EQ(lines[7], "direct_channels " + std::to_string(kMaxDirectChannels));
  EXPECT_EQ(lines[8], "ring 0 0 1");
  EXPECT_EQ(lines.back(), "ring " + std::to_string(kDefaultMaxNvlChannels - 1) + " 0 1");

  EXPECT_EQ(dumpTopology(dir() + "/no/such/dir/topo.txt", ranks, topo), ncclSystemError);
  EXPECT_TRUE(contains(logLastError(), "no/such/dir/topo.txt")) << logLastError();
}

TEST_F(TopoTest, LogConnections) {
  std::string log = logToFile("INFO", "INIT,P2P");
  std::vector<RankPlace> ranks = sameHostRanks(4);
  ranks[2].cudaDev = 5;
  Topology topo;
  ASSERT_EQ(buildTopology(4, uniformLinks(4, PathType::kNvl, 18, true), defaultParams(), &topo), ncclSuccess);
  logConnections(1, ranks, topo);
  ASSERT_EQ(buildTopology(2, uniformLinks(2, PathType::kPhb, 0, false), defaultParams(), &topo), ncclSuccess);
  logToFile("INFO", "INIT,SHM", "log2.txt");
  logConnections(0, sameHostRanks(2), topo);
  logReset();
  std::string text = readFile(log);
  EXPECT_TRUE(contains(text, "Channel 00/32 : 1[1] -> 2[5] via P2P/NVLink(18)")) << text;
  EXPECT_TRUE(contains(text, "Channel 01/32 : 1[1] -> 0[0] via P2P/NVLink(18)")) << text;  // direct links alternate
  EXPECT_TRUE(contains(text, "Channel 31/32 : 1[1] -> 0[0]")) << text;
  EXPECT_TRUE(contains(text, "rank 1: 32 coll channels, 16 direct channels, LL128 on")) << text;
  std::string shm = readFile(dir() + "/log2.txt");
  EXPECT_TRUE(contains(shm, "Channel 00/02 : 0[0] -> 1[1] via SHM(PHB)")) << shm;
}

// ---- NVML detection against recorded machines --------------------------------------------------

struct FakeLink {
  int type;           // kNvmlNvlinkDeviceGpu or kNvmlNvlinkDeviceSwitch
  int64_t remoteBus;  // packed bus id of the far end
};

struct FakeGpu {
  int64_t busId;
  std::vector<FakeLink> links;
};

// One recorded machine; the fake NVML functions below read it.
struct FakeMachine {
  std::vector<FakeGpu> gpus;
  int ancestor = kNvmlTopologyMultiple;
  bool p2pOk = true;
  int noP2pGpu = -1;  // a GPU that can do P2P with nobody
};
FakeMachine* gFake = nullptr;

int fakeIndex(NvmlDevice dev) { return static_cast<int>(reinterpret_cast<uintptr_t>(dev)) - 1; }

NvmlReturn fakeInit() { return kNvmlSuccess; }
const char* fakeErrorString(NvmlReturn) { return "Not Found (fake)"; }
NvmlReturn fakeByBusId(const char* busId, NvmlDevice* dev) {
  int64_t id = busIdParse(busId);
  for (size_t g = 0; g < gFake->gpus.size(); ++g) {
    if (gFake->gpus[g].busId == id) {
      *dev = reinterpret_cast<NvmlDevice>(static_cast<uintptr_t>(g + 1));
      return kNvmlSuccess;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}
NvmlReturn fakeNvlinkState(NvmlDevice dev, unsigned link, int* active) {
  if (link >= gFake->gpus[fakeIndex(dev)].links.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = kNvmlFeatureEnabled;
  return kNvmlSuccess;
}
NvmlReturn fakeRemotePci(NvmlDevice dev, unsigned link, NvmlPciInfo* pci) {
  std::snprintf(pci->busId, sizeof(pci->busId), "0000%s",
                busIdText(gFake->gpus[fakeIndex(dev)].links[link].remoteBus).c_str());
  return kNvmlSuccess;
}
NvmlReturn fakeRemoteType(NvmlDevice dev, unsigned link, int* type) {
  *type = gFake->gpus[fakeIndex(dev)].links[link].type;
  return kNvmlSuccess;
}
NvmlReturn fakeP2p(NvmlDevice a, NvmlDevice b, int caps, int* status) {
  bool ok = gFake->p2pOk && fakeIndex(a) != gFake->noP2pGpu && fakeIndex(b) != gFake->noP2pGpu;
  *status = ok ? kNvmlP2pStatusOk : 5;  // NVML_P2P_STATUS_NOT_SUPPORTED
  return kNvmlSuccess;
}
NvmlReturn fakeAncestor(NvmlDevice, NvmlDevice, int* level) {
  *level = gFake->ancestor;
  return kNvmlSuccess;
}

NvmlApi fakeApi(bool withRemoteType) {
  return NvmlApi{
      fakeInit, fakeErrorString, fakeByBusId, fakeNvlinkState, fakeRemotePci, withRemoteType ? fakeRemoteType : nullptr,
      fakeP2p,  fakeAncestor,    nullptr,     nullptr};
}

class NvmlDetectTest : public TopoTest {
 protected:
  void SetUp() override {
    TopoTest::SetUp();
    gFake = &machine_;
  }
  void TearDown() override {
    gFake = nullptr;
    TopoTest::TearDown();
  }
  // GPUs at the bus ids of sameHostRanks(n).
  void addGpus(int n) {
    for (const RankPlace& r : sameHostRanks(n)) machine_.gpus.push_back(FakeGpu{r.busId, {}});
  }
  FakeMachine machine_;
};

TEST_F(NvmlDetectTest, NvSwitchMachine) {
  addGpus(4);
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 18; ++l) machine_.gpus[g].links.push_back(FakeLink{kNvmlNvlinkDeviceSwitch, 0xc0000 + l});
  }
  std::vector<RankPlace> ranks = sameHostRanks(4);
  for (bool withType : {true, false}) {
    NvmlApi api = fakeApi(withType);  // without the type call, unknown bus ids are switches
    std::vector<Link> row;
    ASSERT_EQ(detectLinksWith(&api, ranks, 2, &row), ncclSuccess);
    ASSERT_EQ(row.size(), 4u);
    EXPECT_EQ(row[2].path, PathType::kLoc);
    for (int j : {0, 1, 3}) {
      EXPECT_EQ(row[j].path, PathType::kNvl) << j;
      EXPECT_EQ(row[j].nvlinks, 18) << j;
      EXPECT_TRUE(row[j].switched) << j;
      EXPECT_TRUE(row[j].p2pOk) << j;
    }
  }
}

TEST_F(NvmlDetectTest, DirectNvlinkAndPcie) {
  addGpus(3);
  // GPU0 <-> GPU1: 4 direct lanes; GPU2 only on PCIe (PXB), and NVML denies it P2P.
  for (int l = 0; l < 4; ++l) {
    machine_.gpus[0].links.push_back(FakeLink{kNvmlNvlinkDeviceGpu, machine_.gpus[1].busId});
    machine_.gpus[1].links.push_back(FakeLink{kNvmlNvlinkDeviceGpu, machine_.gpus[0].busId});
  }
  machine_.noP2pGpu = 2;
  std::vector<RankPlace> ranks = sameHostRanks(3);
  ranks.push_back(RankPlace{3, 0, 0x07000, 0x5678, 0x1});  // another host
  for (bool withType : {true, false}) {
    NvmlApi api = fakeApi(withType);
    std::vector<Link> row;
    ASSERT_EQ(detectLinksWith(&api, ranks, 0, &row), ncclSuccess);
    EXPECT_EQ(row[1].path, PathType::kNvl);
    EXPECT_EQ(row[1].nvlinks, 4);
    EXPECT_FALSE(row[1].switched);
    EXPECT_TRUE(row[1].p2pOk);
    EXPECT_EQ(row[2].path, PathType::kPxb);
    EXPECT_EQ(row[2].nvlinks, 0);
    EXPECT_FALSE(row[2].p2pOk);
    EXPECT_EQ(row[3].path, PathType::kNet);
  }
  machine_.ancestor = kNvmlTopologySystem;
  NvmlApi api = fakeApi(true);
  std::vector<Link> row;
  ASSERT_EQ(detectLinksWith(&api, ranks, 2, &row), ncclSuccess);
  EXPECT_EQ(row[0].path, PathType::kSys);
  EXPECT_EQ(row[1].path, PathType::kSys);
}

TEST_F(NvmlDetectTest, UnknownGpusFallBackToShm) {
  addGpus(2);
  std::vector<RankPlace> ranks = sameHostRanks(3);  // rank 2's GPU is not in NVML
  NvmlApi api = fakeApi(true);
  std::vector<Link> row;
  ASSERT_EQ(detectLinksWith(&api, ranks, 0, &row), ncclSuccess);
  EXPECT_EQ(row[1].path, PathType::kPxb);
  EXPECT_TRUE(row[1].p2pOk);
  EXPECT_EQ(row[2].path, PathType::kPhb);
  EXPECT_FALSE(row[2].p2pOk);
  ASSERT_EQ(detectLinksWith(&api, ranks, 2, &row), ncclSuccess);  // own GPU unknown: every pair
  EXPECT_EQ(row[0].path, PathType::kPhb);
  EXPECT_FALSE(row[0].p2pOk);
  EXPECT_EQ(row[2].path, PathType::kLoc);
}

TEST_F(TopoTest, DetectWithoutNvml) {
  std::string log = logToFile("INFO", "INIT");
  std::vector<RankPlace> ranks = sameHostRanks(3);
  ranks[2].hostHash = 0x4321;
  std::vector<Link> row;
  ASSERT_EQ(detectLinksWith(nullptr, ranks, 1, &row), ncclSuccess);
  ASSERT_EQ(row.size(), 3u);
  EXPECT_EQ(row[0].path, PathType::kPhb);
  EXPECT_FALSE(row[0].p2pOk);
  EXPECT_EQ(row[1].path, PathType::kLoc);
  EXPECT_EQ(row[2].path, PathType::kNet);
  logReset();
  EXPECT_TRUE(contains(readFile(log), "NVML unavailable")) << readFile(log);

  NvmlApi api;
  EXPECT_FALSE(nvmlLoad("libbraid-no-such-nvml.so.1", &api));
  EXPECT_EQ(detectLinksWith(nullptr, ranks, 3, &row), ncclInvalidArgument);
  EXPECT_EQ(detectLinksWith(nullptr, ranks, 0, nullptr), ncclInvalidArgument);
}

// The real entry point, whatever this machine has: bus ids that exist nowhere fall back to SHM.
TEST_F(TopoTest, DetectLinksOnThisMachine) {
  std::vector<RankPlace> ranks = sameHostRanks(2);
  for (RankPlace& r : ranks) r.busId |= int64_t{0xabcd} << 20;  // PCI domain abcd: not a real GPU
  std::vector<Link> row;
  ASSERT_EQ(detectLinks(ranks, 0, &row), ncclSuccess);
  EXPECT_EQ(row[0].path, PathType::kLoc);
  EXPECT_EQ(row[1].path, PathType::kPhb);
  EXPECT_FALSE(row[1].p2pOk);
  EXPECT_EQ(busIdText(ranks[1].busId), "abcd:17:00.0");
  EXPECT_EQ(busIdParse("00000000:07:00.0"), 0x07000);
  EXPECT_EQ(busIdParse("bogus"), -1);
}

}  // namespace
}  // namespace braid::topo
