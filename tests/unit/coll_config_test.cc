// ncclCollConfig_t as a nccl*Config call passes it (launch/coll_config.h): the layouts by size
// (NCCL 2.31's 64 bytes, 2.32's 72, a larger future one), the magic, every field's range and what
// it becomes in the operation's options, and the fields that are accepted without effect.
#include "launch/coll_config.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "plan/selection.h"
#include "util/log.h"

namespace braid {
namespace {

static_assert(sizeof(ncclCollConfig_t) == 72, "NCCL 2.32's ncclCollConfig_t");
static_assert(kCollConfigMinSize == 64, "NCCL 2.31's ncclCollConfig_t ends with userProfilerTag");

constexpr CollConfigComm kComm{/*maxCtas=*/16, /*ctaPolicy=*/NCCL_CTA_POLICY_DEFAULT, false, false, false};
constexpr CollConfigTarget kAllReduce{"AllReduce", false, CollId::kAllReduce};
constexpr CollConfigTarget kBroadcast{"Broadcast", false, CollId::kBroadcast};
constexpr CollConfigTarget kAlltoAll{"AlltoAll", true, CollId::kAllReduce};

cudaEvent_t fakeEvent(uintptr_t v) { return reinterpret_cast<cudaEvent_t>(v); }

ncclResult_t read(const ncclCollConfig_t& config, CollOptions* out, const CollConfigComm& comm = kComm,
                  const CollConfigTarget& target = kAllReduce) {
  return readCollConfig(&config, comm, target, "ncclTestConfig", out);
}

CollOptions readOk(const ncclCollConfig_t& config, const CollConfigComm& comm = kComm,
                   const CollConfigTarget& target = kAllReduce) {
  CollOptions out;
  EXPECT_EQ(read(config, &out, comm, target), ncclSuccess) << logLastError();
  return out;
}

// The call is refused with ncclInvalidArgument, a WARN names `field`, and *out is left alone.
void expectRefused(const ncclCollConfig_t& config, const char* field, const CollConfigComm& comm = kComm,
                   const CollConfigTarget& target = kAllReduce) {
  CollOptions out;
  out.ctaPolicy = 77;  // a marker
  EXPECT_EQ(read(config, &out, comm, target), ncclInvalidArgument) << field;
  const std::string warn = logLastError();
  EXPECT_NE(warn.find(std::string("config->") + field), std::string::npos) << warn;
  EXPECT_NE(warn.find("ncclTestConfig"), std::string::npos) << warn;
  EXPECT_EQ(out.ctaPolicy, 77);
}

TEST(CollConfig, InitializerIsThePlainCall) {
  const ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  CollOptions out = readOk(config);
  EXPECT_EQ(out.plan.minChannels, 1);
  EXPECT_EQ(out.plan.maxChannels, kMaxChannels);
  EXPECT_EQ(out.plan.cgaClusterSize, plan::kClusterOfComm);
  EXPECT_EQ(out.plan.selectionRows, 0u);
  EXPECT_EQ(out.ctaPolicy, NCCL_CTA_POLICY_DEFAULT);
  EXPECT_EQ(out.launchEvent, nullptr);
}

TEST(CollConfig, SizeBelowTheFirstLayoutAndBadMagicAreRefused) {
  for (size_t size : {size_t{0}, size_t{8}, size_t{16}, size_t{63}}) {
    ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
    config.size = size;
    expectRefused(config, "size");
  }
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.magic = 0x12345678;
  expectRefused(config, "magic");
}

// The launch event exists from 2.32's 72 bytes on: a 2.31 caller's struct ends before it, whatever
// lies there in its memory. Larger (newer) structs are read up to what Braid knows; the version
// gates nothing (Braid's header stamped 2.28.9 on the 72-byte struct before it said 2.32.3).
TEST(CollConfig, LayoutsAreReadBySize) {
  struct alignas(8) Padded {
    ncclCollConfig_t config;
    unsigned char future[40];
  };
  for (unsigned version : {22809u, 23102u, 23203u, 99999u}) {
    Padded p;
    std::memset(&p, 0x5a, sizeof(p));
    p.config = NCCL_COLLCONFIG_INITIALIZER;
    p.config.version = version;
    p.config.maxCTAs = 8;
    p.config.launchCompletionEvent = fakeEvent(0x1000);
    p.config.size = 64;
    CollOptions out = readOk(p.config);
    EXPECT_EQ(out.launchEvent, nullptr) << version;
    EXPECT_EQ(out.plan.maxChannels, 8);
    p.config.size = sizeof(ncclCollConfig_t);
    EXPECT_EQ(readOk(p.config).launchEvent, fakeEvent(0x1000)) << version;
    p.config.size = sizeof(Padded);
    out = readOk(p.config);
    EXPECT_EQ(out.launchEvent, fakeEvent(0x1000)) << version;
    EXPECT_EQ(out.plan.maxChannels, 8);
  }
}

TEST(CollConfig, ChannelBounds) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.minCTAs = 2;
  config.maxCTAs = 8;
  CollOptions out = readOk(config);
  EXPECT_EQ(out.plan.minChannels, 2);
  EXPECT_EQ(out.plan.maxChannels, 8);
  config.minCTAs = config.maxCTAs = 1;
  out = readOk(config);
  EXPECT_EQ(out.plan.minChannels, 1);
  EXPECT_EQ(out.plan.maxChannels, 1);
  config.maxCTAs = NCCL_CONFIG_UNDEF_INT;
  config.minCTAs = 16;  // up to the communicator's maxCTAs
  EXPECT_EQ(readOk(config).plan.minChannels, 16);

  for (int bad : {0, -1, 17}) {
    config = NCCL_COLLCONFIG_INITIALIZER;
    config.maxCTAs = bad;
    expectRefused(config, "maxCTAs");
    config = NCCL_COLLCONFIG_INITIALIZER;
    config.minCTAs = bad;
    expectRefused(config, "minCTAs");
  }
  config = NCCL_COLLCONFIG_INITIALIZER;
  config.minCTAs = 5;
  config.maxCTAs = 4;
  expectRefused(config, "minCTAs");
}

// NCCL's order: the environment (NCCL_MIN_CTAS, NCCL_MAX_CTAS, NCCL_CGA_CLUSTER_SIZE), then the
// call, then the communicator. A call's value is still checked.
TEST(CollConfig, EnvironmentWinsOverTheCall) {
  CollConfigComm env = kComm;
  env.envMinCtas = env.envMaxCtas = env.envClusterSize = true;
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.minCTAs = 2;
  config.maxCTAs = 4;
  config.cgaClusterSize = 2;
  CollOptions out = readOk(config, env);
  EXPECT_EQ(out.plan.minChannels, 1);
  EXPECT_EQ(out.plan.maxChannels, kMaxChannels);
  EXPECT_EQ(out.plan.cgaClusterSize, plan::kClusterOfComm);
  config.maxCTAs = 40;
  expectRefused(config, "maxCTAs", env);
}

TEST(CollConfig, ClusterSize) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  for (int size : {0, 1, 4, 8}) {
    config.cgaClusterSize = size;
    EXPECT_EQ(readOk(config).plan.cgaClusterSize, size);
  }
  for (int bad : {-1, 9, 16}) {
    config.cgaClusterSize = bad;
    expectRefused(config, "cgaClusterSize");
  }
}

// UNDEF takes the communicator's; ZERO wins over EFFICIENCY, as NCCL resolves a mask of both.
TEST(CollConfig, CtaPolicy) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  CollConfigComm efficient = kComm;
  efficient.ctaPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  EXPECT_EQ(readOk(config, efficient).ctaPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  config.CTAPolicy = NCCL_CTA_POLICY_DEFAULT;
  EXPECT_EQ(readOk(config, efficient).ctaPolicy, NCCL_CTA_POLICY_DEFAULT);
  config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  EXPECT_EQ(readOk(config).ctaPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  EXPECT_EQ(readOk(config).ctaPolicy, NCCL_CTA_POLICY_ZERO);
  config.CTAPolicy = NCCL_CTA_POLICY_ZERO | NCCL_CTA_POLICY_EFFICIENCY;
  EXPECT_EQ(readOk(config).ctaPolicy, NCCL_CTA_POLICY_ZERO);
  for (int bad : {-1, 4, 7}) {
    config.CTAPolicy = bad;
    expectRefused(config, "CTAPolicy");
  }
}

TEST(CollConfig, AlgorithmSelection) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.algSelection = "Ring_Simple, direct";
  CollOptions out = readOk(config);
  EXPECT_EQ(plan::selectionNames(out.plan.selectionRows), "RING_SIMPLE, DIRECT_LL, DIRECT_SIMPLE");
  EXPECT_TRUE(out.plan.forceSelection);
  EXPECT_EQ(out.plan.selectionText, "Ring_Simple, direct");
  config.algSelection = "";
  EXPECT_EQ(readOk(config).plan.selectionRows, 0u);
  config.algSelection = "tree,ring";  // Broadcast keeps the rows it has
  EXPECT_EQ(plan::selectionNames(readOk(config, kComm, kBroadcast).plan.selectionRows),
            "RING_LL, RING_LL128, RING_SIMPLE");

  // Malformed, or nothing the collective has: refused when forced, the automatic choice when not.
  const std::pair<const char*, CollConfigTarget> unhonorable[] = {
      {"rings", kAllReduce}, {"ring+tree", kAllReduce}, {"tree", kBroadcast}, {"ring", kAlltoAll}, {",", kAllReduce}};
  for (const auto& [text, target] : unhonorable) {
    SCOPED_TRACE(text);
    config = NCCL_COLLCONFIG_INITIALIZER;
    config.algSelection = text;
    expectRefused(config, "algSelection", kComm, target);
    EXPECT_NE(std::string(logLastError()).find(target.name), std::string::npos) << logLastError();
    config.forceAlgSelection = 0;
    out = readOk(config, kComm, target);
    EXPECT_EQ(out.plan.selectionRows, 0u);
  }
  for (int bad : {-1, 2, NCCL_CONFIG_UNDEF_INT}) {
    config = NCCL_COLLCONFIG_INITIALIZER;
    config.forceAlgSelection = bad;
    expectRefused(config, "forceAlgSelection");
  }
  config = NCCL_COLLCONFIG_INITIALIZER;
  config.algSelection = "ring";
  config.forceAlgSelection = 0;
  out = readOk(config);
  EXPECT_NE(out.plan.selectionRows, 0u);
  EXPECT_FALSE(out.plan.forceSelection);
}

// nvlsCTAs is checked but changes nothing (no NVLink SHARP); userProfilerTag and ext are never
// read beyond the struct (ext is not followed: a pointer that is no list is fine).
TEST(CollConfig, InertFields) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.nvlsCTAs = 4;
  config.userProfilerTag = 0x7fffffffffffffffull;
  config.ext = reinterpret_cast<ncclConfigExt_t*>(uintptr_t{0x8});
  CollOptions out = readOk(config);
  EXPECT_EQ(out.plan.minChannels, 1);
  EXPECT_EQ(out.plan.maxChannels, kMaxChannels);
  for (int bad : {0, -1, 65}) {
    config.nvlsCTAs = bad;
    expectRefused(config, "nvlsCTAs");
  }
}

// AlltoAll, Gather and Scatter: the event applies; channel bounds and clusters are checked alike.
TEST(CollConfig, PointToPointCollectives) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.minCTAs = 2;
  config.maxCTAs = 4;
  config.cgaClusterSize = 2;
  config.launchCompletionEvent = fakeEvent(0x2000);
  EXPECT_EQ(readOk(config, kComm, kAlltoAll).launchEvent, fakeEvent(0x2000));
  config.maxCTAs = 17;
  expectRefused(config, "maxCTAs", kComm, kAlltoAll);
}

}  // namespace
}  // namespace braid
