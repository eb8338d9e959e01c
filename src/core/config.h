// The communicator's configuration: ncclConfig_t as the caller passed it (any layout from the
// 2.14-era 24-byte struct to the 2.31/2.32 120-byte one, and newer ones truncated to what we know),
// validated, with defaults filled in and NCCL_* environment overrides applied.
#pragma once

#include <nccl.h>

#include <string>

namespace braid {

// ncclConfig_t's fields about the CTAs of the communicator's kernels.
struct CtaConfig {
  int cgaClusterSize = NCCL_CONFIG_UNDEF_INT;  // UNDEF: the planner picks per collective (plan::Decision)
  int minCTAs = 1;
  int maxCTAs = 64;
  int ctaPolicy = NCCL_CTA_POLICY_DEFAULT;
  int nvlsCTAs = NCCL_CONFIG_UNDEF_INT;  // UNDEF: automatic
};

// ncclConfig_t's fields about the network.
struct NetConfig {
  std::string netName;                       // empty: automatic
  int trafficClass = NCCL_CONFIG_UNDEF_INT;  // UNDEF: the network decides
  int collnetEnable = 0;
  int nChannelsPerNetPeer = NCCL_CONFIG_UNDEF_INT;  // UNDEF: automatic
};

// One-sided (RMA) resources (window/one_sided.h).
struct RmaConfig {
  int numRmaCtx = 1;
  int numRmaSig = NCCL_CONFIG_UNDEF_INT;
  int rmaEagerInit = 0;
};

// A communicator's ncclConfig_t after defaults, inheritance and NCCL_* overrides, by subject.
struct CommConfig {
  int blocking = 1;
  std::string commName;
  int splitShare = 0;
  int shrinkShare = 0;
  int nvlinkCentricSched = 0;
  CtaConfig ctas;
  NetConfig net;
  RmaConfig rma;
  // 2: graphs and eager work of the communicator may interleave (NCCL_GRAPH_MIXING_SUPPORT=1);
  // 0 (no graphs) or 1 (one graph): the user keeps them apart, so launches need no ordering nodes.
  int graphUsageMode = 2;
  // A bound on concurrent point-to-point peers (UNDEF: all). Braid connects a pair only when it
  // first exchanges data, so the bound is met by any program that keeps to it.
  int maxP2pPeers = NCCL_CONFIG_UNDEF_INT;
  // 0 allows captured kernels to skip the library's cross-stream serialization; Braid keeps it
  // (permitted: ordering the user already guarantees is not broken by more of it).
  int graphStreamOrdering = 1;
  // 1 would order kernels of different communicators by host launch order; Braid orders each
  // communicator's own launches only (launch/launch_order.h), so it refuses 1.
  int launchOrderImplicit = 0;
  int hostCftMode = NCCL_CONFIG_UNDEF_INT;   // ncclHostCftMode_t; Enable is refused (no CFT hardware)
  int nvlsHostMode = NCCL_CONFIG_UNDEF_INT;  // ncclNvlsHostMode_t; Braid never uses NVLS
};

constexpr int kMaxConfigCtas = 64;
constexpr unsigned kConfigMagic = 0xcafebeef;

// Reads `user` (NULL means all defaults) into `out`. Fails with ncclInvalidArgument and a WARN
// naming the field for a bad size, magic or out-of-range value. `caller` names the API function
// for the WARN text.
[[nodiscard]] ncclResult_t parseConfig(const ncclConfig_t* user, const char* caller, CommConfig* out);

// Same, but fields the caller left undefined are taken from `parent` instead of the defaults
// (ncclCommSplit / ncclCommShrink inherit the parent's configuration).
[[nodiscard]] ncclResult_t parseConfigInherited(const ncclConfig_t* user, const CommConfig& parent, const char* caller,
                                                CommConfig* out);

}  // namespace braid
