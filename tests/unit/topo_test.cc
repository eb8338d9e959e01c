// Topology within a host: parameters, transports, rings and channel counts from recorded link
// matrices, channel bounds, the dump file and log lines.
#include "topo/topo.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "topo/nvml_api.h"
#include "topo_test_util.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::topo {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

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

}  // namespace
}  // namespace braid::topo
