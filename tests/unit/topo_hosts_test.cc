// Topology across hosts: the network's bandwidth, rings that cross each host once, direct channels
// and trees across hosts, LL on the network only where BRAID_NET_LL allows it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "topo/nvml_api.h"
#include "topo/topo.h"
#include "topo_test_util.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::topo {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

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

}  // namespace
}  // namespace braid::topo
