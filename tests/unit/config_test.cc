// ncclConfig_t parsing: every layout by size/version, defaults, validation, environment overrides,
// inheritance for split/shrink.
#include "core/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.clear({"NCCL_COMM_BLOCKING", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_CGA_CLUSTER_SIZE",
                "NCCL_COMM_SPLIT_SHARE_RESOURCES", "NCCL_GRAPH_MIXING_SUPPORT"});
    paramsReset();
  }
  void TearDown() override {
    env_.restore();
    paramsReset();
  }
  testing::ScopedEnv env_;
};

TEST_F(ConfigTest, NullMeansDefaults) {
  CommConfig c;
  c.blocking = 7;
  ASSERT_EQ(ncclSuccess, parseConfig(nullptr, "test", &c));
  EXPECT_EQ(1, c.blocking);
  EXPECT_EQ(NCCL_CONFIG_UNDEF_INT, c.ctas.cgaClusterSize);  // the planner picks
  EXPECT_EQ(1, c.ctas.minCTAs);
  EXPECT_EQ(kMaxConfigCtas, c.ctas.maxCTAs);
  EXPECT_EQ(0, c.splitShare);
  EXPECT_EQ(NCCL_CTA_POLICY_DEFAULT, c.ctas.ctaPolicy);
  EXPECT_TRUE(c.net.netName.empty());
}

TEST_F(ConfigTest, CurrentLayoutFieldsAreRead) {
  ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
  user.blocking = 0;
  user.minCTAs = 2;
  user.maxCTAs = 16;
  user.netName = "Socket";
  user.commName = "trainer";
  user.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  user.nChannelsPerNetPeer = 4;
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(&user, "test", &c));
  EXPECT_EQ(0, c.blocking);
  EXPECT_EQ(2, c.ctas.minCTAs);
  EXPECT_EQ(16, c.ctas.maxCTAs);
  EXPECT_EQ("Socket", c.net.netName);
  EXPECT_EQ("trainer", c.commName);
  EXPECT_EQ(NCCL_CTA_POLICY_EFFICIENCY, c.ctas.ctaPolicy);
  EXPECT_EQ(4, c.net.nChannelsPerNetPeer);
}

// A 2.25 program passes a 48-byte struct whose last 4 bytes are padding: whatever garbage they
// hold must not be read as trafficClass, and nothing past 48 bytes may be read at all.
TEST_F(ConfigTest, Layout225IgnoresPaddingAndLaterFields) {
  alignas(8) unsigned char buffer[sizeof(ncclConfig_t)];
  std::memset(buffer, 0xab, sizeof(buffer));  // what lies beyond the caller's struct
  ncclConfig_t full = NCCL_CONFIG_INITIALIZER;
  full.size = 48;
  full.version = NCCL_VERSION(2, 25, 1);
  full.maxCTAs = 8;
  full.trafficClass = 0x5555;  // padding in 2.25
  std::memcpy(buffer, &full, 48);
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(reinterpret_cast<ncclConfig_t*>(buffer), "test", &c));
  EXPECT_EQ(8, c.ctas.maxCTAs);
  EXPECT_EQ(NCCL_CONFIG_UNDEF_INT, c.net.trafficClass);
  EXPECT_TRUE(c.commName.empty());
  EXPECT_EQ(0, c.nvlinkCentricSched);
}

TEST_F(ConfigTest, Layout226ReadsTrafficClass) {
  ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
  user.size = 48;
  user.version = NCCL_VERSION(2, 26, 2);
  user.trafficClass = 3;
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(&user, "test", &c));
  EXPECT_EQ(3, c.net.trafficClass);
}

TEST_F(ConfigTest, NewerLargerLayoutIsAccepted) {
  alignas(8) unsigned char buffer[sizeof(ncclConfig_t) + 8] = {};
  ncclConfig_t full = NCCL_CONFIG_INITIALIZER;
  full.size = sizeof(buffer);
  full.version = NCCL_VERSION(2, 29, 1);
  full.maxCTAs = 12;
  std::memcpy(buffer, &full, sizeof(full));
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(reinterpret_cast<ncclConfig_t*>(buffer), "test", &c));
  EXPECT_EQ(12, c.ctas.maxCTAs);
}

// A caller's struct of `size` bytes with header version `version`, the rest of the buffer garbage.
struct CallerConfig {
  alignas(8) unsigned char bytes[sizeof(ncclConfig_t)];
  CallerConfig(const ncclConfig_t& full, size_t size, unsigned version) {
    std::memset(bytes, 0xab, sizeof(bytes));
    ncclConfig_t copy = full;
    copy.size = size;
    copy.version = version;
    std::memcpy(bytes, &copy, size);
  }
  ncclConfig_t* get() { return reinterpret_cast<ncclConfig_t*>(bytes); }
};

ncclConfig_t everyLaterField() {
  ncclConfig_t full = NCCL_CONFIG_INITIALIZER;
  full.graphUsageMode = 1;
  full.numRmaCtx = 3;
  full.maxP2pPeers = 5;
  full.graphStreamOrdering = 0;
  full.numRmaSig = 7;
  full.rmaEagerInit = 1;
  full.hostCftMode = ncclHostCftFallback;
  full.nvlsHostMode = ncclNvlsHostModeDisable;
  return full;
}

// 2.29's 88 bytes: graphUsageMode and numRmaCtx, nothing after them.
TEST_F(ConfigTest, Layout229ReadsItsTwoNewFieldsOnly) {
  CallerConfig user(everyLaterField(), 88, NCCL_VERSION(2, 29, 7));
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(user.get(), "test", &c));
  EXPECT_EQ(1, c.graphUsageMode);
  EXPECT_EQ(3, c.rma.numRmaCtx);
  EXPECT_EQ(NCCL_CONFIG_UNDEF_INT, c.maxP2pPeers);
  EXPECT_EQ(1, c.graphStreamOrdering);
  EXPECT_EQ(NCCL_CONFIG_UNDEF_INT, c.rma.numRmaSig);
}

// 2.30's 96 bytes: graphStreamOrdering is a field from 2.30.5 (PyTorch 2.15 passes 2.30.7's), and
// padding before.
TEST_F(ConfigTest, Layout230ReadsGraphStreamOrderingFrom2305) {
  CallerConfig v2307(everyLaterField(), 96, NCCL_VERSION(2, 30, 7));
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(v2307.get(), "test", &c));
  EXPECT_EQ(5, c.maxP2pPeers);
  EXPECT_EQ(0, c.graphStreamOrdering);
  EXPECT_EQ(0, c.rma.rmaEagerInit);  // beyond 96 bytes

  ncclConfig_t padded = everyLaterField();
  padded.graphStreamOrdering = 0x5555;  // padding in 2.30.3
  CallerConfig v2303(padded, 96, NCCL_VERSION(2, 30, 3));
  ASSERT_EQ(ncclSuccess, parseConfig(v2303.get(), "test", &c));
  EXPECT_EQ(5, c.maxP2pPeers);
  EXPECT_EQ(1, c.graphStreamOrdering);
}

// 2.31/2.32's 120 bytes, also as Braid's header filled it before it said 2.32.3 (2.28.9).
TEST_F(ConfigTest, Layout231ReadsEveryField) {
  for (unsigned version :
       {static_cast<unsigned>(NCCL_VERSION(2, 32, 3)), static_cast<unsigned>(NCCL_VERSION(2, 28, 9))}) {
    CallerConfig user(everyLaterField(), sizeof(ncclConfig_t), version);
    CommConfig c;
    ASSERT_EQ(ncclSuccess, parseConfig(user.get(), "test", &c)) << version;
    EXPECT_EQ(1, c.graphUsageMode);
    EXPECT_EQ(3, c.rma.numRmaCtx);
    EXPECT_EQ(5, c.maxP2pPeers);
    EXPECT_EQ(0, c.graphStreamOrdering);
    EXPECT_EQ(7, c.rma.numRmaSig);
    EXPECT_EQ(1, c.rma.rmaEagerInit);
    EXPECT_EQ(ncclHostCftFallback, c.hostCftMode);
    EXPECT_EQ(ncclNvlsHostModeDisable, c.nvlsHostMode);
  }
}

TEST_F(ConfigTest, GraphMixingSupportDecidesGraphUsageMode) {
  ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
  user.graphUsageMode = 2;
  setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", 1);
  paramsReset();
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(&user, "test", &c));
  EXPECT_EQ(0, c.graphUsageMode);
  unsetenv("NCCL_GRAPH_MIXING_SUPPORT");
  paramsReset();
  ASSERT_EQ(ncclSuccess, parseConfig(nullptr, "test", &c));
  EXPECT_EQ(2, c.graphUsageMode);  // NCCL's default: graphs and eager work may mix
}

// What Braid cannot do is refused, naming the field: CFT hardware, cross-communicator launch order.
TEST_F(ConfigTest, UnsupportedLaterFieldsAreRefusedNamingTheField) {
  struct Case {
    void (*mutate)(ncclConfig_t*);
    const char* field;
    ncclResult_t expected;
  } cases[] = {
      {[](ncclConfig_t* u) { u->graphUsageMode = 3; }, "graphUsageMode", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->numRmaCtx = -2; }, "numRmaCtx", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->maxP2pPeers = 0; }, "maxP2pPeers", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->graphStreamOrdering = 2; }, "graphStreamOrdering", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->rmaEagerInit = 5; }, "rmaEagerInit", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->hostCftMode = 9; }, "hostCftMode", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->nvlsHostMode = -3; }, "nvlsHostMode", ncclInvalidArgument},
      {[](ncclConfig_t* u) { u->hostCftMode = ncclHostCftEnable; }, "hostCftMode", ncclInvalidUsage},
      {[](ncclConfig_t* u) { u->launchOrderImplicit = 1; }, "launchOrderImplicit", ncclInvalidUsage},
  };
  for (const Case& k : cases) {
    ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
    k.mutate(&user);
    CommConfig c;
    EXPECT_EQ(k.expected, parseConfig(&user, "ncclCommInitRankConfig", &c)) << k.field;
    EXPECT_NE(nullptr, std::strstr(logLastError(), k.field)) << logLastError();
  }
}

TEST_F(ConfigTest, BadMagicSizeAndRangesAreRejectedNamingTheField) {
  struct Case {
    void (*mutate)(ncclConfig_t*);
    const char* field;
  } cases[] = {
      {[](ncclConfig_t* u) { u->magic = 0; }, "magic"},
      {[](ncclConfig_t* u) { u->size = 4; }, "size"},
      {[](ncclConfig_t* u) { u->blocking = -1; }, "blocking"},
      {[](ncclConfig_t* u) { u->cgaClusterSize = 9; }, "cgaClusterSize"},
      {[](ncclConfig_t* u) { u->minCTAs = 0; }, "minCTAs"},
      {[](ncclConfig_t* u) { u->maxCTAs = 100; }, "maxCTAs"},
      {[](ncclConfig_t* u) {
         u->minCTAs = 8;
         u->maxCTAs = 2;
       },
       "minCTAs"},
      {[](ncclConfig_t* u) { u->splitShare = 2; }, "splitShare"},
      {[](ncclConfig_t* u) { u->CTAPolicy = 3; }, "CTAPolicy"},
      {[](ncclConfig_t* u) { u->nChannelsPerNetPeer = 0; }, "nChannelsPerNetPeer"},
  };
  for (const Case& k : cases) {
    ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
    k.mutate(&user);
    CommConfig c;
    EXPECT_EQ(ncclInvalidArgument, parseConfig(&user, "ncclCommInitRankConfig", &c)) << k.field;
    EXPECT_NE(nullptr, std::strstr(logLastError(), k.field)) << logLastError();
  }
}

TEST_F(ConfigTest, EnvironmentOverridesConfig) {
  setenv("NCCL_COMM_BLOCKING", "0", 1);
  setenv("NCCL_MAX_CTAS", "8", 1);
  paramsReset();
  ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
  user.blocking = 1;
  user.maxCTAs = 32;
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfig(&user, "test", &c));
  EXPECT_EQ(0, c.blocking);
  EXPECT_EQ(8, c.ctas.maxCTAs);
}

TEST_F(ConfigTest, ContradictoryEnvironmentIsRejected) {
  setenv("NCCL_MIN_CTAS", "32", 1);
  setenv("NCCL_MAX_CTAS", "4", 1);
  paramsReset();
  CommConfig c;
  EXPECT_EQ(ncclInvalidArgument, parseConfig(nullptr, "test", &c));
}

TEST_F(ConfigTest, InheritedConfigKeepsParentValuesForUndefinedFields) {
  CommConfig parent;
  parent.blocking = 0;
  parent.ctas.maxCTAs = 8;
  parent.commName = "parent";
  ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
  user.maxCTAs = 4;
  CommConfig c;
  ASSERT_EQ(ncclSuccess, parseConfigInherited(&user, parent, "ncclCommSplit", &c));
  EXPECT_EQ(0, c.blocking);
  EXPECT_EQ(4, c.ctas.maxCTAs);
  EXPECT_EQ("parent", c.commName);
  ASSERT_EQ(ncclSuccess, parseConfigInherited(nullptr, parent, "ncclCommSplit", &c));
  EXPECT_EQ(8, c.ctas.maxCTAs);
}

}  // namespace
}  // namespace braid
